/* edit.c - re-timing a clone, and calibrating rebuilt candidates. */
#include "edit.h"

#include <stdlib.h>
#include <string.h>

#include "comm.h"

static int compute_bound(int cls)
{
	return cls == KC_GEMM || cls == KC_ATTENTION || cls == KC_CONV;
}

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
	double eff = r->comm_eff > 0 ? r->comm_eff : 0.8;

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
			if (compute_bound(cls[u]) && r->to->peak_flops[dt] > 0)
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

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Layer GPU time per class, per step. */
static int class_times(const struct graph *g, double t[KC_NCLASSES], uint64_t n[KC_NCLASSES])
{
	uint8_t *cls = malloc(g->n_nodes ? g->n_nodes : 1);
	double steps = g->n_ranks && g->n_iters ? (double)g->n_iters / g->n_ranks : 1;

	memset(t, 0, KC_NCLASSES * sizeof(*t));
	memset(n, 0, KC_NCLASSES * sizeof(*n));
	if (!cls || cost_classify_all(g, cls)) {
		free(cls);
		return PRISM_ENOMEM;
	}
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		if (g->kind[u] < GN_KERNEL || g->layer[u] < 0 || g->coll[u] != UINT32_MAX)
			continue;
		if (g->n_iters && g->iter[u] < 0)
			continue;
		t[cls[u]] += (double)g->dur_ns[u] * 1e-9 / (steps > 0 ? steps : 1);
		n[cls[u]]++;
	}
	free(cls);
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
		qsort(a, na, sizeof(*a), cmp_i64);
	if (nb)
		qsort(b, nb, sizeof(*b), cmp_i64);
	*launch_s = na ? (double)a[na / 2] * 1e-9 : -1;
	*op_s = nb ? (double)b[nb / 2] * 1e-9 : -1;
	free(a);
	free(b);
	return na ? 0 : -1;
}

int edit_fit(const struct graph *base, const struct graph *model, struct edit_fit *f)
{
	double tb[KC_NCLASSES], tm[KC_NCLASSES], sb = 0, sm = 0;
	uint64_t nb[KC_NCLASSES], nm[KC_NCLASSES];

	memset(f, 0, sizeof(*f));
	if (class_times(base, tb, nb) || class_times(model, tm, nm))
		return PRISM_ENOMEM;
	for (int c = 0; c < KC_NCLASSES; c++) {
		sb += tb[c];
		sm += tm[c];
	}
	f->overall = sm > 0 && sb > 0 ? sb / sm : 1;
	for (int c = 0; c < KC_NCLASSES; c++) {
		f->n[c] = nb[c];
		f->scale[c] = tb[c] > 0 && tm[c] > 0 ? tb[c] / tm[c] : f->overall;
	}
	f->host_fitted = host_costs(base, &f->cpu_op_s, &f->launch_s) == 0 && f->cpu_op_s >= 0;
	return 0;
}
