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
/* What selective recomputation re-runs (recompute_modules, a set of
 * these bits): Megatron-LM's --recompute-modules
 * (megatron/core/transformer/transformer_config.py, recompute_modules;
 * its default ["core_attn"]).  docs/MODEL.md, "Recompute modules". */
enum layout_rc_module {
	LAYOUT_RC_CORE_ATTN = 1 << 0,	/* the attention core */
	LAYOUT_RC_MLP = 1 << 1,		/* a dense layer's MLP */
	LAYOUT_RC_LAYERNORM = 1 << 2,	/* the norms Megatron keeps apart from a linear */
	LAYOUT_RC_MLA_UP_PROJ = 1 << 3, /* MLA's up projections and RoPE */
	LAYOUT_RC_MOE = 1 << 4,		/* an MoE layer's MLP whole */
	LAYOUT_RC_MOE_ACT = 1 << 5,	/* the routed experts' activation */
	LAYOUT_RC_SHARED = 1 << 6	/* the shared experts */
};
#define LAYOUT_RC_ALL 127
/* LoRA's target modules (lora_targets, a set of these bits), by
 * Megatron-Bridge's names (megatron/bridge/peft/lora.py, LoRA
 * target_modules; its default all four).  docs/MODEL.md, "LoRA". */
enum layout_lora_target {
	LAYOUT_LORA_QKV = 1 << 0,  /* linear_qkv: column parallel */
	LAYOUT_LORA_PROJ = 1 << 1, /* linear_proj: row parallel */
	LAYOUT_LORA_FC1 = 1 << 2,  /* linear_fc1: column parallel */
	LAYOUT_LORA_FC2 = 1 << 3   /* linear_fc2: row parallel */
};
#define LAYOUT_LORA_ALL 15
/* Pipeline schedules.  ZB1P and ZB2P split each backward into B (the
 * input gradient: every kernel of the backward but the weight-gradient
 * GEMMs) and W (those GEMMs), W deferred to fill the bubble (Qi et al.,
 * "Zero Bubble Pipeline Parallelism", ICLR 2024; layout_zb_next). */
/* ZBV is the paper's ZB-V (its section 6): two model chunks a stage in a
 * V, stage s holding chunks s and 2p - 1 - s (layout_chunk_model).
 * DUALPIPEV is DeepSeek's DualPipeV (DualPipe's "cut-in-half" form) on
 * the same V with its own order (layout_zb_next). */
enum layout_schedule {
	LAYOUT_GPIPE,
	LAYOUT_1F1B,
	LAYOUT_INTERLEAVED,
	LAYOUT_ZB1P,
	LAYOUT_ZB2P,
	LAYOUT_ZBV,
	LAYOUT_DUALPIPEV
};
enum layout_cp_comm { LAYOUT_CP_P2P, LAYOUT_CP_ALLGATHER, LAYOUT_CP_A2A, LAYOUT_CP_A2A_P2P };
/* How fp8 GEMMs are scaled (Transformer Engine's recipes, Megatron-LM's
 * --fp8-recipe; docs/MODEL.md "Mixed precision"): per tensor from an amax
 * history (DelayedScaling), per tensor from the tensor's own amax
 * (Float8CurrentScaling, "tensorwise"), per 1x128 / 128x128 block
 * (Float8BlockScaling, DeepSeek-V3's), per 32 values (MXFP8BlockScaling,
 * Blackwell).  fp4 GEMMs are always NVFP4BlockScaling's. */
enum layout_fp8_recipe {
	LAYOUT_FP8_DELAYED,
	LAYOUT_FP8_CURRENT,
	LAYOUT_FP8_BLOCKWISE,
	LAYOUT_FP8_MXFP8
};
/* Mixture-of-experts token dispatchers (Megatron-LM's
 * --moe-token-dispatcher-type; docs/MODEL.md "Dispatchers"): all-to-all
 * over the expert-parallel group, all-gather over the expert tensor x
 * expert parallel group, DeepEP's fused dispatch and combine ("flex"),
 * and HybridEP (NVLink-domain aware, permute fused). */
enum layout_dispatcher {
	LAYOUT_DISP_ALLTOALL,
	LAYOUT_DISP_ALLGATHER,
	LAYOUT_DISP_FLEX,
	LAYOUT_DISP_HYBRIDEP
};

/* Pipeline stage partitions, as Megatron-Core places layers
 * (transformer_block.py get_num_layers_to_build, transformer_config.py's
 * checks, pipeline_parallel_layer_layout.py).  GIVEN: part[] as it is
 * (part[0] == 0 and part_chunks == 0: layers / (pp x vp) in every chunk).
 * BALANCED: the stages' times balanced, the first stage's embedding and
 * the last stage's head and loss counted in (synth_partition).
 * EMBED_LOSS, EMBED, LOSS: account_for_embedding_in_pipeline_split and
 * account_for_loss_in_pipeline_split: the embedding and the loss count as
 * one layer each, (layers + 2) / (pp x vp) a chunk, the first model
 * chunk (stage 0's first virtual chunk) one layer fewer, the last (the
 * last stage's last virtual chunk) one fewer; EMBED and LOSS the one slot.
 * FIRST_LAST: num_layers_in_first/last_pipeline_stage (part_first,
 * part_last; 0: not given), the other stages even. */
enum layout_partition {
	LAYOUT_PART_GIVEN,
	LAYOUT_PART_BALANCED,
	LAYOUT_PART_EMBED_LOSS,
	LAYOUT_PART_FIRST_LAST,
	LAYOUT_PART_EMBED,
	LAYOUT_PART_LOSS
};

/* How the host runs a step (exec; docs/MODEL.md "Host"): eager PyTorch
 * (an op's dispatch and a launch per kernel), CUDA graphs of each
 * layer's forward and backward (Megatron-LM's --cuda-graph-impl local,
 * TE make_graphed_callables: one graph launch a layer), torch.compile
 * (Inductor's launcher and each compiled graph's guards). */
enum layout_exec { LAYOUT_EXEC_EAGER, LAYOUT_EXEC_GRAPHS, LAYOUT_EXEC_COMPILED };

/* Whose modules build a layer (framework; docs/MODEL.md "The framework's
 * modules"): MEGATRON, Megatron-LM's layer with Transformer Engine's
 * modules (each linear's bias gradient in its weight-gradient GEMM's
 * epilogue, or in the fused bias-GeLU and bias-dropout-add); TORCH, plain
 * PyTorch modules (nn.Linear, nn.LayerNorm, F.scaled_dot_product_attention:
 * nanoGPT-style models, scripts/gpt_bench.py), whose nn.Linear's bias
 * gradient is an aten::sum of its output's gradient over the tokens
 * (AddmmBackward0), a kernel of its own with its semaphores' memset. */
enum layout_framework { LAYOUT_FW_MEGATRON, LAYOUT_FW_TORCH };

/* Which framework shards the data-parallel state (dp_impl), each as its
 * source runs it (docs/MODEL.md, "Sharded data parallelism per
 * implementation").  MEGATRON: Megatron-LM's DDP and distributed optimizer
 * (ZeRO-1), ZeRO-2/3 as Megatron-FSDP's optim_grads / optim_grads_params;
 * DEEPSPEED: DeepSpeed's ZeRO stages 1-3; FSDP: PyTorch FSDP1's flat
 * parameters (ZeRO-2 SHARD_GRAD_OP, ZeRO-3 FULL_SHARD, --shard
 * HYBRID_SHARD); FSDP2: fully_shard's per-parameter sharding (ZeRO-3
 * reshard_after_forward, ZeRO-2 not), with its copy-in / copy-out kernels. */
enum layout_dp_impl { LAYOUT_DP_MEGATRON, LAYOUT_DP_DEEPSPEED, LAYOUT_DP_FSDP, LAYOUT_DP_FSDP2 };

/* The optimizer's precision (optimizer_dtype; docs/MODEL.md "Optimizer
 * precision"), for bf16 weights.  FP32: Megatron-LM's mixed-precision
 * optimizer (fp32 main gradients, fp32 master weights and moments: its
 * default).  BF16_STATES: Megatron-LM's --use-precision-aware-optimizer
 * with --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16 (DeepSeek-V3's
 * recipe): Transformer Engine's FusedAdam keeps the moments in bf16, the
 * fp32 master as 16-bit remainders beside the bf16 weight
 * (store_param_remainders), the main gradients stay fp32.  BF16: pure
 * bf16, no master copy: bf16 gradients accumulated and reduced in bf16,
 * bf16 moments, PyTorch's fused AdamW on the bf16 parameters (what
 * scripts/gpt_bench.py runs). */
enum layout_opt_dtype { LAYOUT_OPT_FP32, LAYOUT_OPT_BF16_STATES, LAYOUT_OPT_BF16 };
/* The main gradients' dtype with bf16 weights (layout_lowp_grads): the
 * implementation's own default, fp32 or bf16. */
enum layout_main_grads { LAYOUT_GRADS_AUTO, LAYOUT_GRADS_FP32, LAYOUT_GRADS_BF16 };

/* The largest layout accepted anywhere (run descriptions, options, sweeps,
 * checks); the smallest degree is 1.  LAYOUT_MAX_GPUS bounds tp x pp x dp
 * (x cp), so products of degrees fit an int with room to spare. */
#define LAYOUT_MAX_STAGES     256
#define LAYOUT_MAX_TP	      1024
#define LAYOUT_MAX_DP	      (1 << 20)
#define LAYOUT_MAX_VP	      64
#define LAYOUT_MAX_MBS	      (1 << 16)
#define LAYOUT_MAX_MICRO      (1 << 16)
#define LAYOUT_MAX_GPUS	      (1 << 24)
#define LAYOUT_MAX_PREFETCH   64
#define LAYOUT_MAX_BUCKET_MB  (1 << 20)
#define LAYOUT_MAX_EP	      LLM_MAX_EXPERTS
#define LAYOUT_MAX_CP	      1024
#define LAYOUT_MAX_IMBALANCE  1024.0
#define LAYOUT_MAX_POWER_W    1e5 /* watts; a profile's rating bounds it further */
#define LAYOUT_MAX_LORA_RANK  65536
#define LAYOUT_MAX_LORA_ALPHA (1 << 20)

struct layout {
	int tp, pp, dp;
	int vp;		       /* virtual stages per GPU (interleaved), 1 otherwise */
	int mbs;	       /* microbatch size b */
	int microbatches;      /* m, per pipeline per iteration */
	int schedule;	       /* enum layout_schedule */
	int recompute;	       /* enum layout_recompute */
	int recompute_modules; /* selective: enum layout_rc_module bits (0 reads
				* as core_attn, Megatron's default) */
	int sp;		       /* sequence parallel */
	int flash;	       /* flash attention */
	int zero;	       /* ZeRO stage 0..3 (3: FSDP FULL_SHARD) */
	int dtype;	       /* enum hw_dtype of the linear layers' GEMMs.  fp8 (or
			   * fp4) as Transformer Engine runs it: the attention
			   * core, softmax, norms, the logits and the optimizer
			   * stay in bf16/fp32; casts, transposes and amax
			   * updates are added; an fp8 copy of each weight and
			   * its transpose is held (2 bytes per parameter more,
			   * sharded like the weights) */
	int fp8_attention;     /* 1: the attention core in fp8 too */
	int fp8_recipe;	       /* enum layout_fp8_recipe (dtype fp8) */
	int shard;	       /* ZeRO sharding group: 0 the whole data-parallel
			    * group; else a divisor of dp (hybrid sharding:
			    * FSDP HYBRID_SHARD, ZeRO++ hpZ / MiCS), the dp /
			    * shard replicas all-reducing the sharded
			    * gradients */
	int prefetch;	       /* ZeRO-3: layers all-gathered ahead of the one
			    * computing (0: each gathered when needed) */
	int dp_impl;	       /* enum layout_dp_impl: whose sharding (ZeRO >= 1) */
	int bucket_mb;	       /* gradient buckets, MB (10^6 bytes); 0: Megatron-LM's
			    * max(40M, 1M x dp) parameters */
	int overlap_grad;      /* gradient reduction overlapped with the backward
			    * (DDP, --overlap-grad-reduce); 0: after it */
	int overlap_param;     /* ZeRO-1/2: the parameter all-gather overlapped with
			    * the next forward (--overlap-param-gather) */
	int tp_overlap;	       /* TP collectives overlapped with their GEMMs
			    * (--tp-comm-overlap; needs sp) */
	int pp_overlap;	       /* pipeline sends overlap the next unit's compute;
			    * 0: the compute stream waits for them */
	int pp_scatter_gather; /* tp > 1 without sp: each tensor-parallel rank
				* sends 1 / t of a pipeline transfer and the
				* receiver all-gathers it over tp (Megatron-LM
				* 2021's scatter_gather_tensors_in_pipeline);
				* 0: each rank sends the whole b s h
				* (Megatron-core) */
	int partition;	       /* enum layout_partition: how the layers are placed
			    * on the stages */
	/* Layers per pipeline stage, part[0..pp); part[0] == 0: layers / pp
	 * each; a stage's layers split evenly over its vp chunks.  Or, where
	 * part_chunks > 0 (a layout string, or a rule placing chunks unevenly),
	 * the layers of each of the part_chunks = pp x vp model chunks, chunk c
	 * of stage s at c x pp + s (at most LAYOUT_MAX_STAGES chunks). */
	uint16_t part[LAYOUT_MAX_STAGES];
	uint16_t part_chunks;
	uint16_t part_first, part_last; /* FIRST_LAST's stage layers (0: not given) */
	uint16_t part_mtp;		/* a layout string's MTP layers (m), in its last chunk */
	/* Mixture-of-experts (models with experts; 0 reads as 1): expert
	 * parallel and expert tensor parallel degrees, their ep x etp ranks
	 * carved from the tp x dp ranks of a stage (Megatron-LM's MoE
	 * parallel folding), the dp x tp / (ep x etp) expert data-parallel
	 * replicas reducing the experts' gradients; imbalance: tokens on the
	 * busiest expert over the mean (0 reads as 1). */
	int ep, etp;
	double imbalance;
	int moe_dispatcher;	/* enum layout_dispatcher */
	int moe_shared_overlap; /* shared experts beside the dispatcher (not allgather) */
	/* Megatron-LM's 1F1B all-to-all overlap (--overlap-moe-expert-
	 * parallel-comm): in the steady phase one microbatch's forward and
	 * another's backward run as one merged unit, layer by layer, each's
	 * expert all-to-alls on a communication stream beside the other's
	 * compute (synth's step; docs/MODEL.md). */
	int moe_a2a_overlap;
	/* Context parallelism (0 reads as 1): each sequence split over cp
	 * ranks (tp apart), 2 cp chunks for the causal load balance; the
	 * gradients are reduced and ZeRO shards over the dp x cp ranks
	 * (Megatron-LM's data-parallel group with context parallelism). */
	int cp;
	/* How the cp ranks share the attention (enum layout_cp_comm,
	 * Transformer Engine's cp_comm_type): the ring of key-value blocks,
	 * Llama 3's all-gather, Ulysses' all-to-alls, or all-to-alls within
	 * an NVLink domain and the ring across (layout_cp_a2a). */
	int cp_comm;
	/* The GPUs' board power cap, watts (0: the profile's rating): compute
	 * kernels run at hw_run_clock (hw.h: the step clock of the layout's
	 * GEMM dtype, capped), memory-bound ones keep their
	 * bandwidth.  layout_check holds it to a quarter of the rating..the
	 * rating. */
	double power_w;
	/* 1: PyTorch's caching allocator with expandable_segments (
	 * PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True): pages mapped as
	 * the blocks need them, no segment rounding (mem_alloc_reserved);
	 * 0: PyTorch's default (CUDAAllocatorConfig: off). */
	int expandable_segments;
	int exec;      /* enum layout_exec: eager (Megatron-LM's default), graphs, compiled */
	int framework; /* enum layout_framework: megatron (the default), torch */
	/* 1: no dropout on the residual branches and the embedding
	 * (Megatron-LM's --hidden-dropout 0; plain PyTorch models built
	 * without it): no dropout kernel runs (torch.nn.functional.dropout
	 * returns its input at p 0: aten/src/ATen/native/Dropout.cpp) and no
	 * mask is kept; 0: Megatron-LM's default, --hidden-dropout 0.1
	 * (layout_dropout). */
	int no_dropout;
	/* Activation offloading (Megatron-LM's --cpu-offloading-num-layers,
	 * Transformer Engine's get_cpu_offload_context): the first
	 * offload_layers layers of the stage save their activations to host
	 * memory after their forward and load them back before their
	 * backward, on a copy stream over the profile's host link (docs/MODEL.md
	 * "Activation offloading").  0: none.  Megatron-LM takes it with pp 1,
	 * no recomputation and eager execution only (layout_check). */
	int offload_layers;
	/* LoRA fine-tuning (Megatron-Bridge's PEFT LoRA; lora_rank 0: full
	 * fine-tuning, the rest unused): every base weight frozen (no weight
	 * gradient, main gradient, master copy or optimizer state), a rank
	 * lora_rank adapter (A: in x r, B: r x out) on each layer's linears
	 * in lora_targets (enum layout_lora_target bits, 0 read as all four),
	 * trained; lora_alpha scales their output (alpha / r: no effect on
	 * time or memory, carried for the exported recipe; 0 reads as the
	 * rank, ParallelLinearAdapter's alpha None). */
	int lora_rank;
	int lora_targets;
	int lora_alpha;
	int optimizer_dtype; /* enum layout_opt_dtype */
	int clip_grad;	     /* 1: the gradients clipped by their global norm
			      * (Megatron-LM's --clip-grad, 1.0 by default); 0:
			      * neither the norm nor the scaling runs */
	/* FP8 primary weights (Megatron-LM's --fp8-param-gather: the model
	 * built under Transformer Engine's quantized_model_init, each linear
	 * layer's weight a quantised tensor and no bf16 copy of it): the
	 * distributed optimizer casts its fp32 master shard straight to fp8
	 * (quantize_param_shard) and all-gathers the fp8 bytes.  dtype fp8,
	 * zero 1..2 under dp_impl megatron (layout_check; docs/MODEL.md
	 * "FP8 primary weights"). */
	int fp8_param_gather;
	/* The residual stream in fp32 around bf16 or fp16 modules
	 * (Megatron-LM's --fp32-residual-connection): the layers' outputs,
	 * the bias-dropout-adds and the pipeline's transfers in fp32
	 * (kperf_resid_bytes; docs/MODEL.md "FP32 residual connection"). */
	int fp32_residual;
	/* Data parallelism's gradients as the implementations keep them
	 * (docs/MODEL.md "Main gradients' dtype", "Megatron-FSDP's double
	 * buffers"): main_grads, enum layout_main_grads (layout_lowp_grads:
	 * auto is fp32 under Megatron-LM's DDP and distributed optimizer, bf16
	 * under Megatron-FSDP and DeepSpeed); fsdp_double_buffer 1 is
	 * Megatron-FSDP's --fsdp-double-buffer (persistent pools of two
	 * units' gathered weights and gradient buckets). */
	int main_grads;
	int fsdp_double_buffer;
};

/* The defaults of a run nobody laid out, each knob's row's (LAYOUT_KNOBS
 * below): one GPU, one microbatch of one sequence, 1F1B, bf16 GEMMs,
 * flash attention, ZeRO-3's prefetch of one layer, gradients and pipeline
 * sends overlapped (Megatron-LM's); even stages. */
void layout_default(struct layout *l);

/* "none", "selective", "full"; "gpipe", "1f1b", "interleaved"; "even",
 * "balanced", "embed-loss" ("?" beyond).  And back: -1 if unknown. */
const char *layout_recompute_name(int recompute);
int layout_recompute_parse(const char *s);
/* A set of recompute modules as Megatron names them, comma-separated in
 * the bits' order ("core_attn,mlp"; 0 reads as "core_attn"; "?" beyond),
 * and back from
 * names separated by spaces, commas or '+': -1 if one is unknown or none
 * is given. */
const char *layout_rc_modules_name(int set);
int layout_rc_modules_parse(const char *s);
/* 1 when l recomputes module bit (selective with it in the set, 0 read
 * as core_attn). */
int layout_rc(const struct layout *l, int bit);
const char *layout_schedule_name(int schedule);
int layout_schedule_parse(const char *s);

/* 1 for the zero-bubble schedules (ZB1P, ZB2P, ZBV, DUALPIPEV), whose
 * backward runs as a B and a W pass (DUALPIPEV's also whole: LAYOUT_PASS_BW). */
int layout_zb(int schedule);
/* 1 for the schedules on the V (ZBV, DUALPIPEV: layout_chunk_model). */
int layout_v(int schedule);

/* The model chunks a stage holds: vp under the interleaved schedule, 2
 * under ZBV's and DUALPIPEV's V, else 1. */
int layout_stage_chunks(const struct layout *l);

/* The one home of the non-zero-bubble schedules' unit order (GPipe, 1F1B
 * and the interleaved 1F1B; a zero-bubble schedule's: layout_zb_next),
 * which synth builds (synth/step.c stage_step), the memory model walks
 * (cost/mem.c) and a unit-level evaluation would walk: stage s runs
 * layout_warmup() forwards, then a forward and a backward each until the
 * forwards are done, then the remaining backwards.  The warm-up: every
 * forward under GPipe, pp - s - 1 under 1F1B, (pp - s - 1) x 2 + (v - 1)
 * x pp under the interleaved schedule, all of them where m = pp
 * (Megatron-LM's schedules.py forward_backward_pipelining_with_interleaving:
 * num_warmup_microbatches, all_warmup_microbatches), one more under the
 * 1F1B all-to-all overlap (moe_a2a_overlap: its merged units'
 * get_pp_rank_microbatches); at most m x layout_stage_chunks. */
int layout_warmup(const struct layout *l, int s);
/* Forward (fwd 1) or backward number k of a stage in that order, pp
 * stages of v chunks (layout_stage_chunks): its microbatch and chunk
 * (Megatron-LM's get_model_chunk_id and get_microbatch_id_in_model_chunk:
 * groups of pp microbatches a chunk, chunk by chunk, the backwards'
 * chunks in reverse).  Inline: synth calls it for every unit it emits. */
static inline void layout_unit_of(int pp, int v, int k, int fwd, int *mb, int *ch)
{
	int pv = pp * v;
	*mb = (k / pv) * pp + k % pp;
	*ch = (k % pv) / pp;
	if (!fwd)
		*ch = v - 1 - *ch;
}

/* Where the model's chunks sit, the one home of that fact: the model
 * chunk (0 .. pp x layout_stage_chunks - 1, in the model's order) that
 * chunk c of stage s holds -- c pp + s (Megatron's interleaving), or in
 * the V (ZBV, DUALPIPEV) s for c 0 and 2 pp - 1 - s for c 1 (PyTorch's
 * generate_stage_to_rank_mapping(style="v")) -- and back: the stage and
 * chunk holding model chunk k. */
int layout_chunk_model(const struct layout *l, int s, int c);
void layout_chunk_place(const struct layout *l, int k, int *s, int *c);

/* The stage holding the model's last chunk (the final norm, the output
 * layer, the loss, the MTP depths): pp - 1, or 0 in the V. */
int layout_head_stage(const struct layout *l);

/* A zero-bubble stage's passes in order, one at a time: zero `it`, then
 * each layout_zb_next() gives the next pass's kind (LAYOUT_PASS_*) and
 * microbatch (*mb), -1 after the 3 m passes.  Stage s of p, m
 * microbatches:
 *  - ZB1P (ZB-H1, PyTorch's ScheduleInterleavedZeroBubble with one stage
 *    a rank, torch/distributed/pipelining/schedules.py
 *    _get_1f1b_rank_ops(enable_zero_bubble, num_1f1b_microbatches =
 *    rank)): 1F1B's min(p - s - 1, m) warm-up forwards, then for each
 *    backward a forward (while any is left) and B, and from the (s+1)-th B
 *    on the oldest W after it; the s deferred W last.  Every stage holds
 *    p microbatches from F to W at most (1F1B's peak, stage 0's).
 *  - ZB2P (ZB-H2, the paper's section 2.2): min(2 (p - s) - 1, m) warm-up
 *    forwards, then for each backward B and, while forwards are left, the
 *    next forward (after the oldest W where 2p - 1 microbatches are held
 *    from F to W), else the oldest W; the remaining W last.  At most 2p - 1
 *    held.
 *  - ZBV (ZB-V, PyTorch's ScheduleZBVZeroBubble
 *    _calculate_single_rank_operations, two chunks a stage, *ch the
 *    stage's chunk): with n = max(m, 2p - 1), 2 (p - s) - 1 forwards of
 *    chunk 0; s pairs F1 F0; p - s groups F1 B1 W1; then, while chunk 1
 *    has fewer forwards than chunk 0 or chunk 0 fewer than n, F0 (while
 *    fewer than n) B0 W0 F1 B1 W1; then s pairs B0 B1, p - s pairs B0 W0,
 *    the remaining W of chunk 1, then chunk 0's.  The passes of
 *    microbatches m .. n - 1 are left out (PyTorch's None).  The most
 *    held from F to W is 1F1B's stage 0's: p microbatches' worth of
 *    activations, each chunk half a stage's (the paper's section 6).
 *  - DUALPIPEV (PyTorch's ScheduleDualPipeV
 *    _calculate_single_rank_operations, after deepseek-ai/DualPipe's
 *    dualpipev.py; m >= 2p): 2 (p - s - 1) F0; s + 1 pairs F0 F1; p - s - 1
 *    groups B1 W1 F1; m - 2p + s + 1 groups F0 BW1 F1 BW0 (each F and the
 *    whole backward after it PyTorch's overlapped F&B pair, here issued
 *    back to back); p - s - 1 groups BW1 F1 BW0; s + 1 pairs of chunk 1's
 *    then chunk 0's backward, whole until the middle pair, B after it
 *    (from the middle pair's chunk-1 one where s is odd, its chunk-0 one
 *    where s is even); p - s - 1 pairs W B0; the s + 1 last W.  A W is
 *    the oldest B's (PyTorch's weight_queue); BW (LAYOUT_PASS_BW) a
 *    whole backward, B and W as one pass (FULL_BACKWARD).
 * No allocation; O(1) a pass. */
enum layout_pass { LAYOUT_PASS_F, LAYOUT_PASS_B, LAYOUT_PASS_W, LAYOUT_PASS_BW };
struct layout_zb {
	int f, b, w;	  /* forwards, B and W passes given so far (ZBV: chunk 0's) */
	int f1, b1, w1;	  /* ZBV: chunk 1's */
	int sub;	  /* where in the step of one backward */
	int phase, count; /* ZBV: which of its phases, and groups done in it */
	int q;		  /* DUALPIPEV: W passes given from its cool-down's queue */
};
int layout_zb_next(const struct layout *l, int s, struct layout_zb *it, int *mb, int *ch);

/* DualPipeV: 1 where the forward layout_zb_next has just given (stage s,
 * iterator it) opens one of PyTorch's overlapped F&B pairs
 * (ScheduleDualPipeV._calculate_single_rank_operations' OVERLAP_F_B: its
 * main step's F0 B1 and F1 B0 -- but the last stage's first F0 B1 -- and
 * the next step's F1 B0): the next pass is the pair's whole backward. */
int layout_dpv_pair(const struct layout *l, int s, const struct layout_zb *it);

/* 1 where MoE layers run merged forward-and-backward units, each's expert
 * all-to-alls beside the other's compute: moe_a2a_overlap (Megatron-LM's
 * 1F1B overlap), or DualPipeV's overlapped F&B pairs with expert
 * parallelism (torchtitan's pipeline_parallel_expert_parallel_overlap,
 * on by default for dualpipev with ep > 1, which torchtitan refuses with
 * activation checkpointing: here off under recomputation). */
int layout_a2a_overlap(const struct llm *m, const struct layout *l);
/* The pipeline passes (units: the forward or backward of one microbatch
 * on one model chunk, or a B or W pass) one step runs over all the
 * stages, as layout_zb_next gives them for a zero-bubble schedule: 2 per
 * microbatch and chunk, 3 where every backward is a B and a W pass
 * (ZB1P, ZB2P, ZBV), and DUALPIPEV's 2 (its backwards whole: BW) plus
 * stage s's 2p - s - 1 W passes (the warm-up's chunk-1 ones and the
 * cool-down's), 4 m p + p (3p - 1) / 2 in all.  For a valid layout. */
int64_t layout_step_passes(const struct layout *l);
/* "p2p", "all_gather", "a2a", "a2a+p2p" (Transformer Engine's names;
 * "allgather" is read too). */
const char *layout_cp_comm_name(int cp_comm);
int layout_cp_comm_parse(const char *s);
/* "delayed", "current", "blockwise", "mxfp8" ("tensorwise", Megatron-LM's
 * name for current, is read too). */
const char *layout_fp8_recipe_name(int recipe);
int layout_fp8_recipe_parse(const char *s);

/* "eager", "graphs", "compiled" ("?" beyond); back: -1. */
const char *layout_exec_name(int e);
int layout_exec_parse(const char *s);
/* 1 when the residual branches' and the embedding's dropout runs (not
 * no_dropout): its kernels, and a one-byte mask a value kept for the
 * backward. */
int layout_dropout(const struct layout *l);

/* "megatron", "torch" ("?" beyond); back: -1. */
const char *layout_framework_name(int f);
int layout_framework_parse(const char *s);

/* LoRA's target modules as Megatron-Bridge names them, comma-separated in
 * the bits' order ("linear_qkv,linear_proj"; 0 reads as all four; "?"
 * beyond), and back from names separated by spaces, commas or '+': -1 if
 * one is unknown or none is given. */
const char *layout_lora_targets_name(int set);
int layout_lora_targets_parse(const char *s);

/* 1 when l trains LoRA adapters (lora_rank > 0): its base weights are
 * frozen.  With bit (enum layout_lora_target), 1 when that module has an
 * adapter (bit 0: any). */
int layout_lora(const struct layout *l, int bit);

/* The adapters' parameters of one layer on one tensor-parallel rank of m
 * under l: each target's A (rank x in) and B (out x rank), both split
 * over tp (Megatron-Bridge's ParallelLinearAdapter: a column-parallel
 * base's A split on the rank, B on out; a row-parallel base's A on in, B
 * on out); 0 without LoRA. */
double layout_lora_params(const struct llm *m, const struct layout *l);

/* "fp32", "bf16-states", "bf16" ("?" beyond); back: -1. */
const char *layout_opt_dtype_name(int d);
int layout_opt_dtype_parse(const char *s);

/* "auto", "fp32", "bf16" ("?" beyond); back: -1. */
const char *layout_main_grads_name(int d);
int layout_main_grads_parse(const char *s);

/* "megatron", "deepspeed", "fsdp", "fsdp2" ("?" beyond); back: -1. */
const char *layout_dp_impl_name(int impl);
int layout_dp_impl_parse(const char *s);

/*
 * What an implementation (l->dp_impl) runs around its ZeRO collectives,
 * each from its framework's source (docs/MODEL.md, "Sharded data
 * parallelism per implementation").  Bytes per parameter are given for a
 * layer of `layer_params` parameters on one GPU, wb / gb the weights' and
 * main gradients' bytes (mem_bytes_per_param).
 */
struct layout_dp_traits {
	int prefetch;	      /* ZeRO-3: layers gathered ahead, l->prefetch within the
			       * implementation's limits */
	double rs_bytes;      /* a gradient's bytes as reduced */
	double ag_in;	      /* copy before an all-gather (DP stream), a sharded parameter */
	double ag_out;	      /* copy after it (compute stream), a gathered parameter */
	double rs_in;	      /* copy before a reduce-scatter (DP stream), a parameter */
	double rs_out;	      /* copy after it (DP stream), a sharded parameter */
	double ag_extra;      /* gathered layers held beside the prefetched ones */
	double rs_buf;	      /* a layer's gradients held unsharded for its reduction, a
			       * parameter */
	double bucket_params; /* a reduce bucket held whole (parameters, however
			       * few the stage's) through the backward under
			       * ZeRO 1-3 (ZeRO-1/2 whatever the shard), 0:
			       * none */
	/* Megatron-FSDP (megatron, ZeRO-2/3): each unit's gradient bucket is
	 * allocated unsharded when its backward starts, reduce-scattered into
	 * the persistent shard as the unit completes and queued until the
	 * queued buckets exceed rs_queue parameters (or the backward ends):
	 * rs_fifo 1, rs_queue the queue's capacity (docs/MODEL.md "Megatron-
	 * FSDP's gradient buckets"); rs_buf is then not held on its own. */
	int rs_fifo;
	double rs_queue;
	/* Megatron-FSDP's --fsdp-double-buffer: the units' gathered weights
	 * (ZeRO-3) and gradient buckets held in persistent pools of `pool`
	 * units (2), prefetch at most 1; 0: allocated as needed. */
	int pool;
	/* The optimizer step (docs/MODEL.md "The optimizer step's gradient
	 * copy"): bytes a shard parameter's fp32 copy of its bf16 gradient
	 * takes while the optimizer reads it (4 under layout_lowp_grads but
	 * with Megatron-FSDP's decoupled gradients; 0: none), at most
	 * step_group parameters at once (DeepSpeed ZeRO-3's sub groups; 0:
	 * all). */
	double step_cast, step_group;
	/* DeepSpeed's ZeRO-1 (its ZeRO optimizer; docs/MODEL.md "DeepSpeed's
	 * reduce bucket"): 1 where the step holds only the rank's gradient
	 * partition (the other ranks' parameters' gradients freed first) and
	 * the boundary's reduce allocates that partition, in the gradients'
	 * dtype, while the gradients not yet in the reduce bucket are whole;
	 * 0: the step holds the gradients as the backward left them. */
	int step_part;
	/* A low-precision gradient held beside the main one, bytes a trained
	 * parameter, unsharded (0: none): DeepSpeed's BF16_Optimizer (ZeRO-1
	 * with bf16 weights and fp32 main gradients, grad_accum_dtype fp32:
	 * engine.py _do_optimizer_sanity_check) keeps the parameters' bf16
	 * .grad, zeroed and not freed each micro step (bf16_optimizer.py
	 * clear_lp_grads), beside its fp32 gradient buffer of the whole model
	 * (fp32_groups_gradients_flat, the main gradients). */
	double lp_grad;
	/* 1 where the gradients are all-reduced whole over the data-parallel
	 * group once the last backward is done (no reduce-scatter, no
	 * bucket reduced during the backward), in rs_bytes, each parameter's
	 * cast from the fp32 buffer before it (rs_in bytes) and back after
	 * it (rs_out bytes, a parameter): BF16_Optimizer's gradients
	 * (docs/MODEL.md "BF16_Optimizer's all-reduce"). */
	int ar_flat;
};
void layout_dp_traits(const struct layout *l, double layer_params, double wb, double gb,
		      struct layout_dp_traits *t);
/* 1 where each unit's (a layer's) gradients are reduce-scattered on their
 * own as its backward completes, no bucket across units: ZeRO-3; FSDP's
 * and FSDP2's SHARD_GRAD_OP (_post_backward_hook, foreach_reduce: one a
 * flat parameter or group); Megatron-FSDP's optim_grads (ZeRO-2: the
 * GradReducePipeline reduces each FSDP unit's bucket group as it is
 * ready, megatron_fsdp.py _register_post_backward_hook).  DeepSpeed's
 * ZeRO-2 fills its reduce buckets across layers. */
int layout_unit_reduce(const struct layout *l);
/* "alltoall", "allgather", "flex", "hybridep" ("?" beyond); -1 if unknown. */
const char *layout_dispatcher_name(int d);
int layout_dispatcher_parse(const char *s);

/* "even", "balanced", "embed-loss", "embed", "loss", "first=F",
 * "last=K", "first=F,last=K", the list "N0,N1,..." of each stage's
 * layers, or a layout string in Megatron-LM's
 * pipeline_model_parallel_layout syntax (model chunks split by '|', E the
 * embedding, t a transformer layer, L the loss, "(X)*n" and "x*n" repeat,
 * ',' ignored; E first, L last; m a multi-token-prediction layer, in the
 * last chunk after its layers) into l->partition, l->part, part_chunks,
 * part_mtp, part_first and part_last: 0, or PRISM_EARG naming what is
 * wrong. */
int layout_partition_parse(const char *s, struct layout *l, struct prism_err *err);

/* The partition's name as layout_partition_parse reads it: "even",
 * "balanced", "embed-loss", "embed", "loss", "first=F,last=K", the list
 * given or the layout string (written short: runs of equal chunks as
 * "(X|)*n", runs of layers as "t*n"). */
void layout_partition_name(const struct layout *l, char *buf, size_t n);

/* 1 when part[] places the layers (a list of stages or of chunks), 0 when
 * every chunk holds layers / (pp x vp). */
int layout_part_placed(const struct layout *l);

/* The partition as placed, as text: "even", the layers of each stage
 * "N0,N1,...", or (chunks placed unevenly) the layout string. */
void layout_part_text(const struct layout *l, char *buf, size_t n);

/* cp (at least 1), and the ranks the gradients are reduced over: dp x cp. */
int layout_cp(const struct layout *l);
int layout_dpc(const struct layout *l);

/* The cp ranks one all-to-all spans (heads scattered over them; the
 * ring runs over the cp / that groups): 1 for p2p and all_gather, cp
 * for a2a, and for a2a+p2p the cp ranks of one NVLink domain of
 * `domain` GPUs (the cp ranks are tp apart: gcd(cp, domain / tp)),
 * Megatron-LM's hierarchical_context_parallel_sizes with the all-to-all
 * inside. */
int layout_cp_a2a(const struct layout *l, int domain);

/* ep, etp (at least 1) and the expert data-parallel degree
 * tp x dp x cp / (ep x etp) (at least 1). */
int layout_ep(const struct layout *l);
int layout_etp(const struct layout *l);
int layout_edp(const struct layout *l);

/* 1 where the main gradients are bf16 under bf16 or fp8 weights with an
 * fp32 optimizer or bf16 moments (docs/MODEL.md "Main gradients' dtype";
 * pure bf16 keeps bf16 gradients anyway): main_grads bf16, or auto under
 * Megatron-FSDP (dp_impl megatron, ZeRO-2/3: megatron_fsdp_main_grads_dtype
 * None, the model's gradient dtype) and DeepSpeed (grad_accum_dtype None,
 * the model's dtype), whose ZeRO-2 partitions are bf16 whatever the knob
 * (stage_1_and_2.py grads_in_partition); Megatron-LM's DDP and
 * distributed optimizer keep fp32 unless bf16 (--grad-reduce-in-bf16).
 * FSDP and FSDP2 keep theirs (layout_dp_traits).  knob: 1 for where the
 * main_grads knob applies instead. */
int layout_lowp_grads(const struct layout *l, int knob);

/* The sharding group of ZeRO: l->shard, or dp x cp. */
int layout_shard_group(const struct layout *l);

/* A gradient bucket's parameters: bucket_mb of gradients of grad_bytes
 * each, or Megatron-LM's default max(40M, 1M x dp x cp) parameters
 * (distributed_data_parallel.py). */
double layout_bucket_params(const struct layout *l, double grad_bytes);

/* Layers on stage s, and on chunk c of it (l->part, or even). */
int layout_stage_layers(const struct llm *m, const struct layout *l, int s);
int layout_chunk_layers(const struct llm *m, const struct layout *l, int s, int c);

/* The first layer of chunk c of stage s (layout_chunk_model's order). */
int layout_chunk_first(const struct llm *m, const struct layout *l, int s, int c);

/* Mixture-of-experts layers of chunk c of stage s. */
int layout_chunk_moe(const struct llm *m, const struct layout *l, int s, int c);

/*
 * The knobs: LAYOUT_KNOBS(X) lists every knob a candidate has, one row
 * each, and everything else is made from it: the defaults, the checks of
 * ranges (layout_check), the command line's options and their help
 * (search/cli.c), a sweep's lists and candidates (search/sweep.c), the
 * candidate's key, the results database's columns and the report's
 * (search/store.c, cmd_report.c), --json (search/show.c), the run
 * description (desc.h) and which knobs a graph edit can change
 * (layout_diff, sim/eval/predict.c).  Adding a knob is adding its row and
 * giving it a meaning in the model.
 *
 *   X(id, home, applies, shown, initialisers...)
 *
 * id       its field in struct layout (home L) or struct llm (home M), and
 *          its name everywhere: space.ID in a sweep, the database column,
 *          the description's key, the --json member
 * applies  when it means something: an expression of l (struct layout *)
 *          and m (struct llm *).  A sweep takes its first value only where
 *          it does not apply; descriptions leave it out there
 * shown    the value tables show (the database, the report, --json): an
 *          expression of v (the knob's value, 0 read as 1 with LK_ONE), l
 *          and m
 * the rest designated initialisers of struct layout_knob (below): kind,
 *          range, default, option and help, flags, and where the first
 *          formats put it (key, desc, digit), which formats already in
 *          users' files keep.
 */
enum layout_home { LK_L, LK_M };
enum layout_kind {
	LK_INT,	 /* a whole number in lo..hi */
	LK_BOOL, /* 0 or 1; its option (a flag) sets the other value than the default */
	LK_NAME, /* one of the names parse() knows (stored as its number) */
	LK_REAL, /* a double in lo..hi */
	LK_PART	 /* the partition: a name, or the layers of each stage in part[] */
};

/* struct layout_knob.flags */
#define LK_SWEEP 0x001 /* a sweep lists its values (space.ID) */
#define LK_BASE	 0x002 /* a sweep that lists none keeps the base's */
#define LK_SDEF	 0x004 /* a sweep that lists none takes .sdef, not .def */
#define LK_STORE 0x008 /* a column of the results database (and the report's) */
#define LK_JSON                                                                                    \
	0x010 /* a member of --json (layers, hidden, heads, ffn, seq: the
			 * model's part of --json prints them) */
#define LK_EDIT                                                                                    \
	0x020	     /* a graph edit of a trace can change it; the others make a
			 * different run (layout_diff) */
#define LK_ONE 0x040 /* 0 reads as 1 (a degree nobody set) */
#define LK_FORCE                                                                                   \
	0x080		/* where it does not apply it reads as its default: a sweep's
			 * other values there are the same candidate */
#define LK_NUMBER 0x100 /* descriptions write its number, not its name */
#define LK_MOE	  0x200 /* mixture-of-experts models only (in the help's own section) */

/* When descriptions and --json show a knob. */
enum layout_show {
	LK_SHOW_CHANGED, /* where it applies and is not its default (a knob added later:
			  * what was written before stays as it was) */
	LK_SHOW_APPLIES, /* where it applies */
	LK_SHOW_ALWAYS
};

/* Key groups: a key lists group 1 always, each other group when one of
 * its knobs is not its default (the groups the first keys had, so that
 * stored sweeps keep their keys), and a knob of group 0 alone when it is
 * not its default. */
#define LK_KEY_ALONE  0
#define LK_KEY_ALWAYS 1
/* Never in layout_key's key; a sweep's keys end with it where the sweep
 * lists it (search/sweep.c): a model knob every key would otherwise carry. */
#define LK_KEY_SWEPT (-1)

/* clang-format off */
#define LAYOUT_KNOBS(X)                                                                            \
	X(tp, L, 1, v, .kind = LK_INT, .lo = 1, .hi = LAYOUT_MAX_TP, .def = 1,                    \
	  .opt = "tp", .arg = "N", .help = "tensor parallel degree (within a node or NVLink domain)", \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON, .key_group = LK_KEY_ALWAYS,                      \
	  .show = LK_SHOW_ALWAYS, .desc = 101, .digit = 1)                                         \
	X(pp, L, 1, v, .kind = LK_INT, .lo = 1, .hi = LAYOUT_MAX_STAGES, .def = 1,                \
	  .opt = "pp", .arg = "N", .help = "pipeline stages",                                       \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON, .key_group = LK_KEY_ALWAYS,                      \
	  .show = LK_SHOW_ALWAYS, .desc = 102, .digit = 2)                                         \
	X(dp, L, 1, v, .kind = LK_INT, .lo = 1, .hi = LAYOUT_MAX_DP, .def = 1,                    \
	  .opt = "dp", .arg = "N", .help = "data parallel degree (a sweep's follows from its GPUs)", \
	  .flags = LK_STORE | LK_JSON | LK_EDIT, .key_group = LK_KEY_ALWAYS,                       \
	  .show = LK_SHOW_ALWAYS, .desc = 103)                                                     \
	X(vp, L, l->schedule == LAYOUT_INTERLEAVED, v, .kind = LK_INT, .lo = 1,                   \
	  .hi = LAYOUT_MAX_VP, .def = 1, .sdef = 2, .opt = "vp", .arg = "N",                        \
	  .help = "virtual stages per GPU (interleaved schedule)",                                 \
	  .flags = LK_SWEEP | LK_SDEF | LK_STORE | LK_JSON, .key_group = LK_KEY_ALWAYS,            \
	  .show = LK_SHOW_ALWAYS, .desc = 104, .digit = 4)                                         \
	X(mbs, L, 1, v, .kind = LK_INT, .lo = 1, .hi = LAYOUT_MAX_MBS, .def = 1,                  \
	  .opt = "mbs", .arg = "N", .help = "microbatch size (sequences)",                          \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON, .key_group = LK_KEY_ALWAYS,                      \
	  .show = LK_SHOW_ALWAYS, .desc = 105, .digit = 3)                                         \
	X(microbatches, L, 1, v, .kind = LK_INT, .lo = 1, .hi = LAYOUT_MAX_MICRO, .def = 1,       \
	  .opt = "microbatches", .arg = "N",                                                       \
	  .help = "microbatches per iteration and pipeline (a sweep's follow from its global "     \
		  "batch)",                                                                        \
	  .flags = LK_STORE | LK_JSON | LK_EDIT, .key = "mb", .key_group = LK_KEY_ALWAYS,          \
	  .show = LK_SHOW_ALWAYS, .desc = 106)                                                     \
	X(schedule, L, 1, v, .kind = LK_NAME, .lo = 0, .hi = LAYOUT_DUALPIPEV,                        \
	  .def = LAYOUT_1F1B, .parse = layout_schedule_parse, .name = layout_schedule_name,        \
	  .opt = "schedule", .arg = "S",                                                          \
	  .help = "pipeline schedule: gpipe, 1f1b, interleaved, zb-1p, zb-2p, zb-v (zero bubble) " \
		  "or dualpipev",                                                                  \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON, .key = "sched", .key_group = LK_KEY_ALWAYS,      \
	  .show = LK_SHOW_ALWAYS, .desc = 107, .digit = 4)                                         \
	X(recompute, L, 1, v, .kind = LK_NAME, .lo = 0, .hi = LAYOUT_RECOMPUTE_FULL, .def = 0,    \
	  .parse = layout_recompute_parse, .name = layout_recompute_name, .opt = "recompute",     \
	  .arg = "R", .help = "activation recomputation: none, selective or full",                 \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON | LK_NUMBER, .key = "rc",                         \
	  .key_group = LK_KEY_ALWAYS, .show = LK_SHOW_ALWAYS, .desc = 108, .digit = 5)             \
	X(recompute_modules, L, l->recompute == LAYOUT_RECOMPUTE_SELECTIVE, v, .kind = LK_NAME,   \
	  .lo = 0, .hi = LAYOUT_RC_ALL, .def = LAYOUT_RC_CORE_ATTN,                                \
	  .parse = layout_rc_modules_parse, .name = layout_rc_modules_name,                        \
	  .opt = "recompute-modules", .arg = "M",                                                  \
	  .help = "what selective recomputation re-runs, Megatron's --recompute-modules names "    \
		  "separated by commas: core_attn (the default), mlp, layernorm, mla_up_proj, "    \
		  "moe, moe_act, shared_experts",                                                  \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON | LK_FORCE, .key = "rcm",                         \
	  .show = LK_SHOW_CHANGED)                                                                 \
	X(zero, L, 1, v, .kind = LK_INT, .lo = 0, .hi = 3, .def = 0, .opt = "zero", .arg = "N",    \
	  .help = "ZeRO stage 0..3 over the data-parallel group (3: FSDP's FULL_SHARD)",           \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON, .key_group = LK_KEY_ALWAYS,                      \
	  .show = LK_SHOW_ALWAYS, .desc = 110, .digit = 6)                                         \
	X(sp, L, l->tp > 1, v, .kind = LK_BOOL, .lo = 0, .hi = 1, .def = 0, .opt = "sp",          \
	  .help = "sequence parallelism (with --tp)",                                              \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON | LK_FORCE, .key_group = LK_KEY_ALWAYS,           \
	  .show = LK_SHOW_ALWAYS, .desc = 109, .digit = 7)                                         \
	X(layers, M, 1, v, .kind = LK_INT, .lo = 1, .hi = LLM_MAX_LAYERS, .opt = "layers",        \
	  .arg = "N", .help = "transformer layers", .flags = LK_SWEEP | LK_BASE | LK_STORE | LK_EDIT, \
	  .key_group = LK_KEY_ALWAYS, .desc = -1, .digit = 8)                                      \
	X(hidden, M, 1, v, .kind = LK_INT, .lo = 1, .hi = LLM_MAX_HIDDEN, .opt = "hidden",        \
	  .arg = "N", .help = "hidden size (a sweep's keeps the FFN's ratio to it)",               \
	  .flags = LK_SWEEP | LK_BASE | LK_STORE, .key_group = LK_KEY_ALWAYS, .desc = -1,          \
	  .digit = 9)                                                                              \
	X(dtype, L, 1, v, .kind = LK_NAME, .lo = 0, .hi = HW_NDTYPES - 1, .def = HW_BF16,         \
	  .parse = hw_dtype_parse, .name = hw_dtype_name, .opt = "dtype", .arg = "T",             \
	  .help = "precision of the linear layers' GEMMs: fp32, tf32, bf16, fp16, fp8, fp4.  "    \
		  "fp8 (fp4) as Transformer Engine runs it: attention, softmax, norms, logits "    \
		  "and optimizer stay bf16/fp32; cast-transpose kernels, amax/scale updates and "  \
		  "fp8 weight copies are added.  fp16 adds the loss-scaling unscale pass",         \
	  .flags = LK_SWEEP | LK_BASE | LK_STORE | LK_JSON, .key_group = 2,                        \
	  .show = LK_SHOW_ALWAYS, .desc = 112, .digit = 10)                                        \
	X(fp8_attention, L, 1, v, .kind = LK_BOOL, .lo = 0, .hi = 1, .def = 0,                    \
	  .opt = "fp8-attention", .help = "the attention core in fp8 too (cuDNN/FA3 fp8)",         \
	  .flags = LK_SWEEP | LK_BASE | LK_STORE | LK_JSON, .key = "fp8attn", .key_group = 2,      \
	  .show = LK_SHOW_ALWAYS, .desc = 113, .digit = 11)                                        \
	X(fp8_recipe, L, l->dtype == HW_FP8, v, .kind = LK_NAME, .lo = 0, .hi = LAYOUT_FP8_MXFP8, \
	  .def = LAYOUT_FP8_DELAYED, .parse = layout_fp8_recipe_parse,                             \
	  .name = layout_fp8_recipe_name, .opt = "fp8-recipe", .arg = "R",                        \
	  .help = "with --dtype fp8, its scaling (Megatron's --fp8-recipe): delayed (amax "       \
		  "history), current (each tensor's amax first: tensorwise), blockwise (1x128 "    \
		  "and 128x128 fp32 scales, DeepSeek-V3) or mxfp8 (32-value E8M0 scales, "        \
		  "Blackwell).  fp4 is NVFP4's recipe",                                            \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON | LK_FORCE, .key = "fp8r",                        \
	  .show = LK_SHOW_CHANGED)                                                                 \
	X(flash, L, 1, v, .kind = LK_BOOL, .lo = 0, .hi = 1, .def = 1, .opt = "no-flash",         \
	  .help = "attention without flash attention: scores materialised, softmax and dropout "  \
		  "passes",                                                                        \
	  .flags = LK_SWEEP | LK_BASE | LK_STORE | LK_JSON, .key_group = 2,                        \
	  .show = LK_SHOW_ALWAYS, .desc = 111, .digit = 12)                                        \
	X(partition, L, l->pp > 1, v, .kind = LK_PART, .lo = 0, .hi = LAYOUT_PART_LOSS,           \
	  .def = LAYOUT_PART_GIVEN, .opt = "partition", .arg = "P",                                \
	  .help = "layers on the pipeline stages: even (layers / (pp x vp) a chunk), balanced "    \
		  "(stage times balanced, the embedding and the head counted), embed-loss, embed " \
		  "or loss (Megatron's account_for_embedding/loss_in_pipeline_split: each a "      \
		  "layer's slot, the first and/or last virtual chunk one layer fewer), "           \
		  "first=F,last=K (Megatron's decoder_first/last_pipeline_num_layers; either "     \
		  "alone), N0,N1,... layers per stage, or a layout string in Megatron's "          \
		  "pipeline_model_parallel_layout syntax (e.g. \"Et*3|(t*4|)*30t*3L\": chunks in "  \
		  "model order split by |, E embedding, t layer, L loss)",                          \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON, .key = "part", .key_group = 3,                   \
	  .show = LK_SHOW_ALWAYS, .desc = 501, .digit = 23)                                        \
	X(shard, L, l->zero > 0, layout_shard_group(l), .kind = LK_INT, .lo = 0,                  \
	  .hi = LAYOUT_MAX_DP, .def = 0, .opt = "shard", .arg = "N",                               \
	  .help = "ZeRO/FSDP sharding group of N data-parallel ranks (hybrid sharding, replicas "  \
		  "all-reduce; 0: the whole data-parallel group)",                                 \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON, .key_group = 3, .show = LK_SHOW_ALWAYS,          \
	  .desc = 201, .digit = 22)                                                                \
	X(prefetch, L, l->zero == 3, v, .kind = LK_INT, .lo = 0, .hi = LAYOUT_MAX_PREFETCH,       \
	  .def = 1, .opt = "prefetch", .arg = "N", .help = "ZeRO-3: layers all-gathered ahead",    \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON, .key_group = 3, .show = LK_SHOW_ALWAYS,          \
	  .desc = 202, .digit = 21)                                                                \
	X(dp_impl, L, l->zero > 0, v, .kind = LK_NAME, .lo = 0, .hi = LAYOUT_DP_FSDP2,            \
	  .def = LAYOUT_DP_MEGATRON, .parse = layout_dp_impl_parse, .name = layout_dp_impl_name,   \
	  .opt = "dp-impl", .arg = "I",                                                            \
	  .help = "whose ZeRO/FSDP: megatron (Megatron-LM's distributed optimizer; ZeRO-2/3 as "  \
		  "Megatron-FSDP), deepspeed (ZeRO 1-3, no ZeRO-2/3 with pp), fsdp (FSDP1: "      \
		  "ZeRO-2 SHARD_GRAD_OP, 3 FULL_SHARD) or fsdp2 (fully_shard, ZeRO-3, copy-in/out " \
		  "kernels)",                                                                      \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON | LK_FORCE, .key = "dpi")                         \
	X(bucket_mb, L, 1, v, .kind = LK_INT, .lo = 0, .hi = LAYOUT_MAX_BUCKET_MB, .def = 0,      \
	  .opt = "bucket-mb", .arg = "N",                                                          \
	  .help = "gradient buckets of N MB (0: Megatron's max(40M, 1M x dp) parameters; "        \
		  "ZeRO-3 and FSDP's and Megatron-FSDP's ZeRO-2 reduce each unit's gradient on "  \
		  "its own)",                                                                      \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON, .key = "bucket", .key_group = 3,                 \
	  .show = LK_SHOW_ALWAYS, .desc = 203, .digit = 20)                                        \
	X(overlap_grad, L, 1, v, .kind = LK_BOOL, .lo = 0, .hi = 1, .def = 1,                     \
	  .opt = "no-overlap-grad", .help = "reduce gradients after the backward, not during it",  \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON, .key = "ovg", .key_group = 3,                    \
	  .show = LK_SHOW_ALWAYS, .desc = 204, .digit = 19)                                        \
	X(overlap_param, L, l->zero >= 1 && l->zero <= 2, v, .kind = LK_BOOL, .lo = 0, .hi = 1,   \
	  .def = 0, .opt = "overlap-param",                                                        \
	  .help = "ZeRO-1/2: parameter all-gather overlapped with the next forward",               \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON, .key = "ovp", .key_group = 3,                    \
	  .show = LK_SHOW_ALWAYS, .desc = 205, .digit = 18)                                        \
	X(tp_overlap, L, l->tp > 1 && l->sp, v, .kind = LK_BOOL, .lo = 0, .hi = 1, .def = 0,      \
	  .opt = "tp-overlap",                                                                     \
	  .help = "tensor-parallel collectives overlapped with their GEMMs (needs --sp)",          \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON, .key = "tpo", .key_group = 3,                    \
	  .show = LK_SHOW_ALWAYS, .desc = 206, .digit = 17)                                        \
	X(pp_overlap, L, l->pp > 1, v, .kind = LK_BOOL, .lo = 0, .hi = 1, .def = 1,               \
	  .opt = "no-pp-overlap", .help = "the compute waits for each pipeline send",              \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON, .key = "ppo", .key_group = 3,                    \
	  .show = LK_SHOW_ALWAYS, .desc = 207, .digit = 16)                                        \
	X(pp_scatter_gather, L, l->pp > 1 && l->tp > 1 && !l->sp, v, .kind = LK_BOOL, .lo = 0,    \
	  .hi = 1, .def = 0, .opt = "pp-scatter-gather",                                           \
	  .help = "without --sp, each tensor-parallel rank sends 1/tp of a pipeline transfer "    \
		  "and the receiver all-gathers it over tp before use (Megatron-LM 2021's "       \
		  "scatter_gather_tensors_in_pipeline); default: each rank sends the whole "      \
		  "microbatch's activations, as Megatron-core",                                    \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON | LK_FORCE, .key = "ppsg",                        \
	  .show = LK_SHOW_CHANGED)                                                                 \
	X(ep, L, m->experts > 0, v, .kind = LK_INT, .lo = 1, .hi = LAYOUT_MAX_EP, .def = 1,       \
	  .opt = "ep", .arg = "N",                                                                 \
	  .help = "expert parallel degree: the experts split over N ranks, tokens sent to them "   \
		  "by the token dispatcher (--moe-dispatcher)",                                    \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON | LK_ONE | LK_MOE, .key_group = 4,                \
	  .show = LK_SHOW_APPLIES, .desc = 401, .digit = 15)                                       \
	X(etp, L, m->experts > 0, v, .kind = LK_INT, .lo = 1, .hi = LAYOUT_MAX_TP, .def = 1,      \
	  .opt = "etp", .arg = "N",                                                                \
	  .help = "expert tensor parallel degree; ep x etp must divide tp x dp (Megatron-LM's "    \
		  "MoE parallel folding)",                                                         \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON | LK_ONE | LK_MOE, .key_group = 4,                \
	  .show = LK_SHOW_APPLIES, .desc = 402, .digit = 14)                                       \
	X(cp, L, 1, v, .kind = LK_INT, .lo = 1, .hi = LAYOUT_MAX_CP, .def = 1, .opt = "cp",       \
	  .arg = "N",                                                                              \
	  .help = "context parallelism: each sequence split over N ranks, ring attention "         \
		  "(key-value blocks passed around, overlapped with the attention steps); GPUs = " \
		  "tp x pp x dp x cp",                                                             \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON | LK_ONE, .key_group = 5,                         \
	  .show = LK_SHOW_CHANGED, .desc = 301, .digit = 13)                                       \
	X(cp_comm, L, layout_cp(l) > 1, v, .kind = LK_NAME, .lo = 0, .hi = LAYOUT_CP_A2A_P2P,      \
	  .def = LAYOUT_CP_P2P, .parse = layout_cp_comm_parse, .name = layout_cp_comm_name,        \
	  .opt = "cp-comm", .arg = "C",                                                            \
	  .help = "how --cp shares the attention: p2p (a ring of key-value blocks), all_gather "   \
		  "(K and V gathered, Llama 3), a2a (Ulysses: heads scattered by all-to-all) or "  \
		  "a2a+p2p (all-to-all within an NVLink domain, the ring across)",                 \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON, .desc = 302)                                     \
	X(imbalance, L, m->experts > 0, v, .kind = LK_REAL, .lo = 1, .hi = LAYOUT_MAX_IMBALANCE,  \
	  .def = 1, .opt = "moe-imbalance", .arg = "X",                                            \
	  .help = "tokens on the busiest expert over the mean (1: balanced), capped by the "       \
		  "model's capacity factor",                                                       \
	  .flags = LK_ONE | LK_MOE, .show = LK_SHOW_APPLIES, .desc = 403)                          \
	X(moe_dispatcher, L, m->experts > 0, v, .kind = LK_NAME, .lo = 0,                        \
	  .hi = LAYOUT_DISP_HYBRIDEP, .def = LAYOUT_DISP_ALLTOALL,                                 \
	  .parse = layout_dispatcher_parse, .name = layout_dispatcher_name,                        \
	  .opt = "moe-dispatcher", .arg = "D",                                                     \
	  .help = "MoE token dispatcher (Megatron's --moe-token-dispatcher-type): alltoall, "     \
		  "allgather, flex (DeepEP) or hybridep",                                          \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON | LK_MOE, .key = "disp",                          \
	  .show = LK_SHOW_CHANGED)                                                                 \
	X(moe_shared_overlap, L, m->experts > 0 && m->shared_experts > 0, v, .kind = LK_BOOL,     \
	  .lo = 0, .hi = 1, .def = 0, .opt = "moe-shared-overlap",                                 \
	  .help = "shared experts on their own stream beside the token dispatch and the routed "   \
		  "experts (Megatron's --moe-shared-expert-overlap; not with allgather)",           \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON | LK_MOE, .key = "sho",                           \
	  .show = LK_SHOW_CHANGED)                                                                 \
	X(moe_a2a_overlap, L, m->experts > 0 && layout_ep(l) > 1, v, .kind = LK_BOOL, .lo = 0,     \
	  .hi = 1, .def = 0,                                                                       \
	  .opt = "moe-a2a-overlap",                                                                \
	  .help = "1F1B all-to-all overlap: a forward and another microbatch's backward merged "  \
		  "layer by layer, each's expert all-to-alls on a communication stream beside "    \
		  "the other's compute (Megatron's --overlap-moe-expert-parallel-comm; ep > 1, "   \
		  "alltoall or flex, pp 1 or interleaved)",                                        \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON | LK_MOE, .key = "a2ao",                          \
	  .show = LK_SHOW_CHANGED)                                                                 \
	X(heads, M, 1, v, .kind = LK_INT, .lo = 1, .hi = LLM_MAX_HEADS, .opt = "heads",           \
	  .arg = "N",                                                                              \
	  .help = "attention heads (a model with keys and values per head keeps them per head; a "  \
		  "grouped one keeps its kv_heads)",                                               \
	  .desc = -1)                                       \
	X(ffn, M, 1, v, .kind = LK_INT, .lo = 1, .hi = LLM_MAX_FFN, .opt = "ffn", .arg = "N",     \
	  .help = "FFN width", .desc = -1)                                                         \
	X(seq, M, 1, v, .kind = LK_INT, .lo = 1, .hi = LLM_MAX_SEQ, .opt = "seq", .arg = "N",     \
	  .help = "sequence length (tokens)", .flags = LK_SWEEP | LK_BASE | LK_STORE,              \
	  .key_group = LK_KEY_SWEPT, .desc = -1)                                                   \
	X(head_dim, M, !llm_mla(m), llm_head_dim(m), .kind = LK_INT, .lo = 0,                     \
	  .hi = LLM_MAX_HEAD_DIM, .opt = "head-dim", .arg = "N",                                   \
	  .help = "width of an attention head (0: hidden / heads; Qwen3 128, Gemma 2 256; not "    \
		  "with MLA, whose model file gives its heads)",                                   \
	  .flags = LK_SWEEP | LK_BASE | LK_STORE | LK_JSON | LK_FORCE)                             \
	X(window, M, 1, v, .kind = LK_INT, .lo = 0, .hi = LLM_MAX_WINDOW, .opt = "window",        \
	  .arg = "N",                                                                              \
	  .help = "sliding-window attention: each query attends to the N keys up to its own "      \
		  "(0: the whole prefix)",                                                         \
	  .flags = LK_SWEEP | LK_BASE | LK_STORE | LK_JSON)                                        \
	X(global_every, M, m->window > 0, v, .kind = LK_INT, .lo = 0, .hi = LLM_MAX_LAYERS,       \
	  .opt = "global-every", .arg = "K",                                                       \
	  .help = "with --window: every K-th layer attends to the whole prefix (gpt-oss 2, "       \
		  "Gemma 3 6; 0: none)",                                                           \
	  .flags = LK_SWEEP | LK_BASE | LK_STORE | LK_JSON)                                        \
	X(power_w, L, 1, v, .kind = LK_REAL, .lo = 0, .hi = LAYOUT_MAX_POWER_W, .def = 0,         \
	  .opt = "power-w", .arg = "W",                                                            \
	  .help = "the GPUs' power cap in watts (0: the profile's rated power): GEMMs and "       \
		  "attention run at the clock the profile's power balance gives the step's own "   \
		  "mix at W (without one: its sustained clock times W / rated), memory-bound "     \
		  "kernels keep their bandwidth",                                                  \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON | LK_EDIT)                                        \
	X(expandable_segments, L, 1, v, .kind = LK_BOOL, .lo = 0, .hi = 1, .def = 0,               \
	  .opt = "expandable-segments",                                                            \
	  .help = "PyTorch's caching allocator with expandable_segments:True (pages mapped as "    \
		  "blocks need them: no segment rounding; default off, as PyTorch's)",             \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON | LK_EDIT, .key = "expseg")                       \
	X(exec, L, 1, v, .kind = LK_NAME, .lo = 0, .hi = LAYOUT_EXEC_COMPILED,                    \
	  .def = LAYOUT_EXEC_EAGER, .parse = layout_exec_parse, .name = layout_exec_name,          \
	  .opt = "exec", .arg = "E",                                                               \
	  .help = "how the host runs the step: eager (an op's dispatch and launch per kernel; "    \
		  "Megatron-LM's default), graphs (each layer's forward and backward one CUDA "    \
		  "graph launch) or compiled (torch.compile: Inductor's launcher, a compiled "     \
		  "graph's guards a layer; fp8 current scaling as torchao's Float8Linear, "       \
		  "Inductor's casts)",                                                                   \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON)                                                  \
	X(framework, L, 1, v, .kind = LK_NAME, .lo = 0, .hi = LAYOUT_FW_TORCH,                    \
	  .def = LAYOUT_FW_MEGATRON, .parse = layout_framework_parse,                              \
	  .name = layout_framework_name, .opt = "framework", .arg = "F",                           \
	  .help = "whose modules build a layer: megatron (Megatron-LM with Transformer Engine; "   \
		  "the default) or torch (plain PyTorch modules, nn.Linear and nn.LayerNorm: each " \
		  "linear's bias gradient a reduction kernel of its own and its memset)",          \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON, .key = "fw", .show = LK_SHOW_CHANGED)            \
	X(no_dropout, L, 1, v, .kind = LK_BOOL, .lo = 0, .hi = 1, .def = 0, .opt = "no-dropout",   \
	  .help = "no dropout on the residual branches and the embedding (Megatron-LM's "         \
		  "--hidden-dropout 0; its default 0.1 runs them): no dropout kernel, no mask kept", \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON, .key = "nodrop", .show = LK_SHOW_CHANGED)        \
	X(offload_layers, L, l->pp == 1 && l->recompute == LAYOUT_RECOMPUTE_NONE, v,              \
	  .kind = LK_INT, .lo = 0, .hi = LLM_MAX_LAYERS, .def = 0, .opt = "offload-layers",        \
	  .arg = "N",                                                                              \
	  .help = "activation offloading (Megatron's --cpu-offloading-num-layers): the first N "   \
		  "layers' activations copied to host memory after their forward and back "       \
		  "before their backward over the profile's host link, beside the compute "       \
		  "(Transformer Engine's schedule); N below the layers, pp 1, no recompute, eager", \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON, .key = "offl")                                   \
	X(lora_rank, L, 1, v, .kind = LK_INT, .lo = 0, .hi = LAYOUT_MAX_LORA_RANK, .def = 0,      \
	  .opt = "lora-rank", .arg = "R",                                                          \
	  .help = "LoRA fine-tuning (Megatron-Bridge's peft lora, dim R): the base weights "      \
		  "frozen (no weight-gradient GEMMs, gradients or optimizer state for them), "     \
		  "rank-R adapters on --lora-targets trained; 0: full training",                   \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON, .key = "lora", .show = LK_SHOW_CHANGED)          \
	X(lora_targets, L, l->lora_rank > 0, v, .kind = LK_NAME, .lo = 0, .hi = LAYOUT_LORA_ALL,  \
	  .def = LAYOUT_LORA_ALL, .parse = layout_lora_targets_parse,                              \
	  .name = layout_lora_targets_name, .opt = "lora-targets", .arg = "M",                     \
	  .help = "the linears LoRA adapts, Megatron-Bridge's target_modules separated by "       \
		  "commas: linear_qkv, linear_proj, linear_fc1, linear_fc2",                       \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON | LK_FORCE, .key = "lorat",                       \
	  .show = LK_SHOW_CHANGED)                                                                 \
	X(lora_alpha, L, l->lora_rank > 0, v, .kind = LK_INT, .lo = 0,                            \
	  .hi = LAYOUT_MAX_LORA_ALPHA, .def = 32, .opt = "lora-alpha", .arg = "A",                 \
	  .help = "LoRA's scale alpha (the adapters' output times A / R; Bridge's default 32): "  \
		  "no effect on time or memory, written to exported recipes; 0: R)",               \
	  .flags = LK_JSON | LK_FORCE, .show = LK_SHOW_CHANGED)                                    \
	X(optimizer_dtype, L, 1, v, .kind = LK_NAME, .lo = 0, .hi = LAYOUT_OPT_BF16,              \
	  .def = LAYOUT_OPT_FP32, .parse = layout_opt_dtype_parse,                                 \
	  .name = layout_opt_dtype_name, .opt = "optimizer-dtype", .arg = "P",                     \
	  .help = "the optimizer's precision with bf16 weights: fp32 (fp32 main gradients, "      \
		  "master weights and moments: Megatron's default), bf16-states (Megatron's "      \
		  "--use-precision-aware-optimizer with bf16 moments; fp32 main gradients) or "     \
		  "bf16 (pure bf16: no master copy, bf16 gradients reduced in bf16, bf16 "          \
		  "moments, PyTorch's fused AdamW)",                                                \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON, .key = "optd", .show = LK_SHOW_CHANGED)          \
	X(clip_grad, L, 1, v, .kind = LK_BOOL, .lo = 0, .hi = 1, .def = 1, .opt = "no-clip-grad", \
	  .help = "no gradient clipping (Megatron's --clip-grad 0): the optimizer step runs "      \
		  "without the gradients' global norm and their scaling",                          \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON, .key = "clip", .show = LK_SHOW_CHANGED)        \
	X(fp8_param_gather, L, l->dtype == HW_FP8 && l->zero >= 1, v, .kind = LK_BOOL, .lo = 0,   \
	  .hi = 1, .def = 0, .opt = "fp8-param-gather",                                            \
	  .help = "fp8 primary weights (Megatron's --fp8-param-gather): no bf16 copy of the "     \
		  "linear layers' weights, the distributed optimizer casts its fp32 master shard " \
		  "to fp8 and all-gathers fp8 bytes (--dtype fp8 with delayed, current or "       \
		  "blockwise; --zero 1 or 2, dp-impl megatron)",                                   \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON | LK_FORCE, .key = "fp8pg",                       \
	  .show = LK_SHOW_CHANGED)                                                                 \
	X(fp32_residual, L, l->dtype != HW_FP32 && l->dtype != HW_TF32, v, .kind = LK_BOOL,       \
	  .lo = 0, .hi = 1, .def = 0, .opt = "fp32-residual",                                      \
	  .help = "the residual stream in fp32 (Megatron's --fp32-residual-connection): the "     \
		  "layers' outputs, the bias-dropout-adds and the pipeline's sends in fp32, a "   \
		  "cast to the modules' dtype before each norm (bf16, fp16, fp8 or fp4 runs; "    \
		  "Megatron-LM with Transformer Engine)",                                          \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON | LK_FORCE, .key = "fp32r",                       \
	  .show = LK_SHOW_CHANGED)                                                                 \
	X(main_grads, L, layout_lowp_grads(l, 1), v, .kind = LK_NAME, .lo = 0,                   \
	  .hi = LAYOUT_GRADS_BF16, .def = LAYOUT_GRADS_AUTO, .parse = layout_main_grads_parse,    \
	  .name = layout_main_grads_name, .opt = "main-grads", .arg = "G",                        \
	  .help = "main gradients' dtype with bf16 weights: auto (the implementation's: fp32 "    \
		  "under Megatron-LM's DDP and distributed optimizer, bf16 under Megatron-FSDP "  \
		  "and DeepSpeed), fp32 (--megatron-fsdp-main-grads-dtype fp32, DeepSpeed's "     \
		  "grad_accum_dtype fp32) or bf16 (Megatron-LM's --grad-reduce-in-bf16); bf16 "   \
		  "adds the optimizer step's fp32 copy of the gradient shard",                    \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON | LK_FORCE, .key = "mg",                          \
	  .show = LK_SHOW_CHANGED)                                                                 \
	X(fsdp_double_buffer, L, l->zero >= 2 && l->dp_impl == LAYOUT_DP_MEGATRON, v,             \
	  .kind = LK_BOOL, .lo = 0, .hi = 1, .def = 0, .opt = "fsdp-double-buffer",                \
	  .help = "Megatron-FSDP's --fsdp-double-buffer (zero 2/3, dp-impl megatron): two "       \
		  "units' gathered weights and gradient buckets in persistent pools, the "         \
		  "prefetch and the reduce queue held to two units",                               \
	  .flags = LK_SWEEP | LK_STORE | LK_JSON | LK_FORCE, .key = "fsdpdb",                      \
	  .show = LK_SHOW_CHANGED)
/* clang-format on */

enum layout_knob_id {
#define LAYOUT_KNOB_ID(id, ...) LK_##id,
	LAYOUT_KNOBS(LAYOUT_KNOB_ID)
#undef LAYOUT_KNOB_ID
	    LK_N
};

/* A set of knobs: bit k for knob k. */
typedef uint64_t layout_mask;
#define LK_BIT(k) ((layout_mask)1 << (k))
_Static_assert(LK_N <= 64, "more knobs than a layout_mask holds");

struct layout_knob {
	const char *id;		    /* the field, and the knob's name (space.ID, column, ...) */
	int home;		    /* enum layout_home */
	size_t off;		    /* of the field in its home struct */
	int kind;		    /* enum layout_kind */
	double lo, hi;		    /* its range (0 is accepted too with LK_ONE) */
	double def;		    /* layout_default's (a model knob: the model's) */
	double sdef;		    /* with LK_SDEF: a sweep's default */
	int (*parse)(const char *); /* LK_NAME: a name's number, -1 if unknown */
	const char *(*name)(int);   /* LK_NAME: a number's name (static) */
	const char *opt;	    /* the command-line option (--OPT), or NULL */
	const char *arg;	    /* its argument's name in the help; NULL: a flag */
	const char *help;
	unsigned flags;	 /* LK_* */
	const char *key; /* its name in a candidate's key (NULL: the id) */
	int key_group;	 /* LK_KEY_ALONE, LK_KEY_ALWAYS or a legacy group */
	int show;	 /* enum layout_show: in descriptions and --json */
	int desc;	 /* where a description puts it: section x 100 + position for
			   * the knobs of the first descriptions, -1 a model knob the
			   * model's part writes, 0 after the others */
	int digit;	 /* a sweep's candidates vary the knobs of higher digits
			   * faster (the first sweeps' order); 0 after gpus */
};

extern const struct layout_knob layout_knobs[LK_N];

/* The knob named id (or whose option is opt, without "--"): its number,
 * or -1. */
int layout_knob_find(const char *id);
int layout_knob_by_opt(const char *opt);

/* Knob k's value in l and m, as a double (whole numbers exactly), 0 read
 * as 1 for LK_ONE knobs where that is asked (one != 0); and set it (k's
 * field takes v, converted to its type). */
double layout_get(const struct llm *m, const struct layout *l, int k, int one);
void layout_set(struct llm *m, struct layout *l, int k, double v);

/* 1 when knob k means something for l and m (its row's `applies`). */
int layout_applies(const struct llm *m, const struct layout *l, int k);

/* The value tables show for knob k (its row's `shown`). */
double layout_shown(const struct llm *m, const struct layout *l, int k);

/* Knob k's value as text: its name (LK_NAME: the name, LK_PART: the
 * partition's name), or the number ("%d", "%g"); numeric: names as their
 * numbers too.  buf holds n bytes. */
void layout_format(const struct llm *m, const struct layout *l, int k, int numeric, char *buf,
		   size_t n);

/* The value tables show for knob k (layout_shown) as text: a name's name,
 * a number; the partition as placed (l's part[]: the layers of each stage,
 * "N0,N1,..."), or "even". */
void layout_format_shown(const struct llm *m, const struct layout *l, int k, char *buf, size_t n);

/* Text s as knob k's value: a name parse() knows or a number in range
 * (LK_PART: its name or the layers of each stage, into l as
 * layout_partition_parse); into *v (not LK_PART).  0, or PRISM_EARG with
 * err saying "WHAT 'S': expected ..." (what: the caller's name for the
 * knob, e.g. "--tp"). */
int layout_parse(int k, const char *s, const char *what, double *v, struct layout *l,
		 struct prism_err *err);

/* The knobs whose values differ between (ma, la) and (mb, lb); the
 * partition is compared as placed (part[] too). */
layout_mask layout_diff(const struct llm *ma, const struct layout *la, const struct llm *mb,
			const struct layout *lb);

/* The knobs a graph edit of a trace can change (LK_EDIT). */
layout_mask layout_editable(void);

/* Knobs whose values are out of range: 0, or PRISM_EARG naming the first
 * ("layout: tp 0 is not in 1..1024", "model: layers ..."). */
int layout_check_ranges(const struct llm *m, const struct layout *l, struct prism_err *err);

/* The candidate's key for a sweep's results (after "gpus=N;"): each knob
 * as its key names it, in the rows' order, groups as key_group says.
 * Into buf of n bytes. */
void layout_key(const struct llm *m, const struct layout *l, char *buf, size_t n);

/* Every rule a layout must keep for model m on hardware hw: the ranges
 * (LLM_MAX_*, LAYOUT_MAX_*) first, so that no rule divides by zero or
 * overflows, then the degrees' product, the sharding group, context
 * parallelism, tensor parallelism within the NVLink domain and dividing
 * the heads and the FFN, mixture-of-experts, the partition (a list placing
 * every layer; balanced and embed-loss as they can place them), the
 * interleaved schedule, and hw's peaks for the GEMMs' and the attention's
 * dtypes.  0, or PRISM_EARG naming the rule broken. */
struct hw_profile;
int layout_check(const struct llm *m, const struct layout *l, const struct hw_profile *hw,
		 struct prism_err *err);

/* The partition's rules alone (part of layout_check), refusing where
 * Megatron-Core refuses: a list places every layer on pp stages, each a
 * multiple of vp; a layout string's chunks are pp x vp and hold the
 * model's layers; embed-loss, embed, loss and first/last as
 * get_num_layers_to_build and TransformerConfig's checks allow them;
 * balanced as it can place them; even, the layers divide by pp x vp.  0,
 * or PRISM_EARG naming the rule. */
int layout_check_partition(const struct llm *m, const struct layout *l, struct prism_err *err);

/* l with Megatron's rules placed (embed-loss, embed, loss, first/last):
 * into out, part[] the layers of each stage, or of each model chunk
 * (part_chunks) where vp > 1 puts the embedding's or loss's slot in one
 * chunk only.  Other partitions are copied as they are (balanced is
 * synth_partition's).  0, or layout_check_partition's refusal. */
int layout_partition_place(const struct llm *m, const struct layout *l, struct layout *out,
			   struct prism_err *err);

/* The dtype of the attention core: fp8 only with fp8_attention; bf16
 * where the GEMMs are fp8 or fp4; else the GEMMs'. */
int layout_attn_dtype(const struct layout *l);

#endif
