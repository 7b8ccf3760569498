/*
 * kperf.h - kernel times from shape, precision and GPU.
 *
 * GEMMs.  cuBLAS and CUTLASS split C = A B (M x K times K x N, batch b)
 * into output tiles, one per thread block, and run the blocks in waves of
 * one per streaming multiprocessor.  The tiles assumed are those of the
 * cuBLAS/CUTLASS kernels that training GEMMs run: 128x256 and 256x128
 * (the warp-specialised cooperative kernels, two consumer warp groups;
 * the throughput reference), 128x128, 64x128 and 128x64, 64x64, and 32x64
 * / 64x32 for the smallest problems; a profile with gemm_tiles "sm90"
 * (Hopper) adds the tiles cuBLAS's nvjet kernels were seen to run on an
 * H100 (tests/data/gpu/kernels.pt.trace.json.gz): 320x128, 192x192,
 * 160x128, 144x128, 64x48 and 64x24, each both ways round; one with
 * gemm_tiles "cdna" (AMD) runs 256x256 macro tiles as the reference,
 * 128x256 / 256x128 at tile_eff[0], 128x128 at [1] and the smaller at [2]
 * (kperf.c).  A tile's
 * throughput follows its operands' reuse r = tm tn / (tm + tn): 1 from
 * 128x256's (85.3) up, else tile_eff[0] from 128x128's (64), [1] from
 * 64x128's (42.7), [2] below.  Each tile with split-K by 1, 2 or 4 where
 * the tiles fill at most two waves.  For each choice
 *     waves = ceil(b ceil(M/tm) ceil(N/tn) splits / SMs)
 *     time  = waves (2 tm tn K/splits / (P/SMs x tile_eff) + tile_s)
 *             + splits b M N x 4 bytes x passes / HBM   (the split-K reduction)
 * passes 1 where one L2 holds the fp32 partials for the reduction, 2 on a
 * GPU of several L2s (kernels.l2_caches: AMD's, one an XCD), whose GEMM
 * writes them back past its L2 and whose reduction reads them back.
 * and the kernel takes the fastest (as cuBLAS's heuristic picks a kernel
 * for the shape), then at least its operands' bytes at HBM bandwidth x
 * mem_eff, plus a fixed overhead.  A profile whose GEMM group states
 * out_eff (AMD's: one workgroup a tile, its C tile shuffled through LDS
 * and stored after the main loop -- Composable Kernel's CShuffle epilogue,
 * hipBLASLt's Tensile kernels -- so that a tile's store does not overlap
 * its own or, one workgroup a CU, the next tile's MMAs) adds the output's
 * bytes at HBM bandwidth x out_eff to the tiles' time:
 *     time += b M N x out bytes / (HBM x out_eff)
 * (Hopper's and Blackwell's kernels store asynchronously, TMA, behind the
 * next tile's main loop: no term).  P is the achievable peak (the MAMF
 * idea: what the best shape reaches, not the datasheet's), tile_s the
 * fixed cost of a tile (prologue and epilogue: what makes small K slow),
 * tile_eff what smaller tiles lose; small M and N lose to waves and
 * tiles.  Since tile_eff <= 1 and every term is >= 0, a GEMM never runs
 * faster than its FLOPs at P: kperf_gemm_min_s() is a bound.
 *
 * Attention (fused, FlashAttention-style).  One thread block per 128
 * queries of one head; a block does 4 x 128 x keys x d FLOPs forward (keys
 * up to its diagonal when causal), 2.5 times that backward (FlashAttention's
 * count).  time = overhead + waves (mean block FLOPs / (P_pass/SMs x f_d)
 * + tile_s_pass x g), f_d the head-dimension factor (1 at 128, d64 at 64,
 * d256 at 256, log-linear between), g 1 forward and d / 128 backward (the
 * backward's fixed work a block is its d-wide tiles: kperf.c).  A causal
 * backward whose library skips at most bwd_skip of a key block's fully
 * masked query blocks (hw_attn: cuDNN 9.19.1's fp8 backward on Hopper)
 * runs the rest of them as unmasked blocks.
 *
 * Memory-bound kernels: overhead + bytes / (HBM bandwidth x eff), by kind
 * (elementwise, normalisation, reduction/softmax): the achieved bandwidth
 * rises with size towards eff x HBM.
 *
 * The parameters live in the hardware profile (hw.h's hw_kernels), fitted
 * by `prism kernels --fit` (kbench.h) on public measurements; a GPU or
 * dtype without measurements gets hw_kernels_default(), whose derivation
 * docs/MODEL.md gives.
 *
 * Clocks.  Those parameters are burst rates: what a microbenchmark's short
 * run reaches.  A GPU kept busy settles at its power-limited clock, and
 * every time here is for the clock the profile holds (hw_clock(hw): its
 * sustained clock as loaded, a power cap's below it, 1 for a burst): the
 * GEMM tiles' and attention blocks' work and fixed costs run at P x clock;
 * the HBM terms (a GEMM's operand floor and split-K reduction,
 * memory-bound kernels) and the per-kernel overheads do not scale
 * (docs/MODEL.md, "Sustained rates").  So every caller, a synthesised
 * step, its bound, an edit's ratios, calibration, times a step's kernels
 * at the clock a step runs at without applying a rule of its own.
 */
#ifndef PRISM_KPERF_H
#define PRISM_KPERF_H

#include "hw.h"

/* The GEMM key (hw.h) a GEMM in dtype runs under an fp8 recipe (enum
 * layout_fp8_recipe), as the frameworks run them (docs/MODEL.md, "Kernel
 * efficiency": fp8 GEMMs by library): blockwise's 128 x 128 block-scaled
 * fp8 GEMMs HW_GEMM_FP8_BLOCK; every other fp8 recipe (delayed and current
 * per-tensor: cuBLASLt's per-tensor-scaled kernels; mxfp8: cuBLASLt's
 * block-scaled ones on Blackwell) and every other dtype its dtype. */
int kperf_gemm_key(int dtype, int recipe);

/* Seconds of a GEMM of batch b, M x K times K x N, in dtype (enum
 * hw_dtype, or a GEMM key: kperf_gemm_key; its operands' element size: 4,
 * 2, 1 or 0.5 bytes, the output in bf16 or fp32).  0 where hw has no peak for dtype.  Remembered per
 * thread, keyed on the shape and every field of hw the tile search reads
 * (kperf.c): the same answer as kperf_gemm_plan_sched's, bit for bit. */
double kperf_gemm_s(const struct hw_profile *hw, int dtype, double b, double m, double n, double k);

/* kperf_gemm_s and what it chose: the tile (tm x tn), split-K, the tiles
 * (times splits) and their waves over the SMs, whether the tiles' work was
 * spread over the SMs by stream-K (waves then the tiles over the SMs, a
 * fraction), and whether the operands' bytes took longer than the tiles
 * (memory-bound); all 0 where it gives 0. */
struct kperf_gemm_plan {
	double tm, tn, splits, tiles, waves;
	int stream_k;
	int mem_bound;
};
double kperf_gemm_plan(const struct hw_profile *hw, int dtype, double b, double m, double n,
		       double k, struct kperf_gemm_plan *plan);

/* kperf_gemm_plan under a given schedule (enum hw_sched) rather than the
 * profile's: a measurement made with another library (XLA's table,
 * DeepGEMM) is timed as that library runs it. */
double kperf_gemm_plan_sched(const struct hw_profile *hw, int dtype, double b, double m, double n,
			     double k, int sched, struct kperf_gemm_plan *plan);

/* Seconds of a grouped GEMM, `groups` GEMMs of m x k times k x n (a
 * mixture-of-experts layer's experts, m tokens each), as Transformer
 * Engine's GroupedLinear runs it (general_grouped_gemm ->
 * nvte_multi_stream_cublas_gemm, transformer_engine/common/gemm/
 * cublaslt_gemm.cu): GEMM i a cuBLAS GEMM on compute stream i mod
 * KPERF_GROUPED_STREAMS (multi_stream.h's num_streams, 4).  The streams'
 * concurrent GEMMs share the SMs as one batch does: ceil(groups / 4) rounds,
 * each kperf_gemm_s of batch 4 (the last the remainder).  Few tokens an
 * expert leave each round's tiles short of the SMs: the grouped GEMM runs
 * far below one dense GEMM of the same FLOPs.  Never faster than its FLOPs
 * at the achievable peak (each round is kperf_gemm_s). */
#define KPERF_GROUPED_STREAMS 4
double kperf_grouped_s(const struct hw_profile *hw, int dtype, double groups, double m, double n,
		       double k);

/* What no GEMM doing `flops` in dtype can beat: flops at the achievable
 * peak times the profile's clock (0 without one); fp8's the faster of its
 * two groups' (whatever library a recipe runs). */
double kperf_gemm_min_s(const struct hw_profile *hw, int dtype, double flops);

/* Seconds of fused attention: pass 0 forward, 1 backward; batch b, heads
 * query heads of dimension d, sq queries against skv keys, causal mask or
 * not.  0 where hw has no peak for dtype. */
double kperf_attn_s(const struct hw_profile *hw, int dtype, int pass, double b, double heads,
		    double sq, double skv, double d, int causal);

/* FLOPs of that attention pass as FlashAttention counts them: forward
 * 4 b h sq skv d (halved when causal), backward 2.5 times. */
double kperf_attn_flops(int pass, double b, double heads, double sq, double skv, double d,
			int causal);

/* The same with a sliding window of `window` keys (causal; 0: none):
 * 4 d FLOPs a query-key pair a query sees, its own and the window - 1
 * before it (FlashAttention's benchmark counts a local pass's pairs so:
 * hopper/benchmark_attn.py), 2.5 times backward; kperf_attn_flops where
 * there is no window or no causal mask. */
double kperf_attn_win_flops(int pass, double b, double heads, double sq, double skv, double d,
			    int causal, double window);

/* What no such attention pass can beat: its blocks' work (the diagonal
 * blocks of a causal mask counted whole, as they run) at the pass's
 * achievable peak times the profile's clock and the best head-dim factor
 * (0 without a peak). */
double kperf_attn_min_s(const struct hw_profile *hw, int dtype, int pass, double b, double heads,
			double sq, double skv, double d, int causal);

/* The same two with a sliding window: each query attends to the window
 * keys up to its own (causal; window 0: no window).  A block of 128
 * queries runs the whole key blocks of its band, 128 (1 + ceil((window -
 * 1) / 128)) keys, and the backward's key block the same band of query
 * blocks (FlashAttention's local attention skips the rest, kperf.c). */
double kperf_attn_win_s(const struct hw_profile *hw, int dtype, int pass, double b, double heads,
			double sq, double skv, double d, int causal, double window);
double kperf_attn_win_min_s(const struct hw_profile *hw, int dtype, int pass, double b,
			    double heads, double sq, double skv, double d, int causal,
			    double window);

/* Seconds of a memory-bound kernel of kind (enum hw_mem_kind) moving
 * `bytes`. */
double kperf_mem_s(const struct hw_profile *hw, int kind, double bytes);

/* The same kernel as implementation impl (enum hw_mem_impl) writes it: its
 * own fraction of HBM bandwidth where the profile has one
 * (hw_kernels.mem_impl_eff), the kind's otherwise; the kind's floor either
 * way.  kperf_mem_s is HW_MEM_IMPL_ANY. */
double kperf_mem_impl_s(const struct hw_profile *hw, int kind, int impl, double bytes);

/* The same implementation's call that runs `kernels` kernels one after
 * another moving `bytes` between them (docs/MODEL.md, "Kernel efficiency":
 * kernels a call runs): each kernel its floor, the bytes at the
 * implementation's bandwidth, kernels x floor + bytes / (HBM x eff).
 * Transformer Engine's norm backward is two: the backward writes each
 * CTA's partial weight gradient, a finalize kernel sums them
 * (launch_rmsnorm_bwd_tuned_ / _general_ in transformer_engine/common/
 * normalization/rmsnorm/rmsnorm_bwd_semi_cuda_kernel.cu, LayerNorm's
 * alike: ln_bwd_kernel then ln_bwd_finalize_kernel in the DeepSeek-V3
 * trace).  kperf_mem_impl_s is one kernel; fewer than 1 count as 1. */
double kperf_mem_kernels_s(const struct hw_profile *hw, int kind, int impl, double bytes,
			   double kernels);

/* The same kernel launched as a persistent grid (docs/MODEL.md, "Kernel
 * efficiency": persistent grids): one program an SM (hw->k.sms of them),
 * each of `warps` warps walking ceil(rows / SMs) of the tensor's rows one
 * after another, so the last program's rows set the time, each moved at
 * the lesser of its SM's share of the implementation's bandwidth
 * (HBM x eff / SMs) and what its warps stream (warps x
 * hw_kernels.mem_warp_Bps): floor + ceil(rows / SMs) x (bytes / rows) /
 * that rate.  kperf_mem_impl_s where the profile states no warp rate, or
 * rows, warps or SMs are not positive. */
double kperf_mem_grid_s(const struct hw_profile *hw, int kind, int impl, double bytes, double rows,
			int warps);

/* Bytes of one element of dtype. */
double kperf_elem_bytes(int dtype);

/*
 * Bytes of one activation element of a run whose linear layers compute in
 * dtype (the layout's --dtype): what a layer's output, the tensor- and
 * context-parallel collectives and the pipeline's sends carry where no
 * quantised copy is moved (kperf_lowp_gather_bytes).  4 for fp32 and tf32
 * (an fp32 model: Megatron-LM without --bf16/--fp16 keeps params_dtype
 * torch.float32, so its hidden states and their gradients are fp32;
 * tf32 is a math mode of fp32 tensors); 2 for bf16 and fp16; 2 for fp8
 * and fp4, whose recipes keep the activations between modules in the
 * bf16 of their autocast (Transformer Engine's quantisers make GEMM
 * operands, the GEMM writes bf16: docs/MODEL.md, "Activation dtype").
 */
double kperf_act_bytes(int dtype);

/*
 * Bytes of one element of the residual stream: a layer's output, what the
 * bias-dropout-adds sum into, the embedding's output, the pipeline's
 * sends and receives (its pipeline_dtype) and a fully recomputed layer's
 * checkpointed input.  fp32_residual (the layout's, Megatron-LM's
 * --fp32-residual-connection): 4, the stream kept in fp32 around bf16 or
 * fp16 modules (transformer_layer.py residual.float(),
 * fused_bias_dropout.py, transformer_config.py pipeline_dtype forced to
 * torch.float); else the activations' kperf_act_bytes.  What the modules
 * read and write between their norm and their output (the norms' cast
 * copies, the GEMMs, the tensor-parallel collectives) stays
 * kperf_act_bytes's (docs/MODEL.md, "FP32 residual connection").
 */
double kperf_resid_bytes(int dtype, int fp32_residual);

/*
 * The kernels that quantise one bf16 tensor of n values for GEMMs in
 * dtype: fp8 under `recipe` (enum layout_fp8_recipe), fp4 under NVFP4's
 * (Transformer Engine's quantizers, docs/MODEL.md "Mixed precision"), as
 * the step runs under `exec` (enum layout_exec); of (enum kperf_cast_of):
 * an activation or gradient, a weight (blockwise scales it by 128 x 128
 * blocks, the rest 1 x 128), or the output of the norm fused into
 * Transformer Engine's LayerNormLinear (below).
 * Each writes the row-wise copy one GEMM reads and the column-wise
 * (transposed) one the other reads:
 *   delayed    cast_transpose, amax into the history: 2 + 1 + 1 bytes a value
 *   current    amax (2), the scale from it (12 bytes), cast_transpose (4)
 *   blockwise  quantize with each block's amax: 4 + 2 x 4 / block (fp32 scales)
 *   mxfp8      quantize: 4 + 2 / 32 (an E8M0 scale per 32 values, each copy)
 *   nvfp4      amax (2: the per-tensor scale), quantize: 2 + 2 x 0.5 + 2 / 16
 * Under torch.compile (exec compiled) `current` is torchao's Float8Linear
 * with tensorwise scaling, its casts Inductor's Triton kernels
 * (torchao/testing/training/roofline_utils.py counts them): the amax in
 * two stages, a split reduction reading the tensor (2) and one reducing
 * its partial maxima (a floor), then the cast, which computes the scale
 * itself: one kernel writing both copies (2 + 1 + 1) for an input or a
 * gradient; for a weight the forward's copy and, in the backward, the
 * transposed one (2 + 1 each).  All are elementwise-kind kernels (a split
 * reduction's blocks stream their share as a pointwise kernel does).  The
 * other recipes keep Transformer Engine's kernels under every exec.  Their
 * names ("inductor_fp8_quant_amax_partial", "inductor_fp8_cast_both", ...)
 * classify as elementwise (cost_classify), as they are timed, where
 * Inductor's own would read as reductions ("triton_red_").
 * A LayerNormLinear's input (KPERF_CAST_NORMED: QKV and FC1 of Megatron's
 * TE layer spec; transformer_engine/pytorch/module/layernorm_linear.py
 * with_quantized_norm, csrc/extensions/normalization.cpp) is quantised by
 * its norm where the recipe allows: under delayed the norm kernel writes
 * the fp8 row-wise copy itself (kperf_lowp_norm_out_bytes: 1 byte a
 * value) and the column-wise one is a transpose of it (nvte_transpose in
 * rmsnorm_api.cpp / ln_api.cpp: 1 + 1); under current the norm kernel
 * computes the amax as it writes its bf16 output (FUSED_NORM_AMAX_FP8), so
 * the scale and the cast-transpose remain (12 bytes; 4).  Blockwise and
 * mxfp8 (TE's unfused path: the norm in bf16, then the quantizer), fp4
 * (its inputs' Hadamard transform takes the unfused path too) and
 * torch.compile's casts (torchao's Float8Linear has no fused norm) cast
 * it as any activation.
 * any_layout (hw.h fp8_any_layout: Blackwell's fp8 GEMMs take either
 * layout): delayed and current write the row-wise copy alone, no
 * transposed one (Transformer Engine's Float8Quantizer::create_tensor,
 * transformer_engine/pytorch/csrc/quantizer.cpp: with_transpose =
 * columnwise_usage && !nvte_is_non_tn_fp8_gemm_supported()): a cast (2 +
 * 1) in place of the cast-transpose, and a norm's fp8 output needs no
 * kernel more.
 * Into out: each kernel's name stem, whether the tensor's name follows
 * it ("te_compute_amax_input"), its kind (enum hw_mem_kind) and bytes;
 * returns how many (0: dtype is neither fp8 nor fp4).
 * KPERF_CAST_PARAM: a weight that is already fp8 (fp8 primary weights,
 * layout.h fp8_param_gather), of which Transformer Engine's
 * post_all_gather_processing (transformer_engine/pytorch/tensor/utils.py,
 * called by Megatron-LM's _post_param_sync after the parameter
 * all-gather) makes the column-wise copy from the gathered row-wise data:
 * delayed and current a transpose (Float8Tensor._create_transpose, 1 + 1)
 * where the GPU's fp8 GEMMs are TN-only and nothing otherwise; blockwise
 * its column-wise data and 128 x 128 scales
 * (Float8BlockwiseQTensor._create_columnwise: 1 + 1 and 2 x 4 / (128 x
 * 128)); no cast of the weight.
 */
#define KPERF_CASTS_MAX 4
enum kperf_cast_of { KPERF_CAST_ACT, KPERF_CAST_WEIGHT, KPERF_CAST_NORMED, KPERF_CAST_PARAM };
struct kperf_cast {
	const char *stem;
	int named;
	int kind;
	double bytes;
};
int kperf_lowp_casts(int dtype, int recipe, int exec, int of, int any_layout, double n,
		     struct kperf_cast out[KPERF_CASTS_MAX]);

/* Bytes a value the norm writes where it feeds a LayerNormLinear (above):
 * 1 where it writes the fp8 copy itself (delayed scaling under
 * Transformer Engine), else the activations' kperf_act_bytes (2; an fp32
 * run's 4). */
double kperf_lowp_norm_out_bytes(int dtype, int recipe, int exec);

/* Bytes a value of a sequence-parallel all-gather of a GEMM's input or
 * output gradient, by what Transformer Engine gathers
 * (transformer_engine/pytorch/distributed.py gather_along_first_dim, TE
 * 2.12 to 2.20; the usages set in module/linear.py, layernorm_linear.py
 * and _common.py set_quantizer_usage_for_wgrad_all_gather):
 *   KPERF_GATHER_BF16  the framework gathers the high-precision tensor
 *                      whatever the recipe (a LoRA adapter's
 *                      return_layernorm_output_gathered): kperf_act_bytes;
 *   KPERF_GATHER_ROW   a forward GEMM's input, quantised with row-wise
 *                      usage only;
 *   KPERF_GATHER_COL   a column-parallel Linear's saved input gathered
 *                      again for its weight gradient (column-wise usage);
 *   KPERF_GATHER_BOTH  a row-parallel Linear's output gradient, quantised
 *                      with both usages (dgrad reads the row-wise data,
 *                      wgrad the column-wise).
 * Per tensor (delayed, current: _all_gather_fp8) every gather is of the
 * row-wise fp8 data alone, 1 byte (its one scale_inv taken as the ranks'
 * own; the transpose made after the gather).  Blockwise
 * (_start_all_gather_fp8_blockwise), mxfp8 (_all_gather_mxfp8) and fp4
 * (NVFP4, _all_gather_nvfp4) gather each usage's data and its scales
 * (kperf_lowp_copy_bytes): ROW and COL one copy, BOTH two.  torchao's
 * Float8Linear under torch.compile: 2; runs without fp8 or fp4 their
 * activations' kperf_act_bytes (2, fp32's 4).  Userbuffers
 * (--tp-comm-overlap: module/base.py fill_userbuffers_buffer_for_all_gather
 * into initialize_ub's uint8 all-gather buffers) gathers the same bytes
 * (layer.c tp_side_begin); it refuses blockwise and fp4, priced here as
 * the NCCL path. */
enum kperf_gather { KPERF_GATHER_BF16, KPERF_GATHER_ROW, KPERF_GATHER_COL, KPERF_GATHER_BOTH };
double kperf_lowp_gather_bytes(int dtype, int recipe, int exec, int usage);

/*
 * Bytes a value of the key-value blocks context parallelism moves
 * (Transformer Engine's attention/dot_product_attention/
 * context_parallel.py), K's and V's (grad 0) or their gradients' (grad 1),
 * by whether the attention core runs in fp8 (fp8_attention, Megatron-LM's
 * --fp8-dot-product-attention: the recipe's fp8_dpa).  Without it the
 * activations' kperf_act_bytes, both ways.  With it:
 *   K and V  1 byte under the per-tensor recipes: AttnFuncWithCPAndKVP2P
 *            quantises q, k and v before the ring (combine_and_quantize
 *            with the QKV quantizer) and concatenates their uint8 data,
 *            p2p_comm_buffers[0] = torch.cat((k.view(-1), v.view(-1)));
 *            AttnFuncWithCPAndKVAllGather gathers the same uint8 k and v.
 *            Under mxfp8 (dtype fp8, recipe mxfp8) q, k and v stay in the
 *            autocast's bf16 (fwd_nominal_dtype), quantised at each step
 *            after the transfer: kperf_act_bytes.  A run whose GEMMs are
 *            not fp8 (bf16 with --fp8-attention, fp4) or blockwise
 *            (Transformer Engine's fused attention refuses
 *            Float8BlockScaling and NVFP4 recipes, utils.py
 *            get_attention_backend; NVTE_DPA_FP8_RECIPE switches the
 *            attention to a per-tensor one) is taken as per tensor: 1.
 *   dK, dV   1 byte under every recipe: the ring's backward under fp8
 *            carries K and V alone and the gradients of every step go by
 *            one all-to-all at the last step, a uint8 buffer of cp times
 *            the block (backward: dkv_send_buffer, buffer_dtype
 *            torch.uint8, all_to_all_single over cp_group).
 * The all-gather form's reduce-scatter of the gradients stays in the
 * autocast's dtype (dk, dv allocated in fwd_nominal_dtype): grad 0's
 * kperf_act_bytes, not this.  Ulysses' all-to-alls move bf16 q, k and v
 * under --fp8-dot-product-attention (quantised after the all-to-all; only
 * fp8_mha's fp8 inputs travel as uint8): kperf_act_bytes too.
 * Read by synth's ring transfers (layer.c), the estimate (analytic.c) and
 * the ring's buffers in memory (mem.c cp_ring_bytes): one count of bytes.
 */
double kperf_cp_kv_bytes(int dtype, int recipe, int fp8_attention, int grad);

/* Bytes a value of one usage's copy (row-wise or column-wise) of a tensor
 * quantised under dtype and recipe, its scales included (Transformer
 * Engine's quantizers, csrc/quantizer.cpp get_scale_shape, the scales'
 * padding left out): fp8 per tensor 1 (one fp32 scale a tensor, not
 * counted); blockwise 1 + 4 / 128 (an fp32 scale per 1 x 128 block: the
 * inputs' and gradients' Float8BlockQuantizer, block_scaling_dim 1);
 * mxfp8 1 + 1 / 32 (an E8M0 byte per 32 values); fp4 (NVFP4) 0.5 + 1 / 16
 * (an E4M3 byte per 16); 2 (bf16) for any other dtype. */
double kperf_lowp_copy_bytes(int dtype, int recipe);

/* Whether a weight's low-precision copies are made once a step and kept
 * for every microbatch (Transformer Engine's modules), or made in every
 * microbatch's forward (torchao's Float8Linear under torch.compile keeps
 * none). */
int kperf_lowp_weight_kept(int dtype, int recipe, int exec);

/* Their time on hw (kperf_mem_s of each). */
double kperf_lowp_cast_s(const struct hw_profile *hw, int dtype, int recipe, int exec, int of,
			 double n);

#endif
