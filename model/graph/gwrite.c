/* gwrite.c - the graph writer (gwrite.h). */
#include "gwrite.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static void init(struct gw *w)
{
	memset(w, 0, sizeof(*w));
	w->max_nodes = UINT32_MAX - 1;
}

int gw_init(struct gw *w)
{
	init(w);
	return w->rc = strtab_init(&w->st);
}

int gw_init_from(struct gw *w, const struct graph *base)
{
	init(w);
	w->t0_ns = base->t0_ns;
	w->meta = base->meta;
	w->stats = base->stats;
	return w->rc = strtab_copy(&w->st, &base->st);
}

void gw_init_move(struct gw *w, struct strtab *st)
{
	init(w);
	w->st = *st;
	memset(st, 0, sizeof(*st));
}

static void free_columns(struct gw *w)
{
#define GW_FREE(type, f) free(w->f), w->f = NULL;
	GRAPH_NODE_COLUMNS(GW_FREE)
#undef GW_FREE
	w->n_nodes = 0;
	w->cap_nodes = 0;
}

void gw_release(struct gw *w)
{
	free_columns(w);
	VEC_FREE(w->edges);
	VEC_FREE(w->procs);
	VEC_FREE(w->ranks);
	VEC_FREE(w->iters);
	VEC_FREE(w->colls);
	VEC_FREE(w->dropped);
	strtab_release(&w->st);
	free(w->newid);
	w->newid = NULL;
	w->newid_cap = 0;
	VEC_FREE(w->scratch);
	graph_free(w->reuse);
	w->reuse = NULL;
	w->made = NULL;
}

int gw_reset(struct gw *w)
{
	w->n_nodes = 0;
	w->edges.n = w->procs.n = w->ranks.n = w->iters.n = w->colls.n = w->dropped.n = 0;
	w->t0_ns = 0;
	w->meta = 0;
	memset(&w->stats, 0, sizeof(w->stats));
	w->max_nodes = UINT32_MAX - 1;
	w->made = NULL; /* recycled by now, or freed by its owner: not taken after */
	w->rc = strtab_clear(&w->st);
	return w->rc;
}

void gw_recycle(struct gw *w, struct graph *g)
{
	if (!g)
		return;
	graph_free(w->reuse);
	w->reuse = NULL;
	if (g != w->made || w->made_room.nodes > GW_KEEP_NODES) {
		graph_free(g);
		return;
	}
	w->reuse = g;
	w->reuse_room = w->made_room;
	w->made = NULL;
}

void gw_node_from(struct gw_node *n, const struct graph *g, uint32_t u)
{
#define GW_GET(type, f) n->f = g->f[u];
	GRAPH_NODE_COLUMNS(GW_GET)
#undef GW_GET
	n->coll = GW_NONE; /* g's index: gw_coll attaches one */
}

static int fail(struct gw *w, int rc)
{
	if (!w->rc)
		w->rc = rc;
	return w->rc;
}

/* Room for n_nodes tasks: each column on its own (one that moved stays
 * valid if a later one fails).  0 or PRISM_ENOMEM, the writer unchanged
 * but for the columns that grew. */
static int grow(struct gw *w, size_t n_nodes)
{
	int ok = 1;
	if (n_nodes <= w->cap_nodes)
		return 0;
#define GW_GROW(type, f)                                                                           \
	if (ok) {                                                                                  \
		type *p = prism_realloc(w->f, n_nodes * sizeof(type));                             \
		if (p)                                                                             \
			w->f = p;                                                                  \
		else                                                                               \
			ok = 0;                                                                    \
	}
	GRAPH_NODE_COLUMNS(GW_GROW)
#undef GW_GROW
	if (!ok)
		return PRISM_ENOMEM;
	w->cap_nodes = n_nodes;
	return 0;
}

int gw_reserve(struct gw *w, size_t n_nodes)
{
	return w->rc ? w->rc : grow(w, n_nodes);
}

int gw_reserve_links(struct gw *w, size_t n_edges, size_t n_colls)
{
	if (w->rc)
		return w->rc;
	return VEC_RESERVE(w->edges, n_edges) || VEC_RESERVE(w->colls, n_colls) ? PRISM_ENOMEM : 0;
}

int gw_node_grow_(struct gw *w, const struct gw_node *n, uint32_t *id)
{
	uint32_t u = w->n_nodes;

	if (id)
		*id = GW_NONE;
	if (w->rc)
		return w->rc;
	if (u >= w->max_nodes)
		return fail(w, PRISM_ELIMIT);
	if (u == w->cap_nodes && grow(w, w->cap_nodes ? 2 * w->cap_nodes : 64))
		return fail(w, PRISM_ENOMEM);
	return gw_node(w, n, id); /* room now */
}

void gw_row(const struct gw *w, uint32_t id, struct gw_node *n)
{
	assert(id < w->n_nodes);
#define GW_ROW(type, f) n->f = w->f[id];
	GRAPH_NODE_COLUMNS(GW_ROW)
#undef GW_ROW
}

void gw_truncate(struct gw *w, uint32_t n_nodes, size_t n_edges, size_t n_colls)
{
	assert(n_nodes <= w->n_nodes && n_edges <= w->edges.n && n_colls <= w->colls.n);
	for (size_t c = n_colls; c < w->colls.n; c++)
		assert(w->colls.v[c].node >= n_nodes); /* a kept task's stays */
	w->n_nodes = n_nodes;
	w->edges.n = n_edges;
	w->colls.n = n_colls;
	if (w->dropped.n > n_nodes)
		w->dropped.n = n_nodes;
}

int gw_edge(struct gw *w, uint32_t src, uint32_t dst, uint8_t kind)
{
	struct gw_edge e = {src, dst, kind};
	if (w->rc)
		return w->rc;
	assert(src < w->n_nodes && dst < w->n_nodes);
	if (src == dst)
		return 0;
	return VEC_PUSH(w->edges, e) ? fail(w, PRISM_ENOMEM) : 0;
}

int gw_order(struct gw *w, const uint32_t *order)
{
	size_t n = w->n_nodes;
	uint32_t *last;

	if (w->rc)
		return w->rc;
	if (order) {
		for (size_t i = 1; i < n; i++)
			if (w->proc[order[i - 1]] == w->proc[order[i]] &&
			    gw_edge(w, order[i - 1], order[i], GE_ORDER))
				return w->rc;
		return 0;
	}
	/* At most one edge a task: room for them once, then placed. */
	if (VEC_RESERVE(w->scratch, w->procs.n + 1) || VEC_RESERVE(w->edges, w->edges.n + n))
		return fail(w, PRISM_ENOMEM);
	last = w->scratch.v;
	for (size_t p = 0; p < w->procs.n; p++)
		last[p] = GW_NONE;
	for (uint32_t u = 0; u < n; u++) {
		uint32_t p = w->proc[u];
		assert(p < w->procs.n);
		if (last[p] != GW_NONE)
			w->edges.v[w->edges.n++] = (struct gw_edge){last[p], u, GE_ORDER};
		last[p] = u;
	}
	if (!w->keep)
		VEC_FREE(w->scratch);
	return 0;
}

uint32_t gw_intern(struct gw *w, const char *s)
{
	uint32_t id = 0;
	int rc;
	if (w->rc)
		return 0;
	if ((rc = strtab_intern(&w->st, s, strlen(s), &id)))
		fail(w, rc);
	return w->rc ? 0 : id;
}

int gw_proc(struct gw *w, const struct graph_proc *p, uint32_t *id)
{
	if (w->rc)
		return w->rc;
	if (VEC_PUSH(w->procs, *p))
		return fail(w, PRISM_ENOMEM);
	if (id)
		*id = (uint32_t)(w->procs.n - 1);
	return 0;
}

int gw_rank(struct gw *w, const struct graph_rank *r)
{
	if (w->rc)
		return w->rc;
	return VEC_PUSH(w->ranks, *r) ? fail(w, PRISM_ENOMEM) : 0;
}

int gw_iter(struct gw *w, const struct graph_iter *it)
{
	if (w->rc)
		return w->rc;
	return VEC_PUSH(w->iters, *it) ? fail(w, PRISM_ENOMEM) : 0;
}

int gw_coll(struct gw *w, uint32_t node, const struct graph_coll *c)
{
	struct graph_coll x;

	if (w->rc)
		return w->rc;
	assert(node < w->n_nodes);
	x = *c;
	x.node = node;
	if (VEC_PUSH(w->colls, x))
		return fail(w, PRISM_ENOMEM);
	w->coll[node] = (uint32_t)(w->colls.n - 1);
	return 0;
}

int gw_drop(struct gw *w, uint32_t id)
{
	size_t n = w->n_nodes;
	if (w->rc)
		return w->rc;
	assert(id < n);
	if (w->dropped.n < n) {
		if (VEC_RESERVE(w->dropped, n))
			return fail(w, PRISM_ENOMEM);
		memset(w->dropped.v + w->dropped.n, 0, n - w->dropped.n);
		w->dropped.n = n;
	}
	w->dropped.v[id] = 1;
	return 0;
}

int gw_is_dropped(const struct gw *w, uint32_t id)
{
	return id < w->dropped.n && w->dropped.v[id];
}

int gw_launch(struct gw *w, const struct gw_node *call, const struct gw_node *task,
	      uint32_t *call_id, uint32_t *task_id)
{
	struct gw_node t = *task;
	uint32_t c, u;

	if (call_id)
		*call_id = GW_NONE;
	if (task_id)
		*task_id = GW_NONE;
	t.corr = call->corr;
	if (gw_node(w, call, &c) || gw_node(w, &t, &u) || gw_edge(w, c, u, GE_LAUNCH))
		return w->rc;
	if (call_id)
		*call_id = c;
	if (task_id)
		*task_id = u;
	return 0;
}

int gw_collective(struct gw *w, const struct gw_node *call, const struct gw_node *task,
		  const struct graph_coll *c, uint32_t *call_id, uint32_t *task_id)
{
	struct gw_node t = *task;
	uint32_t u;

	if (task_id)
		*task_id = GW_NONE;
	t.kind =
	    c->kind == GC_SEND || c->kind == GC_RECV || c->kind == GC_SEND_RECV ? GN_P2P : GN_COLL;
	if (gw_launch(w, call, &t, call_id, &u) || gw_coll(w, u, c))
		return w->rc;
	if (task_id)
		*task_id = u;
	return 0;
}

int gw_event_wait(struct gw *w, const struct gw_node *at, uint32_t record, uint32_t wait,
		  int64_t dur_ns, uint32_t src, uint32_t dst, uint32_t *record_id,
		  uint32_t *wait_id)
{
	struct gw_node r = *at;

	if (wait_id)
		*wait_id = GW_NONE;
	r.kind = GN_RUNTIME;
	r.rtclass = RT_EVENT_RECORD;
	r.name = record;
	r.dur_ns = dur_ns;
	if (gw_node(w, &r, record_id))
		return w->rc;
	r.rtclass = RT_STREAM_WAIT;
	r.name = wait;
	if (gw_node(w, &r, wait_id))
		return w->rc;
	return src != GW_NONE && dst != GW_NONE ? gw_edge(w, src, dst, GE_EVENT) : 0;
}

/* ---- gw_finish ------------------------------------------------------- */

/*
 * The one edge list -> CSR conversion: e[0..ne) (sources < nrows) by
 * source, stably (a counting sort): off[0..nrows], and each row's targets
 * and kinds in push order.
 */
static void csr(const struct gw_edge *e, size_t ne, uint32_t nrows, uint32_t *off, uint32_t *dst,
		uint8_t *kind)
{
	memset(off, 0, ((size_t)nrows + 1) * sizeof(*off));
	for (size_t k = 0; k < ne; k++)
		off[e[k].src + 1]++;
	for (uint32_t u = 0; u < nrows; u++)
		off[u + 1] += off[u];
	/* Placing moves off[u] to the end of row u, the start of row u + 1. */
	for (size_t k = 0; k < ne; k++) {
		uint32_t at = off[e[k].src]++;
		dst[at] = e[k].dst;
		kind[at] = e[k].kind;
	}
	memmove(off + 1, off, (size_t)nrows * sizeof(*off));
	off[0] = 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* GW_SORT on g's rows: by (target, kind), the first of each target kept. */
static int sort_rows(struct graph *g)
{
	uint32_t most = 0, kept = 0;
	uint64_t *row;

	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->out_off[u + 1] - g->out_off[u] > most)
			most = g->out_off[u + 1] - g->out_off[u];
	if (!(row = prism_malloc(((size_t)most + 1) * sizeof(*row))))
		return PRISM_ENOMEM;
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		uint32_t lo = g->out_off[u], n = g->out_off[u + 1] - lo;
		g->out_off[u] = kept;
		for (uint32_t i = 0; i < n; i++)
			row[i] = (uint64_t)g->out_dst[lo + i] << 8 | g->out_kind[lo + i];
		/* Rows are short; a long one (a task awaited by thousands) must
		 * not cost its length squared. */
		if (n > 16)
			qsort(row, n, sizeof(*row), cmp_u64);
		else
			for (uint32_t i = 1; i < n; i++)
				for (uint32_t j = i; j > 0 && row[j - 1] > row[j]; j--) {
					uint64_t x = row[j];
					row[j] = row[j - 1];
					row[j - 1] = x;
				}
		for (uint32_t i = 0; i < n; i++)
			if (i == 0 || row[i] >> 8 != row[i - 1] >> 8) {
				g->out_dst[kept] = (uint32_t)(row[i] >> 8);
				g->out_kind[kept++] = (uint8_t)row[i];
			}
	}
	g->out_off[g->n_nodes] = kept;
	g->n_edges = kept;
	free(row);
	return 0;
}

/* The kind of an edge contracted through dropped tasks, from a task on
 * processor pa to one of kind kb on pb: the first edge's inferred bit,
 * and what its ends are. */
static uint8_t contracted(uint32_t pa, uint32_t pb, uint8_t kb, uint8_t first)
{
	uint8_t kind = GE_ORDER;
	if (pa != pb)
		kind = kb == GN_WAIT ? GE_SYNC : kb >= GN_KERNEL ? GE_EVENT : GE_THREAD;
	return (uint8_t)(kind | (first & GE_INFERRED));
}

/* *p (of room *room elements of size each) with room for n: kept where it
 * has it, else allocated anew (its content is not kept).  0 or
 * PRISM_ENOMEM. */
static int room_for(void **p, size_t *room, size_t n, size_t size)
{
	void *q;
	if (n == 0)
		n = 1;
	if (*p && *room >= n)
		return 0;
	if (!(q = prism_malloc(n * size)))
		return PRISM_ENOMEM;
	free(*p);
	*p = q;
	*room = n;
	return 0;
}

/* g (a recycled graph, or an empty one: shell) given the tables and the
 * edges' arrays for n_nodes tasks (its arrays kept where they have room,
 * *r; the tables' rows zeroed, as calloc leaves them, for their padding):
 * NULL when out of memory (g then freed).  The node columns keep their
 * room for fill(). */
static struct graph *reshell(const struct gw *w, struct graph *g, struct gw_room *r,
			     uint32_t n_nodes, uint32_t n_edges, uint32_t nc)
{
	uint32_t np = (uint32_t)w->procs.n, nr = (uint32_t)w->ranks.n, ni = (uint32_t)w->iters.n;
	size_t edges = r->edges, kinds = r->edges;

	if (room_for((void **)&g->out_off, &r->off, (size_t)n_nodes + 1, sizeof(*g->out_off)) ||
	    room_for((void **)&g->out_dst, &edges, n_edges, sizeof(*g->out_dst)) ||
	    room_for((void **)&g->out_kind, &kinds, n_edges, 1) ||
	    room_for((void **)&g->procs, &r->procs, np, sizeof(*g->procs)) ||
	    room_for((void **)&g->ranks, &r->ranks, nr, sizeof(*g->ranks)) ||
	    room_for((void **)&g->iters, &r->iters, ni, sizeof(*g->iters)) ||
	    room_for((void **)&g->colls, &r->colls, nc, sizeof(*g->colls))) {
		graph_free(g);
		return NULL;
	}
	r->edges = edges < kinds ? edges : kinds;
	memset(g->procs, 0, np * sizeof(*g->procs));
	memset(g->ranks, 0, nr * sizeof(*g->ranks));
	memset(g->iters, 0, ni * sizeof(*g->iters));
	memset(g->colls, 0, nc * sizeof(*g->colls));
	g->n_nodes = n_nodes;
	g->n_edges = n_edges;
	g->n_procs = np;
	g->n_ranks = nr;
	g->n_iters = ni;
	g->n_colls = nc;
	return g;
}

/*
 * The graph the staged tasks become: its tables, and its edges and
 * offsets for n_nodes tasks, which the caller writes whole (csr, or
 * contract's copy); no node columns yet (fill() gives them: allocating
 * them here would hold a second set beside the staged one) and no string
 * table (the writer's moves in).  Not graph_new: its node columns and
 * string table would be made only to be freed (a search makes a graph per
 * candidate and point: 21 allocations and an entropy syscall each).  An
 * empty graph given its arrays by reshell().
 */
static struct graph *shell(const struct gw *w, uint32_t n_nodes, uint32_t n_edges, uint32_t nc)
{
	struct gw_room none = {0};
	struct graph *g = prism_calloc(1, sizeof(*g));
	return g ? reshell(w, g, &none, n_nodes, n_edges, nc) : NULL;
}

/*
 * GW_UNIQUE and dropped tasks: the edges by position (off, dst, kind, over
 * all n staged tasks in the final order), each kept task's row with edges
 * into dropped tasks followed through them, once per target, into *g
 * (allocated here with the edges' count).  kid: final id by position.
 */
static int contract(struct gw *w, const uint32_t *seq, const uint32_t *kid, uint32_t nkeep,
		    const uint32_t *off, const uint32_t *dst, const uint8_t *kind, struct graph **g,
		    uint32_t nc)
{
	size_t n = w->n_nodes;
	uint32_t *stamp = prism_calloc(n + 1, sizeof(*stamp));
	uint32_t *stack = prism_malloc((n + 1) * sizeof(*stack));
	uint32_t *roff = prism_calloc((size_t)nkeep + 1, sizeof(*roff));
	VEC(uint32_t) odst = {0};
	VEC(uint8_t) okind = {0};
	int rc = PRISM_ENOMEM;

	if (!stamp || !stack || !roff)
		goto out;
#define EMIT(d, k)                                                                                 \
	do {                                                                                       \
		if (VEC_PUSH(odst, (d)) || VEC_PUSH(okind, (k)))                                   \
			goto out;                                                                  \
	} while (0)
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = kid[i], mark;
		if (k == GW_NONE)
			continue;
		mark = k + 1;
		for (uint32_t e = off[i]; e < off[i + 1]; e++) {
			uint32_t b = dst[e], top = 0;
			if (kid[b] != GW_NONE) {
				if (stamp[b] != mark && b != i) {
					stamp[b] = mark;
					EMIT(kid[b], kind[e]);
				}
				continue;
			}
			if (stamp[b] == mark)
				continue;
			stamp[b] = mark;
			stack[top++] = b;
			while (top) {
				uint32_t d = stack[--top];
				for (uint32_t f = off[d]; f < off[d + 1]; f++) {
					uint32_t x = dst[f];
					if (stamp[x] == mark || x == i)
						continue;
					stamp[x] = mark;
					if (kid[x] == GW_NONE)
						stack[top++] = x;
					else
						EMIT(kid[x],
						     contracted(w->proc[seq[i]], w->proc[seq[x]],
								w->kind[seq[x]], kind[e]));
				}
			}
		}
		roff[k + 1] = (uint32_t)odst.n;
		if (odst.n >= UINT32_MAX) {
			rc = PRISM_ELIMIT;
			goto out;
		}
	}
#undef EMIT
	*g = shell(w, nkeep, (uint32_t)odst.n, nc);
	if (!*g)
		goto out;
	memcpy((*g)->out_off, roff, ((size_t)nkeep + 1) * sizeof(*roff));
	if (odst.n) {
		memcpy((*g)->out_dst, odst.v, odst.n * sizeof(*odst.v));
		memcpy((*g)->out_kind, okind.v, okind.n);
	}
	rc = 0;
out:
	free(stamp);
	free(stack);
	free(roff);
	VEC_FREE(odst);
	VEC_FREE(okind);
	return rc;
}

/*
 * Table rows with padding go into the graph field by field: graph files
 * hold the rows whole, and the zeroed padding graph_new gives them keeps
 * a file the same from run to run (a row's padding on the stack is not).
 */
_Static_assert(sizeof(struct graph_proc) == 32, "graph_proc changed: teach put_proc");
_Static_assert(sizeof(struct graph_coll) == 40, "graph_coll changed: teach put_coll");

static void put_proc(struct graph_proc *d, const struct graph_proc *s, uint32_t first, uint32_t n)
{
	d->rank = s->rank;
	d->gpu = s->gpu;
	d->pid = s->pid;
	d->tid = s->tid;
	d->first = first;
	d->n = n;
}

static void put_coll(struct graph_coll *d, const struct graph_coll *s, uint32_t node)
{
	d->node = node;
	d->kind = s->kind;
	d->bytes = s->bytes;
	d->group_size = s->group_size;
	d->pg = s->pg;
	d->ranks = s->ranks;
	d->dtype = s->dtype;
	d->seq = s->seq;
}

/* The invariants the fill step promises (debug builds). */
static void check_filled(const struct graph *g)
{
#ifndef NDEBUG
	uint32_t next = 0;
	assert(g->out_off[0] == 0 && g->out_off[g->n_nodes] == g->n_edges);
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		assert(g->out_off[u] <= g->out_off[u + 1]);
		assert(g->proc[u] < g->n_procs);
		assert(g->coll[u] == GW_NONE ||
		       (g->coll[u] < g->n_colls && g->colls[g->coll[u]].node == u));
	}
	for (uint32_t e = 0; e < g->n_edges; e++)
		assert(g->out_dst[e] < g->n_nodes);
	for (uint32_t p = 0; p < g->n_procs; p++) {
		assert(g->procs[p].first == next);
		for (uint32_t u = next; u < next + g->procs[p].n; u++)
			assert(g->proc[u] == p);
		next += g->procs[p].n;
	}
	assert(next == g->n_nodes);
#else
	(void)g;
#endif
}

/*
 * The fill: each staged column becomes g's.  same (and not keep): the
 * final ids are the staged ones, and the column is handed over (trimmed
 * to its length); else it is placed by newid into g's column where it has
 * room (*room elements: a recycled graph's), or a new one, and freed, one
 * column at a time (so the memory of one serves the next) unless the
 * writer keeps it (keep).  *room: the columns' room after.  0 or PRISM_ENOMEM (g
 * then has the columns made so far, the writer the rest).
 */
static int fill(struct gw *w, struct graph *g, int same, int drops, int keep, size_t *room)
{
	size_t n = w->n_nodes, nk = g->n_nodes ? g->n_nodes : 1, had = *room;
	const uint32_t *restrict newid = w->newid;
	int handed = 0;

	/* Each column placed through local restrict pointers: a store into
	 * a uint8_t column may alias anything, and would make the compiler
	 * reload w's pointers at every task. */
#define GW_FILL(type, f)                                                                           \
	if (same && !keep && w->f) {                                                               \
		type *trim = prism_realloc(w->f, (n ? n : 1) * sizeof(type));                      \
		free(g->f);                                                                        \
		g->f = trim ? trim : w->f;                                                         \
		w->f = NULL;                                                                       \
		handed = 1;                                                                        \
	} else {                                                                                   \
		type *col = had >= nk ? g->f : NULL;                                               \
		type *restrict to;                                                                 \
		const type *restrict from = w->f;                                                  \
		assert(had < nk || g->f); /* a recycled graph has every column */                  \
		if (!col) {                                                                        \
			if (!(col = prism_malloc(nk * sizeof(type))))                              \
				return PRISM_ENOMEM;                                               \
			free(g->f);                                                                \
			g->f = col;                                                                \
		}                                                                                  \
		to = col;                                                                          \
		if (drops) {                                                                       \
			for (size_t u = 0; u < n; u++)                                             \
				if (newid[u] != GW_NONE)                                           \
					to[newid[u]] = from[u];                                    \
		} else {                                                                           \
			for (size_t u = 0; u < n; u++)                                             \
				to[newid[u]] = from[u];                                            \
		}                                                                                  \
		if (!keep) {                                                                       \
			free(w->f);                                                                \
			w->f = NULL;                                                               \
		}                                                                                  \
	}
	GRAPH_NODE_COLUMNS(GW_FILL)
#undef GW_FILL
	*room = handed || had < nk ? nk : had;
	w->n_nodes = 0;
	if (!keep)
		w->cap_nodes = 0;
	return 0;
}

/* The kept tasks' collectives into g, in the order of their tasks
 * (by_node) or as staged; cmap (one a staged collective) the scratch
 * that maps the staged index to the final one. */
static void place_colls(const struct gw *w, struct graph *g, uint32_t nkeep, uint32_t nc,
			uint32_t *cmap, int by_node)
{
	(void)nc;
	if (by_node) {
		for (uint32_t v = 0, j = 0; v < nkeep; v++)
			if (g->coll[v] != GW_NONE) {
				assert(j < nc);
				put_coll(&g->colls[j], &w->colls.v[g->coll[v]], v);
				g->coll[v] = j++;
			}
		return;
	}
	for (size_t c = 0, j = 0; c < w->colls.n; c++) {
		uint32_t v = w->newid[w->colls.v[c].node];
		cmap[c] = v == GW_NONE ? GW_NONE : (uint32_t)j;
		if (v != GW_NONE)
			put_coll(&g->colls[j++], &w->colls.v[c], v);
	}
	for (uint32_t v = 0; v < nkeep; v++)
		if (g->coll[v] != GW_NONE)
			g->coll[v] = cmap[g->coll[v]];
}

int gw_finish(struct gw *w, const uint32_t *order, unsigned flags, struct graph **out)
{
	size_t n = w->n_nodes, ne = w->edges.n;
	uint32_t np = (uint32_t)w->procs.n, nkeep = 0, nc = 0, *seq = NULL, *pos = NULL;
	uint32_t *cnt = NULL, *cmap = NULL, *coff = NULL, *cdst = NULL;
	uint8_t *ckind = NULL;
	struct graph *g = NULL;
	struct gw_room room = {0};
	int rc = PRISM_ENOMEM, drops = 0, same = !(flags & GW_UNIQUE), reused = 0;
	int keep = w->keep && n <= GW_KEEP_NODES;

	*out = NULL;
	if (w->rc)
		return w->rc;
	if (n >= UINT32_MAX || ne >= UINT32_MAX)
		return fail(w, PRISM_ELIMIT);
	w->made = NULL;
	if (!keep) {
		free(w->newid);
		w->newid = NULL;
		w->newid_cap = 0;
	}
	/* cnt (np + 1, zeroed) and cmap (a collective each) in the
	 * writer's scratch. */
	if (room_for((void **)&w->newid, &w->newid_cap, n + 1, sizeof(*w->newid)) ||
	    VEC_RESERVE(w->scratch, (size_t)np + 1 + w->colls.n + 1))
		goto out;
	cnt = w->scratch.v;
	cmap = cnt + np + 1;
	memset(cnt, 0, ((size_t)np + 1) * sizeof(*cnt));
	/* The ids stay where the staged order is the final one: given so, or
	 * tasks staged grouped by processor; none dropped. */
	for (uint32_t u = 0; u < n; u++) {
		assert(w->proc[u] < np);
		if (gw_is_dropped(w, u))
			drops = 1;
		if (order ? order[u] != u : u > 0 && w->proc[u] < w->proc[u - 1])
			same = 0;
	}
	if (drops)
		same = 0;
	if (same) {
		for (uint32_t u = 0; u < n; u++) {
			assert(u == 0 || w->proc[u - 1] <= w->proc[u]); /* grouped */
			w->newid[u] = u;
			cnt[w->proc[u]]++;
		}
		nkeep = (uint32_t)n;
	} else if (!order && !drops && !(flags & GW_UNIQUE)) {
		/* Grouped by processor, stably, and nothing dropped or
		 * contracted: each task's final id by a counting sort, the
		 * edges renumbered by it (synth's builds: one pass each). */
		for (uint32_t u = 0; u < n; u++)
			cnt[w->proc[u] + 1]++;
		for (uint32_t p = 0; p < np; p++)
			cnt[p + 1] += cnt[p];
		for (uint32_t u = 0; u < n; u++)
			w->newid[u] = cnt[w->proc[u]]++;
		/* cnt[p] is now where p's tasks end: back to their counts. */
		for (uint32_t p = np; p > 1; p--)
			cnt[p - 1] -= cnt[p - 2];
		for (size_t k = 0; k < ne; k++) {
			w->edges.v[k].src = w->newid[w->edges.v[k].src];
			w->edges.v[k].dst = w->newid[w->edges.v[k].dst];
		}
		nkeep = (uint32_t)n;
	} else {
		pos = prism_malloc((n + 1) * sizeof(*pos));
		seq = order ? NULL : prism_malloc((n + 1) * sizeof(*seq));
		if (!pos || (!order && !seq))
			goto out;
		if (!order) {
			/* Grouped by processor, stably (a counting sort). */
			for (uint32_t u = 0; u < n; u++)
				cnt[w->proc[u] + 1]++;
			for (uint32_t p = 0; p < np; p++)
				cnt[p + 1] += cnt[p];
			for (uint32_t u = 0; u < n; u++)
				seq[cnt[w->proc[u]]++] = u;
			order = seq;
			memset(cnt, 0, ((size_t)np + 1) * sizeof(*cnt));
		}
		/* Positions in the final order, and the final ids of the kept. */
		for (uint32_t i = 0; i < n; i++)
			pos[i] = GW_NONE;
		for (uint32_t i = 0; i < n; i++) {
			uint32_t u = order[i];
			assert(u < n && pos[u] == GW_NONE); /* a permutation */
			assert(i == 0 || w->proc[order[i - 1]] <= w->proc[u]);
			pos[u] = i;
			if (gw_is_dropped(w, u)) {
				w->newid[u] = GW_NONE;
			} else {
				w->newid[u] = nkeep++;
				cnt[w->proc[u]]++;
			}
		}
		for (size_t k = 0; k < ne; k++) {
			w->edges.v[k].src = pos[w->edges.v[k].src];
			w->edges.v[k].dst = pos[w->edges.v[k].dst];
		}
		/* From here pos holds the final id of each position. */
		for (uint32_t i = 0; i < n; i++)
			pos[i] = w->newid[order[i]];
	}
	for (size_t c = 0; c < w->colls.n; c++) {
		assert(w->colls.v[c].node < n && w->coll[w->colls.v[c].node] == c);
		nc += w->newid[w->colls.v[c].node] != GW_NONE;
	}
	if (!drops && !(flags & GW_UNIQUE)) {
		/* Positions are final ids: straight into the graph (the
		 * recycled one where there is one). */
		if ((reused = w->reuse != NULL)) {
			room = w->reuse_room;
			g = reshell(w, w->reuse, &room, nkeep, (uint32_t)ne, nc);
			w->reuse = NULL;
		} else {
			g = shell(w, nkeep, (uint32_t)ne, nc);
		}
		if (!g)
			goto out;
		csr(w->edges.v, ne, nkeep, g->out_off, g->out_dst, g->out_kind);
	} else {
		coff = prism_malloc((n + 1) * sizeof(*coff));
		cdst = prism_malloc((ne + 1) * sizeof(*cdst));
		ckind = prism_malloc(ne + 1);
		if (!coff || !cdst || !ckind)
			goto out;
		csr(w->edges.v, ne, (uint32_t)n, coff, cdst, ckind);
		if ((rc = contract(w, order, pos, nkeep, coff, cdst, ckind, &g, nc)))
			goto out;
		rc = PRISM_ENOMEM;
	}
	if (keep)
		w->edges.n = 0;
	else
		VEC_FREE(w->edges);
	if ((flags & GW_SORT) && sort_rows(g))
		goto out;
	if (fill(w, g, same, drops, keep, &room.nodes))
		goto out;
	place_colls(w, g, nkeep, nc, cmap, flags & GW_COLLS_BY_NODE);
	for (uint32_t p = 0, first = 0; p < np; p++) {
		put_proc(&g->procs[p], &w->procs.v[p], first, cnt[p]);
		first += cnt[p];
	}
	if (w->ranks.n)
		memcpy(g->ranks, w->ranks.v, w->ranks.n * sizeof(*g->ranks));
	if (w->iters.n)
		memcpy(g->iters, w->iters.v, w->iters.n * sizeof(*g->iters));
	{
		/* The writer's table moves in; a recycled graph's old one
		 * goes to the writer (kept: gw_reset empties it), a new
		 * graph has none (shell). */
		struct strtab old = g->st;
		g->st = w->st;
		w->st = old;
		if (!keep)
			strtab_release(&w->st);
	}
	g->t0_ns = w->t0_ns;
	g->meta = w->meta;
	g->stats = w->stats;
	check_filled(g);
	if (keep)
		w->dropped.n = 0;
	else
		VEC_FREE(w->dropped);
	if (!reused) /* a new graph's arrays: at least its counts */
		room = (struct gw_room){room.nodes, (size_t)g->n_nodes + 1,
					g->n_edges, g->n_procs,
					g->n_ranks, g->n_iters,
					g->n_colls};
	w->made = g;
	w->made_room = room;
	*out = g;
	g = NULL;
	rc = 0;
out:
	graph_free(g);
	free(seq);
	free(pos);
	if (!keep)
		VEC_FREE(w->scratch);
	free(coff);
	free(cdst);
	free(ckind);
	return rc ? fail(w, rc) : 0;
}
