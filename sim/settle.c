/* settle.c - simulate a synthesised graph and make it a trace of itself. */
#include "settle.h"

#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "sim.h"

double settle_bubble(int stages, int64_t span_ns, const int64_t *busy_ns)
{
	double idle = 0;
	for (int r = 0; r < stages && r < SYNTH_MAX_STAGES && span_ns > 0; r++)
		idle += 1.0 - (double)busy_ns[r] / (double)span_ns;
	return stages > 0 ? idle / stages : 0;
}

/* Intervals by start (for the union of a rank's communication). */
struct ival {
	int64_t a, b;
};

static int cmp_ival(const void *x, const void *y)
{
	const struct ival *p = x, *q = y;
	return p->a < q->a ? -1 : p->a > q->a;
}

/* The first of u (merged, sorted) that ends after x. */
static size_t first_after(const struct ival *u, size_t n, int64_t x)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (u[mid].b <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* |[x, y) n u|, u merged and sorted; *p: the first interval that may
 * meet an interval starting at x or later (advanced). */
static int64_t covered(const struct ival *u, size_t n, size_t *p, int64_t x, int64_t y)
{
	int64_t c = 0;
	while (*p < n && u[*p].b <= x)
		(*p)++;
	for (size_t k = *p; k < n && u[k].a < y; k++)
		c += (u[k].b < y ? u[k].b : y) - (u[k].a > x ? u[k].a : x);
	return c;
}

/*
 * The breakdown (metrics.h) counts a folded unit task as compute over its
 * whole span.  Inside it are its kernels, collectives and the gaps between
 * them (lags, launches): each kernel's time is found again as the full
 * simulation has it (the later of the previous end and its launch, plus
 * its lag, from the task's predecessor and its unit's host start), and
 * each part is counted against the rank's other communication (its
 * data-parallel and point-to-point streams) as metrics.h does: compute
 * beside it is overlap, alone exposed compute; collectives exposed
 * communication; gaps beside it exposed communication, alone idle (the
 * figures of it are corrected).  0 or PRISM_ENOMEM.
 */
static int fold_breakdown(const struct sim *sm, const struct synth_out *so, struct metrics_iter *it)
{
	const struct graph *g = sm->g;
	int64_t a = it->sim_start_ns, b = a + it->predicted_ns;
	uint32_t comp = it->rank < (uint32_t)so->stages ? so->compute[it->rank] : UINT32_MAX;
	int64_t d_overlap = 0, d_comm = 0, d_comp = 0, d_idle = 0;
	struct ival *u = NULL;
	size_t n = 0, cap = 0;

	/* The union of the rank's other communication in the window. */
	for (uint32_t p = 0; p < g->n_procs; p++) {
		if (g->procs[p].rank != it->rank || !g->procs[p].gpu || p == comp)
			continue;
		for (uint32_t v = g->procs[p].first; v < g->procs[p].first + g->procs[p].n; v++) {
			int64_t x = sm->start_ns[v] > a ? sm->start_ns[v] : a;
			int64_t y = sm->end_ns[v] < b ? sm->end_ns[v] : b;
			if (x >= y || (g->kind[v] != GN_COLL && g->kind[v] != GN_P2P))
				continue;
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 256;
				struct ival *nu = prism_realloc(u, nc * sizeof(*nu));
				if (!nu) {
					free(u);
					return PRISM_ENOMEM;
				}
				u = nu;
				cap = nc;
			}
			u[n++] = (struct ival){x, y};
		}
	}
	if (n)
		qsort(u, n, sizeof(*u), cmp_ival);
	{
		size_t m = 0;
		for (size_t i = 0; i < n; i++) {
			if (m && u[i].a <= u[m - 1].b) {
				if (u[i].b > u[m - 1].b)
					u[m - 1].b = u[i].b;
			} else {
				u[m++] = u[i];
			}
		}
		n = m;
	}
	for (size_t i = 0; i < so->n_marks; i++) {
		const struct synth_fold_mark *mk = &so->marks[i];
		uint32_t v = mk->node;
		int64_t x = sm->start_ns[v] > a ? sm->start_ns[v] : a;
		int64_t y = sm->end_ns[v] < b ? sm->end_ns[v] : b;
		int64_t e, h, x0, cin = 0, co = 0, tin = 0, to = 0, X;
		size_t p;
		if (g->proc[v] != comp || x >= y || v == 0)
			continue;
		/* The kernels run from the end of the task before (its
		 * first kernel's), where the task may start later. */
		e = sm->end_ns[v - 1];
		h = sm->start_ns[mk->host];
		x0 = e > a ? e : a;
		p = first_after(u, n, x0);
		for (uint32_t k = 0; k < mk->n_kern; k++) {
			const struct synth_fold_kern *kk = &so->kerns[mk->kern0 + k];
			int64_t at = prism_time_add(h, kk->rel_ns), kx, ky;
			int64_t ks = prism_time_add(e > at ? e : at, kk->lag_ns);
			e = prism_time_add(ks, kk->dur_ns);
			kx = ks > x0 ? ks : x0;
			ky = e < y ? e : y;
			if (kx >= ky)
				continue;
			if (kk->comm) {
				tin += ky - kx;
				to += covered(u, n, &p, kx, ky);
			} else {
				cin += ky - kx;
				co += covered(u, n, &p, kx, ky);
			}
		}
		p = first_after(u, n, x);
		X = covered(u, n, &p, x, y);
		/* metrics.h counted [x, y) as compute (beside X of other
		 * communication) and the gap before it as idle or exposed
		 * communication; the kernels say what each part was. */
		d_overlap += co - X;
		d_comp += (cin - co) - ((y - x) - X);
		d_comm += tin + (X - co - to);
		d_idle += ((y - x) - cin - tin) - (X - co - to);
	}
	free(u);
	it->overlap_ns += d_overlap;
	it->exposed_comm_ns += d_comm;
	it->exposed_compute_ns += d_comp;
	it->idle_ns += d_idle;
	return 0;
}

/* Collectives by rank, then start; `end` the latest end so far in the
 * rank. */
struct rival {
	uint32_t rank;
	int64_t a, b, end;
};

static int cmp_rival(const void *x, const void *y)
{
	const struct rival *p = x, *q = y;
	if (p->rank != q->rank)
		return p->rank < q->rank ? -1 : 1;
	return p->a < q->a ? -1 : p->a > q->a;
}

/*
 * Under contention, whether a folded unit task ran beside a collective of
 * its rank: the simulator slowed the task as a whole (and the collective
 * for as long as the task ran), where the kernels it stands for would
 * have been slowed only while the collective overlapped one of them, so
 * the run is not the kernel-level one (settle_out.inexact).  1 when one
 * did, 0 when none did, -1 out of memory.
 */
static int fold_contended(const struct sim *sm, const struct synth_out *so)
{
	const struct graph *g = sm->g;
	struct rival *v;
	size_t n = 0, k = 0;
	int hit = 0;

	if (!so->n_marks || (so->slow_compute <= 0 && so->slow_comm <= 0))
		return 0;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->kind[u] == GN_COLL && g->procs[g->proc[u]].gpu)
			n++;
	if (!n)
		return 0;
	if (!(v = prism_malloc(n * sizeof(*v))))
		return -1;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->kind[u] == GN_COLL && g->procs[g->proc[u]].gpu) {
			struct rival x = {g->procs[g->proc[u]].rank, sm->start_ns[u], sm->end_ns[u],
					  0};
			v[k++] = x;
		}
	qsort(v, n, sizeof(*v), cmp_rival);
	for (size_t i = 0; i < n; i++)
		v[i].end = i > 0 && v[i - 1].rank == v[i].rank && v[i - 1].end > v[i].b
			       ? v[i - 1].end
			       : v[i].b;
	for (size_t i = 0; i < so->n_marks && !hit; i++) {
		uint32_t u = so->marks[i].node, rank = g->procs[g->proc[u]].rank;
		int64_t a = sm->start_ns[u], b = sm->end_ns[u];
		size_t lo = 0, hi = n; /* the last of the rank starting before b */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (v[mid].rank < rank || (v[mid].rank == rank && v[mid].a < b))
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo > 0 && v[lo - 1].rank == rank && v[lo - 1].end > a)
			hit = 1;
	}
	free(v);
	return hit;
}

int settle_synth(struct graph *g, const struct synth_out *so, struct settle_out *out,
		 struct prism_err *err)
{
	struct sim *sm = sim_new(g);
	struct sim_opts o;
	struct graph_iter *it;
	int rc, P = so->stages, steps = so->steps;
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	int64_t *inner = NULL; /* folded units: idle time inside a unit task */
	size_t per_step;

	memset(out, 0, sizeof(*out));
	if (so->n_marks && sm) {
		inner = prism_calloc(g->n_nodes, sizeof(*inner));
		if (!inner) {
			sim_free(sm);
			sm = NULL;
		}
	}
	if (!sm)
		return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
	for (size_t i = 0; inner && i < so->n_marks; i++)
		inner[so->marks[i].node] = so->marks[i].idle_ns;
	sim_opts_default(&o);
	o.slow_compute = so->slow_compute;
	o.slow_comm = so->slow_comm;
	if ((rc = sim_run(sm, &o, err))) {
		sim_free(sm);
		free(inner);
		return rc;
	}
	if ((rc = fold_contended(sm, so)) < 0) {
		sim_free(sm);
		free(inner);
		return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
	}
	out->inexact = rc;
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		g->start_ns[u] = sm->start_ns[u];
		/* What contention made of a task is its traced time: the
		 * settled graph replays (without contention) as it ran. */
		if ((g->kind[u] == GN_KERNEL || g->kind[u] == GN_COLL) &&
		    sm->end_ns[u] - sm->start_ns[u] != g->dur_ns[u])
			g->dur_ns[u] = sm->end_ns[u] - sm->start_ns[u];
		if (g->kind[u] == GN_WAIT && u > 0) {
			int64_t w = sm->start_ns[u] - sm->end_ns[u - 1];
			g->wait_ns[u] = w > 0 ? w : 0;
		}
	}
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		uint32_t b = sm->binding[u];
		if (b != UINT32_MAX && g->procs[g->proc[u]].gpu && !g->procs[g->proc[b]].gpu)
			out->launch_bound++;
	}
	it = g->iters;
	for (size_t i = 0; i < so->n_steps; i++) {
		uint32_t f = so->step_first[i], l = so->step_last[i];
		it[i].start_ns = sm->start_ns[f];
		it[i].dur_ns = sm->end_ns[l] - sm->start_ns[f];
	}
	per_step = steps ? so->n_units / (size_t)steps : 0;
	for (size_t i = 0; i < per_step; i++) {
		if (sm->start_ns[so->unit_first[i]] < lo)
			lo = sm->start_ns[so->unit_first[i]];
		if (sm->end_ns[so->unit_last[i]] > hi)
			hi = sm->end_ns[so->unit_last[i]];
	}
	for (int r = 0; r < P && r < SYNTH_MAX_STAGES && hi > lo; r++) {
		const struct graph_proc *pr = &g->procs[so->compute[r]];
		for (uint32_t u = pr->first; u < pr->first + pr->n; u++)
			if (sm->start_ns[u] >= lo && sm->end_ns[u] <= hi)
				out->unit_busy_ns[r] +=
				    sm->end_ns[u] - sm->start_ns[u] - (inner ? inner[u] : 0);
	}
	out->unit_span_ns = hi > lo ? hi - lo : 0;
	out->bubble = settle_bubble(P, out->unit_span_ns, out->unit_busy_ns);
	{
		struct metrics_iter *its = NULL;
		long n = metrics_iterations(sm, &its), pick = -1;
		if (n < 0) {
			sim_free(sm);
			free(inner);
			return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
		}
		if (metrics_step_time(its, n, &out->iter_s)) {
			free(its);
			sim_free(sm);
			free(inner);
			return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
		}
		for (long i = 0; i < n; i++)
			if (its[i].step == steps - 1 &&
			    (pick < 0 || its[i].predicted_ns > its[pick].predicted_ns))
				pick = i;
		if (pick >= 0) {
			if (so->n_marks && fold_breakdown(sm, so, &its[pick])) {
				free(its);
				sim_free(sm);
				free(inner);
				return prism_err_set(err, PRISM_ENOMEM,
						     "simulation: out of memory");
			}
			out->exposed_compute_s = (double)its[pick].exposed_compute_ns * 1e-9;
			out->exposed_comm_s = (double)its[pick].exposed_comm_ns * 1e-9;
			out->overlap_s = (double)its[pick].overlap_ns * 1e-9;
			out->idle_s = (double)its[pick].idle_ns * 1e-9;
		}
		free(its);
	}
	sim_free(sm);
	free(inner);
	return 0;
}

int settle_build(const struct synth_in *in, struct graph **g, struct synth_out *so,
		 struct settle_out *st, struct prism_err *err)
{
	struct synth_in x = *in;
	int rc;

	*g = NULL;
	if ((rc = synth_build(&x, g, so, err)))
		return rc;
	rc = settle_synth(*g, so, st, err);
	if (rc == 0 && st->inexact && x.units) {
		/* Contention reached a unit task: kernel by kernel instead. */
		graph_free(*g);
		synth_out_free(so);
		*g = NULL;
		x.units = 0;
		if ((rc = synth_build(&x, g, so, err)))
			return rc;
		rc = settle_synth(*g, so, st, err);
		st->declined = 1;
	}
	if (rc) {
		graph_free(*g);
		synth_out_free(so);
		*g = NULL;
	}
	return rc;
}
