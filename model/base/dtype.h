/*
 * dtype.h - element sizes of PyTorch's dtype names: the one table.
 *
 * A trace names a tensor's element type two ways: an op's "Input type"
 * (record_function) writes caffe2::TypeMeta names ("float",
 * "c10::BFloat16", "long int"), a collective's "dtype" (Kineto's NCCL
 * metadata) c10::ScalarType names ("Float", "BFloat16", "Byte").  Both
 * spellings, and a few others traces carry ("long", "float32"), are rows
 * of one table; each row says which of the two readings takes it
 * (DTYPE_OP, DTYPE_COLL), because the same word means different things in
 * them: in an op's Input types "Int", "Double" and "Bool" are scalar
 * arguments (no tensor, no element size), in a collective's dtype they
 * are int32, float64 and bool tensors.
 */
#ifndef PRISM_DTYPE_H
#define PRISM_DTYPE_H

/* Which reading of a name (flags). */
enum {
	DTYPE_OP = 1,  /* an op's "Input type": the tensor's TypeMeta name */
	DTYPE_COLL = 2 /* a collective's "dtype" (or its op's first Input type) */
};

/* Bytes of an element of dtype `name` read as `in` (DTYPE_OP or
 * DTYPE_COLL), or 0 if that reading does not know it. */
int dtype_bytes(const char *name, int in);

/* c10::ScalarType's name (a collective's "dtype", DTYPE_COLL above) of
 * elements of `bytes` bytes each in a run whose 16-bit type is fp16
 * (half) or bf16: "Float" for 4, "Half" or "BFloat16" for 2, and "Byte"
 * for any other size -- a torch.uint8 buffer of quantised data, or
 * values of mixed types or with their scales, counted in bytes -- so
 * that bytes / dtype_bytes(name, DTYPE_COLL) is the elements (a
 * timeline's nelems).  Prism's synth (se_dtype) and graph edits label
 * the collectives they create with it. */
const char *dtype_coll_name(double bytes, int half);

#endif
