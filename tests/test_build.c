/*
 * test_build.c - golden graphs of hand-made traces, worked out by hand.
 *
 * tests/data/golden_2023.json (current format): a cuda_sync stream-wait
 * edge, a cudaGraphLaunch owning two kernels, a backward thread, a device
 * synchronise.  tests/data/golden_2021.json (2021 format, string tids):
 * a blocking DtoH copy, an NCCL kernel with its size from Input Dims, a
 * nested driver launch, and edges inferred from timing.
 * tests/data/share_2022.json: a kernel that waited for another stream's
 * kernel to drain, and an event wait across disagreeing stream clocks.
 * tests/data/waitfull_2025.json, copy_2025.json, collorder_2025.rank*.json:
 * waits by the host's call order, copies where they ran, collectives
 * paired by kind and size (issue 36).
 * tests/data/accum_2024.json: two microbatches accumulated in one step,
 * found without ranges.  tests/data/bridge_2024.json and rocm_2024.json:
 * below.  tests/data/retime_2024.json: a GEMM and a kernel without shapes
 * re-timed for a wider model and another GPU (test_retime_gemm).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "calib.h"
#include "dtype.h"
#include "edit.h"
#include "hw.h"
#include "infer.h"
#include "kperf.h"
#include "llm.h"
#include "metrics.h"
#include "reshape.h"
#include "sim.h"
#include "testutil.h"

struct want_node {
	int kind, proc;
	int64_t start_ns, dur_ns, wait_ns;
	const char *name;
};

struct want_edge {
	uint32_t src, dst;
	int kind;
};

static struct graph *load(const char **paths, int n, const struct build_opts *o)
{
	struct kineto_trace tr[4];
	struct strtab st;
	struct prism_err err;
	struct graph *g = NULL;

	prism_err_clear(&err);
	assert_int_equal(strtab_init(&st), 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(kineto_read(paths[i], &st, &tr[i], &err), 0);
	if (build_graph(tr, (size_t)n, &st, o, &g, &err) != 0)
		print_error("%s\n", err.msg);
	assert_non_null(g);
	assert_int_equal(graph_check(g, &err), 0);
	for (int i = 0; i < n; i++)
		kineto_release(&tr[i]);
	strtab_release(&st);
	return g;
}

static void check_graph(const struct graph *g, const struct want_node *wn, size_t nn,
			const struct want_edge *we, size_t ne)
{
	assert_int_equal(g->n_nodes, nn);
	for (uint32_t u = 0; u < nn; u++) {
		if (g->kind[u] != wn[u].kind || (int)g->proc[u] != wn[u].proc ||
		    g->start_ns[u] != wn[u].start_ns || g->dur_ns[u] != wn[u].dur_ns ||
		    g->wait_ns[u] != wn[u].wait_ns ||
		    strcmp(strtab_get(&g->st, g->name[u]), wn[u].name) != 0) {
			print_error(
			    "node %u: got %s p%u %lld+%lld w%lld '%s', want %s p%d %lld+%lld "
			    "w%lld '%s'\n",
			    u, graph_node_kind_name(g->kind[u]), g->proc[u],
			    (long long)g->start_ns[u], (long long)g->dur_ns[u],
			    (long long)g->wait_ns[u], strtab_get(&g->st, g->name[u]),
			    graph_node_kind_name(wn[u].kind), wn[u].proc, (long long)wn[u].start_ns,
			    (long long)wn[u].dur_ns, (long long)wn[u].wait_ns, wn[u].name);
			fail();
		}
	}
	/* Edges: exactly the expected set (CSR rows are sorted by target). */
	assert_int_equal(g->n_edges, ne);
	for (size_t k = 0; k < ne; k++) {
		int found = 0;
		for (uint32_t e = g->out_off[we[k].src]; e < g->out_off[we[k].src + 1]; e++)
			if (g->out_dst[e] == we[k].dst && g->out_kind[e] == we[k].kind)
				found = 1;
		if (!found) {
			print_error("missing edge %u -> %u (%s%s)\n", we[k].src, we[k].dst,
				    graph_edge_kind_name(we[k].kind),
				    we[k].kind & GE_INFERRED ? ", inferred" : "");
			fail();
		}
	}
}

#define O GE_ORDER
#define L GE_LAUNCH
#define S GE_SYNC
#define E GE_EVENT
#define T GE_THREAD
#define I GE_INFERRED

static void test_golden_2023(void **state)
{
	static const struct want_node wn[] = {
	    {GN_CPU, 0, 0, 10000, 0, "aten::mm"},
	    {GN_RUNTIME, 0, 10000, 10000, 0, "cudaLaunchKernel"},
	    {GN_CPU, 0, 20000, 10000, 0, "aten::mm"},
	    {GN_RUNTIME, 0, 30000, 5000, 0, "cudaEventRecord"},
	    {GN_CPU, 0, 35000, 5000, 0, "aten::mm"},
	    {GN_RUNTIME, 0, 40000, 5000, 0, "cudaStreamWaitEvent"},
	    {GN_CPU, 0, 45000, 5000, 0, "aten::mm"},
	    {GN_RUNTIME, 0, 50000, 5000, 0, "cudaLaunchKernel"},
	    {GN_CPU, 0, 55000, 55000, 0, "ProfilerStep#1"},
	    {GN_RUNTIME, 0, 110000, 10000, 0, "cudaGraphLaunch"},
	    {GN_CPU, 0, 120000, 60000, 0, "ProfilerStep#1"},
	    {GN_RUNTIME, 0, 180000, 10000, 0, "cudaLaunchKernel"},
	    {GN_CPU, 0, 190000, 40000, 0, "ProfilerStep#1"},
	    {GN_RUNTIME, 0, 230000, 0, 0, "cudaDeviceSynchronize"},
	    /* waits for k_bwd (ends at 280 us): 50 us waiting, 20 us own cost */
	    {GN_WAIT, 0, 280000, 20000, 50000, "cudaDeviceSynchronize"},
	    {GN_CPU, 1, 195000, 5000, 0, "MmBackward0"},
	    {GN_RUNTIME, 1, 200000, 5000, 0, "cudaLaunchKernel"},
	    {GN_CPU, 1, 205000, 10000, 0, ""},
	    {GN_KERNEL, 2, 25000, 40000, 0, "k_mm"},
	    {GN_KERNEL, 2, 125000, 5000, 0, "g1"},
	    {GN_KERNEL, 2, 131000, 5000, 0, "g2"},
	    {GN_KERNEL, 2, 192000, 3000, 0, "k_loss"},
	    {GN_KERNEL, 2, 210000, 70000, 0, "k_bwd"},
	    {GN_KERNEL, 3, 70000, 20000, 0, "k_add"},
	};
	static const struct want_edge we[] = {
	    {0, 1, O},	     {1, 2, O},	  {2, 3, O},   {3, 4, O},   {4, 5, O},	 {5, 6, O},
	    {6, 7, O},	     {7, 8, O},	  {8, 9, O},   {9, 10, O},  {10, 11, O}, {11, 12, O},
	    {12, 13, O},     {13, 14, O}, {15, 16, O}, {16, 17, O}, {18, 19, O}, {19, 20, O},
	    {20, 21, O},     {21, 22, O}, {1, 18, L},  {7, 23, L},  {9, 19, L},	 {9, 20, L},
	    {11, 21, L},     {16, 22, L}, {18, 23, E}, /* cuda_sync: k_add waits for k_mm's event */
	    {22, 14, S},     {23, 14, S},	       /* device sync: last task of each stream */
	    {11, 15, T | I}, /* the backward thread starts after main's launch */
	};
	const char *paths[] = {TEST_DATA("golden_2023.json")};
	struct build_opts o;
	struct graph *g;
	(void)state;

	build_opts_default(&o);
	g = load(paths, 1, &o);
	check_graph(g, wn, sizeof(wn) / sizeof(wn[0]), we, sizeof(we) / sizeof(we[0]));
	assert_int_equal(g->t0_ns, 100000);
	assert_int_equal(g->n_procs, 4);
	assert_int_equal(g->procs[1].tid, 2);
	assert_int_equal(g->procs[3].tid, 20);
	assert_int_equal(g->n_iters, 1);
	assert_int_equal(g->iters[0].step, 1);
	assert_int_equal(g->iters[0].dur_ns, 300000);
	for (uint32_t u = 0; u < g->n_nodes; u++)
		assert_int_equal(g->iter[u], 0);
	assert_int_equal(g->stats.cuda_sync_used, 1);
	assert_int_equal(g->stats.rt_class[RT_GRAPH_LAUNCH], 1);
	assert_string_equal(strtab_get(&g->st, g->ranks[0].device), "NVIDIA H100 80GB HBM3");
	graph_free(g);

	/* Without thread inference the inferred edge is gone, nothing else. */
	o.infer_threads = 0;
	g = load(paths, 1, &o);
	assert_int_equal(g->n_edges, sizeof(we) / sizeof(we[0]) - 1);
	assert_int_equal(g->stats.inferred[GE_THREAD], 0);
	graph_free(g);

	/* With a 5 us lag cap: g1 (launched at 210 us, started at 225 us) keeps
	 * its 15 us whole, as a CUDA graph's task; k_loss (launched at 280 us,
	 * started at 292 us) keeps 5 of its 12 us. */
	build_opts_default(&o);
	o.lag_cap_ns = 5000;
	g = load(paths, 1, &o);
	assert_int_equal(g->flags[19] & NF_GRAPH, NF_GRAPH);
	assert_int_equal(g->flags[20] & NF_GRAPH, NF_GRAPH);
	assert_int_equal(g->flags[21] & NF_GRAPH, 0);
	assert_int_equal(g->lag_ns[19], 15000);
	assert_int_equal(g->lag_ns[20], 1000);
	assert_int_equal(g->lag_ns[21], 5000);
	assert_int_equal(g->stats.graph_gaps, 1);
	assert_int_equal(g->stats.graph_gap_ns, 15000);
	graph_free(g);
}

static void test_golden_2021(void **state)
{
	static const struct want_node wn[] = {
	    {GN_CPU, 0, 0, 20000, 0, "aten::copy_"},
	    {GN_RUNTIME, 0, 20000, 0, 0, "cudaMemcpy"},
	    /* the DtoH copy ends at 50 us: 30 us waiting, 10 us own cost */
	    {GN_WAIT, 0, 50000, 10000, 30000, "cudaMemcpy"},
	    {GN_CPU, 0, 60000, 20000, 0, "ProfilerStep#3"},
	    {GN_RUNTIME, 0, 80000, 8000, 0, "cudaLaunchKernel"},
	    {GN_CPU, 0, 88000, 7000, 0, "c10d::allreduce_"},
	    {GN_RUNTIME, 0, 95000, 5000, 0, "cudaLaunchKernel"},
	    {GN_CPU, 0, 100000, 30000, 0, "ProfilerStep#3"},
	    {GN_RUNTIME, 0, 130000, 10000, 0, "cudaLaunchKernel"}, /* cuLaunchKernel merged */
	    {GN_CPU, 0, 140000, 20000, 0, "ProfilerStep#3"},
	    {GN_RUNTIME, 0, 160000, 0, 0, "cudaStreamSynchronize"},
	    /* waits for the NCCL kernel (ends at 165 us): 5 us, then 25 us own */
	    {GN_WAIT, 0, 165000, 25000, 5000, "cudaStreamSynchronize"},
	    {GN_CPU, 0, 190000, 10000, 0, ""},
	    {GN_MEMCPY, 1, 30000, 20000, 0, "Memcpy DtoH (Device -> Pageable)"},
	    {GN_KERNEL, 1, 90000, 30000, 0, "k_a"},
	    {GN_KERNEL, 1, 145000, 5000, 0, "k_b"},
	    {GN_COLL, 2, 125000, 40000, 0, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"},
	};
	static const struct want_edge we[] = {
	    {0, 1, O},	     {1, 2, O},	  {2, 3, O},   {3, 4, O},   {4, 5, O},
	    {5, 6, O},	     {6, 7, O},	  {7, 8, O},   {8, 9, O},   {9, 10, O},
	    {10, 11, O},     {11, 12, O}, {13, 14, O}, {14, 15, O}, {1, 13, L},
	    {4, 14, L},	     {6, 16, L},  {8, 15, L},  {13, 2, S}, /* a blocking copy waits for its own copy */
	    {16, 11, S | I}, /* which stream the sync waited on: from timing */
	    {14, 16, E | I}, /* NCCL starts 25 us late, right as k_a ends */
	};
	const char *paths[] = {TEST_DATA("golden_2021.json")};
	struct build_opts o;
	struct graph *g;
	(void)state;

	build_opts_default(&o);
	g = load(paths, 1, &o);
	check_graph(g, wn, sizeof(wn) / sizeof(wn[0]), we, sizeof(we) / sizeof(we[0]));
	assert_int_equal(g->procs[0].tid, 50);
	assert_int_equal(g->procs[1].tid, 7); /* "stream 7" */
	assert_int_equal(g->stats.nested_runtime, 1);
	assert_int_equal(g->n_colls, 1);
	assert_int_equal(g->colls[0].node, 16);
	assert_int_equal(g->colls[0].kind, GC_ALL_REDUCE);
	assert_int_equal(g->colls[0].bytes, 4096); /* [[1024]] floats */
	assert_int_equal(g->colls[0].seq, 0);
	assert_int_equal(g->iters[0].step, 3);
	/* GPU work carries its launching op's shapes as written. */
	assert_string_equal(strtab_get(&g->st, g->op_dims[13]), "[[1024], [1024], []]");
	assert_string_equal(strtab_get(&g->st, g->op[13]), "aten::copy_");
	assert_string_equal(strtab_get(&g->st, g->op_dims[16]), "[[1024]]");
	assert_string_equal(strtab_get(&g->st, g->op_types[16]), "[\"float\"]");
	assert_string_equal(strtab_get(&g->st, g->op_dims[14]), ""); /* ProfilerStep: none */
	graph_free(g);

	o.infer_events = 0;
	o.infer_sync = 0;
	g = load(paths, 1, &o);
	assert_int_equal(g->n_edges, sizeof(we) / sizeof(we[0]) - 2);
	/* The unexplained sync keeps its traced time as its own cost. */
	assert_int_equal(g->dur_ns[11], 30000);
	assert_int_equal(g->wait_ns[11], 0);
	graph_free(g);
}

static void test_two_ranks(void **state)
{
	const char *paths[] = {TEST_DATA("golden_2021.json"), TEST_DATA("golden_2023.json")};
	struct build_opts o;
	struct graph *g;
	(void)state;

	build_opts_default(&o);
	g = load(paths, 2, &o);
	/* golden_2023 claims rank 0; golden_2021 has none: the first free, 1. */
	assert_int_equal(g->n_ranks, 2);
	assert_int_equal(g->ranks[0].rank, 0);
	assert_int_equal(g->ranks[1].rank, 1);
	assert_int_equal(g->n_nodes, 24 + 17);
	assert_int_equal(g->n_edges, 30 + 21);
	assert_int_equal(g->procs[0].rank, 0);
	assert_int_equal(g->procs[4].rank, 1);
	graph_free(g);
}

static void test_duplicate_rank(void **state)
{
	const char *path = TEST_DATA("golden_2023.json");
	struct kineto_trace tr[2];
	struct strtab st;
	struct prism_err err;
	struct build_opts o;
	struct graph *g = NULL;
	(void)state;

	prism_err_clear(&err);
	build_opts_default(&o);
	assert_int_equal(strtab_init(&st), 0);
	assert_int_equal(kineto_read(path, &st, &tr[0], &err), 0);
	assert_int_equal(kineto_read(path, &st, &tr[1], &err), 0);
	assert_int_equal(build_graph(tr, 2, &st, &o, &g, &err), PRISM_EFORMAT);
	assert_null(g);
	assert_string_equal(err.msg,
			    PRISM_SOURCE_DIR "/tests/data/golden_2023.json: rank 0 is "
					     "also the rank of " PRISM_SOURCE_DIR
					     "/tests/data/golden_2023.json (give each file "
					     "its rank with --rank)");
	kineto_release(&tr[0]);
	kineto_release(&tr[1]);
	strtab_release(&st);
}

static void test_all_to_all_by_op(void **state)
{
	/* A SendRecv kernel under "nccl:all_to_all" (2023: record_param_comms
	 * has no "Collective name"): all-to-all, 6144 floats per rank, a group
	 * of the world's 8. */
	const char *paths[] = {TEST_DATA("alltoall_2023.json")};
	struct build_opts o;
	struct graph *g;
	(void)state;
	build_opts_default(&o);
	g = load(paths, 1, &o);
	assert_int_equal(g->n_colls, 1);
	assert_int_equal(g->kind[g->colls[0].node], GN_P2P);
	assert_int_equal(g->colls[0].kind, GC_ALL_TO_ALL);
	assert_int_equal(g->stats.coll_kernels[GC_SEND_RECV], 1);
	assert_int_equal(g->colls[0].bytes, 6144 * 4);
	assert_int_equal(g->colls[0].group_size, 8);
	graph_free(g);
}

static void test_infer_repeat(void **state)
{
	/* x A B C A B C A B C y: three blocks of three from 1. */
	static const uint32_t s1[] = {9, 1, 2, 3, 1, 2, 3, 1, 2, 3, 8};
	/* Two runs: (1 2 3) x2 covers 6, (4 5 6 7) x3 covers 12. */
	static const uint32_t s2[] = {1, 2, 3, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7};
	/* A block whose last op also precedes the run: the run starts one
	 * earlier and the blocks come out rotated (C A B). */
	static const uint32_t s3[] = {3, 1, 2, 3, 1, 2, 3, 9};
	/* The same op four times, then a two-name block: no block has three
	 * distinct names. */
	static const uint32_t s4[] = {5, 5, 5, 5, 1, 2, 1, 2, 1, 2};
	/* A block of 4 with two names repeated inside (A B A C): period 4,
	 * not 2. */
	static const uint32_t s5[] = {1, 2, 1, 3, 1, 2, 1, 3, 1, 2, 1, 3};
	static const struct {
		const uint32_t *s;
		size_t n, first, period, count;
	} cases[] = {
	    {s1, 11, 1, 3, 3}, {s2, 18, 6, 4, 3}, {s3, 8, 0, 3, 2},
	    {s4, 10, 0, 0, 0}, {s5, 12, 0, 4, 3}, {s1, 3, 0, 0, 0}, /* too short */
	};
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct infer_repeat r;
		assert_int_equal(infer_repeat(cases[i].s, NULL, cases[i].n, &r), 0);
		if (r.first != cases[i].first || r.period != cases[i].period ||
		    r.count != cases[i].count)
			print_error(
			    "case %zu: %zu blocks of %zu from %zu, want %zu of %zu from %zu\n", i,
			    r.count, r.period, r.first, cases[i].count, cases[i].period,
			    cases[i].first);
		assert_int_equal(r.first, cases[i].first);
		assert_int_equal(r.period, cases[i].period);
		assert_int_equal(r.count, cases[i].count);
	}
}

/* The layer and phase of each GPU kernel of g, in node order (one stream:
 * its order). */
static void kernel_layers(const struct graph *g, int32_t *layer, uint8_t *phase, size_t *n)
{
	*n = 0;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->kind[u] == GN_KERNEL) {
			layer[*n] = g->layer[u];
			phase[(*n)++] = g->phase[u];
		}
}

static void test_inferred_layers(void **state)
{
	const char *paths[] = {TEST_DATA("layers_2024.json")};
	/* Stream order: emb, 9 block kernels (layers 0 0 0 1 1 1 2 2 2), loss,
	 * loss backward, 9 block backward kernels (2 2 2 1 1 1 0 0 0), emb
	 * backward, optimizer. */
	static const int32_t want_layer[] = {-1, 0, 0, 0, 1, 1, 1, 2, 2, 2,  -1, -1,
					     2,	 2, 2, 1, 1, 1, 0, 0, 0, -1, -1};
	static const uint8_t want_phase[] = {
	    PH_FORWARD,	 PH_FORWARD,  PH_FORWARD,  PH_FORWARD,	PH_FORWARD,  PH_FORWARD,
	    PH_FORWARD,	 PH_FORWARD,  PH_FORWARD,  PH_FORWARD,	PH_FORWARD,  PH_BACKWARD,
	    PH_BACKWARD, PH_BACKWARD, PH_BACKWARD, PH_BACKWARD, PH_BACKWARD, PH_BACKWARD,
	    PH_BACKWARD, PH_BACKWARD, PH_BACKWARD, PH_BACKWARD, PH_OPTIMIZER};
	int32_t layer[64];
	uint8_t phase[64];
	size_t n;
	struct build_opts o;
	struct graph *g;
	(void)state;

	build_opts_default(&o);
	g = load(paths, 1, &o);
	kernel_layers(g, layer, phase, &n);
	assert_int_equal(n, 23);
	for (size_t i = 0; i < n; i++) {
		if (layer[i] != want_layer[i] || phase[i] != want_phase[i])
			print_error("kernel %zu: layer %d phase %s, want %d %s\n", i, layer[i],
				    graph_phase_name(phase[i]), want_layer[i],
				    graph_phase_name(want_phase[i]));
		assert_int_equal(layer[i], want_layer[i]);
		assert_int_equal(phase[i], want_phase[i]);
	}
	assert_int_equal(g->stats.ann_found[GRAPH_ANN_LAYER], GRAPH_ANN_INFERRED);
	assert_int_equal(g->stats.ann_found[GRAPH_ANN_PHASE], GRAPH_ANN_INFERRED);
	assert_int_equal(g->stats.ann_found[GRAPH_ANN_MB], 0);
	assert_int_equal(g->stats.layer_ops, 3);
	graph_free(g);

	/* Without inference: no layers, phases still from PyTorch's names. */
	o.infer_layers = 0;
	g = load(paths, 1, &o);
	kernel_layers(g, layer, phase, &n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(layer[i], -1);
	assert_int_equal(g->stats.ann_found[GRAPH_ANN_LAYER], 0);
	graph_free(g);
}

/* The replayed iteration time of g, in ns, ignoring the edges skip names
 * (SIM_SKIP_*). */
static int64_t replay_skip_ns(const struct graph *g, unsigned skip)
{
	struct sim *s = sim_new(g);
	struct sim_opts so;
	struct prism_err err;
	struct metrics_iter *its = NULL;
	long n;
	int64_t t;

	assert_non_null(s);
	sim_opts_default(&so);
	so.skip = skip;
	assert_int_equal(sim_run(s, &so, &err), 0);
	n = metrics_iterations(s, &its);
	assert_int_equal(n, 1);
	t = its[0].predicted_ns;
	free(its);
	sim_free(s);
	return t;
}

static int64_t replay_ns(const struct graph *g)
{
	return replay_skip_ns(g, 0);
}

/* tests/data/share_2022.json: no cuda_sync records.  k_big (stream 7,
 * 125-625 us, running since before k_next was launched) holds the GPU;
 * k_next (stream 20, launched at 130 us) begins at 560 us as k_big drains:
 * a shared-GPU edge.  The copy on stream 22 begins at 655 us, 5 us before
 * k_next ends (stream clocks disagree): an event edge.  Replayed, k_next
 * waits for k_big's end (625 us) and the copy for k_next's (725 us): the
 * device synchronise returns at 745 + 5 us own cost, 70 us late, and the
 * 600 us step takes 670 us.  Without the shared-GPU edge k_next runs from
 * its launch (130-230 us), the copy after it, the synchronise waits for
 * k_big (625 + 5 us): 50 us early, 550 us. */
static void test_share_edges(void **state)
{
	const char *paths[] = {TEST_DATA("share_2022.json")};
	struct build_opts o;
	struct graph *g;
	(void)state;

	build_opts_default(&o);
	g = load(paths, 1, &o);
	assert_int_equal(g->n_nodes, 13);
	assert_string_equal(strtab_get(&g->st, g->name[10]), "k_big");
	assert_string_equal(strtab_get(&g->st, g->name[11]), "k_next");
	assert_true(has_edge(g, 10, 11, GE_SHARE | GE_INFERRED));
	assert_true(has_edge(g, 11, 12, GE_EVENT | GE_INFERRED));
	assert_int_equal(g->stats.inferred[GE_SHARE], 1);
	assert_int_equal(g->stats.inferred[GE_EVENT], 1);
	assert_int_equal(g->iters[0].dur_ns, 600000);
	assert_int_equal(replay_ns(g), 670000);
	assert_int_equal(replay_skip_ns(g, SIM_SKIP_SHARE), 550000);
	graph_free(g);

	/* --no-infer-share: no shared-GPU edge (the event edge stays). */
	o.infer_share = 0;
	g = load(paths, 1, &o);
	assert_int_equal(g->stats.inferred[GE_SHARE], 0);
	assert_true(has_edge(g, 11, 12, GE_EVENT | GE_INFERRED));
	graph_free(g);
}

/* Layers x k as a graph edit (reshape.h): every found layer's runs k
 * times; 0 on a graph without layers is refused. */
static int layers_x(const struct graph *g, int k, struct graph **out, struct reshape_stats *st,
		    struct prism_err *err)
{
	struct reshape_plan p;
	int32_t copies[64];
	int32_t nl = 0;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->layer[u] + 1 > nl)
			nl = g->layer[u] + 1;
	for (int32_t l = 0; l < nl && l < 64; l++)
		copies[l] = k;
	reshape_plan_init(&p);
	p.layer_copies = copies;
	p.n_layers = nl;
	return reshape_apply(g, &p, out, st, err);
}

static void test_layer_edit(void **state)
{
	const char *paths[] = {TEST_DATA("layers_2024.json")};
	/* Each layer's runs twice in place: layer l's copies are layers 2l and
	 * 2l + 1, forward in order, backward from the top layer's. */
	static const int32_t want_layer[] = {-1, 0, 0, 0, 1, 1,	 1,  2, 2, 2, 3, 3,  3, 4,
					     4,	 4, 5, 5, 5, -1, -1, 4, 4, 4, 5, 5,  5, 2,
					     2,	 2, 3, 3, 3, 0,	 0,  0, 1, 1, 1, -1, -1};
	int32_t layer[64];
	uint8_t phase[64];
	size_t n;
	struct build_opts o;
	struct reshape_stats st;
	struct prism_err err;
	struct graph *g, *e2, *e3;
	(void)state;

	build_opts_default(&o);
	g = load(paths, 1, &o);
	/* GPU-bound: the stream runs from 20 us to the optimizer's end at
	 * 2050 us, the synchronise returns 10 us later, the step ends 10 us
	 * after that: 2070 us, as traced. */
	assert_int_equal(replay_ns(g), 2070000);

	/* x2: 18 more kernels of 100 us on the saturated stream. */
	prism_err_clear(&err);
	assert_int_equal(layers_x(g, 2, &e2, &st, &err), 0);
	assert_int_equal(graph_check(e2, &err), 0);
	kernel_layers(e2, layer, phase, &n);
	assert_int_equal(n, 41);
	for (size_t i = 0; i < n; i++) {
		if (layer[i] != want_layer[i])
			print_error("kernel %zu: layer %d, want %d\n", i, layer[i], want_layer[i]);
		assert_int_equal(layer[i], want_layer[i]);
	}
	/* Groups: the three layers' forward and backward. */
	assert_int_equal(st.groups, 6);
	assert_int_equal(e2->n_nodes, g->n_nodes + st.nodes_added);
	assert_int_equal(replay_ns(e2), 2070000 + 1800000);

	/* x3 */
	assert_int_equal(layers_x(g, 3, &e3, &st, &err), 0);
	assert_int_equal(graph_check(e3, &err), 0);
	assert_int_equal(replay_ns(e3), 2070000 + 3600000);
	/* x1 is the base. */
	graph_free(e3);
	assert_int_equal(layers_x(g, 1, &e3, &st, &err), 0);
	assert_int_equal(e3->n_nodes, g->n_nodes);
	assert_int_equal(replay_ns(e3), 2070000);
	graph_free(e3);
	/* x0 for the middle layer: 6 kernels of 100 us fewer. */
	{
		struct reshape_plan p;
		int32_t copies[3] = {1, 0, 1};
		reshape_plan_init(&p);
		p.layer_copies = copies;
		p.n_layers = 3;
		assert_int_equal(reshape_apply(g, &p, &e3, &st, &err), 0);
		assert_int_equal(graph_check(e3, &err), 0);
		assert_int_equal(replay_ns(e3), 2070000 - 600000);
		graph_free(e3);
	}
	graph_free(e2);
	graph_free(g);

	/* No layers: a clear refusal. */
	o.infer_layers = 0;
	g = load(paths, 1, &o);
	assert_int_equal(layers_x(g, 2, &e2, &st, &err), PRISM_EARG);
	assert_null(e2);
	assert_string_equal(err.msg, "the trace has no layers found to repeat or drop");
	graph_free(g);
}

/* tests/data/accum_2024.json: one step accumulating two microbatches, no
 * prism:: ranges.  Each: embedding, three linear/gelu/dropout blocks and a
 * loss on the main thread, the backward on the autograd thread, all on one
 * stream (blocks' kernels 100 us, embedding/loss 50 us); then the
 * optimizer.  The backward ops form two passes (the second microbatch's
 * forward runs between them): microbatches 0 and 1, each with its forward,
 * its backward and its three layers. */
static void test_accumulation(void **state)
{
	const char *paths[] = {TEST_DATA("accum_2024.json")};
	static const int32_t fwd_layer[] = {-1, 0, 0, 0, 1, 1, 1, 2, 2, 2, -1};
	static const int32_t bwd_layer[] = {-1, 2, 2, 2, 1, 1, 1, 0, 0, 0, -1};
	int32_t layer[64];
	uint8_t phase[64];
	size_t n, i = 0;
	struct build_opts o;
	struct reshape_stats st;
	struct prism_err err;
	struct graph *g, *e2;
	(void)state;

	build_opts_default(&o);
	g = load(paths, 1, &o);
	kernel_layers(g, layer, phase, &n);
	assert_int_equal(n, 45);
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		int32_t m, l;
		int ph;
		if (g->kind[u] != GN_KERNEL)
			continue;
		m = i < 44 ? (int32_t)(i / 22) : -1;
		ph = i == 44 ? PH_OPTIMIZER : i % 22 < 11 ? PH_FORWARD : PH_BACKWARD;
		l = i == 44 ? -1 : i % 22 < 11 ? fwd_layer[i % 22] : bwd_layer[i % 22 - 11];
		if (g->mb[u] != m || g->phase[u] != ph || g->layer[u] != l)
			print_error("kernel %zu: mb %d %s layer %d, want mb %d %s layer %d\n", i,
				    g->mb[u], graph_phase_name(g->phase[u]), g->layer[u], m,
				    graph_phase_name(ph), l);
		assert_int_equal(g->mb[u], m);
		assert_int_equal(g->phase[u], ph);
		assert_int_equal(g->layer[u], l);
		i++;
	}
	assert_int_equal(g->stats.ann_found[GRAPH_ANN_MB], GRAPH_ANN_INFERRED);
	assert_int_equal(g->stats.layer_ops, 3);
	/* GPU-bound, replayed as traced: 4070 us.  Layers x2 adds three
	 * blocks' forward and backward kernels (600 us each) per microbatch:
	 * 3600 us. */
	assert_int_equal(replay_ns(g), 4070000);
	prism_err_clear(&err);
	assert_int_equal(layers_x(g, 2, &e2, &st, &err), 0);
	assert_int_equal(graph_check(e2, &err), 0);
	/* Three layers' forward and backward in each of the two microbatches. */
	assert_int_equal(st.groups, 12);
	assert_int_equal(replay_ns(e2), 4070000 + 3600000);
	graph_free(e2);
	graph_free(g);
}

/* An add's time for add_acc: 1 ns a kilobyte (6291 ns for a 1024 x 1024
 * bf16 gradient: 3 x 2 MiB moved). */
static int64_t dp_ns(const void *ctx, double bytes)
{
	(void)ctx;
	return 10000 + (int64_t)bytes;
}

/* A plan adding data-parallel gradient all-reduces over 2 ranks, a bucket
 * of `params` a layer at grad_bytes a gradient, one extra bucket of the
 * first/last parameters (the embedding's), timed by dp_ns, 1 us host
 * costs. */
static void dp_plan(struct reshape_plan *p, double params, double grad_bytes, const double *first,
		    const double *last)
{
	reshape_plan_init(p);
	p->add_dp = 1;
	p->dp = 2;
	p->dp_layer_params = params;
	p->dp_bucket_params = params;
	p->dp_grad_bytes = grad_bytes;
	p->dp_first = first;
	p->dp_last = last;
	p->n_dp_extra = 1;
	p->dp_coll_ns = dp_ns;
	p->event_ns = p->launch_ns = p->cpu_op_ns = 1000;
}

/* Gradient all-reduces added to tests/data/accum_2024.json (the backward
 * on the autograd thread), one bucket a layer and the embedding's
 * gradients after the bottom layer's in a bucket of their own: both of
 * the bottom layer's buckets launch from the autograd thread, after its
 * last task of the layer (the second once took another thread's number
 * while it sat in the autograd thread's order: a graph graph_check
 * refuses). */
static void test_dp_added(void **state)
{
	const char *paths[] = {TEST_DATA("accum_2024.json")};
	static const double first[1] = {0}, last[1] = {1};
	struct reshape_plan p;
	struct reshape_stats st;
	struct build_opts o;
	struct prism_err err;
	struct graph *g, *e;
	uint32_t n_ar = 0, host = UINT32_MAX;
	(void)state;

	build_opts_default(&o);
	g = load(paths, 1, &o);
	dp_plan(&p, 1, 1, first, last);
	prism_err_clear(&err);
	assert_int_equal(reshape_apply(g, &p, &e, &st, &err), 0);
	assert_int_equal(graph_check(e, &err), 0);
	assert_int_equal(st.colls_added, 4); /* three layers, and the embedding's */
	for (uint32_t u = 0; u < e->n_nodes; u++) {
		uint32_t launch = UINT32_MAX;
		if (e->kind[u] != GN_COLL)
			continue;
		n_ar++;
		for (uint32_t v = 0; v < e->n_nodes; v++)
			if (has_edge(e, v, u, GE_LAUNCH))
				launch = v;
		assert_true(launch != UINT32_MAX);
		if (host == UINT32_MAX)
			host = e->proc[launch];
		assert_int_equal(e->proc[launch], host);
		assert_int_equal(e->phase[launch], PH_BACKWARD);
	}
	assert_int_equal(n_ar, 4);
	graph_free(e);
	graph_free(g);
}

/* tests/data/accum_2024.json with every op's "Input type" `type` (its
 * ops record shapes alone), written to a temporary file at path. */
static void accum_typed(const char *type, char *path)
{
	FILE *in = fopen(TEST_DATA("accum_2024.json"), "r"), *out;
	char *buf, *at, *from;
	long len;
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_non_null(in);
	assert_non_null(out = fdopen(fd, "w"));
	fseek(in, 0, SEEK_END);
	len = ftell(in);
	rewind(in);
	assert_non_null(buf = malloc((size_t)len + 1));
	assert_int_equal(fread(buf, 1, (size_t)len, in), (size_t)len);
	buf[len] = '\0';
	for (from = buf; (at = strstr(from, "\"Input Dims\"")); from = at) {
		fwrite(from, 1, (size_t)(at - from), out);
		fprintf(out, "\"Input type\": [\"%s\"], ", type);
		fputs("\"Input Dims\"", out);
		at += strlen("\"Input Dims\"");
	}
	fputs(from, out);
	free(buf);
	fclose(in);
	fclose(out);
}

/*
 * The added gradient all-reduces labelled with the dtype they move (as
 * prism synth's, dtype.h dtype_coll_name), so that a timeline's elements
 * (bytes / the label's size) are the gradients': buckets of 1,000
 * parameters a layer (three layers) and the embedding's 500 after the
 * bottom layer's.  An fp32 trace (accum_2024.json's ops in "float"),
 * dp_grad_bytes 4 (fp32 main gradients): four all-reduces "Float" of
 * 4,000, 4,000, 4,000 and 2,000 bytes (1,000, 1,000, 1,000 and 500
 * elements; were "BFloat16", twice the elements), the f32 sum kernel.  At
 * 2 bytes a gradient: "Half" where the trace's activations are c10::Half,
 * else "BFloat16" (the fp32 trace too: bf16 gradients of an fp32 trace
 * are a plan's, not the trace's, dtype).
 */
static void test_dp_added_dtypes(void **state)
{
	static const struct {
		const char *type; /* NULL: as traced, no types */
		double gb;
		const char *label, *kernel;
	} c[] = {{"float", 4, "Float", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"},
		 {"float", 2, "BFloat16", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"},
		 {"c10::Half", 2, "Half", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"},
		 {NULL, 2, "BFloat16", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"}};
	static const double first[1] = {0}, last[1] = {500};
	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char path[] = "/tmp/prism-dpdtype-XXXXXX";
		const char *paths[1] = {path};
		struct reshape_plan p;
		struct reshape_stats st;
		struct build_opts o;
		struct prism_err err;
		struct graph *g, *e;
		double elems = 0, half;
		int n = 0, h;
		if (c[i].type)
			accum_typed(c[i].type, path);
		else
			paths[0] = TEST_DATA("accum_2024.json");
		build_opts_default(&o);
		g = load(paths, 1, &o);
		if (c[i].type)
			unlink(path);
		edit_activation_type(g, &half, &h);
		assert_true(half == (c[i].type && strcmp(c[i].type, "float") == 0 ? 4 : 2));
		dp_plan(&p, 1000, c[i].gb, first, last);
		prism_err_clear(&err);
		assert_int_equal(reshape_apply(g, &p, &e, &st, &err), 0);
		assert_int_equal(st.colls_added, 4);
		for (uint32_t k = 0; k < e->n_colls; k++) {
			const struct graph_coll *x = &e->colls[k];
			const char *dt = strtab_get(&e->st, x->dtype);
			int64_t es = dtype_bytes(dt, DTYPE_COLL);
			assert_string_equal(dt, c[i].label);
			assert_string_equal(strtab_get(&e->st, e->name[x->node]), c[i].kernel);
			assert_true(es == c[i].gb && x->bytes % es == 0);
			assert_true(x->bytes / es == 1000 || (x->bytes / es == 500 && n++ == 0));
			elems += (double)(x->bytes / es);
		}
		assert_true(elems == 3500 && n == 1);
		graph_free(e);
		graph_free(g);
	}
}

static int64_t acc_kb_ns(const void *ctx, double bytes)
{
	(void)ctx;
	return (int64_t)(bytes / 1000);
}

static int64_t acc_zero_ns(const void *ctx, double bytes)
{
	(void)ctx;
	(void)bytes;
	return 0;
}

/* Microbatches 1 -> 3 of g, adding accumulations with acc_ns (or not). */
static int mb_x3(const struct graph *g, int64_t (*acc_ns)(const void *, double), struct graph **out,
		 struct reshape_stats *st, struct prism_err *err)
{
	static const int32_t copies[1] = {3};
	struct reshape_plan p;
	reshape_plan_init(&p);
	p.mb_copies = copies;
	p.n_mbs = 1;
	p.add_acc = acc_ns != NULL;
	p.acc_ns = acc_ns;
	return reshape_apply(g, &p, out, st, err);
}

/* The trace at path: its taken-gradient tasks (each the 6 us op), and
 * the accumulations microbatches 1 -> 3 add. */
static void acc_case(const char *path, uint32_t tasks, uint64_t adds)
{
	const char *paths[] = {path};
	struct build_opts o;
	struct reshape_stats st;
	struct prism_err err;
	struct graph *g, *e;
	uint32_t n = 0;

	build_opts_default(&o);
	g = load(paths, 1, &o);
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->kind[u] == GN_CPU && !strcmp(strtab_get(&g->st, g->op[u]), GRAPH_ACC_OP)) {
			assert_int_equal(g->dur_ns[u], 6000);
			n++;
		}
	assert_int_equal(n, tasks);
	prism_err_clear(&err);
	assert_int_equal(mb_x3(g, acc_kb_ns, &e, &st, &err), 0);
	assert_int_equal(st.accs_added, adds);
	graph_free(e);
	graph_free(g);
}

/* tests/data/stealgrad_2024.json: one microbatch (a forward kernel, a
 * backward kernel, an SGD step) whose backward thread's AccumulateGrad
 * took the parameter's gradient, launching nothing (a 1024 x 1024 bf16
 * weight, 6 us of host time).  Ingest keeps that op as a task of its own;
 * repeated to three microbatches, the two copies add the gradient: after
 * each, an add's launch on the backward thread and its kernel after that
 * copy's k_bwd on the stream, of acc_ns(3 x 1024 x 1024 x 2 bytes).  With
 * no time for the added tasks the replay is the edit's without them (they
 * add no waiting).  addgrad_2024.json: the same accumulation launching an
 * add itself (zero_grad(set_to_none=False)): no task of its own, nothing
 * added (the copies repeat its add).  hookgrad_2024.json: the gradient
 * taken, then added by a hook on the same thread (Megatron-LM's
 * main_grad.add_ of that shape): the task is kept, nothing added.
 * nestgrad_2024.json: another such op inside the first (hostile input):
 * one task, the outer one, the same two adds. */
static void test_accumulation_added(void **state)
{
	const char *paths[] = {TEST_DATA("stealgrad_2024.json")};
	const char *paths2[] = {TEST_DATA("addgrad_2024.json")};
	const char *paths3[] = {TEST_DATA("hookgrad_2024.json")};
	const char *paths4[] = {TEST_DATA("nestgrad_2024.json")};
	struct build_opts o;
	struct reshape_stats st;
	struct prism_err err;
	struct graph *g, *e, *e0;
	uint32_t acc = UINT32_MAX, n_acc = 0, n_add = 0;
	(void)state;

	build_opts_default(&o);
	g = load(paths, 1, &o);
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->kind[u] == GN_CPU && !strcmp(strtab_get(&g->st, g->op[u]), GRAPH_ACC_OP)) {
			acc = u;
			n_acc++;
		}
	assert_int_equal(n_acc, 1);
	assert_int_equal(g->start_ns[acc], 152000);
	assert_int_equal(g->dur_ns[acc], 6000);
	assert_string_equal(strtab_get(&g->st, g->op_dims[acc]), "[[1024, 1024]]");
	prism_err_clear(&err);
	assert_int_equal(mb_x3(g, acc_kb_ns, &e, &st, &err), 0);
	assert_int_equal(graph_check(e, &err), 0);
	assert_int_equal(st.accs_added, 2);
	for (uint32_t u = 0; u < e->n_nodes; u++) {
		uint32_t launch = UINT32_MAX;
		if (strcmp(strtab_get(&e->st, e->name[u]), GRAPH_ACC_KERNEL))
			continue;
		n_add++;
		assert_int_equal(e->kind[u], GN_KERNEL);
		assert_int_equal(e->dur_ns[u], 6291);
		/* After a k_bwd on its stream, launched from the thread of the
		 * accumulation. */
		assert_true(u > e->procs[e->proc[u]].first);
		assert_string_equal(strtab_get(&e->st, e->name[u - 1]), "k_bwd");
		for (uint32_t v = 0; v < e->n_nodes; v++)
			if (has_edge(e, v, u, GE_LAUNCH))
				launch = v;
		assert_true(launch != UINT32_MAX);
		assert_int_equal(e->rtclass[launch], RT_LAUNCH);
		assert_int_equal(e->procs[e->proc[launch]].tid, 2);
	}
	assert_int_equal(n_add, 2);
	graph_free(e);
	assert_int_equal(mb_x3(g, acc_zero_ns, &e, &st, &err), 0);
	assert_int_equal(st.accs_added, 2);
	assert_int_equal(mb_x3(g, NULL, &e0, &st, &err), 0);
	assert_int_equal(st.accs_added, 0);
	assert_int_equal(replay_ns(e), replay_ns(e0));
	graph_free(e);
	graph_free(e0);
	graph_free(g);

	acc_case(paths2[0], 0, 0);
	acc_case(paths3[0], 1, 0);
	acc_case(paths4[0], 1, 2);
}

/* tests/data/modules_2024.json: layers_2024.json with layer 1's block on
 * other shapes (no run of identical blocks) and module-name ranges as
 * with_modules records them (issue 19: Hugging Face, Megatron core,
 * torchtitan and DeepSpeed layers are modules named ...Layer_N or
 * ...Block_N).  LlamaDecoderLayer_0..2 are the layers (not LlamaModel_0,
 * not MLPBlock_0..2 nested in them, as many, not FooBlock_0 with one
 * instance: vLLM's gpt-oss has 36 TransformerBlocks around 36
 * MLPBlocks); the backward follows by sequence number, as for inferred
 * layers; layers x 2 edits. */
static void test_module_layers(void **state)
{
	const char *paths[] = {TEST_DATA("modules_2024.json")};
	static const int32_t want_layer[] = {-1, 0, 0, 0, 1, 1, 1, 2, 2, 2,  -1, -1,
					     2,	 2, 2, 1, 1, 1, 0, 0, 0, -1, -1};
	int32_t layer[64];
	uint8_t phase[64];
	size_t n;
	struct build_opts o;
	struct reshape_stats st;
	struct prism_err err;
	struct graph *g, *e;
	(void)state;

	build_opts_default(&o);
	g = load(paths, 1, &o);
	kernel_layers(g, layer, phase, &n);
	assert_int_equal(n, 23);
	for (size_t i = 0; i < n; i++) {
		if (layer[i] != want_layer[i])
			print_error("kernel %zu: layer %d, want %d\n", i, layer[i], want_layer[i]);
		assert_int_equal(layer[i], want_layer[i]);
	}
	assert_int_equal(g->stats.ann_found[GRAPH_ANN_LAYER],
			 GRAPH_ANN_INFERRED | GRAPH_ANN_MODULES);
	prism_err_clear(&err);
	assert_int_equal(layers_x(g, 2, &e, &st, &err), 0);
	assert_int_equal(graph_check(e, &err), 0);
	assert_int_equal(e->stats.nodes[GN_KERNEL], g->stats.nodes[GN_KERNEL] + 18);
	graph_free(e);
	graph_free(g);

	/* Without layer inference: none (module names are inference too). */
	o.infer_layers = 0;
	g = load(paths, 1, &o);
	kernel_layers(g, layer, phase, &n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(layer[i], -1);
	graph_free(g);
}

/* tests/data/bridge_2024.json: two layers (prism::layer ranges, no run
 * description) whose kernels k_a and k_b on stream 7 have, between them,
 * s1 and s2 on stream 20 launched by another thread (outside every
 * layer), joined by inferred event edges k_a -> s1 and s2 -> k_b.  Issue
 * 19: layers x k made a cycle there (s1 after the last copy of k_a, k_b's
 * first copy after s2), as on a public DLRM trace; s1 and s2 lie on a path
 * from the layer back into it, so they repeat with it. */
static void test_layer_bridges(void **state)
{
	const char *paths[] = {TEST_DATA("bridge_2024.json")};
	struct build_opts o;
	struct reshape_plan p;
	struct reshape_stats st;
	struct prism_err err;
	struct graph *g, *e;
	int32_t copies[2] = {2, 2};
	(void)state;

	build_opts_default(&o);
	g = load(paths, 1, &o);
	assert_int_equal(g->stats.inferred[GE_EVENT], 4);
	reshape_plan_init(&p);
	p.layer_copies = copies;
	p.n_layers = 2;
	prism_err_clear(&err);
	if (reshape_apply(g, &p, &e, &st, &err))
		print_error("%s\n", err.msg);
	assert_non_null(e);
	assert_int_equal(graph_check(e, &err), 0);
	/* The four side kernels repeat with their layers (their launches,
	 * made before any layer ran, do not): every kernel twice. */
	assert_int_equal(st.bridges, 4);
	assert_int_equal(e->n_nodes, g->n_nodes + st.nodes_added);
	assert_int_equal(e->stats.nodes[GN_KERNEL], 2 * g->stats.nodes[GN_KERNEL]);
	graph_free(e);
	graph_free(g);
}

/* tests/data/rocm_2024.json: a ROCm 6.2 trace; its HIP runtime events
 * give the stream as a hex string ("0x0"), and it launches with
 * hipExtModuleLaunchKernel, hipModuleLaunchKernel, hipExtLaunchKernel and
 * hipLaunchKernel (issue 19: the string was refused, module launches were
 * not launches). */
static void test_rocm(void **state)
{
	const char *paths[] = {TEST_DATA("rocm_2024.json")};
	struct build_opts o;
	struct graph *g;
	(void)state;

	build_opts_default(&o);
	g = load(paths, 1, &o);
	assert_int_equal(g->stats.rt_class[RT_LAUNCH], 4);
	assert_int_equal(g->stats.edges[GE_LAUNCH], 4);
	assert_int_equal(g->stats.nodes[GN_KERNEL], 4);
	assert_int_equal(g->stats.rt_class[RT_DEVICE_SYNC], 1);
	graph_free(g);
}

/* tests/data/mismatch_2024.rank{0,1}.json: the only collective on one
 * process group is an all-reduce on rank 0 and an all-gather launched 300
 * us later on rank 1.  Issue 19: matched by (group, sequence) they waited
 * for each other; they must not.  Issue 36: collectives are paired by kind
 * and size, so the two are not even offered as a pair (no instance mixes
 * kinds: n_mismatched 0), each its own. */
static void test_mismatched_collectives(void **state)
{
	const char *paths[] = {TEST_DATA("mismatch_2024.rank0.json"),
			       TEST_DATA("mismatch_2024.rank1.json")};
	struct build_opts o;
	struct sim_opts so;
	struct prism_err err;
	struct graph *g;
	struct sim *sm;
	(void)state;

	build_opts_default(&o);
	g = load(paths, 2, &o);
	assert_int_equal(g->n_colls, 2);
	assert_non_null(sm = sim_new(g));
	sim_opts_default(&so);
	prism_err_clear(&err);
	assert_int_equal(sim_run(sm, &so, &err), 0);
	assert_int_equal(sm->n_mismatched, 0);
	assert_int_not_equal(g->colls[0].seq, g->colls[1].seq);
	for (uint32_t c = 0; c < g->n_colls; c++) {
		uint32_t u = g->colls[c].node;
		/* Each starts after its own launch (rank 0's at 12 us, rank 1's
		 * at 312 us; the lag is kept up to 50 us), not at the other's. */
		int64_t launch = g->procs[g->proc[u]].rank == 0 ? 12000 : 312000;
		assert_true(sm->start_ns[u] - launch <= 60000);
		assert_true(sm->start_ns[u] >= launch);
	}
	sim_free(sm);
	graph_free(g);
}

/*
 * Issue 36, item 4: waits from the host's call order (gen_issue36.py).
 * tests/data/waitfull_2025.json, no cuda_sync records: k_src (stream 20,
 * 15-300 us) is recorded (cudaEventRecord at 16 us, after its launch),
 * gemm_big (stream 7, 30-475 us) then fills the GPU, stream 24 waits for
 * the event (cudaStreamWaitEvent at 30 us) and k_wait, launched at 40 us,
 * starts at 430 us: 130 us after k_src ended, beyond any timing tolerance
 * (10-30 us), 45 us before gemm_big ends.  The call order ties k_src to
 * k_wait (an event edge, inferred); k_wait, ready at 300 us, then waited
 * for gemm_big to drain (a shared-GPU edge).  Timing alone found neither
 * (k_src ended 130 us before, gemm_big 45 us after: outside +-10 us; and
 * gemm_big began after k_wait's launch).  The device synchronise waits
 * for the last task of each stream (420 of its 440 us).
 */
static void test_wait_full_gpu(void **state)
{
	const char *paths[] = {TEST_DATA("waitfull_2025.json")};
	static const struct want_node wn[] = {
	    {GN_CPU, 0, 0, 10000, 0, "ProfilerStep#1"},
	    {GN_RUNTIME, 0, 10000, 5000, 0, "cudaLaunchKernel"},
	    {GN_CPU, 0, 15000, 1000, 0, "ProfilerStep#1"},
	    {GN_RUNTIME, 0, 16000, 2000, 0, "cudaEventRecord"},
	    {GN_CPU, 0, 18000, 2000, 0, "ProfilerStep#1"},
	    {GN_RUNTIME, 0, 20000, 5000, 0, "cudaLaunchKernel"},
	    {GN_CPU, 0, 25000, 5000, 0, "ProfilerStep#1"},
	    {GN_RUNTIME, 0, 30000, 3000, 0, "cudaStreamWaitEvent"},
	    {GN_CPU, 0, 33000, 7000, 0, "ProfilerStep#1"},
	    {GN_RUNTIME, 0, 40000, 5000, 0, "cudaLaunchKernel"},
	    {GN_CPU, 0, 45000, 15000, 0, "ProfilerStep#1"},
	    {GN_RUNTIME, 0, 60000, 0, 0, "cudaDeviceSynchronize"},
	    {GN_WAIT, 0, 480000, 20000, 420000, "cudaDeviceSynchronize"},
	    {GN_CPU, 0, 500000, 100000, 0, ""},
	    {GN_KERNEL, 1, 30000, 445000, 0, "gemm_big"},
	    {GN_KERNEL, 2, 15000, 285000, 0, "k_src"},
	    {GN_KERNEL, 3, 430000, 50000, 0, "k_wait"},
	};
	static const struct want_edge we[] = {
	    {0, 1, O},	 {1, 2, O},	  {2, 3, O},
	    {3, 4, O},	 {4, 5, O},	  {5, 6, O},
	    {6, 7, O},	 {7, 8, O},	  {8, 9, O},
	    {9, 10, O},	 {10, 11, O},	  {11, 12, O},
	    {12, 13, O}, {1, 15, L},	  {5, 14, L},
	    {9, 16, L},	 {14, 12, S},	  {15, 12, S},
	    {16, 12, S}, {15, 16, E | I}, {14, 16, GE_SHARE | I},
	};
	struct build_opts o;
	struct graph *g;
	(void)state;

	build_opts_default(&o);
	g = load(paths, 1, &o);
	check_graph(g, wn, sizeof(wn) / sizeof(wn[0]), we, sizeof(we) / sizeof(we[0]));
	graph_free(g);
	/* --no-infer-events: no call-order edge; k_wait's whole delay from
	 * its launch is put on gemm_big (running since before it was
	 * launched), and an edit that shortens k_src moves nothing. */
	o.infer_events = 0;
	g = load(paths, 1, &o);
	assert_int_equal(g->stats.inferred[GE_EVENT], 0);
	assert_false(has_edge(g, 15, 16, GE_EVENT | GE_INFERRED));
	assert_true(has_edge(g, 14, 16, GE_SHARE | GE_INFERRED));
	graph_free(g);
}

/* The node named `name` (the first), or UINT32_MAX. */
static uint32_t named(const struct graph *g, const char *name)
{
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (strcmp(strtab_get(&g->st, g->name[u]), name) == 0)
			return u;
	return UINT32_MAX;
}

/*
 * tests/data/evpair_2025.json: two events interleaved, as FSDP2 records a
 * gather's event as it issues it.  gather_a (stream 7, 20-100 us) is
 * recorded at 10 us, gather_b (stream 8, 20-300 us) at 20 us; stream 9
 * waits for the first event at 25 us (use_a, 105-155 us) and for the
 * second at 35 us (use_b, 305-355 us).  The cuda_sync records name each
 * wait's record: gather_a -> use_a and gather_b -> use_b, exact.
 * evpair_nosync_2025.json is the same trace without them: the trace names
 * no event, and by position the first wait takes the latest record before
 * it, gather_b's -- which ends 195 us after use_a began: a pair the timing
 * contradicts, left out (use_a's start then ties it to gather_a by timing
 * alone, inferred); the second wait, with no record since the first,
 * takes the task launched last on another stream before it, gather_b.
 */
static void test_event_pairs(void **state)
{
	const char *exact[] = {TEST_DATA("evpair_2025.json")};
	const char *bypos[] = {TEST_DATA("evpair_nosync_2025.json")};
	struct build_opts o;
	struct graph *g;
	uint32_t ga, gb, ua, ub;
	(void)state;

	build_opts_default(&o);
	g = load(exact, 1, &o);
	ga = named(g, "gather_a"), gb = named(g, "gather_b");
	ua = named(g, "use_a"), ub = named(g, "use_b");
	assert_true(has_edge(g, ga, ua, GE_EVENT));
	assert_true(has_edge(g, gb, ub, GE_EVENT));
	assert_false(has_edge(g, gb, ua, GE_EVENT));
	assert_int_equal(g->stats.edges[GE_EVENT], 2);
	assert_int_equal(g->stats.inferred[GE_EVENT], 0);
	assert_int_equal(g->stats.waits_exact, 2);
	assert_int_equal(g->stats.waits_by_position, 0);
	assert_int_equal(g->stats.waits_position_contradicted, 0);
	graph_free(g);

	g = load(bypos, 1, &o);
	ga = named(g, "gather_a"), gb = named(g, "gather_b");
	ua = named(g, "use_a"), ub = named(g, "use_b");
	assert_int_equal(g->stats.waits_exact, 0);
	assert_int_equal(g->stats.waits_by_position, 1);
	assert_int_equal(g->stats.waits_position_contradicted, 1);
	assert_true(has_edge(g, gb, ub, GE_EVENT | GE_INFERRED));
	assert_false(has_edge(g, gb, ua, GE_EVENT | GE_INFERRED));
	assert_true(has_edge(g, ga, ua, GE_EVENT | GE_INFERRED));
	assert_int_equal(g->stats.edges[GE_EVENT], 0);
	graph_free(g);
}

/*
 * tests/data/evsync_2025.json: k1 (stream 7, 20-100 us) is recorded at 12
 * us; k2, launched after the record onto the same stream, runs 100-300 us;
 * cudaEventSynchronize from 20 us returns at 105 us.  By the call order it
 * waited for k1 (an inferred sync edge: 80 us waiting, 5 us its own);
 * by timing alone (the last task launched on the stream before the call,
 * k2, ends 195 us after the call returned) nothing was found.
 */
static void test_event_sync_order(void **state)
{
	const char *paths[] = {TEST_DATA("evsync_2025.json")};
	static const struct want_node wn[] = {
	    {GN_CPU, 0, 0, 5000, 0, "ProfilerStep#1"},
	    {GN_RUNTIME, 0, 5000, 5000, 0, "cudaLaunchKernel"},
	    {GN_CPU, 0, 10000, 2000, 0, "ProfilerStep#1"},
	    {GN_RUNTIME, 0, 12000, 2000, 0, "cudaEventRecord"},
	    {GN_CPU, 0, 14000, 1000, 0, "ProfilerStep#1"},
	    {GN_RUNTIME, 0, 15000, 4000, 0, "cudaLaunchKernel"},
	    {GN_CPU, 0, 19000, 1000, 0, "ProfilerStep#1"},
	    {GN_RUNTIME, 0, 20000, 0, 0, "cudaEventSynchronize"},
	    {GN_WAIT, 0, 100000, 5000, 80000, "cudaEventSynchronize"},
	    {GN_CPU, 0, 105000, 205000, 0, "ProfilerStep#1"},
	    {GN_RUNTIME, 0, 310000, 0, 0, "cudaDeviceSynchronize"},
	    {GN_WAIT, 0, 310000, 10000, 0, "cudaDeviceSynchronize"},
	    {GN_CPU, 0, 320000, 80000, 0, ""},
	    {GN_KERNEL, 1, 20000, 80000, 0, "k1"},
	    {GN_KERNEL, 1, 100000, 200000, 0, "k2"},
	};
	static const struct want_edge we[] = {
	    {0, 1, O},	 {1, 2, O},  {2, 3, O},	 {3, 4, O},	 {4, 5, O},   {5, 6, O},
	    {6, 7, O},	 {7, 8, O},  {8, 9, O},	 {9, 10, O},	 {10, 11, O}, {11, 12, O},
	    {13, 14, O}, {1, 13, L}, {5, 14, L}, {13, 8, S | I}, {14, 11, S},
	};
	struct build_opts o;
	struct graph *g;
	(void)state;

	build_opts_default(&o);
	g = load(paths, 1, &o);
	check_graph(g, wn, sizeof(wn) / sizeof(wn[0]), we, sizeof(we) / sizeof(we[0]));
	assert_int_equal(g->stats.sync_no_wait, 0);
	graph_free(g);
}

/*
 * tests/data/copy_2025.json: an all-reduce (stream 20, 20-220 us) is
 * recorded at 16 us, the compute stream waits for it at 30 us and a
 * pinned copy launched at 40 us runs 15 us after it ends (235-260 us):
 * beyond the 10 us tolerance, tied by the call order (an event edge).
 * Then a copy from pageable memory: cudaMemcpyAsync from 300 to 900 us
 * while the thread stages the data, the DMA at 800-880 us.  Its start lag
 * (500 us from the call's start) is kept whole (NF_STAGED), not capped
 * at 50 us: replayed, it runs where it ran and the step takes its 1000 us
 * (before: the copy at 350 us, the call returning at 450 us, 550 us).
 */
static void test_copy_placed(void **state)
{
	const char *paths[] = {TEST_DATA("copy_2025.json")};
	struct build_opts o;
	struct graph *g;
	(void)state;

	build_opts_default(&o);
	g = load(paths, 1, &o);
	assert_int_equal(g->n_nodes, 18);
	assert_string_equal(strtab_get(&g->st, g->name[15]), "Memcpy HtoD (Pinned -> Device)");
	assert_string_equal(strtab_get(&g->st, g->name[16]), "Memcpy HtoD (Pageable -> Device)");
	assert_int_equal(g->kind[17], GN_COLL);
	/* the copy after the all-reduce: launch, and the call-order event */
	assert_true(has_edge(g, 7, 15, GE_LAUNCH));
	assert_true(has_edge(g, 17, 15, GE_EVENT | GE_INFERRED));
	assert_int_equal(g->stats.inferred[GE_EVENT], 1);
	assert_int_equal(g->lag_ns[15], 15000);
	/* the pageable copy: launched by the blocking call, which waits for it */
	assert_true(has_edge(g, 9, 16, GE_LAUNCH));
	assert_true(has_edge(g, 16, 10, GE_SYNC));
	assert_true(g->flags[16] & NF_STAGED);
	assert_int_equal(g->lag_ns[16], 500000);
	assert_int_equal(g->wait_ns[10], 580000);
	assert_int_equal(g->iters[0].dur_ns, 1000000);
	assert_int_equal(replay_ns(g), 1000000);
	graph_free(g);
}

/*
 * tests/data/collorder_2025.rank{0,1}.json: ranks 0 and 1 of 2 each
 * all-reduce 4 MiB and 8 MiB on process group "0", each on its own NCCL
 * stream; rank 0 launches the 4 MiB one first (at 11 us), rank 1 the
 * 8 MiB one; then an all-to-all whose ranks send 4,000 and 12,000
 * bytes.  Paired by kind and size: the two 4 MiB ones are one
 * instance (one sequence number), the two 8 MiB ones another, the
 * all-to-alls (sizes differ by nature) a third, by kind alone; and each
 * member starts when the later of the pair may (rank 1's 4 MiB one, launched
 * at 31 us, ran from 40 us: rank 0's starts there too).  By order, rank
 * 0's 4 MiB all-reduce was paired with rank 1's 8 MiB one.
 */
static void test_colls_by_size(void **state)
{
	const char *paths[] = {TEST_DATA("collorder_2025.rank0.json"),
			       TEST_DATA("collorder_2025.rank1.json")};
	struct build_opts o;
	struct sim_opts so;
	struct prism_err err;
	struct graph *g;
	struct sim *sm;
	uint32_t r0_4 = UINT32_MAX, r0_8 = UINT32_MAX, r1_4 = UINT32_MAX, r1_8 = UINT32_MAX;
	uint32_t r0_a = UINT32_MAX, r1_a = UINT32_MAX;
	(void)state;

	build_opts_default(&o);
	g = load(paths, 2, &o);
	assert_int_equal(g->n_colls, 6);
	for (uint32_t c = 0; c < g->n_colls; c++) {
		int rank = (int)g->procs[g->proc[g->colls[c].node]].rank;
		if (g->colls[c].kind == GC_ALL_TO_ALL)
			*(rank ? &r1_a : &r0_a) = c;
		else if (g->colls[c].bytes == 4194304)
			*(rank ? &r1_4 : &r0_4) = c;
		else if (g->colls[c].bytes == 8388608)
			*(rank ? &r1_8 : &r0_8) = c;
	}
	assert_true(r0_4 != UINT32_MAX && r0_8 != UINT32_MAX && r1_4 != UINT32_MAX &&
		    r1_8 != UINT32_MAX && r0_a != UINT32_MAX && r1_a != UINT32_MAX);
	assert_int_equal(g->colls[r0_4].kind, GC_ALL_REDUCE);
	assert_int_equal(g->colls[r1_8].kind, GC_ALL_REDUCE);
	/* the all-to-all: its ranks send different sizes, paired by kind */
	assert_int_equal(g->colls[r0_a].bytes, 4000);
	assert_int_equal(g->colls[r1_a].bytes, 12000);
	assert_int_equal(g->colls[r0_a].seq, g->colls[r1_a].seq);
	/* rank 1 launched its 8 MiB all-reduce first */
	assert_true(g->start_ns[g->colls[r1_8].node] < g->start_ns[g->colls[r1_4].node]);
	assert_int_equal(g->colls[r0_4].seq, g->colls[r1_4].seq);
	assert_int_equal(g->colls[r0_8].seq, g->colls[r1_8].seq);
	assert_int_not_equal(g->colls[r0_4].seq, g->colls[r0_8].seq);
	assert_non_null(sm = sim_new(g));
	assert_int_equal(sm->n_inst, 3);
	sim_opts_default(&so);
	prism_err_clear(&err);
	assert_int_equal(sim_run(sm, &so, &err), 0);
	assert_int_equal(sm->n_mismatched, 0);
	assert_int_equal(sm->start_ns[g->colls[r0_4].node], sm->start_ns[g->colls[r1_4].node]);
	assert_int_equal(sm->start_ns[g->colls[r0_8].node], sm->start_ns[g->colls[r1_8].node]);
	assert_int_equal(sm->start_ns[g->colls[r1_4].node], 40000);
	assert_int_equal(sm->start_ns[g->colls[r0_4].node] - g->start_ns[g->colls[r0_4].node],
			 20000);
	assert_int_equal(sm->start_ns[g->colls[r0_a].node], sm->start_ns[g->colls[r1_a].node]);
	/* The edits' renumbering (graph_renumber_colls, by start) pairs the
	 * same way. */
	for (uint32_t c = 0; c < g->n_colls; c++)
		g->colls[c].seq = 100 + c;
	assert_int_equal(graph_renumber_colls(g, 1), 0);
	assert_int_equal(g->colls[r0_4].seq, g->colls[r1_4].seq);
	assert_int_equal(g->colls[r0_8].seq, g->colls[r1_8].seq);
	assert_int_equal(g->colls[r0_a].seq, g->colls[r1_a].seq);
	assert_int_not_equal(g->colls[r0_4].seq, g->colls[r0_8].seq);
	sim_free(sm);
	graph_free(g);
}

/*
 * autograd_2024.json: the step's thread marks two microbatches, each a
 * forward and a backward phase (prism:: ranges, as around loss.backward());
 * the backward op and its kernel launch run on another thread (autograd's)
 * while the step's thread waits in the backward range.  Those kernels take
 * the step thread's phase and microbatch: fwd 0, bwd 0, fwd 1, bwd 1, then
 * the optimizer's (no microbatch).
 */
static void test_autograd_thread(void **state)
{
	const char *paths[] = {TEST_DATA("autograd_2024.json")};
	static const int32_t mb[] = {0, 0, 1, 1, -1};
	static const uint8_t ph[] = {PH_FORWARD, PH_BACKWARD, PH_FORWARD, PH_BACKWARD,
				     PH_OPTIMIZER};
	struct build_opts o;
	struct graph *g;
	size_t i = 0;
	(void)state;

	build_opts_default(&o);
	g = load(paths, 1, &o);
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		if (g->kind[u] != GN_KERNEL)
			continue;
		assert_true(i < 5);
		assert_int_equal(g->mb[u], mb[i]);
		assert_int_equal(g->phase[u], ph[i]);
		i++;
	}
	assert_int_equal(i, 5);
	assert_int_equal(g->stats.ann_found[GRAPH_ANN_PHASE], GRAPH_ANN_RANGES);
	graph_free(g);
}

/*
 * tests/data/retime_2024.json: layer 0's forward runs the QKV GEMM of a
 * model of hidden 1024 (16 heads, FFN 4096) on 2048 tokens, aten::mm
 * [2048, 1024] x [1024, 3072] in bf16, 60 us as traced, and a Triton
 * kernel whose op recorded no shapes, 20 us.  With a fixed part of 5 us
 * for GEMMs (a fitted overhead), worked by hand from the profiles'
 * kernels groups (kperf.h: waves of tiles on the SMs, each tile its FLOPs
 * at the achievable peak over the SMs and its fixed cost, plus the
 * kernel's overhead):
 *
 * H100 (132 SMs, 833.9 TFLOP/s achievable, 1.418 us a tile, 4.481 us a
 * kernel, 128x128 tiles at 1.0; stream-K; the profile before issue 33 capped
 * the peak at the best measured shape, 804.7, 1.228 and 4.553 us, then
 * 2.242 us a kernel on the device, the fixed cost our H100's CUDA-graph
 * rows put under XLA's isolated calls, docs/MODEL.md, then 2.094 with
 * those rows at the clock their replays ran at (session 27): what the
 * asserts below compute with, at the sustained clock: 23.738 us here): M x N x K = 2048 x 3072 x 1024
 * is 16 x 12 = 192 tiles of 128x256; a tile 2 x 128 x 256 x 1024 FLOPs at
 * 833.9e12 / 132 FLOP/s is 10.6228 us.  In waves, 2 of 12.0408 us: 24.082
 * us; by stream-K, 192 / 132 tiles' work an SM and 2 + 1 tiles' fixed
 * cost: 15.4514 + 4.254 = 19.705 us, + 4.481 = 24.186 us (128x128: 384
 * tiles in 3 waves, 20.188 us, or stream-K 21.123; of Hopper's own tiles
 * 192x192 comes nearest, 20.188 us by stream-K).
 *
 * Hidden x2 on the same GPU: the QKV GEMM of hidden 2048 on the same
 * tokens, 2048 x 6144 x 2048: 16 x 24 = 384 tiles of 128x256 of 21.2456 us,
 * 3 waves (67.991 us) or by stream-K 384 / 132 x 21.2456 + 4 x 1.418 =
 * 67.478 us, + 4.481 = 71.959 us (192x192: 352 tiles, stream-K 69.41;
 * 128x128: 768 tiles, 71.73).  The kernel: 5 + 55 x 71.959 / 24.186 =
 * 168.63 us (by its FLOPs, x4, it was 225 us).
 *
 * H100 -> B200 (148 SMs, 1687.8 TFLOP/s, 1.583 us a tile, 3.944 us a
 * kernel, 128x128 at 0.953, a step's clock 0.766 of the burst one): the
 * same 384 tiles of 128x128 in ceil(384 / 148) = 3 waves of 33,554,432 /
 * (1687.8e12 x 0.766 / 148 x 0.953) = 4.0306 us + 1.583 / 0.766 = 2.0666
 * us: 3 x 6.0972 + 3.944 = 22.236 us (B200's profile schedules in waves;
 * 192 tiles of 128x256 at 1.0 in 2 waves of 7.6834 + 2.0666 us: 19.500
 * us, + 3.944, slower).  The kernel: 5 + 55 x 22.236 / 23.738 = 56.519
 * us (56.201 against H100's 23.886 with 2.242 us a kernel; by the
 * datasheet peaks, 989.4 / 2250, it was 29.2 us).
 *
 * The Triton kernel cannot be placed: its work scales (hidden x2: x2; on
 * the B200, by the HBM bandwidths 3350 / 8000 GB/s) beyond the kernel
 * model's overhead of an elementwise kernel on each GPU.
 */
/* A prism timeline of three ranks split into one trace per rank: each rank
 * keeps only the communications of its own events (not a copy of all,
 * which is ranks x events), and each event's comm names its own copy. */
static void test_split_comms(void **state)
{
	struct kineto_trace tr = {0}, *out = NULL;
	size_t n = 0;
	(void)state;
	tr.has_world = 1;
	tr.world_size = 3;
	for (int r = 0; r < 3; r++) {
		struct kt_thread t = {
		    .pid = (int64_t)(r + 1) * TIMELINE_RANK_PID + 7, .tid = 1, .gpu = 1};
		assert_int_equal(VEC_PUSH(tr.threads, t), 0);
	}
	/* Events: rank 0 two collectives, rank 1 one kernel without, rank 2
	 * one collective; comm k says group size 10 + k. */
	{
		static const uint32_t thread[] = {0, 1, 2, 0};
		static const uint32_t comm[] = {0, UINT32_MAX, 1, 2};
		for (int k = 0; k < 3; k++) {
			struct kt_comm c = {.group_size = 10 + k, .in_nelems = -1};
			assert_int_equal(VEC_PUSH(tr.comms, c), 0);
		}
		for (int i = 0; i < 4; i++) {
			struct kt_event e = {
			    .thread = thread[i], .comm = comm[i], .index = (uint32_t)i};
			assert_int_equal(VEC_PUSH(tr.events, e), 0);
		}
	}
	assert_int_equal(kineto_split(&tr, &out, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(out[0].rank, 0);
	assert_int_equal(out[0].events.n, 2);
	assert_int_equal(out[0].comms.n, 2);
	assert_int_equal(out[0].threads.v[0].pid, 7);
	assert_int_equal(out[0].comms.v[out[0].events.v[0].comm].group_size, 10);
	assert_int_equal(out[0].comms.v[out[0].events.v[1].comm].group_size, 12);
	assert_int_equal(out[1].events.n, 1);
	assert_int_equal(out[1].comms.n, 0);
	assert_int_equal(out[1].events.v[0].comm, UINT32_MAX);
	assert_int_equal(out[2].rank, 2);
	assert_int_equal(out[2].comms.n, 1);
	assert_int_equal(out[2].comms.v[out[2].events.v[0].comm].group_size, 11);
	assert_int_equal(tr.events.n, 0);
	for (size_t k = 0; k < n; k++)
		kineto_release(&out[k]);
	free(out);
}

static void test_retime_gemm(void **state)
{
	const char *paths[] = {TEST_DATA("retime_2024.json")};
	struct llm m0 = {.layers = 1,
			 .hidden = 1024,
			 .heads = 16,
			 .ffn = 4096,
			 .seq = 2048,
			 .vocab = 32000,
			 .name = "t"},
		   m1 = m0;
	struct hw_profile h100, b200;
	struct edit_retime r;
	struct edit_stats es;
	struct build_opts o;
	struct prism_err err;
	struct graph *g, *c;
	uint32_t gemm = UINT32_MAX, other = UINT32_MAX;
	double k_old, k_wide, k_b200, o_h, o_b, p_h, p_b;
	(void)state;

	assert_int_equal(hw_load(PRISM_SOURCE_DIR "/configs/hw/h100-dgx.cfg", &h100, &err), 0);
	assert_int_equal(hw_load(PRISM_SOURCE_DIR "/configs/hw/b200-dgx.cfg", &b200, &err), 0);
	k_old = kperf_gemm_s(&h100, HW_BF16, 1, 2048, 3072, 1024);
	k_wide = kperf_gemm_s(&h100, HW_BF16, 1, 2048, 6144, 2048);
	k_b200 = kperf_gemm_s(&b200, HW_BF16, 1, 2048, 3072, 1024);
	/* FLOP/s of one SM at the achievable peak; the tiles (their work and
	 * fixed cost) at the profile's sustained clock, H100's 0.91 of the
	 * burst one, B200's 0.766 (hw.h); B200's 128x128 tiles at 0.953 */
	p_h = 804.7e12 / 132 * 0.91;
	p_b = 1687.8e12 / 148 * 0.766;
	assert_rel_close(
	    k_old, 192 / 132.0 * 2 * 128 * 256 * 1024.0 / p_h + 3 * 1.228e-6 / 0.91 + 2.094e-6,
	    1e-9);
	assert_rel_close(
	    k_wide, 384 / 132.0 * 2 * 128 * 256 * 2048.0 / p_h + 4 * 1.228e-6 / 0.91 + 2.094e-6,
	    1e-9);
	assert_rel_close(k_b200,
			 3 * (2 * 128 * 128 * 1024.0 / (p_b * 0.953) + 1.583e-6 / 0.766) + 3.944e-6,
			 1e-9);
	assert_rel_close(k_old, 23.738e-6, 1e-4);
	assert_rel_close(k_wide, 77.874e-6, 1e-4);
	assert_rel_close(k_b200, 22.236e-6, 1e-4);

	build_opts_default(&o);
	g = load(paths, 1, &o);
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->kind[u] == GN_KERNEL)
			*(gemm == UINT32_MAX ? &gemm : &other) = u;
	assert_int_equal(g->layer[gemm], 0);
	assert_int_equal(g->phase[gemm], PH_FORWARD);
	assert_int_equal(g->dur_ns[gemm], 60000);
	assert_int_equal(g->dur_ns[other], 20000);
	/* prism calibrate --gemms: the one GEMM shape, its 60 us and the
	 * model's 23.738 us (the Triton kernel's op has no shapes). */
	{
		struct calib_gshape *gs;
		size_t ngs;
		assert_int_equal(calib_gemm_shapes(g, &h100, &gs, &ngs, &err), 0);
		assert_int_equal(ngs, 1);
		assert_true(gs[0].b == 1 && gs[0].m == 2048 && gs[0].n == 3072 && gs[0].k == 1024);
		assert_int_equal(gs[0].dtype, HW_BF16);
		assert_int_equal(gs[0].count, 1);
		assert_rel_close(gs[0].measured_s, 60e-6, 1e-12);
		assert_rel_close(gs[0].model_s, k_old, 1e-12);
		/* ... with the plan worked above: 192 tiles of 128x256 by
		 * stream-K, 192 / 132 of a wave */
		assert_true(gs[0].plan.tm == 128 && gs[0].plan.tn == 256 && gs[0].plan.splits == 1);
		assert_true(gs[0].plan.tiles == 192 && gs[0].plan.waves == 192 / 132.0 &&
			    gs[0].plan.stream_k && !gs[0].plan.mem_bound);
		free(gs);
	}

	/* Hidden x2, FFN with it, on the same GPU. */
	m1.hidden = 2048;
	m1.ffn = 8192;
	memset(&r, 0, sizeof(r));
	r.from = r.to = &h100;
	r.hr = 2;
	r.m_from = &m0;
	r.m_to = &m1;
	r.mbs = 1;
	r.overhead_s[KC_GEMM] = 5e-6;
	c = graph_clone(g);
	assert_non_null(c);
	assert_int_equal(edit_retime(c, &r, &es), 0);
	assert_int_equal(graph_check(c, &err), 0);
	assert_int_equal(es.kernels_model, 1);
	assert_int_equal(es.kernels_ratio, 1);
	assert_int_equal(c->dur_ns[gemm], (int64_t)(5000 + 55000 * k_wide / k_old + 0.5));
	/* 5 + 55 x 77.874 / 23.738 (184.655 us with 2.242 us a kernel) */
	assert_rel_close((double)c->dur_ns[gemm], 185432, 1e-4);
	o_h = h100.k.mem_overhead_s[HW_MEM_ELEMENTWISE] * 1e9;
	assert_int_equal(c->dur_ns[other], (int64_t)(o_h + (20000 - o_h) * 2 + 0.5));
	graph_free(c);

	/* H100 -> B200, the same model. */
	memset(&r, 0, sizeof(r));
	r.from = &h100;
	r.to = &b200;
	r.overhead_s[KC_GEMM] = 5e-6;
	c = graph_clone(g);
	assert_non_null(c);
	assert_int_equal(edit_retime(c, &r, &es), 0);
	assert_int_equal(es.kernels_model, 1);
	assert_int_equal(es.kernels_ratio, 1);
	assert_int_equal(es.kernels_scaled, 2);
	assert_int_equal(c->dur_ns[gemm], (int64_t)(5000 + 55000 * k_b200 / k_old + 0.5));
	assert_rel_close((double)c->dur_ns[gemm], 56519, 1e-4);
	o_b = b200.k.mem_overhead_s[HW_MEM_ELEMENTWISE] * 1e9;
	assert_int_equal(c->dur_ns[other],
			 (int64_t)(o_b + (20000 - o_h) * (3350.0 / 8000.0) + 0.5));
	graph_free(c);

	/* The same H100 capped at 350 of its 700 W (--power-w 350): the GEMM
	 * by the kernel model at the power balance's capped clock (hw.h
	 * hw_capped_clock: 0.91 x 0.47327 / 0.90017 = 0.47844; half the
	 * sustained clock, 0.455, by the proportional rule before), its
	 * tiles' work and fixed cost 0.91 / 0.47844 as long (21.644 us ->
	 * 41.167), the 2.094 us overhead not: 43.261 us against 23.738, 5 +
	 * 55 x 1.8224 = 105.235 us (104.954 with 2.242 us a kernel, 109.838
	 * by the proportional rule before); the unplaced kernel
	 * moves bytes, its bandwidth kept: 20 us as traced. */
	{
		struct hw_profile capped;
		memset(&r, 0, sizeof(r));
		r.from = &h100;
		r.to = hw_at_power(&h100, 350, &capped);
		r.overhead_s[KC_GEMM] = 5e-6;
		assert_true(r.to == &capped);
		c = graph_clone(g);
		assert_non_null(c);
		assert_int_equal(edit_retime(c, &r, &es), 0);
		assert_int_equal(es.kernels_model, 1);
		assert_int_equal(es.kernels_ratio, 1);
		assert_int_equal(
		    c->dur_ns[gemm],
		    (int64_t)(5000 +
			      55000 * kperf_gemm_s(&capped, HW_BF16, 1, 2048, 3072, 1024) / k_old +
			      0.5));
		assert_rel_close((double)c->dur_ns[gemm], 105235, 1e-4);
		assert_int_equal(c->dur_ns[other], 20000);
		graph_free(c);
	}
	graph_free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_autograd_thread),
	    cmocka_unit_test(test_golden_2023),
	    cmocka_unit_test(test_golden_2021),
	    cmocka_unit_test(test_two_ranks),
	    cmocka_unit_test(test_duplicate_rank),
	    cmocka_unit_test(test_all_to_all_by_op),
	    cmocka_unit_test(test_infer_repeat),
	    cmocka_unit_test(test_inferred_layers),
	    cmocka_unit_test(test_layer_edit),
	    cmocka_unit_test(test_share_edges),
	    cmocka_unit_test(test_accumulation),
	    cmocka_unit_test(test_dp_added),
	    cmocka_unit_test(test_dp_added_dtypes),
	    cmocka_unit_test(test_accumulation_added),
	    cmocka_unit_test(test_layer_bridges),
	    cmocka_unit_test(test_rocm),
	    cmocka_unit_test(test_mismatched_collectives),
	    cmocka_unit_test(test_wait_full_gpu),
	    cmocka_unit_test(test_copy_placed),
	    cmocka_unit_test(test_event_sync_order),
	    cmocka_unit_test(test_event_pairs),
	    cmocka_unit_test(test_colls_by_size),
	    cmocka_unit_test(test_module_layers),
	    cmocka_unit_test(test_retime_gemm),
	    cmocka_unit_test(test_split_comms),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
