/* edit.c - re-timing a clone, and calibrating rebuilt candidates. */
#include "edit.h"

#include <gsl/gsl_fit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "synth.h"

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

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
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
		qsort(a, na, sizeof(*a), cmp_i64);
	if (nb)
		qsort(b, nb, sizeof(*b), cmp_i64);
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
