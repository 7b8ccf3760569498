/* cost.c - kernel classes by name. */
#include "cost.h"

#include <ctype.h>
#include <string.h>

const char *cost_class_name(int cls)
{
	static const char *const n[KC_NCLASSES] = {
		"gemm",      "attention",   "conv",      "norm",      "softmax",
		"reduction", "elementwise", "embedding", "optimizer", "collective",
		"memcpy",    "memset",      "other"};
	return cls >= 0 && cls < KC_NCLASSES ? n[cls] : "?";
}

/* Case-insensitive substring test on the part of the name before its
 * argument list (template arguments name other kernels' types). */
static int has(const char *lower, const char *needle)
{
	return strstr(lower, needle) != NULL;
}

int cost_classify(const char *name)
{
	/* First match wins; see docs/MODEL.md for why each pattern is here. */
	static const struct {
		const char *pat;
		int cls;
	} rules[] = {
		{"nccl", KC_COLLECTIVE},      {"all_reduce", KC_COLLECTIVE},
		{"ep::internode", KC_COLLECTIVE}, {"ep::intranode", KC_COLLECTIVE},
		{"flash", KC_ATTENTION},      {"fmha", KC_ATTENTION},
		{"attention", KC_ATTENTION},  {"attn", KC_ATTENTION},
		{"layer_norm", KC_NORM},      {"layernorm", KC_NORM},
		{"rms_norm", KC_NORM},        {"rmsnorm", KC_NORM},
		{"batch_norm", KC_NORM},      {"batchnorm", KC_NORM},
		{"bn_fw", KC_NORM},           {"bn_bw", KC_NORM},
		{"group_norm", KC_NORM},      {"gammabeta", KC_NORM},
		{"softmax", KC_SOFTMAX},
		{"multi_tensor_apply", KC_OPTIMIZER}, {"adam", KC_OPTIMIZER},
		{"fused_sgd", KC_OPTIMIZER},  {"lamb", KC_OPTIMIZER},
		{"embedding", KC_EMBEDDING},  {"index_select", KC_EMBEDDING},
		{"indexselect", KC_EMBEDDING}, {"gather", KC_EMBEDDING},
		{"scatter", KC_EMBEDDING},    {"embs", KC_EMBEDDING},
		{"indices", KC_EMBEDDING},    {"linearize_index", KC_EMBEDDING},
		{"indexing", KC_EMBEDDING},
		{"winograd", KC_CONV},
		{"scudnn", KC_CONV},          {"conv", KC_CONV},
		{"dgrad", KC_CONV},           {"wgrad", KC_CONV},
		{"cudnn", KC_CONV},           {"gemm", KC_GEMM},
		{"nvjet", KC_GEMM},           {"cutlass", KC_GEMM},
		{"cublas", KC_GEMM},          {"xmma", KC_GEMM},
		{"splitkreduce", KC_GEMM},    {"epilogue", KC_GEMM},
		{"bmm", KC_GEMM},             {"gemv", KC_GEMM},
		{"fft", KC_CONV},             {"reduce", KC_REDUCTION},
		{"radixsort", KC_REDUCTION},  {"devicescan", KC_REDUCTION},
		{"triton_per", KC_REDUCTION}, {"triton_red", KC_REDUCTION},
		{"elementwise", KC_ELEMENTWISE}, {"copy", KC_ELEMENTWISE},
		{"fill", KC_ELEMENTWISE},     {"triton_poi", KC_ELEMENTWISE},
		{"cat", KC_ELEMENTWISE},      {"pool", KC_ELEMENTWISE},
		{"transpose", KC_ELEMENTWISE}, {"rotary", KC_ELEMENTWISE},
		{"cast", KC_ELEMENTWISE},     {"quant", KC_ELEMENTWISE},
		{"swiglu", KC_ELEMENTWISE},   {"nchwtonhwc", KC_ELEMENTWISE},
		{"nhwctonchw", KC_ELEMENTWISE}, {"expand", KC_ELEMENTWISE},
	};
	char lower[256];
	size_t n = 0;

	/* Lower-case the name up to its argument list; "(anonymous
	 * namespace)" is part of the name, not the list. */
	for (const char *p = name; *p && n < sizeof(lower) - 1; p++) {
		if (*p == '(') {
			if (strncmp(p, "(anonymous namespace)", 21) != 0)
				break;
			p += 20;
			continue;
		}
		lower[n++] = (char)tolower((unsigned char)*p);
	}
	lower[n] = '\0';
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		if (has(lower, rules[i].pat))
			return rules[i].cls;
	return KC_OTHER;
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
