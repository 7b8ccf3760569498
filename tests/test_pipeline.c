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

static struct graph *base(void)
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
	assert_int_equal(gw_finish(&w, NULL, 0, &g), 0);
	gw_release(&w);
	return g;
}

static struct graph *cut(const struct graph *g, int stats_n, int64_t emb_us)
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
	prism_err_clear(&err);
	assert_int_equal(pipeline_split(g, &pl, &p, &ps, &err), 0);
	assert_int_equal(ps.units, 2);
	return p;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stats_across_stages),
	    cmocka_unit_test(test_embedding_between_ends),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
