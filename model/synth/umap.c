/*
 * umap.c - maps (synth.h synth_unit_map; issue 38's unit map): the
 * longest paths from a group of one rank's tasks' entries to its exits,
 * as the simulator (sim.h) times those tasks where nothing contends
 * (sim.c: arrival_ns, mp_start, fold_end_from), made once per unit
 * template where it is made (fold.c fold_map) and once per step's tail on
 * each rank (ss_steps: um_tail).  Each task's start and end are rows of
 * n_in values (the longest path from each entry, INT64_MIN none), made
 * in the tasks' order, which their edges follow.  A pair's (sim.h
 * "pairs") end row is its lanes' run, stepped as the sim steps it (the
 * section at the end: um_pair), with its guard under contention.
 */
#include "synth_int.h"

#include <string.h>

#define MAP_MAX_IN 64

static int um_pairs(struct ctx *c, const struct umap_view *v, struct umap_store *st,
		    struct umap_at *at, int64_t *reach, int64_t *dur, int64_t *busy,
		    int64_t *bound);
static int um_guard_rows(const struct umap_view *v, struct umap_store *st, const struct umap_at *at,
			 const int64_t *S);

_Static_assert(S_N <= SYNTH_STREAMS, "synth_unit_rec.last holds every stream");

/* d = max(d, s + w) entry by entry (w a duration or a lag). */
static void row_max(int64_t *d, const int64_t *s, int64_t w, uint32_t n)
{
	for (uint32_t j = 0; j < n; j++)
		if (s[j] != INT64_MIN && prism_time_add(s[j], w) > d[j])
			d[j] = prism_time_add(s[j], w);
}

/* Whether task i of v may rendezvous with other ranks' (a PEER entry and
 * an ARRIVE exit). */
static int rendezvous(const struct umap_view *v, uint32_t i)
{
	return v->nd[i].kind == GN_P2P || (v->all_colls && v->nd[i].kind == GN_COLL);
}

/* The port of kind at proc (SYNTH_PORT_PROC, END) or task among the n
 * from port0 in st, added at its end where new: its index from port0, or
 * NONE32 when out of memory. */
static uint32_t map_port(struct umap_store *st, uint32_t port0, uint32_t n, uint8_t kind,
			 int32_t proc, uint32_t task)
{
	struct synth_port *p = VEC_AT(st->ports, port0), x = {kind, proc, task};
	for (uint32_t i = 0; i < n; i++)
		if (p[i].kind == kind && p[i].proc == proc && p[i].task == task)
			return i;
	if (VEC_PUSH(st->ports, x))
		return NONE32;
	return n;
}

/* v's entries and exits (st from at->port0): the host, each processor a
 * task runs on, each stream an event from before waits on, each
 * rendezvous's other side; each processor's last task, each stream's
 * last (its events' source after), each rendezvous's arrival, the first
 * compute task's start.  0, 1 where too many, -1 when out of
 * memory. */
static int map_ports(const struct umap_view *v, struct umap_store *st, struct umap_at *at)
{
	uint32_t host = v->rk->host, n = 0, p0 = at->port0;

	if (map_port(st, p0, n++, SYNTH_PORT_PROC, 0, 0) == NONE32)
		return -1;
	for (uint32_t i = 0, seen = 1; i < v->n; i++) {
		uint32_t off = v->nd[i].proc - host;
		if (v->nd[i].proc < host || off > S_N)
			return 1; /* (another rank's: cannot happen) */
		if (seen & (1u << off))
			continue;
		seen |= 1u << off;
		if (map_port(st, p0, n, SYNTH_PORT_PROC, (int32_t)off, 0) == NONE32)
			return -1;
		n = (uint32_t)(st->ports.n - p0);
	}
	for (uint32_t i = 0; i < v->n_ext; i++) {
		if (map_port(st, p0, n, SYNTH_PORT_LAST, v->ext[i].stream, 0) == NONE32)
			return -1;
		n = (uint32_t)(st->ports.n - p0);
	}
	for (uint32_t i = 0; i < v->n; i++)
		if (rendezvous(v, i) && map_port(st, p0, n++, SYNTH_PORT_PEER, 0, i) == NONE32)
			return -1;
	at->n_in = n;
	if (n > MAP_MAX_IN)
		return 1;
	for (uint32_t j = 0; j < at->n_in; j++) {
		struct synth_port p = st->ports.v[p0 + j];
		uint32_t i = v->n;
		if (p.kind != SYNTH_PORT_PROC)
			continue;
		while (i > 0 && (int32_t)(v->nd[i - 1].proc - host) != p.proc)
			i--;
		if (i > 0 && map_port(st, p0, n++, SYNTH_PORT_END, p.proc, i - 1) == NONE32)
			return -1;
	}
	for (int k = 0; k < S_N; k++)
		if (v->last[k] != NONE32 &&
		    map_port(st, p0, n++, SYNTH_PORT_LAST, k, v->last[k]) == NONE32)
			return -1;
	for (uint32_t i = 0; i < v->n; i++)
		if (rendezvous(v, i) && map_port(st, p0, n++, SYNTH_PORT_ARRIVE, 0, i) == NONE32)
			return -1;
	if (v->ufirst != NONE32 && map_port(st, p0, n++, SYNTH_PORT_START, 0, v->ufirst) == NONE32)
		return -1;
	at->n_out = n - at->n_in;
	return 0;
}

/* Each unit task's reach (sim_fold_pieces: the latest launch of its
 * kernels plus what follows it, from its unit's host start), INT64_MIN
 * for every other task. */
static void map_reach(const struct umap_view *v, int64_t *reach)
{
	for (uint32_t i = 0; i < v->n; i++)
		reach[i] = INT64_MIN;
	for (uint32_t k = 0; k < v->n_marks; k++) {
		const struct fmark *mk = &v->marks[k];
		int64_t rest = 0, r = INT64_MIN;
		for (uint32_t q = mk->n_kern; q-- > 0;) {
			const struct synth_fold_kern *kk = &v->kerns[mk->kern0 + q];
			rest = prism_time_add(rest, prism_time_add(kk->lag_ns, kk->dur_ns));
			if (prism_time_add(kk->rel_ns, rest) > r)
				r = prism_time_add(kk->rel_ns, rest);
		}
		reach[mk->node] = r;
	}
}

/* Each task's start row (S) and end row (E), its in-edges by[off[i] ..
 * off[i + 1]) (v's edge indices); the rendezvous' arrivals into their
 * exits' rows of m. */
static void map_paths(const struct umap_view *v, const struct synth_port *pt, uint32_t ni,
		      int64_t *S, int64_t *E, const int64_t *reach, const int64_t *dur,
		      const uint32_t *off, const uint32_t *by, int64_t *m)
{
	/* The entries of each processor (by its offset from the host: a
	 * rank's processors are its host and then its streams) and of each
	 * stream's last. */
	uint32_t host = v->rk->host, prev[MAP_MAX_IN], pidx[S_N + 1], lidx[S_N];

	for (uint32_t j = 0; j < ni; j++) {
		prev[j] = NONE32;
		if (pt[j].kind == SYNTH_PORT_PROC)
			pidx[pt[j].proc] = j;
		else if (pt[j].kind == SYNTH_PORT_LAST)
			lidx[pt[j].proc] = j;
	}
	for (uint32_t i = 0; i < v->n; i++) {
		int64_t *s = S + (size_t)i * ni, *e = E + (size_t)i * ni, lag = v->nd[i].lag_ns;
		uint32_t p = pidx[v->nd[i].proc - host];
		for (uint32_t j = 0; j < ni; j++)
			s[j] = INT64_MIN;
		/* After the processor's task before it (order edges). */
		if (prev[p] == NONE32)
			s[p] = lag;
		else
			row_max(s, E + (size_t)prev[p] * ni, lag, ni);
		prev[p] = i;
		for (uint32_t k = off[i]; k < off[i + 1]; k++) {
			const struct gw_edge *x = &v->ed[by[k]];
			row_max(s, (GE_KIND(x->kind) == GE_LAUNCH ? S : E) + (size_t)x->src * ni,
				lag, ni);
		}
		for (uint32_t k = 0; k < v->n_ext; k++) {
			uint32_t q = lidx[v->ext[k].stream];
			if (v->ext[k].dst == i && s[q] < lag)
				s[q] = lag;
		}
		if (rendezvous(v, i)) {
			/* Its arrival; it starts with the other side's. */
			uint32_t j = 0, o = ni;
			while (pt[j].kind != SYNTH_PORT_PEER || pt[j].task != i)
				j++;
			while (pt[o].kind != SYNTH_PORT_ARRIVE || pt[o].task != i)
				o++;
			memcpy(m + (size_t)(o - ni) * ni, s, ni * sizeof(*s));
			if (s[j] < 0)
				s[j] = 0;
		}
		for (uint32_t j = 0; j < ni; j++)
			e[j] = INT64_MIN;
		/* (a unit task's duration: its kernels' rest, fold_run; a
		 * pair's: its lanes' run past every launch, um_pairs) */
		row_max(e, s, dur[i], ni);
		/* A unit task: no earlier than its unit's host start (its
		 * first task's) plus its reach (fold_end_from; a pair's: its
		 * run from the latest launches without contention, none with
		 * it). */
		if (reach[i] != INT64_MIN)
			row_max(e, S, reach[i], ni);
	}
}

/* v's tasks (synth.h synth_map_task) and their rows S, E, L, O (n_in
 * each, v->n of each, one after another) appended to st: 0, or -1 when
 * out of memory. */
static int um_tasks(const struct umap_view *v, struct umap_store *st, uint32_t n_in,
		    const int64_t *rows, const int64_t *reach, const int64_t *dur,
		    const int64_t *busy, const int64_t *bound)
{
	size_t nr = (size_t)v->n * n_in;
	if (VEC_RESERVE(st->rows, st->rows.n + 4 * nr) ||
	    VEC_RESERVE(st->tasks, st->tasks.n + v->n))
		return -1;
	if (nr)
		memcpy(st->rows.v + st->rows.n, rows, 4 * nr * sizeof(*rows));
	st->rows.n += 4 * nr;
	for (uint32_t i = 0; i < v->n; i++) {
		const int64_t *l = rows + 2 * nr + (size_t)i * n_in;
		uint8_t launched = 0;
		for (uint32_t j = 0; j < n_in && !launched; j++)
			launched = l[j] != INT64_MIN;
		st->tasks.v[st->tasks.n++] =
		    (struct synth_map_task){(int32_t)(v->nd[i].proc - v->rk->host),
					    v->nd[i].kind,
					    bound[i] != INT64_MIN,
					    launched,
					    dur[i],
					    busy[i],
					    reach[i],
					    bound[i]};
	}
	return 0;
}

/* Each GPU task's releases parted by their source (synth.h
 * synth_unit_map.tl, tr), each plus its lag as map_paths takes them: from
 * a host task (its launch) into L, from any other (the task before it on
 * its stream, an event's source) into O; a transfer's other side is
 * neither (its rendezvous binds apart).  Host tasks' rows INT64_MIN. */
static void map_binds(const struct umap_view *v, const struct synth_port *pt, uint32_t ni,
		      const int64_t *S, const int64_t *E, const uint32_t *off, const uint32_t *by,
		      int64_t *L, int64_t *O)
{
	uint32_t host = v->rk->host, prev[S_N + 1], pidx[S_N + 1], lidx[S_N];

	for (uint32_t j = 0; j < ni; j++) {
		if (pt[j].kind == SYNTH_PORT_PROC)
			pidx[pt[j].proc] = j;
		else if (pt[j].kind == SYNTH_PORT_LAST)
			lidx[pt[j].proc] = j;
	}
	for (int k = 0; k <= S_N; k++)
		prev[k] = NONE32;
	for (uint32_t i = 0; i < v->n; i++) {
		int64_t *l = L + (size_t)i * ni, *o = O + (size_t)i * ni, lag = v->nd[i].lag_ns;
		uint32_t po = v->nd[i].proc - host;
		for (uint32_t j = 0; j < ni; j++)
			l[j] = o[j] = INT64_MIN;
		if (po == 0) {
			prev[po] = i;
			continue;
		}
		if (prev[po] == NONE32)
			o[pidx[po]] = lag;
		else
			row_max(o, E + (size_t)prev[po] * ni, lag, ni);
		prev[po] = i;
		for (uint32_t k = off[i]; k < off[i + 1]; k++) {
			const struct gw_edge *x = &v->ed[by[k]];
			row_max(v->nd[x->src].proc == host ? l : o,
				(GE_KIND(x->kind) == GE_LAUNCH ? S : E) + (size_t)x->src * ni, lag,
				ni);
		}
		for (uint32_t k = 0; k < v->n_ext; k++) {
			uint32_t q = lidx[v->ext[k].stream];
			if (v->ext[k].dst == i && o[q] < lag)
				o[q] = lag;
		}
	}
}

void um_store_free(struct umap_store *st)
{
	VEC_FREE(st->ports);
	VEC_FREE(st->m);
	VEC_FREE(st->guards);
	VEC_FREE(st->gm);
	VEC_FREE(st->rows);
	VEC_FREE(st->tasks);
}

void um_store_empty(struct umap_store *st)
{
	st->ports.n = st->m.n = st->guards.n = st->gm.n = st->rows.n = st->tasks.n = 0;
}

/* Each unit task's busy time alone (a pair's: um_pairs), -1 for every
 * other task. */
static void map_busy(const struct umap_view *v, int64_t *busy)
{
	for (uint32_t i = 0; i < v->n; i++)
		busy[i] = -1;
	for (uint32_t k = 0; k < v->n_marks; k++) {
		const struct fmark *mk = &v->marks[k];
		int64_t b = 0;
		for (uint32_t q = 0; q < mk->n_kern; q++)
			b = prism_time_add(b, v->kerns[mk->kern0 + q].dur_ns);
		busy[mk->node] = b;
	}
}

int um_make(struct ctx *c, const struct umap_view *v, struct umap_store *st, struct umap_at *at)
{
	size_t n = v->n, ne = v->ne, rows;
	int64_t *S, *E, *L, *O, *reach, *dur, *busy, *bound, *m;
	uint32_t *off, *by;
	int rc;

	at->port0 = (uint32_t)st->ports.n;
	at->m0 = (uint32_t)st->m.n;
	at->g0 = (uint32_t)st->guards.n;
	at->gm0 = (uint32_t)st->gm.n;
	at->r0 = (uint32_t)st->rows.n;
	at->t0 = (uint32_t)st->tasks.n;
	at->n_in = at->n_out = at->n_guard = 0;
	for (uint32_t k = 0; k < ne; k++)
		if (v->ed[k].src >= v->ed[k].dst || v->ed[k].dst >= n)
			return 0;
	if (n == 0 || v->nd[0].proc != v->rk->host)
		return 0; /* (the host's start: its first task's) */
	if ((rc = map_ports(v, st, at)) != 0) {
		st->ports.n = at->port0;
		at->n_in = at->n_out = 0;
		return rc < 0 ? -1 : 0;
	}
	rows = 4 * n * at->n_in + 4 * n;
	/* The scratch: S, E, L, O (map_binds), reach, dur, busy, bound,
	 * then the edges by their target. */
	if (VEC_RESERVE(c->fo.mscr, rows + (n + 1 + ne + 1) / 2 + 1) ||
	    VEC_RESERVE(st->m, st->m.n + (size_t)at->n_in * at->n_out))
		return -1;
	S = c->fo.mscr.v;
	E = S + n * at->n_in;
	L = E + n * at->n_in;
	O = L + n * at->n_in;
	reach = O + n * at->n_in;
	dur = reach + n;
	busy = dur + n;
	bound = busy + n;
	off = (uint32_t *)(bound + n);
	by = off + n + 1;
	memset(off, 0, (n + 1) * sizeof(*off));
	for (size_t k = 0; k < ne; k++)
		off[v->ed[k].dst + 1]++;
	for (size_t i = 0; i < n; i++)
		off[i + 1] += off[i];
	for (size_t k = 0; k < ne; k++)
		by[off[v->ed[k].dst]++] = (uint32_t)k;
	for (size_t i = n; i > 0; i--)
		off[i] = off[i - 1];
	off[0] = 0;
	m = VEC_AT(st->m, at->m0);
	map_reach(v, reach);
	map_busy(v, busy);
	for (size_t i = 0; i < n; i++)
		dur[i] = v->nd[i].dur_ns, bound[i] = INT64_MIN;
	if ((rc = um_pairs(c, v, st, at, reach, dur, busy, bound)) != 0) {
		st->ports.n = at->port0;
		st->guards.n = at->g0;
		at->n_in = at->n_out = at->n_guard = 0;
		return rc < 0 ? -1 : 0;
	}
	map_paths(v, VEC_AT(st->ports, at->port0), at->n_in, S, E, reach, dur, off, by, m);
	map_binds(v, VEC_AT(st->ports, at->port0), at->n_in, S, E, off, by, L, O);
	if (um_guard_rows(v, st, at, S) || um_tasks(v, st, at->n_in, S, reach, dur, busy, bound))
		return -1;
	for (uint32_t o = 0; o < at->n_out; o++) {
		const struct synth_port *p = &st->ports.v[at->port0 + at->n_in + o];
		const int64_t *row = p->kind == SYNTH_PORT_END || p->kind == SYNTH_PORT_LAST
					 ? E + (size_t)p->task * at->n_in
				     : p->kind == SYNTH_PORT_START ? S + (size_t)p->task * at->n_in
								   : NULL;
		if (row && at->n_in) /* (none: m may be unallocated) */
			memcpy(m + (size_t)o * at->n_in, row, at->n_in * sizeof(*row));
	}
	st->m.n += (size_t)at->n_in * at->n_out;
	return 0;
}

void um_get(const struct umap_store *st, const struct umap_at *at, uint32_t n,
	    struct synth_unit_map *map)
{
	map->n_tasks = n;
	map->n_in = at->n_in;
	map->n_out = at->n_out;
	map->in = VEC_AT(st->ports, at->port0);
	map->out = VEC_AT(st->ports, at->port0 + at->n_in);
	map->m = VEC_AT(st->m, at->m0);
	map->n_guard = at->n_guard;
	map->guard = VEC_AT(st->guards, at->g0);
	map->gm = VEC_AT(st->gm, at->gm0);
	map->ts = VEC_AT(st->rows, at->r0);
	map->te = map->ts ? map->ts + (size_t)n * at->n_in : NULL;
	map->tl = map->ts ? map->te + (size_t)n * at->n_in : NULL;
	map->tr = map->ts ? map->tl + (size_t)n * at->n_in : NULL;
	map->task = VEC_AT(st->tasks, at->t0);
}

/* The tail's tasks and edges as a view: 1; 0 where an edge comes from
 * before the tail but from a stream's last task there, or goes back; -1
 * when out of memory. */
static int tail_view(struct ctx *c, int r, size_t k0, size_t e0, const uint32_t *last0,
		     struct umap_view *v)
{
	struct fold_state *f = &c->fo;
	const struct gw *w = &c->em.w;
	size_t n = w->n_nodes - k0;

	f->mrows.n = f->medges.n = f->mexts.n = 0;
	if (VEC_RESERVE(f->mrows, n ? n : 1))
		return -1;
	for (size_t i = 0; i < n; i++)
		gw_row(w, (uint32_t)(k0 + i), &f->mrows.v[i]);
	f->mrows.n = n;
	for (size_t k = e0; k < w->edges.n; k++) {
		struct gw_edge e = w->edges.v[k];
		if (e.dst < k0)
			return 0;
		if (e.src >= k0) {
			e.src -= (uint32_t)k0;
			e.dst -= (uint32_t)k0;
			if (VEC_PUSH(f->medges, e))
				return -1;
			continue;
		}
		{
			struct fext x = {e.dst - (uint32_t)k0, 0};
			while (x.stream < S_N && last0[x.stream] != e.src)
				x.stream++;
			if (x.stream == S_N || GE_KIND(e.kind) == GE_LAUNCH)
				return 0;
			if (VEC_PUSH(f->mexts, x))
				return -1;
		}
	}
	memset(v, 0, sizeof(*v));
	v->nd = f->mrows.v;
	v->n = (uint32_t)n;
	v->ed = f->medges.v;
	v->ne = (uint32_t)f->medges.n;
	v->ext = f->mexts.v;
	v->n_ext = (uint32_t)f->mexts.n;
	v->rk = &c->rk[r];
	v->ufirst = NONE32;
	v->all_colls = 1;
	for (int st = 0; st < S_N; st++) {
		uint32_t l = c->rk[r].last[st];
		f->mlast[st] = l != NONE32 && l >= k0 ? l - (uint32_t)k0 : NONE32;
	}
	v->last = f->mlast;
	return 1;
}

int um_tail(struct ctx *c, int r, size_t k0, size_t e0, const uint32_t *last0)
{
	struct tail_rec t = {(uint32_t)r,  (uint32_t)c->sc.step,
			     (uint32_t)k0, (uint32_t)(c->em.w.n_nodes - k0),
			     {0},	   {0}};
	struct umap_view v;
	int rc;

	memcpy(t.last, last0, sizeof(t.last));
	/* Until an evaluator reads them (the unit map's step 5), only the
	 * unit log (test_unit_map) does: 0.6 % of a folded build's
	 * instructions (tests/bench/instr.py, dp 1 candidate) spared. */
	if (!c->fo.fold || c->oom || !c->in->unit_log)
		return 0;
	rc = tail_view(c, r, k0, e0, last0, &v);
	if (rc < 0 || (rc > 0 && um_make(c, &v, &c->fo.tmaps, &t.map)))
		return -1;
	if (rc == 0) {
		t.map.port0 = (uint32_t)c->fo.tmaps.ports.n, t.map.m0 = (uint32_t)c->fo.tmaps.m.n;
		t.map.g0 = (uint32_t)c->fo.tmaps.guards.n, t.map.gm0 = (uint32_t)c->fo.tmaps.gm.n;
		t.map.r0 = (uint32_t)c->fo.tmaps.rows.n, t.map.t0 = (uint32_t)c->fo.tmaps.tasks.n;
	}
	return VEC_PUSH(c->fo.tails, t) ? -1 : 0;
}

/* ---- pairs (sim.h "pairs"; issue 38's unit map, step 6) ----------------
 *
 * A pair's two lanes, stepped as sim.c's lanes_alone steps them where
 * nothing else runs on their GPU: the same states, the same events in
 * the same order (the earlier pred; the main lane's at a tie), the same
 * double arithmetic (work advanced by elapsed time x rate, ends at
 * llround(work / rate)).  The sim takes a period of repeated steps at
 * once (lanes_jump) and the main lane's stretch alone (lane0_solo): by
 * its own comment the same values, which test_hier's test_pair_map holds
 * against the settled graph.  This restates the sim's rules in model/
 * (which knows no simulator) for the unit map's evaluator; the test is
 * what keeps the two equal. */

#define PL_WAIT	 0
#define PL_RUN	 1
#define PL_BLOCK 2
#define PL_DONE	 3

/* sim.h SIM_PIECE_*: what a piece runs as. */
#define PK_IDLE	   0
#define PK_COMPUTE 1
#define PK_COMM	   2

struct plane {
	int64_t prev, at, pred;
	double rem;
	uint32_t k, n, base, off; /* its piece; its count, first kernel, first end */
	uint8_t mode, kind;
};

struct prun {
	const struct synth_fold_kern *kerns;
	struct plane L[2];
	int64_t host;
	int64_t *ends; /* each piece's end: the main lane's, then the side's */
	int64_t *pre;  /* NULL, or each piece's release but for its launch */
	int64_t busy;  /* the main lane's pieces' run (sim.c lane_end) */
	int held;      /* a launch held a piece (sim.c lane_next: P[0].held) */
	double rate_comp, rate_comm;
};

static uint8_t pkind(const struct synth_fold_kern *q)
{
	return q->comm == SYNTH_KERN_COLL  ? PK_COMM
	       : q->comm == SYNTH_KERN_P2P ? PK_IDLE
					   : PK_COMPUTE;
}

static uint8_t plkind(const struct plane *L)
{
	return L->mode == PL_RUN ? L->kind : PK_IDLE;
}

/* sim.c lrate_alone. */
static double prate(const struct prun *R, const struct plane *L, const struct plane *M)
{
	if (L->kind == PK_COMPUTE)
		return plkind(M) == PK_COMM ? R->rate_comp : 1.0;
	if (L->kind == PK_COMM)
		return plkind(M) == PK_COMPUTE ? R->rate_comm : 1.0;
	return 1.0;
}

/* sim.c lane_end. */
static void pl_end(struct prun *R, int l, int64_t b)
{
	struct plane *L = &R->L[l];
	if (!l)
		R->busy += b - L->at;
	R->ends[L->off + L->k] = b;
	L->prev = b;
	L->k++;
}

/* sim.c lane_next: lane l takes its next piece at t. */
static void pl_next(struct prun *R, int l, int64_t t)
{
	struct plane *L = &R->L[l], *M = &R->L[1 - l];
	while (L->k < L->n) {
		const struct synth_fold_kern *q = &R->kerns[L->base + L->k];
		int64_t at = prism_time_add(R->host, q->rel_ns), p = L->prev, c;
		int held = at > L->prev;
		if (q->xw != SYNTH_NO_XW) {
			int64_t x;
			if (M->k <= q->xw) {
				L->mode = PL_BLOCK;
				return;
			}
			x = R->ends[M->off + q->xw];
			held = held && at > x;
			p = x > p ? x : p;
		}
		R->held |= held;
		if (R->pre)
			R->pre[L->off + L->k] = p;
		c = prism_time_add(p > at ? p : at, q->lag_ns);
		L->at = c;
		if (c > t) {
			L->mode = PL_WAIT;
			L->pred = c;
			return;
		}
		if (q->dur_ns > 0) {
			L->mode = PL_RUN;
			L->kind = pkind(q);
			L->rem = (double)q->dur_ns;
			return;
		}
		pl_end(R, l, c);
	}
	L->mode = PL_DONE;
}

/* sim.c lanes_wake. */
static void pl_wake(struct prun *R, int64_t t)
{
	for (int moved = 1; moved;) {
		moved = 0;
		for (int l = 0; l < 2; l++)
			if (R->L[l].mode == PL_BLOCK &&
			    R->L[1 - l].k > R->kerns[R->L[l].base + R->L[l].k].xw) {
				pl_next(R, l, t);
				moved = 1;
			}
	}
}

/* sim.c lanes_retime_alone. */
static void pl_retime(struct prun *R, int64_t t)
{
	double rt[2] = {prate(R, &R->L[0], &R->L[1]), prate(R, &R->L[1], &R->L[0])};
	for (int l = 0; l < 2; l++) {
		double left;
		if (R->L[l].mode != PL_RUN)
			continue;
		left = R->L[l].rem / rt[l];
		R->L[l].pred =
		    left > (double)PRISM_TIME_MAX ? PRISM_TIME_MAX + 1 : t + prism_llround(left);
	}
}

/* The pair of lanes (n0 kernels from k0, n2 from k2) from start t, its
 * host at h (sim.c pair_whole's lanes_start and lanes_alone): its end,
 * or PRISM_TIME_MAX + 1 where its lanes block each other for ever. */
static int64_t pair_run(struct prun *R, uint32_t k0, uint32_t n0, uint32_t k2, uint32_t n2,
			int64_t t, int64_t h)
{
	int64_t since = t;
	memset(R->L, 0, sizeof(R->L));
	R->busy = 0;
	R->held = 0;
	R->host = h;
	R->L[0].base = k0, R->L[0].n = n0, R->L[0].off = 0;
	R->L[1].base = k2, R->L[1].n = n2, R->L[1].off = n0;
	R->L[0].prev = R->L[1].prev = t;
	pl_next(R, 0, t);
	pl_next(R, 1, t);
	pl_wake(R, t);
	pl_retime(R, since);
	for (;;) {
		struct plane *L;
		int l = -1;
		double rt[2];
		for (int i = 0; i < 2; i++)
			if ((R->L[i].mode == PL_WAIT || R->L[i].mode == PL_RUN) &&
			    (l < 0 || R->L[i].pred < R->L[l].pred))
				l = i;
		if (l < 0)
			break;
		L = &R->L[l];
		t = L->pred;
		rt[0] = prate(R, &R->L[0], &R->L[1]);
		rt[1] = prate(R, &R->L[1], &R->L[0]);
		for (int i = 0; i < 2; i++)
			if (R->L[i].mode == PL_RUN) {
				R->L[i].rem -= (double)(t - since) * rt[i];
				if (R->L[i].rem < 0)
					R->L[i].rem = 0;
			}
		since = t;
		/* sim.c lane_event */
		if (L->mode == PL_WAIT && R->kerns[L->base + L->k].dur_ns > 0) {
			L->mode = PL_RUN;
			L->kind = pkind(&R->kerns[L->base + L->k]);
			L->rem = (double)R->kerns[L->base + L->k].dur_ns;
		} else {
			pl_end(R, l, t);
			pl_next(R, l, t);
			pl_wake(R, t);
		}
		pl_retime(R, t);
	}
	if (R->L[0].mode != PL_DONE || R->L[1].mode != PL_DONE)
		return PRISM_TIME_MAX + 1;
	return R->L[0].prev > R->L[1].prev ? R->L[0].prev : R->L[1].prev;
}

static void pair_rates(struct prun *R, double slow_compute, double slow_comm)
{
	/* sim.c sim_rates */
	R->rate_comp = 1.0 / (1.0 + slow_compute);
	R->rate_comm = 1.0 / (1.0 + slow_comm);
}

int synth_pair_end(const struct synth_fold_kern *kerns, const struct synth_fold_mark *mk,
		   double slow_compute, double slow_comm, int64_t start, int64_t host,
		   int64_t *ends, int64_t *end)
{
	struct prun R;
	R.kerns = kerns;
	R.ends = ends;
	R.pre = NULL;
	pair_rates(&R, slow_compute, slow_comm);
	*end = pair_run(&R, mk->kern0, mk->n_kern, mk->kern2, mk->n_kern2, start, host);
	return *end > PRISM_TIME_MAX;
}

int synth_tpl_pair_end(const struct synth_tpl *tpl, uint32_t t, uint32_t task, int64_t start,
		       int64_t host, int64_t *ends, size_t n_ends, int64_t *end)
{
	int held;
	return synth_tpl_pair_held(tpl, t, task, start, host, ends, n_ends, end, &held);
}

int synth_tpl_pair_held(const struct synth_tpl *tpl, uint32_t t, uint32_t task, int64_t start,
			int64_t host, int64_t *ends, size_t n_ends, int64_t *end, int *held)
{
	const struct fold_state *f = &tpl->fo;
	const struct ufold *u;
	struct prun R;

	if (t >= f->folds.n)
		return -1;
	u = &f->folds.v[t];
	for (uint32_t k = 0; k < u->n_marks; k++) {
		const struct fmark *mk = &f->fmarks.v[u->mark0 + k];
		if (mk->node != task || !mk->n_kern2)
			continue;
		if (n_ends < (size_t)mk->n_kern + mk->n_kern2)
			return -1;
		R.kerns = f->fkerns.v;
		R.ends = ends;
		R.pre = NULL;
		pair_rates(&R, tpl->key.bare ? 0 : tpl->key.hw->slow_compute,
			   tpl->key.bare ? 0 : tpl->key.hw->slow_comm);
		*end = pair_run(&R, mk->kern0, mk->n_kern, mk->kern2, mk->n_kern2, start, host);
		*held = R.held;
		return *end > PRISM_TIME_MAX;
	}
	return -1;
}

/*
 * Each pair's end row's constants (map_paths: dur, reach) and, under
 * contention, its guard.  Its run from a start past every launch (from 0,
 * its host at minus its latest launch: no launch holds a piece) is len,
 * and each piece's release but for its launch, pre_k (the later of its
 * lane's previous piece's end and the other lane's piece it waits for).
 * From a start t with host h and t - h >= bound = max_k (rel_k - pre_k),
 * each piece's launch h + rel_k <= t + pre_k is no later than its other
 * releases (shifted by t), so every piece starts as in that run shifted
 * and the arithmetic after is shift-invariant: the end is t + len.
 * Without contention (both rates 1) every step is a max or a sum of
 * integers, so the end is max(t + len, h + B), B the run's from a start
 * too early to bind anything: no guard.  0, 1 where a pair's lanes
 * block each other (no map), -1 when out of memory.
 */
static int um_pairs(struct ctx *c, const struct umap_view *v, struct umap_store *st,
		    struct umap_at *at, int64_t *reach, int64_t *dur, int64_t *busy, int64_t *bound)
{
	double sc = c->in->bare ? 0 : c->in->hw->slow_compute;
	double sm = c->in->bare ? 0 : c->in->hw->slow_comm;
	struct prun R;

	R.kerns = v->kerns;
	pair_rates(&R, sc, sm);
	for (uint32_t k = 0; k < v->n_marks; k++) {
		const struct fmark *mk = &v->marks[k];
		uint32_t np = mk->n_kern + mk->n_kern2;
		int64_t lo = INT64_MAX, hi = INT64_MIN, len, b = INT64_MIN;
		if (!mk->n_kern2)
			continue;
		if (VEC_RESERVE(c->fo.pscr, 2 * (size_t)np))
			return -1;
		R.ends = c->fo.pscr.v;
		R.pre = R.ends + np;
		for (uint32_t q = 0; q < np; q++) {
			int64_t rel =
			    v->kerns[q < mk->n_kern ? mk->kern0 + q : mk->kern2 + q - mk->n_kern]
				.rel_ns;
			lo = rel < lo ? rel : lo;
			hi = rel > hi ? rel : hi;
		}
		len = pair_run(&R, mk->kern0, mk->n_kern, mk->kern2, mk->n_kern2, 0,
			       hi > 0 ? -hi : 0);
		if (len > PRISM_TIME_MAX)
			return 1;
		for (uint32_t q = 0; q < np; q++) {
			int64_t rel =
			    v->kerns[q < mk->n_kern ? mk->kern0 + q : mk->kern2 + q - mk->n_kern]
				.rel_ns;
			if (rel - R.pre[q] > b)
				b = rel - R.pre[q];
		}
		dur[mk->node] = len;
		busy[mk->node] = R.busy;
		bound[mk->node] = b;
		if (R.rate_comp == 1.0 && R.rate_comm == 1.0) {
			/* From lo - len - 1, host 0: the start's paths end
			 * before any launch's (each at least its rel). */
			R.pre = NULL;
			reach[mk->node] = pair_run(&R, mk->kern0, mk->n_kern, mk->kern2,
						   mk->n_kern2, lo - len - 1, 0);
			continue;
		}
		reach[mk->node] = INT64_MIN;
		{
			struct synth_pair_guard g = {mk->node, b, len};
			if (VEC_PUSH(st->guards, g))
				return -1;
			at->n_guard++;
		}
	}
	return 0;
}

/* Each guard's rows (synth_unit_map.gm): its pair's start, the host's
 * (the unit's first task's).  0, or -1 when out of memory. */
static int um_guard_rows(const struct umap_view *v, struct umap_store *st, const struct umap_at *at,
			 const int64_t *S)
{
	size_t ni = at->n_in;
	(void)v;
	if (VEC_RESERVE(st->gm, st->gm.n + 2 * (size_t)at->n_guard * ni))
		return -1;
	for (uint32_t g = 0; g < at->n_guard && ni; g++) {
		memcpy(st->gm.v + st->gm.n, S + (size_t)st->guards.v[at->g0 + g].task * ni,
		       ni * sizeof(*S));
		memcpy(st->gm.v + st->gm.n + ni, S, ni * sizeof(*S));
		st->gm.n += 2 * ni;
	}
	return 0;
}
