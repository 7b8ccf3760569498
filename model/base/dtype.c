/* dtype.c - element sizes of PyTorch's dtype names (dtype.h). */
#include "dtype.h"

#include <string.h>

#define OP   DTYPE_OP
#define COLL DTYPE_COLL

/*
 * Every name prism reads, its size, and the readings that take it.  The
 * op reading leaves out the scalar arguments' names ("Int", "Double",
 * "Bool") and the spellings other than TypeMeta's: "long" (int64 in the
 * DLRM and TorchRec traces' Input types) stays unsized for an op's work,
 * as cost_work has always read it (sizing it would count index tensors'
 * bytes: a modelling change, not this table's).
 */
static const struct {
	const char *name;
	unsigned char bytes, in;
} names[] = {
    /* caffe2::TypeMeta names (c10/util/typeid.h), an op's Input types */
    {"float", 4, OP | COLL},
    {"double", 8, OP | COLL},
    {"c10::Half", 2, OP | COLL},
    {"c10::BFloat16", 2, OP | COLL},
    {"long int", 8, OP | COLL},
    {"int", 4, OP | COLL},
    {"short int", 2, OP | COLL},
    {"signed char", 1, OP | COLL},
    {"unsigned char", 1, OP | COLL},
    {"bool", 1, OP | COLL},
    {"c10::Float8_e4m3fn", 1, OP | COLL},
    {"c10::Float8_e5m2", 1, OP | COLL},
    /* c10::ScalarType names (c10/core/ScalarType.h), a collective's dtype */
    {"Float", 4, COLL},
    {"Double", 8, COLL},
    {"Half", 2, OP | COLL},
    {"BFloat16", 2, OP | COLL},
    {"Long", 8, COLL},
    {"Int", 4, COLL},
    {"Short", 2, COLL},
    {"Char", 1, COLL},
    {"Byte", 1, COLL},
    {"Bool", 1, COLL},
    {"Float8_e4m3fn", 1, COLL},
    {"Float8_e5m2", 1, COLL},
    /* other spellings: other compilers' type names, NumPy's */
    {"long", 8, COLL},
    {"long long", 8, COLL},
    {"unsigned long", 8, COLL},
    {"unsigned int", 4, COLL},
    {"short", 2, COLL},
    {"half", 2, COLL},
    {"float16", 2, COLL},
    {"bfloat16", 2, COLL},
    {"float32", 4, COLL},
    {"float64", 8, COLL},
    {"int64", 8, COLL},
    {"int32", 4, COLL},
    {"int16", 2, COLL},
    {"int8", 1, COLL},
    {"uint8", 1, COLL},
};

int dtype_bytes(const char *name, int in)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((names[i].in & in) && strcmp(name, names[i].name) == 0)
			return names[i].bytes;
	return 0;
}

const char *dtype_coll_name(double bytes, int half)
{
	if (bytes == 4)
		return "Float";
	if (bytes == 2)
		return half ? "Half" : "BFloat16";
	return "Byte";
}
