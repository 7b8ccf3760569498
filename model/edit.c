/* edit.c - re-timing a clone, and calibrating rebuilt candidates. */
#include "edit.h"

#include <gsl/gsl_fit.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "synth.h"
#include "vec.h"

static double coll_time(const struct hw_profile *hw, int kind, double bytes, int n, double eff)
{
	struct comm_group g;
	struct comm_est e;
	g.n = n;
	g.per_node = n < hw->gpus_per_node ? n : hw->gpus_per_node;
	if (comm_time(hw, kind, bytes, g, eff, COMM_AUTO, &e))
		return 0;
	return e.time_s;
}

int edit_retime(struct graph *g, const struct edit_retime *r, struct edit_stats *st)
{
	uint8_t *cls = malloc(g->n_nodes ? g->n_nodes : 1);
	double eff = r->comm_eff > 0 ? r->comm_eff : 1.0;

	memset(st, 0, sizeof(*st));
	if (!cls || cost_classify_all(g, cls)) {
		free(cls);
		return PRISM_ENOMEM;
	}
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		double f = 1;
		if (g->kind[u] < GN_KERNEL)
			continue;
		if (g->coll[u] != UINT32_MAX) {
			const struct graph_coll *c = &g->colls[g->coll[u]];
			int n = (int)c->group_size, n2 = n;
			double t0, t1;
			if (c->bytes <= 0 || n < 1) {
				st->colls_unsized++;
				continue;
			}
			if (r->dp_to > 0 && r->dp_from > 0 && n == r->dp_from)
				n2 = r->dp_to;
			if (n2 == n && r->to == r->from)
				continue;
			t0 = coll_time(r->from, c->kind, (double)c->bytes, n, eff);
			t1 = coll_time(r->to, c->kind, (double)c->bytes, n2, eff);
			if (t0 > 0)
				f = t1 / t0;
			st->colls_scaled++;
		} else if (r->to != r->from && g->kind[u] != GN_MEMCPY) {
			int dt = cost_dtype(g, u);
			if (dt < 0)
				dt = HW_BF16;
			if (cost_compute_bound(cls[u]) && r->to->peak_flops[dt] > 0)
				f = r->from->peak_flops[dt] / r->to->peak_flops[dt];
			else
				f = r->from->hbm_Bps / r->to->hbm_Bps;
			st->kernels_scaled++;
		}
		g->dur_ns[u] = (int64_t)((double)g->dur_ns[u] * f + 0.5);
	}
	free(cls);
	return 0;
}

/* Per kernel name (string id in g): total time and count per step. */
struct kstat {
	double t;
	double n;
	int cls;
};

static int name_stats(const struct graph *g, struct kstat **out)
{
	uint8_t *cls = malloc(g->n_nodes ? g->n_nodes : 1);
	struct kstat *k = calloc(g->st.n ? g->st.n : 1, sizeof(*k));
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
	int64_t *a = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*a));
	int64_t *b = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*b));
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

int edit_fit(const struct graph *base, const struct graph *model,
	     const struct synth_in *model_in, struct edit_fit *f)
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
	x = malloc((model->st.n + 1) * sizeof(*x));
	y = malloc((model->st.n + 1) * sizeof(*y));
	w = malloc((model->st.n + 1) * sizeof(*w));
	c = malloc((model->st.n + 1) * sizeof(*c));
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
		    c0 >= 0 && c1 > 0) {
			f->cost[k].overhead_s = c0;
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

/* ---- layers x k on a traced graph ---------------------------------------- */

#define NONE32 UINT32_MAX

struct seg {
	uint32_t a, b;  /* first and last node id, on one processor */
	uint32_t group;
	int64_t t0, t1; /* traced start of a, latest traced end in [a, b] */
	int64_t before; /* what the copies of earlier segments on the processor add */
};

struct lgroup {
	int32_t iter, mb;
	uint8_t phase;
};

struct lrep {
	const struct graph *g;
	int k;
	VEC(struct seg) segs;
	VEC(struct lgroup) groups;
	uint32_t *label;  /* node -> group it repeats with, or NONE32 */
	uint32_t *seg_of; /* node -> segment, or NONE32 */
	uint32_t *newid;  /* node -> id of its first copy */
	uint32_t *proc_seg; /* per processor, its first segment (n_procs + 1) */
	uint32_t *proc_first; /* per processor, its first new id */
	uint32_t last_group;
};

static int same_group(const struct lgroup *g, int32_t iter, uint8_t phase, int32_t mb)
{
	return g->iter == iter && g->phase == phase && g->mb == mb;
}

/* The group of (iter, phase, mb), made if new.  Consecutive tasks mostly
 * share one, so the last answer is tried first. */
static uint32_t lgroup_of(struct lrep *r, int32_t iter, uint8_t phase, int32_t mb)
{
	struct lgroup x = {iter, mb, phase};
	if (r->last_group < r->groups.n &&
	    same_group(&r->groups.v[r->last_group], iter, phase, mb))
		return r->last_group;
	for (size_t i = r->groups.n; i-- > 0;)
		if (same_group(&r->groups.v[i], iter, phase, mb))
			return r->last_group = (uint32_t)i;
	if (VEC_PUSH(r->groups, x))
		return NONE32;
	return r->last_group = (uint32_t)(r->groups.n - 1);
}

/* Segments: per processor, maximal runs from one labelled node to the last
 * of the same group before a node of another group. */
static int segments(struct lrep *r)
{
	const struct graph *g = r->g;
	r->segs.n = 0;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		r->seg_of[u] = NONE32;
	for (uint32_t p = 0; p < g->n_procs; p++) {
		const struct graph_proc *pr = &g->procs[p];
		size_t cur = SIZE_MAX;
		r->proc_seg[p] = (uint32_t)r->segs.n;
		for (uint32_t u = pr->first; u < pr->first + pr->n; u++) {
			struct seg x;
			if (r->label[u] == NONE32)
				continue;
			if (cur != SIZE_MAX && r->segs.v[cur].group == r->label[u]) {
				r->segs.v[cur].b = u;
				continue;
			}
			memset(&x, 0, sizeof(x));
			x.a = x.b = u;
			x.group = r->label[u];
			if (VEC_PUSH(r->segs, x))
				return PRISM_ENOMEM;
			cur = r->segs.n - 1;
		}
	}
	r->proc_seg[g->n_procs] = (uint32_t)r->segs.n;
	for (size_t s = 0; s < r->segs.n; s++) {
		struct seg *x = &r->segs.v[s];
		x->t0 = g->start_ns[x->a];
		x->t1 = INT64_MIN;
		for (uint32_t u = x->a; u <= x->b; u++) {
			r->seg_of[u] = (uint32_t)s;
			if (g->start_ns[u] + g->dur_ns[u] > x->t1)
				x->t1 = g->start_ns[u] + g->dur_ns[u];
		}
		x->before = s > r->proc_seg[g->proc[x->a]]
				    ? x[-1].before + (int64_t)(r->k - 1) * (x[-1].t1 - x[-1].t0)
				    : 0;
	}
	return 0;
}

static uint32_t seg_group(const struct lrep *r, uint32_t u)
{
	return r->seg_of[u] == NONE32 ? NONE32 : r->segs.v[r->seg_of[u]].group;
}

/*
 * Label the layer tasks with their (step, phase, microbatch) group, then
 * the bridges: tasks outside every segment that a segment of a group waits
 * for and that wait for the same group (a collective between two layers'
 * kernels); they repeat with the layers, or the copies would form a cycle.
 */
static int label_nodes(struct lrep *r)
{
	const struct graph *g = r->g;
	uint32_t *in_from = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*in_from));
	int rc;

	if (!in_from)
		return PRISM_ENOMEM;
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		r->label[u] = NONE32;
		in_from[u] = NONE32;
		if (g->layer[u] >= 0 &&
		    (r->label[u] = lgroup_of(r, g->iter[u], g->phase[u], g->mb[u])) == NONE32) {
			free(in_from);
			return PRISM_ENOMEM;
		}
	}
	if ((rc = segments(r))) {
		free(in_from);
		return rc;
	}
	for (uint32_t u = 0; u < g->n_nodes; u++)
		for (uint32_t e = g->out_off[u]; e < g->out_off[u + 1]; e++)
			if (seg_group(r, u) != NONE32 && r->seg_of[g->out_dst[e]] == NONE32)
				in_from[g->out_dst[e]] = seg_group(r, u);
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		if (in_from[u] == NONE32)
			continue;
		for (uint32_t e = g->out_off[u]; e < g->out_off[u + 1]; e++)
			if (seg_group(r, g->out_dst[e]) == in_from[u])
				r->label[u] = in_from[u];
	}
	free(in_from);
	return segments(r);
}

/* What the copies of p's segments ending at or before traced time t add
 * to t (each processor keeps its own clock: the step spans of a host
 * thread move by what its own copies add). */
static int64_t shift_at(const struct lrep *r, uint32_t p, int64_t t)
{
	uint32_t lo = r->proc_seg[p], hi = r->proc_seg[p + 1];
	const struct seg *last;
	while (lo < hi) { /* first segment ending after t */
		uint32_t mid = lo + (hi - lo) / 2;
		if (r->segs.v[mid].t1 <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == r->proc_seg[p])
		return 0;
	last = &r->segs.v[lo - 1];
	return last->before + (int64_t)(r->k - 1) * (last->t1 - last->t0);
}

static uint32_t seg_len(const struct lrep *r, uint32_t s)
{
	return r->segs.v[s].b - r->segs.v[s].a + 1;
}

/* Id of copy c of node w. */
static uint32_t copy_id(const struct lrep *r, uint32_t w, int c)
{
	uint32_t s = r->seg_of[w];
	return s == NONE32 ? r->newid[w] : r->newid[w] + (uint32_t)c * seg_len(r, s);
}

/* The targets of copy c of w's out-edges (kinds in kinds[]); how many. */
static uint32_t copy_edges(const struct lrep *r, uint32_t w, int c, uint32_t *dst, uint8_t *kinds)
{
	const struct graph *g = r->g;
	uint32_t n = 0, sw = r->seg_of[w];
	for (uint32_t e = g->out_off[w]; e < g->out_off[w + 1]; e++) {
		uint32_t v = g->out_dst[e];
		if (sw != NONE32 && seg_group(r, v) == r->segs.v[sw].group) {
			/* Inside the group: copy to copy. */
		} else if (sw != NONE32 && c != r->k - 1) {
			continue; /* leaves the group: from the last copy only */
		}
		if (dst) {
			dst[n] = seg_group(r, v) == (sw == NONE32 ? NONE32 : r->segs.v[sw].group)
					 ? copy_id(r, v, c)
					 : copy_id(r, v, 0);
			kinds[n] = g->out_kind[e];
		}
		n++;
	}
	if (sw != NONE32 && w == r->segs.v[sw].b && c < r->k - 1) {
		if (dst) {
			dst[n] = copy_id(r, r->segs.v[sw].a, c + 1);
			kinds[n] = GE_ORDER;
		}
		n++;
	}
	return n;
}

/* Collective sequence numbers per (rank, group) in the new start order. */
static int renumber_colls(struct graph *n)
{
	int64_t *t = malloc((n->n_colls ? n->n_colls : 1) * sizeof(*t));
	uint32_t *rank = malloc((n->n_colls ? n->n_colls : 1) * sizeof(*rank));
	int rc = PRISM_ENOMEM;
	if (t && rank) {
		for (uint32_t c = 0; c < n->n_colls; c++) {
			t[c] = n->start_ns[n->colls[c].node];
			rank[c] = n->procs[n->proc[n->colls[c].node]].rank;
		}
		rc = graph_number_colls(n->colls, n->n_colls, t, rank);
	}
	free(t);
	free(rank);
	return rc;
}

/* What differs in copy c (node x of n) of node w, once its columns are
 * copied: its traced start, correlation id, layer and collective. */
static void adjust_copy(const struct lrep *r, struct graph *n, uint32_t x, uint32_t w, int c,
			int64_t corr_stride, const int32_t *layers_of)
{
	const struct graph *g = r->g;
	uint32_t s = r->seg_of[w];
	const struct seg *sg = s == NONE32 ? NULL : &r->segs.v[s];
	n->start_ns[x] = sg ? g->start_ns[w] + sg->before + (int64_t)c * (sg->t1 - sg->t0)
			    : g->start_ns[w] + shift_at(r, g->proc[w], g->start_ns[w]);
	if (g->corr[w] >= 0)
		n->corr[x] = g->corr[w] + c * corr_stride;
	/* Copy c holds layers c L .. c L + L - 1; the backward runs them last
	 * first, so its first copy holds the top ones. */
	if (g->layer[w] >= 0)
		n->layer[x] = g->layer[w] + (g->phase[w] == PH_BACKWARD ? r->k - 1 - c : c) *
						    layers_of[g->iter[w] + 1];
	n->coll[x] = NONE32;
}

int edit_layers(const struct graph *g, int k, struct graph **out, struct edit_layer_stats *st,
		struct prism_err *err)
{
	struct lrep r;
	struct graph *n = NULL;
	int32_t *layers_of = NULL;
	uint64_t nn = 0, ne = 0, nc = g->n_colls;
	uint32_t next_coll = g->n_colls; /* the copies' collectives follow */
	int64_t corr_stride = 1;
	int rc = 0;

	*out = NULL;
	memset(st, 0, sizeof(*st));
	memset(&r, 0, sizeof(r));
	if (k < 1)
		return prism_err_set(err, PRISM_EARG, "layer factor %d: must be at least 1", k);
	r.g = g;
	r.k = k;
	r.label = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*r.label));
	r.seg_of = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*r.seg_of));
	r.newid = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*r.newid));
	r.proc_seg = malloc(((size_t)g->n_procs + 1) * sizeof(*r.proc_seg));
	r.proc_first = malloc(((size_t)g->n_procs + 1) * sizeof(*r.proc_first));
	layers_of = calloc((size_t)g->n_iters + 1, sizeof(*layers_of));
	if (!r.label || !r.seg_of || !r.newid || !r.proc_seg || !r.proc_first || !layers_of || label_nodes(&r))
		goto oom;
	if (r.segs.n == 0) {
		rc = prism_err_set(err, PRISM_EARG, "the trace has no layers found to repeat");
		goto out;
	}
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		if (g->layer[u] + 1 > layers_of[g->iter[u] + 1])
			layers_of[g->iter[u] + 1] = g->layer[u] + 1;
		if (g->corr[u] >= corr_stride)
			corr_stride = g->corr[u] + 1;
	}
	/* New ids, processor by processor: each segment's copies back to back. */
	for (uint32_t p = 0; p < g->n_procs; p++) {
		const struct graph_proc *pr = &g->procs[p];
		r.proc_first[p] = (uint32_t)nn;
		for (uint32_t u = pr->first; u < pr->first + pr->n; u++) {
			uint32_t s = r.seg_of[u];
			if (s == NONE32) {
				r.newid[u] = (uint32_t)nn++;
				continue;
			}
			for (uint32_t w = u; w <= r.segs.v[s].b; w++)
				r.newid[w] = (uint32_t)(nn + (w - u));
			nn += (uint64_t)k * seg_len(&r, s);
			st->nodes_added += (uint64_t)(k - 1) * seg_len(&r, s);
			u = r.segs.v[s].b;
		}
	}
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		int copies = r.seg_of[u] == NONE32 ? 1 : k;
		for (int c = 0; c < copies; c++)
			ne += copy_edges(&r, u, c, NULL, NULL);
		if (r.seg_of[u] != NONE32 && g->coll[u] != NONE32)
			nc += (uint64_t)(k - 1);
	}
	if (nn >= UINT32_MAX || ne >= UINT32_MAX || nc >= UINT32_MAX) {
		rc = prism_err_set(err, PRISM_ELIMIT,
				   "layers x%d: %" PRIu64 " tasks, %" PRIu64 " edges: over 2^32", k, nn,
				   ne);
		goto out;
	}
	n = graph_alloc((uint32_t)nn, (uint32_t)ne, g->n_procs, g->n_ranks, g->n_iters, (uint32_t)nc);
	if (!n)
		goto oom;
	strtab_release(&n->st);
	if (strtab_copy(&n->st, &g->st))
		goto oom;
	n->t0_ns = g->t0_ns;
	n->meta = g->meta;
	n->stats = g->stats;
	memcpy(n->ranks, g->ranks, g->n_ranks * sizeof(*g->ranks));
	memcpy(n->colls, g->colls, g->n_colls * sizeof(*g->colls));
	for (uint32_t p = 0; p < g->n_procs; p++) {
		/* Processors tile the new ids in the same order. */
		n->procs[p] = g->procs[p];
		n->procs[p].first = r.proc_first[p];
		n->procs[p].n = (p + 1 < g->n_procs ? r.proc_first[p + 1] : (uint32_t)nn) -
				r.proc_first[p];
	}
	/* Nodes and their edges, in new id order. */
	{
		uint32_t e = 0;
		for (uint32_t p = 0; p < g->n_procs; p++) {
			const struct graph_proc *pr = &g->procs[p];
			for (uint32_t u = pr->first; u < pr->first + pr->n; u++) {
				uint32_t s = r.seg_of[u], a = u, b = u;
				int copies = s == NONE32 ? 1 : k;
				if (s != NONE32)
					b = r.segs.v[s].b;
				for (int c = 0; c < copies; c++) {
					graph_copy_nodes(n, copy_id(&r, a, c), g, a, b - a + 1);
					for (uint32_t w = a; w <= b; w++) {
						uint32_t x = copy_id(&r, w, c);
						adjust_copy(&r, n, x, w, c, corr_stride, layers_of);
						if (g->coll[w] != NONE32) {
							/* Copy 0 keeps the collective's
							 * entry; the others get new ones. */
							uint32_t ci = c ? next_coll++ : g->coll[w];
							if (c)
								n->colls[ci] = g->colls[g->coll[w]];
							n->colls[ci].node = x;
							n->coll[x] = ci;
						}
						n->out_off[x] = e;
						e += copy_edges(&r, w, c, n->out_dst + e,
								n->out_kind + e);
					}
				}
				u = b;
			}
		}
		n->out_off[nn] = e;
	}
	/* Traced starts stay ordered on each processor (where a trace's tasks
	 * overlapped on one). */
	for (uint32_t p = 0; p < n->n_procs; p++)
		for (uint32_t x = n->procs[p].first + 1; x < n->procs[p].first + n->procs[p].n; x++)
			if (n->start_ns[x] < n->start_ns[x - 1])
				n->start_ns[x] = n->start_ns[x - 1];
	for (uint32_t i = 0; i < g->n_iters; i++) {
		int64_t a = g->iters[i].start_ns, b = a + g->iters[i].dur_ns;
		uint32_t p = g->iters[i].proc;
		n->iters[i] = g->iters[i];
		if (p == NONE32)
			continue;
		n->iters[i].start_ns = a + shift_at(&r, p, a);
		n->iters[i].dur_ns = b + shift_at(&r, p, b) - n->iters[i].start_ns;
	}
	if (renumber_colls(n))
		goto oom;
	st->segments = r.segs.n;
	st->groups = r.groups.n;
	*out = n;
	n = NULL;
	goto out;
oom:
	rc = prism_err_set(err, PRISM_ENOMEM, "out of memory");
out:
	graph_free(n);
	free(r.label);
	free(r.seg_of);
	free(r.newid);
	free(r.proc_seg);
	free(r.proc_first);
	free(r.segs.v);
	free(r.groups.v);
	free(layers_of);
	return rc;
}
