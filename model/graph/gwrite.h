/*
 * gwrite.h - the graph writer: the one way a struct graph is made.
 *
 * A writer stages a graph as tasks and an edge list, then makes the graph
 * in one step (gw_finish):
 *
 *   gw_node(row) -> staged id 0, 1, 2, ...    any processor, any order
 *   gw_edge(src, dst, kind)                    by staged ids, any order
 *   gw_proc / gw_rank / gw_iter / gw_coll      the tables, as pushed
 *   gw_order(order)                            order edges along each processor
 *   gw_drop(id)                                the task leaves; edges through it
 *                                              are contracted
 *   gw_finish(order, flags) -> struct graph, newid[staged id] = final id
 *
 * The staging row (struct gw_node, a task as one value) and the staged
 * columns are generated from GRAPH_NODE_COLUMNS, so a new node column
 * needs no edit here.  At gw_finish the nodes are grouped by processor as
 * graph.h requires -- stably (a processor's tasks keep the order they
 * were staged in), or in an order the caller gives -- and the edge list
 * becomes CSR in one pass: rows by source, each row's edges in the order
 * they were pushed (GW_SORT: by target).  Staged tasks are held in
 * columns, as the graph holds them: where their ids do not move (a
 * builder that makes each processor's tasks together) the columns become
 * the graph's, with no copy; else each is placed in a new column in turn,
 * so only one column is held twice at a time.
 *
 * A writer owns its string table (started empty, copied from a base graph
 * or moved in from the caller) and moves it into the graph; rows and
 * tables hold its string ids.  Errors are sticky: the first failure
 * (PRISM_ENOMEM, PRISM_ELIMIT) is kept in rc, later calls do nothing and
 * return it, and gw_finish fails with it, so emission code may check once
 * at the end.  Nothing allocates per node beyond the amortised growth of
 * flat arrays.
 *
 * Ownership: the writer owns everything staged and the newid map; the
 * graph gw_finish makes is the caller's (graph_free).  gw_release frees
 * the rest, whether gw_finish ran or not.
 *
 * A writer kept from graph to graph (a search makes one per candidate):
 * with keep set, gw_finish leaves the staged columns, edges and newid map
 * allocated, and gw_reset empties the writer for the next graph with
 * their room; the graph itself, handed back with gw_recycle, is filled
 * in place by the next gw_finish, its arrays kept where they have room.
 * Then a build in steady state allocates nothing (up to GW_KEEP_NODES
 * tasks).
 */
#ifndef PRISM_GWRITE_H
#define PRISM_GWRITE_H

#include <assert.h>
#include <stdint.h>

#include "graph.h"
#include "strtab.h"
#include "vec.h"

#define GW_NONE UINT32_MAX

/* One task as staged: graph.h's per-node columns, by name. */
struct gw_node {
#define GW_NODE_FIELD(type, f) type f;
	GRAPH_NODE_COLUMNS(GW_NODE_FIELD)
#undef GW_NODE_FIELD
};

struct gw_edge {
	uint32_t src, dst; /* staged ids */
	uint8_t kind;	   /* enum graph_edge_kind, | GE_INFERRED */
};

struct gw {
	/* The staged tasks, a column each as in struct graph, by staged id:
	 * w->start_ns[u] ... (n_nodes of cap_nodes allocated). */
	uint32_t n_nodes;
	size_t cap_nodes;
#define GW_COLUMN(type, f) type *f;
	GRAPH_NODE_COLUMNS(GW_COLUMN)
#undef GW_COLUMN
	VEC(struct gw_edge) edges;
	VEC(struct graph_proc) procs; /* first and n are set by gw_finish */
	VEC(struct graph_rank) ranks;
	VEC(struct graph_iter) iters;
	VEC(struct graph_coll) colls; /* node: a staged id until gw_finish */
	VEC(uint8_t) dropped;	      /* by staged id (shorter: the rest kept) */
	struct strtab st;
	int64_t t0_ns;		  /* copied into the graph */
	uint32_t meta;		  /* string id, copied into the graph */
	struct graph_stats stats; /* copied into the graph */
	uint32_t max_nodes;	  /* gw_node fails with PRISM_ELIMIT beyond */
	int rc;			  /* the first failure, sticky */
	uint32_t *newid;	  /* after gw_finish: final id of each staged
				   * node, GW_NONE where dropped */
	size_t newid_cap;
	VEC(uint32_t) scratch;		  /* gw_order's and gw_finish's (kept with keep) */
	int keep;			  /* gw_finish keeps the staged arrays (gw_reset) */
	struct graph *reuse;		  /* gw_recycle's: the next gw_finish fills it */
	struct graph *made;		  /* the graph the last gw_finish made (compared only) */
	struct gw_room {		  /* a graph's arrays' room, in elements: the node */
		size_t nodes, off, edges; /* columns, out_off, out_dst and */
		size_t procs, ranks, iters, colls; /* out_kind, the tables */
	} made_room, reuse_room;
};

/* The most tasks a kept writer (keep) keeps room for: a larger graph's
 * staged arrays are freed at gw_finish and the graph itself is not kept by
 * gw_recycle, so that one large build (GPT-3 175B's: a million tasks, ~75
 * bytes each twice over) does not hold its memory for the rest of a
 * sweep.  2^16: a thread holds ~10 MB at most; the default sweep's builds
 * past it are few (2^18 saved 5,100 of its 396,000 allocation calls for
 * 15 MB more a thread; docs/PERFORMANCE.md). */
#define GW_KEEP_NODES (1u << 16)

/* Options of gw_finish. */
enum {
	/* Each row sorted by (target, kind); of edges with the same source and
	 * target only the first (its smallest kind: exact before inferred)
	 * kept. */
	GW_SORT = 1,
	/* Of edges with the same source and target, the first pushed kept
	 * (rows stay in push order).  Implied by dropped tasks. */
	GW_UNIQUE = 2,
	/* The collectives table in the order of its nodes (else as pushed). */
	GW_COLLS_BY_NODE = 4,
};

/* An empty writer: its own string table holding "" only, no limit but
 * 2^32 - 2 tasks.  gw_init_from starts from a base graph: a copy of its
 * string table (its string ids stay valid), its t0_ns, meta and stats;
 * gw_init_move takes the caller's table (st is left empty).  0 or
 * PRISM_ENOMEM (w is then still released safely). */
int gw_init(struct gw *w);
int gw_init_from(struct gw *w, const struct graph *base);
void gw_init_move(struct gw *w, struct strtab *st);
void gw_release(struct gw *w);

/* The writer emptied, as gw_init leaves it (an empty string table, no
 * limit), with the room of its staged arrays and string table kept, and
 * keep and the recycled graph as they were (the last graph made, not
 * recycled by now, is no longer taken).  0 or PRISM_ENOMEM (sticky:
 * gw_finish fails with it). */
int gw_reset(struct gw *w);

/* g handed to the writer for its next gw_finish to fill in place of a new
 * graph (its arrays reused where they have room, grown where not); the
 * writer frees it at gw_release or when another is recycled.  g: the graph
 * the writer's last gw_finish made; any other is freed now. */
void gw_recycle(struct gw *w, struct graph *g);

/* A row with no task in it: every column 0, except corr -1, src and coll
 * GW_NONE, iter, layer and mb -1. */
static inline void gw_node_init(struct gw_node *n)
{
	/* Inline, one store per field: writers make a row per task. */
	*n = (struct gw_node){
	    .corr = -1, .src = GW_NONE, .coll = GW_NONE, .iter = -1, .layer = -1, .mb = -1};
}
/* Node u of g, as a row (string ids: g's; coll GW_NONE: gw_coll attaches
 * one). */
void gw_node_from(struct gw_node *n, const struct graph *g, uint32_t u);

/* Stage a task (its coll GW_NONE: gw_coll attaches one); *id (may be
 * NULL): its staged id, GW_NONE on failure.  0, PRISM_ENOMEM, or
 * PRISM_ELIMIT beyond max_nodes.  Inline where there is room (a writer
 * stages a row per task: a call and the row's trip through memory cost
 * as much as the stores), gw_node_grow_ otherwise. */
int gw_node_grow_(struct gw *w, const struct gw_node *n, uint32_t *id);
static inline int gw_node(struct gw *w, const struct gw_node *n, uint32_t *id)
{
	uint32_t u = w->n_nodes;

	if (w->rc || u >= w->cap_nodes || u >= w->max_nodes)
		return gw_node_grow_(w, n, id);
	assert(n->coll == GW_NONE); /* collectives attach through gw_coll */
#define GW_PUT(type, f) w->f[u] = n->f;
	GRAPH_NODE_COLUMNS(GW_PUT)
#undef GW_PUT
	w->n_nodes = u + 1;
	if (id)
		*id = u;
	return 0;
}

/* Staged task id as a row (its coll: the index gw_coll gave, or
 * GW_NONE). */
void gw_row(const struct gw *w, uint32_t id, struct gw_node *n);

/* Take back what was staged since a mark: the tasks from n_nodes on, the
 * edges from n_edges and the collectives from n_colls (each no more than
 * staged; their drops go with them).  The tables and the strings stay.  A
 * writer that stages work to look at it and then stages it otherwise
 * (synth's folded units) takes the first back. */
void gw_truncate(struct gw *w, uint32_t n_nodes, size_t n_edges, size_t n_colls);

/* Room for n_nodes tasks in all: a writer that knows how many it will
 * stage (or at most: what is never written costs no memory) allocates
 * them once, without growth by doubling, whose moves leave the columns'
 * old copies behind in the heap.  0, or PRISM_ENOMEM without a sticky
 * failure: the writer grows as it goes instead. */
int gw_reserve(struct gw *w, size_t n_nodes);

/* The same for n_edges edges (as staged, order edges included) and
 * n_colls collectives in all.  0, or PRISM_ENOMEM without a sticky
 * failure. */
int gw_reserve_links(struct gw *w, size_t n_edges, size_t n_colls);

/* An edge between staged tasks (an edge from a task to itself is left
 * out).  0 or PRISM_ENOMEM. */
int gw_edge(struct gw *w, uint32_t src, uint32_t dst, uint8_t kind);

/* Order edges, now, between consecutive tasks of each processor: in the
 * order given (all staged ids, grouped by processor, as gw_finish takes
 * it), or NULL: in staged order.  Dropped tasks count: an order edge
 * through one is contracted with the rest.  0 or PRISM_ENOMEM. */
int gw_order(struct gw *w, const uint32_t *order);

/* The string id of s, interned in the writer's table; 0 on failure (rc
 * set: the empty string stands in until gw_finish fails). */
uint32_t gw_intern(struct gw *w, const char *s);

/* Append to the tables; *id (may be NULL): the index.  0 or PRISM_ENOMEM. */
int gw_proc(struct gw *w, const struct graph_proc *p, uint32_t *id);
int gw_rank(struct gw *w, const struct graph_rank *r);
int gw_iter(struct gw *w, const struct graph_iter *it);
/* Collective c (its node field ignored) done by staged task node: the
 * node's coll column names it.  0 or PRISM_ENOMEM. */
int gw_coll(struct gw *w, uint32_t node, const struct graph_coll *c);

/* Task id leaves the graph: edges into it are redirected to what it
 * points to (kind: order on one processor, else sync into a wait, event
 * into GPU work, thread otherwise; inferred if the first edge was); its
 * collective goes with it.  0 or PRISM_ENOMEM. */
int gw_drop(struct gw *w, uint32_t id);
int gw_is_dropped(const struct gw *w, uint32_t id);

/*
 * The shared idioms of the writers that add work.  Each pushes rows the
 * caller describes (processor, labels, names, durations) and the edges
 * that tie them; ids out where not NULL (GW_NONE on failure).
 *
 * gw_launch: GPU task `task` launched by runtime call `call`: the task
 * takes the call's correlation id, and a launch edge joins them.
 */
int gw_launch(struct gw *w, const struct gw_node *call, const struct gw_node *task,
	      uint32_t *call_id, uint32_t *task_id);

/* gw_launch of a collective c (its node field ignored): the task is
 * GN_P2P for send and receive kinds, GN_COLL for the others, and c its
 * row in the collectives table. */
int gw_collective(struct gw *w, const struct gw_node *call, const struct gw_node *task,
		  const struct graph_coll *c, uint32_t *call_id, uint32_t *task_id);

/* A cross-stream wait issued from a host thread: on at's processor and
 * with its labels (and corr), the calls cudaEventRecord (name `record`)
 * and cudaStreamWaitEvent (`wait`), dur_ns each; and where src and dst
 * are not GW_NONE, the event edge from the recorded task src to the
 * waiting stream's task dst (else the caller adds it when dst exists). */
int gw_event_wait(struct gw *w, const struct gw_node *at, uint32_t record, uint32_t wait,
		  int64_t dur_ns, uint32_t src, uint32_t dst, uint32_t *record_id,
		  uint32_t *wait_id);

/*
 * The graph.  order: every staged id once, in the final order, grouped
 * by processor in processor order (dropped tasks included, where they
 * sit); NULL: grouped by processor, stably.  flags: GW_*.  Processors'
 * first and n are set from the order; collectives' nodes and the coll
 * column are renumbered; the string table, t0_ns, meta and stats move
 * into the graph.  The staged columns and edges are released (with keep:
 * emptied); w->newid maps staged ids to final ones.  With a recycled
 * graph (gw_recycle) and nothing dropped or made unique, that graph is
 * filled and returned.  0, w->rc, PRISM_ENOMEM, or PRISM_ELIMIT
 * (2^32 edges or more).
 */
int gw_finish(struct gw *w, const uint32_t *order, unsigned flags, struct graph **out);

#endif
