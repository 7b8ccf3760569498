/*
 * mem.h - per-GPU memory of a training layout, and whether it fits.
 *
 * Weights, gradients and optimizer state (FP8 training adds an fp8 copy of
 * each weight and its transpose, 2 bytes): mixed-precision Adam keeps 2
 * bytes of bf16 weights, 2 of bf16 gradients and 12 of fp32 state (master
 * weights, first and second moments) per parameter (Rajbhandari et al.,
 * ZeRO, SC20); ZeRO stage 1 shards the 12 over the data-parallel group,
 * stage 2 the gradients too, stage 3 the weights too.
 *
 * Activations per layer per microbatch, in bytes (Korthikanti et al.,
 * "Reducing Activation Recomputation in Large Transformer Models", 2022,
 * Table 2; s sequence, b microbatch, h hidden, a heads, t tensor parallel):
 *   no parallelism                 s b h (34 + 5 a s / h)
 *   tensor parallel                s b h (10 + 24/t + 5 a s / (h t))
 *   + sequence parallel            s b h (34 + 5 a s / h) / t
 *   + selective recomputation      s b h (10 + 24/t)       or 34 s b h / t with SP
 *   full recomputation             2 s b h                 or 2 s b h / t with SP
 * Flash attention keeps no s^2 scores: the 5as/h term drops, as with
 * selective recomputation.  The formulas assume an FFN of 4h.
 *
 * Pipeline stage 0 holds the most activations: GPipe keeps all m
 * microbatches; 1F1B keeps min(m, p); interleaving with v chunks
 * multiplies that by 1 + (p - 1)/(p v) (Korthikanti, section 4.2.3).
 */
#ifndef PRISM_MEM_H
#define PRISM_MEM_H

#include "hw.h"
#include "llm.h"

enum mem_recompute { MEM_RECOMPUTE_NONE, MEM_RECOMPUTE_SELECTIVE, MEM_RECOMPUTE_FULL };
enum mem_schedule { MEM_GPIPE, MEM_1F1B, MEM_INTERLEAVED };

struct mem_layout {
	int tp, pp, dp;
	int vp;		  /* virtual stages per GPU (interleaved), 1 otherwise */
	int mbs;	  /* microbatch size b */
	int microbatches; /* m, per pipeline per iteration */
	int schedule;	  /* enum mem_schedule */
	int recompute;	  /* enum mem_recompute */
	int sp;		  /* sequence parallel */
	int flash;	  /* flash attention */
	int zero;	  /* ZeRO stage 0..3 */
	int fp8_weights;  /* FP8 GEMMs (Transformer Engine): an fp8 copy of
			    * each weight and its transpose, 2 bytes per
			    * parameter more (sharded like the weights) */
};

struct mem_est {
	double params_per_gpu;
	double weights, grads, optimizer; /* bytes per GPU */
	double act_per_layer;		  /* bytes, one microbatch */
	double inflight;		  /* microbatches held on stage 0 */
	double activations;		  /* bytes on stage 0 */
	double total;
	double capacity; /* usable: HBM minus the reserve */
	int fits;
};

/* "none", "selective", "full"; and back (-1 if unknown). */
const char *mem_recompute_name(int recompute);
int mem_recompute_parse(const char *s);

/* Activation bytes of one layer for one microbatch. */
double mem_act_per_layer(const struct llm *m, const struct mem_layout *l);

/* The whole estimate; hw may be NULL (then capacity = 0, fits = 0). */
void mem_estimate(const struct llm *m, const struct mem_layout *l, const struct hw_profile *hw,
		  struct mem_est *out);

#endif
