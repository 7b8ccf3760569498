/* analytic.c - closed-form iteration time. */
#include "analytic.h"

#include <math.h>
#include <string.h>

#include "kperf.h"
#include "synth.h"

void analytic_in_default(struct analytic_in *in)
{
	memset(in, 0, sizeof(*in));
	in->dtype = HW_BF16;
	in->compute_eff = 1;
	in->comm_eff = 0.8;
	in->lay.tp = in->lay.pp = in->lay.dp = in->lay.vp = in->lay.mbs = 1;
	in->lay.schedule = MEM_1F1B;
	in->lay.flash = 1;
	in->lay.prefetch = 1;
	in->lay.overlap_grad = 1;
	in->lay.pp_overlap = 1;
}

int analytic_estimate(const struct analytic_in *in, struct analytic_out *out,
		      struct prism_err *err)
{
	const struct hw_profile *hw = in->hw;
	const struct mem_layout *l = &in->lay;
	const struct llm *m = &in->m;
	int tp = l->tp, pp = l->pp, dp = l->dp, v = l->vp > 0 ? l->vp : 1, per_node;
	double peak = hw->peak_flops[in->dtype], mb, act_bytes, n_ar;
	struct comm_est ce;
	struct mem_layout lay = *l;

	memset(out, 0, sizeof(*out));
	if (peak <= 0)
		return prism_err_set(err, PRISM_EARG, "%s has no %s tensor path", hw->gpu,
				     hw_dtype_name(in->dtype));
	if (tp > hw->gpus_per_node || hw->gpus_per_node % tp)
		return prism_err_set(err, PRISM_EARG,
				     "tensor parallel %d does not fit a node of %d GPUs", tp,
				     hw->gpus_per_node);
	if (m->layers % (pp * v))
		return prism_err_set(err, PRISM_EARG, "%d layers do not divide into %d x %d stages",
				     m->layers, pp, v);
	if (m->heads % tp)
		return prism_err_set(err, PRISM_EARG, "%d heads do not divide by tensor parallel %d",
				     m->heads, tp);
	if (llm_kv_heads(m) % tp)
		return prism_err_set(err, PRISM_EARG,
				     "%d key-value heads do not divide by tensor parallel %d",
				     llm_kv_heads(m), tp);
	mb = in->global_batch / ((double)l->mbs * dp);
	if (mb < 1 || mb != floor(mb))
		return prism_err_set(err, PRISM_EARG,
				     "global batch %.0f is not a multiple of microbatch %d x data "
				     "parallel %d",
				     in->global_batch, l->mbs, dp);
	if (v > 1 && ((int)mb) % pp)
		return prism_err_set(err, PRISM_EARG,
				     "interleaving needs microbatches (%.0f) divisible by stages (%d)",
				     mb, pp);
	out->microbatches = (int)mb;
	lay.microbatches = (int)mb;

	/* Compute of one microbatch on one stage: the kernel model's time of
	 * the stage's layers, forward and backward with recomputation (full:
	 * the forward again; selective: the attention core's forward again),
	 * as synth builds them (synth_layer_times), and the logits' three
	 * GEMMs spread over the stages. */
	{
		struct synth_in si;
		double lf, lb, la, V = (double)m->vocab / tp, bs = (double)l->mbs * m->seq;
		int ldt = in->dtype == HW_FP8 || in->dtype == HW_FP4 ? HW_BF16 : in->dtype;
		synth_in_default(&si);
		si.m = *m;
		si.hw = hw;
		si.dtype = in->dtype;
		si.fp8_attention = in->fp8_attention;
		si.lay = lay;
		synth_mem(&si, &out->mem);
		synth_layer_times(&si, &lf, &lb, &la);
		out->t_compute = ((double)m->layers / pp * (lf + lb) +
				  (kperf_gemm_s(hw, ldt, 1, bs, V, m->hidden) +
				   kperf_gemm_s(hw, ldt, 1, bs, m->hidden, V) +
				   kperf_gemm_s(hw, ldt, 1, m->hidden, V, bs)) / pp) /
				 in->compute_eff;
	}
	/* Tensor parallel: 2 all-reduces per layer forward, 2 backward (and
	 * 2 more when the forward is recomputed) of b s h activations. */
	act_bytes = (double)l->mbs * m->seq * m->hidden * 2;
	n_ar = 4 + (l->recompute == MEM_RECOMPUTE_FULL ? 2 : 0);
	if (tp > 1) {
		if (comm_time(hw, GC_ALL_REDUCE, act_bytes, (struct comm_group){tp, tp},
			      in->comm_eff, COMM_AUTO, &ce))
			return prism_err_set(err, PRISM_EARG, "tensor-parallel group of %d", tp);
		out->t_tp = (double)m->layers / pp * n_ar * ce.time_s;
	}
	/* Pipeline: the activation forward and its gradient back, per
	 * microbatch; adjacent stages sit in different nodes once a stage's
	 * tensor- and data-parallel ranks fill a node (Megatron's order). */
	if (pp > 1) {
		int across = (long)tp * dp >= hw->gpus_per_node;
		double bytes = act_bytes / (l->sp ? tp : 1);
		comm_time(hw, GC_SEND_RECV, bytes,
			  (struct comm_group){across ? 2 : 1, 1}, in->comm_eff, COMM_AUTO, &ce);
		out->t_p2p = 2 * ce.time_s;
	}
	out->t_slot = out->t_compute + out->t_tp + out->t_p2p;
	out->t_bubble = (double)(pp - 1) / v * out->t_slot;
	/* Data parallel: bf16 gradients of the stage's parameters, ranks
	 * strided by tp: as many per node as fit. */
	if (dp > 1) {
		per_node = hw->gpus_per_node / tp;
		if (per_node > dp)
			per_node = dp;
		while (dp % per_node)
			per_node--;
		if (comm_time(hw, GC_ALL_REDUCE, 2 * llm_params(m) / ((double)tp * pp),
			      (struct comm_group){dp, per_node}, in->comm_eff, COMM_AUTO, &ce))
			return prism_err_set(err, PRISM_EARG, "data-parallel group of %d", dp);
		out->t_dp = ce.time_s;
		/* Buckets go out during the last microbatch's backward (2/3 of
		 * its compute); the rest is exposed. */
		out->t_dp_exposed = out->t_dp - 2.0 / 3.0 * out->t_compute;
		if (out->t_dp_exposed < 0)
			out->t_dp_exposed = 0;
	}
	/* Optimizer: per parameter read and write the fp32 master and both
	 * moments (24 bytes), read the bf16 gradient and write the bf16 weight
	 * (4 bytes): memory-bound. */
	out->t_opt = 28 * llm_params(m) / ((double)tp * pp) / (l->zero >= 1 ? dp : 1) / hw->hbm_Bps;
	(void)peak;
	out->t_iter = (mb + (double)(pp - 1) / v) * out->t_slot + out->t_dp_exposed + out->t_opt;
	out->model_flops = llm_flops_iter(m, in->global_batch, 0);
	out->mfu = out->model_flops / (out->t_iter * (double)tp * pp * dp * peak);
	out->tokens_per_s = in->global_batch * m->seq / out->t_iter;
	return 0;
}
