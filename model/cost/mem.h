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
 *               (FSDP FULL_SHARD) the weights too.  Megatron-FSDP and
 *               DeepSpeed keep bf16 gradients (2 bytes) by default
 *               (layout_lowp_grads).  FP8 training adds an
 *               fp8 copy of each layer weight and its transpose (2 bytes).
 *   buffers     ZeRO-3: the unsharded bf16 weights of the layers gathered
 *               at once (prefetch + 1, within the implementation's limits,
 *               FSDP2's all-gather output one more), the stage's embedding
 *               or head unsharded, and one layer's unsharded gradient
 *               before its reduce-scatter; ZeRO-2: that gradient; and
 *               DeepSpeed's reduce bucket (layout_dp_traits).  Megatron-
 *               FSDP (dp_impl megatron, ZeRO-2/3) holds the unsharded
 *               gradient buckets of its reduce queue until a backward ends
 *               instead of the one layer's: what they hold beyond the
 *               activations that backward has freed, over the activations'
 *               peak, as the schedule's walk meets them; with
 *               --fsdp-double-buffer two layers' buckets (and ZeRO-3's two
 *               gathered layers) in persistent pools.
 *   the optimizer step  where the gradients are bf16 and the master fp32,
 *               the fp32 copy of the gradient shard the optimizer reads
 *               (layout_dp_traits step_cast) beside the weights, gradients,
 *               optimizer state and pools, the activations freed: where
 *               that is more than the backward's peak it is the stage's,
 *               and its breakdown the step's.
 *   activations per layer per microbatch (Korthikanti et al. 2022, Table 2,
 *               mem_act_per_layer; under fp8 and fp4 the GEMMs' saved
 *               inputs are Transformer Engine's quantised copies,
 *               mem_act_gemm_in_bytes), times the layers of each chunk held, as
 *               the schedule holds them: the stage's own order of forward
 *               and backward units (GPipe, 1F1B, interleaved) is walked and
 *               the most held at once is the peak; the zero-bubble
 *               schedules' B passes keep what their W passes need
 *               (mem_act_wgrad_layer, and the output layer's input and
 *               logits' gradient) until the W.  Stage 0's first chunk
 *               adds the embedding's dropout mask (s b h, / t with SP); the
 *               last stage's last chunk the final norm's and the output
 *               layer's inputs (2 s b h each, an fp32 run's 4, / t with
 *               SP) and the fp32
 *               logits the loss keeps (4 s b V / t) (Korthikanti section
 *               4.3).
 *   transient   working memory at the peak: a layer's full activations
 *               while recomputed (full recomputation), or its s^2 scores
 *               (selective, without flash attention); the bf16 logits of
 *               the microbatch in the loss (last stage).
 *   workspace   cuBLAS's, one per stream, through the caching allocator
 *               (PyTorch's CublasHandlePool.cpp: 4096 KiB x 8 on sm90 and
 *               later): counted in the working memory.
 *   fragmentation  what PyTorch's caching allocator reserves beyond what is
 *               allocated, from how it places the stage's tensors at the
 *               peak (mem_alloc_reserved): per-layer weights, gradients and
 *               optimizer state, ZeRO's gathered layers, each layer's
 *               saved activations, the logits, the working memory.
 *
 * LoRA (layout.h lora_rank) freezes every base weight: the weights are
 * held (bf16) with the adapters', but gradients, main gradients and
 * optimizer state only for the adapters (Megatron's DDP and distributed
 * optimizer take only parameters that require a gradient); each adapter
 * keeps its [s b, r] middle activation, and beside a column-parallel
 * target under sequence parallelism the gathered normed input its A's
 * weight gradient needs (2 s b h, whole).
 *
 * Mixture-of-experts layers hold their routed experts' share, experts /
 * (ep x etp), whose optimizer state ZeRO shards over the expert
 * data-parallel group, and their routed tokens' activations
 * (mem_act_moe_layer); context parallelism divides every activation by
 * cp and adds the ring's key-value buffers to the working memory.
 *
 * The verdict (mem_verdict) sets the total against the HBM capacity less the
 * profile's reserve (CUDA context, NCCL's buffers: outside the caching
 * allocator) with the model's measured uncertainty: fits, at risk, or out
 * of memory.
 */
#ifndef PRISM_MEM_H
#define PRISM_MEM_H

#include <stdint.h>

#include "hw.h"
#include "layout.h"
#include "llm.h"

/* Bytes of weights, gradients and optimizer state: bf16 weights with fp32
 * main gradients (Megatron-LM's default for bf16, and FP8 training's),
 * fp16 weights and gradients, fp32. */
enum mem_prec { MEM_PREC_BF16, MEM_PREC_FP16, MEM_PREC_FP32 };

/* One stage's memory on one GPU, bytes. */
struct mem_stage {
	double params; /* parameters on the GPU */
	double train;  /* of which trained (gradients, optimizer state): all, or
			* under LoRA the adapters' */
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
	double
	    act_per_layer; /* bytes, one layer, one microbatch (a hybrid model: its layers' mean) */
	double inflight;   /* microbatches held at the peak */
	double activations, logits, transient;
	double allocated, fragmentation;
	double total;			/* allocated + fragmentation */
	double first_total, last_total; /* stage 0's and the last stage's */
	double capacity;		/* usable: HBM minus the reserve */
	int verdict;			/* enum mem_verdict */
	int fits;			/* verdict != MEM_OOM: the search keeps it */
	double margin;			/* capacity - total (negative: short) */
	double band;			/* the model's uncertainty at total: u x total */
};

/*
 * PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp; the
 * sizes in c10/core/AllocatorConfig.h): a request is rounded up to 512
 * bytes (kMinBlockSize).  Up to 1 MiB (kSmallSize) it is carved from the
 * small pool's 2 MiB segments (kSmallBuffer), split while 512 bytes are
 * left; above, from the large pool: requests under 10 MiB (kMinLargeAlloc)
 * share 20 MiB segments (kLargeBuffer), split while more than 1 MiB is
 * left, larger ones get a segment of their own rounded up to 2 MiB
 * (kRoundLarge).  max_split_size is unlimited by default (no block is kept
 * whole for its size).  With expandable_segments each pool is one segment
 * of virtual addresses whose pages are mapped as blocks need them, 2 MiB
 * pages in the small pool and 20 MiB in the large (the segment_size of
 * get_expandable_segment): blocks lie end to end.
 */
#define MEM_ALLOC_BLOCK	    512.0
#define MEM_ALLOC_SMALL	    1048576.0
#define MEM_ALLOC_SMALL_SEG 2097152.0
#define MEM_ALLOC_MID	    10485760.0
#define MEM_ALLOC_LARGE_SEG 20971520.0
#define MEM_ALLOC_ROUND	    2097152.0

/* cuBLAS's workspace, allocated through the caching allocator once per
 * handle and stream (aten/src/ATen/cuda/CublasHandlePool.cpp,
 * getChosenWorkspaceSize: ":4096:8" on sm90 and later, 32 MiB; older GPUs
 * 8.125 MiB, counted as Hopper's). */
#define MEM_CUBLAS_WORKSPACE 33554432.0

/* n tensors of bytes each, held at once (n may be fractional: a part of a
 * tensor class at the peak counts as that part of one). */
struct mem_tensors {
	double bytes, n;
};

/* What the caching allocator reserves to hold the k classes of tensors t at
 * once, bytes: in its default mode each class packed in its pool's segments
 * as above (small: ceil(n / floor(2 MiB / r)) segments of 2 MiB, r the
 * rounded size; under 10 MiB: ceil(n / floor(20 MiB / r)) of 20 MiB;
 * larger: n segments of r rounded to 2 MiB); with expandable segments the
 * rounded sizes end to end, each pool rounded up to its page.  What it
 * reserves beyond the live set for blocks freed and split for other sizes
 * is not modelled: the verdict's uncertainty holds it. */
double mem_alloc_reserved(const struct mem_tensors *t, int k, int expandable);

/* The verdict: fits where the total and its uncertainty band (u x total, u
 * MEM_UNCERTAINTY) are within capacity; out of memory where even the total
 * less the band exceeds it; at risk between.  *band gets the band. */
enum mem_verdict { MEM_FITS, MEM_AT_RISK, MEM_OOM };

/* The memory model's measured uncertainty, a fraction of the predicted
 * total (docs/VALIDATION.md, "The memory model against measured and
 * published peaks": scripts/memory_check.py). */
#define MEM_UNCERTAINTY_PCT 7
#define MEM_UNCERTAINTY	    (MEM_UNCERTAINTY_PCT / 100.0)
/* The percentage as text, for help texts ("7"). */
#define MEM_STR_(x)	     #x
#define MEM_XSTR_(x)	     MEM_STR_(x)
#define MEM_UNCERTAINTY_TEXT MEM_XSTR_(MEM_UNCERTAINTY_PCT)

int mem_verdict(double total, double capacity, double *band);

/* "fits", "at risk", "out of memory" ("?" beyond); the database's and
 * --json's "fits", "at-risk", "oom" with brief. */
const char *mem_verdict_name(int verdict, int brief);

/* Bytes an element of a GEMM's input saved for the backward (its weight
 * gradient) under l's precision.  Transformer Engine's Linear,
 * LayerNormLinear and GroupedLinear quantise the input and keep one copy
 * of it (transformer_engine/pytorch/module/linear.py and
 * layernorm_linear.py, forward: update_usage drops the row-wise data
 * after the forward GEMM and keeps the column-wise one the weight-gradient
 * GEMM reads, or the row-wise one alone where sequence parallelism
 * all-gathers a per-tensor fp8 input in the backward): every dtype but
 * fp8 and fp4 the activations' kperf_act_bytes (bf16 2, fp32 4); fp8 delayed or current 1 (one fp32 scale a
 * tensor, not counted); blockwise 1 + 4 / 128 (an fp32 scale per 1 x 128
 * block); mxfp8 1 + 1 / 32 (an E8M0 byte per 32); fp4 (NVFP4) 0.5 + 1 / 16
 * (an E4M3 byte per 16): kperf_lowp_copy_bytes, one copy's.  The norms'
 * inputs, the residuals, the attention core's Q, K, V (no fp8 attention),
 * FC1's output (the activation's input), the router's and the dropout
 * masks stay as they are. */
double mem_act_gemm_in_bytes(const struct layout *l);

/* Bytes an element of the attention core's Q, K and V held for its
 * backward: the activations' kperf_act_bytes (2; fp32 4), or with fp8_attention (fp8 forward and backward) the fp8
 * copies TE's FusedAttnFunc saves instead (backends.py: fp8_tensors q, k,
 * v), mem_act_gemm_in_bytes's under the run's recipe. */
double mem_act_core_in_bytes(const struct layout *l);

/* Bytes an element of the attention output projection's input held for
 * the backward: 2 (the core's bf16 output; an fp32 run's 4), which the fused attention core
 * keeps for its own backward (TE's FusedAttnFunc saves q, k, v and out);
 * Megatron-LM has the projection keep that tensor instead of a quantised
 * copy under every recipe but fp8 delayed (attention.py,
 * set_save_original_input: "fp8_recipe != 'delayed'", and fp4), so delayed
 * scaling adds its fp8 copy, 2 + mem_act_gemm_in_bytes, with flash
 * attention (with fp8_attention the core keeps its output in fp8 under
 * delayed scaling, 1 + 1); without flash the core keeps no output and the
 * copy is all, 1. */
double mem_act_proj_in_bytes(const struct layout *l);

/* Activation bytes of one layer for one microbatch: Korthikanti's count
 * with each GEMM's saved input at mem_act_gemm_in_bytes (the projection's
 * at mem_act_proj_in_bytes, the core's Q, K, V at mem_act_core_in_bytes). */
double mem_act_per_layer(const struct llm *m, const struct layout *l);

/* The same for a layer of kind k (llm.h enum llm_kind): FULL
 * mem_act_per_layer; a hybrid model's attention layer Korthikanti's
 * attention block and its norm (5 s b h kept whole, 8 of the attention's
 * width split, the scores without flash attention), its MLP layer the MLP
 * block and its norm (5 whole, 16 split); its Mamba layer (Megatron-LM's
 * memory-efficient path: the scan's states and the convolution's output
 * recomputed backward) the norm's input, in_proj's input and the dropout
 * mask (5 whole), and split by tp in_proj's output as the scan keeps it
 * (2 (2 d_i + 2 G N + H) bytes a token), the scan's output, the gated
 * norm's input and out_proj's (2 d_i each).  Under full recomputation
 * every kind keeps its input (2 s b h). */
double mem_act_kind(const struct llm *m, const struct layout *l, int k);

/* The same for a mixture-of-experts layer on the busiest rank: the dense
 * layer's less its FFN (Korthikanti's 19 s b h in bf16), plus the router's
 * scores, the routed tokens' expert inputs, FFN outputs and activations
 * (mem_moe_tokens of them; the inputs and activations at
 * mem_act_gemm_in_bytes), the shared experts' as a dense FFN. */
double mem_act_moe_layer(const struct llm *m, const struct layout *l);

/* What a zero-bubble schedule (layout_zb) keeps of one layer from its B
 * pass to its W pass, one microbatch (moe: a mixture-of-experts layer's,
 * busiest rank): each weight-gradient GEMM's input and output gradient,
 * bf16, on the rank's tokens -- QKV's, the projection's, FC1's and FC2's
 * (the inputs of width h / t under sequence parallelism, sharded as
 * Megatron-LM saves them; an MoE layer's router's, shared experts' and
 * routed experts' on mem_moe_tokens of them instead of FC1's and FC2's).
 * Qi et al.'s M_W, 32 s b h for GPT's layer without tensor parallelism
 * (their Table 1).  Under fp8 and fp4 the inputs are the quantised copies
 * the forward saved (mem_act_gemm_in_bytes) and each output gradient is
 * kept quantised with both usages, row-wise and column-wise (2 x
 * mem_act_gemm_in_bytes: Transformer Engine's WeightGradStore holds
 * grad_output after the dgrad GEMM). */
double mem_act_wgrad_layer(const struct llm *m, const struct layout *l, int moe);

/* The busiest expert's tokens over the mean: imbalance, capped by the
 * capacity factor where the model drops tokens. */
double mem_moe_peak(const struct llm *m, const struct layout *l);

/* Routed tokens one rank's grouped expert GEMMs take in one microbatch of
 * one mixture-of-experts layer, on the busiest rank: n top_k etp rho, n
 * the rank's tokens (b s / tp: sequence parallel), rho the busiest rank's
 * load over the mean, (E/ep - 1 + peak) / (E/ep) (the busiest expert,
 * the rank's others at the mean). */
double mem_moe_tokens(const struct llm *m, const struct layout *l);

/* The token dispatcher's memory (layout's moe_dispatcher) on one GPU:
 * *work its working memory while an MoE layer dispatches (alltoall: the
 * routed copies' send buffer, 2 M h / etp; allgather: the tp x ep group's
 * gathered tokens, routing map and probabilities; flex and hybridep: the
 * received tokens), *held what it keeps for the whole run (DeepEP's
 * communication buffers, Megatron's fused_a2a.get_buffer with DeepEP's
 * size hints: 10 channels (Buffer.num_sms 20) x min(ep, 8) NVLink peers x
 * 256 tokens (288 beyond a node) x (2 h + 2048) bytes, and across nodes
 * 2 x 10 x ep/8 x 128 tokens x the same).  0 without experts or ep x etp
 * = 1. */
void mem_moe_dispatch_bytes(const struct llm *m, const struct layout *l, double *work,
			    double *held);

/* Parameters of one mixture-of-experts layer on one GPU: *dense the part
 * split by tp (attention, norms, router, shared experts) and what each tp
 * rank holds whole (llm_tp_copies: replicated key-value heads, MLA's down
 * projections), *expert the routed experts' share, experts x expert
 * params / (ep x etp). */
void mem_moe_layer_params(const struct llm *m, const struct layout *l, double *dense,
			  double *expert);

/* The weights' and gradients' precision (enum mem_prec) of a run whose
 * linear layers compute in dtype (enum hw_dtype): fp32 and tf32 train
 * fp32 weights, fp16 keeps fp16 gradients, the rest bf16 weights with
 * fp32 main gradients (FP8 as Transformer Engine: bf16 weights). */
int mem_prec(int dtype);

/* Bytes a layer-weight parameter adds under l's low-precision GEMMs: the
 * quantised copies Transformer Engine keeps for the step (its weight
 * workspace, made on the first microbatch with row-wise usage for the
 * forward and column-wise usage for the input gradient) and their scales
 * (docs/MODEL.md "Weights, gradients, optimizer state"): fp8 delayed or
 * current 2 (Float8Tensor's data and its transpose), 1 on a GPU whose fp8
 * GEMMs take either layout (hw->fp8_any_layout: Float8Quantizer and
 * Float8CurrentScalingQuantizer make no transpose where
 * nvte_is_non_tn_fp8_gemm_supported); blockwise 2 + 2 x 4 / (128 x 128)
 * (row-wise and column-wise data, an fp32 scale per 128 x 128 block
 * each); mxfp8 2 + 2 / 32 (both usages' data, an E8M0 byte per 32 each);
 * fp4 (NVFP4) 2 x (0.5 + 1 / 16); 0 otherwise.  hw may be NULL (a GPU of
 * TN-only fp8 GEMMs, Hopper's). */
double mem_lowp_weight_bytes(const struct layout *l, const struct hw_profile *hw);

/* Bytes per parameter of weights, gradients and optimizer state. */
void mem_bytes_per_param(int prec, double *weights, double *grads, double *optimizer);

/* Bytes per parameter of weights, gradients and optimizer state under l:
 * its weights' precision (mem_prec) and its optimizer's (optimizer_dtype;
 * docs/MODEL.md "Optimizer precision").  fp32: mem_bytes_per_param's.
 * bf16-states: bf16 moments (2 + 2) and the fp32 master as a 16-bit
 * remainder beside the bf16 weight (Transformer Engine's FusedAdam,
 * store_param_remainders: 2) where FusedAdam holds it, else Megatron-LM's
 * own fp32 copy (4: fp8 weights' recipes other than delayed scaling,
 * use_precision_aware_optimizer_no_fp8_or_ds_fp8); fp32 main gradients (4).
 * bf16: 2 + 2 + 4 (bf16 gradients and moments, no master).  Megatron-FSDP
 * and DeepSpeed keep their main gradients in the weights' bf16 (2) by
 * default (layout_lowp_grads; docs/MODEL.md "Main gradients' dtype"). */
void mem_param_bytes(const struct layout *l, double *weights, double *grads, double *optimizer);

/* FP8 primary weights (l->fp8_param_gather; docs/MODEL.md "FP8 primary
 * weights"): the bytes a layer weight's parameter keeps in its weights'
 * dtype beside its quantised copies (mem_lowp_weight_bytes): 0 where the
 * quantised tensor is the parameter (Transformer Engine's
 * quantized_model_init: no bf16 copy), else mem_param_bytes' weights. */
double mem_layer_weight_bytes(const struct layout *l);

/* The bytes one layer-weight parameter moves in the sharded optimizer's
 * parameter all-gather: 1 under fp8_param_gather (Megatron-LM's
 * param_and_grad_buffer.py: a quantised parameter's buffer is torch.uint8,
 * its fp8 data gathered alone; each tensor's scales are all-reduced
 * instead, mem_opt_traffic's quant_amax_bytes), else mem_param_bytes'
 * weights.  The embedding, head and norms stay in their own bf16 buffer. */
double mem_param_gather_bytes(const struct layout *l);

/* The optimizer step's memory traffic per local parameter, bytes read and
 * written by each of its kernels (docs/MODEL.md "Optimizer precision").
 * Under fp8_param_gather a layer weight's update writes no bf16 copy
 * (adam_fp8w) and Transformer Engine's quantize_master_weights casts the
 * fp32 master shard to fp8: an amax pass where the recipe needs the
 * shard's amax first (quant_amax), the cast (quant); the scales'
 * all-reduce over the sharding group, quant_amax_bytes a parameter. */
struct mem_opt_traffic {
	double unscale;		 /* fp16: unscale and inf/NaN check of the main gradients; 0 */
	double norm;		 /* the gradients' global norm (0 without clip_grad) */
	double scale;		 /* their scaling by the clip coefficient (0 without clip_grad) */
	double adam;		 /* the fused multi-tensor Adam kernel */
	double adam_fp8w;	 /* the same over a layer weight under fp8_param_gather */
	double quant_amax;	 /* fp8_param_gather: the master shard's amax pass; 0 */
	double quant;		 /* fp8_param_gather: the master shard's cast to fp8; 0 */
	double quant_amax_bytes; /* fp8_param_gather: amaxes all-reduced a parameter; 0 */
	/* The element size the multi-tensor kernels stream (their bandwidth
	 * by it: cost_mem_impl): the gradients' (unscale, norm, scale), the
	 * moments' (the Adam kernel). */
	int grad_elem, state_elem;
};
void mem_opt_traffic(const struct layout *l, struct mem_opt_traffic *t);

/* Stage s of l (0 <= s < pp); hw may be NULL (mem_lowp_weight_bytes: only the
 * quantised weights' copies read it). */
void mem_stage(const struct llm *m, const struct layout *l, const struct hw_profile *hw, int s,
	       struct mem_stage *out);

/* Stage s's parameters on one GPU and of them those trained, as
 * mem_stage's params and train: the count alone, without the memory. */
void mem_stage_params(const struct llm *m, const struct layout *l, int s, double *params,
		      double *train);

/* Every stage; the one needing the most is reported, with its verdict.  hw
 * may be NULL (then capacity = 0, out of memory). */
void mem_estimate(const struct llm *m, const struct layout *l, const struct hw_profile *hw,
		  struct mem_est *out);

#endif
