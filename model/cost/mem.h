/*
 * mem.h - per-GPU memory of a training layout, stage by stage, and whether
 * it fits.
 *
 * Each pipeline stage is its own budget: stage 0 holds the embedding and
 * the most activations in flight, the last stage the output head and the
 * fp32 logits of the loss.  Per stage, in bytes on one GPU (docs/MODEL.md
 * "Memory" gives every term and its source):
 *
 *   parameters  the stage's layers / t; stage 0 the word embedding V h / t
 *               (vocabulary-parallel) and learned positions s h; the last
 *               stage the final norm and the output head V h / t (untied,
 *               or tied with p > 1: Megatron-LM keeps a copy there whose
 *               gradient is all-reduced with the first stage's).
 *   weights, gradients, optimizer state per parameter (Megatron-LM,
 *               docs/user-guide/features/dist_optimizer.md):
 *                 bf16 weights, fp32 main gradients: 2 + 4 + 12
 *                 fp16 weights and gradients:        2 + 2 + 16
 *                 fp32:                              4 + 4 + 8
 *               ZeRO-1 (the distributed optimizer) shards the optimizer
 *               state over the sharding group (the data-parallel group, or
 *               a hybrid group within it), ZeRO-2 the gradients too, ZeRO-3
 *               (FSDP FULL_SHARD) the weights too.  FP8 training adds an
 *               fp8 copy of each layer weight and its transpose (2 bytes).
 *   buffers     ZeRO-3: the unsharded bf16 weights of the layers gathered
 *               at once (prefetch + 1), the stage's embedding or head
 *               unsharded, and one layer's unsharded gradient before its
 *               reduce-scatter; ZeRO-2: one layer's unsharded gradient.
 *   activations per layer per microbatch (Korthikanti et al. 2022, Table 2,
 *               mem_act_per_layer), times the layers of each chunk held, as
 *               the schedule holds them: the stage's own order of forward
 *               and backward units (GPipe, 1F1B, interleaved) is walked and
 *               the most held at once is the peak.  Stage 0's first chunk
 *               adds the embedding's dropout mask (s b h, / t with SP); the
 *               last stage's last chunk the final norm's and the output
 *               layer's inputs (2 s b h each, / t with SP) and the fp32
 *               logits the loss keeps (4 s b V / t) (Korthikanti section
 *               4.3).
 *   transient   working memory at the peak: a layer's full activations
 *               while recomputed (full recomputation), or its s^2 scores
 *               (selective, without flash attention); the bf16 logits of
 *               the microbatch in the loss (last stage).
 *   fragmentation  the caching allocator reserves more than it allocates:
 *               reserved = allocated / (1 - f), f from the hardware
 *               profile (allocator_fragmentation).
 *
 * Mixture-of-experts layers hold their routed experts' share, experts /
 * (ep x etp), whose optimizer state ZeRO shards over the expert
 * data-parallel group, and their routed tokens' activations
 * (mem_act_moe_layer); context parallelism divides every activation by
 * cp and adds the ring's key-value buffers to the working memory.
 *
 * A stage fits when allocated + fragmentation is at most the HBM capacity
 * less the profile's reserve (CUDA context, library workspaces, NCCL
 * buffers).
 */
#ifndef PRISM_MEM_H
#define PRISM_MEM_H

#include <stdint.h>

#include "hw.h"
#include "llm.h"

enum mem_recompute { MEM_RECOMPUTE_NONE, MEM_RECOMPUTE_SELECTIVE, MEM_RECOMPUTE_FULL };
enum mem_schedule { MEM_GPIPE, MEM_1F1B, MEM_INTERLEAVED };

/* Bytes of weights, gradients and optimizer state: bf16 weights with fp32
 * main gradients (Megatron-LM's default for bf16, and FP8 training's),
 * fp16 weights and gradients, fp32. */
enum mem_prec { MEM_PREC_BF16, MEM_PREC_FP16, MEM_PREC_FP32 };

/* Pipeline stages at most (synth.h's SYNTH_MAX_STAGES). */
#define MEM_MAX_STAGES 256

struct mem_layout {
	int tp, pp, dp;
	int vp;		   /* virtual stages per GPU (interleaved), 1 otherwise */
	int mbs;	   /* microbatch size b */
	int microbatches;  /* m, per pipeline per iteration */
	int schedule;	   /* enum mem_schedule */
	int recompute;	   /* enum mem_recompute */
	int sp;		   /* sequence parallel */
	int flash;	   /* flash attention */
	int zero;	   /* ZeRO stage 0..3 (3: FSDP FULL_SHARD) */
	int fp8_weights;   /* FP8 GEMMs (Transformer Engine): an fp8 copy of
			    * each weight and its transpose, 2 bytes per
			    * parameter more (sharded like the weights) */
	int prec;	   /* enum mem_prec */
	int shard;	   /* ZeRO sharding group: 0 the whole data-parallel
			    * group; else a divisor of dp (hybrid sharding:
			    * FSDP HYBRID_SHARD, ZeRO++ hpZ / MiCS), the dp /
			    * shard replicas all-reducing the sharded
			    * gradients */
	int prefetch;	   /* ZeRO-3: layers all-gathered ahead of the one
			    * computing (0: each gathered when needed) */
	int bucket_mb;	   /* gradient buckets, MB (10^6 bytes); 0: Megatron-LM's
			    * max(40M, 1M x dp) parameters */
	int overlap_grad;  /* gradient reduction overlapped with the backward
			    * (DDP, --overlap-grad-reduce); 0: after it */
	int overlap_param; /* ZeRO-1/2: the parameter all-gather overlapped with
			    * the next forward (--overlap-param-gather) */
	int tp_overlap;	   /* TP collectives overlapped with their GEMMs
			    * (--tp-comm-overlap; needs sp) */
	int pp_overlap;	   /* pipeline sends overlap the next unit's compute;
			    * 0: the compute stream waits for them */
	/* Layers per pipeline stage, part[0..pp); part[0] == 0: layers / pp
	 * each.  A stage's layers are split evenly over its vp chunks. */
	uint16_t part[MEM_MAX_STAGES];
	/* Mixture-of-experts (models with experts; 0 reads as 1): expert
	 * parallel and expert tensor parallel degrees, their ep x etp ranks
	 * carved from the tp x dp ranks of a stage (Megatron-LM's MoE
	 * parallel folding), the dp x tp / (ep x etp) expert data-parallel
	 * replicas reducing the experts' gradients; imbalance: tokens on the
	 * busiest expert over the mean (0 reads as 1). */
	int ep, etp;
	double imbalance;
	/* Context parallelism (0 reads as 1): each sequence split over cp
	 * ranks (tp apart), 2 cp chunks for the causal load balance; the
	 * gradients are reduced and ZeRO shards over the dp x cp ranks
	 * (Megatron-LM's data-parallel group with context parallelism). */
	int cp;
	/* 1: Llama 3's all-gather form (K and V all-gathered over the cp
	 * ranks before the attention, their gradients reduce-scattered after
	 * it, exposed); 0: Transformer Engine's ring. */
	int cp_allgather;
};

/* One stage's memory on one GPU, bytes. */
struct mem_stage {
	double params; /* parameters on the GPU */
	double weights, grads, optimizer;
	double buffers;	      /* ZeRO's gathered weights and unsharded gradients */
	double activations;   /* held at the peak, logits included */
	double logits;	      /* of which the fp32 logits (last stage) */
	double inflight;      /* microbatches held at the peak (chunk units / vp) */
	double transient;     /* working memory at the peak */
	double allocated;     /* the sum of the above */
	double fragmentation; /* reserved beyond allocated */
	double total;	      /* allocated + fragmentation */
};

struct mem_est {
	/* The stage that needs the most (its breakdown below). */
	int stage;
	double params_per_gpu;
	double weights, grads, optimizer, buffers;
	double act_per_layer; /* bytes, one layer, one microbatch */
	double inflight;      /* microbatches held at the peak */
	double activations, logits, transient;
	double allocated, fragmentation;
	double total;			/* allocated + fragmentation */
	double first_total, last_total; /* stage 0's and the last stage's */
	double capacity;		/* usable: HBM minus the reserve */
	int fits;
};

/* "none", "selective", "full"; and back (-1 if unknown). */
const char *mem_recompute_name(int recompute);
int mem_recompute_parse(const char *s);

/* Activation bytes of one layer for one microbatch. */
double mem_act_per_layer(const struct llm *m, const struct mem_layout *l);

/* The same for a mixture-of-experts layer on the busiest rank: the dense
 * layer's less its FFN (Korthikanti's 19 s b h), plus the router's
 * scores, the routed tokens' expert inputs, FFN outputs and activations
 * (mem_moe_tokens of them), the shared experts' as a dense FFN. */
double mem_act_moe_layer(const struct llm *m, const struct mem_layout *l);

/* cp (at least 1), and the ranks the gradients are reduced over: dp x cp. */
int mem_cp(const struct mem_layout *l);
int mem_dpc(const struct mem_layout *l);

/* ep, etp (at least 1) and the expert data-parallel degree
 * tp x dp x cp / (ep x etp) (at least 1). */
int mem_ep(const struct mem_layout *l);
int mem_etp(const struct mem_layout *l);
int mem_edp(const struct mem_layout *l);

/* The busiest expert's tokens over the mean: imbalance, capped by the
 * capacity factor where the model drops tokens. */
double mem_moe_peak(const struct llm *m, const struct mem_layout *l);

/* Routed tokens one rank's grouped expert GEMMs take in one microbatch of
 * one mixture-of-experts layer, on the busiest rank: n top_k etp rho, n
 * the rank's tokens (b s / tp: sequence parallel), rho the busiest rank's
 * load over the mean, (E/ep - 1 + peak) / (E/ep) (the busiest expert,
 * the rank's others at the mean). */
double mem_moe_tokens(const struct llm *m, const struct mem_layout *l);

/* Parameters of one mixture-of-experts layer on one GPU: *dense the part
 * split by tp (attention, norms, router, shared experts), *expert the
 * routed experts' share, experts x expert params / (ep x etp). */
void mem_moe_layer_params(const struct llm *m, const struct mem_layout *l, double *dense,
			  double *expert);

/* Mixture-of-experts layers of chunk c of stage s. */
int mem_chunk_moe(const struct llm *m, const struct mem_layout *l, int s, int c);

/* Layers on stage s, and on chunk c of it (l->part, or even). */
int mem_stage_layers(const struct llm *m, const struct mem_layout *l, int s);
int mem_chunk_layers(const struct llm *m, const struct mem_layout *l, int s, int c);

/* The first layer of chunk c of stage s (chunks in model order: c x pp + s). */
int mem_chunk_first(const struct llm *m, const struct mem_layout *l, int s, int c);

/* The sharding group of ZeRO: l->shard, or dp x cp. */
int mem_shard_group(const struct mem_layout *l);

/* Bytes per parameter of weights, gradients and optimizer state. */
void mem_bytes_per_param(int prec, double *weights, double *grads, double *optimizer);

/* Stage s of l (0 <= s < pp); hw may be NULL (no fragmentation). */
void mem_stage(const struct llm *m, const struct mem_layout *l, const struct hw_profile *hw, int s,
	       struct mem_stage *out);

/* Every stage; the one needing the most is reported.  hw may be NULL (then
 * capacity = 0, fits = 0). */
void mem_estimate(const struct llm *m, const struct mem_layout *l, const struct hw_profile *hw,
		  struct mem_est *out);

#endif
