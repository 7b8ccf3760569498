/* cost.c - kernel classes by name. */
#include "cost.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "hw.h"

int cost_compute_bound(int cls)
{
	return cls == KC_GEMM || cls == KC_ATTENTION || cls == KC_CONV;
}

int cost_mem_kind(int cls)
{
	switch (cls) {
	case KC_NORM:
		return HW_MEM_NORM;
	case KC_SOFTMAX:
	case KC_REDUCTION:
		return HW_MEM_REDUCTION;
	case KC_ELEMENTWISE:
	case KC_OPTIMIZER:
		return HW_MEM_ELEMENTWISE;
	default:
		return -1;
	}
}

int cost_mem_impl(int cls, int elem_bytes)
{
	if (cls != KC_OPTIMIZER)
		return HW_MEM_IMPL_ANY;
	return elem_bytes >= 4 ? HW_MEM_IMPL_MULTI_TENSOR_FP32 : HW_MEM_IMPL_MULTI_TENSOR;
}

const char *cost_class_name(int cls)
{
	static const char *const n[KC_NCLASSES] = {
	    "gemm",	 "attention", "conv",	    "norm",   "softmax", "reduction", "elementwise",
	    "embedding", "optimizer", "collective", "memcpy", "memset",	 "other"};
	return cls >= 0 && cls < KC_NCLASSES ? n[cls] : "?";
}

/* Case-insensitive substring test on the part of the name before its
 * argument list (template arguments name other kernels' types). */
static int has(const char *lower, const char *needle)
{
	return strstr(lower, needle) != NULL;
}

/* Lower-case a kernel's name up to its argument list into out; "(anonymous
 * namespace)" is part of the name, not the list. */
static void lower_name(const char *name, char *out, size_t size)
{
	size_t n = 0;
	for (const char *p = name; *p && n < size - 1; p++) {
		if (*p == '(') {
			if (strncmp(p, "(anonymous namespace)", 21) != 0)
				break;
			p += 20;
			continue;
		}
		out[n++] = (char)tolower((unsigned char)*p);
	}
	out[n] = '\0';
}

int cost_classify(const char *name)
{
	/* First match wins; see docs/MODEL.md for why each pattern is here. */
	static const struct {
		const char *pat;
		int cls;
	} rules[] = {
	    {"nccl", KC_COLLECTIVE},
	    /* Tensile's GEMMs (rocBLAS, hipBLASLt): "Cijk_Ailk_Bljk_BBS_BH_MT..."
	     * (C[i,j,k] from A and B; the rest tiles them): first, as their
	     * tile options spell other rules' words. */
	    {"cijk_", KC_GEMM},
	    {"all_reduce", KC_COLLECTIVE},
	    {"ep::internode", KC_COLLECTIVE},
	    {"ep::intranode", KC_COLLECTIVE},
	    {"flash", KC_ATTENTION},
	    {"fmha", KC_ATTENTION},
	    {"attention", KC_ATTENTION},
	    {"attn", KC_ATTENTION},
	    /* Mamba-2 (mamba_ssm, causal-conv1d): the SSD scan's decay sums
	     * and state passing are memory-bound passes, its other kernels
	     * chunk-local matrix products; the depthwise causal convolution
	     * is memory-bound (a few taps a channel), not a cuDNN one. */
	    {"ssd_chunk_cumsum", KC_ELEMENTWISE},
	    {"ssd_state_passing", KC_ELEMENTWISE},
	    {"ssd_", KC_GEMM},
	    {"causal_conv1d", KC_ELEMENTWISE},
	    /* A GEMM's helper kernels share its op but not its FLOPs. */
	    {"splitkreduce", KC_REDUCTION},
	    {"epilogue", KC_ELEMENTWISE},
	    /* Transformer Engine's current scaling: the amax a reduction
	     * (nvte_compute_amax's amax_kernel; synth's te_compute_amax_*),
	     * the scale from it a one-thread pointwise kernel, as kperf
	     * times them (kperf_lowp_casts). */
	    {"compute_amax", KC_REDUCTION},
	    {"::amax_kernel", KC_REDUCTION},
	    {"scale_from_amax", KC_ELEMENTWISE},
	    {"layer_norm", KC_NORM},
	    {"layernorm", KC_NORM},
	    {"rms_norm", KC_NORM},
	    {"rmsnorm", KC_NORM},
	    {"batch_norm", KC_NORM},
	    {"batchnorm", KC_NORM},
	    {"bn_fw", KC_NORM},
	    {"bn_bw", KC_NORM},
	    {"group_norm", KC_NORM},
	    {"gammabeta", KC_NORM},
	    {"softmax", KC_SOFTMAX},
	    {"multi_tensor_apply", KC_OPTIMIZER},
	    {"adam", KC_OPTIMIZER},
	    {"fused_sgd", KC_OPTIMIZER},
	    {"lamb", KC_OPTIMIZER},
	    {"embedding", KC_EMBEDDING},
	    {"index_select", KC_EMBEDDING},
	    {"indexselect", KC_EMBEDDING},
	    {"gather", KC_EMBEDDING},
	    {"scatter", KC_EMBEDDING},
	    {"embs", KC_EMBEDDING},
	    {"indices", KC_EMBEDDING},
	    {"linearize_index", KC_EMBEDDING},
	    {"indexing", KC_EMBEDDING},
	    {"winograd", KC_CONV},
	    {"scudnn", KC_CONV},
	    {"conv", KC_CONV},
	    {"dgrad", KC_CONV},
	    {"wgrad", KC_CONV},
	    {"cudnn", KC_CONV},
	    {"gemm", KC_GEMM},
	    {"nvjet", KC_GEMM},
	    {"cutlass", KC_GEMM},
	    {"cublas", KC_GEMM},
	    {"xmma", KC_GEMM},
	    {"bmm", KC_GEMM},
	    {"gemv", KC_GEMM},
	    {"fft", KC_CONV},
	    {"reduce", KC_REDUCTION},
	    {"radixsort", KC_REDUCTION},
	    {"devicescan", KC_REDUCTION},
	    {"triton_per", KC_REDUCTION},
	    {"triton_red", KC_REDUCTION},
	    {"elementwise", KC_ELEMENTWISE},
	    {"copy", KC_ELEMENTWISE},
	    {"dropout", KC_ELEMENTWISE},
	    {"masked_scale", KC_ELEMENTWISE},
	    {"fill", KC_ELEMENTWISE},
	    {"triton_poi", KC_ELEMENTWISE},
	    {"cat", KC_ELEMENTWISE},
	    {"pool", KC_ELEMENTWISE},
	    {"transpose", KC_ELEMENTWISE},
	    {"rotary", KC_ELEMENTWISE},
	    {"cast", KC_ELEMENTWISE},
	    {"quant", KC_ELEMENTWISE},
	    {"swiglu", KC_ELEMENTWISE},
	    {"nchwtonhwc", KC_ELEMENTWISE},
	    {"nhwctonchw", KC_ELEMENTWISE},
	    {"expand", KC_ELEMENTWISE},
	};
	char lower[256];

	lower_name(name, lower, sizeof(lower));
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		if (has(lower, rules[i].pat))
			return rules[i].cls;
	return KC_OTHER;
}

int cost_classify_all(const struct graph *g, uint8_t *cls)
{
	uint8_t *by_name = prism_malloc(g->st.n ? g->st.n : 1);
	if (!by_name)
		return PRISM_ENOMEM;
	memset(by_name, 0xff, g->st.n);
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		if (g->kind[u] != GN_KERNEL) {
			cls[u] = (uint8_t)cost_classify_node(g, u);
			continue;
		}
		if (by_name[g->name[u]] == 0xff)
			by_name[g->name[u]] =
			    (uint8_t)cost_classify(strtab_get(&g->st, g->name[u]));
		cls[u] = by_name[g->name[u]];
	}
	free(by_name);
	return 0;
}

int cost_classify_node(const struct graph *g, uint32_t u)
{
	switch (g->kind[u]) {
	case GN_MEMCPY:
		return KC_MEMCPY;
	case GN_MEMSET:
		return KC_MEMSET;
	case GN_COLL:
	case GN_P2P:
		return KC_COLLECTIVE;
	case GN_KERNEL:
		return cost_classify(strtab_get(&g->st, g->name[u]));
	default:
		return KC_OTHER;
	}
}

#define MAX_TENSORS 8
#define MAX_DIMS    8

struct shapes {
	int n; /* tensors */
	int rank[MAX_TENSORS];
	double dim[MAX_TENSORS][MAX_DIMS];
};

/* Parse "[[4096, 1024], [1024], []]"; tensors past MAX_TENSORS are ignored. */
static int parse_shapes(const char *s, struct shapes *out)
{
	int depth = 0;
	memset(out, 0, sizeof(*out));
	for (; *s; s++) {
		if (*s == '[') {
			if (++depth == 2 && out->n < MAX_TENSORS)
				out->n++;
		} else if (*s == ']') {
			depth--;
		} else if (depth == 2 && *s >= '0' && *s <= '9' && out->n <= MAX_TENSORS) {
			char *end;
			double v = strtod(s, &end);
			int t = out->n - 1;
			if (out->rank[t] < MAX_DIMS)
				out->dim[t][out->rank[t]++] = v;
			s = end - 1;
		}
	}
	return out->n;
}

static double numel(const struct shapes *sh, int t)
{
	double n = 1;
	if (t >= sh->n || sh->rank[t] == 0)
		return 0;
	for (int d = 0; d < sh->rank[t]; d++)
		n *= sh->dim[t][d];
	return n;
}

/* The first type name of a list like ["float", "float", ""]. */
static void first_type(const char *s, char *out, size_t n)
{
	const char *a = strchr(s, '"'), *b;
	out[0] = '\0';
	if (a && (b = strchr(a + 1, '"')) && (size_t)(b - a - 1) < n) {
		memcpy(out, a + 1, (size_t)(b - a - 1));
		out[b - a - 1] = '\0';
	}
}

int cost_dtype(const struct graph *g, uint32_t u)
{
	static const char *const low[] = {"e4m3", "e5m2", "e2m1", "fp8", "fp4", "mxf"};
	char t[48], name[256];
	/* A kernel that says it computes in 8 or 4 bits does, whatever its op's
	 * inputs were (Transformer Engine and cuBLASLt quantise inside). */
	lower_name(strtab_get(&g->st, g->name[u]), name, sizeof(name));
	for (size_t i = 0; i < sizeof(low) / sizeof(low[0]); i++)
		if (strstr(name, low[i]))
			return HW_FP8;
	first_type(strtab_get(&g->st, g->op_types[u]), t, sizeof(t));
	/* fp32 inputs on tensor cores compute in TF32 (Ampere's default for
	 * matmul until PyTorch 1.12, allow_tf32 since): the kernel says so. */
	if (strcmp(t, "float") == 0 && (strstr(name, "tf32") || strstr(name, "tensorop")))
		return HW_TF32;
	if (strcmp(t, "float") == 0)
		return HW_FP32;
	if (strstr(t, "BFloat16"))
		return HW_BF16;
	if (strstr(t, "Half"))
		return HW_FP16;
	if (strstr(t, "Float8"))
		return HW_FP8;
	return -1;
}

/* 2 B M N K of a GEMM op from its input shapes, or 0; *elems gets the
 * elements of A, B and C, dims (if not NULL) B, M, N and K. */
static double gemm_flops(const char *op, const struct shapes *sh, double *elems, double *dims)
{
	int a = 0, b = 1;
	double batch = 1, M, K, N;

	if (strcmp(op, "aten::addmm") == 0 || strcmp(op, "aten::baddbmm") == 0)
		a = 1, b = 2; /* the bias comes first */
	else if (strcmp(op, "aten::mm") != 0 && strcmp(op, "aten::bmm") != 0 &&
		 strcmp(op, "aten::matmul") != 0 && strcmp(op, "aten::linear") != 0)
		return 0;
	if (sh->n <= b || sh->rank[a] < 2 || sh->rank[b] < 1)
		return 0;
	K = sh->dim[a][sh->rank[a] - 1];
	M = 1;
	if (strcmp(op, "aten::linear") == 0) {
		/* input [..., K], weight [N, K] */
		for (int d = 0; d + 1 < sh->rank[a]; d++)
			M *= sh->dim[a][d];
		N = sh->dim[b][0];
		if (sh->rank[b] != 2 || sh->dim[b][1] != K)
			return 0;
		*elems = M * K + N * K + M * N;
		if (dims) {
			dims[0] = 1;
			dims[1] = M;
			dims[2] = N;
			dims[3] = K;
		}
		return 2 * M * N * K;
	}
	/* [..., M, K] x [..., K, N]: leading dims of the first are the batch. */
	M = sh->dim[a][sh->rank[a] - 2];
	for (int d = 0; d + 2 < sh->rank[a]; d++)
		batch *= sh->dim[a][d];
	if (sh->rank[b] < 2 || sh->dim[b][sh->rank[b] - 2] != K)
		return 0;
	N = sh->dim[b][sh->rank[b] - 1];
	*elems = numel(sh, a) + numel(sh, b) + batch * M * N;
	if (dims) {
		dims[0] = batch;
		dims[1] = M;
		dims[2] = N;
		dims[3] = K;
	}
	return 2 * batch * M * N * K;
}

int cost_work(const struct graph *g, uint32_t u, double *flops, double *bytes)
{
	struct shapes sh;
	char t[48];
	int es, cls;
	double in = 0;

	*flops = *bytes = 0;
	if (g->kind[u] < GN_KERNEL || !g->op_dims[u] ||
	    !parse_shapes(strtab_get(&g->st, g->op_dims[u]), &sh))
		return 0;
	first_type(strtab_get(&g->st, g->op_types[u]), t, sizeof(t));
	es = dtype_bytes(t, DTYPE_OP);
	if (!es)
		return 0;
	for (int i = 0; i < sh.n; i++)
		in += numel(&sh, i);
	*bytes = (in + numel(&sh, 0)) * es;
	cls = cost_classify_node(g, u);
	if (cls == KC_GEMM) {
		double elems = 0;
		*flops = gemm_flops(strtab_get(&g->st, g->op[u]), &sh, &elems, NULL);
		if (*flops > 0) /* a GEMM reads A and B and writes C */
			*bytes = elems * es;
	}
	return *bytes > 0;
}

int cost_op_input(const struct graph *g, uint32_t u, double *elems, int *elem_bytes)
{
	struct shapes sh;
	char t[48];

	*elems = 0;
	*elem_bytes = 0;
	if (!g->op_dims[u] || !parse_shapes(strtab_get(&g->st, g->op_dims[u]), &sh))
		return 0;
	first_type(strtab_get(&g->st, g->op_types[u]), t, sizeof(t));
	*elems = numel(&sh, 0);
	*elem_bytes = dtype_bytes(t, DTYPE_OP);
	return *elems > 0 && *elem_bytes > 0;
}

int cost_gemm_dims(const struct graph *g, uint32_t u, double dims[4])
{
	struct shapes sh;
	double elems = 0;

	if (g->kind[u] != GN_KERNEL || !g->op_dims[u] || cost_classify_node(g, u) != KC_GEMM ||
	    !parse_shapes(strtab_get(&g->st, g->op_dims[u]), &sh))
		return 0;
	return gemm_flops(strtab_get(&g->st, g->op[u]), &sh, &elems, dims) > 0;
}

int cost_attn_shape(const struct graph *g, uint32_t u, double *b, double *heads, double *sq,
		    double *skv, double *d, int *pass)
{
	struct shapes sh;
	const char *op;
	int bhsd, kt;

	if (g->kind[u] != GN_KERNEL || !g->op_dims[u] || cost_classify_node(g, u) != KC_ATTENTION)
		return 0;
	op = strtab_get(&g->st, g->op[u]);
	if (strstr(op, "scaled_dot_product") || strstr(op, "_cudnn_attention_"))
		bhsd = 1;
	else if (strstr(op, "_flash_attention_") || strstr(op, "_efficient_attention_") ||
		 strstr(op, "flash_attn"))
		bhsd = 0;
	else
		return 0;
	*pass = strstr(op, "backward") || strstr(op, "Backward") ? 1 : 0;
	kt = *pass ? 2 : 1;
	if (!parse_shapes(strtab_get(&g->st, g->op_dims[u]), &sh) || sh.n <= kt ||
	    sh.rank[0] != 4 || sh.rank[kt] != 4)
		return 0;
	*b = sh.dim[0][0];
	*heads = sh.dim[0][bhsd ? 1 : 2];
	*sq = sh.dim[0][bhsd ? 2 : 1];
	*skv = sh.dim[kt][bhsd ? 2 : 1];
	*d = sh.dim[0][3];
	/* The query's and the value's widths (forward q, k, v; backward the
	 * output's gradient first): their mean where they differ (MLA's 192
	 * and 128), as kbench.c counts such rows. */
	if (sh.n > kt + 1 && sh.rank[kt + 1] == 4 && sh.rank[kt - 1] == 4)
		*d = (sh.dim[kt - 1][3] + sh.dim[kt + 1][3]) / 2;
	return *b > 0 && *heads > 0 && *sq > 0 && *skv > 0 && *d > 0;
}
