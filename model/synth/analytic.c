/* analytic.c - closed-form iteration time. */
#include "analytic.h"

#include <math.h>
#include <stddef.h>
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
 * them.  *bwd is the backward without them (si's acc_elem_bytes -1:
 * none, whatever the optimizer; synth_acc_bytes). */
static void acc_share_of(struct synth_in *si, double acc_elem_bytes, double mb, int moe, int kind,
			 double *bwd)
{
	double f, b, a;
	acc_elem_bytes = synth_acc_bytes(acc_elem_bytes, &si->lay);
	if (!(acc_elem_bytes > 0) || mb <= 1)
		return;
	si->acc_elem_bytes = acc_elem_bytes;
	if (moe)
		synth_moe_layer_times(si, &f, &b, &a);
	else
		synth_kind_layer_times(si, kind, &f, &b, &a);
	si->acc_elem_bytes = -1;
	*bwd += (b - *bwd) * (mb - 1) / mb;
}

/* The same adds' launches on the host: a layer's backward launches them in
 * (mb - 1) / mb of its microbatches (*hb: the host's backward without
 * them; kind LLM_KIND_FULL: synth_layer_host's layer, else the kind's). */
static void acc_host_share(struct synth_in *si, double acc_elem_bytes, double mb, int moe, int kind,
			   double *hb)
{
	double f, b;
	acc_elem_bytes = synth_acc_bytes(acc_elem_bytes, &si->lay);
	if (!(acc_elem_bytes > 0) || mb <= 1)
		return;
	si->acc_elem_bytes = acc_elem_bytes;
	if (kind == LLM_KIND_FULL)
		synth_layer_host(si, moe, &f, &b);
	else
		synth_kind_layer_host(si, kind, &f, &b);
	si->acc_elem_bytes = -1;
	*hb += (b - *hb) * (mb - 1) / mb;
}

static void acc_share(struct synth_in *si, double acc_elem_bytes, double mb, int moe, double *bwd)
{
	acc_share_of(si, acc_elem_bytes, mb, moe, LLM_KIND_FULL, bwd);
}

/* What every stage's layers share, one microbatch, in seconds (and
 * bytes per parameter). */
struct terms {
	struct synth_in si;   /* the run as synth would build it */
	struct layout lay;    /* its partition resolved */
	double mb;	      /* microbatches */
	double lf, lb, la;    /* a dense layer: forward, backward, attention forward */
	double mlf, mlb, mla; /* a mixture-of-experts layer's */
	double lw, mlw;	      /* zero-bubble schedules: their backwards' W parts */
	/* The compute-heavy part of each (GEMMs, attention: synth_layer_split),
	 * which the step's own clock rescales (step_clock). */
	double lfh, lbh, lah, mlfh, mlbh, mlah, lwx, mlwx, embh, headh;
	double kfh[LLM_KINDS], kbh[LLM_KINDS];
	double lwh, mlwh;	    /* and the host's launches of them */
	double hf, hb, mhf, mhb;    /* the host's time of a dense (MoE) layer's forward, backward */
	double emb, head;	    /* stage 0's embedding, the last stage's head and loss */
	double emb_tp[2], head_tp;  /* their tensor-parallel collectives (synth_extra_tp_s) */
	struct synth_extra_host eh; /* the host's time of the two */
	struct synth_stage_host sh[LAYOUT_MAX_STAGES]; /* each stage's transfers' and
							* optimizer's, on the host */
	double ar;				       /* a layer's tensor-parallel all-reduces */
	double arf;	   /* their forward share: two of n_ar, the rest backward */
	double p2p;	   /* a microbatch's pipeline transfers */
	double cp_ring;	   /* a layer's context-parallel transfers, exposed */
	double moe_comm;   /* an MoE layer's all-to-alls and expert-TP gathers */
	double moe_disp;   /* of which the dispatcher's collectives */
	double moe_a2a;	   /* its four all-to-alls under the 1F1B overlap (0:
			    * none), hidden up to the layer's compute */
	double gstat;	   /* the gradient statistics (synth_grad_stats_s) */
	double wb, gb, ob; /* bytes per parameter: weights, gradients, optimizer */
	int pn;		   /* data-parallel ranks in an NVLink domain */
	double lp;	   /* a layer's parameters on a tensor-parallel rank (a
				  * hybrid model's: their mean) */
	/* A hybrid model's layers by kind (llm.h): forward, backward, the
	 * host's forward and backward, tensor-parallel collectives (one
	 * round of a transformer layer's two: half of ar). */
	double kf[LLM_KINDS], kb[LLM_KINDS], khf[LLM_KINDS], khb[LLM_KINDS], kar[LLM_KINDS];
	/* Each stage's fp8 amax reductions and updates, a microbatch
	 * (synth_stage_amax_s; 0 but under delayed scaling). */
	double amax[LAYOUT_MAX_STAGES];
	double amaxh[LAYOUT_MAX_STAGES][2]; /* and the host's launches of them,
					     * forward and backward */
};

/* The ring's q ranks as one group (layer.c cp_ring_group): within a
 * domain where the layer's cp x tp ranks fit, else as many in a domain as
 * its tensor-parallel groups leave room for, one where Ulysses' a ranks
 * fill it. */
static struct comm_group ring_group(const struct analytic_in *in, int q, int a)
{
	const struct layout *l = &in->lay;
	int d = hw_domain(in->hw), cap = a > 1 ? 1 : d / l->tp;
	if ((long)layout_cp(l) * l->tp <= d)
		return (struct comm_group){q, q};
	return (struct comm_group){q, comm_per_domain(q, cap > 0 ? cap : 1)};
}

/* Context parallelism's exposed time a layer.  Ring attention: cp - 1
 * key-value transfers forward (and again when the forward is recomputed),
 * cp - 1 of twice the bytes backward, each beside one step of the ring (la
 * / cp forward, twice that backward): what a transfer takes beyond its
 * step is exposed.  Llama 3's form: all-gather K and V before the
 * attention (again when recomputed), reduce-scatter their gradients after
 * it, neither hidden.  Ulysses (a2a, and a2a+p2p within a domain): four
 * all-to-alls a layer forward and backward, exposed, and a2a+p2p's ring
 * over the cp / a groups as above.  Under fp8 attention the backward's
 * transfers carry the key-value block alone, its gradients one all-to-all
 * beside the last step, and the blocks and gathers move fp8 bytes
 * (kperf_cp_kv_bytes, as layer.c's ring_attn and allgather_attn). */
static double cp_terms(const struct analytic_in *in, const struct terms *T)
{
	const struct hw_profile *hw = in->hw;
	const struct layout *l = &in->lay;
	const struct llm *m = &in->m;
	int tp = l->tp, cp = layout_cp(l),
	    fr = 1 + (l->recompute == LAYOUT_RECOMPUTE_FULL || layout_rc(l, LAYOUT_RC_CORE_ATTN));
	int a = layout_cp_a2a(l, hw_domain(hw)), q = cp / (a > 0 ? a : 1);
	double kv = llm_kv_heads(m) < tp ? 1 : (double)llm_kv_heads(m) / tp,
	       ab = kperf_act_bytes(l->dtype);
	/* K's and V's values, and their bytes a value on the wire and their
	 * gradients' (kperf_cp_kv_bytes: fp8 under fp8_attention). */
	double n = 2.0 * l->mbs * m->seq / cp * kv * llm_head_dim(m), tf, tb, ta = 0, t = 0;
	double eb = kperf_cp_kv_bytes(l->dtype, l->fp8_recipe, l->fp8_attention, 0),
	       gb = kperf_cp_kv_bytes(l->dtype, l->fp8_recipe, l->fp8_attention, 1);
	double bytes = n * eb;
	struct comm_group g = {2, (long)cp * tp <= hw_domain(hw) ? 2 : 1};
	struct comm_est ce;

	if (cp <= 1)
		return 0;
	if (l->cp_comm == LAYOUT_CP_ALLGATHER) {
		struct comm_group ga = {
		    cp, comm_per_domain(cp, hw_domain(hw) / tp > 0 ? hw_domain(hw) / tp : 1)};
		double tg, tr;
		comm_time(hw, GC_ALL_GATHER, bytes * cp, ga, in->comm_eff, COMM_AUTO, &ce);
		tg = ce.time_s;
		comm_time(hw, GC_REDUCE_SCATTER, n * ab * cp, ga, in->comm_eff, COMM_AUTO, &ce);
		tr = ce.time_s;
		return fr * tg + tr;
	}
	if (a > 1) {
		/* Ulysses: Q, K, V and the output all-to-all'd forward (again
		 * when recomputed), their gradients backward, none hidden. */
		struct comm_group ga = {
		    a, comm_per_domain(a, hw_domain(hw) / tp > 0 ? hw_domain(hw) / tp : 1)};
		double tok = (double)l->mbs * m->seq / cp, hq = (double)m->heads / tp, tq, to;
		comm_time(
		    hw, GC_ALL_TO_ALL,
		    tok *
			(hq * llm_qk_head_dim(m) + kv * (llm_qk_head_dim(m) + llm_v_head_dim(m))) *
			ab,
		    ga, in->comm_eff, COMM_AUTO, &ce);
		tq = ce.time_s;
		comm_time(hw, GC_ALL_TO_ALL, tok * hq * llm_v_head_dim(m) * ab, ga, in->comm_eff,
			  COMM_AUTO, &ce);
		to = ce.time_s;
		t = (fr + 1) * (tq + to);
	}
	if (q <= 1)
		return t;
	/* The ring over the q groups: each transfer beside one of its steps;
	 * backward the block and its gradient, or under fp8 attention the
	 * block alone and the gradients' all-to-all beside the last step
	 * (layer.c ring_attn). */
	comm_time(hw, GC_SEND_RECV, bytes, g, in->comm_eff, COMM_AUTO, &ce);
	tf = ce.time_s;
	comm_time(hw, GC_SEND_RECV, l->fp8_attention ? bytes : 2 * bytes, g, in->comm_eff,
		  COMM_AUTO, &ce);
	tb = ce.time_s;
	if (l->fp8_attention) {
		comm_time(hw, GC_ALL_TO_ALL, q * n * gb, ring_group(in, q, a), in->comm_eff,
			  COMM_AUTO, &ce);
		ta = ce.time_s > 2 * T->la / q ? ce.time_s - 2 * T->la / q : 0;
	}
	return t + ta +
	       (q - 1) * (fr * (tf > T->la / q ? tf - T->la / q : 0) +
			  (tb > 2 * T->la / q ? tb - 2 * T->la / q : 0));
}

/* An MoE layer's collectives: the dispatcher's, its all-to-alls beside the
 * other microbatch's layer hidden up to its compute (moe_terms). */
static void moe_overlap(const struct analytic_in *in, struct terms *T)
{
	double beside = (T->mlf + T->mlb) / in->compute_eff, a2a = T->moe_a2a;
	T->moe_comm = T->moe_disp + (a2a > 0 ? (a2a > beside ? a2a - beside : 0) - a2a : 0);
}

/* Mixture-of-experts layers: their own compute, and per layer the
 * dispatcher's collectives (dispatch and combine, forward and backward,
 * again when recomputed, fully or the moe module: synth_moe_dispatch_s). */
static void moe_terms(const struct analytic_in *in, struct terms *T)
{
	const struct layout *l = &in->lay;
	int rep =
	    2 + (l->recompute == LAYOUT_RECOMPUTE_FULL || layout_rc(l, LAYOUT_RC_MOE) ? 1 : 0);

	double t[3], h[3];
	if (llm_moe_layers(&in->m) == 0)
		return;
	synth_layer_split(&T->si, 1, LLM_KIND_FULL, t, h);
	T->mlf = t[0], T->mlb = t[1], T->mla = t[2];
	T->mlfh = h[0], T->mlbh = h[1], T->mlah = h[2];
	acc_share(&T->si, in->acc_elem_bytes, T->mb, 1, &T->mlb);
	T->moe_disp = rep * synth_moe_dispatch_s(&T->si);
	/* The 1F1B all-to-all overlap (moe_a2a_overlap): a layer's four
	 * all-to-alls (dispatch and combine, forward and backward) run
	 * beside the other microbatch's layer, hidden up to its compute;
	 * the estimate takes every unit as a steady pair (the first forward
	 * and last backward run alone: a screen's estimate errs fast there;
	 * DualPipeV's pairs, layout_a2a_overlap, the same). */
	if (layout_a2a_overlap(&in->m, l))
		T->moe_a2a = 4 * synth_moe_a2a_s(&T->si);
	moe_overlap(in, T);
}

/* The shared terms: layers' compute (the kernel model's time, forward and
 * backward with recomputation: full, the forward again; selective, the
 * modules' forwards again, as synth builds them), the embedding's
 * and the head's, tensor parallelism's collectives per layer forward and
 * backward (synth_layer_tp_s: synth's own, each priced by the collective
 * model),
 * the pipeline's activation forward and its gradient back per microbatch
 * (adjacent stages in different NVLink domains once a stage's tensor- and
 * data-parallel ranks fill one: Megatron's order).  0, or PRISM_EARG. */
static int shared_terms(const struct analytic_in *in, struct terms *T, struct prism_err *err)
{
	const struct hw_profile *hw = in->hw;
	const struct layout *l = &in->lay;
	const struct llm *m = &in->m;
	int tp = l->tp;
	double act_bytes =
	    (double)l->mbs * m->seq / layout_cp(l) * m->hidden * kperf_act_bytes(l->dtype);
	struct comm_est ce;

	double t[3], h[3];

	T->pn = hw_domain(hw) / tp;
	synth_layer_split(&T->si, 0, LLM_KIND_FULL, t, h);
	T->lf = t[0], T->lb = t[1], T->la = t[2];
	T->lfh = h[0], T->lbh = h[1], T->lah = h[2];
	acc_share(&T->si, in->acc_elem_bytes, T->mb, 0, &T->lb);
	synth_layer_host(&T->si, 0, &T->hf, &T->hb);
	acc_host_share(&T->si, in->acc_elem_bytes, T->mb, 0, LLM_KIND_FULL, &T->hb);
	if (llm_moe_layers(&in->m) > 0) {
		synth_layer_host(&T->si, 1, &T->mhf, &T->mhb);
		acc_host_share(&T->si, in->acc_elem_bytes, T->mb, 1, LLM_KIND_FULL, &T->mhb);
	}
	T->cp_ring = cp_terms(in, T);
	moe_terms(in, T);
	if (layout_zb(l->schedule)) {
		T->lw = synth_layer_wgrad_split(&T->si, 0, &T->lwx);
		T->mlw = synth_layer_wgrad_split(&T->si, 1, &T->mlwx);
		T->lwh = synth_layer_wgrad_host_s(&T->si, 0);
		T->mlwh = synth_layer_wgrad_host_s(&T->si, 1);
	}
	synth_extra_split(&T->si, t, h);
	T->emb = t[0], T->head = t[1], T->embh = h[0], T->headh = h[1];
	synth_extra_tp_s(&T->si, T->emb_tp, &T->head_tp);
	synth_extra_host(&T->si, &T->eh);
	synth_stage_host(&T->si, T->sh);
	for (int s = 0; s < l->pp && s < LAYOUT_MAX_STAGES; s++)
		T->amax[s] = synth_stage_amax_s(&T->si, s, T->amaxh[s]);
	mem_param_bytes(&T->lay, &T->wb, &T->gb, &T->ob);
	if (tp > 1) {
		if (comm_time(hw, GC_ALL_REDUCE, act_bytes, (struct comm_group){tp, tp},
			      in->comm_eff, COMM_AUTO, &ce))
			return prism_err_set(err, PRISM_EARG, "tensor-parallel group of %d", tp);
		/* The layer's collectives as synth emits and the collective
		 * model prices them, one call each (layer.c tp_coll_of via
		 * synth_layer_tp_s's dry run): 2 all-reduces forward (the
		 * attention's and the MLP's output) and 2 backward (the
		 * column-parallel Linears' input gradients, less what their
		 * weight gradients' GEMMs beside them cover: side_issued),
		 * 2 more when the forward is recomputed, 1 for the mlp
		 * module's;
		 * with sp each a reduce-scatter and an all-gather (at tp 8 on
		 * an H100 an all-reduce takes NVLS, an all-gather a ring: not
		 * half the all-reduce); MLA's of its compressed q and kv
		 * (mla_fwd, mla_bwd), LoRA's adapters' (lora_fwd, lora_bwd),
		 * sp's gathers in fp8 where the recipe casts before them
		 * (gather_bytes). arf: the forward's (attn_fwd and mlp_fwd), the rest
		 * backward with the repeats of recomputation. */
		T->ar = synth_layer_tp_s(&T->si, &T->arf);
	}
	T->lp = llm_layer_params_rank(m, tp);
	if (llm_hybrid(m)) {
		/* A hybrid model: each kind's times; the dense terms become
		 * their means over the layers (what stage_dp reads). */
		T->lf = T->lb = T->hf = T->hb = T->lp = T->lfh = T->lbh = 0;
		for (int k = 0; k < LLM_KINDS; k++) {
			double n = llm_kind_layers(m, k) / (double)m->layers;
			if (n <= 0)
				continue; /* (a kind the model lacks: its times 0) */
			synth_layer_split(&T->si, 0, k, t, h);
			T->kf[k] = t[0], T->kb[k] = t[1], T->kfh[k] = h[0], T->kbh[k] = h[1];
			acc_share_of(&T->si, in->acc_elem_bytes, T->mb, 0, k, &T->kb[k]);
			synth_kind_layer_host(&T->si, k, &T->khf[k], &T->khb[k]);
			acc_host_share(&T->si, in->acc_elem_bytes, T->mb, 0, k, &T->khb[k]);
			/* an E layer's tensor parallelism: its shared experts'
			 * round, none without */
			T->kar[k] = k == LLM_KIND_FULL				 ? T->ar
				    : k != LLM_KIND_MOE || m->shared_experts > 0 ? T->ar / 2
										 : 0;
			T->lf += n * T->kf[k];
			T->lb += n * T->kb[k];
			T->lfh += n * T->kfh[k];
			T->lbh += n * T->kbh[k];
			T->hf += n * T->khf[k];
			T->hb += n * T->khb[k];
			T->lp += n * llm_kind_params_rank(m, k, tp);
		}
	}
	/* The pipeline's transfers as synth sends them (synth_pp_transfer_s:
	 * b s h bf16 values each rank, 1 / t of them with sequence
	 * parallelism or pp_scatter_gather). */
	T->p2p = 2 * synth_pp_transfer_s(&T->si);
	return 0;
}

/* One stage's microbatch, as analytic_estimate's loop takes it: what it
 * holds (n layers, nm of them MoE; the embedding's and head's compute and
 * the host's launches of them, of its pipeline transfers and of its
 * data-parallel work), then its slot (the host-bound pace of a unit
 * pair), GPU side (gs), the host's slack over the step, compute (c),
 * tensor-parallel and offloading times, the slot's backward (bwd: its
 * part of the slot, host-bound or not), the parameters its
 * data-parallel collectives move (P, Pe routed experts'), and for the
 * fill and drain (pipe_bubble) the GPU side's forward and W passes. */
struct stage_est {
	double n, nm, emb, head, ehf, ehb, hhf, hhb;
	double xtp, xtpf; /* the embedding's and the loss's tensor-parallel
			   * collectives (and pp_scatter_gather's gathers),
			   * and their forward share */
	double c, slot, gs, slack, tp, off, bwd, P, Pe;
	double xh, ch;	   /* the compute-heavy part of emb + head, and of c */
	double xf;	   /* the pipeline transfers off the slot (pp_overlap) */
	double hx[2];	   /* what the host's launches outlast the GPU side by,
			    * forward and backward: the larger of the two
			    * splits' (the compute's, fwd_share's), what
			    * hides data-parallel exposure (host_hides) */
	double hfw;	   /* the host's launches of a unit's forward */
	double gf, wg, wp; /* the GPU side's forward share; zero-bubble
			    * schedules: the layers' W passes, on the GPU
			    * and at the stage's pace (the host's launches
			    * where longer) */
	double pace;	   /* how far apart its microbatches' backwards end
			    * in the steady state: the slowest stage's slot
			    * (its own where that is the slowest) */
};

/* One gradient bucket of `params` parameters reduced on the data-parallel
 * stream as synth's grad_reduce issues it: all-reduced over the dp x cp
 * ranks (ZeRO-0), or reduce-scattered over the sharding group with the
 * implementation's copies around it and, with hybrid sharding, the shard
 * all-reduced over the replicas. */
static double bucket_s(const struct analytic_in *in, const struct terms *T, double lp,
		       double params)
{
	const struct hw_profile *hw = in->hw;
	const struct layout *l = &in->lay;
	int dpc = l->dp * layout_cp(l), shard = layout_shard_group(&T->lay);
	double G = shard, R = (double)dpc / shard, t = 0;
	struct layout_dp_traits dt;
	struct comm_est ce;
	if (l->zero == 0) {
		comm_time(hw, GC_ALL_REDUCE, T->gb * params,
			  (struct comm_group){dpc, comm_per_domain(dpc, T->pn)}, in->comm_eff,
			  COMM_AUTO, &ce);
		return ce.time_s;
	}
	layout_dp_traits(l, lp, T->wb, T->gb, &dt);
	comm_time(hw, GC_REDUCE_SCATTER, dt.rs_bytes * params,
		  (struct comm_group){shard, comm_per_domain(shard, T->pn)}, in->comm_eff,
		  COMM_AUTO, &ce);
	t = ce.time_s;
	if (shard > 1 && dt.rs_in > 0)
		t += kperf_mem_s(hw, HW_MEM_ELEMENTWISE, dt.rs_in * params);
	if (shard > 1 && dt.rs_out > 0)
		t += kperf_mem_s(hw, HW_MEM_ELEMENTWISE, dt.rs_out * params / G);
	if (R > 1) {
		comm_time(
		    hw, GC_ALL_REDUCE, dt.rs_bytes * params / G,
		    (struct comm_group){
			(int)R, comm_per_domain((int)R, T->pn / shard > 0 ? T->pn / shard : 1)},
		    in->comm_eff, COMM_AUTO, &ce);
		t += ce.time_s;
	}
	return t;
}

/* ZeRO-0/1 with overlap_grad: how long after stage s's last backward ends
 * its data-parallel stream still reduces that backward's gradients.  The
 * gradients fill buckets in the order the backward makes them (the
 * head's, the layers' from the last, the embedding's) and a bucket is
 * reduced once full (synth_bucket_params: Megatron-LM's
 * param_and_grad_buffer.py, a bucket's reduction started by
 * register_grad_ready when its last gradient is in; the last, partly
 * filled one at the backward's end), one after another on the stream.
 * Only the last backward's chunk (chunk 0: an interleaved stage's other
 * chunks reduce theirs earlier) counts; its layers end the backward a
 * layer's share of it (bwd / n) apart, before the embedding's backward on
 * stage 0 (the host's launches of it, synth_extra_host).  So the last
 * buckets, the first layers' and the embedding's, are reduced after the
 * backward, whatever the backward's length (the estimate hid every
 * reduction behind 2/3 of the last microbatch's compute: gpt-small at dp
 * 2, 1.20 ms short under ZeRO-0, 0.61 ms of the 0.84 under ZeRO-1). */
/* How long stage 0's embedding backward keeps the last backward going
 * after the first layer's gradients are in: without a pipeline at the
 * pace of a unit (the host's launches of its kernels, or its GPU time
 * where longer, as the slot's bwd); with one, stage 0's last backward
 * follows the next stage's (pipe_ends's drain), its host long since
 * ahead, so at its GPU's pace.  (The host's alone until the embedding's
 * own kernels, docs/MODEL.md "The embedding's own kernels": at pp 2 its 12 launches
 * took 0.16 ms of the reductions' exposure that the simulated step keeps,
 * test_pipe_ends.) */
static double emb_tail(const struct analytic_in *in, const struct terms *T)
{
	if (in->lay.pp > 1)
		return T->eh.emb_bwd_gpu_s;
	return fmax(T->eh.emb_bwd_s, T->eh.emb_bwd_gpu_s);
}

/* Megatron-FSDP's ZeRO-2 (layout_unit_reduce) reduces each layer's, the
 * head's and the embedding's gradients on their own as synth's grad_ready
 * does: the chain's buckets are those pieces (cap 0), and *busy (where
 * not NULL) sums the stage's reductions (every chunk's), the stream's
 * work for one microbatch's backward. */
static double grad_chain(const struct analytic_in *in, const struct terms *T, int s,
			 const struct stage_est *e, double lp, double *busy)
{
	const struct llm *m = &in->m;
	int v = layout_stage_chunks(&in->lay), unit = layout_unit_reduce(&in->lay);
	int n0 = v > 1 ? layout_chunk_layers(m, &T->lay, s, 0) : (int)e->n;
	double first = 0, last = 0, cap = unit ? 0 : synth_bucket_params(&T->si), acc = 0,
	       f = -1e30, tau = e->n > 0 ? e->bwd / e->n : 0, te = s == 0 ? emb_tail(in, T) : 0, pl,
	       b, sum = 0;
	if (!layout_lora(&in->lay, 0))
		synth_extra_params(&T->si, s, &first, &last);
	pl = e->n > 0 && e->P > first + last ? (e->P - first - last) / e->n : 0;
	if (v == 1 && (acc = first) >= cap && acc > 0) { /* the head's, as the backward starts */
		sum += b = bucket_s(in, T, lp, acc);
		f = -(n0 * tau + te) + b;
		acc = 0;
	}
	for (int j = n0 - 1; j >= 0; j--) {
		acc += pl;
		if (acc >= cap && acc > 0) {
			double r = -(j * tau + te);
			sum += b = bucket_s(in, T, lp, acc);
			f = (f > r ? f : r) + b;
			acc = 0;
		}
	}
	acc += last;
	if (acc > 0) {
		sum += b = bucket_s(in, T, lp, acc);
		f = (f > 0 ? f : 0) + b;
	}
	/* The stage's other chunks' layers and the head (an interleaved
	 * stage's last chunk) are reduced a piece each too. */
	if (unit && v > 1) {
		if (e->n > n0 && pl > 0)
			sum += (e->n - n0) * bucket_s(in, T, lp, pl);
		if (first > 0)
			sum += bucket_s(in, T, lp, first);
	}
	if (busy)
		*busy = sum;
	return f > 0 ? f : 0;
}

/* What a layer's prefetched gather adds to the compute stream's time,
 * over is what the data-parallel stream's work for the layer (its gather,
 * backward with the next layer's reduce-scatter) outlasts the layer's
 * compute: FSDP2's copy-out of the gathered weights (out, on the compute
 * stream after the gather: foreach_all_gather_copy_out) runs while the
 * next gather is under way, so the layer takes the longer of that work
 * and its compute with the copy-out.  Added to the excess in full (as
 * until 2026-11-27), GPT-3 175B at tp 1 pp 1 dp 256 under FSDP2 ZeRO-3,
 * full recompute, 6 microbatches, was estimated 36.698 s against 36.345
 * simulated (1.0 % above: its data-parallel stream busy 99 % of the
 * step, the copy-outs in the compute's waits for it). */
static double zero3_copy_out(double over, double out)
{
	return over > out ? over : out;
}

/* A layer's forward and backward on the compute stream: its compute with
 * its tensor-parallel collectives, each direction's. */
static void layer_dirs(const struct analytic_in *in, const struct terms *T, double *lfw,
		       double *lbw)
{
	*lfw = T->lf / in->compute_eff + T->arf;
	*lbw = T->lb / in->compute_eff + T->ar - T->arf;
}

/* A layer's gradient reduction of `bytes` under sharding: *rs its
 * reduce-scatter over the sharding group gg, *ar the shard's all-reduce
 * over the replicas gr (0 without replicas: one group of G). */
static void layer_reduce(const struct analytic_in *in, double bytes, struct comm_group gg,
			 struct comm_group gr, double G, double *rs, double *ar)
{
	struct comm_est ce;
	comm_time(in->hw, GC_REDUCE_SCATTER, bytes, gg, in->comm_eff, COMM_AUTO, &ce);
	*rs = ce.time_s;
	*ar = 0;
	if (gr.n > 1) {
		comm_time(in->hw, GC_ALL_REDUCE, bytes / G, gr, in->comm_eff, COMM_AUTO, &ce);
		*ar = ce.time_s;
	}
}

/* A stage's data-parallel collectives and copies, each once (stage_dp
 * combines them by ZeRO stage): the sharding group gg (G ranks), the
 * replicas' gr (R), the gradients' reduce bytes a parameter rb, the
 * implementation's traits dt; the times rs (reduce-scatters), ar
 * (all-reduces), ag (the updated weights' gathers), agl (one layer's
 * gather), in / rc / out (the implementation's copies: before a layer's
 * gather, around its reduce-scatter, after the gather), ex (the routed
 * experts' reduction). */
struct dp_parts {
	struct comm_group gg, gr;
	double G, R, rb;
	struct layout_dp_traits dt;
	double rs, ar, ag, agl, in, rc, out, ex;
};

static void dp_parts(const struct analytic_in *in, const struct terms *T, const struct stage_est *e,
		     double lp, struct dp_parts *d)
{
	double n = e->n, P = e->P, Pe = e->Pe, gwb, layer_w;
	const struct hw_profile *hw = in->hw;
	const struct layout *l = &in->lay;
	int dpc = l->dp * layout_cp(l), shard = layout_shard_group(&T->lay);
	double edp = layout_edp(&T->lay);
	int epx = layout_ep(&T->lay) * layout_etp(&T->lay);
	struct comm_group ge = {
	    (int)edp, comm_per_domain((int)edp, hw_domain(hw) / epx > 0 ? hw_domain(hw) / epx : 1)};
	struct comm_est ce;

	memset(d, 0, sizeof(*d));
	d->G = shard;
	d->R = (double)dpc / shard;
	d->gg = (struct comm_group){shard, comm_per_domain(shard, T->pn)};
	d->gr = (struct comm_group){
	    (int)d->R, comm_per_domain((int)d->R, T->pn / shard > 0 ? T->pn / shard : 1)};
	/* A layer's weights as gathered: fp8 bytes under fp8_param_gather
	 * (mem_param_gather_bytes, synth's gather), the embedding's and
	 * head's in their bf16 buffer (T->wb). */
	gwb = mem_param_gather_bytes(&T->lay);
	layer_w = gwb * lp;
	/* The implementation (layout_dp_traits): its reduce dtype, its copies
	 * -- before a layer's gather (in) and around its reduce-scatter (rc)
	 * on the DP stream, after the gather on the compute stream (out) --
	 * and its prefetch. */
	layout_dp_traits(l, lp, T->wb, T->gb, &d->dt);
	d->rb = l->zero >= 1 ? d->dt.rs_bytes : T->gb;
	if (l->zero >= 1 && shard > 1) {
		double cin = d->dt.ag_in * lp / d->G,
		       crs = d->dt.rs_in * lp + d->dt.rs_out * lp / (d->dt.ar_flat ? 1 : d->G);
		d->in = cin > 0 ? kperf_mem_s(hw, HW_MEM_ELEMENTWISE, cin) : 0;
		d->rc = crs > 0 ? kperf_mem_s(hw, HW_MEM_ELEMENTWISE, crs) : 0;
		d->out =
		    d->dt.ag_out > 0 ? kperf_mem_s(hw, HW_MEM_ELEMENTWISE, d->dt.ag_out * lp) : 0;
	}
	if (Pe > 0 && edp > 1) {
		int ar = l->zero == 0 || d->dt.ar_flat;
		comm_time(hw, ar ? GC_ALL_REDUCE : GC_REDUCE_SCATTER, (ar ? d->rb : T->gb) * Pe, ge,
			  in->comm_eff, COMM_AUTO, &ce);
		d->ex = ce.time_s;
		if (d->dt.ar_flat)
			d->ex +=
			    kperf_mem_s(hw, HW_MEM_ELEMENTWISE, (d->dt.rs_in + d->dt.rs_out) * Pe);
		if (ar)
			d->ar += d->ex;
		else
			d->rs += d->ex;
		if (l->zero >= 1) {
			comm_time(hw, GC_ALL_GATHER, gwb * Pe, ge, in->comm_eff, COMM_AUTO, &ce);
			d->ag += ce.time_s;
		}
	}
	if (l->zero == 0) {
		comm_time(hw, GC_ALL_REDUCE, T->gb * P,
			  (struct comm_group){dpc, comm_per_domain(dpc, T->pn)}, in->comm_eff,
			  COMM_AUTO, &ce);
		d->ar += ce.time_s;
		return;
	}
	if (d->dt.ar_flat) {
		/* BF16_Optimizer (synth's grad_reduce_on): all-reduced whole
		 * over the dp x cp ranks, cast to rb and back. */
		comm_time(hw, GC_ALL_REDUCE, d->rb * P,
			  (struct comm_group){dpc, comm_per_domain(dpc, T->pn)}, in->comm_eff,
			  COMM_AUTO, &ce);
		d->ar += ce.time_s +
			 kperf_mem_s(hw, HW_MEM_ELEMENTWISE, (d->dt.rs_in + d->dt.rs_out) * P);
	} else {
		comm_time(hw, GC_REDUCE_SCATTER, d->rb * P, d->gg, in->comm_eff, COMM_AUTO, &ce);
		d->rs += ce.time_s;
		/* The implementation's copies around the stage's reduction. */
		if (shard > 1 && d->dt.rs_in > 0)
			d->rs += kperf_mem_s(hw, HW_MEM_ELEMENTWISE, d->dt.rs_in * P);
		if (shard > 1 && d->dt.rs_out > 0)
			d->rs += kperf_mem_s(hw, HW_MEM_ELEMENTWISE, d->dt.rs_out * P / d->G);
		if (d->R > 1) {
			comm_time(hw, GC_ALL_REDUCE, d->rb * P / d->G, d->gr, in->comm_eff,
				  COMM_AUTO, &ce);
			d->ar += ce.time_s;
		}
	}
	comm_time(hw, GC_ALL_GATHER, layer_w, d->gg, in->comm_eff, COMM_AUTO, &ce);
	d->agl = ce.time_s;
	/* The updated weights gathered a layer at a time, then the
	 * embedding's and head's (synth's gather_updated; Megatron's
	 * distributed optimizer gathers by bucket, each its own
	 * collective). */
	{
		double pl = n > 0 ? fmin(lp, P / n) : 0, rest = P - n * pl;
		if (pl > 0) {
			comm_time(hw, GC_ALL_GATHER, gwb * pl, d->gg, in->comm_eff, COMM_AUTO, &ce);
			d->ag += n * ce.time_s;
		}
		if (rest > 0) {
			comm_time(hw, GC_ALL_GATHER, T->wb * rest, d->gg, in->comm_eff, COMM_AUTO,
				  &ce);
			d->ag += ce.time_s;
		}
	}
}

/* A stage's data-parallel collectives: *dpt their time, *exposed what
 * the step waits for, each[] the part of it every microbatch repeats,
 * each[0] in its forward and each[1] in its backward (FSDP's ZeRO-2
 * gathers and reductions, ZeRO-3's; 0 under ZeRO-0/1 and Megatron's and
 * DeepSpeed's ZeRO-2), *red the gradient reductions' part
 * of *exposed (ZeRO-0/1/2: grad_chain's, or the whole reduction without
 * overlap_grad).  e: the stage (its compute a microbatch c, its n layers,
 * P its parameters outside the routed experts, Pe the experts').  Ranks are
 * strided by tp: the sharding group of consecutive ranks and its dp /
 * group replicas; the routed experts' share is reduced over the expert
 * data-parallel group (edp ranks, ep x etp apart); the collectives'
 * times from dp_parts. */
static void stage_dp(const struct analytic_in *in, const struct terms *T, int s,
		     const struct stage_est *e, double *dpt, double *exposed, double each[2],
		     double *red)
{
	double c = e->c, n = e->n, P = e->P, Pe = e->Pe;
	const struct layout *l = &in->lay;
	int dpc = l->dp * layout_cp(l);
	double edp = layout_edp(&T->lay), mb = T->mb, hide;
	/* A layer's trained parameters (LoRA: its adapters'). */
	double lp = layout_lora(l, 0) ? layout_lora_params(&in->m, l) : T->lp;
	int fsdp2nd =
	    l->zero == 2 && (l->dp_impl == LAYOUT_DP_FSDP || l->dp_impl == LAYOUT_DP_FSDP2);
	struct dp_parts d;
	double t_rs, t_ar, t_ag, t_agl, t_in, t_rc, t_out, t_ex, G, R, rb;
	struct comm_group gg, gr;

	*dpt = *exposed = each[0] = each[1] = *red = 0;
	if (!(dpc > 1 || (Pe > 0 && edp > 1)))
		return;
	dp_parts(in, T, e, lp, &d);
	t_rs = d.rs, t_ar = d.ar, t_ag = d.ag, t_agl = d.agl;
	t_in = d.in, t_rc = d.rc, t_out = d.out, t_ex = d.ex;
	G = d.G, R = d.R, rb = d.rb, gg = d.gg, gr = d.gr;
	/* What hides: the last microbatch's backward (2/3 of its compute) when
	 * gradients are reduced during it; the parameter all-gather after the
	 * optimizer, or behind the next step's first forward. */
	hide = l->overlap_grad ? 2.0 / 3.0 * c : 0;
	switch (l->zero) {
	case 0:
	case 1:
		*each = 0;
		*dpt = t_rs + t_ar + t_ag;
		/* With overlap_grad the dense gradients' bucket chain
		 * (grad_chain), the routed experts' (their own buckets) beside
		 * it as before. */
		if (l->overlap_grad && !d.dt.ar_flat)
			*red = fmax(grad_chain(in, T, s, e, lp, NULL), t_ex - hide);
		else
			*red = t_rs + t_ar;
		*exposed = *red > 0 ? *red : 0;
		*exposed += l->overlap_param ? (t_ag - c / 3 > 0 ? t_ag - c / 3 : 0) : t_ag;
		break;
	case 2:
		/* Reduce-scattered after every microbatch's backward.  FSDP's
		 * SHARD_GRAD_OP gathers the weights for every microbatch's
		 * forward instead of after the step: the excess over each
		 * layer's forward and the first gather. */
		*dpt = mb * t_rs + t_ar + (fsdp2nd ? mb : 1) * t_ag;
		if (!fsdp2nd) {
			/* Each backward's buckets reduced as they fill (synth's
			 * grad_ready, DeepSpeed's stage 2 reduce buckets), on the
			 * data-parallel stream beside the later microbatches'
			 * compute, which does not wait for them: what the step
			 * waits for is the last backward's chain (grad_chain;
			 * one bucket after it without overlap_grad), or the
			 * stream's backlog where each microbatch's reductions
			 * (with the replicas' all-reduce) outlast the pace
			 * its backwards end at, the slowest stage's slot (the
			 * stage's own, as until 2026-11-27, put gpt3-1.3b tp 1
			 * pp 4 dp 32 over shards of 8, 16 microbatches, at
			 * 305.087 ms against 273.724 simulated, +11.5 %,
			 * stage 0's embedding reduced 16 times; 249.820 now:
			 * search_pipe_bound); the routed experts' as before.  (Every microbatch's excess
			 * over 2/3 of its backward added to the step, as until
			 * 2026-11-27, put gpt3-1.3b at tp 2 pp 2 dp 128 6 % above
			 * its simulated step once the gathers were right.) */
			double wd = t_rs - t_ex + (R > 1 ? t_ar : 0), busy = 0,
			       ch = l->overlap_grad ? grad_chain(in, T, s, e, lp, &busy)
						    : bucket_s(in, T, lp, P);
			/* Megatron-FSDP's per-unit reductions (grad_chain):
			 * the stream's work a microbatch is theirs. */
			if (layout_unit_reduce(l) && l->overlap_grad)
				wd = busy;
			*red = fmax(fmax(ch, mb * wd - ((mb - 1) * e->pace + e->bwd)), t_ex - hide);
			*exposed =
			    (*red > 0 ? *red : 0) +
			    (l->overlap_param ? (t_ag - c / 3 > 0 ? t_ag - c / 3 : 0) : t_ag);
			break;
		}
		{
			/* FSDP's SHARD_GRAD_OP reduces each layer's gradients
			 * as its backward ends (synth's unit_reduce), the
			 * reduce-scatter with its copies and the replicas'
			 * all-reduce on the data-parallel stream while the
			 * compute stream, which waits for none of them, runs
			 * the layers before it: a layer's reduction r takes
			 * the longer of itself and the next layer's backward
			 * and the last one's follows the backward, so r + (n -
			 * 1) max(0, r - lbw) outlast it; without overlap_grad
			 * the stage's, with the replicas', all after it.  (The
			 * stage's reduce-scatter less 2/3 of its compute, the
			 * replicas' all-reduce once after the step, as until
			 * 2026-11-27: gpt3-1.3b at dp 512 over shards of 8,
			 * full recomputation, one microbatch, estimated 65.117
			 * ms against 55.511 simulated, +17 %.) */
			double g1 = t_agl + t_in, lfw, lbw, r, rsl, arl;
			layer_dirs(in, T, &lfw, &lbw);
			layer_reduce(in, rb * lp, gg, gr, G, &rsl, &arl);
			r = t_rc + rsl;
			r += arl;
			each[1] = l->overlap_grad ? r + (n > 1 ? (n - 1) * fmax(0, r - lbw) : 0)
						  : t_rs + (R > 1 ? t_ar : 0);
			/* the copy-out within the next gather (zero3_copy_out) */
			each[0] = d.dt.prefetch > 0 ? n * zero3_copy_out(g1 - lfw, t_out) + g1
						    : n * (g1 + t_out);
		}
		*exposed = mb * (each[0] + each[1]);
		break;
	default: {
		/* ZeRO-3: every microbatch gathers each layer's weights forward
		 * and again backward and reduce-scatters its gradients, on one
		 * stream: with prefetch a layer's gather runs beside the previous
		 * layer's compute (backward, with its reduce-scatter); what
		 * exceeds it is exposed, and each direction's first gather. */
		double t_rsl, t_arl, lfw, lbw, g1;
		layer_dirs(in, T, &lfw, &lbw);
		layer_reduce(in, rb * lp, gg, gr, G, &t_rsl, &t_arl);
		/* A layer's DP-stream work: its gather after its copy-in, and
		 * backward its reduce-scatter with its copies. */
		g1 = t_agl + t_in;
		t_rsl += t_rc;
		*dpt = mb * (2 * t_ag + t_rs) + t_ar;
		/* FSDP2's copy-out runs on the compute stream after each
		 * gather (zero3_copy_out). */
		if (d.dt.prefetch > 0) {
			each[0] = n * zero3_copy_out(g1 - lfw, t_out) + g1;
			each[1] = n * zero3_copy_out(g1 + t_rsl + t_arl - lbw, t_out) + g1;
		} else {
			each[0] = n * (g1 + t_out);
			each[1] = n * (g1 + t_rsl + t_arl + t_out);
		}
		*exposed = mb * (each[0] + each[1]);
	}
	}
}

/* What of a microbatch's repeated data-parallel exposure (each[], stage_dp)
 * runs while the GPU waits for the host's launches: a host-bound unit
 * (the host's launches) outlasts its GPU side by that much (hx[0] the
 * forward's, hx[1] the backward's), and the gathers and reductions on the
 * data-parallel stream, with the compute's waits for them, fill it
 * (test_zero3_host_bound).  Each unit its own: the backward's gathers are
 * issued as its host reaches it, after the forward's launches, so a
 * forward's host-bound time cannot hide them (until 2026-11-27 the whole
 * slot's excess was set against the whole exposure).  The host's excess
 * hx is taken against the larger of two GPU-side splits: the slot's (as the compute splits) and the dry run's
 * (fwd_share), which each[] is measured against (lfw, lbw).  The slot's
 * alone took the backward's tensor-parallel share as the compute's, two
 * thirds of it, where sp's dry run has a third: gpt3-1.3b tp 8 dp 8 sp
 * FSDP2 prefetch 2 selective, 8 microbatches, 2.0 % above its simulated
 * step (test_zero3_estimate_bound); the dry run's alone, a forward
 * GPU-bound by a hair beside its host-bound backward, 0.4 % above it (tp
 * 2 dp 4 sp, DeepSpeed: the host runs ahead into the backward). */
static double host_hides(const double each[2], const double hx[2])
{
	return fmin(each[0], hx[0]) + fmin(each[1], hx[1]);
}

/* Stage s's optimizer: opt on the GPU after what is exposed of its
 * data-parallel collectives, or its host's launches (synth_stage_host) where
 * they end later.  The host, never waiting for the GPU within a step
 * (eager launches queue), starts them as its last backward's launches
 * end, slack before the GPU ends that backward (slack: what the stage's
 * units' GPU side outlasts their launches over the step, 0 where the host
 * sets every unit), less the launches its last backward adds (the
 * gradient reductions of ZeRO-0/1: dp_last_s); where those put the host
 * behind, the GPU's end of that backward waits for them (late), and the
 * optimizer's launches follow at once. */
static double opt_or_host(const struct terms *T, int s, double exposed, double opt, double slack)
{
	double ahead = slack - T->sh[s].dp_last_s, late = ahead < 0 ? -ahead : 0;
	return late + fmax(opt, T->sh[s].opt_s - (ahead + late) - exposed);
}

/* One stage's terms into the estimate's: the slowest stage's (*worst its
 * slot) compute, tensor-parallel, pipeline and offloading times; the
 * longest data-parallel time; the longest exposed tail (*tail) of
 * data-parallel collectives and optimizer. */
static void stage_terms(struct analytic_out *out, double *worst, double *tail, double slot,
			double c, double tp, double p2p, double off, double dpt, double exposed,
			double opt)
{
	if (slot > *worst) {
		*worst = slot;
		out->t_offload = off;
		out->t_compute = c;
		out->t_tp = tp;
		out->t_p2p = p2p;
	}
	if (dpt > out->t_dp)
		out->t_dp = dpt;
	if (exposed + opt > *tail) {
		*tail = exposed + opt;
		out->t_dp_exposed = exposed;
		out->t_opt = opt;
	}
}

/* Stage s's layers, embedding and head, and the host's launches beside
 * its layers'. */
static void stage_inputs(const struct analytic_in *in, const struct terms *T, int s,
			 struct stage_est *e)
{
	const struct llm *m = &in->m;
	int hs = layout_head_stage(&in->lay); /* the head's stage: the last, or 0 in a V */
	memset(e, 0, sizeof(*e));
	e->n = layout_stage_layers(m, &T->lay, s);
	e->emb = s == 0 ? T->emb : 0;
	e->head = s == hs ? T->head : 0;
	e->xh = (s == 0 ? T->embh : 0) + (s == hs ? T->headh : 0) * (1 + m->mtp_layers);
	/* Their tensor-parallel collectives on the compute stream: the
	 * embedding's reduction and the loss's all-reduces forward, the
	 * embedding gradient's gather backward. */
	e->xtpf = (s == 0 ? T->emb_tp[0] : 0) + (s == hs ? T->head_tp : 0);
	e->xtp = e->xtpf + (s == 0 ? T->emb_tp[1] : 0);
	/* And under pp_scatter_gather the receiver's all-gathers of its
	 * pipeline transfers, on the compute stream before the units that
	 * take them (synth_pp_gather_s). */
	{
		double gf, gb;
		synth_pp_gather_s(&T->si, s, &gf, &gb);
		e->xtpf += gf;
		e->xtp += gf + gb;
	}
	/* The host's launches of the two, forward and backward. */
	e->ehf = s == 0 ? T->eh.emb_fwd_s : 0;
	e->ehb = s == 0 ? T->eh.emb_bwd_s : 0;
	e->hhf = s == hs ? T->eh.head_fwd_s : 0;
	e->hhb = s == hs ? T->eh.head_bwd_s : 0;
	/* And of its pipeline transfers (with the embedding's) and of its
	 * data-parallel work a microbatch (ZeRO-3's gathers, ZeRO-2/3's
	 * reductions: synth_stage_host). */
	e->ehf += T->sh[s].xfer_fwd_s + T->sh[s].dp_fwd_s;
	e->ehb += T->sh[s].xfer_bwd_s + T->sh[s].dp_bwd_s;
	/* And of fp8 delayed scaling's amax reductions and updates (until
	 * 2026-11-27 their GPU time alone). */
	e->ehf += T->amaxh[s][0];
	e->ehb += T->amaxh[s][1];
	for (int ch = 0; ch < layout_stage_chunks(&in->lay); ch++)
		e->nm += layout_chunk_moe(m, &T->lay, s, ch);
	if (s == hs && m->mtp_layers > 0) {
		/* Multi-token prediction: a layer of the last one's kind and a
		 * head and loss more a depth (eh_proj left out). */
		e->n += m->mtp_layers;
		e->nm += llm_is_moe_layer(m, m->layers - 1) ? m->mtp_layers : 0;
		e->head *= 1 + m->mtp_layers;
		/* each depth's embedding (its reduction and gradient's
		 * gather) and loss */
		e->xtpf += m->mtp_layers * (T->emb_tp[0] + T->head_tp);
		e->xtp += m->mtp_layers * (T->emb_tp[0] + T->emb_tp[1] + T->head_tp);
		e->hhf *= 1 + m->mtp_layers;
		e->hhb *= 1 + m->mtp_layers;
	}
}

/* The forward's share of a stage's GPU side gs (the fill and drain of
 * pipe_ends take the stages' forward and backward on the GPU), tpc of it
 * its layers' tensor-parallel collectives: those split as the dry run
 * issues them (arf of ar forward: sp's gathers and reduce-scatters wait
 * on the compute stream forward, backward its reduce-scatter and
 * re-gather run mostly beside the GEMMs: sprs, spregather), the rest as
 * the layers' compute (ff its forward share).  The whole of gs split as
 * the compute put a third of gpt3-1.3b's tensor-parallel time at tp 2 sp
 * forward where the dry run has two thirds: with pp 4 vp 2 and the
 * stages' layers 6,6,8,4 the drain from the host-bound stage 2 (its host
 * absorbing the fill) was 0.20 ms long, the estimate 0.13 % above the
 * simulated step (test_analytic_uneven_interleaved).  The slot (a unit's
 * pace, the longer of its GPU side and its host's launches, forward and
 * backward apart) keeps the compute's split: a forward GPU-bound beside
 * a host-bound backward is not paced by the sum of the two longer sides
 * (the host runs ahead, the GPU catches up: max(F + B, hf + hb)), and
 * the split above makes such pairs more frequent (tried: gpt3-1.3b tp 2
 * pp 2 vp 2 dp 128 ZeRO-1 selective, 14,10, 0.46 % above its step). */
static double fwd_share(const struct terms *T, double gs, double tpc, double ff)
{
	return (gs - tpc) * ff + (T->ar > 0 ? tpc * T->arf / T->ar : 0);
}

/* A stage's pace in the steady state, a forward and a backward: gs its
 * GPU side, sides the longer of the GPU's and the host's each way, h the
 * host's launches of both.  The host never waits for the GPU (eager
 * launches queue), so where it is behind in one direction and ahead in
 * the other, it runs ahead into the next unit and the GPU catches up:
 * the pair takes max(gs, h), not the sum of the longer sides -- as it
 * was until 2026-11-27, which put host-bound long pipelines above their
 * simulated steps (gpt3-1.3b tp 8 pp 8 dp 2, 256 microbatches, ZeRO-1:
 * 781.507 ms against 775.658, 775.303 now; search_pipe_bound).  Where
 * each microbatch's forward and backward wait for their own
 * data-parallel gathers or reductions (ZeRO-3, FSDP's ZeRO-2, over more
 * than one rank), whose
 * exposure the host's excess each way hides (host_hides), the sides'
 * sum stays: the excess is spent there. */
static double unit_pace(const struct layout *l, double gs, double sides, double h)
{
	int each =
	    l->dp * layout_cp(l) > 1 &&
	    (l->zero == 3 ||
	     (l->zero == 2 && (l->dp_impl == LAYOUT_DP_FSDP || l->dp_impl == LAYOUT_DP_FSDP2)));
	return each ? sides : fmax(gs, h);
}

/* A hybrid model's stage: its layers by their kinds (E layers with their
 * dispatchers' collectives, their routed experts' parameters apart). */
static void hybrid_stage(const struct analytic_in *in, const struct terms *T, int s,
			 struct stage_est *e)
{
	const struct llm *m = &in->m;
	double gf = 0, gb = 0, hf = e->ehf + e->hhf, hb = e->ehb + e->hhb, ar = 0, tpc = 0, ne = 0,
	       md, me, ff, gsf, gh = 0, params, train;
	for (int ch = 0; ch < layout_stage_chunks(&in->lay); ch++) {
		int l0 = layout_chunk_first(m, &T->lay, s, ch),
		    nc = layout_chunk_layers(m, &T->lay, s, ch);
		for (int i = l0; i < l0 + nc; i++) {
			int k = llm_layer_kind(m, i);
			gf += T->kf[k], gb += T->kb[k], hf += T->khf[k], hb += T->khb[k];
			gh += T->kfh[k] + T->kbh[k];
			/* the ring's exposed transfers: attention's */
			tpc += T->kar[k];
			ar += T->kar[k] +
			      (k == LLM_KIND_FULL || k == LLM_KIND_ATTN ? T->cp_ring : 0) +
			      (k == LLM_KIND_MOE ? T->moe_comm : 0);
			ne += k == LLM_KIND_MOE;
		}
	}
	e->c = (gf + gb + e->emb + e->head) / in->compute_eff;
	e->ch = (gh + e->xh) / in->compute_eff;
	e->xf = in->lay.pp_overlap ? T->p2p : 0;
	e->gs = e->c + ar + T->p2p + T->amax[s] - e->xf + e->xtp;
	ff = gf + gb > 0 ? gf / (gf + gb) : 0.5;
	/* the GPU side's forward part (the embedding's and loss's
	 * collectives on their side) */
	gsf = (e->gs - e->xtp) * ff + e->xtpf;
	e->bwd = fmax(e->gs - gsf, hb);
	e->gf = fwd_share(T, e->gs - e->xtp, tpc, ff) + e->xtpf;
	e->hfw = hf;
	e->slot = unit_pace(&in->lay, e->gs, fmax(gsf, hf) + e->bwd, hf + hb);
	/* the larger of the two splits' (host_hides) */
	e->hx[0] = fmax(fmax(0, hf - gsf), hf - e->gf);
	e->hx[1] = fmax(e->bwd - (e->gs - gsf), hb - (e->gs - e->gf));
	e->slack = T->mb * (e->slot - hf - hb);
	e->tp = ar + e->xtp;
	mem_stage_params(m, &T->lay, s, &params, &train);
	if (ne > 0)
		mem_moe_layer_params(m, &T->lay, &md, &me);
	e->Pe = ne > 0 ? ne * me : 0;
	e->P = params - e->Pe;
}

/* A stage of the model's own layers (dense, MoE, with context
 * parallelism's ring, offloading): its GPU side, and the slot where the
 * host's launches outlast it; *fill the zero-bubble schedules' share of
 * the fill and drain, set by the slowest stage so far (worst). */
static void layer_stage(const struct analytic_in *in, const struct terms *T, int s, double worst,
			double *fill, struct stage_est *e)
{
	const struct llm *m = &in->m;
	const struct layout *l = &in->lay;
	const struct hw_profile *hw = in->hw;
	double n = e->n, nm = e->nm, md, me, slot, tpc = n * T->ar, params, train;
	if (nm > 0) {
		/* Without shared experts an MoE layer keeps half the
		 * tensor-parallel collectives (the attention's). */
		double arm = m->shared_experts > 0 ? T->ar : T->ar / 2;
		tpc = (n - nm) * T->ar + nm * arm;
		mem_moe_layer_params(m, &T->lay, &md, &me);
		e->Pe = nm * me;
		e->c = ((n - nm) * (T->lf + T->lb) + nm * (T->mlf + T->mlb) + e->emb + e->head) /
		       in->compute_eff;
		e->ch = ((n - nm) * (T->lfh + T->lbh) + nm * (T->mlfh + T->mlbh) + e->xh) /
			in->compute_eff;
		slot = e->c + (n - nm) * T->ar + nm * (arm + T->moe_comm) + n * T->cp_ring + T->p2p;
	} else {
		e->c = (n * (T->lf + T->lb) + e->emb + e->head) / in->compute_eff;
		e->ch = (n * (T->lfh + T->lbh) + e->xh) / in->compute_eff;
		slot = e->c + n * T->ar + T->p2p;
		if (layout_cp(l) > 1)
			slot += n * T->cp_ring;
	}
	slot += T->amax[s] + e->xtp;
	/* With pp_overlap the compute stream never waits for its sends, and
	 * in the steady state a stage's inputs come while it computes: the
	 * transfers lie on the fill and drain (pipe_ends), not in the slot
	 * (Megatron-LM's overlap_p2p_comm; synth's pp_send). */
	e->xf = l->pp_overlap ? T->p2p : 0;
	slot -= e->xf;
	{
		/* A unit is host-bound where the host's launches outlast its
		 * GPU side: forward and backward each the longer of the two,
		 * the GPU's split as its layers'.  Activation offloading (pp
		 * 1) launches a copy a layer each way, with its two event
		 * waits. */
		double hf = (n - nm) * T->hf + nm * T->mhf + e->ehf + e->hhf,
		       hb = (n - nm) * T->hb + nm * T->mhb + e->ehb + e->hhb;
		double gf = (n - nm) * T->lf + nm * T->mlf, gb = (n - nm) * T->lb + nm * T->mlb;
		double ff = gf + gb > 0 ? gf / (gf + gb) : 0.5, sf, sb, gsf, x = 0, y = 0;
		int L = layout_chunk_layers(m, &T->lay, s, 0), N = 0;
		if (l->offload_layers > 0 && n > 0) {
			N = l->offload_layers < L ? l->offload_layers : L - 1;
			for (int i = 0; i < N; i++) {
				double xi, yi;
				synth_offload_copy_s(
				    &T->si, hw, m->experts > 0 && llm_is_moe_layer(m, i), &xi, &yi);
				x += xi / N;
				y += yi / N;
			}
			hf += N * (T->si.cpu_op_s + T->si.launch_s + 4 * T->si.event_s);
			hb += N * (T->si.cpu_op_s + T->si.launch_s + 4 * T->si.event_s);
		}
		e->gs = slot;
		e->gf = fwd_share(T, slot - e->xtp, tpc, ff) + e->xtpf;
		if (layout_zb(l->schedule)) {
			e->wg = ((n - nm) * T->lw + nm * T->mlw) / in->compute_eff;
			e->wp = fmax(e->wg, (n - nm) * T->lwh + nm * T->mlwh);
		}
		/* (the embedding's and loss's collectives on their side) */
		gsf = (slot - e->xtp) * ff + e->xtpf;
		sf = fmax(gsf, hf);
		e->hfw = hf;
		sb = fmax(slot - gsf, hb);
		/* the larger of the two splits' (host_hides) */
		e->hx[0] = fmax(sf - gsf, hf - e->gf);
		e->hx[1] = fmax(sb - (slot - gsf), hb - (slot - e->gf));
		slot = unit_pace(l, slot, sf + sb, hf + hb);
		e->bwd = sb;
		e->slack = T->mb * (slot - hf - hb);
		/* The compute's waits for the copies (synth_offload_exposed),
		 * each layer the unit's average, each copy the offloaded
		 * layers' average. */
		if (N > 0) {
			e->off = synth_offload_exposed(L, N, sf / n, x) +
				 synth_offload_exposed(L, N, sb / n, y);
			slot += e->off;
			e->gs += e->off;
		}
		/* Zero-bubble schedules: the fill and drain of (p - 1) stages'
		 * F + B + W shrinks to (p - 1) max(F, F + B - W) (ZB-1p) or
		 * max(F, F + B - 2W) (ZB-2p, and ZB-V over its two chunks), B
		 * and W the backward's parts (Qi et al. 2024, Table 1 with the
		 * forwards the last stage waits for; test_zb_bubble). */
		if (layout_zb(l->schedule) && slot > worst && gf + gb > 0) {
			double wg = (n - nm) * T->lw + nm * T->mlw,
			       k = l->schedule == LAYOUT_ZB1P ? 2 : 3;
			*fill = fmax(gf, gf + gb - k * wg) / (gf + gb);
		}
	}
	e->slot = slot;
	e->tp = n * T->ar + e->xtp;
	mem_stage_params(m, &T->lay, s, &params, &train);
	e->P = train - e->Pe;
}

/* The schedules whose stages hold the model in order (GPipe, 1F1B,
 * interleaved, ZB-1P, ZB-2P; e[0 .. pp) the stages): when each stage's
 * last backward can end at the earliest (end[s]), and the step's
 * pipeline part, the latest of them with the drain below it (returned).
 * Stage s cannot start its first forward before the stages before it
 * have run theirs (the fill: each of them its GPU side's forward share
 * after its input, or its host's launches of it from the step's start
 * where they end later, as on stage 0), and its m slots
 * follow; the last microbatch's backward then goes back through the
 * stages before it (the drain: their GPU sides' backward shares, their
 * hosts long since ahead), each over v with interleaving's chunks, and
 * half a transfer each way a stage with pp_overlap; so stage s < w ends
 * no earlier than the slowest stage w's m slots with the drain from w
 * down to s.  A host-bound stage's host launches its units from the
 * step's start without waiting (eager launches queue), its GPU catching
 * up by the slot's excess over its GPU side each unit: that much of the
 * fill it absorbs (test_host_bound_bubble).  Under ZB-1P stage s holds its W
 * passes back until its (s+1)-th B (layout_zb_next), so s + 1 of them run
 * after its last B, at its pace (the host's launches where longer): the
 * last backward's B passes (without their W) go back through the stages
 * before w meanwhile, and each of them then runs its held W passes; ZB-2P
 * holds up to twice as many (taken as twice: early, so never late).  The
 * flow shop's closed form (every other stage's slot once over v, all
 * stages ending together) counted the stages after the slowest as
 * well, their fill too where a host-bound stage's host absorbs it, and
 * scaled ZB's by the GPU's W share where a host-bound stage's W passes
 * run at its host's pace: gpt-small at pp 2 dp 2, 8 microbatches,
 * host-bound, ZB-1P was estimated 0.27 ms above the simulated step once
 * the data-parallel tail was right (0.45 ms short before, the two errors
 * cancelling), 0.03 ms below it now (test_pipe_ends). */
static double pipe_ends(const struct analytic_in *in, const struct stage_est *e, double mb,
			double *end)
{
	const struct layout *l = &in->lay;
	int v = layout_stage_chunks(l),
	    zb = l->schedule == LAYOUT_ZB1P || l->schedule == LAYOUT_ZB2P, w = 0;
	double fill = 0, drain = 0, E = -1, k = l->schedule == LAYOUT_ZB2P ? 2 : 1, below = 0;
	for (int s = 0; s < l->pp; s++) {
		double lead = mb * fmax(0, e[s].slot - e[s].gs), d = drain, b;
		end[s] = mb * e[s].slot + fmax(0, fill / v - lead);
		if (zb)
			d = fmax(0, drain + (s > 0 && k == 1 ? e[0].wg : 0) -
					fmin(mb, k * (s + 1)) * e[s].wp);
		b = end[s] + d / v;
		if (b > E)
			E = b, w = s;
		fill = fmax(fill + e[s].gf, e[s].hfw) + e[s].xf / 2;
		drain += e[s].gs - e[s].gf - (zb ? e[s].wg : 0) + e[s].xf / 2;
	}
	/* The stages before w: w's last backward (its last B, under ZB),
	 * then the drain down to s (and s's held W passes). */
	for (int s = w - 1; s >= 0; s--) {
		double b = e[s].gs - e[s].gf - (zb ? e[s].wg : 0) + e[s].xf / 2, via;
		below += b;
		via = zb ? end[w] - fmin(mb, k * (w + 1)) * e[w].wp + below +
			       fmin(mb, k * (s + 1)) * e[s].wg
			 : end[w] + below / v;
		end[s] = fmax(end[s], via);
	}
	return E;
}

/* The step from the terms (analytic_estimate's; T->gstat set): out's
 * times, and the busiest GPU's (the slowest stage's) compute-heavy and
 * memory-bound kernels' time over the step into busy[2] (its layers',
 * embedding's and head's, mb microbatches; the memory-bound with its fp8
 * amax passes and its optimizer's kernels). */
static void step_of(const struct analytic_in *in, struct terms *T, struct analytic_out *out,
		    double busy[2])
{
	const struct hw_profile *hw = in->hw;
	const struct layout *l = &in->lay;
	const struct llm *m = &in->m;
	int pp = l->pp, v = layout_stage_chunks(l), wi = 0;
	double sum = 0, worst = -1, tail = 0, fill = 1, gw = 0;
	struct stage_est st[LAYOUT_MAX_STAGES];
	double stail[LAYOUT_MAX_STAGES], end[LAYOUT_MAX_STAGES];

	/* Per stage, one microbatch: the stage's layers, stage 0's embedding
	 * and the last stage's head and loss, the tensor-parallel all-reduces
	 * of its layers and the pipeline transfers.  The pipeline runs at the
	 * pace of its slowest stage: m slots of it, and the fill and drain
	 * through the others, over v (the closed form of a flow shop of
	 * identical jobs; with equal stages (m + (p - 1)/v) slots, Narayanan et
	 * al. SC21 section 2.2).  The fill and drain take each stage's GPU
	 * side (gs), not its host-bound slot: a stage's host launches its
	 * units without waiting, so its GPU waits for the stages before it
	 * only while their GPU work runs (test_host_bound_bubble).  Then
	 * each stage's data-parallel collectives (what is exposed of them)
	 * and its optimizer. */
	{
		/* The stages first: the slowest one's slot paces them all. */
		double w = -1;
		for (int s = 0; s < pp; s++) {
			stage_inputs(in, T, s, &st[s]);
			if (llm_hybrid(m))
				hybrid_stage(in, T, s, &st[s]);
			else
				layer_stage(in, T, s, w, &fill, &st[s]);
			w = fmax(w, st[s].slot);
		}
		for (int s = 0; s < pp; s++)
			st[s].pace = w;
	}
	for (int s = 0; s < pp; s++) {
		struct stage_est e = st[s];
		double dpt, exposed, each[2], opt, red;
		struct comm_group eg;
		double ebytes;
		sum += e.gs;
		if (e.slot > worst)
			gw = e.gs, wi = s;
		stage_dp(in, T, s, &e, &dpt, &exposed, each, &red);
		exposed -= T->mb * host_hides(each, e.hx);
		/* Where the host's launches of the last backward's reductions
		 * put its end late (opt_or_host), the data-parallel stream
		 * reduces the buckets it has meanwhile. */
		exposed -= fmin(red > 0 ? red : 0, fmax(0, T->sh[s].dp_last_s - e.slack));
		/* Tied embeddings on two stages (or MTP's word embedding):
		 * the first and the last stage all-reduce its gradient once
		 * their data-parallel reductions are done (synth's
		 * synth_embed_grad_reduce, Megatron-LM's
		 * _allreduce_word_embedding_grads in finalize_model_grads.py),
		 * before their optimizers. */
		if (synth_embed_grad_reduce(&T->si, &eg, &ebytes) &&
		    (s == 0 || s == layout_head_stage(&T->lay))) {
			struct comm_est ce;
			comm_time(hw, GC_ALL_REDUCE, ebytes, eg, in->comm_eff, COMM_AUTO, &ce);
			exposed += ce.time_s;
		}
		/* Optimizer: its kernels as the graph runs them (fp16's
		 * unscale, the clipping norm and scale, the update:
		 * synth_stage_host's opt_gpu_s, ss_optimizer timed dry) with
		 * the gradient norm's all-reduce across the stages (and fp16's
		 * found-inf flag's) between them (synth_grad_stats_s: every
		 * stage waits for every stage's last backward), or its
		 * launches, which issue that all-reduce and run on beside it
		 * (added after the launches until 2026-11-27: a wholly
		 * host-bound ZeRO-3 step 62 us above its simulated step,
		 * test_zero3_estimate_bound). */
		opt = opt_or_host(T, s, exposed, T->sh[s].opt_gpu_s + T->gstat, e.slack);
		stage_terms(out, &worst, &tail, e.slot, e.c, e.tp, T->p2p, e.off, dpt, exposed,
			    opt);
		st[s] = e;
		stail[s] = exposed + opt;
	}
	out->t_slot = worst;
	if (layout_v(l->schedule)) {
		/* ZB-V and DualPipeV (a V: stage 0 holds the first and the
		 * last chunk): the flow shop's closed form, every stage ending
		 * with the slowest. */
		out->t_bubble = (sum - gw) / v * fill;
		out->t_iter = T->mb * worst + out->t_bubble + tail;
	} else {
		/* Each stage's tail after its own last backward (pipe_ends),
		 * the step's end the latest of them. */
		double E = pipe_ends(in, st, T->mb, end), last = E;
		out->t_bubble = fmax(0, E - T->mb * worst);
		for (int s = 0; s < pp; s++)
			last = fmax(last, end[s] + stail[s]);
		out->t_iter = last;
	}
	busy[0] = T->mb * st[wi].ch;
	busy[1] = T->mb * (st[wi].c - st[wi].ch + T->amax[wi]) + T->sh[wi].opt_gpu_s;
}

/* The terms' compute-heavy parts times f (the step at another clock:
 * step_clock), and what follows from them: context parallelism's exposed
 * ring, an MoE layer's all-to-alls hidden by its compute. */
static void rescale(const struct analytic_in *in, struct terms *T, double f)
{
	double x = f - 1;
	T->lf += x * T->lfh, T->lb += x * T->lbh, T->la += x * T->lah;
	T->mlf += x * T->mlfh, T->mlb += x * T->mlbh, T->mla += x * T->mlah;
	T->lw += x * T->lwx, T->mlw += x * T->mlwx;
	T->emb += x * T->embh, T->head += x * T->headh;
	for (int k = 0; k < LLM_KINDS; k++)
		T->kf[k] += x * T->kfh[k], T->kb[k] += x * T->kbh[k];
	T->lfh *= f, T->lbh *= f, T->lah *= f, T->mlfh *= f, T->mlbh *= f, T->mlah *= f;
	T->lwx *= f, T->mlwx *= f, T->embh *= f, T->headh *= f;
	for (int k = 0; k < LLM_KINDS; k++)
		T->kfh[k] *= f, T->kbh[k] *= f;
	T->cp_ring = cp_terms(in, T);
	if (llm_moe_layers(&in->m) > 0)
		moe_overlap(in, T);
}

/*
 * The step's own clock (docs/MODEL.md, "Sustained rates": a step's own
 * mix).  The terms are timed at the run's reference clock c0
 * (hw_run_clock: the profile's step clock of the layout's dtype under its
 * cap, the reference mix's); the busiest GPU's span at it, less the
 * pipeline's fill and drain, holds t_c of compute-heavy kernels, t_m of
 * memory-bound ones and the rest waiting (exposed communication, host
 * gaps).  The fill and drain are left out: each is one idle phase, of
 * (p - 1) / v slots, where a pipeline step runs for seconds long against
 * the ~100 ms in which a busy GPU settles at its limit after idling
 * (probe-h100: the stream's first ~100 ms at the burst), so the slots
 * between them run at their own mix's clock whatever idles before or
 * after (a stated choice, conservative for short pipelined steps; not
 * measured on a pipeline).  The power balance at that
 * mix (hw_mix_clock: closed form on the burst-time amounts) gives the
 * clock c; the compute-heavy terms scale by c0 / c and the step is
 * assembled again from them (one estimate: no dry run again).  c0 where
 * the profile states no balance.
 */
static double step_clock(const struct analytic_in *in, struct terms *T, struct analytic_out *out,
			 const double busy[2])
{
	const struct layout *l = &in->lay;
	double c0 = hw_run_clock(in->hw, l->dtype, l->power_w), c, tw;
	struct mem_est mem;
	int mb;
	if (!hw_has_balance(in->hw))
		return c0;
	tw = out->t_iter - out->t_bubble - busy[0] - busy[1];
	c = hw_mix_clock(in->hw, l->dtype, l->power_w, busy[0], busy[1], tw > 0 ? tw : 0);
	if (c == c0)
		return c;
	rescale(in, T, c0 / c);
	mem = out->mem;
	mb = out->microbatches;
	memset(out, 0, sizeof(*out));
	out->mem = mem;
	out->microbatches = mb;
	step_of(in, T, out, (double[2]){0, 0});
	return c;
}

int analytic_estimate(const struct analytic_in *in, struct analytic_out *out, struct prism_err *err)
{
	const struct hw_profile *hw = in->hw;
	const struct layout *l = &in->lay;
	const struct llm *m = &in->m;
	int tp = l->tp, pp = l->pp, dp = l->dp, cp = layout_cp(l);
	double peak = hw->peak_flops[in->lay.dtype], busy[2];
	struct terms T;
	int rc;

	memset(out, 0, sizeof(*out));
	/* All but the stages' host times, 16 KB of which pp are read: those
	 * zeroed once pp is checked (the screen estimates every candidate
	 * of a sweep; zeroing all 256 was 2 % of its instructions). */
	memset(&T, 0, offsetof(struct terms, sh));
	memset((char *)&T + offsetof(struct terms, sh) + sizeof(T.sh), 0,
	       sizeof(T) - offsetof(struct terms, sh) - sizeof(T.sh));
	T.lay = *l;
	T.mb = in->global_batch / ((double)l->mbs * dp);
	if (T.mb < 1 || T.mb != floor(T.mb))
		return prism_err_set(err, PRISM_EARG,
				     "global batch %.0f is not a multiple of microbatch %d x data "
				     "parallel %d",
				     in->global_batch, l->mbs, dp);
	/* Beyond the range: refused by the check, naming it. */
	T.lay.microbatches = T.mb > LAYOUT_MAX_MICRO ? LAYOUT_MAX_MICRO + 1 : (int)T.mb;
	if (layout_check(m, &T.lay, hw, err))
		return PRISM_EARG;
	memset(T.sh, 0, (size_t)pp * sizeof(T.sh[0]));
	out->microbatches = (int)T.mb;
	synth_in_default(&T.si);
	T.si.m = *m;
	T.si.hw = hw;
	T.si.lay = T.lay;
	T.si.comm_eff = in->comm_eff; /* its collectives priced as the estimate's */
	T.si.acc_elem_bytes = -1;     /* the layers' times without the adds: acc_share */
	if (!in->no_mem)
		synth_mem(&T.si, &out->mem);
	synth_mem_layout(&T.si, &T.lay);
	if ((rc = shared_terms(in, &T, err)))
		return rc;
	T.gstat = synth_grad_stats_s(&T.si);
	step_of(in, &T, out, busy);
	out->clock = step_clock(in, &T, out, busy);
	out->model_flops = llm_flops_iter(m, in->global_batch, 0);
	out->mfu = out->model_flops / (out->t_iter * (double)tp * pp * dp * cp * peak);
	out->tokens_per_s = in->global_batch * m->seq / out->t_iter;
	return 0;
}

void analytic_in_of(const struct synth_in *in, struct analytic_in *ai)
{
	analytic_in_default(ai);
	ai->m = in->m;
	ai->hw = in->hw;
	ai->global_batch = (double)in->lay.mbs * in->lay.microbatches * in->lay.dp;
	synth_mem_layout(in, &ai->lay);
	ai->acc_elem_bytes = in->acc_elem_bytes;
	ai->no_mem = 1; /* the time only */
}

/* The last input's clock, per thread: a graph edit asks for both sides'
 * several times (same_hw, retime_plan, describe), a synth its build's and
 * its bound's. */
static _Thread_local struct {
	struct synth_in in;
	struct hw_profile hw;
	int have;
	double clock;
} clock_memo;

double analytic_step_clock(const struct synth_in *in)
{
	struct analytic_in ai;
	struct analytic_out ao;
	struct prism_err err;

	if (in->clock > 0)
		return in->clock;
	if (!in->hw || !hw_has_balance(in->hw))
		return 0;
	if (clock_memo.have && memcmp(&clock_memo.in, in, sizeof(*in)) == 0 &&
	    memcmp(&clock_memo.hw, in->hw, sizeof(*in->hw)) == 0)
		return clock_memo.clock;
	memcpy(&clock_memo.in, in, sizeof(*in));
	memcpy(&clock_memo.hw, in->hw, sizeof(*in->hw));
	prism_err_clear(&err);
	analytic_in_of(in, &ai);
	clock_memo.clock = analytic_estimate(&ai, &ao, &err) == 0 ? ao.clock : 0;
	clock_memo.have = 1;
	return clock_memo.clock;
}
