/* sim.c - list scheduling over the graph with a (time, sequence) heap. */
#include "sim.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NONE32 UINT32_MAX

void sim_opts_default(struct sim_opts *o)
{
	o->skip = 0;
	o->rendezvous = 1;
	o->slow_compute = 0;
	o->slow_comm = 0;
	o->contention_added = 0;
}

/* A finish event carries its node with this bit set. */
#define SIM_FIN 0x80000000u

struct inst_key {
	uint32_t pg, seq, kind, rank, coll;
};

static int cmp_inst(const void *a, const void *b)
{
	const struct inst_key *x = a, *y = b;
	if (x->pg != y->pg)
		return x->pg < y->pg ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->coll < y->coll ? -1 : x->coll > y->coll;
}

/* What members of one instance must agree on: the collective, a send
 * and a recv being one transfer. */
static uint32_t kind_class(uint8_t k)
{
	return k == GC_SEND || k == GC_RECV ? GC_SEND_RECV : k;
}

/* Group collectives into instances: one per (process group, sequence)
 * and kind.  Members that disagree on the kind (ranks traced from
 * different runs, or a mislabelled group) do not wait for each other:
 * each kind is an instance of its own, counted in n_mismatched. */
static int match_collectives(struct sim *s)
{
	const struct graph *g = s->g;
	uint32_t nc = g->n_colls;
	struct inst_key *k = prism_malloc((nc ? nc : 1) * sizeof(*k));

	if (!k)
		return PRISM_ENOMEM;
	for (uint32_t c = 0; c < nc; c++) {
		k[c].pg = g->colls[c].pg;
		k[c].seq = g->colls[c].seq;
		k[c].kind = kind_class(g->colls[c].kind);
		k[c].rank = g->procs[g->proc[g->colls[c].node]].rank;
		k[c].coll = c;
	}
	qsort(k, nc, sizeof(*k), cmp_inst);
	s->n_inst = 0;
	s->n_mismatched = 0;
	for (uint32_t i = 0; i < nc; i++) {
		int same_op = i > 0 && k[i].pg == k[i - 1].pg && k[i].seq == k[i - 1].seq;
		int fresh = !same_op || k[i].kind != k[i - 1].kind || k[i].rank == k[i - 1].rank;
		if (same_op && k[i].kind != k[i - 1].kind)
			s->n_mismatched++;
		if (fresh) {
			s->inst_first[s->n_inst] = i;
			s->inst_size[s->n_inst] = 0;
			s->inst_dur[s->n_inst] = INT64_MAX;
			s->n_inst++;
		}
		s->inst_of[k[i].coll] = s->n_inst - 1;
		s->inst_members[i] = k[i].coll;
		s->inst_size[s->n_inst - 1]++;
		if (g->dur_ns[g->colls[k[i].coll].node] < s->inst_dur[s->n_inst - 1])
			s->inst_dur[s->n_inst - 1] = g->dur_ns[g->colls[k[i].coll].node];
	}
	s->inst_first[s->n_inst] = nc;
	free(k);
	return 0;
}

struct sim *sim_new(const struct graph *g)
{
	struct sim *s = prism_calloc(1, sizeof(*s));
	size_t n = g->n_nodes ? g->n_nodes : 1, nc = g->n_colls ? g->n_colls : 1;

	if (!s)
		return NULL;
	s->g = g;
	s->start_ns = prism_malloc(n * sizeof(*s->start_ns));
	s->end_ns = prism_malloc(n * sizeof(*s->end_ns));
	s->binding = prism_malloc(n * sizeof(*s->binding));
	s->ready_ns = prism_malloc(n * sizeof(*s->ready_ns));
	s->indeg = prism_malloc(n * sizeof(*s->indeg));
	s->inst_of = prism_malloc(nc * sizeof(*s->inst_of));
	s->inst_first = prism_malloc((nc + 1) * sizeof(*s->inst_first));
	s->inst_members = prism_malloc(nc * sizeof(*s->inst_members));
	s->inst_size = prism_malloc(nc * sizeof(*s->inst_size));
	s->inst_arrived = prism_malloc(nc * sizeof(*s->inst_arrived));
	s->inst_ready = prism_malloc(nc * sizeof(*s->inst_ready));
	s->inst_dur = prism_malloc(nc * sizeof(*s->inst_dur));
	s->inst_last = prism_malloc(nc * sizeof(*s->inst_last));
	if (!s->start_ns || !s->end_ns || !s->binding || !s->ready_ns || !s->indeg || !s->inst_of ||
	    !s->inst_first || !s->inst_members || !s->inst_size || !s->inst_arrived ||
	    !s->inst_ready || !s->inst_dur || !s->inst_last || evq_init(&s->q, g->n_procs + 16) ||
	    match_collectives(s)) {
		sim_free(s);
		return NULL;
	}
	return s;
}

void sim_free(struct sim *s)
{
	if (!s)
		return;
	free(s->start_ns);
	free(s->end_ns);
	free(s->binding);
	free(s->ready_ns);
	free(s->indeg);
	free(s->inst_of);
	free(s->inst_first);
	free(s->inst_members);
	free(s->inst_size);
	free(s->inst_arrived);
	free(s->inst_ready);
	free(s->inst_dur);
	free(s->inst_last);
	free(s->rem);
	free(s->pred_end);
	for (uint32_t r = 0; s->run && r < s->n_gpu_ranks; r++)
		free(s->run[r].v);
	free(s->run);
	evq_release(&s->q);
	free(s);
}

static int skipped(unsigned skip, uint8_t kind)
{
	return ((skip & SIM_SKIP_EVENT) && GE_KIND(kind) == GE_EVENT) ||
	       ((skip & SIM_SKIP_SHARE) && GE_KIND(kind) == GE_SHARE) ||
	       ((skip & SIM_SKIP_INFERRED) && (kind & GE_INFERRED));
}

/* Duration of u in this run. */
static int64_t dur_of(const struct sim *s, uint32_t u, int rendezvous)
{
	const struct graph *g = s->g;
	if (rendezvous && g->coll[u] != NONE32 && s->inst_size[s->inst_of[g->coll[u]]] > 1)
		return s->inst_dur[s->inst_of[g->coll[u]]];
	return g->dur_ns[u];
}

static int too_late(const struct graph *g, uint32_t u, struct prism_err *err)
{
	return prism_err_set(err, PRISM_ELIMIT,
			     "simulation: task %" PRIu32 " '%.60s' would end more than %" PRId64
			     " ns (146 years) after the start",
			     u, strtab_get(&g->st, g->name[u]), PRISM_TIME_MAX);
}

/* Whether u is slowed by contention: 1 a compute kernel, 2 a collective
 * (with one member present), 0 neither. */
static int contended(const struct sim *s, const struct sim_opts *o, uint32_t u, int rv)
{
	const struct graph *g = s->g;
	if (!g->procs[g->proc[u]].gpu)
		return 0;
	if (g->kind[u] == GN_KERNEL)
		return 1;
	if (o->contention_added && !(g->flags[u] & NF_ADDED))
		return 0;
	if (g->kind[u] == GN_COLL &&
	    !(rv && g->coll[u] != NONE32 && s->inst_size[s->inst_of[g->coll[u]]] > 1))
		return 2;
	return 0;
}

static int contention_alloc(struct sim *s)
{
	const struct graph *g = s->g;
	size_t n = g->n_nodes ? g->n_nodes : 1;
	uint32_t ranks = 0;
	if (s->rem)
		return 0;
	for (uint32_t p = 0; p < g->n_procs; p++)
		if (g->procs[p].rank + 1 > ranks)
			ranks = g->procs[p].rank + 1;
	s->rem = prism_malloc(n * sizeof(*s->rem));
	s->pred_end = prism_malloc(n * sizeof(*s->pred_end));
	s->run = prism_calloc(ranks ? ranks : 1, sizeof(*s->run));
	s->n_gpu_ranks = ranks;
	return s->rem && s->pred_end && s->run ? 0 : PRISM_ENOMEM;
}

static double rate_of(const struct sim *s, const struct sim_opts *o, const struct sim_running *r,
		      uint32_t u)
{
	if (s->g->kind[u] == GN_KERNEL)
		return r->n_comm > 0 ? 1.0 / (1.0 + o->slow_compute) : 1.0;
	return r->n > r->n_comm ? 1.0 / (1.0 + o->slow_comm) : 1.0;
}

/* Account the rank's running tasks' progress up to t. */
static void advance(struct sim *s, const struct sim_opts *o, struct sim_running *r, int64_t t)
{
	for (uint32_t i = 0; i < r->n; i++) {
		uint32_t v = r->v[i];
		s->rem[v] -= (double)(t - r->since) * rate_of(s, o, r, v);
		if (s->rem[v] < 0)
			s->rem[v] = 0;
	}
	r->since = t;
}

/* The rank's running tasks' ends at the current rates, as finish events. */
static int retime(struct sim *s, const struct sim_opts *o, struct sim_running *r, int64_t t)
{
	for (uint32_t i = 0; i < r->n; i++) {
		uint32_t v = r->v[i];
		double left = s->rem[v] / rate_of(s, o, r, v);
		/* Past PRISM_TIME_MAX: release() refuses it (too_late). */
		int64_t end =
		    left > (double)PRISM_TIME_MAX ? PRISM_TIME_MAX + 1 : t + (int64_t)llround(left);
		if (end == s->pred_end[v])
			continue;
		s->pred_end[v] = end;
		if (evq_push(&s->q, end, v | SIM_FIN))
			return PRISM_ENOMEM;
	}
	return 0;
}

/* u starts at t on its rank's GPU, beside what runs there. */
static int begin(struct sim *s, const struct sim_opts *o, uint32_t u, int64_t t, int64_t dur,
		 int kind)
{
	struct sim_running *r = &s->run[s->g->procs[s->g->proc[u]].rank];
	if (r->n == r->cap) {
		uint32_t cap = r->cap ? 2 * r->cap : 8;
		uint32_t *v = prism_realloc(r->v, cap * sizeof(*v));
		if (!v)
			return PRISM_ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	advance(s, o, r, t);
	r->v[r->n++] = u;
	r->n_comm += kind == 2;
	s->rem[u] = (double)dur;
	s->pred_end[u] = INT64_MIN;
	return retime(s, o, r, t);
}

/* A finish event of u at t: 1 when it is u's end (and u is taken off its
 * rank), 0 when stale; PRISM_ENOMEM. */
static int finish(struct sim *s, const struct sim_opts *o, uint32_t u, int64_t t)
{
	struct sim_running *r = &s->run[s->g->procs[s->g->proc[u]].rank];
	uint32_t i;
	if (s->end_ns[u] >= 0 || s->pred_end[u] != t)
		return 0;
	for (i = 0; i < r->n && r->v[i] != u; i++)
		;
	if (i == r->n)
		return 0;
	advance(s, o, r, t);
	r->n_comm -= s->g->kind[u] != GN_KERNEL;
	r->v[i] = r->v[--r->n];
	s->end_ns[u] = t;
	return retime(s, o, r, t) ? PRISM_ENOMEM : 1;
}

/* u has ended: release what waits for it.  0, or the error set in err. */
static int release(struct sim *s, const struct sim_opts *o, uint32_t u, struct prism_err *err)
{
	const struct graph *g = s->g;
	/* Times and durations are within PRISM_TIME_MAX: the sum fits. */
	if (s->end_ns[u] > PRISM_TIME_MAX)
		return too_late(g, u, err);
	if (s->end_ns[u] > s->makespan_ns)
		s->makespan_ns = s->end_ns[u];
	s->n_done++;
	for (uint32_t k = g->out_off[u]; k < g->out_off[u + 1]; k++) {
		uint32_t v = g->out_dst[k];
		int64_t t;
		if (skipped(o->skip, g->out_kind[k]))
			continue;
		t = graph_edge_release(g->out_kind[k], s->start_ns[u], s->end_ns[u]);
		if (s->binding[v] == NONE32 || t > s->ready_ns[v]) {
			s->ready_ns[v] = t;
			s->binding[v] = u;
		}
		if (--s->indeg[v] == 0) {
			int64_t at = s->ready_ns[v] + g->lag_ns[v];
			if ((g->flags[v] & NF_ANCHORED) && g->start_ns[v] > at)
				at = g->start_ns[v];
			if (at > PRISM_TIME_MAX)
				return too_late(g, v, err);
			if (evq_push(&s->q, at, v))
				return prism_err_set(err, PRISM_ENOMEM,
						     "simulation: out of memory");
		}
	}
	return 0;
}

int sim_run(struct sim *s, const struct sim_opts *o, struct prism_err *err)
{
	const struct graph *g = s->g;
	struct evq_entry e;
	int rv = o->rendezvous, cont = o->slow_compute > 0 || o->slow_comm > 0;

	evq_reset(&s->q);
	memset(s->indeg, 0, g->n_nodes * sizeof(*s->indeg));
	for (uint32_t k = 0; k < g->n_edges; k++)
		if (!skipped(o->skip, g->out_kind[k]))
			s->indeg[g->out_dst[k]]++;
	for (uint32_t i = 0; i < s->n_inst; i++) {
		s->inst_arrived[i] = 0;
		s->inst_ready[i] = INT64_MIN;
		s->inst_last[i] = NONE32;
	}
	s->makespan_ns = 0;
	s->n_done = 0;
	if (cont) {
		if (contention_alloc(s))
			return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
		for (uint32_t r = 0; r < s->n_gpu_ranks; r++) {
			s->run[r].n = s->run[r].n_comm = 0;
			s->run[r].since = 0;
		}
	}
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		s->ready_ns[u] = INT64_MIN;
		s->binding[u] = NONE32;
		s->start_ns[u] = s->end_ns[u] = -1;
		if (s->indeg[u] == 0) {
			/* A task nothing precedes starts when it did in the trace. */
			s->ready_ns[u] = g->start_ns[u];
			if (evq_push(&s->q, g->start_ns[u], u))
				return prism_err_set(err, PRISM_ENOMEM,
						     "simulation: out of memory");
		}
	}
	while (evq_pop(&s->q, &e) == 0) {
		uint32_t u = e.node, c;
		int kind, fin;

		if (u & SIM_FIN) {
			u &= ~SIM_FIN;
			if ((fin = finish(s, o, u, e.time_ns)) < 0)
				return prism_err_set(err, PRISM_ENOMEM,
						     "simulation: out of memory");
			if (fin && (fin = release(s, o, u, err)))
				return fin;
			continue;
		}
		c = g->coll[u];

		if (rv && c != NONE32 && s->inst_size[s->inst_of[c]] > 1 && s->start_ns[u] < 0) {
			/* Rendezvous: wait for every member; the last releases all. */
			uint32_t i = s->inst_of[c];
			if (e.time_ns > s->inst_ready[i] || s->inst_last[i] == NONE32) {
				s->inst_ready[i] =
				    e.time_ns > s->inst_ready[i] ? e.time_ns : s->inst_ready[i];
				s->inst_last[i] = u;
			}
			s->start_ns[u] = -2; /* arrived, waiting */
			if (++s->inst_arrived[i] < s->inst_size[i])
				continue;
			/* All here: start every member at the last arrival. */
			for (uint32_t m = s->inst_first[i]; m < s->inst_first[i + 1]; m++) {
				uint32_t v = g->colls[s->inst_members[m]].node;
				s->start_ns[v] = s->inst_ready[i];
				if (v != s->inst_last[i])
					s->binding[v] = s->inst_last[i];
				if (evq_push(&s->q, s->inst_ready[i], v))
					return prism_err_set(err, PRISM_ENOMEM,
							     "simulation: out of memory");
			}
			continue;
		}
		if (s->end_ns[u] >= 0)
			continue; /* stale */
		s->start_ns[u] = e.time_ns;
		if (cont && (kind = contended(s, o, u, rv)) != 0) {
			if (begin(s, o, u, e.time_ns, dur_of(s, u, rv), kind))
				return prism_err_set(err, PRISM_ENOMEM,
						     "simulation: out of memory");
			continue;
		}
		s->end_ns[u] = e.time_ns + dur_of(s, u, rv);
		if ((fin = release(s, o, u, err)))
			return fin;
	}
	if (s->n_done != g->n_nodes)
		return prism_err_set(err, PRISM_EINTERNAL,
				     "simulation: %" PRIu64 " of %" PRIu32
				     " tasks never started (collectives whose ranks wait on "
				     "each other: %" PRIu32 " instances disagree on the kind)",
				     (uint64_t)(g->n_nodes - s->n_done), g->n_nodes,
				     s->n_mismatched);
	return 0;
}

int64_t sim_map_time(const struct sim *s, uint32_t p, int64_t t)
{
	const struct graph *g = s->g;
	const struct graph_proc *pr = &g->procs[p];
	uint32_t lo = 0, hi = pr->n, u;
	int64_t off, d;

	if (pr->n == 0)
		return t;
	while (lo < hi) { /* first task starting after t */
		uint32_t mid = lo + (hi - lo) / 2;
		if (g->start_ns[pr->first + mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return s->start_ns[pr->first] - (g->start_ns[pr->first] - t);
	u = pr->first + lo - 1;
	off = t - g->start_ns[u];
	d = s->end_ns[u] - s->start_ns[u];
	if (g->kind[u] == GN_WAIT) {
		/* Traced start of a wait node is where its waiting ended; an
		 * instant inside the waiting maps to that end. */
		return s->start_ns[u] + (off < d ? off : d);
	}
	if (off > d) {
		/* Past the task's end: waiting before the next task (a gap the
		 * tiling leaves only around blocking calls). */
		if (lo < pr->n)
			return s->start_ns[u + 1];
		return s->end_ns[u] + (off - d);
	}
	return s->start_ns[u] + off;
}
