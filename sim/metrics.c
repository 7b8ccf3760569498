/* metrics.c - iteration windows, interval sweeps and the critical path. */
#include "metrics.h"

#include <stdlib.h>
#include <string.h>

#include "prism.h"
#include "msort.h"
#include "vec.h"

#define NONE32 UINT32_MAX

struct edge_pt {
	int64_t t;
	int8_t dcomp, dcomm;
};

/* pts[0..n) in time order, tmp n entries of scratch: a natural merge
 * sort, the runs that are already in order (each stream's tasks, one after
 * another) merged pairwise: breakdown's points are a few such runs, which
 * qsort sorted from scratch (5 % of the default sweep).  Points of equal
 * time may come in any order: breakdown's sums add nothing between them. */
MSORT_RUNS(sort_pts, struct edge_pt, t)

static int is_comm(uint8_t kind)
{
	return kind == GN_COLL || kind == GN_P2P;
}

/* Per GPU processor, in task order: the latest end so far (pmax) and the
 * earliest start from here on (smin), both monotone, so a window's tasks
 * are found by two binary searches, not a scan of the processor (a trace
 * of 10^5 steps would make the breakdowns quadratic). */
struct windows {
	int64_t *pmax, *smin;
};

/* First start and last end of the GPU tasks launched in each step, traced
 * (tf, tl) and simulated (sf, sl); INT64_MAX / INT64_MIN where none. */
struct step_gpu {
	int64_t tf, tl, sf, sl;
};

/* What the functions below work in, kept from call to call (zeroed:
 * empty); each use fills what it reads, as a new allocation would be. */
struct metrics_scratch {
	VEC(struct metrics_iter) its, sorted, tmp;
	VEC(struct step_gpu) sg;
	VEC(long) next, seen;
	VEC(int64_t) pmax, smin;
	struct edge_pt *pts; /* breakdown's points, then as many of scratch */
	size_t pts_cap;
};

static int windows_init(const struct sim *s, struct metrics_scratch *k, struct windows *w)
{
	const struct graph *g = s->g;
	size_t nn = g->n_nodes ? g->n_nodes : 1;
	if (VEC_RESERVE(k->pmax, nn) || VEC_RESERVE(k->smin, nn))
		return PRISM_ENOMEM;
	w->pmax = k->pmax.v;
	w->smin = k->smin.v;
	for (uint32_t p = 0; p < g->n_procs; p++) {
		const struct graph_proc *pr = &g->procs[p];
		int64_t m = INT64_MIN;
		if (!pr->gpu || !pr->n)
			continue;
		for (uint32_t u = pr->first; u < pr->first + pr->n; u++)
			w->pmax[u] = m = s->end_ns[u] > m ? s->end_ns[u] : m;
		m = INT64_MAX;
		for (uint32_t u = pr->first + pr->n; u-- > pr->first;)
			w->smin[u] = m = s->start_ns[u] < m ? s->start_ns[u] : m;
	}
	return 0;
}

/* The first task of pr from which x[u] > t (x monotone non-decreasing). */
static uint32_t first_above(const int64_t *x, const struct graph_proc *pr, int64_t t, int strict)
{
	uint32_t lo = pr->first, hi = pr->first + pr->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (strict ? x[mid] > t : x[mid] >= t)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* Breakdown of rank r's GPU work over [a, b) of simulated time. */
static int breakdown(const struct sim *s, const struct windows *w, uint32_t r, int64_t a, int64_t b,
		     struct metrics_iter *it, struct edge_pt **pts, size_t *cap)
{
	const struct graph *g = s->g;
	size_t n = 0;
	int comp = 0, comm = 0;
	int64_t last = a, t_comp = 0, t_comm = 0, t_both = 0;

	for (uint32_t p = 0; p < g->n_procs; p++) {
		uint32_t u0, u1;
		if (g->procs[p].rank != r || !g->procs[p].gpu)
			continue;
		/* Those ending after a, up to those all starting at b or later. */
		u0 = first_above(w->pmax, &g->procs[p], a, 1);
		u1 = first_above(w->smin, &g->procs[p], b, 0);
		for (uint32_t u = u0; u < u1; u++) {
			int64_t x = s->start_ns[u] > a ? s->start_ns[u] : a;
			int64_t y = s->end_ns[u] < b ? s->end_ns[u] : b;
			if (x >= y)
				continue;
			if (n + 2 > *cap) { /* the points, then as many of scratch */
				size_t nc = *cap ? *cap * 2 : 1024;
				struct edge_pt *np = prism_realloc(*pts, 2 * nc * sizeof(*np));
				if (!np)
					return PRISM_ENOMEM;
				*pts = np;
				*cap = nc;
			}
			(*pts)[n++] = (struct edge_pt){x, (int8_t)!is_comm(g->kind[u]),
						       (int8_t)is_comm(g->kind[u])};
			(*pts)[n++] = (struct edge_pt){y, (int8_t) - !is_comm(g->kind[u]),
						       (int8_t)-is_comm(g->kind[u])};
		}
	}
	if (n) /* *pts may be NULL */
		sort_pts(*pts, *pts + *cap, n);
	for (size_t k = 0; k < n; k++) {
		int64_t d = (*pts)[k].t - last;
		if (comp && comm)
			t_both += d;
		else if (comp)
			t_comp += d;
		else if (comm)
			t_comm += d;
		comp += (*pts)[k].dcomp;
		comm += (*pts)[k].dcomm;
		last = (*pts)[k].t;
	}
	it->overlap_ns = t_both;
	it->exposed_compute_ns = t_comp;
	it->exposed_comm_ns = t_comm;
	it->idle_ns = (b - a) - t_both - t_comp - t_comm;
	return 0;
}

static void step_gpu_spans(const struct sim *s, struct step_gpu *sg)
{
	const struct graph *g = s->g;
	for (uint32_t i = 0; i < g->n_iters; i++)
		sg[i] = (struct step_gpu){INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN};
	for (uint32_t p = 0; p < g->n_procs; p++) {
		if (!g->procs[p].gpu)
			continue;
		for (uint32_t u = g->procs[p].first; u < g->procs[p].first + g->procs[p].n; u++) {
			struct step_gpu *x;
			int64_t te = g->start_ns[u] + g->dur_ns[u];
			if (g->iter[u] < 0 || (uint32_t)g->iter[u] >= g->n_iters)
				continue;
			x = &sg[g->iter[u]];
			x->tf = g->start_ns[u] < x->tf ? g->start_ns[u] : x->tf;
			x->tl = te > x->tl ? te : x->tl;
			x->sf = s->start_ns[u] < x->sf ? s->start_ns[u] : x->sf;
			x->sl = s->end_ns[u] > x->sl ? s->end_ns[u] : x->sl;
		}
	}
}

/* The GPU side of step i: to the next step's first GPU task (nx, of the
 * same rank, or -1), else to the step's own last; 0 without GPU work. */
static void gpu_side(const struct step_gpu *sg, long i, long nx, int64_t *traced,
		     int64_t *simulated)
{
	const struct step_gpu *a = &sg[i];
	*traced = *simulated = 0;
	if (a->tf == INT64_MAX)
		return;
	if (nx >= 0 && sg[nx].tf != INT64_MAX && sg[nx].tf >= a->tf && sg[nx].sf >= a->sf) {
		*traced = sg[nx].tf - a->tf;
		*simulated = sg[nx].sf - a->sf;
	} else {
		*traced = a->tl - a->tf;
		*simulated = a->sl - a->sf;
	}
}

/* metrics_iterations(), with the breakdowns (bd) or without them, into
 * k->its (k->its.n of them); 0 or PRISM_ENOMEM. */
static int iterations(const struct sim *s, struct metrics_scratch *k, int bd)
{
	const struct graph *g = s->g;
	size_t nv = g->n_iters + g->n_ranks + 1;
	struct metrics_iter *v;
	struct step_gpu *sg;
	long *next, *seen;
	struct windows win = {NULL, NULL};
	long n = 0;

	k->its.n = 0;
	if (VEC_RESERVE(k->its, nv) || VEC_RESERVE(k->sg, g->n_iters + 1) ||
	    VEC_RESERVE(k->next, g->n_iters + 1) || VEC_RESERVE(k->seen, g->n_ranks + 1) ||
	    (bd && windows_init(s, k, &win)))
		return PRISM_ENOMEM;
	v = k->its.v;
	sg = k->sg.v;
	next = k->next.v;
	seen = k->seen.v;
	memset(v, 0, nv * sizeof(*v)); /* as calloc left it */
	step_gpu_spans(s, sg);
	/* Each step's next step of the same rank (steps are in trace order). */
	for (uint32_t r = 0; r < g->n_ranks; r++)
		seen[r] = -1;
	for (long i = (long)g->n_iters - 1; i >= 0; i--) {
		next[i] = seen[g->iters[i].rank];
		seen[g->iters[i].rank] = i;
	}
	for (uint32_t r = 0; r < g->n_ranks; r++) {
		int any = 0;
		for (uint32_t i = 0; i < g->n_iters; i++) {
			const struct graph_iter *gi = &g->iters[i];
			struct metrics_iter *it;
			int64_t a, b;
			if (gi->rank != r || gi->proc == NONE32)
				continue;
			any = 1;
			a = sim_map_time(s, gi->proc, gi->start_ns);
			b = sim_map_time(s, gi->proc, gi->start_ns + gi->dur_ns);
			it = &v[n++];
			it->rank = r;
			it->step = gi->step;
			it->host_ns = gi->dur_ns;
			it->pred_host_ns = b - a;
			it->sim_host_start_ns = a;
			gpu_side(sg, i, next[i], &it->gpu_ns, &it->pred_gpu_ns);
			it->measured_ns = it->host_ns > it->gpu_ns ? it->host_ns : it->gpu_ns;
			it->predicted_ns = b - a;
			if (it->pred_gpu_ns > it->predicted_ns) { /* the GPU side decides */
				a = sg[i].sf;
				b = a + it->pred_gpu_ns;
				it->predicted_ns = it->pred_gpu_ns;
			}
			it->sim_start_ns = a;
			if (bd && breakdown(s, &win, r, a, b, it, &k->pts, &k->pts_cap))
				return PRISM_ENOMEM;
		}
		if (!any) {
			/* No step markers: the span of the rank's GPU work. */
			int64_t ta = INT64_MAX, tb = INT64_MIN, sa = INT64_MAX, sb = INT64_MIN;
			for (uint32_t p = 0; p < g->n_procs; p++) {
				if (g->procs[p].rank != r || !g->procs[p].gpu)
					continue;
				for (uint32_t u = g->procs[p].first;
				     u < g->procs[p].first + g->procs[p].n; u++) {
					int64_t te = g->start_ns[u] + g->dur_ns[u];
					ta = g->start_ns[u] < ta ? g->start_ns[u] : ta;
					tb = te > tb ? te : tb;
					sa = s->start_ns[u] < sa ? s->start_ns[u] : sa;
					sb = s->end_ns[u] > sb ? s->end_ns[u] : sb;
				}
			}
			if (ta == INT64_MAX)
				continue;
			v[n].rank = r;
			v[n].step = -1;
			v[n].measured_ns = v[n].gpu_ns = tb - ta;
			v[n].predicted_ns = v[n].pred_gpu_ns = sb - sa;
			v[n].sim_start_ns = sa;
			if (bd && breakdown(s, &win, r, sa, sb, &v[n], &k->pts, &k->pts_cap))
				return PRISM_ENOMEM;
			n++;
		}
	}
	k->its.n = (size_t)n;
	return 0;
}

struct metrics_scratch *metrics_scratch_new(void)
{
	return prism_calloc(1, sizeof(struct metrics_scratch));
}

/* k's arrays freed, k left empty. */
static void scratch_release(struct metrics_scratch *k)
{
	VEC_FREE(k->its);
	VEC_FREE(k->sorted);
	VEC_FREE(k->tmp);
	VEC_FREE(k->sg);
	VEC_FREE(k->next);
	VEC_FREE(k->seen);
	VEC_FREE(k->pmax);
	VEC_FREE(k->smin);
	free(k->pts);
	k->pts = NULL;
	k->pts_cap = 0;
}

void metrics_scratch_free(struct metrics_scratch *k)
{
	if (!k)
		return;
	scratch_release(k);
	free(k);
}

/* vec's array freed where it holds room for more than keep elements. */
#define TRIM(vec, keep)                                                                            \
	do {                                                                                       \
		if ((vec).cap > (keep))                                                            \
			VEC_FREE(vec);                                                             \
	} while (0)

void metrics_scratch_trim(struct metrics_scratch *k, size_t keep)
{
	TRIM(k->its, keep);
	TRIM(k->sorted, keep);
	TRIM(k->tmp, keep);
	TRIM(k->sg, keep);
	TRIM(k->next, keep);
	TRIM(k->seen, keep);
	TRIM(k->pmax, keep);
	TRIM(k->smin, keep);
	if (k->pts_cap > keep) {
		free(k->pts);
		k->pts = NULL;
		k->pts_cap = 0;
	}
}

/* iterations() into a malloc'd array of the caller's. */
static long iterations_out(const struct sim *s, struct metrics_iter **out, int bd)
{
	struct metrics_scratch k;
	long n;

	memset(&k, 0, sizeof(k));
	*out = NULL;
	if (iterations(s, &k, bd)) {
		scratch_release(&k);
		return -1;
	}
	n = (long)k.its.n;
	*out = k.its.v;
	k.its.v = NULL;
	scratch_release(&k);
	return n;
}

long metrics_iterations(const struct sim *s, struct metrics_iter **out)
{
	return iterations_out(s, out, 1);
}

long metrics_iteration_times(const struct sim *s, struct metrics_iter **out)
{
	return iterations_out(s, out, 0);
}

long metrics_iteration_times_k(const struct sim *s, struct metrics_scratch *k,
			       struct metrics_iter **its)
{
	if (iterations(s, k, 0))
		return -1;
	*its = k->its.v;
	return (long)k->its.n;
}

int metrics_breakdown_k(const struct sim *s, struct metrics_scratch *k, struct metrics_iter *it)
{
	struct windows win = {NULL, NULL};
	int rc = windows_init(s, k, &win);

	/* The window iterations() gave it: predicted_ns is b - a there. */
	if (rc == 0)
		rc = breakdown(s, &win, it->rank, it->sim_start_ns,
			       it->sim_start_ns + it->predicted_ns, it, &k->pts, &k->pts_cap);
	return rc;
}

int metrics_breakdown(const struct sim *s, struct metrics_iter *it)
{
	struct metrics_scratch k;
	int rc;

	memset(&k, 0, sizeof(k));
	rc = metrics_breakdown_k(s, &k, it);
	scratch_release(&k);
	return rc;
}

double metrics_utilisation(const struct sim *s, uint32_t p, int64_t from, int64_t to)
{
	const struct graph_proc *pr = &s->g->procs[p];
	int64_t busy = 0;
	if (to <= from)
		return 0;
	for (uint32_t u = pr->first; u < pr->first + pr->n; u++) {
		int64_t x = s->start_ns[u] > from ? s->start_ns[u] : from;
		int64_t y = s->end_ns[u] < to ? s->end_ns[u] : to;
		if (y > x)
			busy += y - x;
	}
	return (double)busy / (double)(to - from);
}

/* When u released v on the path: u's end, or its start for a launch. */
static int64_t released_at(const struct graph *g, const struct sim *s, uint32_t u, uint32_t v)
{
	for (uint32_t k = g->out_off[u]; k < g->out_off[u + 1]; k++)
		if (g->out_dst[k] == v)
			return graph_edge_release(g->out_kind[k], s->start_ns[u], s->end_ns[u]);
	return s->end_ns[u]; /* a rendezvous: the instance started together */
}

int metrics_critical_path(const struct sim *s, struct metrics_path *p)
{
	const struct graph *g = s->g;
	uint32_t cur = NONE32, next = NONE32, cap = 1024;
	int64_t first_start = 0;

	memset(p, 0, sizeof(*p));
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (cur == NONE32 || s->end_ns[u] > s->end_ns[cur])
			cur = u;
	p->nodes = prism_malloc(cap * sizeof(*p->nodes));
	if (!p->nodes)
		return PRISM_ENOMEM;
	while (cur != NONE32) {
		uint32_t b = s->nd[cur].binding;
		int64_t until = next == NONE32 ? s->end_ns[cur] : released_at(g, s, cur, next);
		if (p->n == cap) {
			uint32_t *nn = prism_realloc(p->nodes, (size_t)cap * 2 * sizeof(*nn));
			if (!nn) {
				free(p->nodes);
				p->nodes = NULL;
				return PRISM_ENOMEM;
			}
			p->nodes = nn;
			cap *= 2;
		}
		p->nodes[p->n++] = cur;
		p->by_kind_ns[g->kind[cur]] += until - s->start_ns[cur];
		if (next != NONE32)
			p->lag_ns += s->start_ns[next] - until;
		first_start = s->start_ns[cur];
		/* A collective member bound to the last-arriving member of its
		 * instance ran alongside it: continue from what held that one. */
		if (b != NONE32 && g->coll[cur] != NONE32 && g->coll[b] != NONE32 &&
		    s->start_ns[b] == s->start_ns[cur])
			b = s->nd[b].binding;
		next = cur;
		cur = b;
	}
	p->length_ns = s->makespan_ns - first_start;
	return 0;
}

/* v[0..n) sorted by step, tmp n entries of scratch: a natural merge sort
 * (the entries come in runs: each rank's steps in order).  Entries of one
 * step may come in any order: what is made of them (the largest of
 * each step's, the steps in order) does not depend on it. */
MSORT_RUNS(sort_steps, struct metrics_iter, step)

/* The entries of the steps a prediction averages over, sorted by step,
 * into k->sorted (*m of them; *out its array): steps 0..maxstep, the first
 * left out; spans without markers are all step -1.  The steps present,
 * sorted, not every number up to maxstep: a trace may number its steps
 * up to 2^63. */
static int steps_sorted(const struct metrics_iter *its, long n, struct metrics_scratch *k,
			struct metrics_iter **out, long *m)
{
	struct metrics_iter *v;
	int64_t maxstep = -1;
	size_t room = n > 0 ? (size_t)n : 1;

	*m = 0;
	for (long i = 0; i < n; i++)
		if (its[i].step > maxstep)
			maxstep = its[i].step;
	if (VEC_RESERVE(k->sorted, room) || VEC_RESERVE(k->tmp, room))
		return PRISM_ENOMEM;
	v = k->sorted.v;
	for (long i = 0; i < n; i++)
		if (maxstep > 0 ? its[i].step >= 1 : its[i].step == maxstep)
			v[(*m)++] = its[i];
	if (*m)
		sort_steps(v, k->tmp.v, (size_t)*m);
	*out = v;
	return 0;
}

int metrics_step_time_k(const struct metrics_iter *its, long n, struct metrics_scratch *k,
			double *iter_s)
{
	struct metrics_iter *v;
	int64_t w;
	double sum = 0;
	long m;
	int cnt = 0;

	*iter_s = 0;
	if (steps_sorted(its, n, k, &v, &m))
		return PRISM_ENOMEM;
	for (long i = 0; i < m;) {
		long j = i;
		for (w = -1; j < m && v[j].step == v[i].step; j++)
			if (v[j].predicted_ns > w)
				w = v[j].predicted_ns;
		if (w >= 0) {
			sum += (double)w * 1e-9;
			cnt++;
		}
		i = j;
	}
	*iter_s = cnt ? sum / cnt : 0;
	return 0;
}

int metrics_step_time(const struct metrics_iter *its, long n, double *iter_s)
{
	struct metrics_scratch k;
	int rc;

	memset(&k, 0, sizeof(k));
	rc = metrics_step_time_k(its, n, &k, iter_s);
	scratch_release(&k);
	return rc;
}

int metrics_step_sides(const struct metrics_iter *its, long n, double *host_s, double *gpu_s,
		       int *host_bound)
{
	struct metrics_scratch k;
	struct metrics_iter *v;
	double host = 0, gpu = 0;
	long m;
	int cnt = 0;

	*host_s = *gpu_s = 0;
	*host_bound = n > 0;
	memset(&k, 0, sizeof(k));
	if (steps_sorted(its, n, &k, &v, &m)) {
		scratch_release(&k);
		return PRISM_ENOMEM;
	}
	for (long i = 0; i < m;) {
		int64_t h = -1, gs = -1;
		long j = i;
		for (; j < m && v[j].step == v[i].step; j++) {
			h = v[j].pred_host_ns > h ? v[j].pred_host_ns : h;
			gs = v[j].pred_gpu_ns > gs ? v[j].pred_gpu_ns : gs;
			if (v[j].predicted_ns > 0 &&
			    (double)v[j].idle_ns <=
				METRICS_HOST_BOUND_IDLE * (double)v[j].predicted_ns)
				*host_bound = 0;
		}
		if (h >= 0) {
			host += (double)h * 1e-9;
			gpu += (double)gs * 1e-9;
			cnt++;
		}
		i = j;
	}
	scratch_release(&k);
	*host_s = cnt ? host / cnt : 0;
	*gpu_s = cnt ? gpu / cnt : 0;
	return 0;
}
