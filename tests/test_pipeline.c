/*
 * test_pipeline.c - a one-stage graph cut into pipeline stages
 * (pipeline.h): the shape of the cut and its simulated times, worked by
 * hand.
 */
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "edit.h"
#include "gwrite.h"
#include "layout.h"
#include "pipeline.h"
#include "sim.h"
#include "testutil.h"

#define US 1000

/* One rank, one step, one microbatch of two layers: a host thread
 * launching (each call 0 us) on one stream forward 0, forward 1 (10 us
 * each), backward 1, backward 0 (20 us each), then the optimizer's one
 * kernel (5 us, outside the layers). */
static const char *const names[] = {"F0", "F1", "B1", "B0", "OPT"};
static const int layer_of[] = {0, 1, 1, 0, -1};
static const int phase_of[] = {PH_FORWARD, PH_FORWARD, PH_BACKWARD, PH_BACKWARD, PH_OPTIMIZER};
static const int64_t dur_us[] = {10, 10, 20, 20, 5};

/* own: after the optimizer kernel, the trace's own all-reduce of the
 * gradient norm ("AR": 4 bytes over 2 ranks, group "gstats", 2 us), as a
 * run with a data-parallel group of 2 under the distributed optimizer
 * records it.  type: where not NULL, F0's launch is an op of that one
 * input type (record_function's "Input type") of shape [512, 1024]. */
static struct graph *base_typed(int own, const char *type)
{
	struct gw w;
	struct graph *g = NULL;
	struct graph_rank rk;
	struct graph_proc pr;
	uint32_t call[5], kern[5];
	assert_int_equal(gw_init(&w), 0);
	memset(&rk, 0, sizeof(rk));
	assert_int_equal(gw_rank(&w, &rk), 0);
	for (int q = 0; q < 2; q++) {
		memset(&pr, 0, sizeof(pr));
		pr.gpu = (uint8_t)q;
		pr.tid = q;
		assert_int_equal(gw_proc(&w, &pr, NULL), 0);
	}
	for (int i = 0; i < 5; i++) {
		struct gw_node c, k;
		gw_node_init(&c);
		c.iter = 0;
		c.mb = phase_of[i] == PH_OPTIMIZER ? -1 : 0;
		c.phase = (uint8_t)phase_of[i];
		c.layer = layer_of[i];
		k = c;
		c.proc = 0;
		c.kind = GN_RUNTIME;
		c.rtclass = RT_LAUNCH;
		c.name = gw_intern(&w, "cudaLaunchKernel");
		c.corr = i + 1;
		if (type && i == 0) {
			c.op_dims = gw_intern(&w, "[[512, 1024]]");
			c.op_types = gw_intern(&w, type);
		}
		k.proc = 1;
		k.kind = GN_KERNEL;
		k.dur_ns = dur_us[i] * US;
		k.name = gw_intern(&w, names[i]);
		k.corr = i + 1;
		assert_int_equal(gw_launch(&w, &c, &k, &call[i], &kern[i]), 0);
	}
	for (int i = 0; i + 1 < 5; i++) {
		assert_int_equal(gw_edge(&w, call[i], call[i + 1], GE_ORDER), 0);
		assert_int_equal(gw_edge(&w, kern[i], kern[i + 1], GE_ORDER), 0);
	}
	if (own) {
		struct gw_node c, k;
		struct graph_coll cl;
		uint32_t ac, ak;
		gw_node_init(&c);
		c.iter = 0;
		c.mb = -1;
		c.phase = PH_OPTIMIZER;
		k = c;
		c.proc = 0;
		c.kind = GN_RUNTIME;
		c.rtclass = RT_LAUNCH;
		c.name = gw_intern(&w, "cudaLaunchKernel");
		c.corr = 6;
		k.proc = 1;
		k.dur_ns = 2 * US;
		k.name = gw_intern(&w, "AR");
		k.corr = 6;
		memset(&cl, 0, sizeof(cl));
		cl.kind = GC_ALL_REDUCE;
		cl.bytes = 4;
		cl.group_size = 2;
		cl.pg = gw_intern(&w, "gstats");
		assert_int_equal(gw_collective(&w, &c, &k, &cl, &ac, &ak), 0);
		assert_int_equal(gw_edge(&w, call[4], ac, GE_ORDER), 0);
		assert_int_equal(gw_edge(&w, kern[4], ak, GE_ORDER), 0);
	}
	assert_int_equal(gw_finish(&w, NULL, 0, &g), 0);
	gw_release(&w);
	return g;
}

static struct graph *base_with(int own)
{
	return base_typed(own, NULL);
}

static struct graph *base(void)
{
	return base_with(0);
}

/* g cut into 2 stages, 1F1B; units: the (microbatch, pass) units it has. */
static struct graph *cut_units(const struct graph *g, int stats_n, int64_t emb_us, int widen,
			       uint64_t units)
{
	struct pipeline_plan pl;
	struct pipeline_stats ps;
	struct prism_err err;
	struct graph *p = NULL;
	memset(&pl, 0, sizeof(pl));
	pl.pp = 2;
	pl.schedule = LAYOUT_1F1B;
	pl.act_bytes = 1 << 20;
	pl.xfer_ns = 1 * US;
	pl.stats_n = stats_n;
	pl.stats_ns = 3 * US;
	pl.stats_group = 2;
	pl.emb_ns = emb_us * US;
	pl.emb_bytes = 1 << 20;
	if (widen) {
		/* The base's 2 ranks' all-reduce modelled at 1 us; the 4
		 * spanning the stages at 3 us. */
		pl.stats_widen = 1;
		pl.stats_base_ns = 1 * US;
		pl.stats_group = 4;
	}
	prism_err_clear(&err);
	assert_int_equal(pipeline_split(g, &pl, &p, &ps, &err), 0);
	assert_int_equal(ps.units, units);
	return p;
}

static struct graph *cut_widen(const struct graph *g, int stats_n, int64_t emb_us, int widen)
{
	return cut_units(g, stats_n, emb_us, widen, 2);
}

static struct graph *cut(const struct graph *g, int stats_n, int64_t emb_us)
{
	return cut_widen(g, stats_n, emb_us, 0);
}

/* The node named `name` on rank r (the only one), or UINT32_MAX. */
static uint32_t find(const struct graph *g, const char *name, uint32_t r)
{
	uint32_t at = UINT32_MAX;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->procs[g->proc[u]].rank == r &&
		    strcmp(strtab_get(&g->st, g->name[u]), name) == 0) {
			assert_int_equal(at, UINT32_MAX);
			at = u;
		}
	return at;
}

static void launch_of(const struct graph *g, uint32_t v, uint32_t *c)
{
	*c = UINT32_MAX;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (has_edge(g, u, v, GE_LAUNCH))
			*c = u;
	assert_int_not_equal(*c, UINT32_MAX);
}

/* Each stage all-reduces the gradient statistics in one group across
 * the stages, just before its optimizer on the compute stream (and its
 * launch just before the optimizer's); the optimizer of the last stage,
 * idle after its backward, waits for the first stage's backward. */
static void test_stats_across_stages(void **state)
{
	struct graph *g = base(), *p0 = cut(g, 0, 0), *p = cut(g, 1, 0), *p2 = cut(g, 2, 0);
	struct prism_err err;
	struct sim_opts o;
	struct sim *s;
	uint32_t ar[2] = {UINT32_MAX, UINT32_MAX};
	(void)state;
	/* Each statistic adds a launch and a kernel per stage, nothing else. */
	assert_int_equal(p->n_nodes, p0->n_nodes + 4);
	assert_int_equal(p->n_colls, p0->n_colls + 2);
	assert_int_equal(p2->n_nodes, p0->n_nodes + 8);
	assert_int_equal(p2->n_colls, p0->n_colls + 4);
	for (uint32_t c = 0; c < p->n_colls; c++) {
		const struct graph_coll *x = &p->colls[c];
		uint32_t r = p->procs[p->proc[x->node]].rank;
		if (strcmp(strtab_get(&p->st, x->pg), "r0.gstats") != 0)
			continue;
		assert_int_equal(x->kind, GC_ALL_REDUCE);
		assert_int_equal(x->bytes, 4);
		assert_int_equal(x->group_size, 2);
		assert_true(r < 2 && ar[r] == UINT32_MAX);
		ar[r] = x->node;
	}
	for (uint32_t r = 0; r < 2; r++) {
		uint32_t opt = find(p, "OPT", r), c, oc;
		assert_int_not_equal(ar[r], UINT32_MAX);
		assert_int_equal(p->kind[ar[r]], GN_COLL);
		assert_int_equal(p->dur_ns[ar[r]], 3 * US);
		assert_int_equal(p->phase[ar[r]], PH_OPTIMIZER);
		/* Right before the optimizer on its stream, launched right
		 * before it on its thread; one of each instance (seq 0). */
		assert_int_equal(p->proc[ar[r]], p->proc[opt]);
		assert_int_equal(ar[r] + 1, opt);
		assert_true(has_edge(p, ar[r], opt, GE_ORDER));
		launch_of(p, ar[r], &c);
		launch_of(p, opt, &oc);
		assert_int_equal(c + 1, oc);
		assert_int_equal(p->colls[p->coll[ar[r]]].seq, 0);
	}
	/* By hand (every host call 0 us, transfers 1 us): stage 0 runs F0
	 * [0, 10); F1 on stage 1 after the activations' transfer [10, 11):
	 * [11, 21), B1 [21, 41); the gradient's transfer [41, 42); B0 on
	 * stage 0 [42, 62).  The all-reduce starts when both stages reach it:
	 * [62, 65) on both, and both optimizers run [65, 70).  Without it
	 * stage 1's ran [41, 46). */
	sim_opts_default(&o);
	prism_err_clear(&err);
	assert_non_null(s = sim_new(p));
	assert_int_equal(sim_run(s, &o, &err), 0);
	for (uint32_t r = 0; r < 2; r++) {
		assert_int_equal(s->start_ns[ar[r]], 62 * US);
		assert_int_equal(s->end_ns[ar[r]], 65 * US);
		assert_int_equal(s->end_ns[find(p, "OPT", r)], 70 * US);
	}
	assert_int_equal(s->end_ns[find(p, "B0", 0)], 62 * US);
	assert_int_equal(s->end_ns[find(p, "B1", 1)], 41 * US);
	sim_free(s);
	assert_non_null(s = sim_new(p0));
	assert_int_equal(sim_run(s, &o, &err), 0);
	assert_int_equal(s->start_ns[find(p0, "OPT", 1)], 41 * US);
	assert_int_equal(s->end_ns[find(p0, "OPT", 0)], 67 * US);
	sim_free(s);
	graph_free(p2);
	graph_free(p);
	graph_free(p0);
	graph_free(g);
}

/*
 * The collectives the cut adds, labelled with the dtype they move (as
 * prism synth's, dtype.h dtype_coll_name), so that a timeline's elements
 * (bytes / the label's size) are the data's.  An fp32 trace (its first
 * layer's input [512, 1024] of "float": 524,288 values,
 * edit_activation_bytes 2,097,152 bytes): each send and receive of
 * 2,097,152 bytes "Float" (524,288 elements; were "BFloat16", 1,048,576);
 * the same of "c10::Half" 1,048,576 bytes "Half", of "c10::BFloat16" or
 * with no type recorded "BFloat16".  The statistics' all-reduce (4 bytes,
 * an fp32 norm) "Float" whatever the trace; the tied embedding's gradient
 * "Float" (emb_elem_bytes 0: fp32 main gradients), "BFloat16" or "Half"
 * at emb_elem_bytes 2.
 */
static void test_transfer_dtypes(void **state)
{
	static const struct {
		const char *type, *label;
		double bytes;
	} c[] = {{"['float']", "Float", 2097152},
		 {"['c10::Half']", "Half", 1048576},
		 {"['c10::BFloat16']", "BFloat16", 1048576},
		 {NULL, "BFloat16", 0}};
	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		for (int eb = 0; eb <= 2; eb += 2) {
			struct graph *g = base_typed(0, c[i].type), *p = NULL;
			struct pipeline_plan pl;
			struct pipeline_stats ps;
			struct prism_err err;
			int xfer = 0, stats = 0, emb = 0;
			assert_true(edit_activation_bytes(g) == c[i].bytes);
			memset(&pl, 0, sizeof(pl));
			pl.pp = 2;
			pl.schedule = LAYOUT_1F1B;
			pl.act_bytes = c[i].bytes > 0 ? c[i].bytes : 1 << 20;
			pl.xfer_ns = 1 * US;
			pl.stats_n = 1;
			pl.stats_ns = 3 * US;
			pl.stats_group = 2;
			pl.emb_ns = 4 * US;
			pl.emb_bytes = 1 << 20;
			pl.emb_elem_bytes = eb;
			prism_err_clear(&err);
			assert_int_equal(pipeline_split(g, &pl, &p, &ps, &err), 0);
			for (uint32_t k = 0; k < p->n_colls; k++) {
				const struct graph_coll *x = &p->colls[k];
				const char *dt = strtab_get(&p->st, x->dtype),
					   *pg = strtab_get(&p->st, x->pg);
				if (x->kind == GC_SEND || x->kind == GC_RECV) {
					assert_string_equal(dt, c[i].label);
					assert_int_equal(x->bytes, (int64_t)pl.act_bytes);
					/* 524,288 elements each (the no-type case's
					 * 1 MiB of bf16 too) */
					assert_int_equal(x->bytes % dtype_bytes(dt, DTYPE_COLL), 0);
					assert_int_equal(x->bytes / dtype_bytes(dt, DTYPE_COLL),
							 524288);
					xfer++;
				} else if (strcmp(pg, "r0.gstats") == 0) {
					assert_string_equal(dt, "Float");
					stats++;
				} else if (strcmp(pg, "r0.emb") == 0) {
					assert_string_equal(dt, eb == 0 ? "Float"
								: strcmp(c[i].label, "Half") == 0
								    ? "Half"
								    : "BFloat16");
					emb++;
				}
			}
			/* F0's activations forward, B1's gradient back: a send
			 * and a receive each; per stage one statistics' and one
			 * embedding's all-reduce. */
			assert_int_equal(xfer, 4);
			assert_int_equal(stats, 2);
			assert_int_equal(emb, 2);
			graph_free(p);
			graph_free(g);
		}
}

/* A tied embedding's gradient all-reduced between the end stages (both,
 * at pp 2) before the statistics: [62, 66), then the norm's [66, 69), the
 * optimizers [69, 74). */
static void test_embedding_between_ends(void **state)
{
	struct graph *g = base(), *p0 = cut(g, 0, 0), *p = cut(g, 1, 4);
	struct prism_err err;
	struct sim_opts o;
	struct sim *s;
	(void)state;
	assert_int_equal(p->n_nodes, p0->n_nodes + 8);
	sim_opts_default(&o);
	prism_err_clear(&err);
	assert_non_null(s = sim_new(p));
	assert_int_equal(sim_run(s, &o, &err), 0);
	for (uint32_t r = 0; r < 2; r++) {
		uint32_t opt = find(p, "OPT", r), ar = opt - 1, emb = opt - 2;
		const struct graph_coll *e = &p->colls[p->coll[emb]];
		assert_string_equal(strtab_get(&p->st, e->pg), "r0.emb");
		assert_int_equal(e->bytes, 1 << 20);
		assert_int_equal(e->group_size, 2);
		assert_string_equal(strtab_get(&p->st, p->colls[p->coll[ar]].pg), "r0.gstats");
		assert_int_equal(s->start_ns[emb], 62 * US);
		assert_int_equal(s->end_ns[emb], 66 * US);
		assert_int_equal(s->end_ns[ar], 69 * US);
		assert_int_equal(s->end_ns[opt], 74 * US);
	}
	sim_free(s);
	graph_free(p);
	graph_free(p0);
	graph_free(g);
}

/* A trace with its own norm all-reduce (Megatron-LM's
 * grad_stats_parallel_group: one all-reduce, its group spanning the
 * stages once cut): the cut widens it, adding none.  Per stage one
 * all-reduce, group 4, in one process group "gstats" across the stages,
 * 2 - 1 + 3 = 4 us.  By hand: stage 1's optimizer [41, 46), stage 0's
 * [62, 67); the all-reduce when both reach it, [67, 71) on both.  Not
 * widened (FSDP's two groups), the trace's own stays per stage (stage 1's
 * [46, 48)) and one more is added before each optimizer. */
static void test_own_norm_widened(void **state)
{
	struct graph *g = base_with(1), *p = cut_widen(g, 1, 0, 1), *p0 = cut_widen(g, 0, 0, 1),
		     *q = cut_widen(g, 1, 0, 0);
	struct prism_err err;
	struct sim_opts o;
	struct sim *s;
	uint32_t ar[2];
	(void)state;
	/* Nothing added: the same tasks as a cut without statistics. */
	assert_int_equal(p->n_nodes, p0->n_nodes);
	assert_int_equal(p->n_colls, p0->n_colls);
	assert_int_equal(q->n_nodes, p0->n_nodes + 4);
	for (uint32_t r = 0; r < 2; r++) {
		const struct graph_coll *x;
		ar[r] = find(p, "AR", r);
		assert_int_not_equal(ar[r], UINT32_MAX);
		assert_int_equal(p->kind[ar[r]], GN_COLL);
		x = &p->colls[p->coll[ar[r]]];
		assert_string_equal(strtab_get(&p->st, x->pg), "gstats");
		assert_int_equal(x->group_size, 4);
		assert_int_equal(x->bytes, 4);
		assert_int_equal(x->seq, 0);
		assert_int_equal(p->dur_ns[ar[r]], 4 * US);
		assert_int_equal(find(p, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", r), UINT32_MAX);
		/* Unwidened: the trace's own per stage, and one added. */
		assert_string_equal(strtab_get(&q->st, q->colls[q->coll[find(q, "AR", r)]].pg),
				    r ? "gstats.s1" : "gstats.s0");
		assert_int_equal(q->colls[q->coll[find(q, "AR", r)]].group_size, 2);
		assert_int_not_equal(find(q, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", r),
				     UINT32_MAX);
	}
	sim_opts_default(&o);
	prism_err_clear(&err);
	assert_non_null(s = sim_new(p));
	assert_int_equal(sim_run(s, &o, &err), 0);
	assert_int_equal(s->end_ns[find(p, "OPT", 1)], 46 * US);
	assert_int_equal(s->end_ns[find(p, "OPT", 0)], 67 * US);
	for (uint32_t r = 0; r < 2; r++) {
		assert_int_equal(s->start_ns[ar[r]], 67 * US);
		assert_int_equal(s->end_ns[ar[r]], 71 * US);
	}
	sim_free(s);
	graph_free(q);
	graph_free(p0);
	graph_free(p);
	graph_free(g);
}

/* A hand-made step for the event tests: one rank, one step; a host
 * thread (processor 0, every call 0 us) launches tasks[] in order, each
 * on the compute stream (1) or the data-parallel stream (2), with
 * order edges along each processor and the event edges ev[] (by name,
 * from the recording stream's task to the waiting one). */
struct ht {
	const char *name;
	int stream, layer, phase, mb;
	int64_t us;
};

static struct graph *hand(const struct ht *t, int n, const char *const (*ev)[2], int nev)
{
	struct gw w;
	struct graph *g = NULL;
	struct graph_rank rk;
	struct graph_proc pr;
	uint32_t call[32], kern[32], last[3] = {UINT32_MAX, UINT32_MAX, UINT32_MAX};
	assert_true(n <= 32);
	assert_int_equal(gw_init(&w), 0);
	memset(&rk, 0, sizeof(rk));
	assert_int_equal(gw_rank(&w, &rk), 0);
	for (int q = 0; q < 3; q++) {
		memset(&pr, 0, sizeof(pr));
		pr.gpu = (uint8_t)(q > 0);
		pr.tid = q;
		assert_int_equal(gw_proc(&w, &pr, NULL), 0);
	}
	for (int i = 0; i < n; i++) {
		struct gw_node c, k;
		gw_node_init(&c);
		c.iter = 0;
		c.mb = t[i].mb;
		c.phase = (uint8_t)t[i].phase;
		c.layer = t[i].layer;
		k = c;
		c.proc = 0;
		c.kind = GN_RUNTIME;
		c.rtclass = RT_LAUNCH;
		c.name = gw_intern(&w, "cudaLaunchKernel");
		c.corr = i + 1;
		k.proc = (uint32_t)t[i].stream;
		k.kind = GN_KERNEL;
		k.dur_ns = t[i].us * US;
		k.name = gw_intern(&w, t[i].name);
		k.corr = i + 1;
		assert_int_equal(gw_launch(&w, &c, &k, &call[i], &kern[i]), 0);
		if (i)
			assert_int_equal(gw_edge(&w, call[i - 1], call[i], GE_ORDER), 0);
		if (last[t[i].stream] != UINT32_MAX)
			assert_int_equal(gw_edge(&w, last[t[i].stream], kern[i], GE_ORDER), 0);
		last[t[i].stream] = kern[i];
	}
	for (int e = 0; e < nev; e++) {
		int a = -1, b = -1;
		for (int i = 0; i < n; i++) {
			a = strcmp(t[i].name, ev[e][0]) == 0 ? i : a;
			b = strcmp(t[i].name, ev[e][1]) == 0 ? i : b;
		}
		assert_true(a >= 0 && b >= 0);
		assert_int_equal(gw_edge(&w, kern[a], kern[b], GE_EVENT), 0);
	}
	assert_int_equal(gw_finish(&w, NULL, 0, &g), 0);
	gw_release(&w);
	return g;
}

/* FSDP's and ZeRO-3's gathers across units (issue: an FSDP2 trace's cut
 * was refused as "a dependency cycle").  Two microbatches of two layers;
 * each unit gathers layer 0's weights first on the DP stream (G..., 5
 * us) after the compute stream's last task, layer 0's compute waiting
 * for it: forwards F<layer>_<mb> 10 us, backwards B<layer>_<mb> 20 us.
 * The base runs f0 b0 f1 b1, so f1's gather waits for B0_0, b0's for
 * F1_0.  Cut to 1F1B on 2 stages, stage 0 runs f0 f1 b0 b1: f1's gather
 * waits for what the compute stream of stage 0 had run before f1, F0_0
 * (B0_0 would come after F0_1, which waits for that gather: the cycle);
 * b0's waited for stage 1's task and waits for none.  By hand
 * (transfers 1 us): stage 0 G_f0 [0, 5), F0_0 [5, 15), sent [15, 16);
 * G_f1 [15, 20), F0_1 [20, 30), sent [30, 31); G_b0 [20, 25), G_b1
 * [25, 30).  Stage 1 F1_0 [16, 26), B1_0 [26, 46), sent [46, 47); F1_1
 * [46, 56), B1_1 [56, 76), sent [76, 77).  Stage 0 B0_0 [47, 67), B0_1
 * [77, 97). */
static void test_gathers_across_units(void **state)
{
	static const struct ht t[] = {
	    {"G_f0", 2, 0, PH_FORWARD, 0, 5},	{"F0_0", 1, 0, PH_FORWARD, 0, 10},
	    {"F1_0", 1, 1, PH_FORWARD, 0, 10},	{"G_b0", 2, 0, PH_BACKWARD, 0, 5},
	    {"B1_0", 1, 1, PH_BACKWARD, 0, 20}, {"B0_0", 1, 0, PH_BACKWARD, 0, 20},
	    {"G_f1", 2, 0, PH_FORWARD, 1, 5},	{"F0_1", 1, 0, PH_FORWARD, 1, 10},
	    {"F1_1", 1, 1, PH_FORWARD, 1, 10},	{"G_b1", 2, 0, PH_BACKWARD, 1, 5},
	    {"B1_1", 1, 1, PH_BACKWARD, 1, 20}, {"B0_1", 1, 0, PH_BACKWARD, 1, 20},
	};
	static const char *const ev[][2] = {
	    {"G_f0", "F0_0"}, {"F1_0", "G_b0"}, {"G_b0", "B0_0"}, {"B0_0", "G_f1"},
	    {"G_f1", "F0_1"}, {"F1_1", "G_b1"}, {"G_b1", "B0_1"},
	};
	struct graph *g = hand(t, 12, ev, 7), *p;
	struct prism_err err;
	struct sim_opts o;
	struct sim *s;
	(void)state;
	p = cut_units(g, 0, 0, 0, 4);
	assert_true(has_edge(p, find(p, "F0_0", 0), find(p, "G_f1", 0), GE_EVENT));
	assert_false(has_edge(p, find(p, "B0_0", 0), find(p, "G_f1", 0), GE_EVENT));
	for (uint32_t u = 0; u < p->n_nodes; u++)
		assert_false(has_edge(p, u, find(p, "G_b0", 0), GE_EVENT));
	assert_true(has_edge(p, find(p, "G_f0", 0), find(p, "F0_0", 0), GE_EVENT));
	assert_true(has_edge(p, find(p, "G_b1", 0), find(p, "B0_1", 0), GE_EVENT));
	assert_int_equal(find(p, "G_f0", 1), UINT32_MAX);
	sim_opts_default(&o);
	prism_err_clear(&err);
	assert_non_null(s = sim_new(p));
	assert_int_equal(sim_run(s, &o, &err), 0);
	assert_int_equal(s->start_ns[find(p, "G_f1", 0)], 15 * US);
	assert_int_equal(s->end_ns[find(p, "F0_1", 0)], 30 * US);
	assert_int_equal(s->end_ns[find(p, "G_b1", 0)], 30 * US);
	assert_int_equal(s->end_ns[find(p, "B1_1", 1)], 76 * US);
	assert_int_equal(s->start_ns[find(p, "B0_0", 0)], 47 * US);
	assert_int_equal(s->end_ns[find(p, "B0_1", 0)], 97 * US);
	sim_free(s);
	graph_free(p);
	graph_free(g);
}

/* ZeRO-1/2's gathers of the updated weights: after the optimizer (OPT0,
 * OPT1 per layer, OPTE outside the layers: on both stages) the DP stream
 * waits for the compute stream once, before the first gather (AG0), and
 * gathers each layer's weights (AG0, AG1, 4 us) and the rest's (AGE).
 * Cut to 2 stages, stage 1 has no AG0: its wait holds back its own first
 * gather, AG1 (without it AG1 ran at 0, beside the backward).  By hand
 * (transfers 1 us): stage 1's F1 [11, 21), B1 [21, 41), OPT1 [41, 43),
 * OPTE [43, 44), AG1 [44, 48), AGE [48, 52). */
static void test_update_gathers_wait(void **state)
{
	static const struct ht t[] = {
	    {"F0", 1, 0, PH_FORWARD, 0, 10},	  {"F1", 1, 1, PH_FORWARD, 0, 10},
	    {"B1", 1, 1, PH_BACKWARD, 0, 20},	  {"B0", 1, 0, PH_BACKWARD, 0, 20},
	    {"OPT0", 1, 0, PH_OPTIMIZER, -1, 2},  {"OPT1", 1, 1, PH_OPTIMIZER, -1, 2},
	    {"OPTE", 1, -1, PH_OPTIMIZER, -1, 1}, {"AG0", 2, 0, PH_OPTIMIZER, -1, 4},
	    {"AG1", 2, 1, PH_OPTIMIZER, -1, 4},	  {"AGE", 2, -1, PH_OPTIMIZER, -1, 4},
	};
	static const char *const ev[][2] = {{"OPTE", "AG0"}};
	struct graph *g = hand(t, 10, ev, 1), *p;
	struct prism_err err;
	struct sim_opts o;
	struct sim *s;
	(void)state;
	p = cut(g, 0, 0);
	assert_true(has_edge(p, find(p, "OPTE", 0), find(p, "AG0", 0), GE_EVENT));
	assert_true(has_edge(p, find(p, "OPTE", 1), find(p, "AG1", 1), GE_EVENT));
	assert_false(has_edge(p, find(p, "OPTE", 0), find(p, "AGE", 0), GE_EVENT));
	sim_opts_default(&o);
	prism_err_clear(&err);
	assert_non_null(s = sim_new(p));
	assert_int_equal(sim_run(s, &o, &err), 0);
	assert_int_equal(s->end_ns[find(p, "OPTE", 1)], 44 * US);
	assert_int_equal(s->start_ns[find(p, "AG1", 1)], 44 * US);
	assert_int_equal(s->end_ns[find(p, "AGE", 1)], 52 * US);
	sim_free(s);
	graph_free(p);
	graph_free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stats_across_stages),
	    cmocka_unit_test(test_transfer_dtypes),
	    cmocka_unit_test(test_embedding_between_ends),
	    cmocka_unit_test(test_own_norm_widened),
	    cmocka_unit_test(test_gathers_across_units),
	    cmocka_unit_test(test_update_gathers_wait),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
