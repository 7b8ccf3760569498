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

/* Class of a kernel by name. */
int cost_classify(const char *kernel_name);

const char *cost_class_name(int cls);

#endif
