/* analytic.c - closed-form iteration time. */
#include "analytic.h"

#include <math.h>
#include <string.h>

#include "kperf.h"
#include "synth.h"

void analytic_in_default(struct analytic_in *in)
{
	memset(in, 0, sizeof(*in));
	layout_default(&in->lay);
	in->compute_eff = 1;
	in->comm_eff = 1.0;
}

/* A layer's backward with the gradient adds of an unfused accumulation
 * (acc_elem_bytes > 0): synth's steady microbatch has them, the first of
 * the mb does not, so a microbatch on average carries (mb - 1) / mb of
 * them.  *bwd is the backward without them (si's acc_elem_bytes 0). */
static void acc_share(struct synth_in *si, double acc_elem_bytes, double mb, int moe, double *bwd)
{
	double f, b, a;
	if (!(acc_elem_bytes > 0) || mb <= 1)
		return;
	si->acc_elem_bytes = acc_elem_bytes;
	if (moe)
		synth_moe_layer_times(si, &f, &b, &a);
	else
		synth_layer_times(si, &f, &b, &a);
	si->acc_elem_bytes = 0;
	*bwd += (b - *bwd) * (mb - 1) / mb;
}

int analytic_estimate(const struct analytic_in *in, struct analytic_out *out, struct prism_err *err)
{
	const struct hw_profile *hw = in->hw;
	const struct layout *l = &in->lay;
	const struct llm *m = &in->m;
	int tp = l->tp, pp = l->pp, dp = l->dp, v = l->vp > 0 ? l->vp : 1;
	int cp = layout_cp(l), dpc = dp * cp; /* gradients over dp x cp */
	double peak = hw->peak_flops[in->lay.dtype], mb, act_bytes, n_ar;
	struct comm_est ce;
	struct layout lay = *l;

	memset(out, 0, sizeof(*out));
	mb = in->global_batch / ((double)l->mbs * dp);
	if (mb < 1 || mb != floor(mb))
		return prism_err_set(err, PRISM_EARG,
				     "global batch %.0f is not a multiple of microbatch %d x data "
				     "parallel %d",
				     in->global_batch, l->mbs, dp);
	/* Beyond the range: refused by the check, naming it. */
	lay.microbatches = mb > LAYOUT_MAX_MICRO ? LAYOUT_MAX_MICRO + 1 : (int)mb;
	if (layout_check(m, &lay, hw, err))
		return PRISM_EARG;
	out->microbatches = (int)mb;

	/* Per stage, one microbatch: the kernel model's time of the stage's
	 * layers, forward and backward with recomputation (full: the forward
	 * again; selective: the attention core's forward again), as synth
	 * builds them (synth_layer_times); stage 0's embedding and the last
	 * stage's head and loss (synth_extra_times); the tensor-parallel
	 * all-reduces of its layers and the pipeline transfers.  The pipeline
	 * runs at the pace of its slowest stage: m slots of it, and the fill
	 * and drain through the others, over v (the closed form of a flow shop
	 * of identical jobs; with equal stages (m + (p - 1)/v) slots,
	 * Narayanan et al. SC21 section 2.2). */
	{
		struct synth_in si;
		double lf, lb, la, emb, head, ar = 0, p2p = 0, sum = 0, worst = -1, tail = 0;
		double mlf = 0, mlb = 0, mla = 0, moe_comm = 0, md = 0, me = 0, cp_ring = 0;
		double wb, gb, ob, G, R;
		int shard, pn = hw_domain(hw) / tp;
		synth_in_default(&si);
		si.m = *m;
		si.hw = hw;
		si.lay = lay;
		synth_mem(&si, &out->mem);
		synth_mem_layout(&si, &lay);
		synth_layer_times(&si, &lf, &lb, &la);
		acc_share(&si, in->acc_elem_bytes, mb, 0, &lb);
		if (cp > 1) {
			/* Ring attention: cp - 1 key-value transfers forward (and
			 * again when the forward is recomputed), cp - 1 of twice the
			 * bytes backward, each beside one step of the ring (la / cp
			 * forward, twice that backward): what a transfer takes
			 * beyond its step is exposed. */
			double kv = llm_kv_heads(m) < tp ? 1 : (double)llm_kv_heads(m) / tp;
			double bytes = 2.0 * l->mbs * m->seq / cp * kv * m->hidden / m->heads * 2;
			int fr = 1 + (l->recompute != LAYOUT_RECOMPUTE_NONE ? 1 : 0);
			struct comm_group g = {2, (long)cp * tp <= hw_domain(hw) ? 2 : 1};
			double tf, tb;
			comm_time(hw, GC_SEND_RECV, bytes, g, in->comm_eff, COMM_AUTO, &ce);
			tf = ce.time_s;
			comm_time(hw, GC_SEND_RECV, 2 * bytes, g, in->comm_eff, COMM_AUTO, &ce);
			tb = ce.time_s;
			cp_ring = (cp - 1) * (fr * (tf > la / cp ? tf - la / cp : 0) +
					      (tb > 2 * la / cp ? tb - 2 * la / cp : 0));
			if (l->cp_allgather) {
				/* Llama 3's form: all-gather K and V before the
				 * attention (again when recomputed), reduce-scatter
				 * their gradients after it, neither hidden. */
				struct comm_group ga = {
				    cp, comm_per_domain(
					    cp, hw_domain(hw) / tp > 0 ? hw_domain(hw) / tp : 1)};
				double tg, tr;
				comm_time(hw, GC_ALL_GATHER, bytes * cp, ga, in->comm_eff,
					  COMM_AUTO, &ce);
				tg = ce.time_s;
				comm_time(hw, GC_REDUCE_SCATTER, bytes * cp, ga, in->comm_eff,
					  COMM_AUTO, &ce);
				tr = ce.time_s;
				cp_ring = fr * tg + tr;
			}
		}
		if (llm_moe_layers(m) > 0) {
			/* Mixture-of-experts layers: their own compute, and per
			 * layer the all-to-alls (dispatch and combine, forward and
			 * backward, again when recomputed) and the expert
			 * tensor-parallel gathers and reduce-scatters. */
			int rep = 4 + (l->recompute == LAYOUT_RECOMPUTE_FULL ? 2 : 0);
			double a2a = synth_moe_a2a_bytes(&si), et = layout_etp(&lay);
			int node = hw_domain(hw), ep = layout_ep(&lay);
			synth_moe_layer_times(&si, &mlf, &mlb, &mla);
			acc_share(&si, in->acc_elem_bytes, mb, 1, &mlb);
			if (a2a > 0) {
				int cap = node / (int)et > 0 ? node / (int)et : 1;
				comm_time(hw, GC_ALL_TO_ALL, a2a,
					  (struct comm_group){ep, comm_per_domain(ep, cap)},
					  in->comm_eff, COMM_AUTO, &ce);
				moe_comm += rep * ce.time_s;
			}
			if (et > 1) {
				double x = mem_moe_tokens(m, &lay) * m->hidden * 2;
				comm_time(
				    hw, GC_ALL_GATHER, x,
				    (struct comm_group){(int)et, comm_per_domain((int)et, node)},
				    in->comm_eff, COMM_AUTO, &ce);
				moe_comm += rep * ce.time_s;
			}
		}
		synth_extra_times(&si, &emb, &head);
		mem_bytes_per_param(mem_prec(lay.dtype), &wb, &gb, &ob);
		/* Tensor parallel: 2 all-reduces per layer forward, 2 backward
		 * (and 2 more when the forward is recomputed) of b s h
		 * activations. */
		act_bytes = (double)l->mbs * m->seq / layout_cp(l) * m->hidden * 2;
		n_ar = 4 + (l->recompute == LAYOUT_RECOMPUTE_FULL ? 2 : 0);
		if (tp > 1) {
			if (comm_time(hw, GC_ALL_REDUCE, act_bytes, (struct comm_group){tp, tp},
				      in->comm_eff, COMM_AUTO, &ce))
				return prism_err_set(err, PRISM_EARG, "tensor-parallel group of %d",
						     tp);
			ar = n_ar * ce.time_s;
		}
		/* Pipeline: the activation forward and its gradient back, per
		 * microbatch; adjacent stages sit in different NVLink domains
		 * once a stage's tensor- and data-parallel ranks fill one
		 * (Megatron's order). */
		if (pp > 1) {
			int across = (long)tp * dp * layout_cp(l) >= hw_domain(hw);
			double bytes = act_bytes / (l->sp ? tp : 1);
			comm_time(hw, GC_SEND_RECV, bytes, (struct comm_group){across ? 2 : 1, 1},
				  in->comm_eff, COMM_AUTO, &ce);
			p2p = 2 * ce.time_s;
		}
		/* Data parallel, ranks strided by tp: the sharding group G of
		 * consecutive ranks and its dp / G replicas. */
		shard = layout_shard_group(&lay);
		G = shard;
		R = (double)dpc / shard;
		for (int s = 0; s < pp; s++) {
			struct mem_stage ms;
			double n = layout_stage_layers(m, &lay, s), c, slot, dpt = 0, exposed = 0,
			       opt;
			double nm = 0, Pe = 0, edp = layout_edp(&lay);
			double layer_w = wb * llm_layer_params_rank(m, tp);
			struct comm_group gg = {shard, comm_per_domain(shard, pn)};
			struct comm_group gr = {
			    (int)R, comm_per_domain((int)R, pn / shard > 0 ? pn / shard : 1)};
			for (int ch = 0; ch < v; ch++)
				nm += layout_chunk_moe(m, &lay, s, ch);
			if (nm > 0) {
				/* Without shared experts an MoE layer keeps half the
				 * tensor-parallel collectives (the attention's). */
				double arm = m->shared_experts > 0 ? ar : ar / 2;
				mem_moe_layer_params(m, &lay, &md, &me);
				Pe = nm * me;
				c = ((n - nm) * (lf + lb) + nm * (mlf + mlb) + (s == 0 ? emb : 0) +
				     (s == pp - 1 ? head : 0)) /
				    in->compute_eff;
				slot =
				    c + (n - nm) * ar + nm * (arm + moe_comm) + n * cp_ring + p2p;
			} else {
				c = (n * (lf + lb) + (s == 0 ? emb : 0) +
				     (s == pp - 1 ? head : 0)) /
				    in->compute_eff;
				slot = c + n * ar + p2p;
				if (cp > 1)
					slot += n * cp_ring;
			}
			sum += slot;
			mem_stage(m, &lay, NULL, s, &ms);
			if (dpc > 1 || (Pe > 0 && edp > 1)) {
				/* The routed experts' share is reduced over the expert
				 * data-parallel group (edp ranks, ep x etp apart). */
				double P = ms.params - Pe, t_rs = 0, t_ar = 0, t_ag = 0, t_agl = 0,
				       hide;
				struct comm_group ge = {
				    (int)edp,
				    comm_per_domain(
					(int)edp,
					hw_domain(hw) / (layout_ep(&lay) * layout_etp(&lay)) > 0
					    ? hw_domain(hw) / (layout_ep(&lay) * layout_etp(&lay))
					    : 1)};
				if (Pe > 0 && edp > 1) {
					comm_time(hw,
						  l->zero == 0 ? GC_ALL_REDUCE : GC_REDUCE_SCATTER,
						  gb * Pe, ge, in->comm_eff, COMM_AUTO, &ce);
					if (l->zero == 0)
						t_ar += ce.time_s;
					else
						t_rs += ce.time_s;
					if (l->zero >= 1) {
						comm_time(hw, GC_ALL_GATHER, wb * Pe, ge,
							  in->comm_eff, COMM_AUTO, &ce);
						t_ag += ce.time_s;
					}
				}
				if (l->zero == 0) {
					comm_time(
					    hw, GC_ALL_REDUCE, gb * P,
					    (struct comm_group){dpc, comm_per_domain(dpc, pn)},
					    in->comm_eff, COMM_AUTO, &ce);
					t_ar += ce.time_s;
				} else {
					comm_time(hw, GC_REDUCE_SCATTER, gb * P, gg, in->comm_eff,
						  COMM_AUTO, &ce);
					t_rs += ce.time_s;
					if (R > 1) {
						comm_time(hw, GC_ALL_REDUCE, gb * P / G, gr,
							  in->comm_eff, COMM_AUTO, &ce);
						t_ar += ce.time_s;
					}
					comm_time(hw, GC_ALL_GATHER, wb * P, gg, in->comm_eff,
						  COMM_AUTO, &ce);
					t_ag += ce.time_s;
					comm_time(hw, GC_ALL_GATHER, layer_w, gg, in->comm_eff,
						  COMM_AUTO, &ce);
					t_agl = ce.time_s;
				}
				/* What hides: the last microbatch's backward (2/3 of its
				 * compute) when gradients are reduced during it. */
				hide = l->overlap_grad ? 2.0 / 3.0 * c : 0;
				switch (l->zero) {
				case 0:
				case 1:
					dpt = t_rs + t_ar + t_ag;
					exposed = t_rs + t_ar - hide;
					exposed = exposed > 0 ? exposed : 0;
					/* The parameter all-gather after the optimizer,
					 * or behind the next step's first forward. */
					if (l->overlap_param)
						exposed += t_ag - c / 3 > 0 ? t_ag - c / 3 : 0;
					else
						exposed += t_ag;
					break;
				case 2:
					/* Reduce-scattered after every microbatch's
					 * backward. */
					dpt = mb * t_rs + t_ar + t_ag;
					exposed = mb * (t_rs - hide > 0 ? t_rs - hide : 0) + t_ar +
						  (l->overlap_param
						       ? (t_ag - c / 3 > 0 ? t_ag - c / 3 : 0)
						       : t_ag);
					break;
				default: {
					/* ZeRO-3: every microbatch gathers each layer's
					 * weights forward and again backward and
					 * reduce-scatters its gradients, on one stream:
					 * with prefetch a layer's gather runs beside the
					 * previous layer's compute (backward, with its
					 * reduce-scatter); what exceeds it is exposed,
					 * and each direction's first gather. */
					double t_rsl = 0, t_arl = 0, lfw = lf / in->compute_eff;
					double lbw = lb / in->compute_eff, per;
					comm_time(hw, GC_REDUCE_SCATTER,
						  gb * llm_layer_params_rank(m, tp), gg,
						  in->comm_eff, COMM_AUTO, &ce);
					t_rsl = ce.time_s;
					if (R > 1) {
						comm_time(hw, GC_ALL_REDUCE,
							  gb * llm_layer_params_rank(m, tp) / G, gr,
							  in->comm_eff, COMM_AUTO, &ce);
						t_arl = ce.time_s;
					}
					dpt = mb * (2 * t_ag + t_rs) + t_ar;
					if (l->prefetch > 0)
						per = n * ((t_agl > lfw ? t_agl - lfw : 0) +
							   (t_agl + t_rsl + t_arl > lbw
								? t_agl + t_rsl + t_arl - lbw
								: 0)) +
						      2 * t_agl;
					else
						per = n * (2 * t_agl + t_rsl + t_arl);
					exposed = mb * per;
				}
				}
			}
			/* Optimizer: per parameter read and write the fp32 master
			 * and both moments (24 bytes), read the gradient and write
			 * the weight (4 bytes): memory-bound, over the shard. */
			opt = 28 * ms.params / (l->zero >= 1 ? G : 1) / hw->hbm_Bps;
			if (slot > worst) {
				worst = slot;
				out->t_compute = c;
				out->t_tp = n * ar;
				out->t_p2p = p2p;
			}
			if (dpt > out->t_dp)
				out->t_dp = dpt;
			if (exposed + opt > tail) {
				tail = exposed + opt;
				out->t_dp_exposed = exposed;
				out->t_opt = opt;
			}
		}
		out->t_slot = worst;
		out->t_bubble = (sum - worst) / v;
		out->t_iter = mb * worst + out->t_bubble + tail;
	}
	(void)peak;
	out->model_flops = llm_flops_iter(m, in->global_batch, 0);
	out->mfu = out->model_flops / (out->t_iter * (double)tp * pp * dp * cp * peak);
	out->tokens_per_s = in->global_batch * m->seq / out->t_iter;
	return 0;
}
