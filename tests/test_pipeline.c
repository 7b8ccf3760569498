/*
 * test_pipeline.c - a one-stage graph cut into pipeline stages
 * (pipeline.h): the shape of the cut and its simulated times, worked by
 * hand.
 */
#include <stdlib.h>
#include <string.h>

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
 * records it. */
static struct graph *base_with(int own)
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

static struct graph *base(void)
{
	return base_with(0);
}

static struct graph *cut_widen(const struct graph *g, int stats_n, int64_t emb_us, int widen)
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
	assert_int_equal(ps.units, 2);
	return p;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stats_across_stages),
	    cmocka_unit_test(test_embedding_between_ends),
	    cmocka_unit_test(test_own_norm_widened),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
