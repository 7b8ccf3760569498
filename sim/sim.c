/* sim.c - list scheduling over the graph with a (time, sequence) heap. */
#include "sim.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NONE32 UINT32_MAX

void sim_opts_default(struct sim_opts *o)
{
	o->fold = NULL;
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

/* Field f of k: the order's keys, most significant first (coll last). */
static uint32_t inst_field(const struct inst_key *k, int f)
{
	return f == 0 ? k->pg : f == 1 ? k->seq : f == 2 ? k->kind : k->rank;
}

/*
 * k[0..n) (made in collective order: coll ascending) into the order of
 * (pg, seq, kind, rank, coll): a least-significant-first radix sort, one
 * stable counting pass per byte of rank, kind, seq and pg in turn, the
 * bytes every key shares skipped.  The keys are distinct (coll), so the
 * order is the one a comparison sort gives; qsort's comparisons cost
 * 7 % of a folded GPT-3 175B candidate's instructions (docs/PERFORMANCE.md).
 * tmp: n entries of scratch.
 */
static void sort_inst(struct inst_key *k, struct inst_key *tmp, uint32_t n)
{
	struct inst_key *src = k, *dst = tmp, *sw;
	uint32_t cnt[256];

	if (n < 2)
		return;
	for (int f = 3; f >= 0; f--) {
		uint32_t lo = UINT32_MAX, hi = 0;
		for (uint32_t i = 0; i < n; i++) {
			lo &= inst_field(&src[i], f);
			hi |= inst_field(&src[i], f);
		}
		for (int sh = 0; sh < 32; sh += 8) {
			uint32_t sum = 0;
			if ((((lo ^ hi) >> sh) & 0xffu) == 0)
				continue; /* every key has this byte */
			memset(cnt, 0, sizeof(cnt));
			for (uint32_t i = 0; i < n; i++)
				cnt[(inst_field(&src[i], f) >> sh) & 0xffu]++;
			for (int b = 0; b < 256; b++) {
				uint32_t c = cnt[b];
				cnt[b] = sum;
				sum += c;
			}
			for (uint32_t i = 0; i < n; i++)
				dst[cnt[(inst_field(&src[i], f) >> sh) & 0xffu]++] = src[i];
			sw = src;
			src = dst;
			dst = sw;
		}
	}
	if (src != k)
		memcpy(k, src, (size_t)n * sizeof(*k));
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
	struct inst_key *k = s->inst_keys; /* 2 nc of them: sort_inst's room */

	for (uint32_t c = 0; c < nc; c++) {
		k[c].pg = g->colls[c].pg;
		k[c].seq = g->colls[c].seq;
		k[c].kind = kind_class(g->colls[c].kind);
		k[c].rank = g->procs[g->proc[g->colls[c].node]].rank;
		k[c].coll = c;
	}
	sort_inst(k, k + nc, nc);
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
	return 0;
}

/* Grow *p to hold n elements of size el (its contents not kept).  0 or
 * PRISM_ENOMEM (*p then unchanged). */
static int regrow(void **p, size_t n, size_t el)
{
	void *q = prism_malloc(n * el);
	if (!q)
		return PRISM_ENOMEM;
	free(*p);
	*p = q;
	return 0;
}

/* The arrays made on a run's demand, sized by the capacities: dropped
 * when a capacity grows, made again by the run that needs them. */
static void drop_lazy(struct sim *s)
{
	free(s->rem);
	free(s->rkind);
	free(s->fold_of);
	free(s->mp_work);
	free(s->mp_q);
	free(s->mp_a);
	free(s->mp_main);
	free(s->mp_cur);
	free(s->mp_other);
	free(s->mp_t);
	free(s->mp_cnt);
	s->rem = NULL;
	s->rkind = NULL;
	s->fold_of = NULL;
	s->mp_work = s->mp_a = s->mp_main = s->mp_cur = s->mp_other = s->mp_cnt = NULL;
	s->mp_q = NULL;
	s->mp_t = NULL;
}

int sim_bind(struct sim *s, const struct graph *g)
{
	size_t n = g->n_nodes ? g->n_nodes : 1, nc = g->n_colls ? g->n_colls : 1;
	size_t np = g->n_procs ? g->n_procs : 1;

	s->g = NULL;
	if (n > s->cap_n || np > s->cap_p) {
		size_t cn = n > s->cap_n ? n : s->cap_n, cp = np > s->cap_p ? np : s->cap_p;
		drop_lazy(s);
		if (regrow((void **)&s->start_ns, cn, sizeof(*s->start_ns)) ||
		    regrow((void **)&s->end_ns, cn, sizeof(*s->end_ns)) ||
		    regrow(&s->nd_mem, cn + 2, sizeof(*s->nd)))
			return PRISM_ENOMEM;
		s->nd = (struct sim_node *)(((uintptr_t)s->nd_mem + 63) & ~(uintptr_t)63);
		s->cap_n = cn;
		s->cap_p = cp;
	}
	if (nc > s->cap_c) {
		if (regrow((void **)&s->inst_of, nc, sizeof(*s->inst_of)) ||
		    regrow((void **)&s->inst_first, nc + 1, sizeof(*s->inst_first)) ||
		    regrow((void **)&s->inst_members, nc, sizeof(*s->inst_members)) ||
		    regrow((void **)&s->inst_size, nc, sizeof(*s->inst_size)) ||
		    regrow((void **)&s->inst_arrived, nc, sizeof(*s->inst_arrived)) ||
		    regrow((void **)&s->inst_ready, nc, sizeof(*s->inst_ready)) ||
		    regrow((void **)&s->inst_dur, nc, sizeof(*s->inst_dur)) ||
		    regrow((void **)&s->inst_last, nc, sizeof(*s->inst_last)) ||
		    regrow((void **)&s->inst_keys, 2 * nc, sizeof(struct inst_key)))
			return PRISM_ENOMEM;
		s->cap_c = nc;
	}
	if (!s->q.heap && evq_init(&s->q, g->n_procs + 16))
		return PRISM_ENOMEM;
	evq_reset(&s->q);
	s->g = g;
	s->n_gpu_ranks = 0; /* contention_alloc counts them for g */
	s->plog.n = 0;
	s->mp_why = SIM_MP_OPTS;
	s->mp_queued = s->mp_direct = 0;
	s->mp_hybrid = 0;
	s->makespan_ns = 0;
	s->n_done = 0;
	if (match_collectives(s)) {
		s->g = NULL;
		return PRISM_ENOMEM;
	}
	return 0;
}

struct sim *sim_new(const struct graph *g)
{
	struct sim *s = prism_calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (g && sim_bind(s, g)) {
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
	free(s->nd_mem);
	free(s->inst_of);
	free(s->inst_first);
	free(s->inst_members);
	free(s->inst_size);
	free(s->inst_arrived);
	free(s->inst_ready);
	free(s->inst_dur);
	free(s->inst_last);
	free(s->inst_keys);
	free(s->mp_scr);
	drop_lazy(s);
	free(s->fst);
	free(s->fold_busy);
	free(s->lane);
	free(s->xoff);
	free(s->xend);
	free(s->xstart);
	free(s->memo_at);
	VEC_FREE(s->memo);
	VEC_FREE(s->memo_t);
	VEC_FREE(s->plog);
	VEC_FREE(s->ptmp);
	VEC_FREE(s->pcount);
	for (uint32_t r = 0; s->run && r < s->cap_r; r++)
		free(s->run[r].v);
	free(s->run);
	evq_release(&s->q);
	free(s);
}

/* When task v, its last dependency released, arrives to start: its
 * release plus its launch lag, or its anchored start if later. */
static inline int64_t arrival_ns(const struct sim *s, uint32_t v)
{
	const struct graph *g = s->g;
	int64_t at = s->nd[v].ready_ns + g->lag_ns[v];
	return (g->flags[v] & NF_ANCHORED) && g->start_ns[v] > at ? g->start_ns[v] : at;
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
	uint32_t ranks = 0;
	if (s->rem && s->n_gpu_ranks)
		return 0;
	for (uint32_t p = 0; p < g->n_procs; p++)
		if (g->procs[p].rank + 1 > ranks)
			ranks = g->procs[p].rank + 1;
	if (ranks > s->cap_r) {
		/* Per rank: the running sets (their memory kept), the
		 * hybrid's arrays (made again at the new size). */
		struct sim_running *run = prism_realloc(s->run, ranks * sizeof(*run));
		if (!run)
			return PRISM_ENOMEM;
		memset(run + s->cap_r, 0, (ranks - s->cap_r) * sizeof(*run));
		s->run = run;
		s->cap_r = ranks;
		free(s->mp_main);
		free(s->mp_other);
		free(s->mp_t);
		free(s->mp_cnt);
		s->mp_main = s->mp_other = s->mp_cnt = NULL;
		s->mp_t = NULL;
	}
	if (!s->run && !(s->run = prism_calloc(1, sizeof(*s->run))))
		return PRISM_ENOMEM;
	if (!s->rem)
		s->rem = prism_malloc(s->cap_n * sizeof(*s->rem));
	if (!s->rkind)
		s->rkind = prism_malloc(s->cap_n * sizeof(*s->rkind));
	s->n_gpu_ranks = ranks;
	return s->rem && s->rkind ? 0 : PRISM_ENOMEM;
}

/* The run's slowed rates (struct sim.rate_comp, rate_comm): the values
 * rate_of and lrate divided out for each task, once. */
static void sim_rates(struct sim *s, const struct sim_opts *o)
{
	s->rate_comp = 1.0 / (1.0 + o->slow_compute);
	s->rate_comm = 1.0 / (1.0 + o->slow_comm);
}

static double rate_of(const struct sim *s, const struct sim_running *r, uint32_t u)
{
	if (s->rkind[u] == SIM_PIECE_COMPUTE)
		return r->n_comm > 0 ? s->rate_comp : 1.0;
	if (s->rkind[u] == SIM_PIECE_COMM)
		return r->n_comp > 0 ? s->rate_comm : 1.0;
	return 1.0;
}

/* Folded task states (sim_fstate.mode): run as one from piece k (the one
 * before ended at at_ns; piece k starts at at_ns; piece k runs), or
 * followed piece by piece. */
#define SIM_F_COLLAPSED 0
#define SIM_F_CWAIT	1
#define SIM_F_CRUN	2
#define SIM_F_WAITING	3
#define SIM_F_RUNNING	4

/* Whether u is a folded task whose pieces run as one (its end fixed). */
static int collapsed(const struct sim *s, uint32_t u)
{
	return s->fold_of && s->fold_of[u] != NONE32 && s->fst[s->fold_of[u]].mode <= SIM_F_CRUN;
}

/* ---- pairs: folded tasks with a side lane (sim.h) ------------------------ */

/* A lane's state (sim_lane.mode): waiting for its piece's start (pred),
 * running it, blocked on the other lane's piece, done. */
#define SIM_L_WAIT  0
#define SIM_L_RUN   1
#define SIM_L_BLOCK 2
#define SIM_L_DONE  3

/* A finish event of a pair's side lane carries this bit too (graph.h's
 * GRAPH_MAX_TASKS keeps it clear of the node). */
#define SIM_SIDE 0x40000000u

struct sim_lane {
	int64_t prev;	/* its piece before's end (its task's start before the first) */
	int64_t at;	/* WAIT, RUN: its piece's start */
	int64_t pred;	/* WAIT: its piece's start; RUN: its end at the current rates */
	int64_t pushed; /* the time of its last event pushed (INT64_MIN: none) */
	double rem;	/* RUN: its piece's work left at full speed */
	uint32_t k;	/* its piece (those before it have ended) */
	uint8_t mode;	/* SIM_L_* */
	uint8_t kind;	/* RUN: SIM_PIECE_* */
	uint8_t held;	/* lane 0: a launch decided a piece's start */
};

static void pair_advance(struct sim *s, struct sim_running *r, uint32_t u, int64_t t);
static int pair_retime(struct sim *s, struct sim_running *r, uint32_t u, int64_t t);
static int is_pair(const struct sim *s, const struct sim_opts *o, uint32_t u);

/* Account the rank's running tasks' progress up to t. */
static void advance(struct sim *s, const struct sim_opts *o, struct sim_running *r, int64_t t)
{
	for (uint32_t i = 0; i < r->n; i++) {
		uint32_t v = r->v[i], f = s->fold_of ? s->fold_of[v] : NONE32;
		if (f != NONE32 && s->fst[f].mode <= SIM_F_CRUN)
			continue; /* collapsed */
		if (f != NONE32 && o->fold->tasks[f].n2 > 0) {
			pair_advance(s, r, v, t);
			continue;
		}
		s->rem[v] -= (double)(t - r->since) * rate_of(s, r, v);
		if (s->rem[v] < 0)
			s->rem[v] = 0;
	}
	r->since = t;
}

/* The rank's running tasks' ends at the current rates, as finish events. */
static int retime(struct sim *s, const struct sim_opts *o, struct sim_running *r, int64_t t)
{
	for (uint32_t i = 0; i < r->n; i++) {
		uint32_t v = r->v[i], f = s->fold_of ? s->fold_of[v] : NONE32;
		double left;
		if (f != NONE32 && s->fst[f].mode <= SIM_F_CRUN)
			continue; /* collapsed */
		if (f != NONE32 && o->fold->tasks[f].n2 > 0) {
			if (pair_retime(s, r, v, t))
				return PRISM_ENOMEM;
			continue;
		}
		left = s->rem[v] / rate_of(s, r, v);
		/* Past PRISM_TIME_MAX: release() refuses it (too_late). */
		int64_t end =
		    left > (double)PRISM_TIME_MAX ? PRISM_TIME_MAX + 1 : t + prism_llround(left);
		if (end == s->nd[v].pred_end)
			continue;
		s->nd[v].pred_end = end;
		if (evq_push(&s->q, end, v | SIM_FIN))
			return PRISM_ENOMEM;
	}
	return 0;
}

/* The rank u runs on. */
static struct sim_running *rank_of(struct sim *s, uint32_t u)
{
	return &s->run[s->g->procs[s->g->proc[u]].rank];
}

/* u (running on r) runs as kind from now (SIM_PIECE_*). */
static void set_rkind(struct sim *s, struct sim_running *r, uint32_t u, uint8_t kind)
{
	r->n_comp -= s->rkind[u] == SIM_PIECE_COMPUTE;
	r->n_comm -= s->rkind[u] == SIM_PIECE_COMM;
	s->rkind[u] = kind;
	r->n_comp += kind == SIM_PIECE_COMPUTE;
	r->n_comm += kind == SIM_PIECE_COMM;
}

static int add_running(struct sim_running *r, uint32_t u)
{
	if (r->n == r->cap) {
		uint32_t cap = r->cap ? 2 * r->cap : 8;
		uint32_t *v = prism_realloc(r->v, cap * sizeof(*v));
		if (!v)
			return PRISM_ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = u;
	return 0;
}

static void remove_running(struct sim *s, struct sim_running *r, uint32_t u)
{
	uint32_t i;
	for (i = 0; i < r->n && r->v[i] != u; i++)
		;
	if (i == r->n)
		return;
	set_rkind(s, r, u, SIM_PIECE_IDLE);
	r->v[i] = r->v[--r->n];
}

/* ---- folded tasks (sim.h) ----------------------------------------------- */

void sim_fold_pieces(struct sim_piece *pieces, uint32_t first, uint32_t n)
{
	int64_t rest = 0, reach = INT64_MIN, busy = 0;
	for (uint32_t i = n; i-- > 0;) {
		struct sim_piece *q = &pieces[first + i];
		rest = prism_time_add(rest, prism_time_add(q->lag_ns, q->dur_ns));
		busy = prism_time_add(busy, q->dur_ns);
		if (prism_time_add(q->rel_ns, rest) > reach)
			reach = prism_time_add(q->rel_ns, rest);
		q->rest_ns = rest;
		q->reach_ns = reach;
		q->busy_ns = busy;
	}
}

static const struct sim_piece *fpiece(const struct sim_opts *o, uint32_t f, uint32_t k)
{
	return &o->fold->pieces[o->fold->tasks[f].first + k];
}

static uint32_t fcount(const struct sim_opts *o, uint32_t f)
{
	return o->fold->tasks[f].n;
}

/* Where f's launches are offset from: its unit's host start. */
static int64_t fhost(const struct sim *s, const struct sim_opts *o, uint32_t f)
{
	return s->start_ns[o->fold->tasks[f].host];
}

/* The end of f's pieces from k on, the one before having ended at p, at
 * full speed: each starts at the later of the previous end and its launch,
 * plus its lag. */
static int64_t fold_end_from(const struct sim *s, const struct sim_opts *o, uint32_t f, uint32_t k,
			     int64_t p)
{
	const struct sim_piece *q;
	int64_t a, b;
	if (k >= fcount(o, f))
		return p;
	q = fpiece(o, f, k);
	a = prism_time_add(p, q->rest_ns);
	b = prism_time_add(fhost(s, o, f), q->reach_ns);
	return a > b ? a : b;
}

/* The start of f's piece k after the one before ended at p. */
static int64_t fold_start(const struct sim *s, const struct sim_opts *o, uint32_t f, uint32_t k,
			  int64_t p)
{
	const struct sim_piece *q = fpiece(o, f, k);
	int64_t at = prism_time_add(fhost(s, o, f), q->rel_ns);
	return prism_time_add(p > at ? p : at, q->lag_ns);
}

static int fold_log(struct sim *s, uint32_t f, uint32_t k, int64_t a, int64_t b)
{
	struct sim_piece_time x = {f, k, a, b};
	return VEC_PUSH(s->plog, x);
}

static int is_pair(const struct sim *s, const struct sim_opts *o, uint32_t u)
{
	return s->fold_of && s->fold_of[u] != NONE32 && o->fold->tasks[s->fold_of[u]].n2 > 0;
}

static const struct sim_piece *lpiece(const struct sim_opts *o, uint32_t f, int l, uint32_t k)
{
	const struct sim_folded *t = &o->fold->tasks[f];
	return &o->fold->pieces[(l ? t->first2 : t->first) + k];
}

static uint32_t lcount(const struct sim_opts *o, uint32_t f, int l)
{
	return l ? o->fold->tasks[f].n2 : o->fold->tasks[f].n;
}

/* Where lane l of pair f keeps its pieces' ends. */
static int64_t *lend(const struct sim *s, const struct sim_opts *o, uint32_t f, int l)
{
	return s->xend + s->xoff[f] + (l ? o->fold->tasks[f].n : 0);
}

/* What a lane runs as now. */
static uint8_t lkind(const struct sim_lane *L)
{
	return L->mode == SIM_L_RUN ? L->kind : SIM_PIECE_IDLE;
}

/* The rate of lane L with the other lane M beside it, nothing else on
 * their GPU (rate_of's rule). */
static double lrate_alone(const struct sim *s, const struct sim_lane *L, const struct sim_lane *M)
{
	if (L->kind == SIM_PIECE_COMPUTE)
		return lkind(M) == SIM_PIECE_COMM ? s->rate_comp : 1.0;
	if (L->kind == SIM_PIECE_COMM)
		return lkind(M) == SIM_PIECE_COMPUTE ? s->rate_comm : 1.0;
	return 1.0;
}

/* The rate of lane L on rank r (its lanes counted in r's kinds). */
static double lrate(const struct sim *s, const struct sim_running *r, const struct sim_lane *L)
{
	if (L->kind == SIM_PIECE_COMPUTE)
		return r->n_comm > 0 ? s->rate_comp : 1.0;
	if (L->kind == SIM_PIECE_COMM)
		return r->n_comp > 0 ? s->rate_comm : 1.0;
	return 1.0;
}

/* The lanes P counted in (sign 1) or out of (-1) rank r's kinds. */
static void lanes_count(struct sim_running *r, const struct sim_lane *P, int sign)
{
	for (int l = 0; l < 2; l++) {
		r->n_comp += (uint32_t)(sign * (lkind(&P[l]) == SIM_PIECE_COMPUTE));
		r->n_comm += (uint32_t)(sign * (lkind(&P[l]) == SIM_PIECE_COMM));
	}
}

/* Lane l's piece k ran from a to b (its times kept, the main lane's busy
 * time counted); the lane moves past it. */
static int lane_end(struct sim *s, const struct sim_opts *o, uint32_t f, struct sim_lane *P, int l,
		    int64_t a, int64_t b)
{
	struct sim_lane *L = &P[l];
	size_t at = s->xoff[f] + (l ? o->fold->tasks[f].n : 0) + L->k;
	if (!l)
		s->fold_busy[f] += b - a;
	s->xstart[at] = a;
	s->xend[at] = b;
	L->prev = b;
	L->k++;
	return 0;
}

/* Lane l of pair f (lanes P) takes its next piece at t, the one before
 * having ended at P[l].prev <= t: it waits for its start (the later of
 * that end, its launch and the other lane's piece it waits for, plus its
 * lag), or blocks on that piece, or runs; pieces of no length end as they
 * start.  0 or PRISM_ENOMEM. */
static int lane_next(struct sim *s, const struct sim_opts *o, uint32_t f, struct sim_lane *P, int l,
		     int64_t t)
{
	struct sim_lane *L = &P[l], *M = &P[1 - l];
	int64_t host = fhost(s, o, f);
	while (L->k < lcount(o, f, l)) {
		const struct sim_piece *q = lpiece(o, f, l, L->k);
		int64_t at = prism_time_add(host, q->rel_ns), c = L->prev > at ? L->prev : at;
		int held = at > L->prev;
		if (q->xw != SIM_NO_XW) {
			int64_t x;
			if (M->k <= q->xw) {
				L->mode = SIM_L_BLOCK;
				return 0;
			}
			x = lend(s, o, f, 1 - l)[q->xw];
			held = held && at > x;
			c = x > c ? x : c;
		}
		P[0].held |= (uint8_t)held;
		c = prism_time_add(c, q->lag_ns);
		L->at = c;
		if (c > t) {
			L->mode = SIM_L_WAIT;
			L->pred = c;
			return 0;
		}
		if (q->dur_ns > 0) {
			L->mode = SIM_L_RUN;
			L->kind = q->kind;
			L->rem = (double)q->dur_ns;
			return 0;
		}
		if (lane_end(s, o, f, P, l, c, c))
			return PRISM_ENOMEM;
	}
	L->mode = SIM_L_DONE;
	return 0;
}

/* A lane blocked on a piece of the other that has ended moves on at t
 * (and so on, while one frees the other). */
static int lanes_wake(struct sim *s, const struct sim_opts *o, uint32_t f, struct sim_lane *P,
		      int64_t t)
{
	for (int moved = 1; moved;) {
		moved = 0;
		for (int l = 0; l < 2; l++)
			if (P[l].mode == SIM_L_BLOCK && P[1 - l].k > lpiece(o, f, l, P[l].k)->xw) {
				if (lane_next(s, o, f, P, l, t))
					return PRISM_ENOMEM;
				moved = 1;
			}
	}
	return 0;
}

/* Lane l's event at t: its piece starts, or ends (and what follows). */
static int lane_event(struct sim *s, const struct sim_opts *o, uint32_t f, struct sim_lane *P,
		      int l, int64_t t)
{
	struct sim_lane *L = &P[l];
	const struct sim_piece *q = lpiece(o, f, l, L->k);
	if (L->mode == SIM_L_WAIT && q->dur_ns > 0) {
		L->mode = SIM_L_RUN;
		L->kind = q->kind;
		L->rem = (double)q->dur_ns;
		return 0;
	}
	if (lane_end(s, o, f, P, l, L->at, t) || lane_next(s, o, f, P, l, t))
		return PRISM_ENOMEM;
	return lanes_wake(s, o, f, P, t);
}

/* Pair f's lanes P from their start at t. */
static int lanes_start(struct sim *s, const struct sim_opts *o, uint32_t f, struct sim_lane *P,
		       int64_t t)
{
	memset(P, 0, 2 * sizeof(*P));
	P[0].prev = P[1].prev = t;
	P[0].pushed = P[1].pushed = INT64_MIN;
	if (lane_next(s, o, f, P, 0, t) || lane_next(s, o, f, P, 1, t))
		return PRISM_ENOMEM;
	return lanes_wake(s, o, f, P, t);
}

/* The running lanes' ends at t, at the rates they have beside each other
 * alone (retime's arithmetic). */
static void lanes_retime_alone(const struct sim *s, struct sim_lane *P, int64_t t)
{
	double rt[2] = {lrate_alone(s, &P[0], &P[1]), lrate_alone(s, &P[1], &P[0])};
	for (int l = 0; l < 2; l++) {
		double left;
		if (P[l].mode != SIM_L_RUN)
			continue;
		left = P[l].rem / rt[l];
		P[l].pred =
		    left > (double)PRISM_TIME_MAX ? PRISM_TIME_MAX + 1 : t + prism_llround(left);
	}
}

/*
 * A pair's repeated steps (the ring's middle steps: each lane's pieces
 * the same as the step before's) are taken at once.  The loop's
 * arithmetic is shift-invariant -- advance subtracts (t - since) x rate,
 * retime rounds rem / rate and adds t, a piece starts at the later of
 * times plus a lag -- so from two instants where the main lane has just
 * started a piece and both lanes stand alike (lane_mark: their states,
 * work left and the ends of the other lane's last pieces, relative to
 * the instant), the pair runs the same again, shifted, for as long as the
 * pieces ahead repeat those of the period between (durations, lags,
 * kinds, waits on the other lane's pieces as far back), no launch held
 * a piece (each launched by the earlier instant) and no lane ends.
 * lanes_period counts those periods; lanes_jump takes them: each piece's
 * times the period before's plus its length.
 */
#define LANE_SIG 14

struct lane_mark {
	int64_t t, busy;
	uint32_t k[2];
	int64_t sig[LANE_SIG];
	double rem[2];
};

/* The end of lane l's piece k - back relative to t (INT64_MIN: none). */
static int64_t lane_back(const struct sim *s, const struct sim_opts *o, uint32_t f,
			 const struct sim_lane *P, int l, uint32_t back, int64_t t)
{
	return P[l].k >= back ? lend(s, o, f, l)[P[l].k - back] - t : INT64_MIN;
}

static void lane_mark_make(const struct sim *s, const struct sim_opts *o, uint32_t f,
			   const struct sim_lane *P, int64_t t, struct lane_mark *m)
{
	int i = 0;
	m->t = t;
	m->busy = s->fold_busy[f];
	for (int l = 0; l < 2; l++) {
		const struct sim_lane *L = &P[l];
		int timed = L->mode == SIM_L_WAIT || L->mode == SIM_L_RUN;
		m->k[l] = L->k;
		m->rem[l] = L->mode == SIM_L_RUN ? L->rem : 0;
		m->sig[i++] = L->mode;
		m->sig[i++] = L->mode == SIM_L_RUN ? L->kind : 0;
		m->sig[i++] = L->prev - t;
		m->sig[i++] = timed ? L->pred - t : 0;
		m->sig[i++] = timed ? L->at - t : 0;
		m->sig[i++] = lane_back(s, o, f, P, l, 1, t);
		m->sig[i++] = lane_back(s, o, f, P, l, 2, t);
	}
}

static int lane_mark_same(const struct lane_mark *a, const struct lane_mark *b)
{
	return memcmp(a->sig, b->sig, sizeof(a->sig)) == 0 && a->rem[0] == b->rem[0] &&
	       a->rem[1] == b->rem[1];
}

/* Piece x of lane l of pair f the same as piece x - d (its wait on the
 * other lane's pieces d_other further on), launched by latest (an offset
 * from its unit's host start). */
static int lane_repeats(const struct sim_opts *o, uint32_t f, int l, uint32_t x, uint32_t d,
			uint32_t d_other, int64_t latest)
{
	const struct sim_piece *p = lpiece(o, f, l, x), *q = lpiece(o, f, l, x - d);
	if (p->rel_ns > latest || p->dur_ns != q->dur_ns || p->lag_ns != q->lag_ns ||
	    p->kind != q->kind)
		return 0;
	if (p->xw == SIM_NO_XW || q->xw == SIM_NO_XW)
		return p->xw == q->xw;
	return p->xw - q->xw == d_other;
}

/* The periods past now that repeat the one from h.  0: none. */
static uint32_t lanes_period(const struct sim *s, const struct sim_opts *o, uint32_t f,
			     const struct lane_mark *h, const struct lane_mark *now)
{
	uint32_t d[2] = {now->k[0] - h->k[0], now->k[1] - h->k[1]}, n = UINT32_MAX;
	int64_t latest = h->t - fhost(s, o, f); /* launches up to the earlier instant */
	if (!d[0] || !d[1] || now->t <= h->t)
		return 0;
	for (int l = 0; l < 2; l++) {
		uint32_t x, cnt = lcount(o, f, l), floor = h->k[1 - l] >= 2 ? h->k[1 - l] - 2 : 0;
		/* The period between: launched by then, its waits on the
		 * other lane no further back than its marked ends. */
		for (x = h->k[l]; x <= now->k[l] && x < cnt; x++) {
			const struct sim_piece *p = lpiece(o, f, l, x);
			if (p->rel_ns > latest || (p->xw != SIM_NO_XW && p->xw < floor))
				return 0;
		}
		/* Ahead: the pieces repeating it; each period takes d[l]
		 * pieces and stands at the next one's start. */
		for (x = now->k[l]; x < cnt && lane_repeats(o, f, l, x, d[l], d[1 - l], latest);
		     x++)
			;
		if (x == now->k[l])
			return 0;
		if ((x - 1 - now->k[l]) / d[l] < n)
			n = (x - 1 - now->k[l]) / d[l];
	}
	return n;
}

/* Take n periods of length dt from instant t (lanes P, mark now, the
 * period's busy time busy): each piece ended in them at the times of the
 * piece a period before, plus dt. */
static void lanes_jump(struct sim *s, const struct sim_opts *o, uint32_t f, struct sim_lane *P,
		       const struct lane_mark *h, const struct lane_mark *now, uint32_t n,
		       int64_t *since)
{
	int64_t dt = now->t - h->t, sh = (int64_t)n * dt;
	for (int l = 0; l < 2; l++) {
		uint32_t d = now->k[l] - h->k[l];
		size_t base = s->xoff[f] + (l ? o->fold->tasks[f].n : 0);
		for (uint32_t x = now->k[l]; x < now->k[l] + n * d; x++) {
			s->xstart[base + x] = s->xstart[base + x - d] + dt;
			s->xend[base + x] = s->xend[base + x - d] + dt;
		}
		P[l].k += n * d;
		P[l].prev += sh;
		P[l].at += sh;
		P[l].pred += sh;
	}
	s->fold_busy[f] += (int64_t)n * (now->busy - h->busy);
	*since += sh;
}

/*
 * While the side lane waits on a main-lane piece w (or has ended), the
 * main lane runs alone at full speed, each piece at the later of its
 * previous end, its launch and the side lane's (ended) piece it waits
 * for, plus its lag, for its duration: the loop's events give it exactly
 * that (rem / 1 and integer times), so the pieces before w (every piece,
 * the side lane ended) are placed in one pass and the loop goes on at the
 * end of w's predecessor, w taken as the loop takes it.  *since: that
 * end.  1 when it moved, 0 when not (the piece under way is w).
 */
static int lane0_solo(struct sim *s, const struct sim_opts *o, uint32_t f, struct sim_lane *P,
		      int64_t *since)
{
	struct sim_lane *L = &P[0], *M = &P[1];
	uint32_t n = lcount(o, f, 0);
	uint32_t stop = M->mode == SIM_L_DONE ? n : lpiece(o, f, 1, M->k)->xw;
	int64_t host = fhost(s, o, f), t;
	if ((L->mode != SIM_L_RUN && L->mode != SIM_L_WAIT) || stop == SIM_NO_XW || L->k >= stop)
		return 0;
	/* The piece under way: running at full speed, or to start at at. */
	t = L->mode == SIM_L_RUN ? L->pred : prism_time_add(L->at, lpiece(o, f, 0, L->k)->dur_ns);
	if (lane_end(s, o, f, P, 0, L->at, t))
		return PRISM_ENOMEM;
	while (L->k < stop && L->k < n) {
		const struct sim_piece *q = lpiece(o, f, 0, L->k);
		int64_t at = prism_time_add(host, q->rel_ns), c = L->prev > at ? L->prev : at;
		int held = at > L->prev;
		if (q->xw != SIM_NO_XW) {
			int64_t x;
			if (M->k <= q->xw)
				break;
			x = lend(s, o, f, 1)[q->xw];
			held = held && at > x;
			c = x > c ? x : c;
		}
		P[0].held |= (uint8_t)held;
		c = prism_time_add(c, q->lag_ns);
		t = prism_time_add(c, q->dur_ns);
		if (lane_end(s, o, f, P, 0, c, t))
			return PRISM_ENOMEM;
	}
	*since = t;
	if (lane_next(s, o, f, P, 0, t) || lanes_wake(s, o, f, P, t))
		return PRISM_ENOMEM;
	lanes_retime_alone(s, P, t);
	return 1;
}

/*
 * Pair f's lanes P alone on their GPU from *since (their work left as of
 * then), through every event before until (until < 0: to the end), as the
 * sim would take them one by one: the running lanes' work advanced to
 * the event at the rates they had (advance), the lane's step, their ends
 * at the new rates (retime).  *end: when both lanes have ended (the later
 * one's last piece), else INT64_MIN.  Each piece's times are kept
 * (xstart, xend).
 */
static int lanes_alone(struct sim *s, const struct sim_opts *o, uint32_t f, struct sim_lane *P,
		       int64_t *since, int64_t until, int64_t *end)
{
	struct lane_mark mk[4];
	uint32_t nm = 0, last = UINT32_MAX;
	lanes_retime_alone(s, P, *since);
	for (;;) {
		int l = -1;
		int64_t t;
		double rt[2];
		if (until < 0 && (P[1].mode == SIM_L_BLOCK || P[1].mode == SIM_L_DONE) &&
		    lane0_solo(s, o, f, P, since) < 0)
			return PRISM_ENOMEM;
		for (int i = 0; i < 2; i++)
			if ((P[i].mode == SIM_L_WAIT || P[i].mode == SIM_L_RUN) &&
			    (l < 0 || P[i].pred < P[l].pred))
				l = i;
		if (l < 0)
			break;
		t = P[l].pred;
		if (until >= 0 && t >= until)
			break;
		rt[0] = lrate_alone(s, &P[0], &P[1]);
		rt[1] = lrate_alone(s, &P[1], &P[0]);
		for (int i = 0; i < 2; i++)
			if (P[i].mode == SIM_L_RUN) {
				P[i].rem -= (double)(t - *since) * rt[i];
				if (P[i].rem < 0)
					P[i].rem = 0;
			}
		*since = t;
		if (lane_event(s, o, f, P, l, t))
			return PRISM_ENOMEM;
		lanes_retime_alone(s, P, t);
		/* The main lane has just started a piece: a period? */
		if (until < 0 && P[0].mode == SIM_L_RUN && P[0].at == t && P[0].k != last &&
		    P[1].mode != SIM_L_DONE) {
			struct lane_mark *m = &mk[nm % 4];
			int jumped = 0;
			last = P[0].k;
			lane_mark_make(s, o, f, P, t, m);
			for (uint32_t b = 1; b <= 3 && b <= nm && !jumped; b++) {
				const struct lane_mark *h = &mk[(nm - b) % 4];
				uint32_t n;
				if (lane_mark_same(h, m) && (n = lanes_period(s, o, f, h, m)) > 0) {
					lanes_jump(s, o, f, P, h, m, n, since);
					last = P[0].k;
					jumped = 1;
				}
			}
			nm = jumped ? 0 : nm + 1; /* after a jump, marks anew */
		}
	}
	*end = P[0].mode == SIM_L_DONE && P[1].mode == SIM_L_DONE
		   ? (P[0].prev > P[1].prev ? P[0].prev : P[1].prev)
		   : INT64_MIN;
	return 0;
}

/* Pair u ends at t: whether a launch held it (as binding: the host, so
 * that settle counts it launch-bound). */
static void pair_final(struct sim *s, const struct sim_opts *o, uint32_t u, int64_t t)
{
	uint32_t f = s->fold_of[u];
	s->fst[f].mode = SIM_F_COLLAPSED;
	s->end_ns[u] = t;
	if (s->lane[4 * f].held)
		s->nd[u].binding = o->fold->tasks[f].host;
}

/*
 * Pair u's lanes from its start at t to its end with nothing beside them
 * (no contention, or alone on its GPU: the max-plus pass, the hybrid's
 * and sim_run's collapse at its start), their lanes started already
 * (started) or not.  Where every piece was launched by t (its launch
 * offsets all at most t less its host start), the run depends on t only
 * by a shift (each piece at the later of its lane's previous end and the
 * other lane's piece, plus its lag: lanes_alone's arithmetic on
 * differences), so a template's first such run is kept (s->memo) and
 * every later one is that run shifted: its pieces' times, its end and
 * busy time (its lanes then left as they started).  *end as lanes_alone's.
 */
static int pair_alone(struct sim *s, const struct sim_opts *o, uint32_t u, int64_t t, int started,
		      int64_t *end)
{
	uint32_t f = s->fold_of[u];
	const struct sim_folded *tk = &o->fold->tasks[f];
	struct sim_lane *P = &s->lane[4 * f];
	int64_t since = t, rel = t - fhost(s, o, f), reach = INT64_MIN, busy0 = s->fold_busy[f];
	uint32_t mi = s->memo_at[tk->first], np = tk->n + tk->n2;
	size_t at = s->xoff[f];
	if (mi != NONE32) {
		const struct sim_pair_memo *m = &s->memo.v[mi];
		if (m->first2 == tk->first2 && m->n == tk->n && m->n2 == tk->n2 &&
		    rel >= m->reach) {
			const int64_t *x = s->memo_t.v + m->off;
			for (uint32_t k = 0; k < np; k++) {
				s->xstart[at + k] = t + x[2 * k];
				s->xend[at + k] = t + x[2 * k + 1];
			}
			s->fold_busy[f] += m->busy;
			P[0].held = 0;
			*end = t + m->len;
			return 0;
		}
	}
	if ((!started && lanes_start(s, o, f, P, t)) || lanes_alone(s, o, f, P, &since, -1, end))
		return PRISM_ENOMEM;
	for (uint32_t k = 0; mi == NONE32 && *end >= 0 && k < np; k++) {
		const struct sim_piece *q =
		    k < tk->n ? lpiece(o, f, 0, k) : lpiece(o, f, 1, k - tk->n);
		reach = q->rel_ns > reach ? q->rel_ns : reach;
	}
	if (mi == NONE32 && *end >= 0 && rel >= reach) {
		struct sim_pair_memo m = {tk->first2, tk->n,	tk->n2,
					  reach,      *end - t, s->fold_busy[f] - busy0,
					  s->memo_t.n};
		if (VEC_RESERVE(s->memo_t, s->memo_t.n + 2 * (size_t)np) || VEC_PUSH(s->memo, m))
			return PRISM_ENOMEM;
		for (uint32_t k = 0; k < np; k++) {
			s->memo_t.v[s->memo_t.n++] = s->xstart[at + k] - t;
			s->memo_t.v[s->memo_t.n++] = s->xend[at + k] - t;
		}
		s->memo_at[tk->first] = (uint32_t)(s->memo.n - 1);
	}
	return 0;
}

/* Pair u from its start at t to its end with nothing beside it. */
static int pair_whole(struct sim *s, const struct sim_opts *o, uint32_t u, int64_t t)
{
	int64_t end;
	if (pair_alone(s, o, u, t, 0, &end))
		return PRISM_ENOMEM;
	pair_final(s, o, u, end < 0 ? PRISM_TIME_MAX + 1 : end);
	return 0;
}

/* Pair u (on rank r) alone on its GPU from t (at its start, its lanes
 * started: start): run to its end at once, its lanes as of t and its
 * busy time kept (lane[4 f + 2 ..], fst.at_ns, t0_ns) for pair_expand to
 * go back to, its finish event pushed.  From its start the run is
 * pair_whole's (pair_alone: a template's run shifted, where kept; under
 * Megatron-FSDP's reduce-scatter of each layer's gradients, GPT-3 175B at
 * tp 4, pp 16, dp 2, SP: 1,632 of 9,894 pairs start alone, the rest
 * beside one, docs/PERFORMANCE.md). */
static int pair_collapse(struct sim *s, const struct sim_opts *o, struct sim_running *r, uint32_t u,
			 int64_t t, int start)
{
	uint32_t f = s->fold_of[u];
	struct sim_lane *P = &s->lane[4 * f];
	int64_t since = t, end;
	if (s->fst[f].mode != SIM_F_COLLAPSED)
		lanes_count(r, P, -1);
	s->fst[f].mode = SIM_F_COLLAPSED;
	s->fst[f].at_ns = t;
	s->fst[f].t0_ns = s->fold_busy[f];
	P[0].pushed = P[1].pushed = INT64_MIN;
	memcpy(P + 2, P, 2 * sizeof(*P));
	if (start ? pair_alone(s, o, u, t, 1, &end) : lanes_alone(s, o, f, P, &since, -1, &end))
		return PRISM_ENOMEM;
	if (end < 0 || end > PRISM_TIME_MAX)
		end = PRISM_TIME_MAX + 1; /* release() refuses it */
	s->nd[u].pred_end = end;
	return evq_push(&s->q, end, u | SIM_FIN) ? PRISM_ENOMEM : 0;
}

/* Collapsed pair u (on rank r) followed event by event from t: what ran
 * before t ran alone (from its lanes as they were when it collapsed,
 * pair_collapse), its lanes' work advanced to t. */
static int pair_expand(struct sim *s, const struct sim_opts *o, struct sim_running *r, uint32_t u,
		       int64_t t)
{
	uint32_t f = s->fold_of[u];
	struct sim_lane *P = &s->lane[4 * f];
	int64_t since = s->fst[f].at_ns, end;
	double rt[2];
	memcpy(P, P + 2, 2 * sizeof(*P));
	s->fold_busy[f] = s->fst[f].t0_ns;
	if (lanes_alone(s, o, f, P, &since, t, &end))
		return PRISM_ENOMEM;
	rt[0] = lrate_alone(s, &P[0], &P[1]);
	rt[1] = lrate_alone(s, &P[1], &P[0]);
	for (int l = 0; l < 2; l++)
		if (P[l].mode == SIM_L_RUN) {
			P[l].rem -= (double)(t - since) * rt[l];
			if (P[l].rem < 0)
				P[l].rem = 0;
		}
	s->fst[f].mode = SIM_F_RUNNING;
	s->nd[u].pred_end = INT64_MIN;
	lanes_count(r, P, 1);
	return 0;
}

/* Whether a finish event of u (its side lane's: side) at t is due. */
static int fin_due(const struct sim *s, const struct sim_opts *o, uint32_t u, int side, int64_t t)
{
	const struct sim_lane *L;
	uint32_t f = s->fold_of ? s->fold_of[u] : NONE32;
	if (f == NONE32 || o->fold->tasks[f].n2 == 0 || s->fst[f].mode == SIM_F_COLLAPSED)
		return !side && s->nd[u].pred_end == t;
	L = &s->lane[4 * f + side];
	return (L->mode == SIM_L_WAIT || L->mode == SIM_L_RUN) && L->pushed == t;
}

/* Pair u's lanes' work on rank r advanced to t (advance's). */
static void pair_advance(struct sim *s, struct sim_running *r, uint32_t u, int64_t t)
{
	struct sim_lane *P = &s->lane[4 * s->fold_of[u]];
	double rt[2] = {lrate(s, r, &P[0]), lrate(s, r, &P[1])};
	for (int l = 0; l < 2; l++)
		if (P[l].mode == SIM_L_RUN) {
			P[l].rem -= (double)(t - r->since) * rt[l];
			if (P[l].rem < 0)
				P[l].rem = 0;
		}
}

/* Pair u's lanes' events at the current rates (retime's). */
static int pair_retime(struct sim *s, struct sim_running *r, uint32_t u, int64_t t)
{
	struct sim_lane *P = &s->lane[4 * s->fold_of[u]];
	for (int l = 0; l < 2; l++) {
		struct sim_lane *L = &P[l];
		if (L->mode == SIM_L_RUN) {
			double left = L->rem / lrate(s, r, L);
			L->pred = left > (double)PRISM_TIME_MAX ? PRISM_TIME_MAX + 1
								: t + prism_llround(left);
		} else if (L->mode != SIM_L_WAIT) {
			continue;
		}
		if (L->pred == L->pushed)
			continue;
		L->pushed = L->pred;
		if (evq_push(&s->q, L->pred, u | SIM_FIN | (l ? SIM_SIDE : 0)))
			return PRISM_ENOMEM;
	}
	return 0;
}

/* The end of collapsed f's piece k (CWAIT, CRUN: at full speed). */
static int64_t fold_piece_end(const struct sim_opts *o, uint32_t f, const struct sim_fstate *st)
{
	if (st->mode == SIM_F_CRUN)
		return st->t0_ns + prism_llround(st->rem0);
	return prism_time_add(st->at_ns, fpiece(o, f, st->k)->dur_ns);
}

/* Collapsed u's finish event: the end of its pieces at full speed. */
static int fold_push_end(struct sim *s, const struct sim_opts *o, struct sim_running *r, uint32_t u)
{
	uint32_t f = s->fold_of[u];
	struct sim_fstate *st = &s->fst[f];
	int64_t end = st->mode == SIM_F_COLLAPSED
			  ? fold_end_from(s, o, f, st->k, st->at_ns)
			  : fold_end_from(s, o, f, st->k + 1, fold_piece_end(o, f, st));
	set_rkind(s, r, u, SIM_PIECE_IDLE);
	if (end > PRISM_TIME_MAX)
		end = PRISM_TIME_MAX + 1; /* release() refuses it */
	s->nd[u].pred_end = end;
	return evq_push(&s->q, end, u | SIM_FIN) ? PRISM_ENOMEM : 0;
}

/* f's pieces run as one from piece k, the one before having ended at p. */
static int fold_collapse_at(struct sim *s, const struct sim_opts *o, struct sim_running *r,
			    uint32_t u, uint32_t k, int64_t p)
{
	struct sim_fstate *st = &s->fst[s->fold_of[u]];
	st->mode = SIM_F_COLLAPSED;
	st->k = k;
	st->at_ns = p;
	return fold_push_end(s, o, r, u);
}

/* Follow f's piece k from t, the one before having ended at p <= t:
 * waiting for its start or running it (rem and kind set; the caller
 * retimes).  Pieces of no length are passed over.  1 when the task has
 * no piece left (it ends at t). */
static int fold_enter(struct sim *s, const struct sim_opts *o, struct sim_running *r, uint32_t u,
		      uint32_t k, int64_t p, int64_t t)
{
	uint32_t f = s->fold_of[u];
	struct sim_fstate *st = &s->fst[f];
	for (; k < fcount(o, f); k++) {
		const struct sim_piece *q = fpiece(o, f, k);
		int64_t a = fold_start(s, o, f, k, p);
		st->k = k;
		st->at_ns = a;
		if (a > t) {
			st->mode = SIM_F_WAITING;
			set_rkind(s, r, u, SIM_PIECE_IDLE);
			s->rem[u] = (double)(a - t);
			s->nd[u].pred_end = INT64_MIN;
			return 0;
		}
		if (q->dur_ns > 0) {
			st->mode = SIM_F_RUNNING;
			set_rkind(s, r, u, q->kind);
			s->rem[u] = (double)q->dur_ns;
			s->nd[u].pred_end = INT64_MIN;
			return 0;
		}
		if (fold_log(s, f, k, a, a))
			return PRISM_ENOMEM;
		p = a;
	}
	return 1;
}

/* The rank's collapsed folded tasks, followed piece by piece from t
 * (something else starts running beside them): what ran before t ran at
 * full speed.  0 or PRISM_ENOMEM. */
static int fold_expand(struct sim *s, const struct sim_opts *o, struct sim_running *r, int64_t t)
{
	for (uint32_t i = 0; i < r->n; i++) {
		uint32_t u = r->v[i], f, k;
		struct sim_fstate *st;
		int64_t p;
		if (!collapsed(s, u))
			continue;
		if (is_pair(s, o, u)) {
			if (pair_expand(s, o, r, u, t))
				return PRISM_ENOMEM;
			continue;
		}
		f = s->fold_of[u];
		st = &s->fst[f];
		if (st->mode != SIM_F_COLLAPSED) {
			/* Piece k under way at full speed. */
			const struct sim_piece *q = fpiece(o, f, st->k);
			int64_t e = fold_piece_end(o, f, st);
			if (st->mode == SIM_F_CWAIT && st->at_ns > t) {
				st->mode = SIM_F_WAITING;
				s->rem[u] = (double)(st->at_ns - t);
				s->nd[u].pred_end = INT64_MIN;
				continue;
			}
			if (e > t) {
				s->rem[u] = st->mode == SIM_F_CRUN
						? st->rem0 - (double)(t - st->t0_ns)
						: (double)(e - t);
				st->mode = SIM_F_RUNNING;
				set_rkind(s, r, u, q->kind);
				s->nd[u].pred_end = INT64_MIN;
				continue;
			}
			if (st->mode == SIM_F_CRUN && fold_log(s, f, st->k, st->at_ns, e))
				return PRISM_ENOMEM;
			s->fold_busy[f] += e - st->at_ns;
			st->mode = SIM_F_COLLAPSED;
			st->k++;
			st->at_ns = e;
		}
		p = st->at_ns;
		for (k = st->k; k < fcount(o, f); k++) {
			const struct sim_piece *q = fpiece(o, f, k);
			int64_t a = fold_start(s, o, f, k, p), e = prism_time_add(a, q->dur_ns);
			if (e > t) {
				st->k = k;
				st->at_ns = a;
				st->mode = a > t ? SIM_F_WAITING : SIM_F_RUNNING;
				set_rkind(s, r, u, a > t ? SIM_PIECE_IDLE : q->kind);
				s->rem[u] = (double)(a > t ? a - t : e - t);
				s->nd[u].pred_end = INT64_MIN;
				break;
			}
			s->fold_busy[f] += q->dur_ns;
			p = e;
		}
		if (k == fcount(o, f)) { /* it ends at t: its finish event is due */
			st->k = k;
			st->at_ns = p;
		}
	}
	return 0;
}

/* The rank's followed folded tasks run as one again from t (nothing else
 * runs beside them), the piece under way at full speed. */
static int fold_collapse(struct sim *s, const struct sim_opts *o, struct sim_running *r, int64_t t)
{
	for (uint32_t i = 0; i < r->n; i++) {
		uint32_t u = r->v[i];
		struct sim_fstate *st;
		if (!s->fold_of || s->fold_of[u] == NONE32 || collapsed(s, u))
			continue;
		if (is_pair(s, o, u)) {
			if (pair_collapse(s, o, r, u, t, 0))
				return PRISM_ENOMEM;
			continue;
		}
		st = &s->fst[s->fold_of[u]];
		if (st->mode == SIM_F_WAITING) {
			st->mode = SIM_F_CWAIT;
		} else {
			st->mode = SIM_F_CRUN;
			st->t0_ns = t;
			st->rem0 = s->rem[u];
		}
		if (fold_push_end(s, o, r, u))
			return PRISM_ENOMEM;
	}
	return 0;
}

/* Whether anything runs on r beside a folded task (two folded tasks are
 * followed piece by piece too, though a synthesised rank has one compute
 * stream). */
static int others(const struct sim_running *r)
{
	return r->n > r->n_fold || r->n_fold > 1;
}

/* Folded task u ends at t: its busy time and whether a launch held it
 * (as binding: the host, so that settle counts it launch-bound).  0 or
 * PRISM_ENOMEM. */
static int fold_final(struct sim *s, const struct sim_opts *o, uint32_t u, int64_t t)
{
	uint32_t f = s->fold_of[u];
	struct sim_fstate *st = &s->fst[f];
	uint32_t k = st->k;
	if (st->mode == SIM_F_CWAIT || st->mode == SIM_F_CRUN) {
		int64_t e = fold_piece_end(o, f, st);
		if (st->mode == SIM_F_CRUN && fold_log(s, f, k, st->at_ns, e))
			return PRISM_ENOMEM;
		s->fold_busy[f] += e - st->at_ns;
		k++;
	}
	if (k < fcount(o, f))
		s->fold_busy[f] += fpiece(o, f, k)->busy_ns;
	st->mode = SIM_F_COLLAPSED;
	st->k = fcount(o, f);
	s->end_ns[u] = t;
	if (fcount(o, f) > 0 && t - s->start_ns[u] - s->fold_busy[f] >
				    fpiece(o, f, 0)->rest_ns - fpiece(o, f, 0)->busy_ns)
		s->nd[u].binding = o->fold->tasks[f].host;
	return 0;
}

/* Folded u starts at t under contention. */
static int fold_begin(struct sim *s, const struct sim_opts *o, uint32_t u, int64_t t)
{
	struct sim_running *r = rank_of(s, u);
	int rc;
	advance(s, o, r, t);
	if (add_running(r, u))
		return PRISM_ENOMEM;
	s->rkind[u] = SIM_PIECE_IDLE;
	r->n_fold++;
	if (is_pair(s, o, u)) {
		uint32_t f = s->fold_of[u];
		s->fst[f].mode = SIM_F_COLLAPSED;
		if (lanes_start(s, o, f, &s->lane[4 * f], t))
			return PRISM_ENOMEM;
		if (!others(r))
			return pair_collapse(s, o, r, u, t, 1);
		s->fst[f].mode = SIM_F_RUNNING;
		lanes_count(r, &s->lane[4 * f], 1);
		return retime(s, o, r, t);
	}
	if (!others(r))
		return fold_collapse_at(s, o, r, u, 0, t);
	if ((rc = fold_enter(s, o, r, u, 0, t, t)) < 0)
		return rc;
	if (rc == 1 && fold_collapse_at(s, o, r, u, fcount(o, s->fold_of[u]), t))
		return PRISM_ENOMEM; /* nothing to run: its finish event at t */
	return retime(s, o, r, t);
}

/* A finish event of pair u's lane side at t: 1 when u has ended (taken
 * off its rank), 0 when a lane moved on or the event is stale. */
static int pair_step(struct sim *s, const struct sim_opts *o, uint32_t u, int side, int64_t t)
{
	struct sim_running *r = rank_of(s, u);
	uint32_t f = s->fold_of[u];
	struct sim_lane *P = &s->lane[4 * f];
	if (s->end_ns[u] >= 0 || !fin_due(s, o, u, side, t))
		return 0;
	advance(s, o, r, t);
	if (s->fst[f].mode != SIM_F_COLLAPSED) {
		lanes_count(r, P, -1);
		if (lane_event(s, o, f, P, side, t))
			return PRISM_ENOMEM;
		lanes_count(r, P, 1);
		if (P[0].mode != SIM_L_DONE || P[1].mode != SIM_L_DONE)
			return retime(s, o, r, t) ? PRISM_ENOMEM : 0;
	} /* else it ran to its end when it collapsed */
	pair_final(s, o, u, t);
	remove_running(s, r, u);
	r->n_fold--;
	return retime(s, o, r, t) ? PRISM_ENOMEM : 1;
}

/* A finish event of folded u at t: 1 when u has ended (taken off its
 * rank), 0 when it moved to its next piece or the event is stale. */
static int fold_step(struct sim *s, const struct sim_opts *o, uint32_t u, int64_t t)
{
	struct sim_running *r = rank_of(s, u);
	uint32_t f = s->fold_of[u];
	struct sim_fstate *st = &s->fst[f];
	int rc;
	if (s->end_ns[u] >= 0 || s->nd[u].pred_end != t)
		return 0;
	advance(s, o, r, t);
	if (st->mode == SIM_F_WAITING) {
		/* Its piece starts (pieces of no length were passed over). */
		st->mode = SIM_F_RUNNING;
		st->at_ns = t;
		set_rkind(s, r, u, fpiece(o, f, st->k)->kind);
		s->rem[u] = (double)fpiece(o, f, st->k)->dur_ns;
		return retime(s, o, r, t) ? PRISM_ENOMEM : 0;
	}
	if (st->mode == SIM_F_RUNNING) {
		uint32_t k = st->k;
		if (fold_log(s, f, k, st->at_ns, t))
			return PRISM_ENOMEM;
		s->fold_busy[f] += t - st->at_ns;
		set_rkind(s, r, u, SIM_PIECE_IDLE);
		if (!others(r)) {
			if (fold_end_from(s, o, f, k + 1, t) > t)
				return fold_collapse_at(s, o, r, u, k + 1, t) ? PRISM_ENOMEM
									      : retime(s, o, r, t);
		} else if ((rc = fold_enter(s, o, r, u, k + 1, t, t)) <= 0) {
			return rc < 0 ? rc : retime(s, o, r, t) ? PRISM_ENOMEM : 0;
		}
		/* Nothing left to run (what is left takes no time). */
		st->mode = SIM_F_COLLAPSED;
		st->k = fcount(o, f);
	}
	/* Ends now. */
	if (fold_final(s, o, u, t))
		return PRISM_ENOMEM;
	remove_running(s, r, u);
	r->n_fold--;
	return retime(s, o, r, t) ? PRISM_ENOMEM : 1;
}

/* u starts at t on its rank's GPU, beside what runs there. */
static int begin(struct sim *s, const struct sim_opts *o, uint32_t u, int64_t t, int64_t dur,
		 int kind)
{
	struct sim_running *r = rank_of(s, u);
	advance(s, o, r, t);
	if (r->n_fold && !others(r) && fold_expand(s, o, r, t))
		return PRISM_ENOMEM;
	if (add_running(r, u))
		return PRISM_ENOMEM;
	s->rkind[u] = SIM_PIECE_IDLE;
	set_rkind(s, r, u, (uint8_t)kind);
	s->rem[u] = (double)dur;
	s->nd[u].pred_end = INT64_MIN;
	return retime(s, o, r, t);
}

/* A finish event of u (its side lane's: side) at t: 1 when it is u's end (and u is taken off its
 * rank), 0 when stale; PRISM_ENOMEM. */
static int finish(struct sim *s, const struct sim_opts *o, uint32_t u, int side, int64_t t)
{
	struct sim_running *r;
	uint32_t i, f = s->fold_of ? s->fold_of[u] : NONE32;
	if (f != NONE32)
		return o->fold->tasks[f].n2 > 0 ? pair_step(s, o, u, side, t)
						: fold_step(s, o, u, t);
	r = rank_of(s, u);
	if (s->end_ns[u] >= 0 || s->nd[u].pred_end != t)
		return 0;
	for (i = 0; i < r->n && r->v[i] != u; i++)
		;
	if (i == r->n)
		return 0;
	advance(s, o, r, t);
	remove_running(s, r, u);
	s->end_ns[u] = t;
	if (r->n_fold && !others(r) && fold_collapse(s, o, r, t))
		return PRISM_ENOMEM;
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
		if (s->nd[v].binding == NONE32 || t > s->nd[v].ready_ns) {
			s->nd[v].ready_ns = t;
			s->nd[v].binding = u;
		}
		if (--s->nd[v].indeg == 0) {
			int64_t at = arrival_ns(s, v);
			if (at > PRISM_TIME_MAX)
				return too_late(g, v, err);
			if (evq_push(&s->q, at, v))
				return prism_err_set(err, PRISM_ENOMEM,
						     "simulation: out of memory");
		}
	}
	return 0;
}

/* The folded tasks' state for a run of o->fold. */
static int fold_alloc(struct sim *s, const struct sim_fold *fo)
{
	const struct graph *g = s->g;
	if (!s->fold_of && !(s->fold_of = prism_malloc(s->cap_n * sizeof(*s->fold_of))))
		return PRISM_ENOMEM;
	if (fo->n_tasks > s->n_fold_cap) {
		struct sim_fstate *st = prism_realloc(s->fst, fo->n_tasks * sizeof(*st));
		int64_t *b;
		if (!st)
			return PRISM_ENOMEM;
		s->fst = st;
		if (!(b = prism_realloc(s->fold_busy, fo->n_tasks * sizeof(*b))))
			return PRISM_ENOMEM;
		s->fold_busy = b;
		free(s->lane);
		free(s->xoff);
		s->lane = prism_malloc(4 * fo->n_tasks * sizeof(*s->lane));
		s->xoff = prism_malloc(fo->n_tasks * sizeof(*s->xoff));
		if (!s->lane || !s->xoff) {
			s->n_fold_cap = 0;
			return PRISM_ENOMEM;
		}
		s->n_fold_cap = fo->n_tasks;
	}
	{
		size_t nx = 0, npc = 0; /* npc: the pairs' first pieces' bound */
		s->n_pairs = 0;
		for (uint32_t f = 0; f < fo->n_tasks; f++) {
			if (!fo->tasks[f].n2)
				continue;
			s->xoff[f] = (uint32_t)nx;
			nx += (size_t)fo->tasks[f].n + fo->tasks[f].n2;
			s->n_pairs++;
			if ((size_t)fo->tasks[f].first + 1 > npc)
				npc = (size_t)fo->tasks[f].first + 1;
		}
		if (npc > s->memo_cap) {
			free(s->memo_at);
			if (!(s->memo_at = prism_malloc(npc * sizeof(*s->memo_at)))) {
				s->memo_cap = 0;
				return PRISM_ENOMEM;
			}
			s->memo_cap = npc;
		}
		for (uint32_t f = 0; f < fo->n_tasks; f++)
			if (fo->tasks[f].n2)
				s->memo_at[fo->tasks[f].first] = NONE32;
		s->memo.n = s->memo_t.n = 0;
		if (nx > s->xend_cap) {
			free(s->xend);
			free(s->xstart);
			s->xend = prism_malloc(nx * sizeof(*s->xend));
			s->xstart = prism_malloc(nx * sizeof(*s->xstart));
			if (!s->xend || !s->xstart) {
				s->xend_cap = 0;
				return PRISM_ENOMEM;
			}
			s->xend_cap = nx;
		}
	}
	for (uint32_t u = 0; u < g->n_nodes; u++)
		s->fold_of[u] = NONE32;
	for (uint32_t f = 0; f < fo->n_tasks; f++) {
		s->fold_of[fo->tasks[f].node] = f;
		s->fold_busy[f] = 0;
	}
	s->plog.n = 0;
	return 0;
}

static int cmp_plog(const void *a, const void *b)
{
	const struct sim_piece_time *x = a, *y = b;
	if (x->task != y->task)
		return x->task < y->task ? -1 : 1;
	return x->piece < y->piece ? -1 : x->piece > y->piece;
}

/* plog by task, then piece, as qsort with cmp_plog orders it: a task's
 * pieces are logged one after another, so a stable counting sort by task
 * gives that order in two passes (qsort's comparisons were 4 % of the
 * default sweep); checked, and qsort where a task's pieces came out of
 * order.  0, or PRISM_ENOMEM. */
static int sort_plog(struct sim *s, uint32_t ntasks)
{
	struct sim_piece_time *v = s->plog.v, *t;
	size_t n = s->plog.n;
	uint32_t *at;

	if (VEC_RESERVE(s->ptmp, n) || VEC_RESERVE(s->pcount, (size_t)ntasks + 1))
		return PRISM_ENOMEM;
	t = s->ptmp.v;
	at = s->pcount.v;
	memset(at, 0, ((size_t)ntasks + 1) * sizeof(*at));
	for (size_t i = 0; i < n; i++) {
		if (v[i].task >= ntasks) {
			qsort(v, n, sizeof(*v), cmp_plog);
			return 0;
		}
		at[v[i].task + 1]++;
	}
	for (uint32_t f = 0; f < ntasks; f++)
		at[f + 1] += at[f];
	for (size_t i = 0; i < n; i++)
		t[at[v[i].task]++] = v[i];
	for (size_t i = 1; i < n; i++)
		if (t[i].task == t[i - 1].task && t[i].piece <= t[i - 1].piece) {
			qsort(v, n, sizeof(*v), cmp_plog);
			return 0;
		}
	memcpy(v, t, n * sizeof(*v));
	return 0;
}

/* A run's start: each task's count of the edges it waits on (those of
 * the kinds skip leaves out not counted), every collective instance
 * empty, nothing done. */
static void run_reset(struct sim *s, unsigned skip)
{
	const struct graph *g = s->g;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		s->nd[u].indeg = 0;
	for (uint32_t k = 0; k < g->n_edges; k++)
		if (!skipped(skip, g->out_kind[k]))
			s->nd[g->out_dst[k]].indeg++;
	for (uint32_t i = 0; i < s->n_inst; i++) {
		s->inst_arrived[i] = 0;
		s->inst_ready[i] = INT64_MIN;
		s->inst_last[i] = NONE32;
	}
	s->makespan_ns = 0;
	s->n_done = 0;
}

int sim_run(struct sim *s, const struct sim_opts *o, struct prism_err *err)
{
	const struct graph *g = s->g;
	struct evq_entry e;
	int rv = o->rendezvous, cont = o->slow_compute > 0 || o->slow_comm > 0;

	evq_reset(&s->q);
	run_reset(s, o->skip);
	sim_rates(s, o);
	if (cont) {
		if (contention_alloc(s))
			return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
		for (uint32_t r = 0; r < s->n_gpu_ranks; r++) {
			s->run[r].n = s->run[r].n_comm = s->run[r].n_comp = s->run[r].n_fold = 0;
			s->run[r].since = 0;
		}
	}
	if (o->fold) {
		if (fold_alloc(s, o->fold))
			return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
	} else if (s->fold_of) {
		free(s->fold_of);
		s->fold_of = NULL;
	}
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		s->nd[u].ready_ns = INT64_MIN;
		s->nd[u].binding = NONE32;
		s->start_ns[u] = s->end_ns[u] = -1;
		if (s->nd[u].indeg == 0) {
			/* A task nothing precedes starts when it did in the trace. */
			s->nd[u].ready_ns = g->start_ns[u];
			if (evq_push(&s->q, g->start_ns[u], u))
				return prism_err_set(err, PRISM_ENOMEM,
						     "simulation: out of memory");
		}
	}
	while (evq_pop(&s->q, &e) == 0) {
		uint32_t u = e.node, c;
		int kind, fin;

		if (u & SIM_FIN) {
			int side = (u & SIM_SIDE) != 0;
			u &= ~(SIM_FIN | SIM_SIDE);
			if ((fin = finish(s, o, u, side, e.time_ns)) < 0)
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
					s->nd[v].binding = s->inst_last[i];
				if (evq_push(&s->q, s->inst_ready[i], v))
					return prism_err_set(err, PRISM_ENOMEM,
							     "simulation: out of memory");
			}
			continue;
		}
		if (s->end_ns[u] >= 0)
			continue; /* stale */
		s->start_ns[u] = e.time_ns;
		if (s->fold_of && s->fold_of[u] != NONE32) {
			if (cont) {
				if (fold_begin(s, o, u, e.time_ns))
					return prism_err_set(err, PRISM_ENOMEM,
							     "simulation: out of memory");
				continue;
			}
			s->fst[s->fold_of[u]] =
			    (struct sim_fstate){e.time_ns, 0, 0, 0, SIM_F_COLLAPSED};
			if (is_pair(s, o, u)
				? pair_whole(s, o, u, e.time_ns)
				: fold_final(s, o, u,
					     fold_end_from(s, o, s->fold_of[u], 0, e.time_ns)))
				return prism_err_set(err, PRISM_ENOMEM,
						     "simulation: out of memory");
			if ((fin = release(s, o, u, err)))
				return fin;
			continue;
		}
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
	if (s->plog.n > 1 && sort_plog(s, o->fold ? o->fold->n_tasks : 0))
		return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
	if (s->n_done != g->n_nodes)
		return prism_err_set(err, PRISM_EINTERNAL,
				     "simulation: %" PRIu64 " of %" PRIu32
				     " tasks never started (collectives whose ranks wait on "
				     "each other: %" PRIu32 " instances disagree on the kind)",
				     (uint64_t)(g->n_nodes - s->n_done), g->n_nodes,
				     s->n_mismatched);
	return 0;
}

/* ---- the max-plus evaluation (sim.h, sim_run_maxplus) -------------------- */

/* The hybrid's last event on a rank (hy_after). */
struct hy_last {
	int64_t t;
	uint32_t u;
	int fin;
	int strict;  /* every event of the instant so far in the sim's order */
	int fold;    /* a folded task's among them */
	int64_t pt;  /* the last start's: when the release that pushed it was */
	uint32_t pb; /* and whose (mp_pb) */
};

/* Whether u is one of the tasks contention acts on: a folded task, or a
 * compute kernel or collective with one member present (contended()). */
static int mp_contended(const struct sim *s, const struct sim_opts *o, uint32_t u)
{
	return (s->fold_of && s->fold_of[u] != NONE32 && s->g->procs[s->g->proc[u]].gpu) ||
	       contended(s, o, u, o->rendezvous) != 0;
}

/* The number of ranks (graph_proc.rank + 1). */
/* s's scratch of at least bytes (its contents not kept), for one use at
 * a time: mp_streams' and mp_overlap's per-rank arrays, the hybrid's
 * last tasks.  NULL when out of memory. */
static void *mp_scratch(struct sim *s, size_t bytes)
{
	if (bytes > s->mp_scr_cap) {
		void *p = prism_malloc(bytes);
		if (!p)
			return NULL;
		free(s->mp_scr);
		s->mp_scr = p;
		s->mp_scr_cap = bytes;
	}
	return s->mp_scr;
}

static uint32_t mp_ranks(const struct graph *g)
{
	uint32_t ranks = 0;
	for (uint32_t p = 0; p < g->n_procs; p++)
		if (g->procs[p].rank + 1 > ranks)
			ranks = g->procs[p].rank + 1;
	return ranks;
}

/* Before the run: SIM_MP_STREAMS where a rank has contended tasks on two
 * streams or more (a data-parallel stream beside the compute stream:
 * contention may act, and the hybrid takes them through the queue),
 * SIM_MP_RUN otherwise (one stream's tasks never run at once),
 * PRISM_ENOMEM. */
static int mp_streams(struct sim *s, const struct sim_opts *o)
{
	const struct graph *g = s->g;
	uint32_t ranks = mp_ranks(g), *first = mp_scratch(s, (ranks ? ranks : 1) * sizeof(*first));
	int why = SIM_MP_RUN;

	if (!first)
		return PRISM_ENOMEM;
	for (uint32_t r = 0; r < ranks; r++)
		first[r] = NONE32;
	for (uint32_t p = 0; p < g->n_procs && why == SIM_MP_RUN; p++) {
		const struct graph_proc *pr = &g->procs[p];
		for (uint32_t u = pr->first; pr->gpu && u < pr->first + pr->n; u++) {
			if (!mp_contended(s, o, u))
				continue;
			if (first[pr->rank] == NONE32) {
				first[pr->rank] = p;
			} else if (first[pr->rank] != p) {
				why = SIM_MP_STREAMS;
				break;
			}
		}
	}
	return why;
}

/* After the run: whether two contended tasks of a rank ran at once, or one
 * started on another stream the instant the other ended without waiting
 * for it (the event queue's push order would decide which the sim saw
 * first).  A rank's streams merged by start; each task must start after
 * the latest end so far, or at it when it waits for that task (an edge,
 * or the same stream's order).  1: they did (or a stream's tasks are out
 * of order); 0: no contention acted; PRISM_ENOMEM. */
static int mp_overlap(struct sim *s, const struct sim_opts *o)
{
	const struct graph *g = s->g;
	uint32_t ranks = mp_ranks(g), *pk, *cur, npk;
	int hit = 0;

	pk = mp_scratch(s, (g->n_procs ? g->n_procs : 1) * 2 * sizeof(*pk));
	if (!pk)
		return PRISM_ENOMEM;
	cur = pk + g->n_procs;
	for (uint32_t r = 0; r < ranks && !hit; r++) {
		uint32_t last = NONE32;
		int64_t maxend = INT64_MIN;
		npk = 0;
		for (uint32_t p = 0; p < g->n_procs; p++)
			if (g->procs[p].gpu && g->procs[p].rank == r) {
				pk[npk] = p;
				cur[npk++] = g->procs[p].first;
			}
		for (;;) {
			uint32_t best = NONE32, b;
			for (uint32_t k = 0; k < npk; k++) {
				const struct graph_proc *pr = &g->procs[pk[k]];
				while (cur[k] < pr->first + pr->n && !mp_contended(s, o, cur[k]))
					cur[k]++;
				if (cur[k] < pr->first + pr->n &&
				    (best == NONE32 ||
				     s->start_ns[cur[k]] < s->start_ns[cur[best]]))
					best = k;
			}
			if (best == NONE32)
				break;
			b = cur[best]++;
			if (last != NONE32 && s->start_ns[b] <= maxend) {
				int waits = s->start_ns[b] == maxend && g->proc[b] == g->proc[last];
				for (uint32_t k = g->out_off[last];
				     !waits && s->start_ns[b] == maxend && k < g->out_off[last + 1];
				     k++)
					waits = g->out_dst[k] == b;
				if (!waits) {
					hit = 1;
					break;
				}
			}
			if (last == NONE32 || s->end_ns[b] >= maxend) {
				maxend = s->end_ns[b];
				last = b;
			}
		}
	}
	return hit;
}

/*
 * The hybrid's windows: which contended tasks can go straight through,
 * running alone on their rank.  On each rank the stream with the most
 * contended tasks is its main one (the compute stream); the contended
 * tasks of its other streams (data-parallel reductions) always go
 * through the queue.  Each of those waits on a last task of the main
 * stream that its edges show (mp_a: an edge from it, or from one before
 * it on its own stream; NONE32: none), and starts after it ends.  A
 * main-stream task u starting at t then runs alone where, on every other
 * stream of its rank, each contended task either ended before t or waits
 * on a main-stream task after u (so starts after u ends): the tasks
 * before it ended (mp_cur: the first that has not, or ended at t or
 * later), and the first of the rest waits past u (a stream's waits come
 * in its order).  A main stream's tasks come to be checked in its order,
 * at times that never go back (its edges; a task released comes no
 * earlier than the last event popped), so a stream's tasks passed over
 * stay passed (a rank with a stream whose order is not its edges, which
 * a hand-made graph can have, gets no windows; a check at an earlier
 * time than the rank's last queues the task all the same).
 */
/* Whether each task of stream p waits on the one before it (an edge
 * that releases at its end): the stream's order is its edges. */
static int mp_chained(const struct graph *g, uint32_t p)
{
	const struct graph_proc *pr = &g->procs[p];
	for (uint32_t u = pr->first + 1; u < pr->first + pr->n; u++) {
		uint32_t k = g->out_off[u - 1];
		while (k < g->out_off[u] &&
		       (g->out_dst[k] != u || GE_KIND(g->out_kind[k]) == GE_LAUNCH))
			k++;
		if (k == g->out_off[u])
			return 0;
	}
	return 1;
}

static int mp_windows_init(struct sim *s, const struct sim_opts *o)
{
	const struct graph *g = s->g;
	uint32_t ranks = s->n_gpu_ranks, *cnt;
	size_t nr = ranks ? ranks : 1, cr = s->cap_r ? s->cap_r : 1;

	/* Sized by the graph and its ranks (contention_alloc's, once): made
	 * on the first run, kept for the next. */
	if (!s->mp_q)
		s->mp_q = prism_malloc(s->cap_n);
	if (!s->mp_a)
		s->mp_a = prism_malloc(s->cap_n * sizeof(*s->mp_a));
	if (!s->mp_t)
		s->mp_t = prism_malloc(cr * sizeof(*s->mp_t));
	if (!s->mp_main)
		s->mp_main = prism_malloc(cr * sizeof(*s->mp_main));
	if (!s->mp_cur)
		s->mp_cur = prism_malloc(s->cap_p * sizeof(*s->mp_cur));
	if (!s->mp_other)
		s->mp_other = prism_malloc((cr + 1 + s->cap_p) * sizeof(*s->mp_other));
	if (!s->mp_cnt)
		s->mp_cnt = prism_malloc(cr * sizeof(*s->mp_cnt));
	if (!s->mp_q || !s->mp_a || !s->mp_t || !s->mp_main || !s->mp_cur || !s->mp_other ||
	    !s->mp_cnt)
		return PRISM_ENOMEM;
	cnt = s->mp_cnt;
	memset(cnt, 0, nr * sizeof(*cnt));
	memset(s->mp_q, 0, g->n_nodes);
	for (uint32_t r = 0; r < ranks; r++) {
		s->mp_main[r] = NONE32;
		s->mp_t[r] = INT64_MIN;
	}
	/* Each rank's main stream: the most contended tasks. */
	for (uint32_t p = 0; p < g->n_procs; p++) {
		const struct graph_proc *pr = &g->procs[p];
		uint32_t c = 0;
		s->mp_cur[p] = pr->first;
		if (!pr->gpu)
			continue;
		s->mp_cur[p] = pr->first + pr->n; /* its first contended task, or none */
		for (uint32_t u = pr->first + pr->n; u-- > pr->first;)
			if ((s->mp_q[u] = (uint8_t)mp_contended(s, o, u)) != 0) {
				s->mp_cur[p] = u;
				c++;
			}
		if (c > cnt[pr->rank]) {
			s->mp_main[pr->rank] = p;
			cnt[pr->rank] = c;
		}
	}
	/* The argument above stands on each stream's order being its edges
	 * (a synthesised graph's are): a rank with a stream of contended
	 * tasks that is not queues them all. */
	for (uint32_t p = 0; p < g->n_procs; p++) {
		const struct graph_proc *pr = &g->procs[p];
		uint32_t c = 0;
		if (!pr->gpu || s->mp_main[pr->rank] == NONE32)
			continue;
		for (uint32_t u = pr->first; u < pr->first + pr->n && !c; u++)
			c = s->mp_q[u];
		if (c && !mp_chained(g, p))
			s->mp_main[pr->rank] = NONE32;
	}
	/* Each rank's other streams with contended tasks: mp_other[r] ..
	 * mp_other[r + 1] index them in mp_other[ranks + 1 ..].  A stream
	 * without one (the pipeline's transfers) never keeps a task from
	 * running alone, so mp_alone does not visit it. */
	memset(cnt, 0, nr * sizeof(*cnt));
	for (uint32_t p = 0; p < g->n_procs; p++) {
		const struct graph_proc *pr = &g->procs[p];
		if (pr->gpu && s->mp_main[pr->rank] != NONE32 && s->mp_main[pr->rank] != p &&
		    s->mp_cur[p] < pr->first + pr->n)
			cnt[pr->rank]++;
	}
	s->mp_other[0] = ranks + 1;
	for (uint32_t r = 0; r < ranks; r++)
		s->mp_other[r + 1] = s->mp_other[r] + cnt[r];
	memset(cnt, 0, nr * sizeof(*cnt));
	for (uint32_t p = 0; p < g->n_procs; p++) {
		const struct graph_proc *pr = &g->procs[p];
		if (pr->gpu && s->mp_main[pr->rank] != NONE32 && s->mp_main[pr->rank] != p &&
		    s->mp_cur[p] < pr->first + pr->n)
			s->mp_other[s->mp_other[pr->rank] + cnt[pr->rank]++] = p;
	}
	for (uint32_t u = 0; u < g->n_nodes; u++)
		s->mp_a[u] = NONE32;
	/* The edges from a rank's main stream to its others. */
	for (uint32_t r = 0; r < ranks; r++) {
		const struct graph_proc *m;
		if (s->mp_main[r] == NONE32)
			continue;
		m = &g->procs[s->mp_main[r]];
		for (uint32_t u = m->first; u < m->first + m->n; u++)
			for (uint32_t k = g->out_off[u]; k < g->out_off[u + 1]; k++) {
				uint32_t v = g->out_dst[k];
				const struct graph_proc *pv = &g->procs[g->proc[v]];
				if (GE_KIND(g->out_kind[k]) != GE_LAUNCH && pv->gpu &&
				    pv->rank == r && g->proc[v] != s->mp_main[r] &&
				    (s->mp_a[v] == NONE32 || u > s->mp_a[v]))
					s->mp_a[v] = u;
			}
	}
	/* Along each other stream: what the task before waited on, this one
	 * does too. */
	for (uint32_t p = 0; p < g->n_procs; p++) {
		const struct graph_proc *pr = &g->procs[p];
		if (!pr->gpu || s->mp_main[pr->rank] == NONE32 || s->mp_main[pr->rank] == p)
			continue;
		for (uint32_t u = pr->first + 1; u < pr->first + pr->n; u++)
			if (s->mp_a[u - 1] != NONE32 &&
			    (s->mp_a[u] == NONE32 || s->mp_a[u - 1] > s->mp_a[u]))
				s->mp_a[u] = s->mp_a[u - 1];
	}
	return 0;
}

/* Whether contended task u, starting at t, runs alone on its rank (above):
 * 1 takes it straight through (mp_q[u] set to 2, counted in mp_direct). */
static int mp_alone(struct sim *s, uint32_t u, int64_t t)
{
	const struct graph *g = s->g;
	uint32_t r = g->procs[g->proc[u]].rank;

	if (s->mp_main[r] != g->proc[u] || t < s->mp_t[r])
		return 0;
	s->mp_t[r] = t;
	for (uint32_t i = s->mp_other[r]; i < s->mp_other[r + 1]; i++) {
		const struct graph_proc *pr = &g->procs[s->mp_other[i]];
		uint32_t *c = &s->mp_cur[s->mp_other[i]], end = pr->first + pr->n;
		while (*c < end && (!s->mp_q[*c] || (s->end_ns[*c] >= 0 && s->end_ns[*c] < t)))
			(*c)++;
		if (*c < end && (s->mp_a[*c] == NONE32 || s->mp_a[*c] <= u))
			return 0;
	}
	s->mp_q[u] = 2;
	s->mp_direct++;
	return 1;
}

/* When the sim releases u (its times set): at its start, or at its end
 * where it ran as a contended task (a finish event). */
static int64_t mp_rel(const struct sim *s, const struct sim_opts *o, int cont, uint32_t u)
{
	/* In the hybrid (mp_pb kept), mp_q holds mp_contended's answer for
	 * every task (0 off the GPU, where it is 0 too). */
	if (cont && s->mp_hybrid)
		return s->mp_q[u] ? s->end_ns[u] : s->start_ns[u];
	return cont && mp_contended(s, o, u) ? s->end_ns[u] : s->start_ns[u];
}

/* u has its times: release what waits for it (a task whose last
 * dependency this is onto the worklist, its arrival in its start_ns).
 * In the hybrid, mp_pb and pred_end (unused until a task starts) keep
 * which release pushed each task in the sim, and when.  0, or
 * SIM_MP_TIE / SIM_MP_STUCK (declined). */
static int mp_release(struct sim *s, const struct sim_opts *o, int cont, uint32_t u, uint32_t *work,
		      uint32_t *nw)
{
	const struct graph *g = s->g;
	int64_t rel = mp_rel(s, o, cont, u);
	if (s->end_ns[u] > PRISM_TIME_MAX)
		return SIM_MP_STUCK;
	if (s->end_ns[u] > s->makespan_ns)
		s->makespan_ns = s->end_ns[u];
	s->n_done++;
	for (uint32_t k = g->out_off[u]; k < g->out_off[u + 1]; k++) {
		uint32_t v = g->out_dst[k], b = s->nd[v].binding;
		int64_t t = graph_edge_release(g->out_kind[k], s->start_ns[u], s->end_ns[u]);
		if (s->mp_hybrid && (s->nd[v].mp_pb == NONE32 - 1 || rel > s->nd[v].pred_end)) {
			s->nd[v].pred_end = rel;
			s->nd[v].mp_pb = u;
		} else if (s->mp_hybrid && rel == s->nd[v].pred_end && s->nd[v].mp_pb != u) {
			s->nd[v].mp_pb = NONE32; /* which pushed it: the queue's order */
		}
		if (b == NONE32 || t > s->nd[v].ready_ns) {
			s->nd[v].ready_ns = t;
			s->nd[v].binding = u;
		} else if (t == s->nd[v].ready_ns && b != u) {
			/* The sim binds the one released first. */
			int64_t rb = mp_rel(s, o, cont, b);
			if (rel == rb)
				return SIM_MP_TIE;
			if (rel < rb)
				s->nd[v].binding = u;
		}
		if (--s->nd[v].indeg == 0) {
			int64_t at = arrival_ns(s, v);
			if (at > PRISM_TIME_MAX)
				return SIM_MP_STUCK;
			s->start_ns[v] = at; /* its arrival, until it starts */
			work[(*nw)++] = v;
		}
	}
	return 0;
}

/* u starts at t (a collective's members together): its end and its
 * release.  0, SIM_MP_* or PRISM_ENOMEM. */
static int mp_start(struct sim *s, const struct sim_opts *o, uint32_t u, int64_t t, int cont,
		    uint32_t *work, uint32_t *nw)
{
	s->start_ns[u] = t;
	if (s->fold_of && s->fold_of[u] != NONE32) {
		uint32_t f = s->fold_of[u];
		if (s->end_ns[o->fold->tasks[f].host] < 0)
			return SIM_MP_STUCK; /* launched before its host task started */
		s->fst[f] = (struct sim_fstate){t, 0, 0, 0, SIM_F_COLLAPSED};
		if (is_pair(s, o, u) ? pair_whole(s, o, u, t)
				     : fold_final(s, o, u, fold_end_from(s, o, f, 0, t)))
			return PRISM_ENOMEM;
	} else {
		s->end_ns[u] = t + dur_of(s, u, o->rendezvous);
	}
	return mp_release(s, o, cont, u, work, nw);
}

/* Where task u's edge from w is in w's edges (UINT32_MAX: none). */
static uint32_t hy_edge(const struct graph *g, uint32_t w, uint32_t u)
{
	for (uint32_t k = g->out_off[w]; k < g->out_off[w + 1]; k++)
		if (g->out_dst[k] == u)
			return k;
	return NONE32;
}

/* Whether sim_run pushed contended task p's start before u's, each
 * pushed by the release of task a (b) that the sim took at pa (pb): the
 * one taken earlier, or the same one releasing p first (its edges'
 * order; the first events in the nodes' order).  0 where the queue's
 * order is not known (two releases at one instant). */
static int hy_pushed_before(const struct graph *g, uint32_t p, uint32_t a, int64_t pa, uint32_t u,
			    uint32_t b, int64_t pb)
{
	if (a == NONE32 || b == NONE32)
		return 0;
	if (pa != pb)
		return pa < pb;
	if (a != b)
		return 0;
	if (a == NONE32 - 2)
		return p < u; /* first events, pushed in the nodes' order */
	return hy_edge(g, a, p) < hy_edge(g, a, u);
}

/* The hybrid (sim_run_maxplus with a rank's collectives on a stream of
 * their own): a contended task's event of kind fin (0 its start, 1 its
 * finish) at t on its rank, after the rank's last one.  The tasks around
 * it went straight through, so the queue's order among a rank's events
 * at one instant may differ from the sim's.  Where no folded task has an
 * event then, the order does not matter: no time passes between them,
 * and after them the rank runs the same tasks at the same rates (a tie
 * between the releases they make is refused by mp_release, two finishes
 * releasing one task; their successors' own order is checked here in
 * turn).  Where a folded task has one, each event must come in the sim's
 * order: the same task's; a start released by the task that just
 * finished (an edge from it); a start the sim pushed after the one
 * before (hy_pushed_before) -- every pair of that instant so.  1 when so
 * (or at another instant), 0 otherwise. */
static int hy_after(const struct sim *s, struct hy_last *l, uint32_t u, int fin, int64_t t)
{
	int folded = s->fold_of && s->fold_of[u] != NONE32, ok = 1, strict;
	if (l->u == NONE32 || t != l->t) {
		l->strict = 1;
		l->fold = folded;
	} else if (l->u != u) {
		strict = 0;
		if (!fin && l->fin)
			strict = hy_edge(s->g, l->u, u) != NONE32;
		else if (!fin && !l->fin)
			strict = hy_pushed_before(s->g, l->u, l->pb, l->pt, u, s->nd[u].mp_pb,
						  s->nd[u].pred_end);
		l->strict = l->strict && strict;
		ok = (!l->fold && !folded) || l->strict;
		l->fold |= folded;
	}
	l->t = t;
	l->u = u;
	l->fin = fin;
	if (!fin) { /* what pushed it, before its start overwrites pred_end */
		l->pt = s->nd[u].pred_end;
		l->pb = s->nd[u].mp_pb;
	}
	return ok;
}

/* The hybrid's queue: contended tasks' starts and finishes, as sim_run
 * takes them, until it is empty or the worklist has tasks again.
 * 0, SIM_MP_* (declined) or PRISM_ENOMEM. */
static int hy_events(struct sim *s, const struct sim_opts *o, struct hy_last *last, uint32_t *work,
		     uint32_t *nw)
{
	const struct graph *g = s->g;
	struct evq_entry e;
	int rc = 0;
	while (*nw == 0 && rc == 0 && evq_pop(&s->q, &e) == 0) {
		uint32_t u = e.node & ~(SIM_FIN | SIM_SIDE);
		int fin = (e.node & SIM_FIN) != 0, side = (e.node & SIM_SIDE) != 0;
		int64_t t = e.time_ns;
		if (s->end_ns[u] >= 0)
			continue; /* stale */
		if (fin) {	  /* fin_due, all but a pair's case inline */
			uint32_t f = s->fold_of ? s->fold_of[u] : NONE32;
			if (f == NONE32 || o->fold->tasks[f].n2 == 0
				? side || s->nd[u].pred_end != t
				: !fin_due(s, o, u, side, t))
				continue; /* stale */
		}
		if (!hy_after(s, &last[g->procs[g->proc[u]].rank], u, fin, t))
			return SIM_MP_SAMETIME;
		if (fin) {
			if ((rc = finish(s, o, u, side, t)) == 1)
				rc = mp_release(s, o, 1, u, work, nw);
			continue;
		}
		/* What ran beside it may have ended since it was queued. */
		if (mp_alone(s, u, t)) {
			rc = mp_start(s, o, u, t, 1, work, nw);
			continue;
		}
		s->start_ns[u] = t;
		if (s->fold_of && s->fold_of[u] != NONE32 &&
		    s->end_ns[o->fold->tasks[s->fold_of[u]].host] < 0)
			return SIM_MP_STUCK; /* launched before its host task started */
		if (s->fold_of && s->fold_of[u] != NONE32)
			rc = fold_begin(s, o, u, t);
		else
			rc = begin(s, o, u, t, dur_of(s, u, o->rendezvous),
				   contended(s, o, u, o->rendezvous));
	}
	return rc;
}

int sim_run_maxplus(struct sim *s, const struct sim_opts *o, struct prism_err *err)
{
	const struct graph *g = s->g;
	int rv = o->rendezvous, cont = o->slow_compute > 0 || o->slow_comm > 0, rc = 0;
	uint32_t *work, nw = 0;
	struct hy_last *last = NULL; /* the hybrid's, per rank; NULL: the plain pass */
	int hybrid;

	s->mp_why = SIM_MP_OPTS;
	if (o->skip || o->contention_added)
		return 0;
	sim_rates(s, o);
	if (o->fold) {
		if (fold_alloc(s, o->fold))
			return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
	} else if (s->fold_of) {
		free(s->fold_of);
		s->fold_of = NULL;
	}
	if (cont && (rc = mp_streams(s, o)) != SIM_MP_RUN) {
		/* Contention acts: its tasks through the queue, on their rank. */
		if (rc < 0 || contention_alloc(s) ||
		    !(last = mp_scratch(s, (s->n_gpu_ranks ? s->n_gpu_ranks : 1) * sizeof(*last))))
			return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
		for (uint32_t r = 0; r < s->n_gpu_ranks; r++) {
			s->run[r].n = s->run[r].n_comm = s->run[r].n_comp = s->run[r].n_fold = 0;
			s->run[r].since = 0;
			last[r] = (struct hy_last){0, NONE32, 0, 1, 0, 0, NONE32};
		}
		evq_reset(&s->q);
		s->mp_hybrid = 1;
		if (mp_windows_init(s, o)) {
			return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
		}
		rc = 0;
	} else {
		s->mp_hybrid = 0;
	}
	if (!s->mp_work && !(s->mp_work = prism_malloc(s->cap_n * sizeof(*s->mp_work)))) {
		return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
	}
	work = s->mp_work;
	run_reset(s, 0);
	s->mp_queued = 0;
	s->mp_direct = 0;
	/* The sim's first events, in the order it pops them at one time. */
	for (uint32_t u = g->n_nodes; u-- > 0;) {
		s->nd[u].ready_ns = INT64_MIN;
		s->nd[u].binding = NONE32;
		s->start_ns[u] = s->end_ns[u] = -1;
		if (s->mp_hybrid) {
			s->nd[u].pred_end = INT64_MIN;
			s->nd[u].mp_pb = s->nd[u].indeg == 0 ? NONE32 - 2 : NONE32 - 1;
		}
		if (s->nd[u].indeg == 0) {
			s->nd[u].ready_ns = g->start_ns[u];
			s->start_ns[u] = g->start_ns[u]; /* its arrival */
			work[nw++] = u;
		}
	}
	while (rc == 0 &&
	       (nw > 0 || (last && (rc = hy_events(s, o, last, work, &nw)) == 0 && nw > 0))) {
		uint32_t u = work[--nw], c = g->coll[u];
		int64_t at = s->start_ns[u];
		if (rv && c != NONE32 && s->inst_size[s->inst_of[c]] > 1) {
			uint32_t i = s->inst_of[c], lm;
			if (s->inst_last[i] != NONE32 && at == s->inst_ready[i]) {
				rc = SIM_MP_TIE; /* which arrived last: the queue's order */
				break;
			}
			if (s->inst_last[i] == NONE32 || at > s->inst_ready[i]) {
				s->inst_ready[i] = at;
				s->inst_last[i] = u;
			}
			s->start_ns[u] = -2;
			if (++s->inst_arrived[i] < s->inst_size[i])
				continue;
			lm = s->inst_last[i];
			for (uint32_t m = s->inst_first[i]; m < s->inst_first[i + 1] && rc == 0;
			     m++) {
				uint32_t v = g->colls[s->inst_members[m]].node;
				if (v != lm)
					s->nd[v].binding = lm;
				rc = mp_start(s, o, v, s->inst_ready[i], cont, work, &nw);
			}
			continue;
		}
		if (last && s->mp_q[u] == 1 && !mp_alone(s, u, at)) {
			if (evq_push(&s->q, at, u))
				rc = PRISM_ENOMEM;
			s->mp_queued++;
			continue;
		}
		rc = mp_start(s, o, u, at, cont, work, &nw);
	}
	hybrid = last != NULL;
	if (rc < 0)
		return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
	if (rc == 0 && s->n_done != g->n_nodes)
		rc = SIM_MP_STUCK;
	if (rc == 0 && hybrid && s->plog.n > 1 && sort_plog(s, o->fold ? o->fold->n_tasks : 0))
		return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
	if (rc == 0 && cont && !hybrid && (rc = mp_overlap(s, o)) != 0) {
		if (rc < 0)
			return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
		rc = SIM_MP_OVERLAP;
	}
	s->mp_why = rc;
	return rc == 0;
}

int64_t sim_map_time(const struct sim *s, uint32_t p, int64_t t)
{
	const struct graph *g = s->g;
	const struct graph_proc *pr = &g->procs[p];
	uint32_t lo, u;
	int64_t off, d;

	if (pr->n == 0)
		return t;
	lo = graph_proc_upto(g, p, t);
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
