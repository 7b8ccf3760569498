/* mem.c - weights, optimizer state, buffers and activations per stage. */
#include "mem.h"

#include "kperf.h"

#include <math.h>
#include <string.h>

/* What LoRA's adapters keep of one layer for one microbatch beyond the
 * base's activations (Megatron-Bridge's ParallelLinearAdapter): each
 * linear_out's input, the [s b, r] bf16 middle activation (whole on every
 * rank: gathered beside a column-parallel base, all-reduced beside a row
 * one); beside a column-parallel base under sequence parallelism
 * linear_in's input, the normed input Transformer Engine gathered
 * (return_layernorm_output_gathered), 2 s b h whole where the base keeps
 * its 2 s b h / t shard.  The frozen base's inputs are counted as full
 * training keeps them (Transformer Engine keeps no input for a frozen
 * weight's gradient, but every targeted linear's input is the adapter's
 * too; what untargeted ones save is not taken off). */
static double lora_act(const struct llm *m, const struct layout *l)
{
	double sb = (double)m->seq / layout_cp(l) * l->mbs, a = 0;
	static const int bits[4] = {LAYOUT_LORA_QKV, LAYOUT_LORA_PROJ, LAYOUT_LORA_FC1,
				    LAYOUT_LORA_FC2};
	if (!layout_lora(l, 0))
		return 0;
	for (int i = 0; i < 4; i++)
		if (layout_lora(l, bits[i])) {
			a += 2 * sb * l->lora_rank;
			if ((i == 0 || i == 2) && l->sp && l->tp > 1)
				a += 2 * sb * m->hidden;
		}
	return a;
}

double mem_act_gemm_in_bytes(const struct layout *l)
{
	if (l->dtype != HW_FP8 && l->dtype != HW_FP4)
		return kperf_act_bytes(l->dtype);
	return kperf_lowp_copy_bytes(l->dtype, l->fp8_recipe);
}

double mem_act_core_in_bytes(const struct layout *l)
{
	if (layout_attn_dtype(l) != HW_FP8)
		return kperf_act_bytes(l->dtype);
	return l->dtype == HW_FP8 ? mem_act_gemm_in_bytes(l) : 1;
}

double mem_act_proj_in_bytes(const struct layout *l)
{
	double q = mem_act_gemm_in_bytes(l);
	if (l->dtype != HW_FP8 || l->fp8_recipe != LAYOUT_FP8_DELAYED)
		return kperf_act_bytes(l->dtype);
	return l->flash ? (l->fp8_attention ? q : 2) + q : q;
}

/* The dense MLP's saved tensors beside its input, bytes a token over the
 * hidden size (x s b h / t): FC1's output, the activation's input (ab
 * bytes an element of its llm_ffn_in width, the activations' dtype: bf16's
 * 2, fp32's 4; 2 ffn gated, Megatron-LM's SwiGLUFunction / BiasGeLUFunction
 * save_for_backward(input), megatron/core/fusions/fused_bias_swiglu.py
 * and fused_bias_gelu.py), and FC2's input, the activation's output (q
 * bytes an element of ffn: TE's RowParallelLinear keeps it, quantised
 * under fp8); Megatron's MLP has no dropout of its own (the block's, after
 * FC2, is the layer's).  For Korthikanti's 4h ungated FFN in bf16: 8 + 8
 * = 16 (fp32: 32). */
static double mlp_saved(const struct llm *m, double q, double ab)
{
	return (ab * llm_ffn_in(m) + q * m->ffn) / m->hidden;
}

double mem_act_per_layer(const struct llm *m, const struct layout *l)
{
	/* A context-parallel rank holds s / cp of each sequence. */
	double s = (double)m->seq / layout_cp(l), b = l->mbs, h = m->hidden, a = m->heads,
	       t = l->tp;
	double sbh = s * b * h;
	/* A GEMM's saved input, bytes an element: 2 in bf16, the quantised
	 * copy Transformer Engine keeps under fp8 or fp4
	 * (mem_act_gemm_in_bytes); the projection's input as the recipe keeps
	 * it (mem_act_proj_in_bytes). */
	double q = mem_act_gemm_in_bytes(l), pj = mem_act_proj_in_bytes(l),
	       qa = mem_act_core_in_bytes(l);
	/* The activations' element (kperf_act_bytes: bf16's 2, an fp32 run's
	 * 4) and the residual stream's (kperf_resid_bytes: 4 under
	 * fp32_residual too); Korthikanti's 2-byte terms are ab's, the
	 * one-byte dropout masks stay one byte (docs/MODEL.md, "Activation
	 * dtype"). */
	double ab = kperf_act_bytes(l->dtype), rb = kperf_resid_bytes(l->dtype, l->fp32_residual);
	/* Korthikanti's 24 s b h / t split by tensor parallelism: the MLP's
	 * 16 for a 4h ungated FFN (mlp_saved: FC1's output, the activation's
	 * input, ab llm_ffn_in; FC2's input, q ffn), and 8 of the
	 * attention's own width (Q and K, V: the core's inputs, 3 qa; the
	 * projection's input, pj: h, or heads x head_dim where that differs;
	 * MLA's Q, K, V and the core's output, 2 a (d_qk + d_qk + d_v + d_v)
	 * bytes a token, are 8 of llm_attn_width too).  K and V at the
	 * key-value heads' width: grouped-query attention's core saves
	 * kv_heads of each (flash attention's save_for_backward(q, k, v, out,
	 * softmax_lse), TE's FusedAttnFunc likewise), qa (1 + 2 kv_heads /
	 * heads) in all. */
	double kv = (double)llm_kv_heads(m) / m->heads;
	double par = mlp_saved(m, q, ab) + (qa * (1 + 2 * kv) + pj) * (llm_attn_width(m) / h);
	/* Without flash attention the a s^2 b scores' softmax output and the
	 * attention dropout's output (ab each) and its mask (1): Korthikanti's
	 * 5 a s / h in bf16, 9 in fp32. */
	double attn = l->flash ? 0.0 : (2 * ab + 1) * a * s / h;
	/* Korthikanti's 10 s b h each rank keeps whole (without sequence
	 * parallelism): the two norms' inputs (2 ab: bf16's 4), the dropout masks (2;
	 * none without dropout, layout_dropout), QKV's and FC1's inputs (q
	 * each); and MLA's compressed q and kv: each up projection's
	 * LayerNormLinear keeps its norm's input (ab) and output (q), (ab + q)
	 * (q_lora_rank + kv_lora_rank) bytes a token. */
	double whole = 2 * ab + 2.0 * layout_dropout(l) + 2 * q +
		       (llm_mla(m) ? (ab + q) * ((double)m->q_lora_rank + m->kv_lora_rank) / h : 0);

	/* What selective recomputation's modules do not keep (docs/MODEL.md,
	 * "Recompute modules"), w a tensor each rank keeps whole without
	 * sequence parallelism: core_attn the s^2 scores, softmax and mask
	 * (Korthikanti's 5 a s / h, none with flash attention); mlp the dense
	 * MLP's FC1 input (2, whole), FC1 output and activation (mlp_saved), its
	 * checkpoint keeping its input, the residual; layernorm the output of
	 * MLA's input norm (2, whole: the down projections' input; Megatron
	 * leaves the norms fused into a LayerNormLinear, IdentityOp, alone);
	 * mla_up_proj the up projections' Q, K, V, 2 a (2 d_qk + d_v) bytes a
	 * token / t. */
	double w = l->sp ? sbh / t : sbh, saved = 0;
	if (layout_rc(l, LAYOUT_RC_CORE_ATTN))
		saved += sbh * attn / t;
	/* (Under fp32_residual mlp's checkpoint keeps its fp32 input where
	 * the fused norm kept its bf16 cast: rb - ab more of w.) */
	if (layout_rc(l, LAYOUT_RC_MLP))
		saved += q * w + mlp_saved(m, q, ab) * sbh / t - (rb - ab) * w;
	if (layout_rc(l, LAYOUT_RC_LAYERNORM) && llm_mla(m))
		saved += q * w;
	if (layout_rc(l, LAYOUT_RC_MLA_UP_PROJ) && llm_mla(m))
		saved += qa * s * b * a * (2 * llm_qk_head_dim(m) + llm_v_head_dim(m)) / t;

	/* Full recomputation keeps each layer's input, the residual stream
	 * (rb: fp32 under fp32_residual). */
	if (l->recompute == LAYOUT_RECOMPUTE_FULL)
		return l->sp ? rb * sbh / t : rb * sbh;
	if (l->sp)
		return sbh * (whole + par + attn) / t - saved + lora_act(m, l);
	return sbh * (whole + par / t + attn / t) - saved + lora_act(m, l);
}

double mem_act_wgrad_layer(const struct llm *m, const struct layout *l, int moe)
{
	double s = (double)m->seq / layout_cp(l), b = l->mbs, h = m->hidden, t = l->tp;
	double T = s * b, hin = l->sp ? h / t : h; /* a sequence-parallel input, as saved */
	/* Under fp8 and fp4 each input is the quantised copy the forward saved
	 * (r of bf16's bytes, mem_act_gemm_in_bytes / 2), each output gradient
	 * the quantised one the weight-gradient store keeps with both usages
	 * (Transformer Engine's Linear backward puts [inputmat_total,
	 * grad_output] in its WeightGradStore after the dgrad GEMM has read the
	 * row-wise data): g = 2 r of bf16's. */
	double r = mem_act_gemm_in_bytes(l) / 2,
	       g = l->dtype == HW_FP8 || l->dtype == HW_FP4 ? 2 * r : kperf_act_bytes(l->dtype) / 2;
	/* QKV (h -> its rank's width) and the projection (its input -> h). */
	double w = hin * r + llm_qkv_width_rank(m, (int)t) * g + llm_proj_width(m) / t * r + h * g;
	if (moe) {
		double fe = m->expert_ffn > 0 ? m->expert_ffn : m->ffn,
		       fin = (m->gated ? 2.0 : 1.0) * fe;
		double M = mem_moe_tokens(m, l), et = layout_etp(l), sh = (double)m->shared_experts;
		/* The router (bf16) on the rank's b s / t tokens; the shared
		 * experts as a dense FFN (FC1's input bf16: it keeps the norm's
		 * output); the routed experts' FC1 and FC2 on M tokens. */
		return 2 * (T * w + T / t * (h + m->experts) +
			    (sh > 0 ? T * (hin + sh * fin / t * g + sh * fe / t * r + h * g) : 0) +
			    M * (h * r + fin / et * g + fe / et * r + h * g));
	}
	return 2 * T * (w + hin * r + llm_ffn_in(m) / t * g + (double)m->ffn / t * r + h * g);
}

double mem_act_kind(const struct llm *m, const struct layout *l, int k)
{
	double s = (double)m->seq / layout_cp(l), b = l->mbs, h = m->hidden, a = m->heads,
	       t = l->tp;
	double sbh = s * b * h, w = l->sp ? sbh / t : sbh, whole = 5, par, saved = 0;

	if (k != LLM_KIND_MAMBA && k != LLM_KIND_ATTN && k != LLM_KIND_MLP && k != LLM_KIND_MOE)
		return mem_act_per_layer(m, l);
	if (l->recompute == LAYOUT_RECOMPUTE_FULL)
		return 2 * w;
	if (k == LLM_KIND_MOE) /* an MoE layer's less its attention block's */
		return mem_act_moe_layer(m, l) - mem_act_kind(m, l, LLM_KIND_ATTN);
	if (k == LLM_KIND_MAMBA) {
		par = (2 * llm_ssm_proj(m) + 6 * llm_ssm_inner(m)) / h;
	} else if (k == LLM_KIND_MLP) {
		par = mlp_saved(m, 2, 2);
		if (layout_rc(l, LAYOUT_RC_MLP))
			saved += 2 * w + par * sbh / t;
	} else {
		double attn = l->flash ? 0.0 : 5 * a * s / h;
		par = 8 * (llm_attn_width(m) / h) + attn;
		if (llm_mla(m))
			whole += 4.0 * ((double)m->q_lora_rank + m->kv_lora_rank) / h;
		if (layout_rc(l, LAYOUT_RC_CORE_ATTN))
			saved += sbh * attn / t;
		if (layout_rc(l, LAYOUT_RC_LAYERNORM) && llm_mla(m))
			saved += 2 * w;
		if (layout_rc(l, LAYOUT_RC_MLA_UP_PROJ) && llm_mla(m))
			saved += 2 * s * b * a * (2 * llm_qk_head_dim(m) + llm_v_head_dim(m)) / t;
	}
	return whole * w + par * sbh / t - saved;
}

double mem_moe_peak(const struct llm *m, const struct layout *l)
{
	double q = l->imbalance > 1 ? l->imbalance : 1;
	if (m->capacity_factor > 0 && q > m->capacity_factor)
		q = m->capacity_factor;
	return q;
}

double mem_moe_tokens(const struct llm *m, const struct layout *l)
{
	double local = (double)m->experts / layout_ep(l);
	double n = (double)m->seq / layout_cp(l) * l->mbs / l->tp;
	double rho = local > 0 ? (local - 1 + mem_moe_peak(m, l)) / local : 1;
	return n * m->top_k * layout_etp(l) * rho;
}

void mem_moe_dispatch_bytes(const struct llm *m, const struct layout *l, double *work, double *held)
{
	double ep = layout_ep(l), et = layout_etp(l), h = m->hidden, M = mem_moe_tokens(m, l);
	double n = (double)m->seq / layout_cp(l) * l->mbs / l->tp, tok = 2 * h + 2048;
	*work = *held = 0;
	if (llm_moe_layers(m) == 0 || ep * et <= 1)
		return;
	switch (l->moe_dispatcher) {
	case LAYOUT_DISP_ALLGATHER:
		*work = n * ep * et * (2 * h + 5 * m->experts);
		return;
	case LAYOUT_DISP_FLEX:
	case LAYOUT_DISP_HYBRIDEP:
		if (ep <= 1)
			return;
		*work = 2 * M / et * h;
		*held = 10 * (ep < 8 ? ep : 8) * (ep <= 8 ? 256 : 288) * tok;
		if (ep > 8)
			*held += 2 * 10 * (ep / 8) * 128 * tok;
		return;
	default:
		if (ep > 1)
			*work = 2 * M / et * h;
	}
}

void mem_moe_layer_params(const struct llm *m, const struct layout *l, double *dense,
			  double *expert)
{
	double all = llm_moe_layer_params(m, NULL), routed = m->experts * llm_expert_params(m);
	if (llm_hybrid(m)) { /* an E layer: no attention (nor its copies) */
		*dense = (llm_kind_params(m, LLM_KIND_MOE) - routed) / l->tp;
		*expert = routed / (layout_ep(l) * layout_etp(l));
		return;
	}
	*dense = (all - routed) / l->tp + llm_tp_copies(m, l->tp);
	*expert = routed / (layout_ep(l) * layout_etp(l));
}

double mem_act_moe_layer(const struct llm *m, const struct layout *l)
{
	double s = (double)m->seq / layout_cp(l), b = l->mbs, h = m->hidden, t = l->tp,
	       sbh = s * b * h;
	double fe = m->expert_ffn > 0 ? m->expert_ffn : m->ffn, fin = (m->gated ? 2.0 : 1.0) * fe;
	double mlp, moe, M = mem_moe_tokens(m, l), n = s * b / t, et = layout_etp(l);
	double sh = (double)m->shared_experts, saved = 0;
	/* Saved GEMM inputs (the experts' and FC2's): q bytes an element, r of
	 * bf16's (mem_act_gemm_in_bytes). */
	double q = mem_act_gemm_in_bytes(l), r = q / 2, ab = kperf_act_bytes(l->dtype);
	struct layout x = *l; /* the attention's share: mlp is a dense layer's */

	if (l->recompute == LAYOUT_RECOMPUTE_FULL)
		return mem_act_per_layer(m, l);
	x.recompute_modules &= ~LAYOUT_RC_MLP;
	if (l->recompute_modules &&
	    !x.recompute_modules) /* mlp alone: none (0 reads as core_attn) */
		x.recompute = LAYOUT_RECOMPUTE_NONE;
	/* The dense FFN's share of Korthikanti's count (mem_act_per_layer's):
	 * its input (q sbh), FC1's output and the activation's (mlp_saved: 8
	 * + 4 q sbh for ffn 4h ungated), the dropout mask (sbh, where dropout
	 * runs); without sequence parallelism the input and the mask are
	 * whole on every rank. */
	mlp = l->sp || t <= 1 ? (layout_dropout(l) + q + mlp_saved(m, q, ab)) * sbh / t
			      : (layout_dropout(l) + q) * sbh + mlp_saved(m, q, ab) * sbh / t;
	/* The router's bf16 input and the mask (3 n h; 2 without dropout), its fp32 scores (4 n
	 * E), the routed tokens' inputs (q), FC1 outputs (bf16) and
	 * activations (q) on this rank, the shared experts' input (bf16:
	 * Megatron's SharedExpertMLP has its FC1 save the norm's output,
	 * set_save_original_input), FC1 output and activation (q). */
	moe = (2 + layout_dropout(l)) * n * h + 4 * n * m->experts +
	      2 * M * (h * r + fin / et + fe / et * r) +
	      (sh > 0 ? 2 * n * h + 2 * s * b * sh * (fin + fe * r) / t : 0);
	/* Recompute modules (docs/MODEL.md, "Recompute modules"): moe keeps
	 * the layer's input and the mask alone (its checkpoint's input: the
	 * norm's output); else moe_act the routed experts' activation outputs
	 * (2 M f_e / etp), shared_experts their FC1 outputs and activations;
	 * layernorm the pre-MLP norm's output (the router's input, and the
	 * shared experts' where they keep it). */
	if (layout_rc(l, LAYOUT_RC_MOE)) {
		saved = moe - (2 + layout_dropout(l)) * n * h;
	} else {
		if (layout_rc(l, LAYOUT_RC_MOE_ACT))
			saved += 2 * M * fe / et * r;
		if (layout_rc(l, LAYOUT_RC_SHARED) && sh > 0)
			saved += 2 * s * b * sh * (fin + fe * r) / t;
	}
	if (layout_rc(l, LAYOUT_RC_LAYERNORM))
		saved += 2 * n * h + (sh > 0 && !layout_rc(l, LAYOUT_RC_MOE) ? 2 * n * h : 0);
	return mem_act_per_layer(m, &x) - mlp + moe - saved;
}

int mem_prec(int dtype)
{
	if (dtype == HW_FP32 || dtype == HW_TF32)
		return MEM_PREC_FP32;
	return dtype == HW_FP16 ? MEM_PREC_FP16 : MEM_PREC_BF16;
}

double mem_lowp_weight_bytes(const struct layout *l, const struct hw_profile *hw)
{
	double q = kperf_lowp_copy_bytes(l->dtype, l->fp8_recipe);
	if (l->dtype != HW_FP8 && l->dtype != HW_FP4)
		return 0;
	switch (l->dtype == HW_FP4 ? -1 : l->fp8_recipe) {
	case LAYOUT_FP8_BLOCKWISE: /* 128 x 128 blocks, an fp32 scale each */
		return 2 + 2 * 4.0 / (128 * 128);
	case LAYOUT_FP8_DELAYED:
	case LAYOUT_FP8_CURRENT: /* the transpose only where GEMMs are TN-only */
		return hw && hw->fp8_any_layout ? q : 2 * q;
	default: /* mxfp8, fp4: both usages' data and scales */
		return 2 * q;
	}
}

void mem_bytes_per_param(int prec, double *w, double *g, double *o)
{
	switch (prec) {
	case MEM_PREC_FP16: /* fp16 gradients; fp32 master, moments and main gradients */
		*w = 2, *g = 2, *o = 16;
		break;
	case MEM_PREC_FP32: /* moments only: the weights are the master */
		*w = 4, *g = 4, *o = 8;
		break;
	default: /* bf16 weights, fp32 main gradients, fp32 master and moments */
		*w = 2, *g = 4, *o = 12;
	}
}

/* 1 where Transformer Engine's FusedAdam holds the bf16-states master
 * weights (Megatron-LM's use_precision_aware_optimizer_no_fp8_or_ds_fp8:
 * no fp8 recipe, or delayed scaling; fp4 runs under no --fp8-recipe), so
 * that they are stored as remainders of the bf16 weights. */
static int te_master(const struct layout *l)
{
	return l->dtype != HW_FP8 || l->fp8_recipe == LAYOUT_FP8_DELAYED;
}

void mem_param_bytes(const struct layout *l, double *w, double *g, double *o)
{
	mem_bytes_per_param(mem_prec(l->dtype), w, g, o);
	if (mem_prec(l->dtype) != MEM_PREC_BF16)
		return; /* layout_check refuses the other optimizers there */
	if (l->optimizer_dtype == LAYOUT_OPT_BF16_STATES)
		*o = (te_master(l) ? 2 : 4) + 2 + 2;
	else if (l->optimizer_dtype == LAYOUT_OPT_BF16)
		*g = 2, *o = 4;
	/* bf16 main gradients: Megatron-FSDP's and DeepSpeed's by default,
	 * anyone's by main_grads (layout_lowp_grads; docs/MODEL.md "Main
	 * gradients' dtype"). */
	if (layout_lowp_grads(l, 0))
		*g = 2;
}

double mem_layer_weight_bytes(const struct layout *l)
{
	double w, g, o;
	mem_param_bytes(l, &w, &g, &o);
	return l->fp8_param_gather ? 0 : w;
}

double mem_param_gather_bytes(const struct layout *l)
{
	double w, g, o;
	mem_param_bytes(l, &w, &g, &o);
	return l->fp8_param_gather ? 1 : w;
}

/* FP8 primary weights' cast from the fp32 master shard (Transformer
 * Engine's transformer_engine/pytorch/tensor/utils.py, as Megatron-LM's
 * fp8_utils.py quantize_param_shard calls it): delayed scaling's
 * _cast_master_weights_to_fp8_delayed_scaling casts with the amax of the
 * history (update_quantized: 4 read, 1 written) and all-reduces one fp32
 * amax a tensor; current scaling's first computes the shard's amax
 * (tex.compute_amax: 4 read), all-reduces them, then casts (4 + 1);
 * blockwise's the shard's partial amax per 128 x 128 block
 * (fp8_block_scaling_compute_partial_amax: 4), its all-reduce (4 bytes a
 * block), the partial cast (fp8_block_scaling_partial_cast: 4 + 1).  A
 * per-tensor amax a tensor of a layer's four linears is bytes too few to
 * count a parameter (the all-reduce's time is its latency): counted as 0
 * here, the collective still issued (synth's step). */
static void opt_quant(const struct layout *l, struct mem_opt_traffic *t)
{
	if (!l->fp8_param_gather)
		return;
	t->adam_fp8w = t->adam - 2; /* no bf16 weight written */
	t->quant = 4 + 1;
	if (l->fp8_recipe == LAYOUT_FP8_CURRENT || l->fp8_recipe == LAYOUT_FP8_BLOCKWISE)
		t->quant_amax = 4;
	if (l->fp8_recipe == LAYOUT_FP8_BLOCKWISE)
		t->quant_amax_bytes = 4.0 / (128 * 128);
}

void mem_opt_traffic(const struct layout *l, struct mem_opt_traffic *t)
{
	memset(t, 0, sizeof(*t));
	int bf16 = mem_prec(l->dtype) == MEM_PREC_BF16;
	/* Megatron-LM's optimizer over fp32 main gradients: the norm reads
	 * them, the clip scaling reads and writes them; FusedAdam reads the
	 * fp32 master and both moments and the gradient, writes the three and
	 * the bf16 weight (4 x 4 + 3 x 4 + 2). */
	t->unscale = l->dtype == HW_FP16 ? 8 : 0;
	t->norm = 4;
	t->scale = 8;
	t->adam = 30;
	t->grad_elem = t->state_elem = 4;
	if (bf16 && l->optimizer_dtype == LAYOUT_OPT_BF16_STATES) {
		t->state_elem = 2; /* bf16 moments; fp32 gradients */
		/* TE's multi_tensor_adam_param_remainder: reads the gradient
		 * (4), weight, remainder and moments (2 each), writes all but
		 * the gradient; or (fp32 master kept by Megatron-LM) FusedAdam
		 * on the fp32 master, then the bf16 weight written from it. */
		t->adam = te_master(l) ? 4 + 4 * 2 + 4 * 2 : 4 + 4 + 2 + 2 + 4 + 2 + 2 + 2;
	} else if (bf16 && l->optimizer_dtype == LAYOUT_OPT_BF16) {
		/* PyTorch's _fused_adamw_ on bf16 parameters: reads the weight,
		 * gradient and moments, writes the weight and moments; the
		 * clipping (clip_grad_norm_'s foreach norm and scaling) over
		 * bf16 gradients. */
		t->norm = 2;
		t->scale = 4;
		t->adam = 4 * 2 + 3 * 2;
		t->grad_elem = t->state_elem = 2;
	}
	if (!l->clip_grad)
		t->norm = t->scale = 0;
	t->adam_fp8w = t->adam;
	opt_quant(l, t);
}

static double round_up(double x, double q)
{
	return ceil(x / q) * q;
}

double mem_alloc_reserved(const struct mem_tensors *t, int k, int expandable)
{
	double small = 0, large = 0;
	for (int i = 0; i < k; i++) {
		double r, per, seg;
		if (!(t[i].n > 0) || !(t[i].bytes > 0))
			continue;
		r = round_up(t[i].bytes, MEM_ALLOC_BLOCK);
		if (expandable) {
			*(r <= MEM_ALLOC_SMALL ? &small : &large) += t[i].n * r;
			continue;
		}
		if (r >= MEM_ALLOC_MID) {
			large += t[i].n * round_up(r, MEM_ALLOC_ROUND);
			continue;
		}
		seg = r <= MEM_ALLOC_SMALL ? MEM_ALLOC_SMALL_SEG : MEM_ALLOC_LARGE_SEG;
		per = floor(seg / r);
		*(r <= MEM_ALLOC_SMALL ? &small : &large) += ceil(t[i].n / per) * seg;
	}
	if (expandable)
		return round_up(small, MEM_ALLOC_SMALL_SEG) + round_up(large, MEM_ALLOC_LARGE_SEG);
	return small + large;
}

int mem_verdict(double total, double capacity, double *band)
{
	*band = MEM_UNCERTAINTY * total;
	if (total + *band <= capacity)
		return MEM_FITS;
	return total - *band > capacity ? MEM_OOM : MEM_AT_RISK;
}

const char *mem_verdict_name(int v, int brief)
{
	static const char *const full[] = {"fits", "at risk", "out of memory"};
	static const char *const shrt[] = {"fits", "at-risk", "oom"};
	if (v < MEM_FITS || v > MEM_OOM)
		return "?";
	return brief ? shrt[v] : full[v];
}

/* Under fp32_residual, the fp32 input chunk c of stage s received from
 * the previous stage, one microbatch: Megatron-LM's schedule holds a
 * unit's input tensor until its backward (schedules.py input_tensors,
 * backward_step reads input_tensor.grad), beside the bf16 copy its first
 * norm saved; b s h (/ t with sequence parallelism) x 4 bytes.  None in
 * the model's first chunk (its input is the embedding's output, freed
 * after the first bias-dropout-add), under full recomputation (the
 * checkpoint keeps that tensor, mem_act_per_layer's) and without the knob
 * (the norm saves the received tensor itself). */
static double chunk_in_held(const struct llm *m, const struct layout *l, int s, int c)
{
	if (!l->fp32_residual || l->recompute == LAYOUT_RECOMPUTE_FULL ||
	    layout_chunk_model(l, s, c) == 0)
		return 0;
	return kperf_resid_bytes(l->dtype, l->fp32_residual) * m->seq / layout_cp(l) * l->mbs *
	       m->hidden / (l->sp ? l->tp : 1);
}

/* Activations of chunk c of stage s, one microbatch: its dense layers'
 * and its mixture-of-experts layers', and the pipeline input it holds
 * (chunk_in_held). */
static double chunk_act(const struct llm *m, const struct layout *l, int s, int c, double a_layer,
			double a_moe, const double *a_kind)
{
	int n = layout_chunk_layers(m, l, s, c), k = layout_chunk_moe(m, l, s, c);
	double in = chunk_in_held(m, l, s, c);
	if (a_kind) { /* a hybrid model's layers by their kinds */
		int l0 = layout_chunk_first(m, l, s, c);
		double sum = in;
		for (int i = l0; i < l0 + n; i++)
			sum += a_kind[llm_layer_kind(m, i)];
		return sum;
	}
	if (k == 0)
		return n * a_layer + in;
	return (n - k) * a_layer + k * a_moe + in;
}

/* Activations of chunk c of stage s that activation offloading moves to
 * host memory, one microbatch: its first l->offload_layers layers' (all
 * but the last at most; layout_check), dense or MoE. */
static double chunk_offloaded(const struct llm *m, const struct layout *l, int s, int c,
			      double a_layer, double a_moe)
{
	int n = layout_chunk_layers(m, l, s, c), l0 = layout_chunk_first(m, l, s, c);
	int k = l->offload_layers < n ? l->offload_layers : n - 1;
	double a = 0;
	for (int i = 0; i < k; i++)
		a += m->experts > 0 && llm_is_moe_layer(m, l0 + i) ? a_moe : a_layer;
	return a;
}

/* What the caching allocator reserves for stage st's tensors at its peak
 * (mem_alloc_reserved), n the stage's layers, gb and ob the gradients' and
 * the optimizer's bytes a parameter, a_layer a dense layer's activations.  The tensors, as the
 * frameworks allocate them: weights and each 4-byte optimizer state (fp32
 * master, moments) one per layer (the embedding and the head spread over
 * them), the gradients in buckets (layout_bucket_params); ZeRO-3's gathered layers (prefetch + 1), its gathered
 * embedding or head and one layer's gradient, ZeRO-2's one gradient; each
 * layer's saved activations as Korthikanti's 12 tensors a layer (the
 * inputs of the two norms, of QKV, Q, K, V, the projection, FC1 and FC2,
 * FC1's output and two dropout masks; one, its input, with full
 * recomputation), the fp32 logits of each microbatch held, and the working
 * memory (cuBLAS's workspace apart). */
static double stage_reserve(const struct llm *m, const struct layout *l, const struct mem_stage *st,
			    double n, double gb, double ob, double a_layer)
{
	struct mem_tensors t[10];
	double bk = layout_bucket_params(l, gb) * gb, nbk = floor(st->grads / bk);
	double per = n > 0 ? n : 1, lg1 = 4.0 * m->seq / layout_cp(l) * l->mbs * m->vocab / l->tp;
	double T = l->recompute == LAYOUT_RECOMPUTE_FULL ? 1 : 12, a1 = a_layer / T;
	double acts = st->activations - st->logits, nb = 1, lgn = lg1 > 0 ? st->logits / lg1 : 0;
	int k = 0;

	if (l->zero >= 3)
		nb = l->prefetch + 3;
	t[k++] = (struct mem_tensors){st->weights / per, per};
	t[k++] = (struct mem_tensors){bk, nbk};
	t[k++] = (struct mem_tensors){st->grads - nbk * bk, 1};
	t[k++] = (struct mem_tensors){st->optimizer / (per * ob / 4), per * ob / 4};
	t[k++] = (struct mem_tensors){st->buffers / nb, nb};
	t[k++] = (struct mem_tensors){a1, a1 > 0 ? floor(acts / a1) : 0};
	t[k++] = (struct mem_tensors){a1 > 0 ? acts - floor(acts / a1) * a1 : acts, 1};
	t[k++] = (struct mem_tensors){lg1, lgn};
	t[k++] = (struct mem_tensors){st->transient - MEM_CUBLAS_WORKSPACE, 1};
	t[k++] = (struct mem_tensors){MEM_CUBLAS_WORKSPACE, 1};
	return mem_alloc_reserved(t, k, l->expandable_segments);
}

/* What a stage holds as its schedule runs (mem_stage's walk): now, at its
 * most and then, the units (chunk microbatches) held, the logits held. */
struct held {
	double held, peak, units, peak_units, held_lg, logits;
	/* Megatron-FSDP's gradient buckets (gk: each chunk's, fsdp_grad_top;
	 * NULL: none): the most held with them at a backward, gtop. */
	const double *gk;
	double gtop;
};

/* Megatron-FSDP's unsharded gradient buckets over one backward of a model
 * chunk (layout_dp_traits rs_fifo; megatron_fsdp.py, param_and_grad_buffer.py
 * GradReducePipeline): each unit's (a layer's: its FSDP unit is the
 * TransformerLayer) bucket of gb a parameter is allocated as its backward
 * starts (main_grad_getter: fetch_bucket), reduce-scattered as it completes
 * and queued; before a unit's is queued the oldest are freed while the
 * queued exceed U parameters (wait_for_previous_grad_reduce), and the
 * backward's end frees the rest (reset).  The parameters of no unit (the
 * embedding, the head and the final norm) are one group (_get_parameter_groups:
 * no bucket size by default): where it holds the embedding and the head its
 * bucket lives from the head's backward to the embedding's.  n layers of lp
 * parameters, each freeing a of activations once its backward is done.
 * Returns the most, over the backward, of the buckets live less the
 * activations freed. */
static double fsdp_grad_top(int n, double lp, double a, double head, double emb, double U,
			    double gb)
{
	double pend = head > 0 && emb > 0 ? head + emb : 0, q = 0, freed = 0, top = 0;
	int hd = head > 0 && pend == 0, cnt = hd + n + (emb > 0 && pend == 0), f = 0;
	for (int k = 0; k < cnt; k++) {
		double sz = hd && k == 0 ? head : k - hd < n ? lp : emb;
		double live = (q + pend + sz) * gb - freed;
		if (live > top)
			top = live;
		while (q > U && f < k) {
			q -= hd && f == 0 ? head : f - hd < n ? lp : emb;
			f++;
		}
		q += sz;
		if (k >= hd && k - hd < n)
			freed += a;
	}
	return top;
}

/* A zero-bubble stage's passes (layout_zb_next; ZB-V's and DualPipeV's of
 * its two chunks): F adds the chunk's activations, B frees all but what W
 * needs (its layers' mem_act_wgrad_layer, the output layer's input and the
 * logits' bf16 gradient: keep_head), W the rest; DualPipeV's whole
 * backward all of it.  Past the cap of held microbatches (2p - 1 at most)
 * every F repeats an earlier peak.  The first model chunk adds the
 * embedding's mask, the last the head's tensors (tail, lg). */
static void zb_walk(const struct llm *m, const struct layout *l, int s, const double *a_kind,
		    double a_layer, double a_moe, double mask, double tail, double lg,
		    double keep_head, struct held *hd)
{
	int v = layout_stage_chunks(l), pairs = layout_a2a_overlap(m, l);
	struct layout_zb it;
	double full[2], keep[2], lgc[2], lay = a_moe > a_layer ? a_moe : a_layer;
	int mb, pass, ch;
	memset(&it, 0, sizeof(it));
	for (int c = 0; c < v && c < 2; c++) {
		int zl = layout_chunk_layers(m, l, s, c), nm = layout_chunk_moe(m, l, s, c);
		int k = layout_chunk_model(l, s, c), head = k == l->pp * v - 1;
		lgc[c] = head ? lg : 0;
		full[c] = chunk_act(m, l, s, c, a_layer, a_moe, a_kind) + (k == 0 ? mask : 0) +
			  (head ? tail + lg : 0);
		keep[c] = (zl - nm) * mem_act_wgrad_layer(m, l, 0) +
			  (nm > 0 ? nm * mem_act_wgrad_layer(m, l, 1) : 0) + (head ? keep_head : 0);
		if (keep[c] > full[c])
			keep[c] = full[c];
	}
	while ((pass = layout_zb_next(l, s, &it, &mb, &ch)) >= 0 && it.f <= 4 * l->pp + 4) {
		struct layout_zb nx = it;
		int mb2, ch2;
		if (pass == LAYOUT_PASS_F && pairs && layout_dpv_pair(l, s, &it) &&
		    layout_zb_next(l, s, &nx, &mb2, &ch2) == LAYOUT_PASS_BW) {
			/* DualPipeV's overlapped F&B pair as a merged unit
			 * (synth/step.c unit_pair; mem_stage's 1F1B pairs): the
			 * more of before and after, one layer in flight more. */
			double after = hd->held + full[ch] - full[ch2];
			double top = (after > hd->held ? after : hd->held) + lay;
			it = nx;
			hd->held = after;
			hd->held_lg += lgc[ch] - lgc[ch2];
			if (top > hd->peak) {
				hd->peak = top;
				hd->peak_units = hd->units;
				hd->logits = hd->held_lg;
			}
			continue;
		}
		if (pass == LAYOUT_PASS_F) {
			hd->held += full[ch];
			hd->held_lg += lgc[ch];
			hd->units++;
		} else if (pass == LAYOUT_PASS_B) {
			hd->held -= full[ch] - keep[ch];
			hd->held_lg -= lgc[ch];
		} else if (pass == LAYOUT_PASS_BW) { /* DualPipeV's whole */
			hd->held -= full[ch];
			hd->held_lg -= lgc[ch];
			hd->units--;
		} else {
			hd->held -= keep[ch];
			hd->units--;
		}
		if (hd->held > hd->peak) {
			hd->peak = hd->held;
			hd->peak_units = hd->units;
			hd->logits = hd->held_lg;
		}
	}
}

/* The working memory of context parallelism's ring over cp / a ranks
 * (cp_comm p2p: a 1; a2a+p2p's ring: the same bytes, an a-th of the heads
 * over a times the tokens), Transformer Engine's AttnFuncWithCPAndKVP2P
 * (attention/dot_product_attention/context_parallel.py), the more of its
 * forward's and its backward's, with K and V of the rank's b s / cp tokens
 * kv values and Q q values, in the bytes the ring moves
 * (kperf_cp_kv_bytes: eb K and V, gb their gradients; the same as synth's
 * transfers):
 *  - forward: p2p_comm_buffers, the concatenated local K and V and each
 *    block received, every one kept by the list until the forward
 *    returns: n kv eb;
 *  - backward without fp8 attention: p2p_comm_buffers, two of K, V and
 *    their gradients (2 x 2 kv in the autocast's dtype) and dq_buffer
 *    (empty_like(q)): (4 kv + q) ab;
 *  - backward under fp8 attention: kv_recv_buffer (kv eb), dkv_send_buffer
 *    and dkv_recv_buffer (cp_size x kv each, buffer_dtype uint8: 2 n kv
 *    gb), and dq_buffer of cp_size x q uint8 under delayed scaling or,
 *    under current scaling and mxfp8, dq_buffer and dkv_buffer in fp32
 *    for the reduction (4 (q + kv); blockwise, whose attention runs a
 *    per-tensor recipe, taken as current). */
static double cp_ring_bytes(const struct llm *m, const struct layout *l, int a)
{
	double n = (double)layout_cp(l) / a, t = l->tp;
	double sb = (double)m->seq / layout_cp(l) * l->mbs;
	double kv = 2 * sb * llm_kv_heads_rank(m, (int)t) * llm_head_dim(m);
	double q = sb * m->heads / t * llm_qk_head_dim(m), ab = kperf_act_bytes(l->dtype);
	double eb = kperf_cp_kv_bytes(l->dtype, l->fp8_recipe, l->fp8_attention, 0),
	       gb = kperf_cp_kv_bytes(l->dtype, l->fp8_recipe, l->fp8_attention, 1);
	double fwd = n * kv * eb, bwd = (4 * kv + q) * ab;
	if (l->fp8_attention)
		bwd = kv * eb + 2 * n * kv * gb +
		      (l->fp8_recipe == LAYOUT_FP8_DELAYED ? n * q * gb : 4 * (q + kv));
	return fwd > bwd ? fwd : bwd;
}

/* A stage's working memory on top of what it holds (out->transient):
 * recomputation's, the logits', context parallelism's buffers, the
 * dispatcher's (and its held buffers into out->buffers). */
static void stage_transient(const struct llm *m, const struct layout *l,
			    const struct hw_profile *hw, int last, struct mem_stage *out)
{
	double t = l->tp, V = m->vocab, sq = m->seq, b = l->mbs;
	double sl = sq / layout_cp(l); /* the tokens of a sequence on this rank */
	int hyb = llm_hybrid(m);

	if (hyb) {
		/* A hybrid model: the largest kind's, as a dense layer's below. */
		struct layout x = *l, y = *l;
		x.recompute = LAYOUT_RECOMPUTE_NONE;
		y.recompute_modules = l->recompute_modules & ~LAYOUT_RC_CORE_ATTN;
		for (int k = 0; k < LLM_KINDS; k++) {
			double d = 0;
			if (!llm_kind_layers(m, k))
				continue;
			if (l->recompute == LAYOUT_RECOMPUTE_FULL)
				d = mem_act_kind(m, &x, k);
			else if (l->recompute == LAYOUT_RECOMPUTE_SELECTIVE && y.recompute_modules)
				d = mem_act_kind(m, &x, k) - mem_act_kind(m, &y, k);
			if (d > out->transient)
				out->transient = d;
		}
		if (l->recompute == LAYOUT_RECOMPUTE_SELECTIVE && !l->flash &&
		    layout_rc(l, LAYOUT_RC_CORE_ATTN) && llm_kind_layers(m, LLM_KIND_ATTN))
			out->transient += 5 * m->heads * sl * sq * b / t;
		/* The SSD scan's working memory (layer.c ssd_fwd): the
		 * convolution's output (bf16 x, B, C), the chunk states and the
		 * passed ones (fp32 b nc H N P each), C B^T's blocks (fp32 b nc G
		 * Q^2). */
		if (llm_kind_layers(m, LLM_KIND_MAMBA)) {
			double nc = ceil(sl / m->ssm_chunk), H = m->ssm_heads / t,
			       G = m->ssm_groups / t;
			out->transient +=
			    2 * b * sl * (llm_ssm_inner(m) / t + 2 * G * m->ssm_state) +
			    8 * b * nc * H * m->ssm_state * m->ssm_head_dim +
			    4 * b * nc * G * (double)m->ssm_chunk * m->ssm_chunk;
		}
	} else if (l->recompute == LAYOUT_RECOMPUTE_FULL) {
		struct layout x = *l;
		x.recompute = LAYOUT_RECOMPUTE_NONE;
		out->transient = mem_act_per_layer(m, &x);
		if (llm_moe_layers(m) > 0 && mem_act_moe_layer(m, &x) > out->transient)
			out->transient = mem_act_moe_layer(m, &x);
	} else if (l->recompute == LAYOUT_RECOMPUTE_SELECTIVE) {
		/* The scores while recomputed; the other modules' activations
		 * while their layer's are recomputed (the larger layer's). */
		struct layout x = *l, y = *l;
		if (!l->flash && layout_rc(l, LAYOUT_RC_CORE_ATTN))
			out->transient = 5 * m->heads * sl * sq * b / t;
		x.recompute_modules = l->recompute_modules & ~LAYOUT_RC_CORE_ATTN;
		y.recompute = LAYOUT_RECOMPUTE_NONE;
		if (x.recompute_modules) {
			double d = mem_act_per_layer(m, &y) - mem_act_per_layer(m, &x);
			if (llm_moe_layers(m) > 0 &&
			    mem_act_moe_layer(m, &y) - mem_act_moe_layer(m, &x) > d)
				d = mem_act_moe_layer(m, &y) - mem_act_moe_layer(m, &x);
			out->transient += d;
		}
	}
	if (last)
		out->transient += 2 * sl * b * V / t;
	/* Context parallelism's ring (p2p, and a2a+p2p's over cp / a). */
	if (layout_cp(l) > 1 && (l->cp_comm == LAYOUT_CP_P2P ||
				 (l->cp_comm == LAYOUT_CP_A2A_P2P &&
				  layout_cp_a2a(l, hw ? hw_domain(hw) : 1) < layout_cp(l))))
		out->transient += cp_ring_bytes(m, l, layout_cp_a2a(l, hw ? hw_domain(hw) : 1));
	/* The all-gather form: the whole sequence's K and V, gathered, and
	 * their gradients before the reduce-scatter. */
	if (layout_cp(l) > 1 && l->cp_comm == LAYOUT_CP_ALLGATHER)
		out->transient += 2 * 2 * b * sl * layout_cp(l) * llm_kv_heads_rank(m, (int)t) *
				  llm_head_dim(m) * kperf_act_bytes(l->dtype);
	/* Ulysses' all-to-alls: Q, K and V received beside the sent ones
	 * (backward their gradients), as many bytes as the rank's own. */
	if (layout_cp(l) > 1 && layout_cp_a2a(l, hw ? hw_domain(hw) : 1) > 1)
		out->transient +=
		    b * sl *
		    (m->heads / t * llm_qk_head_dim(m) +
		     llm_kv_heads_rank(m, (int)t) * (llm_qk_head_dim(m) + llm_v_head_dim(m))) *
		    kperf_act_bytes(l->dtype);
	/* Mixture-of-experts: the dispatcher's buffers (its receive side is
	 * the experts' input, counted above). */
	if (llm_moe_layers(m) > 0) {
		double dwork, dheld;
		mem_moe_dispatch_bytes(m, l, &dwork, &dheld);
		out->transient += dwork;
		out->buffers += dheld;
	}
}

/* A stage's units in the order GPipe, 1F1B and interleaved run them
 * (layout_warmup, layout_unit_of; warm: the forwards before the first
 * backward; total: the forward units of a step): each forward adds its chunk's activations (off: those
 * of each chunk offloaded), each backward past the warm-up frees them;
 * the 1F1B all-to-all overlap's merged pairs hold the more of before and
 * after and one layer in flight.  The first model chunk adds the
 * embedding's mask, the last the head's tensors (tail, lg). */
static void sched_walk(const struct llm *m, const struct layout *l, int s, const double *a_kind,
		       double a_layer, double a_moe, double mask, double tail, double lg,
		       const double *off, int warm, int total, struct held *hd)
{
	int v = layout_stage_chunks(l), kf = 0, kb = 0;
	/* What a unit of each chunk adds (unit) and, merged, holds (pair):
	 * the same for every microbatch, so computed once (GPipe walks all
	 * of its microbatches), each the same expression as at each unit. */
	double unit[LAYOUT_MAX_VP], pair[LAYOUT_MAX_VP];
	for (int ch = 0; ch < v; ch++) {
		unit[ch] = chunk_act(m, l, s, ch, a_layer, a_moe, a_kind) - off[ch] +
			   (ch == 0 ? mask : 0) + (ch == v - 1 ? tail + lg : 0);
		pair[ch] = l->moe_a2a_overlap
			       ? chunk_act(m, l, s, ch, a_layer, a_moe, NULL) +
				     (ch == 0 ? mask : 0) + (ch == v - 1 ? tail + lg : 0)
			       : 0;
	}
	for (int i = 0; i < total; i++) {
		int ch, mb;
		/* In the steady state the units held repeat every pp x vp:
		 * one period past the warm-up has seen every peak. */
		if (i > warm + l->pp * v)
			break;
		layout_unit_of(l->pp, v, kf++, 1, &mb, &ch);
		if (l->moe_a2a_overlap && i >= warm) {
			/* A merged pair (synth/step.c unit_pair): the
			 * forward's layers are made as the backward's are
			 * freed, layer for layer, so the stage holds at most
			 * the more of before and after and one layer in
			 * flight, the forward's beside the backward's not
			 * yet freed (an MoE layer's, the larger). */
			double in_f = pair[ch];
			int cb;
			double out_b;
			layout_unit_of(l->pp, v, kb++, 0, &mb, &cb);
			out_b = pair[cb];
			double lay = a_moe > a_layer ? a_moe : a_layer;
			double top =
			    (hd->held > hd->held + in_f - out_b ? hd->held
								: hd->held + in_f - out_b) +
			    lay;
			if (hd->gk && top - lay + hd->gk[cb] > hd->gtop)
				hd->gtop = top - lay + hd->gk[cb];
			hd->held += in_f - out_b;
			hd->held_lg += (ch == v - 1 ? lg : 0) - (cb == v - 1 ? lg : 0);
			if (top > hd->peak) {
				hd->peak = top;
				hd->peak_units = hd->units;
				hd->logits = hd->held_lg;
			}
			continue;
		}
		hd->held += unit[ch];
		hd->held_lg += ch == v - 1 ? lg : 0;
		hd->units++;
		if (hd->held > hd->peak) {
			hd->peak = hd->held;
			hd->peak_units = hd->units;
			hd->logits = hd->held_lg;
		}
		if (i >= warm) {
			layout_unit_of(l->pp, v, kb++, 0, &mb, &ch);
			if (hd->gk && hd->held + hd->gk[ch] > hd->gtop)
				hd->gtop = hd->held + hd->gk[ch];
			hd->held -= unit[ch];
			hd->held_lg -= ch == v - 1 ? lg : 0;
			hd->units--;
		}
	}
	/* No backward before the last forward (GPipe, or a warm-up of every
	 * unit): the first backwards, from all that is held. */
	for (int j = 0; hd->gk && kb == 0 && j < v && j < total; j++) {
		int ch, mb;
		layout_unit_of(l->pp, v, j, 0, &mb, &ch);
		if (hd->held + hd->gk[ch] > hd->gtop)
			hd->gtop = hd->held + hd->gk[ch];
		hd->held -= unit[ch];
	}
}

/* A stage's schedule, walked (sched_walk; the zero-bubble ones' passes,
 * zb_walk): what it holds after each forward (the backwards after the
 * last forward only free) -- its activations' peak, the microbatches then
 * held, the logits -- and where gk gives Megatron-FSDP's gradient buckets
 * (fsdp_grad_top, a chunk's; NULL: none) what they hold beyond that peak,
 * added to the buffers.  a_kind: a hybrid model's activations by kind
 * (NULL: a_layer and a_moe). */
static void stage_walk(const struct llm *m, const struct layout *l, int s, const double *a_kind,
		       double a_layer, double a_moe, const double *gk, struct mem_stage *out)
{
	double t = l->tp, h = m->hidden, V = m->vocab, b = l->mbs;
	double sl = (double)m->seq / layout_cp(l), sp = l->sp ? t : 1;
	double held = 0, peak = 0, units = 0, peak_units = 0;
	int v = layout_stage_chunks(l), total = l->microbatches * v, warm = layout_warmup(l, s);
	int first = s == 0, last = s == layout_head_stage(l);
	double mask = first && layout_dropout(l) ? sl * b * h / sp : 0;
	/* (tail: the final norm's and the output layer's inputs, the
	 * activations' dtype each: fp32's 4) */
	double lg = last ? 4 * sl * b * V / t : 0,
	       tail = last ? 2 * kperf_act_bytes(l->dtype) * sl * b * h / sp : 0;
	double held_lg = 0;
	/* Activation offloading: a microbatch's offloaded layers leave
	 * the stage once its forward is done.  Transformer Engine's
	 * schedule frees layer i before layer L - N + i's forward and
	 * loads it back after layer L - 1 - N + i's backward has begun, so
	 * that a microbatch holds L - N layers at its most (the docstring
	 * of get_cpu_offload_context: (num_layers - num_offloaded_layers)
	 * x T) and no copy buffer beyond them.  Only with pp 1 and no
	 * vp (layout_check): one chunk. */
	double off[LAYOUT_MAX_VP] = {0};
	for (int c = 0; c < v && l->offload_layers > 0; c++)
		off[c] = chunk_offloaded(m, l, s, c, a_layer, a_moe);
	/* Each MTP depth holds its layer's activations, its final norm's
	 * input and fp32 logits as the main head's, and its embedding,
	 * enorm and hnorm outputs and their concatenation (bf16, 4h a
	 * token). */
	if (last && m->mtp_layers > 0) {
		double a = llm_is_moe_layer(m, m->layers - 1) ? a_moe : a_layer;
		tail += m->mtp_layers * (a + tail + 8 * sl * b * h / sp);
		lg *= 1 + m->mtp_layers;
	}
	double gtop = 0;
	if (layout_zb(l->schedule)) {
		struct held hd = {held, peak, units, peak_units, held_lg, out->logits, NULL, 0};
		zb_walk(m, l, s, a_kind, a_layer, a_moe, mask, tail, lg,
			2 * sl * b * (h / sp + V / t), &hd);
		held = hd.held;
		peak = hd.peak;
		units = hd.units;
		peak_units = hd.peak_units;
		held_lg = hd.held_lg;
		out->logits = hd.logits;
		total = 0;
		/* Its B and W passes not walked for them: the buckets
		 * beside the peak (the most of any chunk). */
		for (int c = 0; gk && c < v; c++)
			if (peak + gk[c] > gtop)
				gtop = peak + gk[c];
	}
	{
		struct held hd = {held, peak, units, peak_units, held_lg, out->logits, NULL, 0};
		hd.gk = gk;
		hd.gtop = gtop;
		sched_walk(m, l, s, a_kind, a_layer, a_moe, mask, tail, lg, off, warm, total, &hd);
		peak = hd.peak;
		peak_units = hd.peak_units;
		out->logits = hd.logits;
		gtop = hd.gtop;
	}
	out->activations = peak;
	/* Megatron-FSDP's gradient buckets: what they hold beyond the
	 * activations' peak. */
	if (gtop > peak)
		out->buffers += gtop - peak;
	out->inflight = peak_units / v;
}

/* The optimizer step's own peak: the backward's activations, logits and
 * unsharded buffers freed, the stage holds its weights, gradients,
 * optimizer state and persistent pools (pooled: Megatron-FSDP's double
 * buffers) and the fp32 copy of its gradient shard the optimizer reads
 * (layout_dp_traits step_cast a shard parameter, as many as the
 * optimizer state's, optimizer / ob, at most step_group), with cuBLAS's
 * workspace.  DeepSpeed's ZeRO-1 (step_part) holds the partition's
 * gradients alone at the step, and before it, at the boundary's reduce,
 * that partition beside the whole gradients; BF16_Optimizer's (ar_flat)
 * its gradients cast whole for the all-reduce beside them.  Where that is
 * more than the backward's peak (a sharded step
 * with few activations: full recomputation, a short sequence), the
 * stage's peak is the step's and out its breakdown. */
static void step_phase(const struct layout *l, double wb, double gb, double ob, double pooled,
		       struct mem_stage *out)
{
	struct layout_dp_traits dt;
	double part = ob > 0 ? out->optimizer / ob : 0, cast = part, held = out->grads;
	double base = out->weights + out->optimizer + pooled + MEM_CUBLAS_WORKSPACE, step,
	       reduce = 0, extra = 0;
	layout_dp_traits(l, 0, wb, gb, &dt);
	if (dt.step_group > 0 && cast > dt.step_group)
		cast = dt.step_group;
	cast *= dt.step_cast;
	if (dt.step_part && cast > 0) {
		/* DeepSpeed's ZeRO-1: the boundary's reduce allocates the
		 * rank's partition (gb a shard parameter) beside the whole
		 * gradients, less those already moved into the bucket (the
		 * bucket's bytes beyond them where the stage's are fewer; the
		 * first rank's partition starts in the first bucket); the step
		 * then holds the partition alone. */
		double bk = dt.bucket_params * dt.rs_bytes;
		part *= gb;
		extra = part + (bk > out->grads ? bk - out->grads : 0);
		reduce = base + out->grads + extra;
		held = part;
	}
	if (dt.ar_flat) {
		/* BF16_Optimizer's boundary all-reduce: allreduce_bucket's
		 * .to() of a param group's fp32 flat gradients, taken whole
		 * (a bucket never splits a tensor), rs_bytes a parameter
		 * beside the gradients (fp32 and bf16) once the backward is
		 * done; the stage's trained parameters one group. */
		extra = dt.rs_bytes * out->train;
		reduce = base + out->grads + extra;
	}
	step = base + held + cast;
	if (reduce > step && reduce > out->allocated) {
		out->transient = extra + MEM_CUBLAS_WORKSPACE;
		out->allocated = reduce;
	} else if (cast > 0 && step > out->allocated) {
		out->grads = held;
		out->transient = cast + MEM_CUBLAS_WORKSPACE;
		out->allocated = step;
	} else {
		return;
	}
	out->buffers = pooled;
	out->activations = out->logits = out->inflight = 0;
}

/* A stage's parameters by their parts (mem_stage's, and
 * mem_stage_params's alone). */
struct stage_params {
	double n;	   /* its layers, the MTP depths' included */
	double layer;	   /* a layer's (a hybrid model: the largest kind's but E) */
	double nl;	   /* its layers' (a hybrid model: by their kinds, E apart) */
	double emb, head;  /* the embedding's, the head's */
	double nm, md, me; /* MoE layers, and each one's dense and expert parts */
	double dl, Pd, Pe; /* MoE: the dense layers', all but the experts', theirs */
	double La;	   /* LoRA: a layer's adapters */
	double params, train;
};

static void stage_params(const struct llm *m, const struct layout *l, int s, struct stage_params *o)
{
	double t = l->tp, h = m->hidden, V = m->vocab, sq = m->seq;
	int v = layout_stage_chunks(l), first = s == 0, last = s == layout_head_stage(l);
	/* The head on the embedding's stage (ZB-V's V) needs no copy of the
	 * word embedding. */
	int split = layout_head_stage(l) != 0;

	memset(o, 0, sizeof(*o));
	o->n = layout_stage_layers(m, l, s);
	o->layer = llm_layer_params_rank(m, l->tp);
	o->nl = o->n * o->layer;
	/* A hybrid model: the stage's layers' parameters by their kinds (nl,
	 * in place of n x layer), the largest kind's a layer (what ZeRO's
	 * buffers hold at once). */
	if (llm_hybrid(m)) {
		o->nl = 0;
		o->layer = 0;
		for (int k = 0; k < LLM_KINDS; k++) {
			double pk = llm_kind_params_rank(m, k, l->tp);
			if (k != LLM_KIND_MOE && llm_kind_layers(m, k) > 0 && pk > o->layer)
				o->layer = pk;
		}
		for (int c = 0; c < v; c++) {
			int l0 = layout_chunk_first(m, l, s, c),
			    nc = layout_chunk_layers(m, l, s, c);
			for (int i = l0; i < l0 + nc; i++)
				if (llm_layer_kind(m, i) != LLM_KIND_MOE) /* (E: md, me) */
					o->nl +=
					    llm_kind_params_rank(m, llm_layer_kind(m, i), l->tp);
		}
	}
	if (first)
		o->emb = V * h / t + (m->rope ? 0 : sq * h);
	if (last)
		o->head = 2 * h + (m->untied || split ? V * h / t : 0);
	/* Multi-token prediction on the last stage (llm.h mtp_layers): each
	 * depth's layer (the last decoder layer's kind), eh_proj and norms, and
	 * a copy of the word embedding where the head is untied on another
	 * stage than the embedding (synth_extra_params). */
	if (last && m->mtp_layers > 0) {
		o->n += m->mtp_layers;
		o->head +=
		    m->mtp_layers * (2 * h * h / t + 6 * h) + (m->untied && split ? V * h / t : 0);
	}
	if (llm_moe_layers(m) > 0) {
		/* Mixture-of-experts: the experts' layers apart (their
		 * sharding: mem_stage). */
		for (int c = 0; c < v; c++)
			o->nm += layout_chunk_moe(m, l, s, c);
		if (last && llm_is_moe_layer(m, m->layers - 1))
			o->nm += m->mtp_layers;
		mem_moe_layer_params(m, l, &o->md, &o->me);
		o->dl = llm_hybrid(m) ? o->nl : (o->n - o->nm) * o->layer;
		o->Pd = o->dl + o->nm * o->md + o->emb + o->head;
		o->Pe = o->nm * o->me;
		o->params = o->Pd + o->Pe;
		o->train = o->params;
	} else if (layout_lora(l, 0)) {
		/* LoRA: the base frozen, the adapters trained. */
		o->La = layout_lora_params(m, l);
		o->params = o->n * o->layer + o->emb + o->head + o->n * o->La;
		o->train = o->n * o->La;
	} else {
		if (!llm_hybrid(m))
			o->nl = o->n * o->layer; /* n with the MTP depths' layers */
		o->params = o->nl + o->emb + o->head;
		o->train = o->params;
	}
}

void mem_stage_params(const struct llm *m, const struct layout *l, int s, double *params,
		      double *train)
{
	struct stage_params sp;
	stage_params(m, l, s, &sp);
	*params = sp.params;
	*train = sp.train;
}

void mem_stage(const struct llm *m, const struct layout *l, const struct hw_profile *hw, int s,
	       struct mem_stage *out)
{
	double wb, gb, ob, shard = layout_shard_group(l);
	double a_layer = mem_act_per_layer(m, l), a_moe = 0;
	int v = layout_stage_chunks(l);
	int first = s == 0, last = s == layout_head_stage(l), hyb = llm_hybrid(m);
	/* FP8 (or FP4) GEMMs keep quantised copies of each layer weight
	 * (mem_lowp_weight_bytes a parameter), sharded like the weights. */
	double qw = mem_lowp_weight_bytes(l, hw);
	/* What a layer weight's parameter holds beyond wb: its quantised
	 * copies, less the bf16 copy where the quantised tensor is the
	 * parameter (fp8_param_gather, mem_layer_weight_bytes; wb - lw is 0
	 * otherwise, so qx is qw exactly). */
	double qx;
	/* A hybrid model: each kind's activations (the parameters by kind:
	 * stage_params). */
	double a_kind[LLM_KINDS] = {0};
	struct stage_params pa;
	double n, layer, emb, head;
	/* Megatron-FSDP's gradient buckets (layout_dp_traits rs_fifo): each
	 * chunk's most beyond the activations a backward frees (gk). */
	int fifo, pool;
	double rs_queue, gk[LAYOUT_MAX_VP] = {0}, pooled = 0, bucket;
	struct layout_dp_traits gt; /* the implementation's, a layer's */

	memset(out, 0, sizeof(*out));
	stage_params(m, l, s, &pa);
	n = pa.n, layer = pa.layer, emb = pa.emb, head = pa.head;
	if (hyb) {
		a_layer = 0;
		for (int k = 0; k < LLM_KINDS; k++) {
			a_kind[k] = mem_act_kind(m, l, k);
			if (llm_kind_layers(m, k) > 0 && a_kind[k] > a_layer)
				a_layer = a_kind[k]; /* the allocator's tensors' size */
		}
	}
	if (llm_moe_layers(m) > 0)
		a_moe = mem_act_moe_layer(m, l);
	mem_param_bytes(l, &wb, &gb, &ob);
	qx = qw - (wb - mem_layer_weight_bytes(l));
	out->params = pa.params;
	out->train = pa.train;
	layout_dp_traits(l, layer, wb, gb, &gt);
	fifo = gt.rs_fifo && l->zero >= 2 && shard > 1;
	rs_queue = gt.rs_queue;
	pool = fifo ? gt.pool : 0;
	/* (ZeRO-3's at a shard above 1 only, as before: stage3.py's
	 * single-rank case unread.) */
	bucket = l->zero >= 1 && (l->zero <= 2 || shard > 1) ? gt.bucket_params * gt.rs_bytes : 0;
	if (llm_moe_layers(m) > 0) {
		/* Mixture-of-experts: the experts' share is sharded over the
		 * expert data-parallel group (Megatron-LM's expert distributed
		 * optimizer), the rest as a dense model's.  ZeRO-3 and hybrid
		 * sharding are refused with experts (synth_check). */
		double md = pa.md, me = pa.me, edp = layout_edp(l), Pd = pa.Pd, Pe = pa.Pe;
		out->weights = wb * (Pd + Pe) + qx * (pa.dl + pa.nm * (md + me));
		out->grads =
		    gb * Pd / (l->zero >= 2 ? shard : 1) + gb * Pe / (l->zero >= 2 ? edp : 1);
		out->optimizer =
		    ob * Pd / (l->zero >= 1 ? shard : 1) + ob * Pe / (l->zero >= 1 ? edp : 1);
		if (l->zero == 2 && shard > 1 && !fifo)
			out->buffers = (layer > md + me ? layer : md + me) * gb;
	} else if (layout_lora(l, 0)) {
		/* LoRA: the base frozen, held in its weights' dtype; the
		 * adapters trained (ZeRO-3 is refused, layout_check). */
		double La = pa.La;
		out->weights = wb * out->params + qw * n * layer;
		out->grads = gb * out->train / (l->zero >= 2 ? shard : 1);
		out->optimizer = ob * out->train / (l->zero >= 1 ? shard : 1);
		if (l->zero == 2 && shard > 1) {
			struct layout_dp_traits dt;
			layout_dp_traits(l, La, wb, gb, &dt);
			out->buffers = La * dt.rs_buf;
		}
	} else {
		double P = pa.params, nl = pa.nl;
		out->weights = (wb * P + qx * nl) / (l->zero >= 3 ? shard : 1);
		out->grads = gb * P / (l->zero >= 2 ? shard : 1);
		out->optimizer = ob * P / (l->zero >= 1 ? shard : 1);
		/* The implementation's buffers (layout_dp_traits): the layers
		 * gathered at once (prefetched ones, FSDP2's all-gather output
		 * kept for the next copy-in), one layer's gradients unsharded for
		 * the reduce-scatter (DeepSpeed's reduce bucket: below). */
		if (l->zero >= 2 && shard > 1)
			out->buffers = layer * gt.rs_buf;
		if (l->zero >= 3 && shard > 1)
			out->buffers +=
			    (gt.pool > 0 ? gt.pool : gt.prefetch + 1 + gt.ag_extra) * layer * wb +
			    (emb + head) * wb;
	}

	/* DeepSpeed's BF16_Optimizer's bf16 .grad beside its fp32 buffer
	 * (layout_dp_traits lp_grad; ZeRO-1: whole). */
	out->grads += gt.lp_grad * out->train;
	/* DeepSpeed's reduce bucket (layout_dp_traits bucket_params; docs/
	 * MODEL.md "DeepSpeed's reduce bucket"): allocated whole at the
	 * backward's first gradient under ZeRO 1-3, whatever the stage's
	 * parameters and (ZeRO-1/2) the shard; released before the step
	 * (step_phase). */
	out->buffers += bucket;

	if (fifo) {
		/* Each chunk's layers' trained parameters a layer (the
		 * embedding's and the head's apart, on the chunks that hold
		 * them), and its activations a layer. */
		int lora = layout_lora(l, 0);
		double lp = n > 0 ? (out->train - (lora ? 0 : emb + head)) / n : 0;
		/* --fsdp-double-buffer (layout_dp_traits pool): the units'
		 * gradient buckets in a persistent pool of two (ZeRO-3's two
		 * gathered layers, its pool, counted above whatever the
		 * prefetch), the walk meeting the other parameters' group
		 * alone. */
		if (pool > 0) {
			out->buffers += pool * lp * gb;
			pooled = pool * lp * gb + (l->zero >= 3 ? pool * layer * wb : 0);
		}
		for (int c = 0; c < v; c++) {
			int nc = layout_chunk_layers(m, l, s, c), k = layout_chunk_model(l, s, c);
			double ac =
			    nc > 0 ? chunk_act(m, l, s, c, a_layer, a_moe, hyb ? a_kind : NULL) / nc
				   : 0;
			if (last && k == l->pp * v - 1 && m->mtp_layers > 0)
				nc += m->mtp_layers;
			gk[c] = fsdp_grad_top(nc, pool > 0 ? 0 : lp, ac,
					      !lora && last && k == l->pp * v - 1 ? head : 0,
					      !lora && first && k == 0 ? emb : 0, rs_queue, gb);
		}
	}

	/* The schedule, walked (Megatron-FSDP's buckets with it). */
	stage_walk(m, l, s, hyb ? a_kind : NULL, a_layer, a_moe, fifo ? gk : NULL, out);
	stage_transient(m, l, hw, last, out);
	/* cuBLAS's workspace (MEM_CUBLAS_WORKSPACE), one compute stream. */
	out->transient += MEM_CUBLAS_WORKSPACE;
	out->allocated = out->weights + out->grads + out->optimizer + out->buffers +
			 out->activations + out->transient;
	step_phase(l, wb, gb, ob, pooled, out);
	out->fragmentation = stage_reserve(m, l, out, n, gb, ob, a_layer) - out->allocated;
	out->total = out->allocated + out->fragmentation;
}

void mem_estimate(const struct llm *m, const struct layout *l, const struct hw_profile *hw,
		  struct mem_est *out)
{
	struct mem_stage st, best;
	int p = l->pp > 0 ? l->pp : 1;

	memset(out, 0, sizeof(*out));
	memset(&best, 0, sizeof(best));
	for (int s = 0; s < p; s++) {
		mem_stage(m, l, hw, s, &st);
		if (s == 0)
			out->first_total = st.total;
		if (s == p - 1)
			out->last_total = st.total;
		if (s == 0 || st.total > best.total) {
			best = st;
			out->stage = s;
		}
	}
	out->params_per_gpu = best.params;
	out->weights = best.weights;
	out->grads = best.grads;
	out->optimizer = best.optimizer;
	out->buffers = best.buffers;
	out->act_per_layer = mem_act_per_layer(m, l);
	if (llm_hybrid(m)) { /* the mean of the layers' kinds */
		out->act_per_layer = 0;
		for (int k = 0; k < LLM_KINDS; k++)
			out->act_per_layer += llm_kind_layers(m, k) * mem_act_kind(m, l, k);
		out->act_per_layer /= m->layers;
	}
	out->inflight = best.inflight;
	out->activations = best.activations;
	out->logits = best.logits;
	out->transient = best.transient;
	out->allocated = best.allocated;
	out->fragmentation = best.fragmentation;
	out->total = best.total;
	if (hw)
		out->capacity = hw->hbm_bytes - hw->mem_reserve_bytes;
	out->verdict = mem_verdict(out->total, out->capacity, &out->band);
	out->fits = out->verdict != MEM_OOM;
	out->margin = out->capacity - out->total;
}
