/*
 * test_sim.c - the simulator on hand-made graphs, answers worked by hand.
 *
 * Each case lists its tasks (processor, kind, traced start, duration) and
 * edges; the expected simulated starts and ends are in the comments.
 * Times are in microseconds here and ns in the graph.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwrite.h"
#include "hw.h"
#include "metrics.h"
#include "sim.h"
#include "testutil.h"

#define US 1000

struct tn {
	int proc, kind;
	int64_t start_us, dur_us;
	int coll; /* -1, or index into the case's collectives */
};

struct te {
	uint32_t src, dst;
	int kind;
};

struct tp {
	int rank, gpu;
};

/* A graph from lists, through the writer; nodes grouped by processor in
 * order (their indices are the graph's ids). */
static struct graph *mk(const struct tp *p, int np, const struct tn *n, int nn, const struct te *e,
			int ne, int nranks)
{
	struct gw w;
	struct graph *g = NULL;
	struct prism_err err;

	assert_int_equal(gw_init(&w), 0);
	for (int r = 0; r < nranks; r++) {
		struct graph_rank x;
		memset(&x, 0, sizeof(x));
		x.rank = r;
		assert_int_equal(gw_rank(&w, &x), 0);
	}
	for (int i = 0; i < np; i++) {
		struct graph_proc x;
		memset(&x, 0, sizeof(x));
		x.rank = (uint32_t)p[i].rank;
		x.gpu = (uint8_t)p[i].gpu;
		x.tid = i;
		assert_int_equal(gw_proc(&w, &x, NULL), 0);
	}
	for (int i = 0; i < nn; i++) {
		struct gw_node x;
		uint32_t id;
		memset(&x, 0, sizeof(x)); /* the columns hand-made graphs had */
		x.proc = (uint32_t)n[i].proc;
		x.kind = (uint8_t)n[i].kind;
		x.start_ns = n[i].start_us * US;
		x.dur_ns = n[i].dur_us * US;
		x.iter = -1;
		x.coll = UINT32_MAX;
		assert_int_equal(gw_node(&w, &x, &id), 0);
		if (n[i].coll >= 0) {
			struct graph_coll c;
			memset(&c, 0, sizeof(c));
			c.kind = GC_ALL_REDUCE;
			c.seq = (uint32_t)n[i].coll;
			assert_int_equal(gw_coll(&w, id, &c), 0);
		}
	}
	for (int k = 0; k < ne; k++)
		assert_int_equal(gw_edge(&w, e[k].src, e[k].dst, (uint8_t)e[k].kind), 0);
	assert_int_equal(gw_finish(&w, NULL, 0, &g), 0);
	for (int i = 0; i < nn; i++)
		assert_int_equal(w.newid[i], i); /* grouped as given */
	gw_release(&w);
	prism_err_clear(&err);
	assert_int_equal(graph_check(g, &err), 0);
	return g;
}

static struct sim *run(const struct graph *g)
{
	struct sim_opts o;
	struct prism_err err;
	struct sim *s = sim_new(g);
	assert_non_null(s);
	sim_opts_default(&o);
	prism_err_clear(&err);
	assert_int_equal(sim_run(s, &o, &err), 0);
	return s;
}

static void expect_times(const struct sim *s, const int64_t (*want)[2], int n)
{
	for (int i = 0; i < n; i++) {
		if (s->start_ns[i] != want[i][0] * US || s->end_ns[i] != want[i][1] * US) {
			print_error("task %d: simulated [%lld, %lld) ns, want [%lld, %lld) us\n", i,
				    (long long)s->start_ns[i], (long long)s->end_ns[i],
				    (long long)want[i][0], (long long)want[i][1]);
			fail();
		}
	}
}

#define O GE_ORDER
#define L GE_LAUNCH
#define S GE_SYNC
#define E GE_EVENT
#define T GE_THREAD

static void test_chain(void **state)
{
	/* One stream, three kernels back to back: 0-10, 10-30, 30-60. */
	static const struct tp p[] = {{0, 1}};
	static const struct tn n[] = {
	    {0, GN_KERNEL, 0, 10, -1}, {0, GN_KERNEL, 10, 20, -1}, {0, GN_KERNEL, 35, 30, -1}};
	static const struct te e[] = {{0, 1, O}, {1, 2, O}};
	static const int64_t want[][2] = {{0, 10}, {10, 30}, {30, 60}};
	struct graph *g = mk(p, 1, n, 3, e, 2, 1);
	struct sim *s = run(g);
	(void)state;
	expect_times(s, want, 3);
	assert_int_equal(s->makespan_ns, 60 * US);
	sim_free(s);
	graph_free(g);
}

static void test_fork_join_event(void **state)
{
	/* CPU: A [0,5) launches K1 on stream 1, B [5,10) launches K2 on
	 * stream 2.  K1 [0,100), K2 [5,55).  K3 follows K2 on stream 2 and
	 * waits (event edge) for K1: it starts at 100, ends at 110. */
	static const struct tp p[] = {{0, 0}, {0, 1}, {0, 1}};
	static const struct tn n[] = {
	    {0, GN_RUNTIME, 0, 5, -1}, {0, GN_RUNTIME, 5, 5, -1},   {1, GN_KERNEL, 2, 100, -1},
	    {2, GN_KERNEL, 8, 50, -1}, {2, GN_KERNEL, 102, 10, -1},
	};
	static const struct te e[] = {{0, 1, O}, {0, 2, L}, {1, 3, L}, {3, 4, O}, {2, 4, E}};
	static const int64_t want[][2] = {{0, 5}, {5, 10}, {0, 100}, {5, 55}, {100, 110}};
	struct graph *g = mk(p, 3, n, 5, e, 5, 1);
	struct sim *s = run(g);
	struct metrics_path cp;
	(void)state;
	expect_times(s, want, 5);
	/* Critical path: K3 <- K1 <- A (launch, start to start). */
	assert_int_equal(metrics_critical_path(s, &cp), 0);
	assert_int_equal(cp.n, 3);
	assert_int_equal(cp.nodes[0], 4);
	assert_int_equal(cp.nodes[1], 2);
	assert_int_equal(cp.nodes[2], 0);
	assert_int_equal(cp.length_ns, 110 * US);
	assert_int_equal(cp.by_kind_ns[GN_KERNEL], 110 * US);
	assert_int_equal(cp.by_kind_ns[GN_RUNTIME], 0); /* released K1 at its start */
	free(cp.nodes);
	sim_free(s);
	graph_free(g);
}

static void test_stream_sync(void **state)
{
	/* C [0,5) launches K [0,100); the sync call S (0 us) and its wait W
	 * (own cost 3 us) wait for K: W [100,103); then CPU work X [103,113).
	 * Traced, the sync took 200 us: that waiting is not replayed. */
	static const struct tp p[] = {{0, 0}, {0, 1}};
	static const struct tn n[] = {
	    {0, GN_RUNTIME, 0, 5, -1}, {0, GN_RUNTIME, 5, 0, -1},  {0, GN_WAIT, 205, 3, -1},
	    {0, GN_CPU, 208, 10, -1},  {1, GN_KERNEL, 1, 100, -1},
	};
	static const struct te e[] = {{0, 1, O}, {1, 2, O}, {2, 3, O}, {0, 4, L}, {4, 2, S}};
	static const int64_t want[][2] = {{0, 5}, {5, 5}, {100, 103}, {103, 113}, {0, 100}};
	struct graph *g = mk(p, 2, n, 5, e, 5, 1);
	struct sim *s = run(g);
	(void)state;
	expect_times(s, want, 5);
	sim_free(s);
	graph_free(g);
}

static void test_device_sync(void **state)
{
	/* Two streams finish at 40 and 70; the device sync's wait node
	 * (own 2 us) waits for both: [70,72). */
	static const struct tp p[] = {{0, 0}, {0, 1}, {0, 1}};
	static const struct tn n[] = {
	    {0, GN_RUNTIME, 0, 4, -1}, {0, GN_RUNTIME, 4, 4, -1}, {0, GN_RUNTIME, 8, 0, -1},
	    {0, GN_WAIT, 8, 2, -1},    {1, GN_KERNEL, 0, 40, -1}, {2, GN_KERNEL, 4, 66, -1},
	};
	static const struct te e[] = {{0, 1, O}, {1, 2, O}, {2, 3, O}, {0, 4, L},
				      {1, 5, L}, {4, 3, S}, {5, 3, S}};
	static const int64_t want[][2] = {{0, 4}, {4, 8}, {8, 8}, {70, 72}, {0, 40}, {4, 70}};
	struct graph *g = mk(p, 3, n, 6, e, 7, 1);
	struct sim *s = run(g);
	(void)state;
	expect_times(s, want, 6);
	sim_free(s);
	graph_free(g);
}

static void test_launch_bound(void **state)
{
	/* Four 10 us launches of 2 us kernels: the GPU idles 8 us of every 10
	 * and the makespan is the CPU's 40 us, not the GPU's 8. */
	static const struct tp p[] = {{0, 0}, {0, 1}};
	static const struct tn n[] = {
	    {0, GN_RUNTIME, 0, 10, -1},	 {0, GN_RUNTIME, 10, 10, -1}, {0, GN_RUNTIME, 20, 10, -1},
	    {0, GN_RUNTIME, 30, 10, -1}, {1, GN_KERNEL, 0, 2, -1},    {1, GN_KERNEL, 10, 2, -1},
	    {1, GN_KERNEL, 20, 2, -1},	 {1, GN_KERNEL, 30, 2, -1},
	};
	static const struct te e[] = {{0, 1, O}, {1, 2, O}, {2, 3, O}, {4, 5, O}, {5, 6, O},
				      {6, 7, O}, {0, 4, L}, {1, 5, L}, {2, 6, L}, {3, 7, L}};
	static const int64_t want[][2] = {{0, 10}, {10, 20}, {20, 30}, {30, 40},
					  {0, 2},  {10, 12}, {20, 22}, {30, 32}};
	struct graph *g = mk(p, 2, n, 8, e, 10, 1);
	struct sim *s = run(g);
	(void)state;
	expect_times(s, want, 8);
	assert_int_equal(s->makespan_ns, 40 * US);
	assert_rel_close(metrics_utilisation(s, 1, 0, 40 * US), 0.2, 1e-12);
	sim_free(s);
	graph_free(g);
}

static void test_rendezvous_4_ranks(void **state)
{
	/* Rank r launches its all-reduce at 10r us; traced durations 70, 60,
	 * 50, 40 (the late ranks waited less).  All four start when the last
	 * arrives, at 30, and take the shortest traced time, 40: [30,70).  A
	 * 5 us kernel follows on each stream: [70,75). */
	static const struct tp p[] = {{0, 0}, {0, 1}, {1, 0}, {1, 1},
				      {2, 0}, {2, 1}, {3, 0}, {3, 1}};
	static const struct tn n[] = {
	    {0, GN_RUNTIME, 0, 1, -1},	{1, GN_COLL, 0, 70, 0},	 {1, GN_KERNEL, 70, 5, -1},
	    {2, GN_RUNTIME, 10, 1, -1}, {3, GN_COLL, 10, 60, 0}, {3, GN_KERNEL, 70, 5, -1},
	    {4, GN_RUNTIME, 20, 1, -1}, {5, GN_COLL, 20, 50, 0}, {5, GN_KERNEL, 70, 5, -1},
	    {6, GN_RUNTIME, 30, 1, -1}, {7, GN_COLL, 30, 40, 0}, {7, GN_KERNEL, 70, 5, -1},
	};
	static const struct te e[] = {{0, 1, L}, {1, 2, O}, {3, 4, L},	{4, 5, O},
				      {6, 7, L}, {7, 8, O}, {9, 10, L}, {10, 11, O}};
	static const int64_t want[][2] = {{0, 1},   {30, 70}, {70, 75}, {10, 11},
					  {30, 70}, {70, 75}, {20, 21}, {30, 70},
					  {70, 75}, {30, 31}, {30, 70}, {70, 75}};
	struct graph *g = mk(p, 8, n, 12, e, 8, 4);
	struct sim *s = run(g);
	struct sim_opts o;
	struct prism_err err;
	(void)state;
	expect_times(s, want, 12);
	assert_int_equal(s->n_inst, 1);
	/* Without the rendezvous each keeps its traced duration. */
	sim_opts_default(&o);
	o.rendezvous = 0;
	prism_err_clear(&err);
	assert_int_equal(sim_run(s, &o, &err), 0);
	assert_int_equal(s->start_ns[1], 0);
	assert_int_equal(s->end_ns[1], 70 * US);
	assert_int_equal(s->end_ns[10], 70 * US);
	sim_free(s);
	graph_free(g);
}

static void test_lag_and_ablation(void **state)
{
	/* K2 waits (event) for K1 on another stream and started 4 us after K1
	 * ended in the trace: that lag is kept ([54,64)).  Ignoring event edges,
	 * K2 starts as soon as its launch allows: 10 + 4 = 14. */
	static const struct tp p[] = {{0, 0}, {0, 1}, {0, 1}};
	static const struct tn n[] = {{0, GN_RUNTIME, 0, 10, -1},
				      {0, GN_RUNTIME, 10, 10, -1},
				      {1, GN_KERNEL, 0, 50, -1},
				      {2, GN_KERNEL, 54, 10, -1}};
	static const struct te e[] = {{0, 1, O}, {0, 2, L}, {1, 3, L}, {2, 3, E}};
	struct graph *g = mk(p, 3, n, 4, e, 4, 1);
	struct sim *s;
	struct sim_opts o;
	struct prism_err err;
	(void)state;
	g->lag_ns[3] = 4 * US;
	s = run(g);
	assert_int_equal(s->start_ns[3], 54 * US);
	sim_opts_default(&o);
	o.skip = SIM_SKIP_EVENT;
	prism_err_clear(&err);
	assert_int_equal(sim_run(s, &o, &err), 0);
	assert_int_equal(s->start_ns[3], 14 * US);
	sim_free(s);
	graph_free(g);
}

/*
 * Contention: a GEMM and a collective on two streams of one GPU, both
 * ready at 0, slow each other by the fitted factors of the H100 profile
 * (a = contention.compute, b = contention.comm: hw.h's defaults, fitted by
 * scripts/contention_fit.py).  GEMM 100 us beside an all-reduce of 50 us:
 * the all-reduce ends at 50 (1 + b); by then the GEMM has done
 * 50 (1 + b) / (1 + a) of its work and runs the rest alone.  A GEMM of
 * 30 us beside the same all-reduce ends at 30 (1 + a), and the all-reduce
 * finishes its remaining work alone.  Without contention: 100 and 50.
 */
static void test_contention(void **state)
{
	static const struct tp p[] = {{0, 1}, {0, 1}};
	struct tn n[] = {{0, GN_KERNEL, 0, 100, -1}, {1, GN_COLL, 0, 50, 0}};
	struct hw_profile hw;
	struct prism_err err;
	struct sim_opts o;
	struct graph *g;
	struct sim *s;
	double a, b, tc;
	(void)state;
	assert_int_equal(hw_load(PRISM_SOURCE_DIR "/configs/hw/h100-dgx.cfg", &hw, &err), 0);
	a = hw.slow_compute;
	b = hw.slow_comm;
	assert_true(a > 0 && b > 0);
	sim_opts_default(&o);
	o.slow_compute = a;
	o.slow_comm = b;
	g = mk(p, 2, n, 2, NULL, 0, 1);
	s = sim_new(g);
	assert_int_equal(sim_run(s, &o, &err), 0);
	tc = 50 * (1 + b);
	assert_rel_close((double)s->end_ns[1], tc * US, 2e-5);			      /* whole ns */
	assert_rel_close((double)s->end_ns[0], (tc + 100 - tc / (1 + a)) * US, 2e-5); /* whole ns */
	sim_free(s);
	graph_free(g);
	n[0].dur_us = 30;
	g = mk(p, 2, n, 2, NULL, 0, 1);
	s = sim_new(g);
	assert_int_equal(sim_run(s, &o, &err), 0);
	tc = 30 * (1 + a);
	assert_rel_close((double)s->end_ns[0], tc * US, 2e-5);			     /* whole ns */
	assert_rel_close((double)s->end_ns[1], (tc + 50 - tc / (1 + b)) * US, 2e-5); /* whole ns */
	sim_opts_default(&o);
	assert_int_equal(sim_run(s, &o, &err), 0);
	assert_int_equal(s->end_ns[0], 30 * US);
	assert_int_equal(s->end_ns[1], 50 * US);
	/* A graph edit's contention: only collectives it added (NF_ADDED)
	 * contend; the trace's own kernels hold what its collectives did. */
	o.slow_compute = a;
	o.slow_comm = b;
	o.contention_added = 1;
	assert_int_equal(sim_run(s, &o, &err), 0);
	assert_int_equal(s->end_ns[0], 30 * US);
	assert_int_equal(s->end_ns[1], 50 * US);
	g->flags[1] |= NF_ADDED;
	assert_int_equal(sim_run(s, &o, &err), 0);
	assert_rel_close((double)s->end_ns[0], tc * US, 2e-5);			     /* whole ns */
	assert_rel_close((double)s->end_ns[1], (tc + 50 - tc / (1 + b)) * US, 2e-5); /* whole ns */
	sim_free(s);
	graph_free(g);
}

static int maxplus_vs_events(const struct graph *g, const struct sim_opts *o);

/*
 * A folded task (sim.h): a host task at 0 launches task F on the compute
 * stream, which stands for three pieces -- compute 20 us, then after a
 * 10 us lag compute 20 us, then a tensor-parallel collective of 10 us --
 * beside a collective on another stream of the same GPU.  Contention
 * factors 1: a slowed task runs at half speed.
 * (1) The collective (20 us) from 5: F runs alone to 5 (one event), then
 *     piece 0's last 15 us at half speed with the collective: 5..35; the
 *     collective has 5 us left and ends alone at 40; piece 1 starts
 *     after its lag at 45 and F runs at full speed again: 45..65, then
 *     the collective piece 65..75.  F ends at 75, busy 35 + 20 + 10.
 * (2) The collective from 50: pieces 0..20 and 30..50 ran alone; the
 *     collective piece 50..60 and the other collective slow nothing
 *     (neither is compute): F ends at 60, the collective at 70.
 * (3) Without contention, piece 1 launched at 40: 0..20, 50..70, 70..80:
 *     F ends at 80 = max(0 + 60, 40 + 40): the launch decided.
 */
static void test_folded(void **state)
{
	static const struct tp p[] = {{0, 0}, {0, 1}, {0, 1}};
	struct tn n[] = {
	    {0, GN_CPU, 0, 1000, -1}, {1, GN_KERNEL, 0, 60, -1}, {2, GN_COLL, 5, 20, 0}};
	static const struct te e[] = {{0, 1, L}};
	struct sim_piece pc[3] = {{0, 0, 20 * US, 0, 0, 0, SIM_PIECE_COMPUTE, SIM_NO_XW},
				  {0, 10 * US, 20 * US, 0, 0, 0, SIM_PIECE_COMPUTE, SIM_NO_XW},
				  {0, 0, 10 * US, 0, 0, 0, SIM_PIECE_COMM, SIM_NO_XW}};
	struct sim_folded ft = {1, 0, 0, 3, 0, 0};
	struct sim_fold fo = {&ft, 1, pc};
	struct prism_err err;
	struct sim_opts o;
	struct graph *g;
	struct sim *s;
	(void)state;
	sim_fold_pieces(pc, 0, 3);
	assert_int_equal(pc[0].rest_ns, 60 * US);
	assert_int_equal(pc[1].rest_ns, 40 * US);
	assert_int_equal(pc[0].busy_ns, 50 * US);
	sim_opts_default(&o);
	o.fold = &fo;
	o.slow_compute = o.slow_comm = 1;
	g = mk(p, 3, n, 3, e, 1, 1);
	s = sim_new(g);
	assert_non_null(s);
	prism_err_clear(&err);
	assert_int_equal(sim_run(s, &o, &err), 0);
	assert_int_equal(s->end_ns[2], 40 * US);
	assert_int_equal(s->end_ns[1], 75 * US);
	assert_int_equal(s->fold_busy[0], 65 * US);
	/* The piece followed while the collective ran: 0..35. */
	assert_int_equal(s->plog.n, 1);
	assert_int_equal(s->plog.v[0].piece, 0);
	assert_int_equal(s->plog.v[0].start_ns, 0);
	assert_int_equal(s->plog.v[0].end_ns, 35 * US);
	sim_free(s);
	graph_free(g);

	n[2].start_us = 50;
	g = mk(p, 3, n, 3, e, 1, 1);
	s = sim_new(g);
	assert_int_equal(sim_run(s, &o, &err), 0);
	assert_int_equal(s->end_ns[1], 60 * US);
	assert_int_equal(s->end_ns[2], 70 * US);
	assert_int_equal(s->fold_busy[0], 50 * US);

	/* The max-plus pass's hybrid (test_maxplus) beside it: the
	 * collective from 5 (as (1)) goes through the queue with the folded
	 * task, the same to the nanosecond and piece; from 0, the instant the
	 * folded task starts (launched by the host task at 0), the sim took
	 * the collective first (pushed first) where the hybrid has the folded
	 * task first: declined. */
	sim_free(s);
	graph_free(g);
	n[2].start_us = 5;
	g = mk(p, 3, n, 3, e, 1, 1);
	assert_int_equal(maxplus_vs_events(g, &o), SIM_MP_RUN);
	graph_free(g);
	n[2].start_us = 0;
	g = mk(p, 3, n, 3, e, 1, 1);
	assert_int_equal(maxplus_vs_events(g, &o), SIM_MP_SAMETIME);
	s = sim_new(g);

	pc[1].rel_ns = 40 * US;
	sim_fold_pieces(pc, 0, 3);
	assert_int_equal(pc[0].reach_ns, 80 * US);
	sim_opts_default(&o);
	o.fold = &fo;
	assert_int_equal(sim_run(s, &o, &err), 0);
	assert_int_equal(s->end_ns[1], 80 * US);
	assert_int_equal(s->fold_busy[0], 50 * US);
	sim_free(s);
	graph_free(g);
}

/*
 * A context-parallel ring's layer (ring_attn in model/synth/layer.c) at
 * cp 4, worked by hand: the compute stream runs attention steps K0..K3
 * and, after each later step, its log-sum-exp correction C1..C3; the side
 * stream runs the key-value transfers T0..T2 (send/recv, a collective of
 * one member present: contended).  T_i waits for the compute launched
 * before it (T1 for K0, T2 for C1) and for T_{i-1}; K_i for T_{i-1} and
 * the compute stream.  K0 100 us, K1..K3 60 us, C 10 us, T 40 us;
 * contention a = 1/4 (compute runs at 4/5 beside a transfer), b = 1/2
 * (a transfer at 2/3 beside compute).  Each step i < 3 runs K_i beside
 * T_i from the same instant: T ends after T (1 + b) = 60 us, by when K_i
 * has done 60 / (1 + a) = 48 us of its work and runs the rest alone:
 * step 0 ends at 60 + (100 - 48) = 112, steps 1 and 2 take 60 + (60 - 48)
 * = 72 and their corrections 10; step 3 (no transfer left) 60 + 10.  The
 * layer: 112 + 2 (72 + 10) + 70 = 346 us, against 310 without
 * contention (100 + 2 (60 + 10) + 70).  The max-plus pass's hybrid agrees
 * to the nanosecond.  (The target of a folded ring: docs/PERFORMANCE.md.)
 */
static void test_ring_contention(void **state)
{
	static const struct tp p[] = {{0, 1}, {0, 1}};
	static const struct tn n[] = {{0, GN_KERNEL, 0, 100, -1}, {0, GN_KERNEL, 0, 60, -1},
				      {0, GN_KERNEL, 0, 10, -1},  {0, GN_KERNEL, 0, 60, -1},
				      {0, GN_KERNEL, 0, 10, -1},  {0, GN_KERNEL, 0, 60, -1},
				      {0, GN_KERNEL, 0, 10, -1},  {1, GN_COLL, 0, 40, 0},
				      {1, GN_COLL, 0, 40, 1},	  {1, GN_COLL, 0, 40, 2}};
	static const struct te e[] = {{0, 1, O}, {1, 2, O}, {2, 3, O}, {3, 4, O}, {4, 5, O},
				      {5, 6, O}, {7, 8, O}, {8, 9, O}, {7, 1, E}, {8, 3, E},
				      {9, 5, E}, {0, 8, E}, {2, 9, E}};
	static const int64_t want[][2] = {{0, 112},   {112, 184}, {184, 194}, {194, 266},
					  {266, 276}, {276, 336}, {336, 346}, {0, 60},
					  {112, 172}, {194, 254}};
	static const int64_t alone[][2] = {{0, 100},   {100, 160}, {160, 170}, {170, 230},
					   {230, 240}, {240, 300}, {300, 310}, {0, 40},
					   {100, 140}, {170, 210}};
	const int cp = 4;
	const double a = 0.25, b = 0.5, k0 = 100, k = 60, c = 10, t = 40;
	struct prism_err err;
	struct sim_opts o;
	struct graph *g;
	struct sim *s;
	(void)state;
	/* The closed form of the comment. */
	double step0 = t * (1 + b) + k0 - t * (1 + b) / (1 + a);
	double step = t * (1 + b) + k - t * (1 + b) / (1 + a);
	assert_true(step0 + (cp - 2) * (step + c) + k + c == 346);
	g = mk(p, 2, n, 10, e, 13, 1);
	s = sim_new(g);
	assert_non_null(s);
	sim_opts_default(&o);
	o.slow_compute = a;
	o.slow_comm = b;
	prism_err_clear(&err);
	assert_int_equal(sim_run(s, &o, &err), 0);
	expect_times(s, want, 10);
	assert_int_equal(s->makespan_ns, 346 * US);
	assert_int_equal(maxplus_vs_events(g, &o), SIM_MP_RUN);
	sim_opts_default(&o);
	assert_int_equal(sim_run(s, &o, &err), 0);
	expect_times(s, alone, 10);
	assert_int_equal(maxplus_vs_events(g, &o), SIM_MP_RUN);
	sim_free(s);
	graph_free(g);
}

/*
 * The same ring layer as one pair (sim.h): a host task launching one
 * folded task whose main lane holds K0, K1, C1, K2, C2, K3, C3 and whose
 * side lane holds T0..T2, each lane waiting on the other's pieces as the
 * kernel-level graph's events have them (K1 on T0, K2 on T1, K3 on T2;
 * T1 on K0, T2 on C1).  Beside it, on a third stream of the rank, a
 * collective of one member from x_us for d_us (none where d_us is 0),
 * contended as a data-parallel reduction beside the backward is: while
 * it runs the pair's lanes are followed event by event through the
 * queue, alone they run in the pair's own loop.  The kernel-level graph
 * (the ten tasks of test_ring_contention and the same collective) and
 * the pair agree to the nanosecond: every piece's start and end (plog)
 * the task's, the pair's end the last kernel's, its busy time the
 * compute stream's, the collective's times; and the max-plus pass equals
 * sim_run on both.  Returns the pair's end in ns.
 */
static int64_t ring_pair(int64_t x_us, int64_t d_us, double a, double b)
{
	static const struct tp p[] = {{0, 1}, {0, 1}, {0, 1}};
	static const struct tp pp[] = {{0, 0}, {0, 1}, {0, 1}};
	struct tn n[] = {
	    {0, GN_KERNEL, 0, 100, -1}, {0, GN_KERNEL, 0, 60, -1},  {0, GN_KERNEL, 0, 10, -1},
	    {0, GN_KERNEL, 0, 60, -1},	{0, GN_KERNEL, 0, 10, -1},  {0, GN_KERNEL, 0, 60, -1},
	    {0, GN_KERNEL, 0, 10, -1},	{1, GN_COLL, 0, 40, 0},	    {1, GN_COLL, 0, 40, 1},
	    {1, GN_COLL, 0, 40, 2},	{2, GN_COLL, x_us, d_us, 3}};
	struct tn pn[] = {
	    {0, GN_CPU, 0, 1000, -1}, {1, GN_KERNEL, 0, 0, -1}, {2, GN_COLL, x_us, d_us, 0}};
	static const struct te e[] = {{0, 1, O}, {1, 2, O}, {2, 3, O}, {3, 4, O}, {4, 5, O},
				      {5, 6, O}, {7, 8, O}, {8, 9, O}, {7, 1, E}, {8, 3, E},
				      {9, 5, E}, {0, 8, E}, {2, 9, E}};
	static const struct te pe[] = {{0, 1, L}};
	/* The lanes' waits: main pieces 1, 3, 5 on side pieces 0, 1, 2;
	 * side pieces 1, 2 on main pieces 0, 2. */
	static const uint32_t xw[10] = {SIM_NO_XW, 0,	      SIM_NO_XW, 1, SIM_NO_XW,
					2,	   SIM_NO_XW, SIM_NO_XW, 0, 2};
	struct sim_piece pc[10];
	struct sim_folded ft = {1, 0, 0, 7, 7, 3};
	struct sim_fold fo = {&ft, 1, pc};
	int nn = d_us ? 11 : 10, pnn = d_us ? 3 : 2;
	struct prism_err err;
	struct sim_opts o;
	struct graph *g, *pg;
	struct sim *s, *ps;
	int64_t busy = 0, end = 0;

	for (int i = 0; i < 10; i++) {
		memset(&pc[i], 0, sizeof(pc[i]));
		pc[i].dur_ns = n[i].dur_us * US;
		pc[i].kind = i < 7 ? SIM_PIECE_COMPUTE : SIM_PIECE_COMM;
		pc[i].xw = xw[i];
	}
	g = mk(p, 3, n, nn, e, 13, 1);
	pg = mk(pp, 3, pn, pnn, pe, 1, 1);
	s = sim_new(g);
	ps = sim_new(pg);
	assert_non_null(s);
	assert_non_null(ps);
	sim_opts_default(&o);
	o.slow_compute = a;
	o.slow_comm = b;
	prism_err_clear(&err);
	assert_int_equal(sim_run(s, &o, &err), 0);
	o.fold = &fo;
	assert_int_equal(sim_run(ps, &o, &err), 0);
	for (int i = 0; i < 7; i++) {
		busy += s->end_ns[i] - s->start_ns[i];
		end = s->end_ns[i] > end ? s->end_ns[i] : end;
	}
	assert_int_equal(ps->end_ns[1], end);
	assert_int_equal(ps->fold_busy[0], busy);
	assert_int_equal(ps->plog.n, 0); /* a pair's pieces: xstart, xend */
	for (int i = 0; i < 10; i++) {
		int64_t a0 = ps->xstart[ps->xoff[0] + i], b0 = ps->xend[ps->xoff[0] + i];
		if (a0 != s->start_ns[i] || b0 != s->end_ns[i]) {
			print_error(
			    "piece %d: [%lld, %lld) ns, the kernel-level task [%lld, %lld)\n", i,
			    (long long)a0, (long long)b0, (long long)s->start_ns[i],
			    (long long)s->end_ns[i]);
			fail();
		}
	}
	if (d_us) {
		assert_int_equal(ps->start_ns[2], s->start_ns[10]);
		assert_int_equal(ps->end_ns[2], s->end_ns[10]);
	}
	o.fold = NULL;
	assert_int_equal(maxplus_vs_events(g, &o), SIM_MP_RUN);
	o.fold = &fo;
	/* (From 0, the instant the pair starts: the sim took the collective
	 * first where the hybrid has the pair first, as test_folded's.) */
	assert_int_equal(maxplus_vs_events(pg, &o),
			 d_us && x_us == 0 ? SIM_MP_SAMETIME : SIM_MP_RUN);
	sim_free(s);
	sim_free(ps);
	graph_free(g);
	graph_free(pg);
	return end;
}

static void test_ring_pair(void **state)
{
	(void)state;
	/* Alone: test_ring_contention's 346 us, 310 without contention. */
	assert_int_equal(ring_pair(0, 0, 0.25, 0.5), 346 * US);
	assert_int_equal(ring_pair(0, 0, 0, 0), 310 * US);
	/* A collective beside: from within K0 to within K1's transfer, over
	 * a correction and a later step, over the whole layer, after it. */
	ring_pair(50, 100, 0.25, 0.5);
	ring_pair(185, 20, 0.25, 0.5);
	ring_pair(190, 5, 0.25, 0.5);
	ring_pair(0, 500, 0.25, 0.5);
	ring_pair(30, 7, 0.25, 0.5);
	ring_pair(400, 10, 0.25, 0.5);
	ring_pair(50, 100, 0, 0);
	ring_pair(13, 263, 0.3, 0.7);
}

/* One simulator bound (sim_bind) to every graph maxplus_vs_events sees,
 * of 1 to 10 tasks, 1 to 4 ranks, with and without collectives,
 * contention and folded tasks, in the tests' order: growing and
 * shrinking. */
static struct sim *kept;

/* k, bound to g after other graphs, as sim_new(g) made fresh: the same
 * instances, and every task's times, binding and ready after the run
 * (rc its return, 1 or 0, when it is the max-plus pass). */
static void same_as_fresh(const struct sim *k, const struct sim *f, int rc)
{
	const struct graph *g = f->g;
	assert_ptr_equal(k->g, g);
	assert_int_equal(k->n_inst, f->n_inst);
	assert_int_equal(k->n_mismatched, f->n_mismatched);
	for (uint32_t c = 0; c < g->n_colls; c++)
		assert_int_equal(k->inst_of[c], f->inst_of[c]);
	assert_int_equal(k->mp_why, f->mp_why);
	assert_int_equal(k->mp_queued, f->mp_queued);
	assert_int_equal(k->mp_direct, f->mp_direct);
	assert_int_equal(k->n_done, f->n_done);
	if (rc != 1)
		return;
	assert_int_equal(k->makespan_ns, f->makespan_ns);
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		assert_int_equal(k->start_ns[u], f->start_ns[u]);
		assert_int_equal(k->end_ns[u], f->end_ns[u]);
		assert_int_equal(k->nd[u].binding, f->nd[u].binding);
		assert_int_equal(k->nd[u].ready_ns, f->nd[u].ready_ns);
	}
	assert_int_equal(k->plog.n, f->plog.n);
	for (size_t i = 0; i < f->plog.n; i++)
		assert_memory_equal(&k->plog.v[i], &f->plog.v[i], sizeof(f->plog.v[i]));
}

/* The max-plus pass on g against sim_run: 1 and the same start, end,
 * binding and ready of every task when it ran; its answer (SIM_MP_*).
 * Both again through the kept simulator, equal to the fresh ones. */
static int maxplus_vs_events(const struct graph *g, const struct sim_opts *o)
{
	struct sim *a = sim_new(g), *b = sim_new(g);
	struct prism_err err;
	int rc, why;
	assert_non_null(a);
	assert_non_null(b);
	prism_err_clear(&err);
	assert_int_equal(sim_run(a, o, &err), 0);
	rc = sim_run_maxplus(b, o, &err);
	why = b->mp_why;
	if (!kept)
		assert_non_null(kept = sim_new(NULL));
	assert_int_equal(sim_bind(kept, g), 0);
	assert_int_equal(sim_run_maxplus(kept, o, &err), rc);
	same_as_fresh(kept, b, rc);
	for (uint32_t f = 0; rc == 1 && o->fold && f < o->fold->n_tasks; f++)
		assert_int_equal(kept->fold_busy[f], b->fold_busy[f]);
	assert_int_equal(sim_bind(kept, g), 0); /* sim_run after a bind, as predict */
	assert_int_equal(sim_run(kept, o, &err), 0);
	same_as_fresh(kept, a, 1);
	assert_int_equal(rc, why == SIM_MP_RUN);
	for (uint32_t u = 0; rc == 1 && u < g->n_nodes; u++) {
		assert_int_equal(b->start_ns[u], a->start_ns[u]);
		assert_int_equal(b->end_ns[u], a->end_ns[u]);
		assert_int_equal(b->nd[u].binding, a->nd[u].binding);
		assert_int_equal(b->nd[u].ready_ns, a->nd[u].ready_ns);
	}
	if (rc == 1) {
		assert_int_equal(b->makespan_ns, a->makespan_ns);
		assert_int_equal(b->plog.n, a->plog.n);
		for (size_t i = 0; i < a->plog.n; i++)
			assert_memory_equal(&b->plog.v[i], &a->plog.v[i], sizeof(a->plog.v[i]));
		for (uint32_t f = 0; o->fold && f < o->fold->n_tasks; f++) {
			const struct sim_folded *t = &o->fold->tasks[f];
			assert_int_equal(b->fold_busy[f], a->fold_busy[f]);
			for (uint32_t k = 0; t->n2 && k < t->n + t->n2; k++) {
				assert_int_equal(b->xstart[b->xoff[f] + k],
						 a->xstart[a->xoff[f] + k]);
				assert_int_equal(b->xend[b->xoff[f] + k], a->xend[a->xoff[f] + k]);
			}
		}
	}
	sim_free(a);
	sim_free(b);
	return why;
}

/*
 * sim_run_maxplus (sim.h): equal to the event simulation where it runs,
 * declining where the queue's order or contention would decide.
 * (1) test_chain's stream, test_rendezvous' four ranks: it runs.
 * (2) Two tasks on two threads, 0-10 and 0-10, both releasing a third
 *     at 10 (ORDER and THREAD edges): which binds it is the queue's push
 *     order: declined (TIE).  The second from 5 (5-10): the first,
 *     released at 0, binds: it runs, binding as the sim's.
 * (3) test_rendezvous' members arriving at once (all at 0): declined.
 * (4) Contention on: two compute kernels on one stream with no edge
 *     between them at 0-10 and 5-15 (a hand-made graph; a stream's order
 *     is its edges): declined (OVERLAP).  On two streams: the hybrid
 *     takes them through the queue: it runs, at 0-10 and 10-20 with an
 *     event edge, at 10-20 without, at 12-22.  A kernel and a collective
 *     on two streams (test_contention), both from 0 (the queue's order
 *     at one instant does not matter without a folded task) and the
 *     collective from 5: it runs, both slowed, as the sim has them.
 *     test_folded: a folded task beside a collective.
 * (5) The hybrid's windows (mp_alone in sim.c): compute kernels K0 0-10,
 *     K1 10-40, K2 30 us, K3 10 us, K4 10 us on one stream, an
 *     all-reduce C of 50 us on another waiting on K1 (an event) and K3
 *     waiting on C.  C can run beside K1..K3 only: K0 and K4 go straight
 *     through (mp_direct 2), the four others through the queue; the same
 *     as the sim's.  K1 of no length (10-10): C starts at 10, the instant
 *     K0 (straight through) ends, but waits on it (through K1): the sim
 *     takes K0's end first; it runs.  Two kernels on one stream with no
 *     edge between them (a hand-made graph), at 5-15 and 7-17, after a
 *     collective on the other at 0-1: a stream whose order is not its
 *     edges, so no task of that rank goes straight through (mp_direct
 *     0); it runs, the kernels through the queue as the sim has them.
 * (6) test_contention's kernel and collective, on each of two ranks (the
 *     collective one instance, its members from 0 and 5): it runs, and
 *     the kept simulator, bound before to the one-rank graphs, counts
 *     two ranks.
 */
static void test_maxplus(void **state)
{
	static const struct tp p1[] = {{0, 1}};
	static const struct tn n1[] = {
	    {0, GN_KERNEL, 0, 10, -1}, {0, GN_KERNEL, 10, 20, -1}, {0, GN_KERNEL, 35, 30, -1}};
	static const struct te e1[] = {{0, 1, O}, {1, 2, O}};
	static const struct tp p2[] = {{0, 0}, {0, 0}};
	struct tn n2[] = {{0, GN_CPU, 0, 10, -1}, {0, GN_CPU, 20, 5, -1}, {1, GN_CPU, 0, 10, -1}};
	static const struct te e2[] = {{0, 1, O}, {2, 1, T}};
	static const struct tp p3[] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
	struct tn n3[] = {{0, GN_RUNTIME, 0, 1, -1},
			  {1, GN_COLL, 0, 70, 0},
			  {2, GN_RUNTIME, 10, 1, -1},
			  {3, GN_COLL, 10, 60, 0}};
	static const struct te e3[] = {{0, 1, L}, {2, 3, L}};
	static const struct tp p4[] = {{0, 1}, {0, 1}};
	struct tn n4[] = {{0, GN_KERNEL, 0, 10, -1}, {1, GN_KERNEL, 5, 10, -1}};
	static const struct te e4[] = {{0, 1, E}};
	struct tn n5[] = {{0, GN_KERNEL, 0, 100, -1}, {1, GN_COLL, 0, 50, 0}};
	struct tn n6[] = {{0, GN_KERNEL, 0, 10, -1}, {0, GN_KERNEL, 0, 30, -1},
			  {0, GN_KERNEL, 0, 30, -1}, {0, GN_KERNEL, 0, 10, -1},
			  {0, GN_KERNEL, 0, 10, -1}, {1, GN_COLL, 0, 50, 0}};
	static const struct te e6[] = {{0, 1, O}, {1, 2, O}, {2, 3, O},
				       {3, 4, O}, {1, 5, E}, {5, 3, E}};
	static const struct tp p8[] = {{0, 1}, {0, 1}, {1, 1}, {1, 1}};
	static const struct tn n8[] = {{0, GN_KERNEL, 0, 100, -1},
				       {1, GN_COLL, 0, 50, 0},
				       {2, GN_KERNEL, 0, 100, -1},
				       {3, GN_COLL, 5, 50, 0}};
	struct tn n7[] = {
	    {0, GN_KERNEL, 5, 10, -1}, {0, GN_KERNEL, 7, 10, -1}, {1, GN_COLL, 0, 1, 0}};
	struct hw_profile hw;
	struct prism_err err;
	struct sim_opts o, oc;
	struct graph *g;
	(void)state;
	sim_opts_default(&o);
	assert_int_equal(hw_load(PRISM_SOURCE_DIR "/configs/hw/h100-dgx.cfg", &hw, &err), 0);
	oc = o;
	oc.slow_compute = hw.slow_compute;
	oc.slow_comm = hw.slow_comm;
	/* (1) */
	g = mk(p1, 1, n1, 3, e1, 2, 1);
	assert_int_equal(maxplus_vs_events(g, &o), SIM_MP_RUN);
	assert_int_equal(maxplus_vs_events(g, &oc), SIM_MP_RUN);
	graph_free(g);
	g = mk(p3, 4, n3, 4, e3, 2, 2);
	assert_int_equal(maxplus_vs_events(g, &o), SIM_MP_RUN);
	graph_free(g);
	/* (2) */
	g = mk(p2, 2, n2, 3, e2, 2, 1);
	assert_int_equal(maxplus_vs_events(g, &o), SIM_MP_TIE);
	graph_free(g);
	n2[2].start_us = 5;
	n2[2].dur_us = 5;
	g = mk(p2, 2, n2, 3, e2, 2, 1);
	assert_int_equal(maxplus_vs_events(g, &o), SIM_MP_RUN);
	graph_free(g);
	/* (3) */
	n3[2].start_us = 0;
	g = mk(p3, 4, n3, 4, e3, 2, 2);
	assert_int_equal(maxplus_vs_events(g, &o), SIM_MP_TIE);
	graph_free(g);
	/* (4) */
	n4[1].proc = 0;
	g = mk(p4, 1, n4, 2, NULL, 0, 1);
	assert_int_equal(maxplus_vs_events(g, &oc), SIM_MP_OVERLAP);
	assert_int_equal(maxplus_vs_events(g, &o), SIM_MP_RUN);
	graph_free(g);
	n4[1].proc = 1;
	g = mk(p4, 2, n4, 2, NULL, 0, 1);
	assert_int_equal(maxplus_vs_events(g, &oc), SIM_MP_RUN);
	assert_int_equal(maxplus_vs_events(g, &o), SIM_MP_RUN);
	graph_free(g);
	n4[1].start_us = 10;
	g = mk(p4, 2, n4, 2, e4, 1, 1);
	assert_int_equal(maxplus_vs_events(g, &oc), SIM_MP_RUN);
	graph_free(g);
	g = mk(p4, 2, n4, 2, NULL, 0, 1);
	assert_int_equal(maxplus_vs_events(g, &oc), SIM_MP_RUN);
	graph_free(g);
	n4[1].start_us = 12;
	g = mk(p4, 2, n4, 2, NULL, 0, 1);
	assert_int_equal(maxplus_vs_events(g, &oc), SIM_MP_RUN);
	graph_free(g);
	g = mk(p4, 2, n5, 2, NULL, 0, 1);
	assert_int_equal(maxplus_vs_events(g, &oc), SIM_MP_RUN);
	assert_int_equal(maxplus_vs_events(g, &o), SIM_MP_RUN);
	graph_free(g);
	n5[1].start_us = 5;
	g = mk(p4, 2, n5, 2, NULL, 0, 1);
	assert_int_equal(maxplus_vs_events(g, &oc), SIM_MP_RUN);
	graph_free(g);
	/* (5) */
	g = mk(p4, 2, n6, 6, e6, 6, 1);
	assert_int_equal(maxplus_vs_events(g, &oc), SIM_MP_RUN);
	{
		struct sim *s = sim_new(g);
		assert_non_null(s);
		assert_int_equal(sim_run_maxplus(s, &oc, &err), 1);
		assert_int_equal(s->mp_direct, 2);
		assert_int_equal(s->mp_queued, 4);
		assert_int_equal(s->mp_q[0], 2);
		assert_int_equal(s->mp_q[4], 2);
		assert_true(s->mp_q[1] == 1 && s->mp_q[2] == 1 && s->mp_q[3] == 1 &&
			    s->mp_q[5] == 1);
		/* C beside K2 (from 40) and K3: K4 after it, at full speed. */
		assert_int_equal(s->start_ns[5], 40 * US);
		assert_true(s->end_ns[5] > 90 * US);
		assert_int_equal(s->end_ns[4], s->start_ns[4] + 10 * US);
		assert_true(s->start_ns[4] >= s->end_ns[5]);
		sim_free(s);
	}
	graph_free(g);
	n6[1].dur_us = 0;
	g = mk(p4, 2, n6, 6, e6, 6, 1);
	assert_int_equal(maxplus_vs_events(g, &oc), SIM_MP_RUN);
	graph_free(g);
	g = mk(p4, 2, n7, 3, NULL, 0, 1);
	assert_int_equal(maxplus_vs_events(g, &oc), SIM_MP_RUN);
	{
		struct sim *s = sim_new(g);
		assert_non_null(s);
		assert_int_equal(sim_run_maxplus(s, &oc, &err), 1);
		assert_int_equal(s->mp_direct, 0);
		assert_int_equal(s->mp_queued, 3);
		assert_true(s->start_ns[1] < s->end_ns[0]); /* at once */
		sim_free(s);
	}
	graph_free(g);
	/* (6) test_contention's kernel and collective on two ranks, after
	 * the one-rank graphs above: the kept simulator counts g's ranks
	 * again (sim_bind). */
	g = mk(p8, 4, n8, 4, NULL, 0, 2);
	assert_int_equal(maxplus_vs_events(g, &oc), SIM_MP_RUN);
	assert_int_equal(kept->n_gpu_ranks, 2);
	graph_free(g);
}

/* A collective's grouping key, as the simulator's instances are defined
 * (sim.h): the process group, the sequence, the kind (a send and a receive
 * one transfer), then the rank and the collective. */
struct ckey {
	uint32_t pg, seq, kind, rank, coll;
};

static int cmp_ckey(const void *a, const void *b)
{
	const struct ckey *x = a, *y = b;
	const uint32_t *u = &x->pg, *v = &y->pg;
	for (int i = 0; i < 5; i++)
		if (u[i] != v[i])
			return u[i] < v[i] ? -1 : 1;
	return 0;
}

static void test_instances(void **state)
{
	/* 4 ranks, 3000 collectives on them in a scrambled order: process
	 * groups from 300 names (string ids past one byte), sequences up to
	 * 70,000 (three bytes), kinds all-reduce, all-gather, send and receive.
	 * The instances (sim_new's radix sort) against a comparison sort of
	 * the same keys, grouped by hand: a new instance where (pg, seq)
	 * changes, or the kind changes (a mismatch: counted), or a rank comes
	 * twice. */
	enum { N = 3000, RANKS = 4 };
	static const uint8_t kinds[] = {GC_ALL_REDUCE, GC_ALL_GATHER, GC_SEND, GC_RECV};
	static struct ckey k[N];
	uint32_t pgs[300], n_inst = 0, mism = 0, first = 0;
	struct gw w;
	struct graph *g = NULL;
	struct sim *s;
	unsigned seed = 7;
	char name[32];
	(void)state;

	assert_int_equal(gw_init(&w), 0);
	for (int r = 0; r < RANKS; r++) {
		struct graph_rank x;
		struct graph_proc pr;
		memset(&x, 0, sizeof(x));
		x.rank = r;
		assert_int_equal(gw_rank(&w, &x), 0);
		memset(&pr, 0, sizeof(pr));
		pr.rank = (uint32_t)r;
		pr.gpu = 1;
		pr.tid = r;
		assert_int_equal(gw_proc(&w, &pr, NULL), 0);
	}
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "pg%d", i);
		pgs[i] = gw_intern(&w, name);
	}
	for (uint32_t i = 0; i < N; i++) {
		struct gw_node x;
		struct graph_coll c;
		uint32_t id;
		seed = seed * 1103515245u + 12345u;
		/* Few distinct (pg, seq) so that instances have members; the
		 * rank by processor (tasks grouped by it: rank i / (N / 4)). */
		memset(&x, 0, sizeof(x));
		x.proc = i / (N / RANKS);
		x.kind = GN_COLL;
		x.dur_ns = 1000 + (seed >> 8) % 5000;
		x.iter = -1;
		x.coll = UINT32_MAX;
		assert_int_equal(gw_node(&w, &x, &id), 0);
		memset(&c, 0, sizeof(c));
		c.pg = pgs[(seed >> 4) % 300 < 290 ? (seed >> 4) % 7 : (seed >> 4) % 300];
		c.seq = (seed >> 12) % 5 == 0 ? 70000 + (seed >> 16) % 3 : (seed >> 16) % 40;
		c.kind = kinds[(seed >> 20) % 7 == 0 ? (seed >> 24) % 4 : 0];
		assert_int_equal(gw_coll(&w, id, &c), 0);
	}
	assert_int_equal(gw_finish(&w, NULL, 0, &g), 0);
	gw_release(&w);
	assert_int_equal(g->n_colls, N);
	for (uint32_t c = 0; c < N; c++) {
		uint8_t kd = g->colls[c].kind;
		k[c] = (struct ckey){g->colls[c].pg, g->colls[c].seq,
				     kd == GC_SEND || kd == GC_RECV ? GC_SEND_RECV : kd,
				     g->procs[g->proc[g->colls[c].node]].rank, c};
	}
	qsort(k, N, sizeof(k[0]), cmp_ckey);
	s = sim_new(g);
	assert_non_null(s);
	for (uint32_t i = 0; i < N; i++) {
		int same = i > 0 && k[i].pg == k[i - 1].pg && k[i].seq == k[i - 1].seq;
		if (same && k[i].kind != k[i - 1].kind)
			mism++;
		if (!same || k[i].kind != k[i - 1].kind || k[i].rank == k[i - 1].rank) {
			if (n_inst) {
				assert_int_equal(s->inst_first[n_inst - 1], first);
				assert_int_equal(s->inst_size[n_inst - 1], i - first);
			}
			first = i;
			n_inst++;
		}
		assert_int_equal(s->inst_members[i], k[i].coll);
		assert_int_equal(s->inst_of[k[i].coll], n_inst - 1);
	}
	assert_int_equal(s->n_inst, n_inst);
	assert_int_equal(s->inst_first[n_inst], N);
	assert_int_equal(s->n_mismatched, mism);
	/* Instances of several members (a rank twice in a group starts
	 * another) and mismatches both came. */
	assert_true(n_inst < N * 3 / 4);
	assert_true(mism > 10);
	sim_free(s);
	graph_free(g);
}

/* prism_llround (the contention path's rounding) against libm's llround:
 * halves and their neighbours, whole numbers, both sides of 2^52 and
 * random magnitudes up to 2^62, either sign. */
static void test_llround(void **state)
{
	static const double edge[] = {0.0,
				      0.5,
				      1.5,
				      2.5,
				      0.49999999999999994,
				      4503599627370495.5,
				      4503599627370496.0,
				      4503599627370497.0,
				      9007199254740993.0,
				      4611686018427387903.0,
				      1e-300,
				      12345.5,
				      12345.499999999998};
	(void)state;
	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
		for (int sg = -1; sg <= 1; sg += 2) {
			double x = sg * edge[i];
			assert_int_equal(prism_llround(x), llround(x));
			assert_int_equal(prism_llround(nextafter(x, 0)), llround(nextafter(x, 0)));
			assert_int_equal(prism_llround(nextafter(x, 1e300)),
					 llround(nextafter(x, 1e300)));
		}
	srand(11);
	for (int k = 0; k < 200000; k++) {
		double m = (double)rand() / RAND_MAX, x = ldexp(m, rand() % 63);
		if (k % 3 == 0)
			x = floor(x) + 0.5; /* a half */
		if (k % 2)
			x = -x;
		assert_int_equal(prism_llround(x), llround(x));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_llround),
	    cmocka_unit_test(test_chain),
	    cmocka_unit_test(test_fork_join_event),
	    cmocka_unit_test(test_stream_sync),
	    cmocka_unit_test(test_device_sync),
	    cmocka_unit_test(test_launch_bound),
	    cmocka_unit_test(test_rendezvous_4_ranks),
	    cmocka_unit_test(test_lag_and_ablation),
	    cmocka_unit_test(test_contention),
	    cmocka_unit_test(test_folded),
	    cmocka_unit_test(test_ring_contention),
	    cmocka_unit_test(test_ring_pair),
	    cmocka_unit_test(test_maxplus),
	    cmocka_unit_test(test_instances),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	sim_free(kept);
	return rc;
}
