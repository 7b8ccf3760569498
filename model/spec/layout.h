/*
 * layout.h - how a training run is laid out on its GPUs: the parallel
 * degrees, microbatches, pipeline schedule and partition, recomputation,
 * precision, sharding and overlap.  One value (struct layout) that every
 * part of prism passes around: the memory model, synth, the analytic
 * estimate, the edits, the command line, sweeps, the results database.
 *
 * Degrees multiply: a candidate runs on tp x pp x dp x cp GPUs.  A field
 * documented as "0 reads as 1" is read through its accessor (layout_cp(),
 * layout_ep(), ...), so that a zeroed layout is a valid single-GPU one in
 * those fields.  The struct holds no pointers: copy it by value.
 */
#ifndef PRISM_LAYOUT_H
#define PRISM_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "llm.h"
#include "prism.h"

enum layout_recompute { LAYOUT_RECOMPUTE_NONE, LAYOUT_RECOMPUTE_SELECTIVE, LAYOUT_RECOMPUTE_FULL };
enum layout_schedule { LAYOUT_GPIPE, LAYOUT_1F1B, LAYOUT_INTERLEAVED };

/* Pipeline stage partitions.  GIVEN: part[] as it is (part[0] == 0: layers
 * / pp on every stage).  BALANCED: the stages' times balanced, the first
 * stage's embedding and the last stage's head and loss counted in
 * (synth_partition).  EMBED_LOSS: Megatron-LM's
 * account_for_embedding_in_pipeline_split and
 * account_for_loss_in_pipeline_split: the embedding and the loss count as
 * one layer each, (layers + 2) / pp a stage, so the first and the last
 * stages hold one layer fewer. */
enum layout_partition { LAYOUT_PART_GIVEN, LAYOUT_PART_BALANCED, LAYOUT_PART_EMBED_LOSS };

/* The largest layout accepted anywhere (run descriptions, options, sweeps,
 * checks); the smallest degree is 1.  LAYOUT_MAX_GPUS bounds tp x pp x dp
 * (x cp), so products of degrees fit an int with room to spare. */
#define LAYOUT_MAX_STAGES    256
#define LAYOUT_MAX_TP	     1024
#define LAYOUT_MAX_DP	     (1 << 20)
#define LAYOUT_MAX_VP	     64
#define LAYOUT_MAX_MBS	     (1 << 16)
#define LAYOUT_MAX_MICRO     (1 << 16)
#define LAYOUT_MAX_GPUS	     (1 << 24)
#define LAYOUT_MAX_PREFETCH  64
#define LAYOUT_MAX_BUCKET_MB (1 << 20)
#define LAYOUT_MAX_EP	     LLM_MAX_EXPERTS
#define LAYOUT_MAX_CP	     1024
#define LAYOUT_MAX_IMBALANCE 1024.0

struct layout {
	int tp, pp, dp;
	int vp;		  /* virtual stages per GPU (interleaved), 1 otherwise */
	int mbs;	  /* microbatch size b */
	int microbatches; /* m, per pipeline per iteration */
	int schedule;	  /* enum layout_schedule */
	int recompute;	  /* enum layout_recompute */
	int sp;		  /* sequence parallel */
	int flash;	  /* flash attention */
	int zero;	  /* ZeRO stage 0..3 (3: FSDP FULL_SHARD) */
	int dtype;	  /* enum hw_dtype of the linear layers' GEMMs.  fp8 (or
			   * fp4) as Transformer Engine runs it: the attention
			   * core, softmax, norms, the logits and the optimizer
			   * stay in bf16/fp32; casts, transposes and amax
			   * updates are added; an fp8 copy of each weight and
			   * its transpose is held (2 bytes per parameter more,
			   * sharded like the weights) */
	int fp8_attention; /* 1: the attention core in fp8 too */
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
	int partition;	   /* enum layout_partition: how the layers are placed
			    * on the stages */
	/* Layers per pipeline stage, part[0..pp); part[0] == 0: layers / pp
	 * each.  A stage's layers are split evenly over its vp chunks. */
	uint16_t part[LAYOUT_MAX_STAGES];
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

/* The defaults of a run nobody laid out: one GPU, one microbatch of one
 * sequence, 1F1B, bf16 GEMMs, flash attention, ZeRO-3's prefetch of one
 * layer, gradients and pipeline sends overlapped (Megatron-LM's). */
void layout_default(struct layout *l);

/* "none", "selective", "full"; "gpipe", "1f1b", "interleaved"; "even",
 * "balanced", "embed-loss" ("?" beyond).  And back: -1 if unknown. */
const char *layout_recompute_name(int recompute);
int layout_recompute_parse(const char *s);
const char *layout_schedule_name(int schedule);
int layout_schedule_parse(const char *s);

/* "even", "balanced", "embed-loss", or the list "N0,N1,..." into
 * l->partition and l->part: 0, or PRISM_EARG naming what is wrong. */
int layout_partition_parse(const char *s, struct layout *l, struct prism_err *err);

/* The partition's name as layout_partition_parse reads it: "even",
 * "balanced", "embed-loss" or the list given. */
void layout_partition_name(const struct layout *l, char *buf, size_t n);

/* cp (at least 1), and the ranks the gradients are reduced over: dp x cp. */
int layout_cp(const struct layout *l);
int layout_dpc(const struct layout *l);

/* ep, etp (at least 1) and the expert data-parallel degree
 * tp x dp x cp / (ep x etp) (at least 1). */
int layout_ep(const struct layout *l);
int layout_etp(const struct layout *l);
int layout_edp(const struct layout *l);

/* The sharding group of ZeRO: l->shard, or dp x cp. */
int layout_shard_group(const struct layout *l);

/* Layers on stage s, and on chunk c of it (l->part, or even). */
int layout_stage_layers(const struct llm *m, const struct layout *l, int s);
int layout_chunk_layers(const struct llm *m, const struct layout *l, int s, int c);

/* The first layer of chunk c of stage s (chunks in model order: c x pp + s). */
int layout_chunk_first(const struct llm *m, const struct layout *l, int s, int c);

/* Mixture-of-experts layers of chunk c of stage s. */
int layout_chunk_moe(const struct llm *m, const struct layout *l, int s, int c);

#endif
