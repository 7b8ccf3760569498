/* edit.c - re-timing a clone, and calibrating rebuilt candidates. */
#include "edit.h"

#include <gsl/gsl_fit.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "dtype.h"
#include "infer.h"
#include "kperf.h"
#include "llm.h"
#include "synth.h"
#include "vec.h"

static double coll_time(const struct hw_profile *hw, int kind, double bytes, int n, int tp,
			double eff)
{
	struct comm_group g;
	struct comm_est e;
	int per = hw_domain(hw) / (tp > 1 ? tp : 1);
	g.n = n;
	g.per_node = n < per ? n : per > 0 ? per : 1;
	if (comm_time(hw, kind, bytes, g, eff, COMM_AUTO, &e))
		return 0;
	return e.time_s;
}

struct namedur {
	uint32_t name;
	int64_t dur;
};

static int cmp_namedur(const void *a, const void *b)
{
	const struct namedur *x = a, *y = b;
	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	return (x->dur > y->dur) - (x->dur < y->dur);
}

static int is_async_launch(const struct graph *g, uint32_t u)
{
	return g->kind[u] == GN_RUNTIME && !(g->flags[u] & NF_BLOCKING) &&
	       (g->rtclass[u] == RT_LAUNCH || g->rtclass[u] == RT_MEMSET ||
		g->rtclass[u] == RT_MEMCPY);
}

double edit_gpu_work(const struct graph *g)
{
	double w = 0;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->kind[u] >= GN_KERNEL)
			w += (double)g->dur_ns[u];
	return w;
}

int edit_unblock(struct graph *g, double keep, struct edit_stats *st)
{
	struct namedur *v = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*v));
	size_t n = 0;
	if (!v)
		return PRISM_ENOMEM;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (is_async_launch(g, u))
			v[n++] = (struct namedur){g->name[u], g->dur_ns[u]};
	qsort(v, n, sizeof(*v), cmp_namedur);
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		size_t lo = 0, hi = n, a, b;
		int64_t q;
		if (!is_async_launch(g, u))
			continue;
		while (lo < hi) { /* the name's first entry */
			size_t mid = lo + (hi - lo) / 2;
			if (v[mid].name < g->name[u])
				lo = mid + 1;
			else
				hi = mid;
		}
		a = lo;
		for (b = a; b < n && v[b].name == g->name[u]; b++)
			;
		q = v[a + (b - a) / 4].dur;
		if (g->dur_ns[u] > q && keep < 1) {
			int64_t d =
			    q + (int64_t)((double)(g->dur_ns[u] - q) * (keep > 0 ? keep : 0) + 0.5);
			st->unblocked++;
			st->unblocked_ns += g->dur_ns[u] - d;
			g->dur_ns[u] = d;
		}
	}
	free(v);
	return 0;
}

/* What kind of collective c is, for a shape edit: tensor-parallel (its
 * group the base's TP degree, in a layer), data-parallel (the DP group),
 * a pipeline transfer, or another. */
enum { CK_OTHER, CK_TP, CK_DP, CK_PP };

static int coll_role(const struct graph *g, uint32_t u, const struct edit_retime *r)
{
	const struct graph_coll *c = &g->colls[g->coll[u]];
	const char *pg = strtab_get(&g->st, c->pg);
	if (c->kind == GC_SEND || c->kind == GC_RECV || c->kind == GC_SEND_RECV)
		return CK_PP;
	if (r->tp_from > 1 && c->group_size == r->tp_from && !strstr(pg, "dp") &&
	    (strstr(pg, "tp") || g->layer[u] >= 0))
		return CK_TP;
	/* The data-parallel group's own traffic reduces gradients
	 * (all-reduce, reduce-scatter) or gathers sharded parameters
	 * (all-gather); an all-to-all or broadcast on a group of that size is
	 * the embedding's or the experts' exchange, or a parameter broadcast
	 * at start, which data parallelism does not re-size. */
	if (r->dp_from > 0 && c->group_size == r->dp_from &&
	    (c->kind == GC_ALL_REDUCE || c->kind == GC_REDUCE_SCATTER || c->kind == GC_ALL_GATHER ||
	     c->kind == GC_REDUCE))
		return CK_DP;
	return CK_OTHER;
}

static int is_ffn_activation(const char *name)
{
	return strstr(name, "elu") || strstr(name, "swiglu") || strstr(name, "silu") ||
	       strstr(name, "Elu") || strstr(name, "Silu");
}

/* How much more work kernel u does under a shape edit (edit.h). */
static double shape_factor(const struct graph *g, uint32_t u, int cls, const struct edit_retime *r)
{
	double hr = r->hr > 0 ? r->hr : 1;
	double tr = r->tp_from > 0 && r->tp_to > 0 ? (double)r->tp_from / r->tp_to : 1;
	double seq = r->sp ? tr : 1; /* norms and residuals split with SP */
	const char *name = strtab_get(&g->st, g->name[u]);
	if (g->phase[u] == PH_OPTIMIZER)
		return g->layer[u] >= 0 && r->layer_param_ratio > 0 ? r->layer_param_ratio : 1;
	if (g->layer[u] >= 0) {
		switch (cls) {
		case KC_GEMM:
			return hr * hr * tr;
		case KC_ATTENTION:
			return hr * tr;
		case KC_SOFTMAX:
			return tr; /* the scores: heads / t */
		case KC_NORM:
			return hr * seq;
		case KC_ELEMENTWISE:
			return is_ffn_activation(name) ? hr * tr : hr * seq;
		default:
			return hr;
		}
	}
	/* Outside the layers: the logits (V / t x h), their softmax and the
	 * cross-entropy's passes over them (V / t), the embedding and the
	 * final norm (h). */
	if (cls == KC_GEMM)
		return hr * tr;
	if (cls == KC_SOFTMAX || strstr(name, "cross_entropy") || strstr(name, "nll_loss") ||
	    strstr(name, "log_softmax"))
		return tr;
	return hr;
}

/* ---- re-timing by the kernel model ---------------------------------------- */

/* A GEMM the described transformer runs, C[M,N] = A[M,K] B[K,N]: its (M, N,
 * K) in the base (a) and in the candidate (c); dw: a weight gradient, whose
 * M and N a trace may hold either way round. */
struct lgemm {
	double a[3], c[3];
	int dw;
};

/* The GEMMs of one layer's forward (QKV, projection, FC1, FC2) and
 * backward (per linear layer in reverse, the input gradient then the
 * weight gradient; under full recomputation the forward's first), and the
 * head's (the logits: forward; input and weight gradients), in the order
 * Megatron-LM and prism synth run them. */
struct roles {
	struct lgemm fwd[4], bwd[12], head_fwd[1], head_bwd[2];
	int n_bwd;
};

/* The forward, input-gradient and weight-gradient GEMMs of y = x W on
 * T tokens, of width out from width in over t TP ranks: column-parallel
 * (col: out split) or row-parallel (in split); which = 0 (base) or 1. */
static void linear_gemms(struct lgemm *fwd, struct lgemm *dx, struct lgemm *dw, int which, double T,
			 double out, double in, int col, double t)
{
	double o = col ? out / t : out, i = col ? in : in / t;
	double *f = which ? fwd->c : fwd->a, *x = which ? dx->c : dx->a, *w = which ? dw->c : dw->a;
	f[0] = T, f[1] = o, f[2] = i;
	x[0] = T, x[1] = i, x[2] = o;
	w[0] = i, w[1] = o, w[2] = T;
	fwd->dw = dx->dw = 0;
	dw->dw = 1;
}

static void roles_init(struct roles *R, const struct edit_retime *r)
{
	struct lgemm lf[4], ldx[4], ldw[4], hf, hdx, hdw;
	double T = (double)(r->mbs > 0 ? r->mbs : 1) * r->m_from->seq;

	for (int which = 0; which < 2; which++) {
		const struct llm *m = which ? r->m_to : r->m_from;
		double t = which ? r->tp_to : r->tp_from, h = m->hidden;
		if (t < 1)
			t = 1;
		/* the QKV width per rank times t: key-value heads replicated
		 * when fewer than the ranks */
		linear_gemms(&lf[0], &ldx[0], &ldw[0], which, T, llm_qkv_width_rank(m, (int)t) * t,
			     h, 1, t);
		linear_gemms(&lf[1], &ldx[1], &ldw[1], which, T, h, h, 0, t);
		linear_gemms(&lf[2], &ldx[2], &ldw[2], which, T, llm_ffn_in(m), h, 1, t);
		linear_gemms(&lf[3], &ldx[3], &ldw[3], which, T, h, m->ffn, 0, t);
		linear_gemms(&hf, &hdx, &hdw, which, T, m->vocab, h, 1, t);
	}
	R->n_bwd = 0;
	for (int i = 0; i < 4; i++) {
		R->fwd[i] = lf[i];
		if (r->recompute == LAYOUT_RECOMPUTE_FULL)
			R->bwd[R->n_bwd++] = lf[i];
	}
	for (int i = 3; i >= 0; i--) {
		R->bwd[R->n_bwd++] = ldx[i];
		R->bwd[R->n_bwd++] = ldw[i];
	}
	R->head_fwd[0] = hf;
	R->head_bwd[0] = hdx;
	R->head_bwd[1] = hdw;
}

static int same3(const double *x, const double *y)
{
	return fabs(x[0] - y[0]) <= 0.5 && fabs(x[1] - y[1]) <= 0.5 && fabs(x[2] - y[2]) <= 0.5;
}

/* x and y are the same GEMM for the kernel model (kperf_gemm_s is
 * symmetric in M and N). */
static int same_gemm(const double *x, const double *y)
{
	double s[3] = {y[1], y[0], y[2]};
	return same3(x, y) || same3(x, s);
}

/*
 * The candidate's (M, N, K) of a GEMM recorded as old, the pos-th GEMM of
 * its pass, among the n GEMMs the description runs in that pass: those
 * whose base shape it has; where they disagree on the new shape (a
 * layer's FC1 and FC2 are both h x h on 4h / h ranks), the one at its
 * position.  1, or 0 when none fits.
 */
static int match_gemm(const struct lgemm *list, int n, long pos, const double old[3], double out[3])
{
	double cand[24][3];
	int idx[24], nc = 0;

	for (int i = 0; i < n && nc < 23; i++) {
		const struct lgemm *e = &list[i];
		double sw[3] = {e->a[1], e->a[0], e->a[2]};
		if (same3(old, e->a)) {
			memcpy(cand[nc], e->c, sizeof(cand[nc]));
			idx[nc++] = i;
		}
		if (e->dw && same3(old, sw) && !same3(sw, e->a)) {
			cand[nc][0] = e->c[1];
			cand[nc][1] = e->c[0];
			cand[nc][2] = e->c[2];
			idx[nc++] = i;
		}
	}
	if (!nc)
		return 0;
	for (int k = 1; k < nc; k++)
		if (!same_gemm(cand[k], cand[0]))
			goto ambiguous;
	memcpy(out, cand[0], 3 * sizeof(double));
	return 1;
ambiguous:
	for (int k = 0; k < nc; k++)
		if (idx[k] == pos % n) {
			memcpy(out, cand[k], 3 * sizeof(double));
			return 1;
		}
	return 0;
}

/* The kernel model's fixed overhead of a kernel of class cls in dtype dt
 * on hw (kperf.h). */
static double model_overhead_s(const struct hw_profile *hw, int cls, int dt)
{
	int kind = cost_mem_kind(cls);
	if (cls == KC_GEMM || cls == KC_CONV)
		return hw->k.gemm[dt].overhead_s;
	if (cls == KC_ATTENTION)
		return hw->k.attn[dt].overhead_s;
	return hw->k.mem_overhead_s[kind >= 0 ? kind : HW_MEM_ELEMENTWISE];
}

/* Where a GEMM stands in its layer's pass: the GEMMs before it on its
 * stream with the same step, microbatch, layer and phase. */
struct gemm_pos {
	uint32_t proc;
	int32_t iter, mb, layer;
	uint8_t phase;
	long n;
};

static long gemm_pos_next(struct gemm_pos *p, const struct graph *g, uint32_t u)
{
	if (p->n < 0 || p->proc != g->proc[u] || p->iter != g->iter[u] || p->mb != g->mb[u] ||
	    p->layer != g->layer[u] || p->phase != g->phase[u]) {
		p->proc = g->proc[u];
		p->iter = g->iter[u];
		p->mb = g->mb[u];
		p->layer = g->layer[u];
		p->phase = g->phase[u];
		p->n = 0;
	}
	return p->n++;
}

/*
 * Kernel u's times under the kernel model before and after the edit: *k0
 * on the base's GPU at its recorded shape, *k1 on the candidate's at its
 * new shape (both > 0), or 0 when the model cannot place it.  pos: a
 * GEMM's position in its pass (gemm_pos_next), else -1.
 */
static int model_times(const struct graph *g, uint32_t u, int cls, int dt,
		       const struct edit_retime *r, const struct roles *R, int shape, long pos,
		       double *k0, double *k1)
{
	double dims[4], b, hd, sq, skv, d, fl, bytes;
	int pass, kind;

	*k0 = *k1 = 0;
	if (g->kind[u] != GN_KERNEL)
		return 0;
	if (cls == KC_GEMM && cost_gemm_dims(g, u, dims)) {
		double o[3] = {dims[1], dims[2], dims[3]}, n[3] = {dims[1], dims[2], dims[3]};
		if (shape) {
			const struct lgemm *list;
			int nl;
			if (!R || dims[0] != 1 ||
			    (g->phase[u] != PH_FORWARD && g->phase[u] != PH_BACKWARD))
				return 0;
			if (g->layer[u] >= 0) {
				list = g->phase[u] == PH_FORWARD ? R->fwd : R->bwd;
				nl = g->phase[u] == PH_FORWARD ? 4 : R->n_bwd;
			} else {
				list = g->phase[u] == PH_FORWARD ? R->head_fwd : R->head_bwd;
				nl = g->phase[u] == PH_FORWARD ? 1 : 2;
			}
			if (!match_gemm(list, nl, pos, o, n))
				return 0;
		}
		*k0 = kperf_gemm_s(r->from, dt, dims[0], o[0], o[1], o[2]);
		*k1 = kperf_gemm_s(r->to, dt, dims[0], n[0], n[1], n[2]);
	} else if (cls == KC_ATTENTION && cost_attn_shape(g, u, &b, &hd, &sq, &skv, &d, &pass)) {
		double hd2 = hd, d2 = d;
		if (shape) {
			const struct llm *m0 = r->m_from, *m1 = r->m_to;
			double t0 = r->tp_from > 0 ? r->tp_from : 1,
			       t1 = r->tp_to > 0 ? r->tp_to : 1;
			if (!R)
				return 0;
			/* heads a / t per rank, head dim (llm.h) */
			hd2 = hd * ((double)m1->heads / t1) / ((double)m0->heads / t0);
			d2 = d * llm_head_dim(m1) / llm_head_dim(m0);
		}
		/* A trace does not record the mask: language models train causal. */
		*k0 = kperf_attn_s(r->from, dt, pass, b, hd, sq, skv, d, 1);
		*k1 = kperf_attn_s(r->to, dt, pass, b, hd2, sq, skv, d2, 1);
	} else if ((kind = cost_mem_kind(cls)) >= 0 && cost_work(g, u, &fl, &bytes) && bytes > 0) {
		/* (the op's element size: an optimizer pass's bandwidth by it) */
		double ne;
		int eb, impl = cost_mem_impl(cls, cost_op_input(g, u, &ne, &eb) ? eb : 0);
		*k0 = kperf_mem_impl_s(r->from, kind, impl, bytes);
		*k1 = kperf_mem_impl_s(r->to, kind, impl,
				       bytes * (shape ? shape_factor(g, u, cls, r) : 1));
	}
	return *k0 > 0 && *k1 > 0;
}

int edit_retime(struct graph *g, const struct edit_retime *r, struct edit_stats *st)
{
	uint8_t *cls = prism_malloc(g->n_nodes ? g->n_nodes : 1);
	double eff = r->comm_eff > 0 ? r->comm_eff : 1.0;
	double hr = r->hr > 0 ? r->hr : 1;
	int shape = hr != 1 || (r->tp_from > 0 && r->tp_to > 0 && r->tp_from != r->tp_to);
	int tp2 = r->tp_to > 0 ? r->tp_to : r->tp;
	struct roles roles, *R = NULL;
	struct gemm_pos gp = {0, 0, 0, 0, 0, -1};

	memset(st, 0, sizeof(*st));
	if (!cls || cost_classify_all(g, cls)) {
		free(cls);
		return PRISM_ENOMEM;
	}
	if (shape && r->m_from && r->m_to && r->m_from->seq > 0) {
		roles_init(&roles, r);
		R = &roles;
	}
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		double f = 1, a, d, k0, k1, ms, o0, o1;
		long pos = -1;
		int dt;
		if (g->kind[u] == GN_CPU && r->opt_scale > 0 && r->opt_scale != 1 &&
		    g->phase[u] == PH_OPTIMIZER && g->layer[u] < 0 &&
		    !(g->flags[u] & NF_IDLE_GAP)) {
			g->dur_ns[u] = prism_ns_round((double)g->dur_ns[u] * r->opt_scale);
			continue;
		}
		if (g->kind[u] < GN_KERNEL)
			continue;
		if (g->coll[u] != UINT32_MAX) {
			const struct graph_coll *c = &g->colls[g->coll[u]];
			int n = (int)c->group_size, n2 = n, tpa = r->tp, tpb = tp2, role;
			double bytes = (double)c->bytes, bytes2 = bytes, t0, t1;
			if (c->bytes <= 0 || n < 1) {
				st->colls_unsized++;
				continue;
			}
			role = coll_role(g, u, r);
			if (role == CK_DP && r->dp_to > 0)
				n2 = r->dp_to;
			if (role == CK_DP && r->layer_param_ratio > 0)
				bytes2 = bytes * r->layer_param_ratio;
			if (role == CK_TP && r->tp_to > 0) {
				n2 = r->tp_to;
				bytes2 = bytes * hr;
				tpa = tpb = 0; /* a TP group fills its ranks' node share */
			}
			if (role == CK_PP)
				bytes2 =
				    bytes * hr *
				    (r->tp_from > 0 && r->tp_to > 0 ? (double)r->tp_from / r->tp_to
								    : 1);
			if (role != CK_DP) {
				tpa = tpa ? tpa : 1;
				tpb = tpb ? tpb : 1;
			}
			if (n2 == n && bytes2 == bytes && r->to == r->from && tpa == tpb)
				continue;
			t0 = coll_time(r->from, c->kind, bytes, n, role == CK_TP ? 1 : tpa, eff);
			t1 = coll_time(r->to, c->kind, bytes2, n2, role == CK_TP ? 1 : tpb, eff);
			g->colls[g->coll[u]].bytes = (int64_t)(bytes2 + 0.5);
			g->colls[g->coll[u]].group_size = n2;
			st->colls_scaled++;
			/* The transfer is the model's from the bytes; what the trace
			 * holds beyond it (waiting for the group's other ranks to
			 * arrive) is kept as it was, not scaled with the transfer.
			 * A collective faster than the model: scaled by it. */
			d = (double)g->dur_ns[u];
			if (n2 < 2) /* one rank: nothing to send, nobody to wait for */
				g->dur_ns[u] = 0;
			else if (t0 > 0 && d >= t0 * 1e9)
				g->dur_ns[u] = prism_ns_round(d + (t1 - t0) * 1e9);
			else if (t0 > 0)
				g->dur_ns[u] = prism_ns_round(d * t1 / t0);
			continue;
		}
		dt = cost_dtype(g, u);
		if (dt < 0)
			dt = HW_BF16;
		a = cls[u] < KC_NCLASSES ? r->overhead_s[cls[u]] * 1e9 : 0;
		d = (double)g->dur_ns[u];
		if (a <= 0 || a >= d)
			a = 0;
		if (cls[u] == KC_GEMM && g->kind[u] == GN_KERNEL)
			pos = gemm_pos_next(&gp, g, u);
		if (r->opt_scale > 0 && r->opt_scale != 1 && g->phase[u] == PH_OPTIMIZER &&
		    g->layer[u] < 0) {
			/* More parameters: more of the same kernels' work (a fused
			 * optimizer over all of them), not larger kernels. */
			f = r->opt_scale;
			st->opt_scaled++;
			if (r->to != r->from)
				st->kernels_ratio++;
		} else if ((shape || r->to != r->from) &&
			   model_times(g, u, cls[u], dt, r, R, shape, pos, &k0, &k1)) {
			/* The fixed part stays; the rest scales as the kernel
			 * model's time from the old shape and GPU to the new. */
			g->dur_ns[u] = prism_ns_round(a + (d - a) * (k1 / k0));
			st->kernels_model++;
			if (r->to != r->from)
				st->kernels_scaled++;
			continue;
		} else if (shape && g->kind[u] != GN_MEMCPY && g->kind[u] != GN_MEMSET) {
			f = shape_factor(g, u, cls[u], r);
			st->kernels_ratio++;
		} else if (r->to != r->from && g->kind[u] != GN_MEMCPY) {
			st->kernels_ratio++;
		}
		if (r->to != r->from && g->kind[u] != GN_MEMCPY) {
			/* Compute-bound work at each GPU's peak and clock (hw.h:
			 * a power cap's, the sustained one). */
			if (cost_compute_bound(cls[u]) && r->to->peak_flops[dt] > 0)
				f *= r->from->peak_flops[dt] * hw_clock(r->from) /
				     (r->to->peak_flops[dt] * hw_clock(r->to));
			else
				f *= r->from->hbm_Bps / r->to->hbm_Bps;
			st->kernels_scaled++;
		}
		if (f == 1 && r->to == r->from)
			continue;
		/* The fixed parts stay -- the fitted overhead and the kernel
		 * model's own, on the new GPU its own -- and the work scales. */
		ms =
		    cls[u] < KC_NCLASSES && r->model_scale[cls[u]] > 0 ? r->model_scale[cls[u]] : 1;
		o0 = model_overhead_s(r->from, cls[u], dt) * ms * 1e9;
		o1 = model_overhead_s(r->to, cls[u], dt) * ms * 1e9;
		if (g->kind[u] == GN_KERNEL &&
		    !(r->opt_scale > 0 && r->opt_scale != 1 && g->phase[u] == PH_OPTIMIZER &&
		      g->layer[u] < 0) &&
		    d - a - o0 > 0)
			g->dur_ns[u] = prism_ns_round(a + o1 + (d - a - o0) * f);
		else
			g->dur_ns[u] = prism_ns_round(a + (d - a) * f);
	}
	free(cls);
	return 0;
}

static int launch_costs(const struct graph *g, double *op_s, double *launch_s);

/* Per kernel name (string id in g): total time and count per step. */
struct kstat {
	double t;
	double n;
	int cls;
};

static int name_stats(const struct graph *g, struct kstat **out)
{
	uint8_t *cls = prism_malloc(g->n_nodes ? g->n_nodes : 1);
	struct kstat *k = prism_calloc(g->st.n ? g->st.n : 1, sizeof(*k));
	double steps = g->n_ranks && g->n_iters ? (double)g->n_iters / g->n_ranks : 1;

	if (!cls || !k || cost_classify_all(g, cls)) {
		free(cls);
		free(k);
		return PRISM_ENOMEM;
	}
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		if (g->kind[u] < GN_KERNEL || g->coll[u] != UINT32_MAX || g->kind[u] == GN_MEMCPY ||
		    g->kind[u] == GN_MEMSET)
			continue;
		if (g->n_iters && g->iter[u] < 0)
			continue;
		k[g->name[u]].t += (double)g->dur_ns[u] * 1e-9 / steps;
		k[g->name[u]].n += 1 / steps;
		k[g->name[u]].cls = cls[u];
	}
	free(cls);
	*out = k;
	return 0;
}

/* Median host cost of launches and of the CPU work right before them. */
static int host_costs(const struct graph *g, double *op_s, double *launch_s)
{
	double ev;
	return edit_host_costs(g, op_s, launch_s, &ev);
}

int edit_host_costs(const struct graph *g, double *op_s, double *launch_s, double *event_s)
{
	int64_t *e = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*e));
	size_t ne = 0;
	int rc;
	if (!e)
		return -1;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->kind[u] == GN_RUNTIME &&
		    (g->rtclass[u] == RT_EVENT_RECORD || g->rtclass[u] == RT_STREAM_WAIT))
			e[ne++] = g->dur_ns[u];
	if (ne)
		qsort(e, ne, sizeof(*e), prism_cmp_i64);
	*event_s = ne ? (double)e[ne / 2] * 1e-9 : -1;
	free(e);
	rc = launch_costs(g, op_s, launch_s);
	return rc;
}

static int launch_costs(const struct graph *g, double *op_s, double *launch_s)
{
	int64_t *a = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*a));
	int64_t *b = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*b));
	size_t na = 0, nb = 0;

	if (!a || !b) {
		free(a);
		free(b);
		return -1;
	}
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		if (g->kind[u] != GN_RUNTIME || g->rtclass[u] != RT_LAUNCH)
			continue;
		a[na++] = g->dur_ns[u];
		if (u > 0 && g->proc[u - 1] == g->proc[u] && g->kind[u - 1] == GN_CPU)
			b[nb++] = g->dur_ns[u - 1];
	}
	if (na)
		qsort(a, na, sizeof(*a), prism_cmp_i64);
	if (nb)
		qsort(b, nb, sizeof(*b), prism_cmp_i64);
	*launch_s = na ? (double)a[na / 2] * 1e-9 : -1;
	*op_s = nb ? (double)b[nb / 2] * 1e-9 : -1;
	free(a);
	free(b);
	return na ? 0 : -1;
}

int edit_fit(const struct graph *base, const struct graph *model, const struct synth_in *model_in,
	     struct edit_fit *f)
{
	struct kstat *kb = NULL, *km = NULL;
	double tb[KC_NCLASSES] = {0}, tm[KC_NCLASSES] = {0}, sb = 0, sm = 0;
	double *x = NULL, *y = NULL, *w = NULL;
	int *c = NULL;
	size_t np = 0;
	int rc = PRISM_ENOMEM;

	memset(f, 0, sizeof(*f));
	if (name_stats(base, &kb) || name_stats(model, &km))
		goto out;
	x = prism_malloc((model->st.n + 1) * sizeof(*x));
	y = prism_malloc((model->st.n + 1) * sizeof(*y));
	w = prism_malloc((model->st.n + 1) * sizeof(*w));
	c = prism_malloc((model->st.n + 1) * sizeof(*c));
	if (!x || !y || !w || !c)
		goto out;
	for (uint32_t i = 0; i < base->st.n; i++)
		if (kb[i].n > 0) {
			tb[kb[i].cls] += kb[i].t;
			f->n[kb[i].cls] += (uint64_t)(kb[i].n + 0.5);
			sb += kb[i].t;
		}
	for (uint32_t i = 0; i < model->st.n; i++) {
		const struct calib_class *mc;
		const char *name;
		uint32_t j;
		double tmean;
		if (km[i].n <= 0)
			continue;
		tm[km[i].cls] += km[i].t;
		sm += km[i].t;
		/* The same kernel in the base, by name. */
		name = strtab_get(&model->st, i);
		j = strtab_find(&base->st, name, strlen(name));
		if (j == STRTAB_NONE || kb[j].n <= 0)
			continue;
		mc = &model_in->cost[km[i].cls];
		tmean = km[i].t / km[i].n / model_in->scale[km[i].cls];
		x[np] = (tmean - mc->overhead_s) * mc->eff;
		y[np] = kb[j].t / kb[j].n;
		w[np] = 1 / (y[np] * y[np]);
		c[np] = km[i].cls;
		np++;
	}
	f->overall = sm > 0 && sb > 0 ? sb / sm : 1;
	for (int k = 0; k < KC_NCLASSES; k++) {
		double xs[256], ys[256], ws[256], c0, c1, v00, v01, v11, ss;
		size_t n = 0, distinct = 0;
		f->cost[k] = model_in->cost[k];
		f->scale[k] = 1;
		for (size_t i = 0; i < np && n < 256; i++)
			if (c[i] == k) {
				for (size_t q = 0; q < n && !distinct; q++)
					if (fabs(xs[q] - x[i]) > 1e-3 * fabs(x[i]))
						distinct = 1;
				xs[n] = x[i];
				ys[n] = y[i];
				ws[n] = w[i];
				n++;
			}
		if (n >= 2 && distinct &&
		    gsl_fit_wlinear(xs, 1, ws, 1, ys, 1, n, &c0, &c1, &v00, &v01, &v11, &ss) == 0 &&
		    c0 >= -1e-9 && c1 > 0) {
			/* times are whole ns: an intercept within one of the
			 * origin is the origin, whichever side rounding left it */
			f->cost[k].overhead_s = c0 > 0 ? c0 : 0;
			f->cost[k].eff = 1 / c1;
			f->fitted[k] = 2;
		} else if (tb[k] > 0 && tm[k] > 0) {
			f->scale[k] = tb[k] / tm[k] * model_in->scale[k];
			f->fitted[k] = 1;
		} else {
			f->scale[k] = f->overall * model_in->scale[k];
		}
	}
	f->host_fitted = host_costs(base, &f->cpu_op_s, &f->launch_s) == 0 && f->cpu_op_s >= 0;
	rc = 0;
out:
	free(kb);
	free(km);
	free(x);
	free(y);
	free(w);
	free(c);
	return rc;
}

/* ---- parameters from the optimizer's op shapes ---------------------------- */

/* One shape "[a, b, ...]" at *p: its elements into *n, key into *key;
 * advances *p past it.  0, or -1 if *p is not a shape. */
static int shape_at(const char **p, double *n, uint32_t *key)
{
	const char *s = *p;
	uint64_t h = 1469598103934665603u;
	double prod = 1;
	while (*s == ' ')
		s++;
	if (*s != '[')
		return -1;
	s++;
	while (*s && *s != ']') {
		char *end;
		long long v;
		while (*s == ' ' || *s == ',')
			s++;
		if (*s == ']')
			break;
		v = strtoll(s, &end, 10);
		if (end == s || v < 0)
			return -1;
		prod *= (double)v;
		h = (h ^ (uint64_t)v) * 1099511628211u;
		s = end;
	}
	if (*s != ']')
		return -1;
	*p = s + 1;
	*n = prod;
	*key = (uint32_t)(h ^ (h >> 32));
	return 0;
}

/* The first tensor list of a dims string "[[[..], [..]], ...]": its
 * shapes' elements and keys (VEC-free: the caller sizes them by the
 * string's length).  The count, or -1. */
static long first_list(const char *d, double *n, uint32_t *key, long cap)
{
	long k = 0;
	while (*d == ' ')
		d++;
	if (*d++ != '[')
		return -1;
	while (*d == ' ')
		d++;
	if (*d++ != '[')
		return -1;
	for (;;) {
		while (*d == ' ' || *d == ',')
			d++;
		if (*d == ']')
			return k;
		if (k == cap || shape_at(&d, &n[k], &key[k]))
			return -1;
		k++;
	}
}

double edit_activation_bytes(const struct graph *g)
{
	return edit_activation_type(g, NULL, NULL);
}

double edit_activation_type(const struct graph *g, double *elem, int *half)
{
	if (elem)
		*elem = 2;
	if (half)
		*half = 0;
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		const char *d, *t;
		double el;
		uint32_t key;
		int sz;
		if (g->layer[u] != 0 || g->phase[u] != PH_FORWARD || g->kind[u] >= GN_KERNEL ||
		    !g->op_dims[u])
			continue;
		d = strtab_get(&g->st, g->op_dims[u]);
		while (*d == ' ')
			d++;
		if (*d++ != '[' || shape_at(&d, &el, &key) || el <= 1)
			continue;
		/* The first type: "['c10::BFloat16', ...]" or "[c10::BFloat16, ...". */
		t = g->op_types[u] ? strtab_get(&g->st, g->op_types[u]) : "";
		while (*t == '[' || *t == ' ' || *t == '\'' || *t == '"')
			t++;
		{
			char ty[64];
			size_t k = 0;
			while (t[k] && t[k] != ',' && t[k] != '\'' && t[k] != '"' && t[k] != ']' &&
			       k + 1 < sizeof(ty)) {
				ty[k] = t[k];
				k++;
			}
			ty[k] = '\0';
			sz = dtype_bytes(ty, DTYPE_OP);
			if (half)
				*half = strcmp(ty, "c10::Half") == 0;
		}
		if (elem)
			*elem = sz > 0 ? sz : 2;
		return el * (sz > 0 ? sz : 2);
	}
	return 0;
}

/* *total and *per_layer from the shapes el[0..n) (keys key[]): all of
 * them, and one block of the run of identical blocks that repeats
 * `layers` times (infer.h). */
static void sum_params(const double *el, const uint32_t *key, long n, int layers, double *total,
		       double *per_layer)
{
	struct infer_repeat rep;
	for (long i = 0; i < n; i++)
		*total += el[i];
	if (n > 0 && layers > 0 && infer_repeat(key, NULL, (size_t)n, &rep) == 0 &&
	    rep.count == (size_t)layers)
		for (size_t i = rep.first; i < rep.first + rep.period; i++)
			*per_layer += el[i];
}

/* The parameters from autograd's gradient accumulations that took their
 * gradient (GRAPH_ACC_OP host tasks, one a parameter, its shape the
 * gradient's): those of one backward pass, the first rank's first step
 * and microbatch that has them, in the order they ran. */
static int acc_params(const struct graph *g, int layers, double *total, double *per_layer)
{
	uint32_t acc = strtab_find(&g->st, GRAPH_ACC_OP, strlen(GRAPH_ACC_OP)), first = UINT32_MAX;
	double *el;
	uint32_t *key;
	long n = 0;

	if (acc == STRTAB_NONE)
		return 0;
	for (uint32_t u = 0; u < g->n_nodes && first == UINT32_MAX; u++)
		if (g->op[u] == acc && g->kind[u] == GN_CPU && g->op_dims[u])
			first = u;
	if (first == UINT32_MAX)
		return 0;
	el = prism_malloc((size_t)g->n_nodes * sizeof(*el));
	key = prism_malloc((size_t)g->n_nodes * sizeof(*key));
	if (!el || !key) {
		free(el);
		free(key);
		return PRISM_ENOMEM;
	}
	/* Node order is each processor's time order: the pass's thread. */
	for (uint32_t u = first; u < g->n_nodes; u++) {
		const char *d;
		if (g->op[u] != acc || g->kind[u] != GN_CPU || !g->op_dims[u] ||
		    g->procs[g->proc[u]].rank != g->procs[g->proc[first]].rank ||
		    g->iter[u] != g->iter[first] || g->mb[u] != g->mb[first])
			continue;
		d = strtab_get(&g->st, g->op_dims[u]);
		while (*d == ' ')
			d++;
		if (*d++ == '[' && shape_at(&d, &el[n], &key[n]) == 0)
			n++;
	}
	sum_params(el, key, n, layers, total, per_layer);
	free(el);
	free(key);
	return 0;
}

int edit_params(const struct graph *g, int layers, double *total, double *per_layer)
{
	uint32_t best = STRTAB_NONE;
	size_t best_len = 0;

	*total = *per_layer = 0;
	/* The longest list among the optimizer phase's op shapes. */
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		const char *op, *d;
		size_t len;
		if (g->phase[u] != PH_OPTIMIZER || g->kind[u] < GN_KERNEL || !g->op_dims[u])
			continue;
		op = strtab_get(&g->st, g->op[u]);
		if (!strstr(op, "_fused_") && !strstr(op, "_foreach_") && !strstr(op, "adam"))
			continue;
		d = strtab_get(&g->st, g->op_dims[u]);
		len = strlen(d);
		if (strncmp(d, "[[[", 3) == 0 && len > best_len) {
			best = g->op_dims[u];
			best_len = len;
		}
	}
	if (best == STRTAB_NONE)
		return acc_params(g, layers, total, per_layer);
	{
		long cap = (long)best_len / 3 + 1, n;
		double *el = prism_malloc((size_t)cap * sizeof(*el));
		uint32_t *key = prism_malloc((size_t)cap * sizeof(*key));
		if (!el || !key) {
			free(el);
			free(key);
			return PRISM_ENOMEM;
		}
		n = first_list(strtab_get(&g->st, best), el, key, cap);
		sum_params(el, key, n, layers, total, per_layer);
		free(el);
		free(key);
	}
	return 0;
}
