/* test_gwrite.c - the graph writer against naive references. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwrite.h"
#include "testutil.h"

/* A writer with np processors (even: host threads, odd: streams). */
static void start(struct gw *w, uint32_t np)
{
	assert_int_equal(gw_init(w), 0);
	for (uint32_t p = 0; p < np; p++) {
		struct graph_proc q = {0, (uint8_t)(p & 1), 1, (int64_t)p, 0, 0};
		assert_int_equal(gw_proc(w, &q, NULL), 0);
	}
	{
		struct graph_rank r;
		memset(&r, 0, sizeof(r));
		assert_int_equal(gw_rank(w, &r), 0);
	}
}

/* Task on p whose duration names it (tests find tasks by it). */
static uint32_t task(struct gw *w, uint32_t p, int64_t dur_ns, uint8_t kind)
{
	struct gw_node n;
	uint32_t id;
	gw_node_init(&n);
	n.proc = p;
	n.dur_ns = dur_ns;
	n.kind = kind;
	assert_int_equal(gw_node(w, &n, &id), 0);
	return id;
}

static struct graph *finish(struct gw *w, const uint32_t *order, unsigned flags)
{
	struct graph *g = NULL;
	struct prism_err err;
	assert_int_equal(gw_finish(w, order, flags, &g), 0);
	assert_non_null(g);
	prism_err_clear(&err);
	if (graph_check(g, &err))
		fail_msg("%s", err.msg);
	return g;
}

/* Tasks staged across processors come out grouped, each processor's in
 * staged order; order edges join them; newid says where each went. */
static void test_group(void **state)
{
	static const uint32_t proc[] = {1, 0, 1, 2, 0, 1, 2, 0};
	struct gw w;
	struct graph *g;
	(void)state;

	start(&w, 3);
	for (uint32_t i = 0; i < 8; i++)
		task(&w, proc[i], 100 + i, proc[i] & 1 ? GN_KERNEL : GN_CPU);
	assert_int_equal(gw_order(&w, NULL), 0);
	g = finish(&w, NULL, 0);
	assert_int_equal(g->n_nodes, 8);
	assert_int_equal(g->n_edges, 5);
	{
		static const int64_t want[] = {101, 104, 107, 100, 102, 105, 103, 106};
		for (uint32_t v = 0; v < 8; v++)
			assert_int_equal(g->dur_ns[v], want[v]);
	}
	for (uint32_t i = 0; i < 8; i++)
		assert_int_equal(g->dur_ns[w.newid[i]], 100 + i);
	assert_int_equal(g->procs[1].first, 3);
	assert_int_equal(g->procs[1].n, 3);
	assert_true(has_edge(g, 0, 1, GE_ORDER) && has_edge(g, 1, 2, GE_ORDER));
	assert_false(has_edge(g, 2, 3, GE_ORDER));
	assert_true(has_edge(g, 6, 7, GE_ORDER));
	graph_free(g);
	gw_release(&w);
}

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* Row u of the reference: the edges from u in push order, then (sort)
 * by (target, kind), then (unique) the first of each target. */
static size_t ref_row(const struct gw_edge *e, size_t ne, uint32_t u, unsigned flags, uint64_t *row)
{
	size_t n = 0, k = 0;
	for (size_t i = 0; i < ne; i++)
		if (e[i].src == u)
			row[n++] = (uint64_t)e[i].dst << 8 | e[i].kind;
	if (flags & GW_SORT)
		for (size_t i = 1; i < n; i++)
			for (size_t j = i; j > 0 && row[j - 1] > row[j]; j--) {
				uint64_t x = row[j];
				row[j] = row[j - 1];
				row[j - 1] = x;
			}
	if (!(flags & (GW_SORT | GW_UNIQUE)))
		return n;
	for (size_t i = 0; i < n; i++) {
		int seen = 0;
		for (size_t j = 0; j < k; j++)
			seen |= row[j] >> 8 == row[i] >> 8;
		if (!seen)
			row[k++] = row[i];
	}
	return k;
}

/* The CSR of random edge lists (rows long enough for the sort's other
 * path too) equals the edge list, row by row, under each option. */
static void test_csr(void **state)
{
	static const unsigned opts[] = {0, GW_SORT, GW_UNIQUE};
	(void)state;
	for (size_t o = 0; o < sizeof(opts) / sizeof(opts[0]); o++)
		for (int round = 0; round < 20; round++) {
			uint32_t nn = 1 + rnd(60), ne = rnd(400);
			struct gw_edge *e = calloc(ne + 1, sizeof(*e));
			uint64_t *row = calloc(ne + 1, sizeof(*row));
			struct gw w;
			struct graph *g;
			start(&w, 1);
			for (uint32_t u = 0; u < nn; u++)
				task(&w, 0, u, GN_KERNEL);
			for (uint32_t k = 0; k < ne; k++) {
				uint32_t a = rnd(nn), b = rnd(nn);
				if (a > b) { /* forward only: the graph stays acyclic */
					uint32_t x = a;
					a = b;
					b = x;
				}
				e[k] =
				    (struct gw_edge){a, b, (uint8_t)(rnd(2) ? GE_EVENT : GE_SYNC)};
				if (rnd(4) == 0)
					e[k].kind |= GE_INFERRED;
				assert_int_equal(gw_edge(&w, a, b, e[k].kind), 0);
				if (a == b)
					e[k].src = UINT32_MAX; /* left out */
			}
			g = finish(&w, NULL, opts[o]);
			for (uint32_t u = 0; u < nn; u++) {
				size_t n = ref_row(e, ne, u, opts[o], row);
				assert_int_equal(g->out_off[u + 1] - g->out_off[u], n);
				for (size_t i = 0; i < n; i++) {
					assert_int_equal(g->out_dst[g->out_off[u] + i],
							 row[i] >> 8);
					assert_int_equal(g->out_kind[g->out_off[u] + i],
							 row[i] & 0xff);
				}
			}
			graph_free(g);
			gw_release(&w);
			free(e);
			free(row);
		}
}

/* A dropped task's edges are contracted: what waited on it waits on what
 * it waited on, with the kind its ends imply. */
static void test_drop(void **state)
{
	struct gw w;
	struct graph *g;
	uint32_t a, b, c, d, x, order[5];
	(void)state;

	start(&w, 2);
	a = task(&w, 0, 1, GN_RUNTIME);
	b = task(&w, 0, 2, GN_CPU); /* dropped */
	c = task(&w, 0, 3, GN_CPU);
	x = task(&w, 1, 4, GN_KERNEL); /* dropped */
	d = task(&w, 1, 5, GN_KERNEL);
	assert_int_equal(gw_edge(&w, a, x, GE_LAUNCH | GE_INFERRED), 0);
	assert_int_equal(gw_edge(&w, x, c, GE_SYNC), 0);
	assert_int_equal(gw_order(&w, NULL), 0); /* a b c, x d */
	assert_int_equal(gw_drop(&w, b), 0);
	assert_int_equal(gw_drop(&w, x), 0);
	assert_true(gw_is_dropped(&w, x) && !gw_is_dropped(&w, d));
	/* The given order: the stream first would not be grouped; as staged. */
	order[0] = a, order[1] = b, order[2] = c, order[3] = x, order[4] = d;
	g = finish(&w, order, 0);
	assert_int_equal(g->n_nodes, 3);
	assert_int_equal(w.newid[b], GW_NONE);
	a = w.newid[a], c = w.newid[c], d = w.newid[d];
	/* a -> x -> c first (its inferred bit), a -> b -> c the same target */
	assert_int_equal(g->out_dst[g->out_off[a]], c);
	assert_true(has_edge(g, a, c, GE_ORDER | GE_INFERRED));
	assert_true(has_edge(g, a, d, GE_EVENT | GE_INFERRED));
	assert_int_equal(g->out_off[a + 1] - g->out_off[a], 2);
	assert_int_equal(g->n_edges, 2);
	graph_free(g);
	gw_release(&w);
}

/* Collectives as pushed, or by node; a dropped task's goes with it. */
static void test_colls(void **state)
{
	for (int by_node = 0; by_node < 2; by_node++) {
		struct gw w;
		struct graph *g;
		struct graph_coll c;
		uint32_t t[4];
		(void)state;
		start(&w, 2);
		for (int i = 0; i < 4; i++)
			t[i] = task(&w, (uint32_t)(1 - i % 2), i, GN_COLL);
		memset(&c, 0, sizeof(c));
		for (int i = 3; i >= 0; i--) {
			c.seq = (uint32_t)i;
			assert_int_equal(gw_coll(&w, t[i], &c), 0);
		}
		assert_int_equal(gw_drop(&w, t[2]), 0);
		g = finish(&w, NULL, by_node ? GW_COLLS_BY_NODE : 0);
		assert_int_equal(g->n_colls, 3);
		{
			/* nodes: t1 t3 (proc 0), t0 (proc 1); pushed: t3 t1 t0 */
			static const uint32_t seq_pushed[] = {3, 1, 0}, seq_node[] = {1, 3, 0};
			for (uint32_t j = 0; j < 3; j++) {
				assert_int_equal(g->colls[j].seq,
						 by_node ? seq_node[j] : seq_pushed[j]);
				assert_int_equal(g->coll[g->colls[j].node], j);
			}
		}
		graph_free(g);
		gw_release(&w);
	}
}

/* The idioms: a launch, a collective, an event wait. */
static void test_idioms(void **state)
{
	struct gw w;
	struct graph *g;
	struct gw_node host, gpu;
	struct graph_coll c;
	uint32_t call, k, rec, wait, call2, ar;
	(void)state;

	start(&w, 3);
	gw_node_init(&host);
	host.proc = 0;
	host.kind = GN_RUNTIME;
	host.rtclass = RT_LAUNCH;
	host.corr = 7;
	gw_node_init(&gpu);
	gpu.proc = 1;
	gpu.kind = GN_KERNEL;
	assert_int_equal(gw_launch(&w, &host, &gpu, &call, &k), 0);
	memset(&c, 0, sizeof(c));
	c.kind = GC_SEND;
	gpu.proc = 2;
	host.corr = 8;
	assert_int_equal(gw_event_wait(&w, &host, 0, 0, 2, GW_NONE, GW_NONE, &rec, &wait), 0);
	assert_int_equal(gw_collective(&w, &host, &gpu, &c, &call2, &ar), 0);
	assert_int_equal(gw_edge(&w, k, ar, GE_EVENT), 0);
	assert_int_equal(gw_order(&w, NULL), 0);
	g = finish(&w, NULL, 0);
	assert_int_equal(g->n_nodes, 6);
	assert_int_equal(g->corr[w.newid[k]], 7);
	assert_int_equal(g->kind[w.newid[ar]], GN_P2P);
	assert_int_equal(g->corr[w.newid[ar]], 8);
	assert_int_equal(g->rtclass[w.newid[rec]], RT_EVENT_RECORD);
	assert_int_equal(g->rtclass[w.newid[wait]], RT_STREAM_WAIT);
	assert_int_equal(g->dur_ns[w.newid[wait]], 2);
	assert_int_equal(g->colls[g->coll[w.newid[ar]]].node, w.newid[ar]);
	assert_true(has_edge(g, w.newid[call], w.newid[k], GE_LAUNCH));
	assert_true(has_edge(g, w.newid[call2], w.newid[ar], GE_LAUNCH));
	assert_true(has_edge(g, w.newid[k], w.newid[ar], GE_EVENT));
	graph_free(g);
	gw_release(&w);
}

/* The first failure sticks: later calls do nothing, gw_finish fails. */
static void test_sticky(void **state)
{
	struct gw w;
	struct graph *g = NULL;
	struct gw_node n;
	uint32_t id;
	(void)state;

	start(&w, 1);
	w.max_nodes = 2;
	task(&w, 0, 1, GN_CPU);
	task(&w, 0, 2, GN_CPU);
	gw_node_init(&n);
	assert_int_equal(gw_node(&w, &n, &id), PRISM_ELIMIT);
	assert_int_equal(id, GW_NONE);
	assert_int_equal(gw_edge(&w, 0, 1, GE_ORDER), PRISM_ELIMIT);
	assert_int_equal(w.edges.n, 0);
	assert_int_equal(gw_intern(&w, "x"), 0);
	assert_int_equal(gw_finish(&w, NULL, 0, &g), PRISM_ELIMIT);
	assert_null(g);
	gw_release(&w);
}

/* Work taken back leaves no trace: the graph is the one staged without
 * it; a row read back is the row staged. */
static void test_truncate(void **state)
{
	struct gw w;
	struct graph *g;
	struct gw_node n;
	struct graph_coll x;
	uint32_t a, b, c, d;
	(void)state;

	memset(&x, 0, sizeof(x));
	start(&w, 2);
	a = task(&w, 0, 10, GN_CPU);
	b = task(&w, 1, 20, GN_KERNEL);
	assert_int_equal(gw_edge(&w, a, b, GE_LAUNCH), 0);
	/* Staged, then taken back: two tasks, their edges and collective. */
	c = task(&w, 1, 30, GN_COLL);
	d = task(&w, 0, 40, GN_CPU);
	assert_int_equal(gw_coll(&w, c, &x), 0);
	assert_int_equal(gw_edge(&w, d, c, GE_LAUNCH), 0);
	assert_int_equal(gw_edge(&w, b, c, GE_ORDER), 0);
	gw_row(&w, c, &n);
	assert_int_equal(n.dur_ns, 30);
	assert_int_equal(n.proc, 1);
	assert_int_equal(n.kind, GN_COLL);
	assert_int_equal(n.coll, 0);
	gw_truncate(&w, c, 1, 0);
	assert_int_equal(w.n_nodes, 2);
	/* Staged again in their place. */
	c = task(&w, 1, 50, GN_KERNEL);
	assert_int_equal(c, 2);
	gw_row(&w, c, &n);
	assert_int_equal(n.coll, GW_NONE);
	assert_int_equal(gw_order(&w, NULL), 0);
	g = finish(&w, NULL, 0);
	assert_int_equal(g->n_nodes, 3);
	assert_int_equal(g->n_colls, 0);
	assert_int_equal(g->n_edges, 2); /* the launch, the stream's order */
	assert_int_equal(g->dur_ns[w.newid[a]], 10);
	assert_int_equal(g->dur_ns[w.newid[b]], 20);
	assert_int_equal(g->dur_ns[w.newid[c]], 50);
	assert_true(has_edge(g, w.newid[a], w.newid[b], GE_LAUNCH));
	assert_true(has_edge(g, w.newid[b], w.newid[c], GE_ORDER));
	graph_free(g);
	gw_release(&w);
}

/* Graph number k of test_kept, staged into w (started or reset): sizes
 * up and down from one to the next (a recycled graph with room to spare,
 * then too little), tasks on random processors, interned names, random
 * edges and order edges, collectives, ranks and iterations; every fifth
 * with a dropped task (gw_finish's other path, where the recycled graph
 * waits for the next). */
static const uint32_t kept_nodes[] = {700, 40, 1500, 1500, 3, 2200, 90, 2200, 1, 600};
static void kept_build(struct gw *w, int k, unsigned *flags)
{
	uint32_t n = kept_nodes[k], np = 2 + (uint32_t)(k * 3 % 7), nr = 1 + (uint32_t)(k % 3);
	char name[32];

	w->t0_ns = 1000 + k;
	w->stats.launch_no_gpu = (uint64_t)k;
	for (uint32_t p = 0; p < np; p++) {
		struct graph_proc q = {p % nr, (uint8_t)(p & 1), 7, (int64_t)(p + k), 0, 0};
		assert_int_equal(gw_proc(w, &q, NULL), 0);
	}
	for (uint32_t r = 0; r < nr; r++) {
		struct graph_rank q;
		memset(&q, 0, sizeof(q));
		q.rank = r;
		q.world_size = nr;
		snprintf(name, sizeof(name), "rank%u.%d", r, k);
		q.path = gw_intern(w, name);
		assert_int_equal(gw_rank(w, &q), 0);
	}
	for (int i = 0; i < k % 4; i++) {
		struct graph_iter it = {0, 0, i, 10 * i, 5};
		assert_int_equal(gw_iter(w, &it), 0);
	}
	for (uint32_t u = 0; u < n; u++) {
		uint32_t p = rnd(np), id;
		struct gw_node x;
		gw_node_init(&x);
		x.proc = p;
		x.dur_ns = 1 + rnd(1000);
		x.start_ns = u;
		x.kind = p & 1 ? (rnd(5) ? GN_KERNEL : GN_COLL) : GN_CPU;
		x.layer = (int32_t)rnd(30) - 1;
		x.corr = u;
		snprintf(name, sizeof(name), "k%u", rnd(50 + (uint32_t)k * 10));
		x.name = gw_intern(w, name);
		assert_int_equal(gw_node(w, &x, &id), 0);
		if (x.kind == GN_COLL) {
			struct graph_coll c;
			memset(&c, 0, sizeof(c));
			c.kind = (uint8_t)rnd(3);
			c.bytes = u;
			c.seq = u;
			c.pg = x.name;
			assert_int_equal(gw_coll(w, id, &c), 0);
		}
	}
	for (uint32_t e = 0; e < 2 * n; e++) { /* forward in staged order: no cycle */
		uint32_t x = rnd(n), y = rnd(n);
		assert_int_equal(gw_edge(w, x < y ? x : y, x < y ? y : x, (uint8_t)rnd(GE_NKINDS)),
				 0);
	}
	assert_int_equal(gw_order(w, NULL), 0);
	*flags = k % 3 == 1 ? GW_SORT : 0;
	if (k % 5 == 4 && n > 1)
		assert_int_equal(gw_drop(w, rnd(n)), 0);
}

/* Graphs a and b the same: every node column, edge, table row (bytes,
 * padding included: graph files hold them whole), string, and stats. */
static void same_graph(const struct graph *a, const struct graph *b)
{
	assert_int_equal(a->n_nodes, b->n_nodes);
	assert_int_equal(a->n_edges, b->n_edges);
	assert_int_equal(a->n_procs, b->n_procs);
	assert_int_equal(a->n_ranks, b->n_ranks);
	assert_int_equal(a->n_iters, b->n_iters);
	assert_int_equal(a->n_colls, b->n_colls);
	assert_int_equal(a->t0_ns, b->t0_ns);
	assert_int_equal(a->meta, b->meta);
	assert_memory_equal(&a->stats, &b->stats, sizeof(a->stats));
#define SAME_COLUMN(type, f) assert_memory_equal(a->f, b->f, a->n_nodes * sizeof(type));
	GRAPH_NODE_COLUMNS(SAME_COLUMN)
#undef SAME_COLUMN
	assert_memory_equal(a->out_off, b->out_off, (a->n_nodes + 1) * sizeof(*a->out_off));
	if (a->n_edges) {
		assert_memory_equal(a->out_dst, b->out_dst, a->n_edges * sizeof(*a->out_dst));
		assert_memory_equal(a->out_kind, b->out_kind, a->n_edges);
	}
	assert_memory_equal(a->procs, b->procs, a->n_procs * sizeof(*a->procs));
	assert_memory_equal(a->ranks, b->ranks, a->n_ranks * sizeof(*a->ranks));
	if (a->n_iters)
		assert_memory_equal(a->iters, b->iters, a->n_iters * sizeof(*a->iters));
	if (a->n_colls)
		assert_memory_equal(a->colls, b->colls, a->n_colls * sizeof(*a->colls));
	assert_int_equal(a->st.n, b->st.n);
	for (uint32_t i = 0; i < a->st.n; i++)
		assert_string_equal(strtab_get(&a->st, i), strtab_get(&b->st, i));
}

/* A writer kept from graph to graph (keep, gw_reset, gw_recycle) makes
 * each graph a new writer makes, field for field and byte for byte, as
 * the graphs grow and shrink; its newid map too.  After the first graph
 * the kept writer's steady state allocates nothing but gw_finish's
 * scratch (its recycled graph refilled: the same address). */
static void test_kept(void **state)
{
	struct gw kept;
	struct graph *prev = NULL;
	uint64_t seed = rng;
	int reused = 0;
	(void)state;

	assert_int_equal(gw_init(&kept), 0);
	kept.keep = 1;
	for (int k = 0; k < (int)(sizeof(kept_nodes) / sizeof(kept_nodes[0])); k++) {
		struct gw w;
		struct graph *a, *b;
		unsigned fa, fb;
		uint64_t at = rng;

		assert_int_equal(gw_init(&w), 0);
		kept_build(&w, k, &fa);
		a = finish(&w, NULL, fa);
		rng = at; /* the same graph again, into the kept writer */
		if (k > 0)
			assert_int_equal(gw_reset(&kept), 0);
		assert_int_equal(kept.keep, 1);
		kept_build(&kept, k, &fb);
		b = finish(&kept, NULL, fb);
		same_graph(a, b);
		for (uint32_t u = 0; u < kept_nodes[k]; u++)
			assert_int_equal(w.newid[u], kept.newid[u]);
		reused += b == prev;
		graph_free(a);
		gw_release(&w);
		gw_recycle(&kept, b); /* filled by the next */
		prev = b;
	}
	/* Every graph but the first and those with a drop (4 and 9: the
	 * other path, a new graph) refilled the one before. */
	assert_int_equal(reused, 7);
	/* Another graph handed to it is freed, not kept (only the writer's
	 * own graph's room is known). */
	{
		struct gw w;
		struct graph *g;
		unsigned f;
		assert_int_equal(gw_init(&w), 0);
		kept_build(&w, 0, &f);
		g = finish(&w, NULL, f);
		gw_recycle(&kept, g);
		assert_null(kept.reuse);
		gw_release(&w);
	}
	/* A graph past GW_KEEP_NODES: its staged arrays freed, the graph
	 * not kept (freed at gw_recycle). */
	{
		struct graph *g;
		struct graph_rank rk;
		memset(&rk, 0, sizeof(rk));
		assert_int_equal(gw_reset(&kept), 0);
		assert_int_equal(gw_proc(&kept, &(struct graph_proc){0}, NULL), 0);
		assert_int_equal(gw_rank(&kept, &rk), 0);
		for (uint32_t u = 0; u <= GW_KEEP_NODES; u++)
			task(&kept, 0, u, GN_CPU);
		g = finish(&kept, NULL, 0);
		assert_int_equal(g->n_nodes, GW_KEEP_NODES + 1);
		assert_int_equal(g->dur_ns[GW_KEEP_NODES], GW_KEEP_NODES);
		assert_int_equal(kept.cap_nodes, 0);
		assert_null(kept.dur_ns);
		gw_recycle(&kept, g);
		assert_null(kept.reuse);
	}
	gw_release(&kept);
	rng = seed;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_group),    cmocka_unit_test(test_csr),
	    cmocka_unit_test(test_drop),     cmocka_unit_test(test_colls),
	    cmocka_unit_test(test_idioms),   cmocka_unit_test(test_sticky),
	    cmocka_unit_test(test_truncate), cmocka_unit_test(test_kept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
