/* test_graph.c - the invariant checker and the binary graph file. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "graph.h"
#include "gwrite.h"
#include "testutil.h"

/* A 3-node chain on one processor: 0 -> 1 -> 2. */
static struct graph *chain(void)
{
	struct gw w;
	struct graph *g = NULL;
	struct graph_proc q;
	struct graph_rank r;

	memset(&q, 0, sizeof(q));
	memset(&r, 0, sizeof(r));
	assert_int_equal(gw_init(&w), 0);
	assert_int_equal(gw_proc(&w, &q, NULL), 0);
	assert_int_equal(gw_rank(&w, &r), 0);
	for (uint32_t u = 0; u < 3; u++) {
		struct gw_node x;
		gw_node_init(&x);
		x.dur_ns = 10;
		x.start_ns = 10 * u;
		assert_int_equal(gw_node(&w, &x, NULL), 0);
	}
	assert_int_equal(gw_order(&w, NULL), 0);
	assert_int_equal(gw_finish(&w, NULL, 0, &g), 0);
	gw_release(&w);
	assert_int_equal(g->out_dst[0], 1);
	assert_int_equal(g->out_dst[1], 2);
	return g;
}

static void expect_bad(struct graph *g, const char *msg)
{
	struct prism_err err;
	prism_err_clear(&err);
	assert_int_equal(graph_check(g, &err), PRISM_EINTERNAL);
	assert_string_equal(err.msg, msg);
}

static void test_check(void **state)
{
	struct prism_err err;
	struct graph *g = chain();
	(void)state;

	prism_err_clear(&err);
	assert_int_equal(graph_check(g, &err), 0);
	g->out_dst[1] = 0; /* 1 -> 0 closes a cycle */
	expect_bad(g, "graph: a dependency cycle: 2 of 3 nodes can never start");
	g->out_dst[1] = 1;
	expect_bad(g, "graph: node 1 depends on itself");
	g->out_dst[1] = 7;
	expect_bad(g, "graph: edge 1 targets node 7 out of range");
	g->out_dst[1] = 2;
	g->out_off[2] = 0;
	expect_bad(g, "graph: CSR offsets decrease at node 1 (1)");
	g->out_off[2] = 2;
	g->procs[0].n = 2;
	expect_bad(g, "graph: processors cover 2 of 3 nodes");
	g->procs[0].n = 3;
	g->proc[2] = 4;
	expect_bad(g, "graph: node 2 on processor 4 out of range");
	g->proc[2] = 0;
	g->dur_ns[0] = -1;
	expect_bad(g, "graph: node 0 has a negative duration");
	g->dur_ns[0] = 10;
	g->ranks[0].world_size = (int64_t)1 << 40;
	expect_bad(g, "graph: rank 0 says rank 0 of 1099511627776, beyond the 16777216 ranks a "
		      "trace may state");
	graph_free(g);
}

/* A graph file's collective of 2^40 ranks is refused, as the trace reader
 * refuses one (calib.c divided by its size cast to int: 0). */
static void test_group_range(void **state)
{
	struct gw w;
	struct graph *g = NULL;
	struct graph_proc q;
	struct graph_rank r;
	struct graph_coll c;
	struct gw_node x;
	uint32_t u;
	(void)state;

	memset(&q, 0, sizeof(q));
	memset(&r, 0, sizeof(r));
	memset(&c, 0, sizeof(c));
	q.gpu = 1;
	assert_int_equal(gw_init(&w), 0);
	assert_int_equal(gw_proc(&w, &q, NULL), 0);
	assert_int_equal(gw_rank(&w, &r), 0);
	gw_node_init(&x);
	x.kind = GN_COLL;
	x.dur_ns = 10;
	assert_int_equal(gw_node(&w, &x, &u), 0);
	c.kind = GC_ALL_REDUCE;
	c.group_size = GRAPH_MAX_RANKS;
	assert_int_equal(gw_coll(&w, u, &c), 0);
	assert_int_equal(gw_finish(&w, NULL, 0, &g), 0);
	gw_release(&w);
	{
		struct prism_err err;
		prism_err_clear(&err);
		assert_int_equal(graph_check(g, &err), 0);
	}
	g->colls[0].group_size = (int64_t)1 << 40;
	expect_bad(g, "graph: collective 0 has a group of 1099511627776 ranks, beyond the "
		      "16777216 a trace may state");
	graph_free(g);
}

static struct graph *golden(void)
{
	struct kineto_trace tr;
	struct strtab st;
	struct prism_err err;
	struct build_opts o;
	struct graph *g = NULL;

	prism_err_clear(&err);
	build_opts_default(&o);
	assert_int_equal(strtab_init(&st), 0);
	assert_int_equal(kineto_read(TEST_DATA("golden_2023.json"), &st, &tr, &err), 0);
	assert_int_equal(build_graph(&tr, 1, &st, &o, &g, &err), 0);
	kineto_release(&tr);
	strtab_release(&st);
	return g;
}

#define SAME(col, n) assert_memory_equal(a->col, b->col, (size_t)(n) * sizeof(*a->col))

static void test_roundtrip(void **state)
{
	char path[] = "/tmp/prism-test-graph-XXXXXX";
	int fd = mkstemp(path);
	struct prism_err err;
	struct graph *a = golden(), *b = NULL;
	(void)state;

	assert_true(fd >= 0);
	close(fd);
	prism_err_clear(&err);
	assert_int_equal(graph_save(a, path, &err), 0);
	assert_true(graph_file_is(path));
	assert_int_equal(graph_load(path, &b, &err), 0);
	assert_int_equal(a->n_nodes, b->n_nodes);
	assert_int_equal(a->n_edges, b->n_edges);
	assert_int_equal(a->t0_ns, b->t0_ns);
	SAME(start_ns, a->n_nodes);
	SAME(dur_ns, a->n_nodes);
	SAME(wait_ns, a->n_nodes);
	SAME(name, a->n_nodes);
	SAME(kind, a->n_nodes);
	SAME(out_off, a->n_nodes + 1);
	SAME(out_dst, a->n_edges);
	SAME(out_kind, a->n_edges);
	SAME(procs, a->n_procs);
	SAME(iters, a->n_iters);
	assert_int_equal(a->st.n, b->st.n);
	for (uint32_t i = 0; i < a->st.n; i++)
		assert_string_equal(strtab_get(&a->st, i), strtab_get(&b->st, i));
	assert_memory_equal(&a->stats, &b->stats, sizeof(a->stats));
	graph_free(b);

	/* One flipped byte in the payload: the checksum refuses the file. */
	{
		FILE *f = fopen(path, "r+b");
		int c;
		assert_non_null(f);
		fseek(f, 200, SEEK_SET);
		c = fgetc(f);
		fseek(f, 200, SEEK_SET);
		fputc(c ^ 0x40, f);
		fclose(f);
		prism_err_clear(&err);
		assert_int_equal(graph_load(path, &b, &err), PRISM_EFORMAT);
		assert_null(b);
	}
	/* Truncated: the header's sizes no longer match. */
	assert_int_equal(truncate(path, 100), 0);
	prism_err_clear(&err);
	assert_int_equal(graph_load(path, &b, &err), PRISM_EFORMAT);
	assert_non_null(strstr(err.msg, "graph file is 100 bytes, its header describes"));
	unlink(path);
	graph_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_check),
	    cmocka_unit_test(test_group_range),
	    cmocka_unit_test(test_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
