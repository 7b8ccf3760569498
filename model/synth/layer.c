/*
 * layer.c - what a layer runs (synth_int.h): a transformer layer's
 * kernels forward and backward (GEMMs and their FP8 casts, attention --
 * flash or not, context parallel as a ring or an all-gather --, the
 * mixture-of-experts router, all-to-alls and grouped GEMMs, recomputation,
 * gradient accumulation) and its tensor-parallel collectives; the
 * embedding, the head and the loss.  Each kernel is timed here (the kernel
 * database, else the kernel model through its class's line) and its op's
 * shapes described; it becomes a task through emit.c.  Where the rank is
 * (layer, microbatch, phase) is the schedule's (step.c).
 */
#include "synth_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "comm.h"
#include "kperf.h"

/* A profiler's name for an element of dtype (cost_dtype reads it back). */
static const char *torch_type(int dtype)
{
	switch (dtype) {
	case HW_FP32:
	case HW_TF32:
		return "float";
	case HW_FP16:
		return "c10::Half";
	case HW_FP8:
	case HW_FP4:
		return "c10::Float8_e4m3fn";
	default:
		return "c10::BFloat16";
	}
}

/* The memory-bound kind of a memory-bound kernel's class (cost_mem_kind;
 * elementwise for any other class passed here). */
static int membound_kind(int cls)
{
	int k = cost_mem_kind(cls);
	return k >= 0 ? k : HW_MEM_ELEMENTWISE;
}

/*
 * Time of a kernel of class cls doing `flops` and moving `bytes`, whose
 * kernel-model time is `model_s` (kperf.h): the kernel database's where it
 * has the kernel, else the class's line over the model's time; times the
 * class's scale.  dtype: the kernel's (for the database).
 */
static double ktime(struct ctx *c, int cls, int dtype, double flops, double bytes, double model_s)
{
	const struct synth_in *in = c->in;
	const struct calib_class *k = &in->cost[cls];
	double e = k->eff > 0 ? k->eff : 1, t;
	int how = KDB_NONE;
	if (sl_skip(c)) /* not built: nothing counted */
		return 0;
	if (c->dry) {
		t = (k->overhead_s + model_s / e) * in->scale[cls];
		if (cls == KC_GEMM || cls == KC_ATTENTION)
			c->dry_heavy_s += t;
		return t;
	}
	if (cls == KC_GEMM || cls == KC_ATTENTION)
		c->tally.flops += flops;
	if (c->kdb_gpu >= 0)
		how = kdb_time(in->kdb, c->kdb_gpu, cls, dtype, k->by_flops ? flops : bytes, &t);
	c->tally.kdb_hits[how]++;
	if (how != KDB_NONE)
		return t * in->scale[cls];
	return (k->overhead_s + model_s / e) * in->scale[cls];
}

/* A memory-bound kernel's op: one bf16 tensor of bytes / 4 values, or
 * over 4-byte values (the fp32 optimizer's passes) one fp32 tensor of
 * bytes / 8 (key: 1, bytes, 4 or 0), so that an edit re-times it at its
 * element size's bandwidth (cost_mem_impl). */
static void membound_op_fmt(const double *key, const char **op, char *dims, size_t nd, char *types,
			    size_t nt)
{
	int fp32 = key[2] >= 4;
	*op = "aten::op";
	snprintf(dims, nd, "[[%.0f]]", key[1] / (fp32 ? 8 : 4));
	snprintf(types, nt, "[\"%s\"]", fp32 ? "float" : "c10::BFloat16");
}

/* A memory-bound kernel of class cls moving `bytes`.  Its op records one
 * bf16 tensor of bytes / 4 values (fp32, bytes / 8, under sl_kernel_elem
 * with 4-byte values): read and written, as cost_work()
 * counts an op's traffic (its inputs and an output the size of the
 * first), that is the kernel's bytes (for a kernel reading one tensor and
 * writing one, that tensor). */
void sl_kernel(struct ctx *c, int r, int cls, const char *name, double bytes)
{
	sl_kernel_on(c, r, c->kstream, cls, name, bytes);
}

static void kernel_on(struct ctx *c, int r, int st, int cls, int elem, const char *name,
		      double bytes)
{
	/* (a dry run for the host's time alone times no kernel) */
	double t = c->dry_host ? 0
			       : ktime(c, cls, -1, 0, bytes,
				       kperf_mem_impl_s(c->hw, membound_kind(cls),
							cost_mem_impl(cls, elem), bytes));
	double key[OPKEY] = {1, bytes, elem >= 4 ? 4 : 0};

	if (c->dry && st == S_COMPUTE)
		c->dry_mem_s += t;
	se_record_op(c, key, membound_op_fmt);
	se_launch(c, r, st, GN_KERNEL, name, t, NULL);
}

void sl_kernel_on(struct ctx *c, int r, int st, int cls, const char *name, double bytes)
{
	kernel_on(c, r, st, cls, 0, name, bytes);
}

void sl_kernel_elem(struct ctx *c, int r, int cls, int elem, const char *name, double bytes)
{
	kernel_on(c, r, c->kstream, cls, elem, name, bytes);
}

/* A GEMM's op, C = A B as aten::mm [M, K] x [K, N], or aten::bmm with the
 * batch (key: 2, dtype, b, m, n, k). */
static void gemm_op_fmt(const double *key, const char **op, char *dims, size_t nd, char *types,
			size_t nt)
{
	const char *ty = torch_type((int)key[1]);
	double b = key[2], m = key[3], n = key[4], k = key[5];
	*op = b == 1 ? "aten::mm" : "aten::bmm";
	if (b == 1)
		snprintf(dims, nd, "[[%.0f, %.0f], [%.0f, %.0f]]", m, k, k, n);
	else
		snprintf(dims, nd, "[[%.0f, %.0f, %.0f], [%.0f, %.0f, %.0f]]", b, m, k, b, k, n);
	snprintf(types, nt, "[\"%s\", \"%s\"]", ty, ty);
}

/* A GEMM of batch b, m x k times k x n, in dtype; with grouped, b GEMMs
 * as Transformer Engine's grouped GEMM runs them (kperf_grouped_s).  fp8
 * GEMMs are timed with the library the layout's recipe runs
 * (kperf_gemm_key). */
static void gemm_of(struct ctx *c, int r, const char *name, int dtype, double b, double m, double n,
		    double k, int grouped)
{
	double es = kperf_elem_bytes(dtype);
	int lib = kperf_gemm_key(dtype, c->in->lay.fp8_recipe);
	double t = c->dry_host ? 0 /* (as sl_kernel_on) */
			       : ktime(c, KC_GEMM, dtype, b * llm_gemm_flops(m, n, k),
				       b * (es * (m * k + k * n) + 2 * m * n),
				       grouped ? kperf_grouped_s(c->hw, lib, b, m, n, k)
					       : kperf_gemm_s(c->hw, lib, b, m, n, k));
	double key[OPKEY] = {2, dtype, b, m, n, k};

	se_record_op(c, key, gemm_op_fmt);
	se_launch(c, r, c->kstream, GN_KERNEL, name, t, NULL);
}

static void bgemm(struct ctx *c, int r, const char *name, int dtype, double b, double m, double n,
		  double k)
{
	gemm_of(c, r, name, dtype, b, m, n, k, 0);
}

static void gemm(struct ctx *c, int r, const char *name, double m, double n, double k)
{
	bgemm(c, r, name, c->in->lay.dtype, 1, m, n, k);
}

/* One tensor-parallel collective of the b s tokens' activations of width
 * `width`, eb bytes a value, on stream st: kind GC_ALL_REDUCE, or with
 * sequence parallelism GC_REDUCE_SCATTER or GC_ALL_GATHER.  Reductions
 * are of the activations' dtype (z->ab); a gather may be of fp8
 * (gather_bytes). */
static void tp_coll_dt(struct ctx *c, int r, const struct shape *z, int st, int kind, double bytes,
		       const char *dtype)
{
	struct comm_group g = {(int)z->t, z->tp_per_node};
	char pg[32] = "";
	if (!c->dry) /* a dry run's collective (its time alone) has no group */
		snprintf(pg, sizeof(pg), "tp.%d", r);
	se_collective_dt(c, r, st, kind,
			 kind == GC_REDUCE_SCATTER ? "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"
			 : kind == GC_ALL_GATHER   ? "ncclDevKernel_AllGather_RING_LL"
						   : "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
			 bytes, g, pg, dtype);
}

/* (A gather of fp8 data, eb under the activations' z->ab, is of
 * Float8Tensor's torch.uint8 buffers: se_dtype's "Byte".  Reductions are
 * of the activations' dtype.) */
static void tp_coll_eb(struct ctx *c, int r, const struct shape *z, int st, int kind, double width,
		       double eb)
{
	if (kind != GC_ALL_GATHER)
		eb = z->ab;
	tp_coll_dt(c, r, z, st, kind, z->b * z->s * width * eb, se_dtype(c, eb));
}

void sl_tp_coll(struct ctx *c, int r, const struct shape *z, int st, int kind, double bytes,
		double eb)
{
	tp_coll_dt(c, r, z, st, kind, bytes, se_dtype(c, eb));
}

/* The same of the activations' dtype (z->ab bytes a value: bf16's 2,
 * fp32's 4). */
static void tp_coll_of(struct ctx *c, int r, const struct shape *z, int st, int kind, double width)
{
	tp_coll_eb(c, r, z, st, kind, width, z->ab);
}

/* The same of the b s h activations. */
static void tp_coll(struct ctx *c, int r, const struct shape *z, int st, int kind)
{
	tp_coll_of(c, r, z, st, kind, z->h);
}

static int ln_linear_of(const struct ctx *c, int lora_bit);

/*
 * Bytes a value of a sequence-parallel all-gather of b s h (kperf_lowp_
 * gather_bytes).  Transformer Engine quantises the tensor before the gather
 * where its module's GEMM takes it in fp8: forward, the normed input of a
 * LayerNormLinear (layernorm_linear.py _LayerNormLinear.forward:
 * gather_along_first_dim(ln_out, tp_group, quantizer=input_quantizer),
 * row-wise usage: KPERF_GATHER_ROW), in bf16 where a LoRA adapter asks for
 * the gathered bf16 norm output (return_layernorm_output_gathered;
 * ln_linear_of), lora_bit that module's adapter (-1: none); backward
 * (GATHER_GRAD), the output gradient of a row-parallel Linear (base.py
 * grad_output_preprocess: quantizer given where ctx.fp8, both usages set
 * in linear.py's backward: KPERF_GATHER_BOTH).  gather_bytes_of: the
 * saved input gathered again for the weight gradient (usage
 * KPERF_GATHER_COL: ctx.ln_out_needs_gather,
 * set_quantizer_usage_for_wgrad_all_gather), by the forward's rule for
 * LoRA.  The reduce-scatters stay bf16: a row-parallel Linear's output
 * (linear.py forward, reduce_scatter_along_first_dim of the bf16 GEMM
 * output) and a column-parallel one's input gradient (layernorm_linear.py
 * backward, of the bf16 dgrad).
 */
#define GATHER_GRAD (-2)
static double gather_bytes_of(const struct ctx *c, int lora_bit, int usage)
{
	const struct layout *l = &c->in->lay;
	int u = lora_bit == GATHER_GRAD				 ? KPERF_GATHER_BOTH
		: ln_linear_of(c, lora_bit) == KPERF_CAST_NORMED ? usage
								 : KPERF_GATHER_BF16;
	return kperf_lowp_gather_bytes(l->dtype, l->fp8_recipe, l->exec, u);
}

static double gather_bytes(const struct ctx *c, int lora_bit)
{
	return gather_bytes_of(c, lora_bit, KPERF_GATHER_ROW);
}

/*
 * Bytes a value of the sequence-parallel gathers of a Transformer Engine
 * Linear's own (TEColumnParallelLinear, not a LayerNormLinear) under fp8:
 * forward (KPERF_GATHER_ROW), its input, which linear.py _Linear.forward
 * quantises before the gather (with_input_all_gather_nccl:
 * input_quantizer(inputmat), then gather_along_first_dim(inputmat,
 * tp_group, quantizer=input_quantizer) with row-wise usage); backward
 * (KPERF_GATHER_COL), the saved quantised shard gathered again for the
 * weight gradient (ctx.backward_input_needs_gather,
 * set_quantizer_usage_for_wgrad_all_gather), and a row-parallel one's
 * output gradient (GATHER_GRAD).  For the shared experts' FC1 and FC2
 * (SharedExpertMLP without --moe-shared-expert-overlap) and MTP's eh_proj
 * (MultiTokenPredictionLayer._proj_and_transformer_layer runs
 * _concat_embeddings in get_fp8_context).
 */
static double te_linear_gather_bytes(const struct ctx *c, int usage)
{
	const struct layout *l = &c->in->lay;
	return kperf_lowp_gather_bytes(l->dtype, l->fp8_recipe, l->exec, usage);
}

/* A block's tensor-parallel round: an all-reduce, or with sequence
 * parallelism a reduce-scatter and an all-gather of gb bytes a value
 * (gather_bytes).  Forward, after a row-parallel GEMM, the gather is the
 * next column-parallel GEMM's input's placed early; gb 0 where no such
 * gather of b s h follows (after an MLA layer's FFN, or its projection in
 * an MoE layer: MLA gathers its compressed q and kv instead, mla_fwd). */
static void tp_round(struct ctx *c, int r, const struct shape *z, double gb)
{
	if (z->t <= 1)
		return;
	if (c->in->lay.sp) {
		tp_coll(c, r, z, S_COMPUTE, GC_REDUCE_SCATTER);
		if (gb > 0)
			tp_coll_eb(c, r, z, S_COMPUTE, GC_ALL_GATHER, z->h, gb);
	} else {
		tp_coll(c, r, z, S_COMPUTE, GC_ALL_REDUCE);
	}
}

/* The backward's collective before a row-parallel Linear's gradient GEMMs:
 * with sequence parallelism the all-gather of its output gradient
 * (reduce_scatter_to_sequence_parallel_region's backward, a synchronous
 * _gather_along_first_dim); without, none (the forward's all-reduce,
 * reduce_from_tensor_model_parallel_region, has an identity backward).
 * The block's input gradient is reduced by its column-parallel Linear,
 * reduce-scattered or all-reduced beside its weight-gradient GEMM
 * (linear_bwd_g). */
static void tp_grad_gather(struct ctx *c, int r, const struct shape *z)
{
	if (z->t > 1 && c->in->lay.sp)
		tp_coll_eb(c, r, z, S_COMPUTE, GC_ALL_GATHER, z->h, gather_bytes(c, GATHER_GRAD));
}

/* Tensor-parallel communication overlapped with GEMMs (Megatron-LM's
 * --tp-comm-overlap, Transformer Engine's userbuffers; sequence parallel):
 * the collective runs on its own stream beside the GEMMs launched between
 * tp_side_begin and tp_side_end, both after what preceded them, and what
 * follows waits for both.  The pipelining of the collective and the GEMM
 * in chunks is taken as perfect (the fill of one chunk is left out);
 * contention slows both where they overlap (sim.h). */
static int tp_overlapped(const struct ctx *c, const struct shape *z)
{
	return z->t > 1 && c->in->lay.sp && c->in->lay.tp_overlap;
}

/* Collectives issued on the tensor-parallel stream beside the compute
 * stream's next kernels (side_issued, from the collectives' time at comm0
 * on) until the compute stream waits for them (side_joined): a dry run's
 * collectives (the analytic estimate's tensor-parallel time) keep of them
 * what the kernels between do not cover. */
static void side_issued(struct ctx *c, double comm0)
{
	c->dry_side_s = c->dry_comm_s - comm0;
	c->dry_side_k = c->dry_s;
}

static void side_joined(struct ctx *c, int r)
{
	se_event_wait(c, r, S_TP, S_COMPUTE);
	c->dry_comm_s -= fmin(c->dry_side_s, c->dry_s - c->dry_side_k);
	c->dry_side_s = 0;
}

/* The side stream's collectives over b s h: a reduce-scatter (rs: of a
 * row-parallel GEMM's bf16 output, or a column-parallel one's input
 * gradient) and then an all-gather of gb bytes a value where gb > 0.
 * Userbuffers gathers what the NCCL path gathers (gather_bytes): module/
 * base.py fill_userbuffers_buffer_for_all_gather copies a per-tensor fp8
 * tensor's uint8 data into the communicator's buffer (Megatron-LM's
 * initialize_tp_communicators passes UserBufferQuantizationMode.FP8 under
 * --fp8, and initialize_ub makes every all-gather buffer, qkv_fprop,
 * fc1_fprop, proj_dgrad, fc2_dgrad and the bulk qkv_dgrad, fc1_dgrad,
 * torch.uint8: fp8_buf), an mxfp8 one's data of one usage with its scales
 * all-gathered beside it (and linear.py's backward gathers the output
 * gradient's column-wise copy again for wgrad, over the *_wgrad buffer:
 * both usages, as KPERF_GATHER_BOTH); the reduce-scatter buffers
 * (proj_fprop, fc2_fprop, qkv_wgrad, fc1_wgrad) stay bf16. */
static void tp_side_begin(struct ctx *c, int r, const struct shape *z, int rs, double gb)
{
	double comm0 = c->dry_comm_s;
	se_event_wait(c, r, S_COMPUTE, S_TP);
	if (rs)
		tp_coll(c, r, z, S_TP, GC_REDUCE_SCATTER);
	if (gb > 0)
		tp_coll_eb(c, r, z, S_TP, GC_ALL_GATHER, z->h, gb);
	side_issued(c, comm0);
}

static void tp_side_end(struct ctx *c, int r)
{
	side_joined(c, r);
}

/* Bytes of an elementwise pass over n values of the activations' dtype
 * (kperf_act_bytes: bf16's 2, fp32's 4) reading `in` tensors and writing
 * one. */
static double ew(const struct ctx *c, double n, double in)
{
	return n * c->ab * (in + 1);
}

void sl_ctx_bytes(struct ctx *c)
{
	c->ab = kperf_act_bytes(c->in->lay.dtype);
	c->rb = kperf_resid_bytes(c->in->lay.dtype, c->in->lay.fp32_residual);
}

/* Bytes of a value of the residual stream (kperf_resid_bytes: the
 * activations' kperf_act_bytes, 4 under fp32_residual) and of the
 * activations the modules read and write (kperf_act_bytes). */
static double rb_of(const struct ctx *c)
{
	return c->rb;
}

static double ab_of(const struct ctx *c)
{
	return c->ab;
}

/* Megatron-LM's bias-dropout-add over nh values (bias_dropout_add_fused_train,
 * megatron/core/fusions/fused_bias_dropout.py): the branch (the
 * activations' dtype) and the residual (the stream's: fp32 under
 * fp32_residual, the branch cast up to it in the same pass) read, the sum
 * written in the stream's dtype, and with dropout its one-byte mask; at p 0
 * torch.nn.functional.dropout returns its input (aten/src/ATen/native/
 * Dropout.cpp) and the kernel is the bias and residual add alone.  Plain
 * PyTorch's residual add (x + branch) is the same pass. */
static double bda_bytes(const struct ctx *c, double nh)
{
	return nh * (ab_of(c) + 2 * rb_of(c)) + (layout_dropout(&c->in->lay) ? nh : 0);
}

/* Under fp32_residual, the residual stream's nh values cast to the
 * modules' dtype (Megatron-LM's TELayerNormColumnParallelLinear.forward
 * x.to(self.layer_norm_weight.dtype), PR #6272; TE's LayerNorm op and
 * MambaLayer cast likewise): fp32 read, bf16 written, before each norm
 * that reads the stream; none where the stream is the activations'
 * dtype. */
static void resid_cast(struct ctx *c, int r, double nh)
{
	if (rb_of(c) != ab_of(c))
		sl_kernel(c, r, KC_ELEMENTWISE, "elementwise_kernel<copy> (residual to bf16)",
			  nh * (rb_of(c) + ab_of(c)));
}

/* Its backward (autograd's ToCopyBackward0): the gradient cast back to
 * the stream's fp32, bf16 read, fp32 written. */
static void resid_cast_bwd(struct ctx *c, int r, double nh)
{
	if (rb_of(c) != ab_of(c))
		sl_kernel(c, r, KC_ELEMENTWISE, "elementwise_kernel<copy> (gradient to fp32)",
			  nh * (rb_of(c) + ab_of(c)));
}

/* A dropout's backward over nh values of the residual stream (the
 * gradient and the mask read, the gradient written, in the stream's
 * dtype); none without dropout, where the gradient passes through. */
static void dropout_bwd_of(struct ctx *c, int r, const char *name, double nh)
{
	if (layout_dropout(&c->in->lay))
		sl_kernel(c, r, KC_ELEMENTWISE, name, nh * rb_of(c) * 2 + nh);
}

/* Under fp32_residual the gradient of nh values cast from the stream's
 * fp32 to bf16: the backward of a cast up (the bias-dropout-add's,
 * the embedding's embeddings.float()). */
static void grad_cast_down(struct ctx *c, int r, const char *name, double nh)
{
	if (rb_of(c) != ab_of(c))
		sl_kernel(c, r, KC_ELEMENTWISE, name, nh * (rb_of(c) + ab_of(c)));
}

/* A bias-dropout-add's backward: its dropout's, then the branch's
 * gradient cast down where the add cast the branch up. */
static void dropout_bwd(struct ctx *c, int r, const char *name, double nh)
{
	dropout_bwd_of(c, r, name, nh);
	grad_cast_down(c, r, "elementwise_kernel<copy> (gradient to bf16)", nh);
}

/* The flash-attention op as PyTorch records it, [b, s, heads, d] per
 * tensor: forward the query, key and value, backward the output's
 * gradient first (cost_attn_shape reads them back).  key: 3, dtype,
 * backward, b, s, query heads, key-value heads, Q's and K's d, V's d. */
static void attn_op_fmt(const double *key, const char **op, char *dims, size_t nd, char *types,
			size_t nt)
{
	const char *ty = torch_type((int)key[1]);
	char q[64], k[64], v[64], o[64];

	snprintf(q, sizeof(q), "[%.0f, %.0f, %.0f, %.0f]", key[3], key[4], key[5], key[7]);
	snprintf(k, sizeof(k), "[%.0f, %.0f, %.0f, %.0f]", key[3], key[4], key[6], key[7]);
	snprintf(v, sizeof(v), "[%.0f, %.0f, %.0f, %.0f]", key[3], key[4], key[6], key[8]);
	snprintf(o, sizeof(o), "[%.0f, %.0f, %.0f, %.0f]", key[3], key[4], key[5], key[8]);
	if (key[2] != 0) {
		*op = "aten::_flash_attention_backward";
		snprintf(dims, nd, "[%s, %s, %s, %s]", o, q, k, v);
		snprintf(types, nt, "[\"%s\", \"%s\", \"%s\", \"%s\"]", ty, ty, ty, ty);
	} else {
		*op = "aten::_flash_attention_forward";
		snprintf(dims, nd, "[%s, %s, %s]", q, k, v);
		snprintf(types, nt, "[\"%s\", \"%s\", \"%s\"]", ty, ty, ty);
	}
}

/* The sliding window of the layer rank r is building (llm_window; a dry
 * run's, c->dry_window), 0 for one attending to the whole prefix. */
/* The layer whose kind (MoE or dense, window) rank r's current layer has:
 * an MTP depth's is the last decoder layer's (Megatron-LM builds it from
 * the decoder's last layer spec). */
static int kind_layer(const struct ctx *c, int r)
{
	return c->rk[r].mtp ? c->in->m.layers - 1 : c->rk[r].layer;
}

static int layer_window(const struct ctx *c, int r)
{
	return c->dry ? c->dry_window : llm_window(&c->in->m, kind_layer(c, r));
}

static void attn_op(struct ctx *c, const struct shape *z, int dtype, int bwd)
{
	/* Megatron-LM replicates key-value heads when fewer than the ranks. */
	double kv = z->kv < z->t ? 1 : z->kv / z->t;
	double key[OPKEY] = {3, dtype, bwd, z->b, z->s, z->a / z->t, kv, z->dqk, z->dv};

	se_record_op(c, key, attn_op_fmt);
}

/*
 * Context parallelism: ring attention as Transformer Engine runs it
 * (AttnFuncWithCPAndKVP2P, Megatron-LM's --context-parallel-size with the
 * p2p communication type).  Each rank holds s / cp tokens of every
 * sequence, as two chunks of the 2 cp into which the sequence is cut (rank
 * i the i-th and the (2 cp - 1 - i)-th: the causal load balance), so that
 * every rank's share of the causal attention is the same.  cp steps: step
 * 0 the rank's own block (causal, s/cp x s/cp), each later step a block of
 * half the work (half the queries against the whole received key-value
 * block, or the whole queries against half of it: s/(2cp) x s/cp, no
 * mask).  The key-value block for step i + 1 is sent to the next rank and
 * received from the previous one while step i computes (double buffered:
 * the transfer waits for step i - 1's kernel, step i + 1 for the transfer).
 * Each later step's output is merged into the running one by its
 * log-sum-exp (a memory-bound correction).  Backward: the same ring, each
 * transfer carrying the key-value block and its accumulated gradient
 * (twice the bytes); under fp8 attention (fp8_attention) each transfer
 * carries the block alone and the gradients of every step go by one
 * all-to-all over the ring's ranks issued before the last step and waited
 * after it (context_parallel.py backward: all_to_all_single of the uint8
 * dkv_send_buffer at i == cp_size - 1), the blocks' bytes a value
 * kperf_cp_kv_bytes's.  The transfers ride the side stream that TP overlap
 * uses (S_TP; they never run at once within a layer).  Each is a GN_COLL
 * of one member present (its neighbours are not simulated), so contention
 * slows it and the attention beside it, as NCCL's SendRecv kernel takes
 * SMs (docs/MODEL.md, "Contention").
 */
/* The values of the rank's K and V blocks (its key-value heads', or one
 * head where they are fewer than the tensor-parallel ranks). */
static double cp_kv_values(const struct shape *z)
{
	double kv = z->kv < z->t ? 1 : z->kv / z->t;
	return 2 * z->b * z->s * kv * z->d;
}

/* Bytes a value of those blocks (grad 0) or of their gradients (grad 1)
 * on the wire: kperf_cp_kv_bytes (fp8 under --fp8-attention). */
static double cp_kv_eb(const struct ctx *c, int grad)
{
	const struct layout *l = &c->in->lay;
	return kperf_cp_kv_bytes(l->dtype, l->fp8_recipe, l->fp8_attention, grad);
}

/* A ring step's transfer in process group pg (the rank's "cp.R"), of
 * elements of eb bytes (Kineto's dtype: Byte for fp8's uint8 data). */
static void cp_transfer(struct ctx *c, int r, const struct shape *z, double bytes, double eb,
			const char *pg)
{
	se_event_wait(c, r, S_COMPUTE, S_TP);
	se_collective_dt(c, r, S_TP, GC_SEND_RECV, "ncclDevKernel_SendRecv", bytes,
			 (struct comm_group){2, z->cp_per_node}, pg, se_dtype(c, eb));
}

/*
 * Llama 3's all-gather context parallelism (Dubey et al. 2024, section
 * 3.3.2): the rank's K and V are all-gathered over the cp ranks (cp x its
 * key-value block, on the compute stream: the latency is exposed, as the
 * paper says; GQA keeps it small), then one attention kernel of the
 * rank's queries (its two load-balanced chunks, s tokens) against the
 * keys before them: on average half the sequence, timed as s queries
 * over s_full / 2 keys without a mask.  Backward: the attention's
 * backward, then the gathered K and V gradients reduce-scattered.
 */
static void allgather_attn(struct ctx *c, int r, const struct shape *z, int bwd)
{
	int dt = layout_attn_dtype(&c->in->lay), pass = bwd ? 1 : 0;
	double heads = z->a / z->t, d = z->d, t;
	double f = (bwd ? 8 : 4) * z->b * z->s_full * z->s_full * z->w / z->t / z->cp;
	double gathered = cp_kv_values(z) * z->cp, eb = cp_kv_eb(c, 0);
	int cap = c->in->hw ? hw_domain(c->in->hw) / (int)z->t : 1;
	struct comm_group g = {z->cp, comm_per_domain(z->cp, cap)};
	char pg[32];
	snprintf(pg, sizeof(pg), "cp.%d", r);
	if (!bwd)
		se_collective_dt(c, r, S_COMPUTE, GC_ALL_GATHER, "ncclDevKernel_AllGather_RING_LL",
				 gathered * eb, g, pg, se_dtype(c, eb));
	t = ktime(c, KC_ATTENTION, dt, f, ew(c, (bwd ? 4 : 3) * z->b * z->s * z->w / z->t, 1),
		  kperf_attn_s(c->hw, dt, pass, z->b, heads, z->s, z->s_full / 2, d, 0));
	se_launch(c, r, S_COMPUTE, GN_KERNEL,
		  bwd ? "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel" : "flash_fwd_kernel", t,
		  NULL);
	if (bwd) /* the gradients in the autocast's dtype (kperf_cp_kv_bytes) */
		se_collective(c, r, S_COMPUTE, GC_REDUCE_SCATTER,
			      "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", gathered * z->ab, g,
			      pg);
}

/* The ring's cp ranks as one group (its gradients' all-to-all under fp8
 * attention): within an NVLink domain where the layer's cp x tp ranks fit
 * (cp_per_node), else as many in a domain as its tensor-parallel groups
 * leave room for (allgather_attn's), one where Ulysses' ranks fill it
 * (a2a+p2p's ring over the cp / a groups). */
static struct comm_group cp_ring_group(const struct ctx *c, const struct shape *z)
{
	int d = c->in->hw ? hw_domain(c->in->hw) : 1, cap = d / (int)z->t;
	if (z->cp_per_node == 2)
		return (struct comm_group){z->cp, z->cp};
	if (layout_cp_a2a(&c->in->lay, d) > 1)
		cap = 1;
	return (struct comm_group){z->cp, comm_per_domain(z->cp, cap > 0 ? cap : 1)};
}

static void ring_attn(struct ctx *c, int r, const struct shape *z, int bwd)
{
	int dt = layout_attn_dtype(&c->in->lay), pass = bwd ? 1 : 0;
	double heads = z->a / z->t, d = z->d;
	/* The model FLOPs of the rank's share (4 b s^2 w / (t cp) forward,
	 * twice that backward), spread evenly over the steps. */
	double f = (bwd ? 8 : 4) * z->b * z->s_full * z->s_full * z->w / z->t / z->cp / z->cp;
	/* Under fp8 attention the backward's transfers carry K and V alone,
	 * the gradients going by one all-to-all at the last step (a2a:
	 * kperf_cp_kv_bytes); else each carries the block and its gradient. */
	int a2a = bwd && c->in->lay.fp8_attention, comm = !(c->dry && c->dry_comm);
	double eb = cp_kv_eb(c, 0), n = cp_kv_values(z);
	double bytes = n * eb * (bwd && !a2a ? 2 : 1), out = z->b * z->s * z->w / z->t;
	char pg[32];
	snprintf(pg, sizeof(pg), "cp.%d", r); /* once, not a step (issue 38) */
	for (int i = 0; i < z->cp; i++) {
		double sq = i ? z->s / 2 : z->s, t;
		if (i > 0) /* step i's key-value block has arrived */
			se_event_wait(c, r, S_TP, S_COMPUTE);
		/* (a dry run's launches and events too; its transfer's time
		 * is not a tensor-parallel collective's: synth_layer_tp_s) */
		if (i < z->cp - 1 && comm)
			cp_transfer(c, r, z, bytes, eb, pg);
		if (i == z->cp - 1 && a2a && comm) { /* dkv_send_buffer's all-to-all */
			se_event_wait(c, r, S_COMPUTE, S_TP);
			se_collective_dt(c, r, S_TP, GC_ALL_TO_ALL,
					 "ncclDevKernel_SendRecv_alltoall",
					 z->cp * n * cp_kv_eb(c, 1), cp_ring_group(c, z), pg,
					 se_dtype(c, cp_kv_eb(c, 1)));
		}
		t = ktime(c, KC_ATTENTION, dt, f, ew(c, 3 * z->b * sq * z->w / z->t, 1),
			  kperf_attn_s(c->hw, dt, pass, z->b, heads, sq, z->s, d, i == 0));
		se_launch(c, r, S_COMPUTE, GN_KERNEL,
			  bwd ? "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel" : "flash_fwd_kernel",
			  t, NULL);
		if (i > 0 && !bwd) /* merge by log-sum-exp: out, lse, step out in */
			sl_kernel(c, r, KC_ELEMENTWISE, "flash_attn_fwd_out_correction",
				  ew(c, out, 2) + 8 * z->b * z->s * heads);
	}
	if (a2a && comm) /* the gradients received after the last step */
		se_event_wait(c, r, S_TP, S_COMPUTE);
}

static void flash(struct ctx *c, int r, const struct shape *z, int dt, int bwd);
static void more_launches(struct ctx *c, int n);

/* One rank's Q, K and V (qkv) or its attention output (else) on one TP
 * rank: the all-to-alls' buffers (Ulysses). */
double sl_cp_a2a_bytes(const struct shape *z, int qkv)
{
	double kv = z->kv < z->t ? 1 : z->kv / z->t, q = z->a / z->t;
	return z->b * z->s * (qkv ? q * z->dqk + kv * (z->dqk + z->dv) : q * z->dv) * z->ab;
}

/* The shape the attention runs at after Ulysses' all-to-all over a of
 * the cp ranks: a-th of the heads (and key-value heads) over a times the
 * tokens, the ring over the other cp / a (one step: plain flash). */
void sl_cp_inner(const struct shape *z, int a, struct shape *o)
{
	*o = *z;
	o->a = z->a / a;
	o->kv = z->kv / a;
	o->w = z->w / a;
	o->cp = z->cp / a;
	o->s = z->s * a;
}

/*
 * Context parallelism's attention by its form (layout_cp_comm).  Ulysses
 * (Transformer Engine's AttnFuncWithCPAndQKVOA2A, cp_comm_type "a2a"):
 * Q, K and V all-to-all'd over the a ranks before the attention (each
 * rank then holds the whole sequence of a-th of the heads), the output
 * back after it; backward the output's gradient before, Q's, K's and
 * V's gradients after.  The all-to-alls run before and after the kernel
 * that needs them (exposed, on the compute stream).  "a2a+p2p": the same
 * within the a ranks of an NVLink domain, and the ring over the cp / a
 * groups (AttnFuncWithCPAndKVP2P with cp_group_a2a).
 */
static void cp_attn(struct ctx *c, int r, const struct shape *z, int bwd)
{
	int a = layout_cp_a2a(&c->in->lay, c->in->hw ? hw_domain(c->in->hw) : 1);
	struct shape in;
	char pg[32];
	struct comm_group g;

	if (c->in->lay.cp_comm == LAYOUT_CP_ALLGATHER) {
		allgather_attn(c, r, z, bwd);
		return;
	}
	if (a <= 1) {
		ring_attn(c, r, z, bwd);
		return;
	}
	g = (struct comm_group){
	    a, comm_per_domain(a, c->in->hw ? hw_domain(c->in->hw) / (int)z->t : 1)};
	snprintf(pg, sizeof(pg), "cpa.%d", r);
	se_collective(c, r, S_COMPUTE, GC_ALL_TO_ALL, "ncclDevKernel_SendRecv_alltoall",
		      sl_cp_a2a_bytes(z, !bwd), g, pg);
	sl_cp_inner(z, a, &in);
	if (in.cp > 1)
		ring_attn(c, r, &in, bwd);
	else
		flash(c, r, &in, layout_attn_dtype(&c->in->lay), bwd);
	se_collective(c, r, S_COMPUTE, GC_ALL_TO_ALL, "ncclDevKernel_SendRecv_alltoall",
		      sl_cp_a2a_bytes(z, bwd), g, pg);
}

/* A flash-attention kernel of the layer (bwd: its backward, twice the
 * forward's FLOPs); a windowed layer's runs its band (FLOPs too). */
static void flash(struct ctx *c, int r, const struct shape *z, int dt, int bwd)
{
	int win = layer_window(c, r);
	double f = 2 * z->b * z->s * z->s * z->w / z->t;
	double t =
	    ktime(c, KC_ATTENTION, dt, (bwd ? 4 : 2) * f * llm_window_ratio(&c->in->m, win),
		  ew(c, (bwd ? 4 : 3) * z->b * z->s * z->w / z->t, 1),
		  kperf_attn_win_s(c->hw, dt, bwd, z->b, z->a / z->t, z->s, z->s, z->d, 1, win));
	attn_op(c, z, dt, bwd);
	/* Backward: FlashAttention-2/3's and cuDNN's preprocessing (the
	 * output's dot with its gradient) and the query gradient's conversion
	 * from fp32 run as kernels of their own (flash_bwd_launch_template.h
	 * compute_dot_do_o, convert_dQ; cuDNN's compute_dot_do_o and
	 * convert_dq_to_16bits in our H100 traces), timed with it: the
	 * attention rows time the whole backward.  Plain PyTorch's
	 * scaled_dot_product_attention runs cuDNN's graphs on Hopper, and
	 * cudnn-frontend zeroes their workspace before each (graph execute's
	 * run_auxiliary_kernels, a cudaMemsetAsync: one under
	 * _cudnn_attention_forward and one under _cudnn_attention_backward a
	 * layer in our H100 traces): a launch more each way. */
	more_launches(c, (bwd ? 2 : 0) + (c->in->lay.framework == LAYOUT_FW_TORCH));
	se_launch(c, r, S_COMPUTE, GN_KERNEL,
		  bwd ? "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel" : "flash_fwd_kernel", t,
		  NULL);
}

/*
 * Attention core of one layer on one tensor-parallel rank (causal, as GPT
 * trains).  Flash attention is one kernel each way, timed by the kernel
 * model by sequence, heads and head dim (kperf_attn_s); its FLOPs are
 * counted as 4 b s^2 w / t forward and twice that backward (the model
 * FLOPs, llm.h).  Without it (Megatron before FlashAttention) the
 * b a s^2 / t scores are materialised: two batched GEMMs around a fused
 * scale-mask-softmax and a dropout forward, four GEMMs, the dropout and
 * the softmax gradients backward, each pass over the scores memory-bound;
 * llm_score_bytes() counts the same traffic.  The core runs in bf16 unless
 * fp8_attention (layout_attn_dtype).
 */
void sl_attn_fwd(struct ctx *c, int r, const struct shape *z)
{
	int dt = layout_attn_dtype(&c->in->lay);
	if (z->cp > 1) {
		cp_attn(c, r, z, 0);
		return;
	}
	double heads = z->a / z->t, n = z->b * z->a * z->s * z->s / z->t;
	if (c->in->lay.flash) {
		flash(c, r, z, dt, 0);
		return;
	}
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_bmm_scores", dt, z->b * heads, z->s,
	      z->s, z->dqk);
	sl_kernel(c, r, KC_SOFTMAX, "scaled_masked_softmax_warp_forward", LLM_SCORE_SOFTMAX * n);
	sl_kernel(c, r, KC_ELEMENTWISE, "fused_dropout_kernel", LLM_SCORE_DROPOUT * n);
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_bmm_context", dt, z->b * heads, z->s,
	      z->dv, z->s);
}

static void attn_bwd(struct ctx *c, int r, const struct shape *z)
{
	int dt = layout_attn_dtype(&c->in->lay);
	if (z->cp > 1) {
		cp_attn(c, r, z, 1);
		return;
	}
	double heads = z->a / z->t, n = z->b * z->a * z->s * z->s / z->t;
	if (c->in->lay.flash) {
		flash(c, r, z, dt, 1);
		return;
	}
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_bmm_dprobs", dt, z->b * heads, z->s,
	      z->s, z->dv);
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_bmm_dv", dt, z->b * heads, z->s,
	      z->dv, z->s);
	sl_kernel(c, r, KC_ELEMENTWISE, "masked_scale_kernel_dropout_backward",
		  LLM_SCORE_DROPOUT * n);
	sl_kernel(c, r, KC_SOFTMAX, "scaled_masked_softmax_warp_backward",
		  LLM_SCORE_SOFTMAX_BWD * n);
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_bmm_dq", dt, z->b * heads, z->s,
	      z->dqk, z->s);
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_bmm_dk", dt, z->b * heads, z->s,
	      z->dqk, z->s);
}

/* The kernels that quantise one bf16 tensor of n values for fp8 (fp4)
 * GEMMs as the recipe runs them (kperf_lowp_casts); `what` names the
 * tensor (input, weight, grad), `of` what it is (enum kperf_cast_of). */
static void lowp_cast(struct ctx *c, int r, const char *what, double n, int of)
{
	struct kperf_cast k[KPERF_CASTS_MAX];
	char name[64];
	int nk = kperf_lowp_casts(c->in->lay.dtype, c->in->lay.fp8_recipe, c->in->lay.exec, of,
				  c->in->hw->fp8_any_layout, n, k);
	for (int i = 0; i < nk; i++) {
		if (k[i].named)
			snprintf(name, sizeof(name), "%s_%s", k[i].stem, what);
		else
			snprintf(name, sizeof(name), "%s", k[i].stem);
		sl_kernel(c, r, k[i].kind == HW_MEM_REDUCTION ? KC_REDUCTION : KC_ELEMENTWISE, name,
			  k[i].bytes);
	}
}

/* n fp8 (fp4) GEMMs of a module's forward built: Transformer Engine keeps
 * each one's amaxes for the autocast's reduction (step.c amax_update); a
 * GroupedLinear's experts are a GEMM each (its num_gemms). */
static void fp8_gemms(struct ctx *c, int r, double n)
{
	if (!sl_skip(c) && c->rk[r].phase == PH_FORWARD)
		c->rk[r].fp8_gemms += n;
}

/* Whether a weight is quantised here: on the step's first microbatch,
 * its copies kept for the others and for the backward, or in every
 * microbatch's forward where the recipe keeps none
 * (kperf_lowp_weight_kept: torchao's Float8Linear under torch.compile). */
static int weight_cast_now(const struct ctx *c, int r)
{
	const struct layout *l = &c->in->lay;
	return c->rk[r].phase == PH_FORWARD &&
	       (c->rk[r].mb == 0 || !kperf_lowp_weight_kept(l->dtype, l->fp8_recipe, l->exec));
}

/* What quantises a weight there: its cast (KPERF_CAST_WEIGHT), or where
 * the weight is already fp8 (fp8_param_gather) the column-wise copy
 * post_all_gather_processing makes of it once the step's gather is done
 * (KPERF_CAST_PARAM; here on the first microbatch, where the weight's
 * cast was). */
static int weight_cast_of(const struct ctx *c)
{
	return c->in->lay.fp8_param_gather ? KPERF_CAST_PARAM : KPERF_CAST_WEIGHT;
}

/* LoRA (layout.h lora_rank): every base weight frozen. */
static int frozen(const struct ctx *c)
{
	return layout_lora(&c->in->lay, 0);
}

/*
 * A linear layer's forward GEMM, C[m,n] = A[m,k] W[k,n].  In fp8 (or fp4)
 * Transformer Engine first quantises its input (lowp_cast: its row-wise
 * copy for this GEMM, the column-wise one the weight gradient needs), and
 * the weight once per step, on the step's first microbatch (its copies
 * are kept for the others and for the backward; weight_cast_now).  of:
 * KPERF_CAST_NORMED where the input is the output of the norm fused
 * into the module (ln_norm), else KPERF_CAST_ACT.
 */
static void linear_fwd_of(struct ctx *c, int r, const char *name, double m, double n, double k,
			  int of)
{
	if (sl_low_precision(c->in->lay.dtype)) {
		fp8_gemms(c, r, 1);
		lowp_cast(c, r, "input", m * k, of);
		if (weight_cast_now(c, r))
			lowp_cast(c, r, "weight", k * n, weight_cast_of(c));
	}
	gemm(c, r, name, m, n, k);
}

static void linear_fwd(struct ctx *c, int r, const char *name, double m, double n, double k)
{
	linear_fwd_of(c, r, name, m, n, k, KPERF_CAST_ACT);
}

/*
 * The norm before a column-parallel linear that Megatron's Transformer
 * Engine layer spec fuses into one module (TELayerNormColumnParallelLinear:
 * the dense QKV, FC1 and Mamba's in_proj), over nh values; lora_bit: the
 * LoRA adapter beside that linear (layout.h).  Under fp8 the module's norm
 * kernel quantises its own output (layernorm_linear.py with_quantized_norm;
 * kperf_lowp_norm_out_bytes: delayed scaling writes the fp8 copy, 2 bytes
 * read and 1 written a value), and the linear's input casts are those of
 * a norm's output (KPERF_CAST_NORMED; ln_linear_of).  An adapter needs the
 * norm's bf16 output (Megatron-Bridge's LoRA asks for
 * return_layernorm_output), which turns the fusion off.
 */
static int ln_linear_of(const struct ctx *c, int lora_bit)
{
	return lora_bit >= 0 && layout_lora(&c->in->lay, lora_bit) ? KPERF_CAST_ACT
								   : KPERF_CAST_NORMED;
}

static void ln_norm(struct ctx *c, int r, double nh, int lora_bit)
{
	const struct layout *l = &c->in->lay;
	double ab = ab_of(c),
	       out = ln_linear_of(c, lora_bit) == KPERF_CAST_NORMED
			 ? kperf_lowp_norm_out_bytes(l->dtype, l->fp8_recipe, l->exec)
			 : ab;
	sl_kernel(c, r, KC_NORM, "vectorized_layer_norm_kernel", nh * (ab + out));
}

static void gemm_bwd(struct ctx *c, int r, const char *what, double m, double n, double k);

/* head what tail into buf (96 bytes, cut short as snprintf would)
 * without snprintf's parsing: linear_bwd names two kernels a layer. */
static const char *kname(char *buf, const char *head, const char *what, const char *tail)
{
	const char *part[3] = {head, what, tail};
	size_t n = 0;
	for (int i = 0; i < 3; i++) {
		size_t k = strlen(part[i]);
		k = k < 95 - n ? k : 95 - n;
		memcpy(buf + n, part[i], k);
		n += k;
	}
	buf[n] = '\0';
	return buf;
}

static void linear_bwd(struct ctx *c, int r, const char *what, double m, double n, double k,
		       int bias);
static void linear_bwd_g(struct ctx *c, int r, const char *what, double m, double n, double k,
			 int bias, const struct shape *z, double gb, double rsw);

/* A parameter's gradient (elems values) added into the accumulated one, in
 * every microbatch but the first where the framework accumulates so
 * (synth_acc_bytes): both read, one written. */
static void acc_add(struct ctx *c, int r, double elems)
{
	double eb = synth_acc_bytes(c->in->acc_elem_bytes, &c->in->lay);
	if (eb > 0 && c->rk[r].mb > 0)
		sl_kernel(c, r, KC_ELEMENTWISE, GRAPH_ACC_KERNEL, 3 * elems * eb);
}

/* The next launched kernel's op runs n more kernels than the one timed
 * (its time holds theirs): the host pays their launches (se_launch). */
static void more_launches(struct ctx *c, int n)
{
	c->em.extra = n;
}

/* A norm's backward moving `bytes`: two kernels, the input's gradient and
 * the reduction of the weight's and bias's over the tokens (PyTorch's
 * layer_norm_grad_input_kernel and GammaBetaBackwardCUDAKernel, our H100
 * traces; Transformer Engine's ln_bwd and ln_bwd_finalize kernels,
 * transformer_engine/common/normalization/layernorm/ln_bwd_kernels.cuh),
 * timed as one: the norm class's rows time the whole backward. */
static void norm_bwd(struct ctx *c, int r, double bytes)
{
	more_launches(c, 1);
	sl_kernel(c, r, KC_NORM, "layer_norm_grad_input_kernel", bytes);
}

/* The residual stream's gradient: where a layer's input feeds both its
 * norm and the residual add, autograd sums the two gradients, one add a
 * residual junction and two a layer (torch/csrc/autograd/input_buffer.cpp
 * InputBuffer::accumulate; aten::add under NativeLayerNormBackward0 in
 * our H100 traces): both read, the sum written. */
static void residual_grad(struct ctx *c, int r, double nh)
{
	sl_kernel(c, r, KC_ELEMENTWISE, "vectorized_elementwise_kernel<add> (residual gradient)",
		  nh * rb_of(c) * 3);
}

/* A layer norm's weight and bias over `width` values (replicated over
 * tp). */
static void acc_norm_of(struct ctx *c, int r, double width)
{
	if (frozen(c))
		return;
	acc_add(c, r, width);
	acc_add(c, r, width);
}

static void acc_norm(struct ctx *c, int r, const struct shape *z)
{
	acc_norm_of(c, r, z->h);
}

/*
 * A LoRA adapter beside a linear layer of `in` inputs and `out` outputs
 * (whole, before tp splits them), as Megatron-Bridge's LoRALinear runs
 * it (megatron/bridge/peft/lora_layers.py, utils.py
 * ParallelLinearAdapter): after the base layer, linear_in (A, rank r),
 * linear_out (B), the output scaled by alpha / r and added to the
 * base's; dropout 0 (Bridge's default) runs none.  Both adapter linears
 * are Megatron-Core's ColumnParallelLinear / RowParallelLinear in the
 * parameters' dtype (not Transformer Engine's: bf16 under fp8).  Beside
 * a column-parallel base (row 0: linear_qkv, linear_fc1) A is column
 * parallel on the rank, its output gathered over tp ([b s, r]), B
 * column parallel on out; its input is the base's normed input, gathered
 * by Transformer Engine under sequence parallelism
 * (return_layernorm_output_gathered) except with the TP overlap, where
 * the adapter gathers it itself.  Beside a row-parallel base (row 1:
 * linear_proj, linear_fc2) A is row parallel (its [b s, r] output
 * all-reduced), B column parallel with its output gathered over tp, then
 * split to the sequence-parallel shard (no communication).
 */
static void lora_fwd(struct ctx *c, int r, const struct shape *z, int bit, double in, double out,
		     int row)
{
	double bs = z->b * z->s, t = z->t, R = c->in->lay.lora_rank;
	double sp = c->in->lay.sp ? t : 1;
	int dt = sl_logit_dtype(c->in);
	if (!layout_lora(&c->in->lay, bit))
		return;
	if (!row) {
		if (t > 1 && tp_overlapped(c, z))
			tp_coll_of(c, r, z, S_COMPUTE, GC_ALL_GATHER, in);
		bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_lora_a", dt, 1, bs, R / t,
		      in);
		if (t > 1)
			tp_coll_of(c, r, z, S_COMPUTE, GC_ALL_GATHER, R);
		bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_lora_b", dt, 1, bs, out / t,
		      R);
		sl_kernel(c, r, KC_ELEMENTWISE, "lora_scale_kernel", ew(c, bs * out / t, 1));
		sl_kernel(c, r, KC_ELEMENTWISE, "lora_add_kernel", ew(c, bs * out / t, 2));
		return;
	}
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_lora_a", dt, 1, bs, R, in / t);
	if (t > 1)
		tp_coll_of(c, r, z, S_COMPUTE, GC_ALL_REDUCE, R);
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_lora_b", dt, 1, bs, out / t, R);
	if (t > 1)
		tp_coll_of(c, r, z, S_COMPUTE, GC_ALL_GATHER, out);
	sl_kernel(c, r, KC_ELEMENTWISE, "lora_scale_kernel", ew(c, bs * out / sp, 1));
	sl_kernel(c, r, KC_ELEMENTWISE, "lora_add_kernel", ew(c, bs * out / sp, 2));
}

/* An adapter GEMM's two gradients (forward C[m,n] = A[m,k] W[k,n]) and
 * its weight gradient's accumulation. */
static void lora_gemm_bwd(struct ctx *c, int r, const char *w, double m, double n, double k)
{
	char name[96];
	int dt = sl_logit_dtype(c->in);
	snprintf(name, sizeof(name), "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_%s_dx", w);
	bgemm(c, r, name, dt, 1, m, k, n);
	snprintf(name, sizeof(name), "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_%s_dw", w);
	c->wk = 1; /* a zero-bubble schedule's W pass: the adapters' alone */
	bgemm(c, r, name, dt, 1, k, n, m);
	acc_add(c, r, k * n);
	c->wk = 0;
}

/* Its backward, before the base layer's (autograd reaches the adapter's
 * branch of the sum first): the scale's, B's gradients and its input's
 * gradient all-reduced over tp (ColumnParallelLinear's
 * copy_to_tensor_model_parallel_region), A's gradients.  Column: the
 * gather of A's output splits back (no communication); A's input gradient
 * all-reduced over tp without sequence parallelism, reduce-scattered with
 * the TP overlap, and otherwise added into Transformer Engine's own
 * reduce-scatter.  Row: under sequence parallelism the split's gradient
 * all-gathered first; A's input gradient stays on its rank. */
static void lora_bwd(struct ctx *c, int r, const struct shape *z, int bit, double in, double out,
		     int row)
{
	double bs = z->b * z->s, t = z->t, R = c->in->lay.lora_rank;
	double sp = c->in->lay.sp ? t : 1;
	if (!layout_lora(&c->in->lay, bit))
		return;
	if (!row) {
		sl_kernel(c, r, KC_ELEMENTWISE, "lora_scale_bwd_kernel", ew(c, bs * out / t, 1));
		lora_gemm_bwd(c, r, "lora_b", bs, out / t, R);
		if (t > 1)
			tp_coll_of(c, r, z, S_COMPUTE, GC_ALL_REDUCE, R);
		lora_gemm_bwd(c, r, "lora_a", bs, R / t, in);
		if (t > 1 && !c->in->lay.sp)
			tp_coll_of(c, r, z, S_COMPUTE, GC_ALL_REDUCE, in);
		else if (t > 1 && tp_overlapped(c, z))
			tp_coll_of(c, r, z, S_COMPUTE, GC_REDUCE_SCATTER, in);
		return;
	}
	sl_kernel(c, r, KC_ELEMENTWISE, "lora_scale_bwd_kernel", ew(c, bs * out / sp, 1));
	if (t > 1 && c->in->lay.sp)
		tp_coll_of(c, r, z, S_COMPUTE, GC_ALL_GATHER, out);
	lora_gemm_bwd(c, r, "lora_b", bs, out / t, R);
	if (t > 1)
		tp_coll_of(c, r, z, S_COMPUTE, GC_ALL_REDUCE, R);
	lora_gemm_bwd(c, r, "lora_a", bs, R, in / t);
}

/*
 * Mixture-of-experts as Megatron-LM's MoELayer runs it
 * (megatron/core/transformer/moe/: moe_layer.py, router.py,
 * token_dispatcher.py, moe_utils.py, experts.py TEGroupedMLP).  On each
 * rank the router scores its n = b s / t tokens (sequence parallel); the
 * dispatcher (layout's moe_dispatcher, sl_moe_colls) brings each expert
 * its tokens; the rank's E / ep experts run as Transformer Engine grouped
 * GEMMs (kperf_grouped_s), M / eloc tokens each; the combine brings the
 * outputs back, weighted by their gates.  The shared experts run as a
 * dense FFN split by tp.  M (mem_moe_tokens) is the busiest rank's load,
 * imbalance and capacity factor included: the collectives and the GEMMs
 * wait for it.  Backward mirrors it with two GEMMs per forward GEMM.
 */

/* Expected distinct groups among a token's k experts, drawn without
 * repeat from E experts placed `per` to a group over `groups` groups:
 * groups (1 - C(E - per, k) / C(E, k)).  DeepEP and HybridEP send a token
 * once to each rank (node) holding any of its experts. */
static double moe_distinct(double E, double per, double k, double groups)
{
	double none = 1;
	for (double i = 0; i < k; i++)
		none *= E - per - i > 0 ? (E - per - i) / (E - i) : 0;
	return groups * (1 - none);
}

int sl_moe_colls(const struct shape *z, struct sl_moe_coll *out)
{
	double routed = z->M / z->etp * z->h * 2; /* the routed copies a rank sends */
	int n = 0;
	if (!z->moe)
		return 0;
	switch (z->disp) {
	case LAYOUT_DISP_ALLGATHER:
		/* MoEAllGatherTokenDispatcher: every token of the tp x ep
		 * group to every rank of it (gather_from_sequence_parallel_
		 * region over tp_ep_group), the routing map (bool) and the
		 * probabilities (fp32) first. */
		if (z->ep * z->etp <= 1)
			return 0;
		out[n++] = (struct sl_moe_coll){GC_ALL_GATHER,
						5 * z->n_tok * z->E * z->ep * z->etp,
						{(int)(z->ep * z->etp), z->tpep_per_node},
						1,
						"tpep"};
		out[n++] = (struct sl_moe_coll){GC_ALL_GATHER,
						2 * z->n_tok * z->h * z->ep * z->etp,
						{(int)(z->ep * z->etp), z->tpep_per_node},
						0,
						"tpep"};
		return n;
	case LAYOUT_DISP_FLEX:
	case LAYOUT_DISP_HYBRIDEP:
		if (z->ep > 1) {
			double dr = moe_distinct(z->E, z->eloc, z->k, z->ep) / z->k;
			int nodes = (int)z->ep / z->ep_per_node;
			if (nodes > 1) {
				/* Across NVLink domains (DeepEP's internode
				 * kernels, HybridEP): RDMA once a token and
				 * domain, to its rail's GPU there, then NVLink
				 * forwarding within the domain to its ranks. */
				double dn =
				    moe_distinct(z->E, z->eloc * z->ep_per_node, z->k, nodes) /
				    z->k;
				out[n++] = (struct sl_moe_coll){
				    GC_ALL_TO_ALL, routed * dn, {nodes, 1}, 0, "epx"};
				if (z->ep_per_node > 1)
					out[n++] =
					    (struct sl_moe_coll){GC_ALL_TO_ALL,
								 routed * dr,
								 {z->ep_per_node, z->ep_per_node},
								 0,
								 "epn"};
			} else {
				out[n++] = (struct sl_moe_coll){GC_ALL_TO_ALL,
								routed * dr,
								{(int)z->ep, z->ep_per_node},
								0,
								"ep"};
			}
		}
		break;
	default:
		if (z->ep > 1)
			out[n++] = (struct sl_moe_coll){
			    GC_ALL_TO_ALL, routed, {(int)z->ep, z->ep_per_node}, 0, "ep"};
	}
	/* With expert tensor parallelism the received tokens are gathered
	 * over the etp ranks (all-to-all based dispatchers). */
	if (z->etp > 1)
		out[n++] = (struct sl_moe_coll){
		    GC_ALL_GATHER, z->M * z->h * 2, {(int)z->etp, z->etp_per_node}, 0, "etp"};
	return n;
}

double sl_moe_a2a_bytes(const struct shape *z)
{
	struct sl_moe_coll cl[SL_MOE_COLLS];
	double b = 0;
	int n = sl_moe_colls(z, cl);
	for (int i = 0; i < n; i++)
		if (cl[i].kind == GC_ALL_TO_ALL && cl[i].g.n == (int)z->ep)
			b += cl[i].bytes;
	for (int i = 0; b == 0 && i < n; i++) /* HybridEP across domains */
		if (cl[i].kind == GC_ALL_TO_ALL)
			b += cl[i].bytes;
	return b;
}

/* The dispatcher's collectives in order, or in reverse (rev) with the
 * all-gathers as reduce-scatters; the routing map's and probabilities'
 * where `routing` (the dispatch's forward alone: what follows a forward
 * reversed is the combine, or the dispatch's backward, and the combine's
 * backward runs the tokens' in order).  a2a_part: the all-to-alls' part
 * (ctx.part; the others are SL_PART_MLP). */
static void moe_colls(struct ctx *c, int r, const struct shape *z, int rev, int routing,
		      int a2a_part)
{
	struct sl_moe_coll cl[SL_MOE_COLLS];
	int n = sl_moe_colls(z, cl);
	char pg[32] = "";
	for (int j = 0; j < n; j++) {
		const struct sl_moe_coll *x = &cl[rev ? n - 1 - j : j];
		int kind = rev && x->kind == GC_ALL_GATHER ? GC_REDUCE_SCATTER : x->kind;
		int a2a = kind == GC_ALL_TO_ALL;
		if (x->routing && !routing)
			continue;
		/* Under the 1F1B all-to-all overlap the all-to-alls are their
		 * own part on the communication stream; the expert-tensor-
		 * parallel gather and reduce-scatter stay with the experts
		 * (dispatch_postprocess, combine_preprocess). */
		c->part_now = a2a ? a2a_part : SL_PART_MLP;
		if (!c->dry) /* (as tp_coll_of) */
			snprintf(pg, sizeof(pg), "%s.%d", x->pg, r);
		/* the routing map (bool) and probabilities (fp32) together:
		 * counted in bytes */
		se_collective_dt(c, r, c->part != SL_PART_ALL && a2a ? S_A2A : S_COMPUTE, kind,
				 kind == GC_ALL_TO_ALL ? "ncclDevKernel_SendRecv_alltoall"
				 : kind == GC_ALL_GATHER
				     ? "ncclDevKernel_AllGather_RING_LL"
				     : "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL",
				 x->bytes, x->g, pg, se_dtype(c, x->routing ? 1 : 2));
	}
}

/* Tokens a rank's grouped GEMMs take per expert: M / eloc, under fp8
 * padded to a multiple of 16, of 32 under mxfp8 and fp4 (TEGroupedMLP's
 * Fp8Padding; Megatron-LM's get_fp8_align_size, get_fp4_align_size). */
static double moe_mloc(const struct ctx *c, const struct shape *z)
{
	const struct layout *l = &c->in->lay;
	double m = z->M / z->eloc,
	       a = l->dtype == HW_FP4 || l->fp8_recipe == LAYOUT_FP8_MXFP8 ? 32 : 16;
	return sl_low_precision(l->dtype) ? ceil(m / a) * a : m;
}

/* A grouped GEMM over the rank's experts: eloc GEMMs of m x k by k x n
 * (Transformer Engine's GroupedLinear), timed by kperf_grouped_s. */
static void grouped(struct ctx *c, int r, const struct shape *z, const char *name, double m,
		    double n, double k)
{
	gemm_of(c, r, name, c->in->lay.dtype, z->eloc, m, n, k, 1);
}

static void grouped_bwd(struct ctx *c, int r, const struct shape *z, const char *what, double m,
			double n, double k)
{
	char name[96];
	if (sl_low_precision(c->in->lay.dtype))
		lowp_cast(c, r, "grad", m * n * z->eloc, KPERF_CAST_ACT);
	snprintf(name, sizeof(name), "cutlass_grouped_gemm_bf16_%s_dx", what);
	grouped(c, r, z, name, m, k, n);
	snprintf(name, sizeof(name), "cutlass_grouped_gemm_bf16_%s_dw", what);
	c->wk = 1;
	grouped(c, r, z, name, k, n, m);
	acc_add(c, r, z->eloc * k * n);
	c->wk = 0;
}

/* The router (router.py TopKRouter, unfused: --moe-router-fusion off, its
 * default): the gating GEMM (in bf16 under fp8, as Transformer Engine
 * leaves it), the scores' softmax or sigmoid (fp32 n x E read and
 * written), their top-k (the scores read, k indices and values written),
 * the dense probabilities and routing map scattered from them (4 + 1
 * bytes an entry written), and the load-balancing loss
 * (switch_load_balancing_loss_func: the scores again for it, and the sums
 * of the probabilities and of the routing map over the tokens).
 * Backward: the loss's and the scatter's gradients, the top-k's and the
 * score function's, the GEMM's two. */
static void router_fwd(struct ctx *c, int r, const struct shape *z)
{
	int dt = sl_low_precision(c->in->lay.dtype) ? HW_BF16 : c->in->lay.dtype;
	double nE = z->n_tok * z->E, nk = z->n_tok * z->k;
	int sig = c->in->m.router == LLM_ROUTER_SIGMOID;
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_router", dt, 1, z->n_tok, z->E, z->h);
	sl_kernel(c, r, KC_SOFTMAX, sig ? "moe_router_sigmoid" : "moe_router_softmax", 8 * nE);
	sl_kernel(c, r, KC_SOFTMAX, "moe_router_topk", 4 * nE + 12 * nk);
	sl_kernel(c, r, KC_ELEMENTWISE, "moe_router_scatter_probs_map", 5 * nE + 12 * nk);
	sl_kernel(c, r, KC_SOFTMAX, "moe_aux_loss_scores", 8 * nE);
	sl_kernel(c, r, KC_REDUCTION, "moe_aux_loss_sums", 5 * nE);
}

static void router_bwd(struct ctx *c, int r, const struct shape *z)
{
	int dt = sl_low_precision(c->in->lay.dtype) ? HW_BF16 : c->in->lay.dtype;
	double nE = z->n_tok * z->E, nk = z->n_tok * z->k;
	sl_kernel(c, r, KC_SOFTMAX, "moe_aux_loss_scores_bwd", 12 * nE);
	sl_kernel(c, r, KC_ELEMENTWISE, "moe_router_scatter_probs_bwd", 4 * nE + 8 * nk);
	sl_kernel(c, r, KC_SOFTMAX, "moe_router_topk_bwd", 8 * nE + 8 * nk);
	sl_kernel(c, r, KC_SOFTMAX, "moe_router_score_bwd", 12 * nE);
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_router_dx", dt, 1, z->n_tok, z->h,
	      z->E);
	c->wk = 1;
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_router_dw", dt, 1, z->h, z->E,
	      z->n_tok);
	c->wk = 0;
}

/*
 * Permutation (moe_utils.py permute / unpermute, unfused: Megatron's
 * --moe-permute-fusion is off by default) of `rows` tokens whose routing
 * map has `map` entries into `out` copies in expert order: the map
 * transposed (bool, read and written), the token indices selected by it
 * (masked_select: the map and the expanded int64 indices read, out
 * indices written), the probabilities likewise (fp32 transposed, then
 * selected), then the tokens gathered (index_select: out rows of h bf16
 * read and written, their indices read).  Unpermute: the copies weighted
 * by their probabilities (read, written), the output zeroed and the
 * copies scatter-added into it.  Backward the mirror passes: the
 * permutation's gradient is an unpermute, the unpermutation's a permute
 * (the probabilities' gradient a gather).
 */
static void permute(struct ctx *c, int r, const struct shape *z, double map, double out, int bwd)
{
	double h2 = 2 * z->h;
	sl_kernel(c, r, KC_ELEMENTWISE, "moe_permute_map_transpose", 2 * map);
	sl_kernel(c, r, KC_ELEMENTWISE, "moe_permute_masked_select_indices", 9 * map + 8 * out);
	sl_kernel(c, r, KC_ELEMENTWISE, "moe_permute_probs_select", 13 * map + 4 * out);
	sl_kernel(c, r, KC_ELEMENTWISE,
		  bwd ? "moe_unpermute_bwd_index_select" : "moe_permute_index_select",
		  2 * out * h2 + 8 * out);
}

static void unpermute(struct ctx *c, int r, const struct shape *z, double rows, double out, int bwd)
{
	double h2 = 2 * z->h;
	sl_kernel(c, r, KC_ELEMENTWISE,
		  bwd ? "moe_permute_bwd_probs_mul" : "moe_unpermute_probs_mul",
		  2 * out * h2 + 4 * out);
	sl_kernel(c, r, KC_ELEMENTWISE, "moe_unpermute_zeros", rows * h2);
	sl_kernel(c, r, KC_ELEMENTWISE,
		  bwd ? "moe_permute_bwd_scatter_add" : "moe_unpermute_scatter_add",
		  out * h2 + 8 * out + 2 * rows * h2);
}

/* Tokens a rank receives before its local permute: the routed copies
 * (alltoall: the source permuted them), each distinct token once (flex:
 * DeepEP dedups), the whole tp x ep group's (allgather). */
static double moe_received(const struct shape *z)
{
	switch (z->disp) {
	case LAYOUT_DISP_ALLGATHER:
		return z->n_tok * z->ep * z->etp;
	case LAYOUT_DISP_FLEX:
	case LAYOUT_DISP_HYBRIDEP:
		return z->ep > 1 ? z->M * moe_distinct(z->E, z->eloc, z->k, z->ep) / z->k : z->M;
	default:
		return z->M;
	}
}

/* What runs before the experts (forward; bwd: its gradient, after them),
 * and after them (forward; bwd: before them).  alltoall: the source
 * permutes its tokens into expert order (n tokens, n E map, n k copies),
 * the collectives, then, with more than one local expert and ep > 1, the
 * received chunks sorted by local expert (sort_chunks_by_idxs: M rows
 * read and written).  allgather: the collectives, then the gathered
 * tokens permuted for the local experts (their n ep etp x eloc map, M
 * copies).  flex: DeepEP's dispatch, then the received tokens permuted
 * into the M copies.  hybridep: the permute fused into its dispatch. */
static void moe_dispatch(struct ctx *c, int r, const struct shape *z, int bwd)
{
	double rows = moe_received(z);
	int sort = z->disp == LAYOUT_DISP_ALLTOALL && z->eloc > 1 && z->ep > 1;
	if (!bwd) {
		if (z->disp == LAYOUT_DISP_ALLTOALL)
			permute(c, r, z, z->n_tok * z->E, z->n_tok * z->k, 0);
		moe_colls(c, r, z, 0, 1, SL_PART_DISPATCH);
		c->part_now = SL_PART_MLP;
		if (sort)
			sl_kernel(c, r, KC_ELEMENTWISE, "moe_sort_chunks_by_idxs", 4 * z->M * z->h);
		if (z->disp == LAYOUT_DISP_ALLGATHER || z->disp == LAYOUT_DISP_FLEX)
			permute(c, r, z, rows * z->eloc, z->M, 0);
		return;
	}
	if (z->disp == LAYOUT_DISP_ALLGATHER || z->disp == LAYOUT_DISP_FLEX)
		unpermute(c, r, z, rows, z->M, 1);
	if (sort)
		sl_kernel(c, r, KC_ELEMENTWISE, "moe_sort_chunks_by_idxs_bwd", 4 * z->M * z->h);
	moe_colls(c, r, z, 1, 0, SL_PART_DISPATCH);
	c->part_now = SL_PART_ATTN;
	if (z->disp == LAYOUT_DISP_ALLTOALL)
		unpermute(c, r, z, z->n_tok, z->n_tok * z->k, 1);
}

static void moe_combine(struct ctx *c, int r, const struct shape *z, int bwd)
{
	double rows = moe_received(z);
	int sort = z->disp == LAYOUT_DISP_ALLTOALL && z->eloc > 1 && z->ep > 1;
	if (!bwd) {
		if (z->disp == LAYOUT_DISP_ALLGATHER || z->disp == LAYOUT_DISP_FLEX)
			unpermute(c, r, z, rows, z->M, 0);
		if (sort)
			sl_kernel(c, r, KC_ELEMENTWISE, "moe_sort_chunks_by_idxs", 4 * z->M * z->h);
		moe_colls(c, r, z, 1, 0, SL_PART_COMBINE);
		c->part_now = SL_PART_CMB_COMP;
		if (z->disp == LAYOUT_DISP_ALLTOALL)
			unpermute(c, r, z, z->n_tok, z->n_tok * z->k, 0);
		return;
	}
	if (z->disp == LAYOUT_DISP_ALLTOALL)
		permute(c, r, z, z->n_tok * z->E, z->n_tok * z->k, 1);
	moe_colls(c, r, z, 0, 0, SL_PART_COMBINE);
	c->part_now = SL_PART_MLP;
	if (sort)
		sl_kernel(c, r, KC_ELEMENTWISE, "moe_sort_chunks_by_idxs_bwd", 4 * z->M * z->h);
	if (z->disp == LAYOUT_DISP_ALLGATHER || z->disp == LAYOUT_DISP_FLEX)
		permute(c, r, z, rows * z->eloc, z->M, 1);
}

/* Under fp8, each expert's tokens padded to a multiple of 16 and the
 * output unpadded (TEGroupedMLP's Fp8Padding / Fp8Unpadding: a copy of
 * the M rows each). */
static void moe_pad(struct ctx *c, int r, const struct shape *z, const char *name)
{
	if (sl_low_precision(c->in->lay.dtype))
		sl_kernel(c, r, KC_ELEMENTWISE, name, 4 * z->M * z->h);
}

/* The shared experts: a dense FFN split by tp, with sequence parallelism
 * its input all-gathered and its output reduce-scattered, added to the
 * routed experts' output (Megatron-LM's moe/shared_experts.py
 * SharedExpertMLP, an MLP of TEColumnParallelLinear FC1 and
 * TERowParallelLinear FC2; an MoE layer with tp > 1 is sequence parallel,
 * layout_check). */
static void shared_fwd(struct ctx *c, int r, const struct shape *z)
{
	double bs = z->b * z->s, t = z->t, sf = z->shared * z->fe;
	if (z->shared <= 0)
		return;
	/* (beside the dispatcher Megatron gathers explicitly, bf16) */
	if (t > 1)
		tp_coll_eb(c, r, z, c->kstream, GC_ALL_GATHER, z->h,
			   c->kstream == S_COMPUTE ? te_linear_gather_bytes(c, KPERF_GATHER_ROW)
						   : z->ab);
	linear_fwd(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_shared_fc1", bs,
		   z->shared * z->fe_in / t, z->h);
	sl_kernel(c, r, KC_ELEMENTWISE, z->gated ? "swiglu_fwd_kernel" : "gelu_fwd_kernel",
		  ew(c, bs * sf / t, z->gated ? 2 : 1));
	linear_fwd(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_shared_fc2", bs, z->h, sf / t);
	if (t > 1)
		tp_coll(c, r, z, c->kstream, GC_REDUCE_SCATTER);
	sl_kernel(c, r, KC_ELEMENTWISE, "vectorized_elementwise_kernel<add>",
		  ew(c, z->n_tok * z->h, 2));
}

/* Their backward: FC2's output gradient gathered (the reduce-scatter's
 * backward), FC2's gradients, the activation's, FC1's.  FC1 is Transformer
 * Engine's column-parallel Linear (linear.py backward): its saved input
 * shard gathered again beside its input gradient's GEMM and that gradient
 * reduce-scattered beside its weight gradient's (linear_bwd_g); the
 * gathers quantised under fp8 (te_linear_gather_bytes, its column-wise copy;
 * FC2's output gradient's GATHER_GRAD).  Beside the dispatcher (moe_shared_side) Megatron
 * turns the Linears' own communication off (SharedExpertMLP.__init__:
 * parallel_mode None, the gather and reduce-scatter explicit in
 * pre_forward_comm and post_forward_comm on the side stream): FC1 saves the
 * gathered input, and its input gradient is reduce-scattered after its
 * weight gradient, on the side stream. */
static void shared_bwd(struct ctx *c, int r, const struct shape *z)
{
	double bs = z->b * z->s, t = z->t, sf = z->shared * z->fe;
	int side = c->kstream != S_COMPUTE;
	if (z->shared <= 0)
		return;
	if (t > 1)
		tp_coll_eb(c, r, z, c->kstream, GC_ALL_GATHER, z->h,
			   side ? z->ab : gather_bytes(c, GATHER_GRAD));
	gemm_bwd(c, r, "shared_fc2", bs, z->h, sf / t);
	sl_kernel(c, r, KC_ELEMENTWISE, z->gated ? "swiglu_bwd_kernel" : "gelu_bwd_kernel",
		  ew(c, bs * sf / t, z->gated ? 4 : 2));
	if (side) {
		gemm_bwd(c, r, "shared_fc1", bs, z->shared * z->fe_in / t, z->h);
		if (t > 1)
			tp_coll(c, r, z, c->kstream, GC_REDUCE_SCATTER);
	} else {
		linear_bwd_g(c, r, "shared_fc1", bs, z->shared * z->fe_in / t, z->h, 1, z,
			     te_linear_gather_bytes(c, KPERF_GATHER_COL), z->h);
	}
}

/*
 * Shared experts overlapped with the dispatcher (moe_shared_overlap;
 * Megatron-LM's --moe-shared-expert-overlap, SharedExpertMLP on its own
 * CUDA stream, alltoall and flex dispatchers): forward, the shared
 * experts' work runs on a side stream (S_TP, free within an MoE layer)
 * from after the router, beside the dispatch, the routed experts and the
 * combine, and the layer waits for it after the combine; backward the
 * same from the combine's gradient to the dispatch's.  Where they overlap
 * the simulator's contention slows both (sim.h).  Megatron overlaps the
 * shared experts' FC1 with the dispatch and FC2 with the combine; here
 * they may also overlap the routed experts' GEMMs.
 */
static int moe_shared_side(const struct ctx *c, const struct shape *z)
{
	return z->shared > 0 && c->in->lay.moe_shared_overlap;
}

static void moe_side_begin(struct ctx *c, int r, const struct shape *z,
			   void (*work)(struct ctx *, int, const struct shape *))
{
	se_event_wait(c, r, S_COMPUTE, S_TP);
	c->kstream = S_TP;
	work(c, r, z);
	c->kstream = S_COMPUTE;
}

static void moe_side_end(struct ctx *c, int r)
{
	se_event_wait(c, r, S_TP, S_COMPUTE);
}

static void moe_fwd(struct ctx *c, int r, const struct shape *z)
{
	double mloc = moe_mloc(c, z);
	router_fwd(c, r, z);
	if (moe_shared_side(c, z))
		moe_side_begin(c, r, z, shared_fwd);
	moe_dispatch(c, r, z, 0);
	moe_pad(c, r, z, "moe_fp8_padding");
	if (sl_low_precision(c->in->lay.dtype)) {
		fp8_gemms(c, r, 2.0 * z->eloc); /* FC1 and FC2: GroupedLinear's num_gemms each */
		lowp_cast(c, r, "input", z->M * z->h, KPERF_CAST_ACT);
		if (weight_cast_now(c, r))
			lowp_cast(c, r, "weight", z->eloc * z->h * (z->fe_in + z->fe) / z->etp,
				  weight_cast_of(c));
	}
	grouped(c, r, z, "cutlass_grouped_gemm_bf16_fc1", mloc, z->fe_in / z->etp, z->h);
	if (z->gated)
		sl_kernel(c, r, KC_ELEMENTWISE, "swiglu_fwd_kernel",
			  ew(c, z->M * z->fe / z->etp, 2));
	else
		sl_kernel(c, r, KC_ELEMENTWISE, "vectorized_elementwise_kernel<GeluCUDAKernelImpl>",
			  ew(c, z->M * z->fe / z->etp, 1));
	grouped(c, r, z, "cutlass_grouped_gemm_bf16_fc2", mloc, z->h, z->fe / z->etp);
	moe_pad(c, r, z, "moe_fp8_unpadding");
	moe_combine(c, r, z, 0);
	if (!moe_shared_side(c, z)) {
		/* Computed before the router under the overlap
		 * (pre_dispatch_computation), added after the combine. */
		int was = c->part_now;
		c->part_now = SL_PART_ATTN;
		shared_fwd(c, r, z);
		c->part_now = was;
	} else {
		moe_side_end(c, r);
	}
}

/* The shared experts' backward, their forward first where recomputed
 * (shared_experts, not under moe's whole-layer recomputation). */
static void shared_rc_bwd(struct ctx *c, int r, const struct shape *z)
{
	if (layout_rc(&c->in->lay, LAYOUT_RC_SHARED) && !layout_rc(&c->in->lay, LAYOUT_RC_MOE))
		shared_fwd(c, r, z);
	shared_bwd(c, r, z);
}

static void moe_bwd(struct ctx *c, int r, const struct shape *z)
{
	double mloc = moe_mloc(c, z);
	if (moe_shared_side(c, z)) {
		moe_side_begin(c, r, z, shared_rc_bwd);
	} else {
		int was = c->part_now;
		c->part_now = SL_PART_ATTN;
		shared_rc_bwd(c, r, z);
		c->part_now = was;
	}
	moe_combine(c, r, z, 1);
	moe_pad(c, r, z, "moe_fp8_unpadding_bwd");
	grouped_bwd(c, r, z, "fc2", mloc, z->h, z->fe / z->etp);
	/* moe_act: the activation's output dropped after FC2 saved its input,
	 * recomputed here (experts.py, CheckpointWithoutOutput). */
	if (layout_rc(&c->in->lay, LAYOUT_RC_MOE_ACT) && !layout_rc(&c->in->lay, LAYOUT_RC_MOE))
		sl_kernel(c, r, KC_ELEMENTWISE,
			  z->gated ? "swiglu_fwd_kernel"
				   : "vectorized_elementwise_kernel<GeluCUDAKernelImpl>",
			  ew(c, z->M * z->fe / z->etp, z->gated ? 2 : 1));
	if (z->gated)
		sl_kernel(c, r, KC_ELEMENTWISE, "swiglu_bwd_kernel",
			  ew(c, z->M * z->fe / z->etp, 4));
	else
		sl_kernel(c, r, KC_ELEMENTWISE, "elementwise_kernel<GeluBackwardCUDAKernelImpl>",
			  ew(c, z->M * z->fe / z->etp, 2));
	grouped_bwd(c, r, z, "fc1", mloc, z->fe_in / z->etp, z->h);
	moe_pad(c, r, z, "moe_fp8_padding_bwd");
	moe_dispatch(c, r, z, 1);
	if (moe_shared_side(c, z))
		moe_side_end(c, r);
	router_bwd(c, r, z);
}

/*
 * Multi-head latent attention's projections (DeepSeek-V2/V3) as
 * Megatron-LM's MLASelfAttention runs them with Transformer Engine
 * (megatron/core/transformer/multi_latent_attention.py, the TE layer spec
 * of megatron/core/models/gpt/gpt_layer_specs.py).  The down projections
 * (linear_q_down_proj, linear_kv_down_proj: TELinear, parallel_mode
 * "duplicated") are whole on every tensor-parallel rank and run on the
 * rank's tokens: b s / t with sequence parallelism, all b s without.  The
 * up projections (linear_q_up_proj, linear_kv_up_proj) are column-parallel
 * LayerNormLinears: the norm of the compressed q (kv) on the rank's
 * tokens, then, with sequence parallelism, its all-gather over the tp
 * ranks (a reduce-scatter of its gradient backward; without, an
 * all-reduce of the gradient), then the GEMM to the rank's a / t heads.
 * The up projections' input gradients are reduced beside their weight
 * gradients' GEMMs (linear_bwd_g: Transformer Engine's layernorm_linear.py
 * backward, reduce_scatter_along_first_dim or allreduce with async_op).
 * RoPE's decoupled key (qk_rope_head_dim, from the kv down projection) is
 * all-gathered on its own (gather_from_sequence_parallel_region, whose
 * backward reduce-scatters at once).  The
 * output projection is the row-parallel linear_proj as in plain attention
 * (its reduce-scatter or all-reduce).  No bias on the down and up
 * projections (bias=False).
 */

/* RoPE on the decoupled dims and q, k, v made from the up projections'
 * outputs, Megatron-LM's fused kernels (--apply-rope-fusion, its default;
 * megatron/core/fusions/fused_mla_yarn_rope_apply.py): the query's rope
 * dims rotated in place (a / t x rope values read and written a token);
 * the key and value split from the kv up projection's output and the
 * rotated rope key written onto every head's key (read a / t (nope + v) +
 * rope, write a / t (qk + v)).  Backward the same passes mirrored. */
static void mla_rope(struct ctx *c, int r, const struct shape *z, int bwd)
{
	double n = z->b * z->s, hq = z->a / z->t;
	double kv = hq * (z->dqk - z->rope + z->dv) + z->rope + hq * (z->dqk + z->dv);
	if (z->rope > 0)
		sl_kernel(c, r, KC_ELEMENTWISE, bwd ? "rotary_bwd_q_kernel" : "rotary_fwd_q_kernel",
			  4 * n * hq * z->rope);
	sl_kernel(c, r, KC_ELEMENTWISE, bwd ? "rotary_bwd_kv_kernel" : "rotary_fwd_kv_kernel",
		  2 * n * kv);
}

static void mla_up_fwd(struct ctx *c, int r, const struct shape *z);

static void mla_fwd(struct ctx *c, int r, const struct shape *z)
{
	double bs = z->b * z->s;
	int sp = c->in->lay.sp && z->t > 1;
	double nd = sp ? bs / z->t : bs; /* the down projections' tokens */

	if (z->ql > 0)
		linear_fwd(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_q_down", nd, z->ql,
			   z->h);
	linear_fwd(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_kv_down", nd, z->kvl + z->rope,
		   z->h);
	if (sp && z->rope > 0)
		tp_coll_of(c, r, z, S_COMPUTE, GC_ALL_GATHER, z->rope);
	mla_up_fwd(c, r, z);
}

/* MLA's up projections from the compressed q and kv (their norms and
 * gathers) and RoPE: what Megatron's mla_up_proj recomputes
 * (multi_latent_attention.py, qkv_up_proj_and_rope_apply under
 * CheckpointWithoutOutput). */
static void mla_up_fwd(struct ctx *c, int r, const struct shape *z)
{
	double bs = z->b * z->s, hq = z->a / z->t;
	int sp = c->in->lay.sp && z->t > 1;
	double nd = sp ? bs / z->t : bs;

	if (z->ql > 0) {
		sl_kernel(c, r, KC_NORM, "vectorized_layer_norm_kernel", ew(c, nd * z->ql, 1));
		if (sp)
			tp_coll_of(c, r, z, S_COMPUTE, GC_ALL_GATHER, z->ql);
		linear_fwd(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_q_up", bs, hq * z->dqk,
			   z->ql);
	} else {
		if (sp)
			tp_coll(c, r, z, S_COMPUTE, GC_ALL_GATHER);
		linear_fwd(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_q", bs, hq * z->dqk,
			   z->h);
	}
	sl_kernel(c, r, KC_NORM, "vectorized_layer_norm_kernel", ew(c, nd * z->kvl, 1));
	if (sp)
		tp_coll_of(c, r, z, S_COMPUTE, GC_ALL_GATHER, z->kvl);
	linear_fwd(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_kv_up", bs,
		   hq * (z->dqk - z->rope + z->dv), z->kvl);
	mla_rope(c, r, z, 0);
}

static void mla_bwd(struct ctx *c, int r, const struct shape *z)
{
	double bs = z->b * z->s, hq = z->a / z->t;
	int sp = c->in->lay.sp && z->t > 1;
	double nd = sp ? bs / z->t : bs;

	mla_rope(c, r, z, 1);
	linear_bwd_g(c, r, "kv_up", bs, hq * (z->dqk - z->rope + z->dv), z->kvl, 0, z, z->ab,
		     z->kvl);
	norm_bwd(c, r, ew(c, nd * z->kvl, 3));
	acc_norm_of(c, r, z->kvl);
	if (z->ql > 0) {
		linear_bwd_g(c, r, "q_up", bs, hq * z->dqk, z->ql, 0, z, z->ab, z->ql);
		norm_bwd(c, r, ew(c, nd * z->ql, 3));
		acc_norm_of(c, r, z->ql);
	} else {
		linear_bwd_g(c, r, "q", bs, hq * z->dqk, z->h, 0, z, z->ab, z->h);
	}
	if (sp && z->rope > 0)
		tp_coll_of(c, r, z, S_COMPUTE, GC_REDUCE_SCATTER, z->rope);
	linear_bwd(c, r, "kv_down", nd, z->kvl + z->rope, z->h, 0);
	if (z->ql > 0)
		linear_bwd(c, r, "q_down", nd, z->ql, z->h, 0);
}

/* 1 when rank r's current layer is a mixture-of-experts layer. */
static int moe_now(const struct ctx *c, int r, const struct shape *z)
{
	return z->moe && llm_is_moe_layer(&c->in->m, kind_layer(c, r));
}

static void mlp_fwd(struct ctx *c, int r, const struct shape *z);

/* The kind of rank r's current layer (llm.h; a dry run's, c->dry_kind). */
static int layer_kind(const struct ctx *c, int r)
{
	return c->dry ? c->dry_kind : llm_layer_kind(&c->in->m, kind_layer(c, r));
}

/* The gather after the attention's projection, of the input of what
 * follows it (tp_round): the MLP block's FC1 (a LayerNormLinear) in a
 * dense layer; an MoE layer's hidden states (bf16: the token dispatcher's
 * gather_from_sequence_parallel_region), none before MLA's experts; after
 * an attention-only layer, the next layer's input, taken as a QKV's (an
 * MLA model's in bf16, as before). */
static double fwd_gather_attn(const struct ctx *c, int r, const struct shape *z)
{
	if (moe_now(c, r, z))
		return z->mla ? 0 : z->ab;
	if (layer_kind(c, r) == LLM_KIND_ATTN)
		return z->mla ? z->ab : gather_bytes(c, LAYOUT_LORA_QKV);
	return gather_bytes(c, LAYOUT_LORA_FC1);
}

/* Layer norm, QKV, attention, projection, [TP all-reduce], fused bias +
 * dropout + residual add (Megatron's bias_dropout_add: reads the branch and
 * the residual, writes the sum and a one-byte dropout mask). */
static void attn_block_fwd(struct ctx *c, int r, const struct shape *z)
{
	double bs = z->b * z->s, t = z->t, sp = c->in->lay.sp ? t : 1, nh = bs * z->h / sp;
	int ov = tp_overlapped(c, z);
	resid_cast(c, r, nh);
	if (z->mla) { /* MLA's input norm: a TENorm apart */
		sl_kernel(c, r, KC_NORM, "vectorized_layer_norm_kernel", ew(c, nh, 1));
		mla_fwd(c, r, z);
	} else {
		ln_norm(c, r, nh, LAYOUT_LORA_QKV);
		if (ov) /* the all-gather of the normed input beside the QKV GEMM */
			tp_side_begin(c, r, z, 0, gather_bytes(c, LAYOUT_LORA_QKV));
		linear_fwd_of(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_qkv", bs, z->qkv_r,
			      z->h, ln_linear_of(c, LAYOUT_LORA_QKV));
		if (ov)
			tp_side_end(c, r);
		lora_fwd(c, r, z, LAYOUT_LORA_QKV, z->h, z->qkv, 0);
	}
	sl_attn_fwd(c, r, z);
	if (ov) /* the projection's reduce-scatter beside its GEMM */
		tp_side_begin(c, r, z, 1, 0);
	linear_fwd(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_proj", bs, z->h, z->wo / t);
	if (ov)
		tp_side_end(c, r);
	else
		tp_round(c, r, z, fwd_gather_attn(c, r, z));
	lora_fwd(c, r, z, LAYOUT_LORA_PROJ, z->wo, z->h, 1);
	sl_kernel(c, r, KC_ELEMENTWISE, "fused_bias_dropout_add_kernel", bda_bytes(c, nh));
}

/* Layer norm, the MLP (dense: FC1, GeLU -- bias fused -- or SwiGLU, FC2,
 * [TP all-reduce]; or the experts), bias + dropout + residual add. */
static void mlp_block_fwd(struct ctx *c, int r, const struct shape *z)
{
	double bs = z->b * z->s, t = z->t, sp = c->in->lay.sp ? t : 1, nh = bs * z->h / sp;
	int moe = moe_now(c, r, z);
	/* The overlap's parts (ctx.part): an MoE layer's norm and router
	 * are the attention's part, its residual add the combine's; a
	 * dense layer's MLP block is one part. */
	c->part_now = moe ? SL_PART_ATTN : SL_PART_MLP;
	resid_cast(c, r, nh);
	if (moe) { /* the pre-MLP norm: a TENorm apart (the router reads it) */
		sl_kernel(c, r, KC_NORM, "vectorized_layer_norm_kernel", ew(c, nh, 1));
		moe_fwd(c, r, z);
	} else {
		ln_norm(c, r, nh, LAYOUT_LORA_FC1);
		mlp_fwd(c, r, z);
	}
	sl_kernel(c, r, KC_ELEMENTWISE, "fused_bias_dropout_add_kernel", bda_bytes(c, nh));
}

/*
 * A Mamba-2 layer (hybrid models, llm.h) as Megatron-LM's MambaLayer runs
 * it in training (megatron/core/ssm/mamba_layer.py, mamba_mixer.py
 * MambaMixer._ssm_training, the memory-efficient path): the norm (fused
 * into in_proj, a TELayerNormColumnParallelLinear), in_proj (column
 * parallel: the rank's H / t heads' z and x, G / t groups' B and C, and
 * dt; with sequence parallelism its input all-gathered), its output made
 * batch-major (a copy), then mamba_ssm's mamba_split_conv1d_scan_combined:
 * the causal depthwise convolution over x, B and C (causal_conv1d_fwd,
 * memory-bound) and the chunked SSD scan (ssd_fwd); the result made
 * sequence-major again (a copy), the grouped RMSNorm gated by z, out_proj
 * (row parallel: its reduce-scatter, or all-reduce), bias + dropout +
 * residual add.  No linear biases (bias=False).
 */

/* One SSD kernel's matrix products: `batch` products of m x k times k x
 * n, and where k2 > 0 a second of m x k2 times k2 x n fused in the same
 * kernel (mamba_ssm's chunk scan computes the diagonal blocks' and the
 * states' outputs together): timed as the two GEMMs by the kernel model,
 * recorded as one aten::bmm of inner width k + k2 (the same FLOPs). */
static void ssd_gemm(struct ctx *c, int r, const char *name, double batch, double m, double n,
		     double k, double k2)
{
	int dt =
	    c->in->lay.dtype == HW_FP32 || c->in->lay.dtype == HW_TF32 ? c->in->lay.dtype : HW_BF16;
	double es = kperf_elem_bytes(dt), kk = k + k2;
	double model = kperf_gemm_s(c->hw, dt, batch, m, n, k) +
		       (k2 > 0 ? kperf_gemm_s(c->hw, dt, batch, m, n, k2) : 0);
	double t = ktime(c, KC_GEMM, dt, batch * llm_gemm_flops(m, n, kk),
			 batch * (es * (m * kk + kk * n) + 2 * m * n), model);
	double key[OPKEY] = {2, dt, batch, m, n, kk};
	se_record_op(c, key, gemm_op_fmt);
	se_launch(c, r, c->kstream, GN_KERNEL, name, t, NULL);
}

/*
 * The SSD scan (Dao & Gu 2024, "Transformers are SSMs", section 6; mamba_ssm
 * ssd_combined.py _mamba_chunk_scan_combined_fwd) on one rank: H = heads /
 * t heads of width P, G = groups / t, the sequence cut into nc = ceil(s /
 * Q) chunks.  Forward: dt's softplus and the decays' cumulative sums
 * (_chunk_cumsum: dt read, fp32 dt and dA_cumsum written); each chunk's
 * state B^T X (_chunk_state: b nc H products N x Q by Q x P); the states
 * passed from chunk to chunk (_state_passing: fp32 states read and
 * written, a scalar decay each); the diagonal blocks C B^T (_bmm_chunk: b
 * nc G products Q x N by N x Q); the output, the masked diagonal blocks
 * times X and C times the passed states (_chunk_scan: b nc H products Q x
 * Q by Q x P and Q x N by N x P).  Its FLOPs are llm_ssd_flops'.
 */
static void ssd_fwd(struct ctx *c, int r, const struct shape *z)
{
	double H = z->mh / z->t, G = z->mg / z->t, N = z->mn, P = z->mp, Q = z->mq;
	double nc = ceil(z->s / Q), bh = z->b * nc * H, st = z->b * nc * H * N * P;
	sl_kernel(c, r, KC_ELEMENTWISE, "ssd_chunk_cumsum_fwd_kernel", 10 * z->b * z->s * H);
	ssd_gemm(c, r, "ssd_chunk_state_fwd_kernel", bh, N, P, Q, 0);
	sl_kernel(c, r, KC_ELEMENTWISE, "ssd_state_passing_fwd_kernel", 8 * st);
	ssd_gemm(c, r, "ssd_bmm_chunk_fwd_kernel", z->b * nc * G, Q, Q, N, 0);
	ssd_gemm(c, r, "ssd_chunk_scan_fwd_kernel", bh, Q, P, Q, N);
}

/*
 * Its backward (_mamba_chunk_scan_combined_bwd): the cumulative sums, the
 * chunk states, their passing and C B^T recomputed (the memory-efficient
 * path keeps none of them); the states' gradient C^T dY
 * (_chunk_scan_bwd_dstates) passed back (_state_passing_bwd: fp32
 * gradients and states read, gradients written); dX from the masked
 * diagonal blocks and from B and the states' gradient
 * (_chunk_scan_chunk_state_bwd_dx); dC from dY and the states, dB from X
 * and the states' gradient; the diagonal blocks' gradient dY X^T and dC,
 * dB from it (b nc G products each); dt's and the decays' gradients
 * (_chunk_cumsum bwd: fp32 gradients read, dt read, its gradient
 * written).  Every forward product has its two operands' gradients: the
 * matrix FLOPs are twice the forward's plus the recomputed states and
 * C B^T.
 */
static void ssd_bwd(struct ctx *c, int r, const struct shape *z)
{
	double H = z->mh / z->t, G = z->mg / z->t, N = z->mn, P = z->mp, Q = z->mq;
	double nc = ceil(z->s / Q), bh = z->b * nc * H, bg = z->b * nc * G;
	double st = z->b * nc * H * N * P;
	sl_kernel(c, r, KC_ELEMENTWISE, "ssd_chunk_cumsum_fwd_kernel", 10 * z->b * z->s * H);
	ssd_gemm(c, r, "ssd_chunk_state_fwd_kernel", bh, N, P, Q, 0);
	sl_kernel(c, r, KC_ELEMENTWISE, "ssd_state_passing_fwd_kernel", 8 * st);
	ssd_gemm(c, r, "ssd_bmm_chunk_fwd_kernel", bg, Q, Q, N, 0);
	ssd_gemm(c, r, "ssd_chunk_scan_bwd_dstates_kernel", bh, N, P, Q, 0);
	sl_kernel(c, r, KC_ELEMENTWISE, "ssd_state_passing_bwd_kernel", 12 * st);
	ssd_gemm(c, r, "ssd_chunk_scan_chunk_state_bwd_dx_kernel", bh, Q, P, Q, N);
	ssd_gemm(c, r, "ssd_chunk_scan_bwd_dc_kernel", bh, Q, N, P, 0);
	ssd_gemm(c, r, "ssd_chunk_state_bwd_db_kernel", bh, Q, N, P, 0);
	ssd_gemm(c, r, "ssd_chunk_scan_bwd_dcb_kernel", bh, Q, Q, P, 0);
	ssd_gemm(c, r, "ssd_bmm_chunk_bwd_dc_kernel", bg, Q, N, Q, 0);
	ssd_gemm(c, r, "ssd_bmm_chunk_bwd_db_kernel", bg, Q, N, Q, 0);
	sl_kernel(c, r, KC_ELEMENTWISE, "ssd_chunk_cumsum_bwd_kernel", 14 * z->b * z->s * H);
}

/* in_proj's output width on one rank, and the convolution's (x, B, C). */
static double mamba_proj_r(const struct shape *z)
{
	return (2 * z->mdi + 2 * z->mg * z->mn + z->mh) / z->t;
}

static double mamba_conv_r(const struct shape *z)
{
	return (z->mdi + 2 * z->mg * z->mn) / z->t;
}

static void mamba_fwd(struct ctx *c, int r, const struct shape *z)
{
	double bs = z->b * z->s, t = z->t, sp = c->in->lay.sp ? t : 1, nh = bs * z->h / sp;
	double di = z->mdi / t;
	int ov = tp_overlapped(c, z);
	resid_cast(c, r, nh);
	ln_norm(c, r, nh, -1);
	if (ov)
		tp_side_begin(c, r, z, 0, gather_bytes(c, -1));
	linear_fwd_of(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_in_proj", bs, mamba_proj_r(z),
		      z->h, KPERF_CAST_NORMED);
	if (ov)
		tp_side_end(c, r);
	sl_kernel(c, r, KC_ELEMENTWISE, "mamba_in_proj_transpose_copy",
		  ew(c, bs * mamba_proj_r(z), 1));
	sl_kernel(c, r, KC_ELEMENTWISE, "causal_conv1d_fwd_kernel", ew(c, bs * mamba_conv_r(z), 1));
	ssd_fwd(c, r, z);
	sl_kernel(c, r, KC_ELEMENTWISE, "mamba_out_transpose_copy", ew(c, bs * di, 1));
	sl_kernel(c, r, KC_NORM, "rmsnorm_gated_fwd_kernel", ew(c, bs * di, 2));
	if (ov)
		tp_side_begin(c, r, z, 1, 0);
	linear_fwd(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_out_proj", bs, z->h, di);
	if (ov)
		tp_side_end(c, r);
	else
		tp_round(c, r, z, gather_bytes(c, LAYOUT_LORA_QKV));
	sl_kernel(c, r, KC_ELEMENTWISE, "fused_bias_dropout_add_kernel", bda_bytes(c, nh));
}

/* Its backward: the dropout's, out_proj's gradients (no bias), the gated
 * norm's (y, z and the output's gradient read, y's and z's gradients
 * written), the copy's, the convolution recomputed and its backward (its
 * input and output gradient read, the input's gradient written), the
 * scan's, the copy's, in_proj's, the norm's (two kernels, as a
 * transformer block's: norm_bwd), the residual stream's gradient summed
 * (residual_grad: the layer's input feeds its norm and the residual add,
 * Megatron-LM's MambaLayer as a TransformerLayer); the mixer's small
 * parameters' gradients (convolution, dt_bias, A_log, D, the gated norm)
 * accumulated. */
static void mamba_bwd(struct ctx *c, int r, const struct shape *z)
{
	double bs = z->b * z->s, t = z->t, sp = c->in->lay.sp ? t : 1, nh = bs * z->h / sp;
	double di = z->mdi / t;
	int ov = tp_overlapped(c, z);
	dropout_bwd(c, r, "masked_scale_kernel_dropout_backward", nh);
	if (ov)
		tp_side_begin(c, r, z, 1, gather_bytes(c, GATHER_GRAD));
	else
		tp_grad_gather(c, r, z);
	linear_bwd(c, r, "out_proj", bs, z->h, di, 0);
	if (ov)
		tp_side_end(c, r);
	sl_kernel(c, r, KC_NORM, "rmsnorm_gated_bwd_kernel", 10 * bs * di);
	acc_add(c, r, di);
	sl_kernel(c, r, KC_ELEMENTWISE, "mamba_out_transpose_copy", ew(c, bs * di, 1));
	sl_kernel(c, r, KC_ELEMENTWISE, "causal_conv1d_fwd_kernel", ew(c, bs * mamba_conv_r(z), 1));
	ssd_bwd(c, r, z);
	sl_kernel(c, r, KC_ELEMENTWISE, "causal_conv1d_bwd_kernel", ew(c, bs * mamba_conv_r(z), 2));
	acc_add(c, r, mamba_conv_r(z) * (z->mconv + 1) + 3 * z->mh / t);
	sl_kernel(c, r, KC_ELEMENTWISE, "mamba_in_proj_transpose_copy",
		  ew(c, bs * mamba_proj_r(z), 1));
	linear_bwd_g(c, r, "in_proj", bs, mamba_proj_r(z), z->h, 0, z,
		     gather_bytes_of(c, -1, KPERF_GATHER_COL), ov ? 0 : z->h);
	norm_bwd(c, r, ew(c, nh, 3));
	resid_cast_bwd(c, r, nh);
	acc_norm(c, r, z);
	residual_grad(c, r, nh);
}

/* One layer's forward by its kind: a transformer layer's attention block
 * and MLP block, or a hybrid model's Mamba, attention or MLP layer alone
 * (Megatron-LM's MambaStack: a TransformerLayer with the MLP, or the
 * attention, an IdentityOp). */
void sl_layer_fwd(struct ctx *c, int r, const struct shape *z)
{
	int k = layer_kind(c, r);
	if (k == LLM_KIND_MAMBA) {
		mamba_fwd(c, r, z);
		return;
	}
	c->part_now = SL_PART_ATTN;
	if (k != LLM_KIND_MLP && k != LLM_KIND_MOE)
		attn_block_fwd(c, r, z);
	if (k != LLM_KIND_ATTN) /* an E layer's: its experts (moe_now) */
		mlp_block_fwd(c, r, z);
}

/* A dense layer's MLP after its norm: FC1, the activation, FC2 and their
 * tensor-parallel collectives. */
static void mlp_fwd(struct ctx *c, int r, const struct shape *z)
{
	double bs = z->b * z->s, t = z->t;
	int ov = tp_overlapped(c, z);
	if (ov)
		tp_side_begin(c, r, z, 0, gather_bytes(c, LAYOUT_LORA_FC1));
	linear_fwd_of(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_fc1", bs, z->f_in / t, z->h,
		      ln_linear_of(c, LAYOUT_LORA_FC1));
	if (ov)
		tp_side_end(c, r);
	lora_fwd(c, r, z, LAYOUT_LORA_FC1, z->h, z->f_in, 0);
	if (z->gated) /* silu(gate) x up: two inputs, one output */
		sl_kernel(c, r, KC_ELEMENTWISE, "swiglu_fwd_kernel", ew(c, bs * z->f / t, 2));
	else
		sl_kernel(c, r, KC_ELEMENTWISE, "vectorized_elementwise_kernel<GeluCUDAKernelImpl>",
			  ew(c, bs * z->f / t, 1));
	if (ov)
		tp_side_begin(c, r, z, 1, 0);
	linear_fwd(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_fc2", bs, z->h, z->f / t);
	if (ov)
		tp_side_end(c, r);
	else
		tp_round(c, r, z, z->mla ? 0 : gather_bytes(c, LAYOUT_LORA_QKV));
	lora_fwd(c, r, z, LAYOUT_LORA_FC2, z->f, z->h, 1);
}

/* Input and weight gradients of C[m,n] = A[m,k] B[k,n], and its bias's
 * where it has one; in fp8 the output gradient is first quantised, both
 * copies (lowp_cast).  z non-null: a column-parallel Linear whose input,
 * under sequence parallelism, was saved as the rank's shard and is
 * all-gathered again for the weight gradient, gb bytes a value
 * (gather_bytes_of: Transformer Engine gathers the saved quantised shard's
 * column-wise copy, or a per-tensor fp8 one's row-wise data): issued before the input gradient's GEMM on the
 * communication stream, overlapped with it and waited for before the
 * weight gradient's (Megatron-LM's tensor_parallel/layers.py
 * LinearWithGradAccumulationAndAsyncCommunication.backward:
 * all_gather_into_tensor(async_op=True), handle.wait() before the wgrad
 * GEMM, CUDA_DEVICE_MAX_CONNECTIONS=1 ordering it first; Transformer
 * Engine's layernorm_linear.py backward, ctx.ln_out_needs_gather:
 * gather_along_first_dim(async_op=True), or with userbuffers the bulk
 * all-gather beside dgrad, ub_bulk_dgrad).  A frozen weight (LoRA) has no
 * weight gradient and no gather (ln_out_needs_gather needs
 * weight.requires_grad).  Full recomputation saves the shard again, so the
 * gather stays.  rsw > 0 (a column-parallel Linear of b s rsw input, tp >
 * 1), sequence parallel: its input gradient reduce-scattered after the
 * input gradient's GEMM on the communication stream, beside the weight
 * gradient's GEMM, the compute stream waiting for it at the end of the
 * Linear's backward (layers.py backward: reduce_scatter_tensor(async_op=
 * True) after the dgrad matmul, the wgrad GEMM, handle.wait() before it
 * returns; Transformer Engine's layernorm_linear.py and linear.py backward
 * alike, reduce_scatter_along_first_dim(async_op=True) waited after wgrad);
 * with a frozen weight nothing runs between, so it waits at once.  Without
 * sequence parallelism the same input gradient is all-reduced instead, in
 * the same place (layers.py backward: ctx.allreduce_dgrad, all_reduce(
 * grad_input, async_op=True) after the dgrad matmul, CUDA_DEVICE_MAX_
 * CONNECTIONS=1 ordering it before the wgrad GEMM, handle.wait() before it
 * returns; Transformer Engine's layernorm_linear.py and linear.py backward,
 * allreduce(dgrad, tp_group, async_op=True); a frozen weight's
 * LinearWithFrozenWeight all-reduces at once).  dt: the GEMMs' dtype
 * (linear_bwd_dt; the layout's but for the output layer's). */
/*
 * The bias gradient of C[m,n] as plain PyTorch computes it (framework
 * torch): nn.Linear's addmm broadcasts the bias over the m tokens, and
 * autograd sums the output's gradient back to its n values after
 * AddmmBackward0's GEMMs (torch/csrc/autograd/engine.cpp validate_outputs,
 * at::sum_to: an aten::sum, reduce_kernel<sum_functor>): the m x n bf16
 * gradient read, the n sums written.  ATen splits so long a reduction over
 * blocks (a global reduction, aten/src/ATen/native/cuda/Reduce.cuh
 * should_global_reduce) and zeroes its semaphores first with a
 * cudaMemsetAsync: a launch more in the op (each of the 128 sums a step of
 * our H100 traces at 2,048 tokens has its memset).  Megatron-LM's layer has
 * none apart: Transformer Engine's linear takes the bias gradient in its
 * weight-gradient GEMM's epilogue (or Megatron's fused bias-GeLU and
 * bias-dropout-add own it).
 */
static void bias_grad_sum(struct ctx *c, int r, double m, double n)
{
	if (c->in->lay.framework != LAYOUT_FW_TORCH)
		return;
	more_launches(c, 1);
	sl_kernel(c, r, KC_REDUCTION, "reduce_kernel<sum_functor> (bias gradient)",
		  2 * (m * n + n));
}

static void linear_bwd_dt(struct ctx *c, int r, const char *what, int dt, double m, double n,
			  double k, int bias, const struct shape *z, double gb, double rsw)
{
	char dx[96], dw[96];
	int g = z && z->t > 1 && c->in->lay.sp && !frozen(c);
	int rs = rsw > 0 && z && z->t > 1;
	int kind = c->in->lay.sp ? GC_REDUCE_SCATTER : GC_ALL_REDUCE;
	double comm1 = 0;
	if (sl_low_precision(dt))
		lowp_cast(c, r, "grad", m * n, KPERF_CAST_ACT);
	if (g) {
		double comm0 = c->dry_comm_s;
		se_event_wait(c, r, S_COMPUTE, S_TP);
		tp_coll_eb(c, r, z, S_TP, GC_ALL_GATHER, k, gb);
		side_issued(c, comm0);
	}
	/* A dry run (the analytic estimate, the bound) reads no name. */
	bgemm(c, r,
	      c->dry ? what : kname(dx, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_", what, "_dx"),
	      dt, 1, m, k, n);
	if (g)
		side_joined(c, r);
	if (frozen(c)) { /* LoRA: no weight gradient for a frozen weight */
		if (rs)	 /* nothing to overlap: the reduction waited at once */
			tp_coll_of(c, r, z, S_COMPUTE, kind, rsw);
		return;
	}
	if (rs) {
		comm1 = c->dry_comm_s;
		se_event_wait(c, r, S_COMPUTE, S_TP);
		tp_coll_of(c, r, z, S_TP, kind, rsw);
		side_issued(c, comm1);
	}
	c->wk = 1; /* the weight gradient: a zero-bubble schedule's W pass */
	bgemm(c, r,
	      c->dry ? what : kname(dw, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_", what, "_dw"),
	      dt, 1, k, n, m);
	if (bias)
		bias_grad_sum(c, r, m, n);
	acc_add(c, r, k * n);
	c->wk = 0;
	if (bias)
		acc_add(c, r, n);
	if (rs)
		side_joined(c, r);
}

static void linear_bwd_g(struct ctx *c, int r, const char *what, double m, double n, double k,
			 int bias, const struct shape *z, double gb, double rsw)
{
	linear_bwd_dt(c, r, what, c->in->lay.dtype, m, n, k, bias, z, gb, rsw);
}

static void linear_bwd(struct ctx *c, int r, const char *what, double m, double n, double k,
		       int bias)
{
	linear_bwd_g(c, r, what, m, n, k, bias, NULL, 0, 0);
}

/* A linear layer's gradients, bias included: llm_layer_params gives every
 * linear one but MLA's down and up projections. */
static void gemm_bwd(struct ctx *c, int r, const char *what, double m, double n, double k)
{
	linear_bwd(c, r, what, m, n, k, 1);
}

/* The same of a column-parallel Linear of b s h input (QKV, FC1) with its
 * input's gather under sequence parallelism (linear_bwd_g). */
static void col_gemm_bwd(struct ctx *c, int r, const struct shape *z, const char *what, double n,
			 int lora_bit)
{
	linear_bwd_g(c, r, what, z->b * z->s, n, z->h, 1, z,
		     gather_bytes_of(c, lora_bit, KPERF_GATHER_COL),
		     tp_overlapped(c, z) ? 0 : z->h);
}

/* The MLP block's backward: the dropout's, the MLP's (dense, or the
 * experts') with selective recomputation's modules re-run before it, the
 * norm's. */
static void mlp_block_bwd(struct ctx *c, int r, const struct shape *z)
{
	double bs = z->b * z->s, t = z->t, sp = c->in->lay.sp ? t : 1, nh = bs * z->h / sp;
	int ov = tp_overlapped(c, z), moe = moe_now(c, r, z);
	/* The overlap's parts (ctx.part): an MoE layer's dropout gradient
	 * is the combine's, its norm's backward the attention's part; a
	 * dense layer's MLP block is one part. */
	c->part_now = moe ? SL_PART_CMB_COMP : SL_PART_MLP;
	dropout_bwd(c, r, "masked_scale_kernel_dropout_backward", nh);
	if (moe) {
		/* layernorm: the pre-MLP norm (TENorm apart in MoE layers);
		 * moe: the layer's forward from it.  Under the overlap the
		 * norm is recomputed in the experts' backward (Megatron's
		 * pre_mlp_norm_checkpoint hooks the experts' output). */
		c->part_now = SL_PART_MLP;
		if (layout_rc(&c->in->lay, LAYOUT_RC_LAYERNORM)) {
			resid_cast(c, r, nh);
			sl_kernel(c, r, KC_NORM, "vectorized_layer_norm_kernel", ew(c, nh, 1));
		}
		if (layout_rc(&c->in->lay, LAYOUT_RC_MOE))
			moe_fwd(c, r, z);
		c->part_now = SL_PART_CMB_COMP;
		moe_bwd(c, r, z);
	} else {
		/* mlp: its forward again, the norm fused into FC1 with it. */
		if (layout_rc(&c->in->lay, LAYOUT_RC_MLP)) {
			resid_cast(c, r, nh);
			ln_norm(c, r, nh, LAYOUT_LORA_FC1);
			mlp_fwd(c, r, z);
		}
		lora_bwd(c, r, z, LAYOUT_LORA_FC2, z->f, z->h, 1);
		if (ov) /* the gradient's gather beside FC2's gradient GEMMs */
			tp_side_begin(c, r, z, 1, gather_bytes(c, GATHER_GRAD));
		else
			tp_grad_gather(c, r, z);
		gemm_bwd(c, r, "fc2", bs, z->h, z->f / t);
		if (ov)
			tp_side_end(c, r);
		if (z->gated) /* the gradient and both inputs in, both gradients out */
			sl_kernel(c, r, KC_ELEMENTWISE, "swiglu_bwd_kernel",
				  ew(c, bs * z->f / t, 4));
		else
			sl_kernel(c, r, KC_ELEMENTWISE,
				  "elementwise_kernel<GeluBackwardCUDAKernelImpl>",
				  ew(c, bs * z->f / t, 2));
		lora_bwd(c, r, z, LAYOUT_LORA_FC1, z->h, z->f_in, 0);
		col_gemm_bwd(c, r, z, "fc1", z->f_in / t, LAYOUT_LORA_FC1);
	}
	norm_bwd(c, r, ew(c, nh, 3));
	resid_cast_bwd(c, r, nh);
	acc_norm(c, r, z);
	residual_grad(c, r, nh);
}

/* The attention block's backward: the dropout's, the projection's, the
 * core's (recomputed first under core_attn), the QKV's (MLA's), the
 * norm's. */
static void attn_block_bwd(struct ctx *c, int r, const struct shape *z)
{
	double bs = z->b * z->s, t = z->t, sp = c->in->lay.sp ? t : 1, nh = bs * z->h / sp;
	int ov = tp_overlapped(c, z);
	dropout_bwd(c, r, "masked_scale_kernel_dropout_backward", nh);
	lora_bwd(c, r, z, LAYOUT_LORA_PROJ, z->wo, z->h, 1);
	if (ov)
		tp_side_begin(c, r, z, 1, gather_bytes(c, GATHER_GRAD));
	else
		tp_grad_gather(c, r, z);
	gemm_bwd(c, r, "proj", bs, z->h, z->wo / t);
	if (ov)
		tp_side_end(c, r);
	/* mla_up_proj: the up projections and RoPE again when the core's
	 * output gradient arrives (their Q, K, V are the core's inputs). */
	if (z->mla && layout_rc(&c->in->lay, LAYOUT_RC_MLA_UP_PROJ))
		mla_up_fwd(c, r, z);
	if (layout_rc(&c->in->lay, LAYOUT_RC_CORE_ATTN))
		sl_attn_fwd(c, r, z);
	attn_bwd(c, r, z);
	/* layernorm: MLA's input norm (a TENorm apart from its down
	 * projections). */
	if (z->mla && layout_rc(&c->in->lay, LAYOUT_RC_LAYERNORM)) {
		resid_cast(c, r, nh);
		sl_kernel(c, r, KC_NORM, "vectorized_layer_norm_kernel", ew(c, nh, 1));
	}
	if (z->mla) {
		mla_bwd(c, r, z);
	} else {
		lora_bwd(c, r, z, LAYOUT_LORA_QKV, z->h, z->qkv, 0);
		/* The query's, key's and value's gradients copied into one
		 * for the QKV GEMM: the backward of the split of its output
		 * (Megatron-LM's attention.py get_query_key_value_tensors
		 * torch.split; aten::cat under SplitBackward0 in our H100
		 * traces). */
		sl_kernel(c, r, KC_ELEMENTWISE, "CatArrayBatchedCopy (qkv gradient)",
			  ew(c, bs * z->qkv_r, 1));
		col_gemm_bwd(c, r, z, "qkv", z->qkv_r, LAYOUT_LORA_QKV);
	}
	norm_bwd(c, r, ew(c, nh, 3));
	resid_cast_bwd(c, r, nh);
	acc_norm(c, r, z);
	residual_grad(c, r, nh);
}

/* Backward of one layer: full recomputation runs its forward first;
 * selective recomputation (Korthikanti et al. 2022) re-runs each of its
 * modules' forward (recompute_modules, Megatron-LM's; core_attn by
 * default) just before that module's backward.  Each bias-dropout-add's
 * dropout has a backward pass over its branch's gradient (reads it and the
 * mask, writes the gradient).  A hybrid model's layer runs its kind's
 * block alone. */
void sl_layer_bwd(struct ctx *c, int r, const struct shape *z)
{
	int k = layer_kind(c, r);
	if (c->in->lay.recompute == LAYOUT_RECOMPUTE_FULL)
		sl_layer_fwd(c, r, z);
	if (k == LLM_KIND_MAMBA) {
		mamba_bwd(c, r, z);
		return;
	}
	if (k != LLM_KIND_ATTN)
		mlp_block_bwd(c, r, z);
	c->part_now = SL_PART_ATTN;
	if (k != LLM_KIND_MLP && k != LLM_KIND_MOE)
		attn_block_bwd(c, r, z);
}

/* The output layer's dtype: bf16 under fp8 and fp4. */
int sl_logit_dtype(const struct synth_in *in)
{
	return sl_low_precision(in->lay.dtype) ? HW_BF16 : in->lay.dtype;
}

const struct hw_profile *sl_run_hw(const struct synth_in *in, struct hw_profile *buf)
{
	if (!in->hw)
		return NULL;
	if (in->clock > 0)
		return hw_at_clock(in->hw, in->clock, buf);
	return hw_at_run(in->hw, in->lay.dtype, in->lay.power_w, buf);
}

/*
 * The vocabulary-parallel embedding's tensor-parallel reduction (Megatron-
 * LM tensor_parallel/layers.py VocabParallelEmbedding.forward: each rank
 * looks up the tokens of its V / t rows, zeroes the others, and the b s h
 * bf16 outputs are summed over tp).  With sequence parallelism and no
 * learned positions (language_model_embedding.py reduce_scatter_embeddings)
 * a reduce-scatter (reduce_scatter_to_sequence_parallel_region) leaving the
 * rank its b s / t tokens; otherwise an all-reduce (reduce_from_tensor_
 * model_parallel_region), after which learned positions are added and,
 * with sequence parallelism, the rank's tokens split off
 * (scatter_to_sequence_parallel_region: a view, no communication).  Both
 * are synchronous on the compute stream (torch.distributed.all_reduce and
 * _reduce_scatter_along_first_dim, async_op False).  Nothing at tp 1
 * (_reduce returns its input at world size 1; the lookup has no mask).
 */
static void embed_reduce(struct ctx *c, int r, const struct shape *z)
{
	if (z->t <= 1)
		return;
	if (c->in->lay.sp && c->in->m.rope)
		tp_coll(c, r, z, S_COMPUTE, GC_REDUCE_SCATTER);
	else
		tp_coll(c, r, z, S_COMPUTE, GC_ALL_REDUCE);
}

/* Under fp32_residual the embeddings are cast to fp32
 * (language_model_embedding.py embeddings.float()) after the reduction
 * and before the sequence-parallel split: where a reduce-scatter split
 * them (rope with sequence parallelism) on the rank's b s / t tokens,
 * else on all b s, the split's backward gather then of the fp32
 * gradient.  The values cast, and the bytes a value the backward's
 * gather moves. */
static double embed_cast_n(const struct ctx *c, const struct shape *z)
{
	double nh = z->b * z->s * z->h;
	return c->in->lay.sp && c->in->m.rope && z->t > 1 ? nh / z->t : nh;
}

static double embed_gather_eb(const struct ctx *c, const struct shape *z)
{
	return c->in->m.rope ? z->ab : z->rb;
}

/* Its backward, before the lookup's gradient: with sequence parallelism
 * the b s h gradient all-gathered (the backward of reduce_scatter_to_
 * sequence_parallel_region, or of scatter_to_sequence_parallel_region
 * after learned positions: _gather_along_first_dim either way, bf16, or
 * fp32 after learned positions under fp32_residual, embed_gather_eb);
 * without, none (reduce_from_tensor_model_parallel_region's backward is
 * the identity). */
static void embed_reduce_bwd(struct ctx *c, int r, const struct shape *z)
{
	if (z->t > 1 && c->in->lay.sp)
		tp_coll_eb(c, r, z, S_COMPUTE, GC_ALL_GATHER, z->h, embed_gather_eb(c, z));
}

/*
 * The rest of Megatron-LM's embedding forward after the word lookup and its
 * reduction (LanguageModelEmbedding.forward, megatron/core/models/common/
 * embeddings/language_model_embedding.py): with learned positions the
 * position lookup (a torch.nn.Embedding: positions [b s] -> [b s h]) and its
 * add to the words'; the [b s h] -> [s b h] transpose made contiguous (a
 * copy; with sequence parallelism and no learned positions,
 * reduce_scatter_embeddings, VocabParallelEmbedding makes the same copy
 * before its reduce-scatter, so one either way, before or after
 * embed_reduce: timed here, the same bytes); under sequence parallelism
 * the rank's b s / t tokens cloned (clone_scatter_output_in_embedding,
 * default on); the embedding dropout (hidden_dropout, as the layers' bias-
 * dropout-adds: its mask one byte a value): 3 kernels (rope), 4 (+ the
 * clone), 5 with learned positions, 6 with both; under fp32_residual the
 * transposed embeddings are cast to fp32 first (embeddings.float(), one
 * more kernel) and the clone and the dropout run on fp32.  Our H100 traces of
 * gpt_bench.py's model show the position lookup and the add
 * (`aten::embedding` twice, `aten::add`), in PyTorch's dropout-free [b s h]
 * order.
 */
static void embed_fwd_rest(struct ctx *c, int r, const struct shape *z)
{
	double nh = z->b * z->s * z->h, sp = c->in->lay.sp ? z->t : 1, ab = ab_of(c), rb = rb_of(c);
	if (!c->in->m.rope) {
		sl_kernel(c, r, KC_EMBEDDING, "indexSelectLargeIndex (positions)", ew(c, nh, 1));
		sl_kernel(c, r, KC_ELEMENTWISE, "vectorized_elementwise_kernel<add> (positions)",
			  ew(c, nh, 2));
	}
	sl_kernel(c, r, KC_ELEMENTWISE, "elementwise_kernel<copy> (embedding transpose)",
		  ew(c, nh, 1));
	if (rb != ab) /* fp32_residual: embeddings.float() */
		sl_kernel(c, r, KC_ELEMENTWISE, "elementwise_kernel<copy> (embedding to fp32)",
			  embed_cast_n(c, z) * (ab + rb));
	if (sp > 1)
		sl_kernel(c, r, KC_ELEMENTWISE,
			  "elementwise_kernel<copy> (embedding scatter clone)", nh / sp * rb * 2);
	if (layout_dropout(&c->in->lay))
		sl_kernel(c, r, KC_ELEMENTWISE, "fused_dropout_kernel (embedding)",
			  nh / sp * rb * 2 + nh / sp);
}

/* The embedding's lookup forward and its gradient (stage 0). */
void sl_embed_fwd(struct ctx *c, int r, const struct shape *z)
{
	sl_kernel(c, r, KC_EMBEDDING, "indexSelectLargeIndex", ew(c, z->b * z->s * z->h, 1));
	embed_reduce(c, r, z);
	embed_fwd_rest(c, r, z);
}

/*
 * One embedding table's gradient before its scatter, as PyTorch computes it
 * (embedding_dense_backward_cuda, aten/src/ATen/native/cuda/Embedding.cu):
 * the incoming [b s h] gradient made contiguous (it arrives as the
 * transpose's view: a copy), the [rows, h] gradient zero-filled (at::zeros:
 * a fill, bf16 written); then the caller's scatter-add of each token's row
 * (embedding_backward_feature_kernel; PyTorch's path up to 3072 tokens, past
 * it a sort of the indices and segment sums, more and smaller kernels, not
 * modelled: timed as the feature kernel).  Our H100 traces: `aten::zeros >
 * aten::fill_` and the feature kernel under each `EmbeddingBackward0`, and
 * `aten::contiguous` before the position table's.
 */
static void embed_table_bwd(struct ctx *c, int r, const struct shape *z, double rows)
{
	double nh = z->b * z->s * z->h;
	sl_kernel(c, r, KC_ELEMENTWISE, "elementwise_kernel<copy> (embedding gradient)",
		  ew(c, nh, 1));
	sl_kernel(c, r, KC_ELEMENTWISE, "vectorized_elementwise_kernel<fill> (embedding gradient)",
		  ew(c, rows * z->h, 0));
}

void sl_embed_bwd(struct ctx *c, int r, const struct shape *z)
{
	double nh = z->b * z->s * z->h, sp = c->in->lay.sp ? z->t : 1;
	/* LoRA: the embedding is frozen and nothing before it needs a
	 * gradient; autograd runs none of its backward. */
	if (frozen(c))
		return;
	/* The dropout's (as the layers': the gradient and the mask read, on
	 * the rank's tokens), the reduction's backward, then with learned
	 * positions the position table's gradient (its rows the sequence's),
	 * then the word table's (V / t rows): 4 kernels, 7 with positions. */
	dropout_bwd_of(c, r, "masked_scale_kernel_dropout_backward (embedding)", nh / sp);
	/* (fp32_residual: embeddings.float()'s backward where it was cast,
	 * before or after the gather) */
	if (embed_cast_n(c, z) < nh)
		grad_cast_down(c, r, "elementwise_kernel<copy> (embedding gradient to bf16)",
			       embed_cast_n(c, z));
	embed_reduce_bwd(c, r, z);
	if (embed_cast_n(c, z) == nh)
		grad_cast_down(c, r, "elementwise_kernel<copy> (embedding gradient to bf16)", nh);
	if (!c->in->m.rope) {
		embed_table_bwd(c, r, z, z->s);
		sl_kernel(c, r, KC_EMBEDDING, "embedding_backward_feature_kernel (positions)",
			  ew(c, nh, 2));
	}
	embed_table_bwd(c, r, z, z->V / z->t);
	sl_kernel(c, r, KC_EMBEDDING, "embedding_backward_feature_kernel", ew(c, nh, 2));
	/* Tied on one stage: one gradient, added with the head's. */
	if (c->in->m.untied || c->in->lay.pp > 1)
		acc_add(c, r, z->V / z->t * z->h);
	if (!c->in->m.rope) /* learned positions */
		acc_add(c, r, z->s * z->h);
}

/*
 * The vocabulary-parallel cross-entropy's all-reduces over tp (Megatron-LM
 * tensor_parallel/cross_entropy.py _VocabParallelCrossEntropy.forward):
 * the logits' maximum (ReduceOp.MAX, after calculate_logits_max), then the
 * predicted logit and the sum of exponentials (ReduceOp.SUM each, after
 * calculate_predicted_logits), each [s, b] fp32 -- 4 b s bytes, s the
 * rank's s / cp tokens (the logits are the whole sequence's under sequence
 * parallelism: the output layer gathered its input).  torch.distributed.
 * all_reduce with async_op False: on the compute stream, synchronous.  The
 * backward communicates nothing.  None at tp 1 (the loss on one rank's
 * whole vocabulary).
 */
static void ce_allreduce(struct ctx *c, int r, const struct shape *z, const char *kname)
{
	struct comm_group g = {(int)z->t, z->tp_per_node};
	char pg[32] = "";
	if (z->t <= 1)
		return;
	if (!c->dry)
		snprintf(pg, sizeof(pg), "tp.%d", r);
	se_collective_dt(c, r, S_COMPUTE, GC_ALL_REDUCE, kname, 4 * z->b * z->s, g, pg,
			 se_dtype(c, 4));
}

/* The final norm, the logits and the loss (the last stage).  The output
 * layer stays in bf16 under fp8 (Transformer Engine quantises the
 * transformer layers' GEMMs).  It is Megatron-LM's column-parallel Linear
 * (gpt_model.py output_layer, tensor_parallel.ColumnParallelLinear with
 * parallel_output): with sequence parallelism the norm runs on the rank's
 * b s / t tokens and the Linear all-gathers them first
 * (LinearWithGradAccumulationAndAsyncCommunication.forward,
 * sequence_parallel: _gather_along_first_dim), the gather the last
 * layer's round already emits (tp_round: a row-parallel output's gather,
 * placed early for the next column-parallel input); without, nothing
 * forward (allreduce_dgrad: its input is not copied to the tp region).
 * Its backward is linear_bwd_g's: the saved shard gathered again (bf16)
 * beside the input gradient's GEMM, the input gradient reduce-scattered
 * (or all-reduced) beside the weight gradient's.  The vocabulary-
 * parallel cross-entropy as Megatron-LM runs it (tensor_parallel/
 * cross_entropy.py), in fp32 passes over the logits: the max and the sum
 * of exponentials read them (4 + 4 bytes a value); the cast to fp32
 * (2 + 4), the subtraction, the exponential and the division in place (8
 * each) read and write them; its three all-reduces (ce_allreduce) between
 * them: the maximum's after the passes that find it, the two sums' after
 * the sum of exponentials. */
void sl_head_fwd(struct ctx *c, int r, const struct shape *z)
{
	double bs = z->b * z->s, sp = c->in->lay.sp ? z->t : 1;
	resid_cast(c, r, bs * z->h / sp);
	sl_kernel(c, r, KC_NORM, "vectorized_layer_norm_kernel", ew(c, bs * z->h / sp, 1));
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_logits", sl_logit_dtype(c->in), 1, bs,
	      z->V / z->t, z->h);
	sl_kernel(c, r, KC_ELEMENTWISE, "cross_entropy_elementwise_fwd", 30 * bs * z->V / z->t);
	ce_allreduce(c, r, z, "ncclDevKernel_AllReduce_Max_f32_RING_LL");
	sl_kernel(c, r, KC_SOFTMAX, "cross_entropy_softmax_fwd", 8 * bs * z->V / z->t);
	ce_allreduce(c, r, z, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
	ce_allreduce(c, r, z, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
}

/* (softmax - one-hot) x the loss gradient from the saved fp32 softmax
 * (read 4, write 4), cast to bf16 (read 4, write 2); the logits' two
 * gradients; the final norm's. */
void sl_head_bwd(struct ctx *c, int r, const struct shape *z)
{
	double bs = z->b * z->s, sp = c->in->lay.sp ? z->t : 1;
	sl_kernel(c, r, KC_ELEMENTWISE, "cross_entropy_elementwise_bwd", 14 * bs * z->V / z->t);
	/* LoRA: the output layer frozen too (linear_bwd_g: no weight
	 * gradient) */
	linear_bwd_dt(c, r, "logits", sl_logit_dtype(c->in), bs, z->V / z->t, z->h, 0, z, z->ab,
		      z->h);
	norm_bwd(c, r, ew(c, bs * z->h / sp, 3));
	resid_cast_bwd(c, r, bs * z->h / sp);
	acc_norm(c, r, z);
}

/* A multi-token-prediction depth before its layer (multi_token_prediction.py
 * _get_embeddings, _concat_embeddings): the embedding of the tokens
 * shifted once more (the model's LanguageModelEmbedding: its tensor-
 * parallel reduction, embed_reduce), enorm and hnorm, their concatenation,
 * eh_proj (column parallel, 2h -> h / t; under sequence parallelism its
 * input all-gathered first, quantised under fp8: te_linear_gather_bytes),
 * its output all-gathered over tp (gather_from_tensor_model_parallel_
 * region, bf16), then with sequence parallelism the rank's tokens split
 * off (scatter_to_sequence_parallel_region: no communication).  Its layer,
 * final norm and output layer are the caller's (sl_layer_fwd,
 * sl_head_fwd). */
void sl_mtp_fwd(struct ctx *c, int r, const struct shape *z)
{
	double bs = z->b * z->s, t = z->t, sp = c->in->lay.sp ? t : 1, nh = bs * z->h / sp;
	sl_kernel(c, r, KC_EMBEDDING, "indexSelectLargeIndex", ew(c, bs * z->h, 1));
	embed_reduce(c, r, z);
	sl_kernel(c, r, KC_NORM, "vectorized_layer_norm_kernel", ew(c, nh, 1));
	sl_kernel(c, r, KC_NORM, "vectorized_layer_norm_kernel", ew(c, nh, 1));
	sl_kernel(c, r, KC_ELEMENTWISE, "CatArrayBatchedCopy", ew(c, 2 * nh, 1));
	if (t > 1 && c->in->lay.sp)
		tp_coll_eb(c, r, z, S_COMPUTE, GC_ALL_GATHER, 2 * z->h,
			   te_linear_gather_bytes(c, KPERF_GATHER_ROW));
	linear_fwd(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_eh_proj", bs, z->h / t,
		   2 * z->h);
	if (t > 1)
		tp_coll(c, r, z, S_COMPUTE, GC_ALL_GATHER);
}

/* Its backward: with sequence parallelism the output's gradient all-
 * gathered over the sequence (the backward of scatter_to_sequence_
 * parallel_region: _gather_along_first_dim, bf16 on the compute stream),
 * then split over h (gather_from_tensor_model_parallel_region's backward:
 * no communication); eh_proj's gradients (no bias; Transformer Engine's
 * column-parallel Linear, get_mtp_layer_spec's TEColumnParallelLinear):
 * under sequence parallelism its saved input shard gathered again beside
 * the input gradient's GEMM (its column-wise copy, te_linear_gather_bytes
 * KPERF_GATHER_COL), and its input's gradient reduce-scattered
 * (all-reduced without) beside the weight gradient's (linear_bwd_g); the
 * two norms'; the embedding's gradient into the last stage's copy of it
 * (with sequence parallelism gathered first, embed_reduce_bwd). */
void sl_mtp_bwd(struct ctx *c, int r, const struct shape *z)
{
	double bs = z->b * z->s, t = z->t, sp = c->in->lay.sp ? t : 1, nh = bs * z->h / sp;
	if (t > 1 && c->in->lay.sp)
		tp_coll(c, r, z, S_COMPUTE, GC_ALL_GATHER);
	linear_bwd_g(c, r, "eh_proj", bs, z->h / t, 2 * z->h, 0, z,
		     te_linear_gather_bytes(c, KPERF_GATHER_COL), 2 * z->h);
	norm_bwd(c, r, ew(c, nh, 3));
	acc_norm(c, r, z);
	norm_bwd(c, r, ew(c, nh, 3));
	acc_norm(c, r, z);
	embed_reduce_bwd(c, r, z);
	sl_kernel(c, r, KC_EMBEDDING, "embedding_backward_feature_kernel", ew(c, bs * z->h, 2));
	acc_add(c, r, z->V / t * z->h);
}

/* The layout as the kernels of one layer need it (synth_build's). */
int sl_pp_per_node(const struct synth_in *in)
{
	return in->lay.tp * layout_dpc(&in->lay) * 2 <= hw_domain(in->hw) ? 2 : 1;
}

void sl_shape(const struct synth_in *in, struct shape *z)
{
	memset(z, 0, sizeof(*z));
	z->ab = kperf_act_bytes(in->lay.dtype);
	z->rb = kperf_resid_bytes(in->lay.dtype, in->lay.fp32_residual);
	z->b = in->lay.mbs;
	z->cp = layout_cp(&in->lay);
	z->s_full = in->m.seq;
	z->s = (double)in->m.seq / z->cp;
	z->h = in->m.hidden;
	z->f = in->m.ffn;
	z->V = in->m.vocab;
	z->t = in->lay.tp;
	z->a = in->m.heads;
	z->d = llm_head_dim(&in->m);
	z->w = llm_attn_width(&in->m);
	z->dqk = llm_qk_head_dim(&in->m);
	z->dv = llm_v_head_dim(&in->m);
	z->wo = llm_proj_width(&in->m);
	if (llm_mla(&in->m)) {
		z->mla = 1;
		z->ql = in->m.q_lora_rank;
		z->kvl = in->m.kv_lora_rank;
		z->rope = in->m.qk_rope_head_dim;
	}
	z->kv = llm_kv_heads(&in->m);
	z->qkv = llm_qkv_width(&in->m);
	z->qkv_r = llm_qkv_width_rank(&in->m, in->lay.tp);
	z->f_in = llm_ffn_in(&in->m);
	z->params = llm_layer_params_rank(&in->m, in->lay.tp);
	if (llm_hybrid(&in->m)) {
		const struct llm *m = &in->m;
		z->hybrid = 1;
		z->params = 0; /* the largest kind's the model has */
		for (int k = 0; k < LLM_KINDS; k++) {
			z->kparams[k] = llm_kind_params_rank(m, k, in->lay.tp);
			if (k != LLM_KIND_MOE && llm_kind_layers(m, k) > 0 &&
			    z->kparams[k] > z->params)
				z->params = z->kparams[k];
		}
		z->mh = m->ssm_heads;
		z->mg = m->ssm_groups;
		z->mdi = llm_ssm_inner(m);
		z->mn = m->ssm_state;
		z->mp = m->ssm_head_dim;
		z->mconv = m->ssm_conv;
		z->mq = m->ssm_chunk;
	}
	z->train = layout_lora(&in->lay, 0) ? layout_lora_params(&in->m, &in->lay) : z->params;
	z->gated = in->m.gated;
	z->p = in->lay.pp;
	z->v = layout_stage_chunks(&in->lay);
	z->head = layout_head_stage(&in->lay);
	z->m = in->lay.microbatches;
	z->L = in->m.layers / (in->lay.pp * z->v);
	/* A ring's neighbours share an NVLink domain when the cp x tp ranks
	 * fit one (Megatron-LM's order: tp, then cp). */
	z->cp_per_node = in->hw && (int64_t)z->cp * in->lay.tp <= hw_domain(in->hw) ? 2 : 1;
	if (llm_moe_layers(&in->m) > 0) {
		const struct llm *m = &in->m;
		const struct layout *l = &in->lay;
		int node = in->hw ? hw_domain(in->hw) : 1; /* the NVLink domain */
		z->moe = 1;
		z->E = m->experts;
		z->k = m->top_k;
		z->fe = m->expert_ffn > 0 ? m->expert_ffn : m->ffn;
		z->fe_in = (m->gated ? 2.0 : 1.0) * z->fe;
		z->shared = m->shared_experts;
		z->ep = layout_ep(l);
		z->etp = layout_etp(l);
		z->eloc = z->E / z->ep;
		z->n_tok = z->b * z->s / z->t;
		z->M = mem_moe_tokens(m, l);
		mem_moe_layer_params(m, l, &z->md, &z->me);
		z->edp = layout_edp(l);
		/* Megatron-LM's expert rank order: etp fastest, then ep, then the
		 * expert data-parallel replicas. */
		z->etp_per_node = comm_per_domain((int)z->etp, node);
		z->ep_per_node =
		    comm_per_domain((int)z->ep, node / (int)z->etp > 0 ? node / (int)z->etp : 1);
		z->tpep_per_node = comm_per_domain((int)(z->ep * z->etp), node);
		z->disp = l->moe_dispatcher;
		z->edp_per_node = comm_per_domain(
		    z->edp, node / (int)(z->ep * z->etp) > 0 ? node / (int)(z->ep * z->etp) : 1);
	}
}
