/*
 * cost.h - what a kernel is, from its name.
 *
 * GPU kernels are classified by name into the classes the cost model
 * treats differently: GEMMs and attention scale with FLOP/s, elementwise,
 * normalisation, softmax, reductions, embeddings and optimizer kernels
 * with memory bandwidth, collectives with the network.  The patterns are
 * ordered (first match wins) and listed in docs/MODEL.md; names come from
 * cuBLAS/cuBLASLt (sm80_xmma_gemm, nvjet, ampere_sgemm), CUTLASS, cuDNN,
 * FlashAttention, PyTorch's ATen kernels and Triton.
 */
#ifndef PRISM_COST_H
#define PRISM_COST_H

#include <stdint.h>

#include "graph.h"

enum cost_class {
	KC_GEMM,
	KC_ATTENTION,
	KC_CONV,
	KC_NORM,
	KC_SOFTMAX,
	KC_REDUCTION,
	KC_ELEMENTWISE,
	KC_EMBEDDING,
	KC_OPTIMIZER,
	KC_COLLECTIVE,
	KC_MEMCPY,
	KC_MEMSET,
	KC_OTHER,
	KC_NCLASSES
};

/* Class of GPU node u of g (GN_KERNEL/COLL/P2P by name; copies and sets by
 * kind); KC_OTHER for host nodes. */
int cost_classify_node(const struct graph *g, uint32_t u);

/*
 * The class of every node of g, into cls[0..n_nodes): each distinct name
 * is classified once (kernel names are hundreds, GPU tasks hundreds of
 * thousands).  0, or PRISM_ENOMEM.
 */
int cost_classify_all(const struct graph *g, uint8_t *cls);

/* Class of a kernel by name. */
int cost_classify(const char *kernel_name);

const char *cost_class_name(int cls);

/* 1 for the classes whose time follows FLOP/s (GEMM, attention,
 * convolution), 0 for those that follow memory bandwidth. */
int cost_compute_bound(int cls);

/* The memory-bound kind (enum hw_mem_kind, kperf_mem_s) of a class as
 * prism synth times it: norms, softmax and reductions, elementwise and
 * optimizer passes; -1 for the classes the kernel model does not time by
 * the bytes they move (GEMM, attention, convolution, copies, sets, other
 * kernels). */
int cost_mem_kind(int cls);

/* The implementation (enum hw_mem_impl, kperf_mem_impl_s) a class's
 * kernels run as prism synth times them: the optimizer's passes are
 * multi-tensor-apply kernels (PyTorch's MultiTensorApply.cuh, Apex's and
 * Transformer Engine's multi_tensor_apply, one 65536-value chunk a block),
 * over values of elem_bytes: 4 (fp32 gradients and states) their own
 * bandwidth (HW_MEM_IMPL_MULTI_TENSOR_FP32), fewer (bf16; 0: unknown) the
 * 2-byte one; any other class the kind's line (HW_MEM_IMPL_ANY). */
int cost_mem_impl(int cls, int elem_bytes);

/*
 * The work of GPU node u from its launching op's shapes: FLOPs of GEMMs
 * (aten::mm, addmm, bmm, baddbmm, matmul, linear: 2 x batch x M x N x K)
 * and bytes moved (inputs plus an output the size of the first input,
 * at the first input's element size).  Returns 1 and fills *flops and
 * *bytes when the shapes are known, else 0.  Only GEMM-class kernels get
 * FLOPs; the others of an op (a split-K reduction) get bytes.
 */
int cost_work(const struct graph *g, uint32_t u, double *flops, double *bytes);

/* The elements of task u's op's first input and their size in bytes,
 * from its recorded shapes and types; 1, or 0 when not recorded. */
int cost_op_input(const struct graph *g, uint32_t u, double *elems, int *elem_bytes);

/* The shape of GEMM-class kernel u from its op's input shapes: dims =
 * batch, M, N, K (C[M,N] = A[M,K] B[K,N]); 1, or 0 when not a GEMM or the
 * shapes are unknown. */
int cost_gemm_dims(const struct graph *g, uint32_t u, double dims[4]);

/*
 * The shape of attention kernel u from its op's input shapes, as PyTorch
 * records the fused attention ops: aten::_flash_attention_forward /
 * _backward, aten::_efficient_attention_* and flash_attn's ops take
 * [b, s, heads, d] tensors, the scaled_dot_product ops and cuDNN's
 * (aten::_cudnn_attention_*, under SDPA's cuDNN backend) [b, heads, s, d];
 * the first tensor is the query (forward) or the output's gradient,
 * shaped as it (backward), the key the second (forward) or the third
 * (backward); *d the query's head width, or the mean of the query's and
 * the value's where they differ (MLA: kbench.c's convention).  *pass: 1
 * for a backward op.  1, or 0 when u is not an
 * attention kernel of such an op with rank-4 shapes.
 */
int cost_attn_shape(const struct graph *g, uint32_t u, double *b, double *heads, double *sq,
		    double *skv, double *d, int *pass);

/* The compute dtype (enum hw_dtype) of GPU task u: fp8 when its kernel's
 * name says 8- or 4-bit operands (e4m3, e5m2, e2m1, fp8, fp4, mxf...: no
 * profile has an fp4 peak, so fp8's is the yardstick); else from its op's
 * first input type: fp32 for float, bf16, fp16, fp8; -1 if unknown. */
int cost_dtype(const struct graph *g, uint32_t u);

#endif
