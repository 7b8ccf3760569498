/* predict.c - one candidate, end to end. */
#include "predict.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "cost.h"
#include "hier.h"
#include "kperf.h"
#include "edit.h"
#include "metrics.h"
#include "pipeline.h"
#include "reshape.h"
#include "sim.h"

void predict_derive(const struct synth_in *in, double iter_s, struct predict_out *out)
{
	double peak = in->hw->peak_flops[in->lay.dtype];
	out->iter_s = iter_s;
	out->gpus = in->lay.tp * in->lay.pp * in->lay.dp * layout_cp(&in->lay);
	out->global_batch = (double)in->lay.mbs * in->lay.microbatches * in->lay.dp;
	out->tokens_per_s = iter_s > 0 ? out->global_batch * in->m.seq / iter_s : 0;
	out->mfu = iter_s > 0 && peak > 0
		       ? llm_flops_iter(&in->m, out->global_batch, 0) / (iter_s * out->gpus * peak)
		       : 0;
	out->gpu_hours = out->gpus * iter_s / 3600.0;
	synth_mem(in, &out->mem);
}

double predict_analytic_clock(const struct synth_in *in, double *clock)
{
	struct analytic_in ai;
	struct analytic_out ao;
	struct prism_err err;
	int rc;

	prism_err_clear(&err);
	analytic_in_of(in, &ai);
	ai.compute_eff = PREDICT_ANALYTIC_EFF;
	rc = analytic_estimate(&ai, &ao, &err);
	*clock = rc == 0 && hw_has_balance(in->hw) ? ao.clock : 0;
	return rc == 0 ? ao.t_iter : 0;
}

double predict_analytic(const struct synth_in *in)
{
	double c;
	return predict_analytic_clock(in, &c);
}

/* The clock in's kernels run at: its own (analytic_step_clock: the
 * screen's estimate, PREDICT_ANALYTIC_EFF 1 as analytic_in_of's), else the
 * reference one. */
static double run_clock(const struct synth_in *in)
{
	double c = analytic_step_clock(in);
	return c > 0 ? c : hw_run_clock(in->hw, in->lay.dtype, in->lay.power_w);
}

/* out from a settled (or extended) run of in and its build's counts. */
static void settled(const struct synth_in *in, const struct settle_out *st, uint64_t tasks,
		    uint64_t kernels, uint32_t exact, uint32_t interp, struct predict_out *out)
{
	predict_derive(in, st->iter_s, out);
	out->bubble = st->bubble;
	out->exposed_compute_s = st->exposed_compute_s;
	out->exposed_comm_s = st->exposed_comm_s;
	out->overlap_s = st->overlap_s;
	out->idle_s = st->idle_s;
	out->tasks = tasks;
	out->kernels = kernels;
	out->kdb_exact = exact;
	out->kdb_interpolated = interp;
}

struct predict_scratch {
	struct synth_tpl *tpl;	   /* the folded units' templates */
	struct sim *sm;		   /* the simulator, bound to each graph settled */
	struct settle_scratch *sc; /* settling's memory besides the simulator */
};

struct predict_scratch *predict_scratch_new(void)
{
	struct predict_scratch *s = prism_calloc(1, sizeof(*s));
	if (s && (!(s->tpl = synth_tpl_new()) || !(s->sm = sim_new(NULL)) ||
		  !(s->sc = settle_scratch_new()))) {
		predict_scratch_free(s);
		s = NULL;
	}
	return s;
}

void predict_scratch_free(struct predict_scratch *s)
{
	if (!s)
		return;
	synth_tpl_free(s->tpl);
	sim_free(s->sm);
	settle_scratch_free(s->sc);
	free(s);
}

/* predict_synth() with a thread's scratch s (or NULL). */
static int synth_scratch(const struct synth_in *in, struct predict_scratch *s,
			 struct predict_out *out, struct graph **keep_g, struct synth_out *keep_so,
			 struct prism_err *err)
{
	struct graph *g = NULL;
	struct synth_out so;
	struct settle_out st;
	struct synth_in built = *in;
	struct synth_tpl *tpl = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	/* At the step's own clock, from one estimate of the run (a sweep's
	 * candidate takes its screen's: analytic_step_clock), every build of
	 * it (hier's points too) at the same. */
	built.clock = analytic_step_clock(in);
	/* A graph nobody keeps is only simulated: its ops' shapes (for
	 * writing it as a trace, or editing it) would be built for nothing. */
	built.no_shapes = in->no_shapes || !keep_g;
	/* Units fold only where nobody keeps the graph (synth.h). */
	built.units = in->units && !keep_g;
	if (built.units) {
		/* Many microbatches: the line through a few (hier.h). */
		struct hier_out h;
		if ((rc = hier_extrapolate_tpl(&built, s ? s->tpl : NULL, s ? s->sm : NULL,
					       s ? s->sc : NULL, &h, err)) < 0)
			return rc;
		if (rc == 1) {
			settled(in, &h.st, h.tasks, h.kernels, h.kdb_exact, h.kdb_interpolated,
				out);
			return 0;
		}
		/* Built directly as without the points' templates (none
		 * carried: the build starts empty, the memory kept). */
		if (s) {
			tpl = s->tpl;
			synth_tpl_reset(tpl);
		}
	}
	if ((rc = synth_build_tpl(&built, tpl, &g, &so, err)))
		return rc;
	if ((rc = settle_synth_sim(s ? s->sm : NULL, s ? s->sc : NULL, g, &so, &st, err))) {
		synth_tpl_recycle(tpl, g);
		synth_tpl_recycle_out(tpl, &so);
		return rc;
	}
	settled(in, &st, so.tasks, so.kernels, so.kdb_exact, so.kdb_interpolated, out);
	if (rc == 0 && keep_g) {
		*keep_g = g;
		g = NULL;
	}
	if (rc == 0 && keep_so)
		*keep_so = so; /* (the caller's: tpl forgets its arrays) */
	else
		synth_tpl_recycle_out(tpl, &so);
	synth_tpl_recycle(tpl, g); /* (NULL once kept) */
	return rc;
}

int predict_synth(const struct synth_in *in, struct predict_out *out, struct graph **keep_g,
		  struct synth_out *keep_so, struct prism_err *err)
{
	return synth_scratch(in, NULL, out, keep_g, keep_so, err);
}

/* ---- one path from a base ------------------------------------------------ */

static const char *const method_names[PM_NMETHODS] = {"synthesised", "replay", "graph edit",
						      "rebuilt"};

const char *predict_method_name(int m)
{
	return m >= 0 && m < PM_NMETHODS ? method_names[m] : "?";
}

/* Simulate g: its iteration time (metrics_step_time), and the mean over
 * the same steps of the slowest rank's host and GPU sides. */
static int replay_graph(const struct graph *g, const struct hw_profile *added,
			struct predict_out *out, struct prism_err *err)
{
	struct sim *s = sim_new(g);
	struct sim_opts o;
	struct metrics_iter *its = NULL;
	long n = 0;
	int rc;

	if (!s)
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	sim_opts_default(&o);
	if (added) {
		/* Collectives an edit added slow the compute beside them as
		 * synth's do (and are slowed by it); the trace's own kernels
		 * already hold what its collectives did to them. */
		o.slow_compute = added->slow_compute;
		o.slow_comm = added->slow_comm;
		o.contention_added = 1;
	}
	rc = sim_run(s, &o, err);
	if (rc == 0 && (n = metrics_iterations(s, &its)) < 0)
		rc = prism_err_set(err, PRISM_ENOMEM, "out of memory");
	if (rc == 0 && (metrics_step_time(its, n, &out->iter_s) ||
			metrics_step_sides(its, n, &out->host_s, &out->gpu_s, &out->host_bound)))
		rc = prism_err_set(err, PRISM_ENOMEM, "out of memory");
	if (rc == 0)
		out->tasks = g->n_nodes;
	free(its);
	sim_free(s);
	return rc;
}

/* Traced instant t of host thread p moved with its tasks scaled: kept
 * at its share of the task it falls in (sim_map_time maps a traced offset
 * into a task, and the last task's tail has no later start to map to). */
static int64_t scaled_instant(const struct graph *g, uint32_t p, const int64_t *orig, int64_t t,
			      double scale)
{
	uint32_t lo = graph_proc_upto(g, p, t), u;
	int64_t off;

	if (lo == 0)
		return t;
	u = g->procs[p].first + lo - 1;
	if (g->kind[u] >= GN_KERNEL) /* not a host task */
		return t;
	off = t - g->start_ns[u];
	return g->start_ns[u] +
	       (off <= orig[u] ? (int64_t)llround((double)off * scale)
			       : g->dur_ns[u] + (int64_t)llround((double)(off - orig[u]) * scale));
}

/* Host tasks of g at `scale` times their traced durations and lags, and
 * the steps' bounds moved with them.  orig: n durations, n lags, then the
 * steps' starts and durations. */
static void scale_host(struct graph *g, const int64_t *orig, double scale)
{
	const int64_t *lag = orig + g->n_nodes, *step = lag + g->n_nodes;

	for (uint32_t u = 0; u < g->n_nodes; u++) {
		if (g->kind[u] < GN_KERNEL) /* CPU work, runtime calls, waits */
			g->dur_ns[u] = (int64_t)llround((double)orig[u] * scale);
		g->lag_ns[u] = (int64_t)llround((double)lag[u] * scale);
	}
	for (uint32_t i = 0; i < g->n_iters; i++) {
		struct graph_iter *it = &g->iters[i];
		int64_t a = step[2 * i], b = a + step[2 * i + 1];

		if (it->proc != UINT32_MAX && g->procs[it->proc].n) {
			a = scaled_instant(g, it->proc, orig, a, scale);
			b = scaled_instant(g, it->proc, orig, b, scale);
		}
		it->start_ns = a;
		it->dur_ns = b - a;
	}
}

int predict_match_step(struct graph *g, double step_s, double *scale, double *traced_s,
		       struct prism_err *err)
{
	int64_t *orig = prism_malloc((2 * ((size_t)g->n_nodes + g->n_iters) + 1) * sizeof(*orig));
	double lo = PREDICT_HOST_SCALE_MIN, hi = PREDICT_HOST_SCALE_MAX, s = 1;
	struct predict_out o;
	int rc;

	*scale = 1;
	if (!orig)
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	memcpy(orig, g->dur_ns, (size_t)g->n_nodes * sizeof(*orig));
	memcpy(orig + g->n_nodes, g->lag_ns, (size_t)g->n_nodes * sizeof(*orig));
	for (uint32_t i = 0; i < g->n_iters; i++) {
		orig[2 * ((size_t)g->n_nodes + i)] = g->iters[i].start_ns;
		orig[2 * ((size_t)g->n_nodes + i) + 1] = g->iters[i].dur_ns;
	}
	if ((rc = replay_graph(g, NULL, &o, err)))
		goto out;
	*traced_s = o.iter_s;
	if (!(o.iter_s > 0)) {
		rc = prism_err_set(err, PRISM_EARG,
				   "the base has no step to match (no ProfilerStep in its trace)");
		goto out;
	}
	if (fabs(o.iter_s / step_s - 1) <= PREDICT_STEP_TOL)
		goto out;
	/* The step grows with the host's scale (never shrinks): bisect it
	 * in log space between the limits, the ends checked first. */
	for (int end = 0; end < 2; end++) {
		double x = end ? hi : lo;
		scale_host(g, orig, x);
		if ((rc = replay_graph(g, NULL, &o, err)))
			goto out;
		if (end == 0 && o.iter_s > step_s * (1 + PREDICT_STEP_TOL)) {
			rc = prism_err_set(err, PRISM_EARG,
					   "the base's replay takes %.3f ms with its host %g x as "
					   "fast (%.3f ms as traced): the step given is shorter "
					   "than its GPU side",
					   o.iter_s * 1e3, 1 / lo, *traced_s * 1e3);
			goto out;
		}
		if (end == 1 && o.iter_s < step_s * (1 - PREDICT_STEP_TOL)) {
			rc = prism_err_set(err, PRISM_EARG,
					   "the base's replay takes only %.3f ms with its host %g "
					   "x as slow (%.3f ms as traced)",
					   o.iter_s * 1e3, hi, *traced_s * 1e3);
			goto out;
		}
	}
	{
		/* The closest kept where the step jumps (a wait that ends
		 * earlier once the host is faster). */
		double best = s, best_e = HUGE_VAL;
		for (int it = 0; it < 60 && best_e > PREDICT_STEP_TOL; it++) {
			double e;
			s = sqrt(lo * hi);
			scale_host(g, orig, s);
			if ((rc = replay_graph(g, NULL, &o, err)))
				goto out;
			if ((e = fabs(o.iter_s / step_s - 1)) < best_e) {
				best = s;
				best_e = e;
			}
			if (o.iter_s < step_s)
				lo = s;
			else
				hi = s;
		}
		scale_host(g, orig, best);
		*scale = best;
	}
out:
	if (rc)
		scale_host(g, orig, 1);
	free(orig);
	return rc;
}

int predict_fit(const struct graph *g, const struct synth_in *base, struct synth_in *fitted,
		struct prism_err *err)
{
	struct graph *model = NULL;
	struct predict_out pm;
	struct edit_fit fit;
	int rc;

	if ((rc = predict_synth(base, &pm, &model, NULL, err)))
		return rc;
	rc = edit_fit(g, model, base, &fit);
	graph_free(model);
	if (rc)
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	for (int k = 0; k < KC_NCLASSES; k++) {
		fitted->cost[k] = fit.cost[k];
		fitted->scale[k] = fit.scale[k];
	}
	if (fit.host_fitted) {
		fitted->cpu_op_s = fit.cpu_op_s;
		fitted->launch_s = fit.launch_s;
	}
	return 0;
}

/* "params=N" in a run description (scripts/gpt_bench.py writes it: the
 * model's own count, untied heads included), or 0. */
static double meta_params(const struct graph *g)
{
	const char *m = g->meta ? strtab_get(&g->st, g->meta) : "", *p = strstr(m, ";params=");
	return p ? strtod(p + 8, NULL) : 0;
}

int predict_trace_dtype(const struct graph *g)
{
	double t[HW_NDTYPES] = {0};
	uint8_t *cls = prism_malloc(g->n_nodes ? g->n_nodes : 1);
	int best = -1;
	if (!cls || cost_classify_all(g, cls)) {
		free(cls);
		return -2;
	}
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		int dt;
		if (g->kind[u] != GN_KERNEL || !cost_compute_bound(cls[u]) ||
		    (dt = cost_dtype(g, u)) < 0 || dt >= HW_NDTYPES)
			continue;
		t[dt] += (double)g->dur_ns[u];
	}
	free(cls);
	for (int d = 0; d < HW_NDTYPES; d++)
		if (t[d] > 0 && (best < 0 || t[d] > t[best]))
			best = d;
	return best;
}

int predict_base_init(struct predict_base *b, int kind, const struct graph *g,
		      const struct synth_in *in, const struct hw_profile *hw, int base_dp,
		      struct prism_err *err)
{
	int rc;
	double tot = 0, per = 0;

	memset(b, 0, sizeof(*b));
	b->kind = kind;
	b->g = g;
	b->hw = *hw;
	if (kind == PB_MODEL) {
		b->in = *in;
		b->in.hw = &b->hw;
		if ((rc = predict_synth(&b->in, &b->self, NULL, NULL, err)))
			return rc;
		b->self.method = PM_SYNTH;
		snprintf(b->found, sizeof(b->found), "a model: %s", b->in.m.name);
		return 0;
	}
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		if (g->layer[u] + 1 > b->layers)
			b->layers = g->layer[u] + 1;
		if (g->mb[u] + 1 > b->microbatches)
			b->microbatches = g->mb[u] + 1;
	}
	if (b->microbatches < 1)
		b->microbatches = 1;
	if (kind == PB_ANNOTATED) {
		b->in = *in;
		b->in.hw = &b->hw;
		/* A run that takes its first microbatch's gradients adds the
		 * others' (PyTorch's autograd): rebuilt candidates too. */
		reshape_taken_grads(g, NULL, &b->in.acc_elem_bytes);
		if ((rc = predict_fit(g, &b->in, &b->in, err)))
			return rc;
	} else {
		synth_in_default(&b->in);
		b->in.hw = &b->hw;
		b->in.m.layers = b->layers;
		b->in.lay.microbatches = b->microbatches;
		b->in.lay.dp = base_dp > 0 ? base_dp
			       : g->n_ranks && g->ranks[0].world_size > 0
				   ? (int)g->ranks[0].world_size
				   : 1;
		b->in.steps = 0;
		/* Its precision, where its kernels' ops say: another is not a
		 * graph edit (predict_method refuses it). */
		if ((rc = predict_trace_dtype(g)) == -2)
			return prism_err_set(err, PRISM_ENOMEM, "out of memory");
		if (rc >= 0) {
			b->in.lay.dtype = rc;
			b->dtype_known = 1;
		}
	}
	/* The gradient collectives: all-reduces and reduce-scatters of the
	 * backward pass and the optimizer, the process group moving the most
	 * bytes (or the most of them, without sizes); a plain trace's
	 * data-parallel degree is that group's size unless given. */
	{
		struct {
			uint32_t pg;
			int64_t size;
			double bytes, n;
		} grp[32];
		int ng = 0, best = -1;
		for (uint32_t c = 0; c < g->n_colls; c++) {
			const struct graph_coll *gc = &g->colls[c];
			uint32_t u = gc->node;
			int k;
			if ((gc->kind != GC_ALL_REDUCE && gc->kind != GC_REDUCE_SCATTER) ||
			    gc->group_size < 2 || gc->group_size > LAYOUT_MAX_GPUS ||
			    (g->phase[u] != PH_BACKWARD && g->phase[u] != PH_OPTIMIZER))
				continue;
			for (k = 0; k < ng; k++)
				if (grp[k].pg == gc->pg && grp[k].size == gc->group_size)
					break;
			if (k == ng) {
				if (ng == 32)
					continue;
				grp[ng].pg = gc->pg;
				grp[ng].size = gc->group_size;
				grp[ng].bytes = grp[ng].n = 0;
				ng++;
			}
			grp[k].bytes += gc->bytes > 0 ? (double)gc->bytes : 0;
			grp[k].n++;
		}
		for (int k = 0; k < ng; k++)
			if (best < 0 || grp[k].bytes > grp[best].bytes ||
			    (grp[k].bytes == grp[best].bytes && grp[k].n > grp[best].n))
				best = k;
		/* A plain trace's world without gradient collectives runs other
		 * parallelism (DeepSeek-V3's 64 ranks: expert parallelism):
		 * its data-parallel degree is taken as 1. */
		if (kind == PB_TRACE && base_dp <= 0)
			b->in.lay.dp = best >= 0 ? (int)grp[best].size : 1;
		if (best >= 0 && grp[best].size == b->in.lay.dp)
			b->grad_group = b->in.lay.dp;
		else if (best >= 0 && kind == PB_TRACE && base_dp > 0)
			b->other_group = (int)grp[best].size; /* against base_dp */
		if (best >= 0)
			snprintf(b->grad_pg, sizeof(b->grad_pg), "%s",
				 grp[best].pg ? strtab_get(&g->st, grp[best].pg) : "");
		if (best >= 0 && !b->grad_pg[0])
			snprintf(b->grad_pg, sizeof(b->grad_pg), "unnamed, %d ranks",
				 (int)grp[best].size);
		b->world = g->n_ranks && g->ranks[0].world_size > 0 &&
				   g->ranks[0].world_size <= LAYOUT_MAX_GPUS
			       ? (int)g->ranks[0].world_size
			       : (int)g->n_ranks;
	}
	for (uint32_t u = 0; u < g->n_nodes && !b->opt_per_layer; u++)
		b->opt_per_layer =
		    g->phase[u] == PH_OPTIMIZER && g->layer[u] >= 0 && g->kind[u] >= GN_KERNEL;
	if (edit_params(g, b->layers, &tot, &per))
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	if (kind == PB_ANNOTATED) {
		/* Per rank: a stage's layers, a tensor-parallel share. */
		double split = (double)b->in.lay.tp * b->in.lay.pp;
		b->layer_params = llm_layer_params_rank(&b->in.m, b->in.lay.tp);
		b->params = meta_params(g) > 0 ? meta_params(g) / split
			    : tot > 0	       ? tot
					       : llm_params(&b->in.m) / split;
	} else {
		b->params = tot;
		b->layer_params = per;
	}
	b->act_bytes = kind == PB_ANNOTATED
			   ? (double)b->in.lay.mbs * b->in.m.seq * b->in.m.hidden *
				 kperf_resid_bytes(b->in.lay.dtype, b->in.lay.fp32_residual) /
				 b->in.lay.tp
			   : edit_activation_bytes(g);
	if (edit_host_costs(g, &b->host_op_s, &b->host_launch_s, &b->host_event_s) ||
	    b->host_op_s < 0) {
		b->host_op_s = b->in.cpu_op_s;
		b->host_launch_s = b->in.launch_s;
	}
	if (b->host_event_s < 0)
		b->host_event_s = b->in.event_s;
	if ((rc = replay_graph(g, NULL, &b->self, err)))
		return rc;
	b->self.method = PM_REPLAY;
	if (kind == PB_ANNOTATED) {
		struct predict_out r = b->self;
		predict_derive(&b->in, r.iter_s, &b->self);
		b->self.host_s = r.host_s;
		b->self.gpu_s = r.gpu_s;
		b->self.host_bound = r.host_bound;
		b->self.tasks = r.tasks;
		b->self.method = PM_REPLAY;
	} else {
		b->self.gpus = b->in.lay.dp;
		b->self.gpu_hours = b->self.gpus * b->self.iter_s / 3600.0;
	}
	snprintf(b->self.how, sizeof(b->self.how), "the base's own replay");
	if (kind == PB_ANNOTATED) {
		if ((rc = predict_synth(&b->in, &b->rebuilt, NULL, NULL, err)))
			return rc;
		b->rebuilt.method = PM_REBUILD;
		snprintf(b->rebuilt.how, sizeof(b->rebuilt.how),
			 "the base's own configuration rebuilt (kernel times calibrated on it)");
	}
	{
		char par[32] = "parameters unknown";
		if (b->params > 0)
			snprintf(par, sizeof(par), "%.3g parameters", b->params);
		char dp[80] = "no gradient collectives";
		if (!b->grad_group && b->world > 1)
			snprintf(dp, sizeof(dp), "no gradient collectives in a world of %d",
				 b->world);
		if (b->grad_group)
			snprintf(dp, sizeof(dp), "gradient collectives on group '%.40s'",
				 b->grad_pg);
		snprintf(b->found, sizeof(b->found), "%d layers, %d microbatch%s, dp %d (%s), %s",
			 b->layers, b->microbatches, b->microbatches == 1 ? "" : "es", b->in.lay.dp,
			 dp, par);
	}
	return 0;
}

/* What a graph edit cannot change between a and b: the knobs that
 * differ but for those an edit changes (layout_editable), the stages
 * compared as placed.  Its first knob, or -1 when none differs; -2 when
 * only the model's own fields differ (vocabulary, key-value heads, FFN
 * kind, tied head, positions, experts). */
static int shape_change(const struct synth_in *a, const struct synth_in *b)
{
	struct layout x, y;
	layout_mask d;
	synth_mem_layout(a, &x);
	synth_mem_layout(b, &y);
	x.partition = y.partition = LAYOUT_PART_GIVEN; /* placed: part[] says it */
	x.part_first = x.part_last = y.part_first = y.part_last = 0;
	d = layout_diff(&a->m, &x, &b->m, &y) & ~layout_editable();
	for (int k = 0; k < LK_N; k++)
		if (d & LK_BIT(k))
			return k;
	return a->m.vocab == b->m.vocab && llm_kv_heads(&a->m) == llm_kv_heads(&b->m) &&
		       a->m.gated == b->m.gated && a->m.untied == b->m.untied &&
		       a->m.rope == b->m.rope && a->m.experts == b->m.experts &&
		       a->m.q_lora_rank == b->m.q_lora_rank &&
		       a->m.kv_lora_rank == b->m.kv_lora_rank &&
		       a->m.qk_nope_head_dim == b->m.qk_nope_head_dim &&
		       a->m.qk_rope_head_dim == b->m.qk_rope_head_dim &&
		       a->m.v_head_dim == b->m.v_head_dim
		   ? -1
		   : -2;
}

/* A change of the model's width or tensor parallelism that re-timing
 * the base's kernels can make (edit.h): a described base, flash
 * attention, the FFN and the key-value heads keeping their ratios, TP
 * collectives already there (tp > 1) and sequence parallelism as it
 * was; not multi-head latent attention (edit.c re-times plain
 * attention's GEMMs). */
static int reshapes(const struct predict_base *b, const struct synth_in *c)
{
	const struct synth_in *a = &b->in;
	if (a->m.hidden == c->m.hidden && a->lay.tp == c->lay.tp)
		return 0;
	return b->kind == PB_ANNOTATED && a->lay.flash && c->lay.flash && !llm_mla(&a->m) &&
	       (int64_t)a->m.ffn * c->m.hidden == (int64_t)c->m.ffn * a->m.hidden &&
	       (int64_t)llm_kv_heads(&a->m) * c->m.heads ==
		   (int64_t)llm_kv_heads(&c->m) * a->m.heads &&
	       a->m.gated == c->m.gated && a->lay.sp == c->lay.sp &&
	       (a->lay.tp == c->lay.tp || (a->lay.tp > 1 && c->lay.tp > 1));
}

/* A one-stage base split into stages (pipeline.h): GPipe or 1F1B. */
static int splits(const struct synth_in *a, const struct synth_in *c)
{
	return a->lay.pp == 1 && c->lay.pp > 1 && c->lay.vp == 1 &&
	       (c->lay.schedule == LAYOUT_GPIPE || c->lay.schedule == LAYOUT_1F1B);
}

/* The same GPU at the same clock (run_clock: the step's own, from one
 * estimate of each side's description, else its GEMMs' dtype's step
 * clock under its power cap), so that an edit's two sides run where
 * synth's own builds of them would. */
static int same_hw(const struct synth_in *a, const struct synth_in *b)
{
	return (a->hw == b->hw || strcmp(a->hw->id, b->hw->id) == 0) &&
	       run_clock(a) == run_clock(b);
}

/* Why a graph edit cannot make cand from b, or "" when it can. */
static void why_not_edit(const struct predict_base *b, const struct synth_in *c, char *why,
			 size_t n)
{
	const struct synth_in *a = &b->in;
	struct synth_in c2 = *c;
	int k;
	why[0] = '\0';
	if (a->m.experts > 0 || c->m.experts > 0 || layout_cp(&a->lay) > 1 ||
	    layout_cp(&c->lay) > 1) {
		/* The edits assume alike layers and one token split: an MoE run
		 * (dense and expert layers, expert groups) or a context-parallel
		 * one (the ring's steps) is rebuilt from its description. */
		snprintf(
		    why, n,
		    "mixture-of-experts and context parallelism: the graph is rebuilt from the "
		    "run description, not edited");
		return;
	}
	if (b->g && b->g->n_iters == 0 &&
	    (c->m.layers != a->m.layers || c->lay.microbatches != a->lay.microbatches ||
	     c->lay.pp != a->lay.pp)) {
		/* Copies and stages are made step by step (a vLLM trace has no
		 * steps: its 36 layers were found, its tasks are in none). */
		snprintf(why, n,
			 "%s: the trace has no steps (ProfilerStep#N ranges) whose tasks an "
			 "edit could repeat or cut",
			 c->m.layers != a->m.layers		      ? "layers"
			 : c->lay.microbatches != a->lay.microbatches ? "microbatches"
								      : "pipeline stages");
		return;
	}
	if (splits(a, c)) {
		/* Stages are an edit too; the rest must agree. */
		c2.lay.pp = a->lay.pp;
		c2.lay.schedule = a->lay.schedule;
		if (b->layers <= 0) {
			snprintf(why, n, "pipeline stages: no layers found in the trace to cut");
			return;
		}
		if (c->m.layers < c->lay.pp) {
			snprintf(why, n, "pipeline stages: %d layers cannot fill %d stages",
				 c->m.layers, c->lay.pp);
			return;
		}
		if (b->act_bytes <= 0) {
			snprintf(why, n,
				 "pipeline stages: no activation size (a run description, or the "
				 "first layer's input shapes)");
			return;
		}
	} else if (c->lay.pp != a->lay.pp) {
		snprintf(why, n,
			 "pipeline stages: only a one-stage run is split (GPipe or 1F1B, no "
			 "virtual stages)");
		return;
	}
	if (llm_mla(&a->m) && (a->m.hidden != c->m.hidden || a->lay.tp != c->lay.tp)) {
		snprintf(why, n,
			 "%s: multi-head latent attention's projections are not re-timed at "
			 "another width or TP (an edit knows plain attention's GEMMs)",
			 a->lay.tp != c->lay.tp ? "tensor parallelism" : "hidden size");
		return;
	}
	if (reshapes(b, c)) {
		c2.m.hidden = a->m.hidden;
		c2.m.ffn = a->m.ffn;
		c2.m.heads = a->m.heads;
		c2.m.kv_heads = a->m.kv_heads;
		c2.lay.tp = a->lay.tp;
	}
	c = &c2;
	if (b->kind == PB_TRACE && c->lay.dtype != a->lay.dtype) {
		snprintf(why, n,
			 b->dtype_known
			     ? "dtype: the trace's GEMMs, attention and convolutions ran in %s; "
			       "another precision is rebuilt from a run description, not "
			       "re-timed from its kernels"
			     : "dtype: the trace's precision is unknown (no GEMM, attention or "
			       "convolution with its op's input types: profile with "
			       "record_shapes=True)%s",
			 b->dtype_known ? hw_dtype_name(a->lay.dtype) : "");
		return;
	}
	if ((k = shape_change(a, c)) != -1) {
		snprintf(why, n,
			 "%s: a graph edit changes layers, microbatches, dp, pipeline stages (from "
			 "one), the hardware, and with a run description the hidden size and TP "
			 "(from TP > 1)",
			 k == LK_tp	  ? "tensor parallelism"
			 : k == LK_pp	  ? "pipeline stages"
			 : k == LK_hidden ? "hidden size"
			 : k >= 0	  ? layout_knobs[k].id
					  : "the model's shape or layout");
		return;
	}
	if (c->m.layers != a->m.layers) {
		if (b->layers <= 0)
			snprintf(why, n,
				 "layers: no layers found in the trace (no prism::layer "
				 "ranges, no nn.Module ...Layer_N/...Block_N names, "
				 "no repeated op blocks)");
		else if (a->lay.pp > 1 && c->m.layers % a->m.layers)
			snprintf(why, n, "layers: with %d stages only a multiple of %d", a->lay.pp,
				 a->m.layers);
	}
	if (!why[0] && c->lay.microbatches != a->lay.microbatches && a->lay.pp > 1)
		snprintf(why, n, "microbatches: the pipeline schedule is not edited as a graph");
	if (!why[0] && c->lay.dp != a->lay.dp && !b->grad_group) {
		if (a->lay.dp > 1)
			snprintf(
			    why, n,
			    "dp: no gradient collectives of the %d-rank data-parallel group found "
			    "(all-reduce or reduce-scatter with a size): nothing to re-time",
			    a->lay.dp);
		else if (c->lay.zero)
			snprintf(why, n, "dp: ZeRO's collectives are not added to a graph");
		else if (b->other_group > 0)
			snprintf(why, n,
				 "dp: the trace's gradient collectives are of a %d-rank group "
				 "('%.40s'), not of the %d ranks given as the base's "
				 "data-parallel degree: leave --base-dp (base_dp) out, or give %d",
				 b->other_group, b->grad_pg, a->lay.dp, b->other_group);
		else if (b->params <= 0)
			snprintf(why, n,
				 "dp: the trace has no gradient collectives to re-time and no "
				 "parameter sizes to add them (a run description, a fused or "
				 "for-each optimizer's shapes, or autograd's AccumulateGrad ops' "
				 "shapes: profile with record_shapes=True)");
		else if (b->layers <= 0)
			snprintf(why, n,
				 "dp: %.0f parameters found, but no layers to add gradient "
				 "collectives after",
				 b->params);
		else if (b->layer_params <= 0)
			snprintf(why, n,
				 "dp: %.0f parameters found, but not each layer's (their shapes "
				 "do not repeat once a layer)",
				 b->params);
	}
}

const struct predict_out *predict_base_same(const struct predict_base *b, int method)
{
	return method == PM_REBUILD && b->rebuilt.iter_s > 0 ? &b->rebuilt : &b->self;
}

int predict_method(const struct predict_base *b, const struct synth_in *c, struct prism_err *err)
{
	char why[320];
	if (b->kind == PB_MODEL)
		return PM_SYNTH;
	if (shape_change(&b->in, c) == -1 && same_hw(&b->in, c) && c->m.layers == b->in.m.layers &&
	    c->lay.microbatches == b->in.lay.microbatches && c->lay.dp == b->in.lay.dp &&
	    c->lay.schedule == b->in.lay.schedule)
		return PM_REPLAY;
	why_not_edit(b, c, why, sizeof(why));
	/* A described trace rebuilds, by default, what would stretch its own
	 * kernels and host beyond their measured sizes: another width, TP or
	 * stages (docs/MODEL.md, "Graph edits"). */
	if (!why[0] && b->kind == PB_ANNOTATED &&
	    (b->prefer == PREDICT_REBUILD ||
	     (b->prefer == PREDICT_EDIT_PREFERRED && (reshapes(b, c) || splits(&b->in, c)))))
		return PM_REBUILD;
	if (!why[0])
		return PM_EDIT;
	if (b->kind == PB_ANNOTATED)
		return PM_REBUILD;
	prism_err_set(err, PRISM_EARG, "the trace has no run description (prism::model#): %s", why);
	return -1;
}

/* Copies of n items making n2: k each when n2 = k n (more on the first
 * ones otherwise); fewer: the first n2 - 1 and the last. */
static void spread(int n, int n2, int32_t *copies)
{
	for (int i = 0; i < n; i++)
		copies[i] = n2 >= n ? n2 / n + (i < n2 % n) : 0;
	if (n2 < n) {
		for (int i = 0; i < n2 - 1; i++)
			copies[i] = 1;
		copies[n2 > 1 ? n - 1 : 0] = 1;
	}
}

/* An all-reduce of the data-parallel group an edit adds (reshape.h). */
struct dp_comm {
	const struct hw_profile *hw;
	struct comm_group grp;
	double eff;
};

static int64_t dp_allreduce_ns(const void *ctx, double bytes)
{
	const struct dp_comm *d = ctx;
	struct comm_est ce;
	if (comm_time(d->hw, GC_ALL_REDUCE, bytes, d->grp, d->eff, COMM_AUTO, &ce))
		return 0;
	return prism_ns_round(ce.time_s * 1e9);
}

/* A gradient accumulation's add of `bytes` on the base's GPU (re-timed
 * with the rest of its kernels where the candidate's differs). */
static int64_t acc_add_ns(const void *ctx, double bytes)
{
	return prism_ns_round(kperf_mem_s(ctx, HW_MEM_ELEMENTWISE, bytes) * 1e9);
}

/* The candidate as a graph edit of the base. */
/* A candidate made as a graph edit of the base: what the edit changes and
 * what it has counted, between its steps. */
struct edit_job {
	const struct predict_base *b;
	const struct synth_in *a, *c; /* the base's configuration, the candidate's */
	struct reshape_plan plan;
	struct reshape_stats rs;
	struct edit_stats es;
	struct dp_comm dpc;
	double dp_first[LAYOUT_MAX_STAGES], dp_last[LAYOUT_MAX_STAGES];
	int32_t *lc, *mc; /* copies of each layer, of each microbatch */
	double opt;	  /* the optimizer's time, scaled */
	int structural, add, split, shaped;
	int stats_n; /* gradient statistics all-reduced across the cut stages */
	int emb;     /* and a tied embedding's gradient between the end ones */
	/* The base's and the candidate's GPUs at their run clocks, where a
	 * dtype, a cap or the step's own mix changes a profile's clock
	 * (retime_plan: run_clock). */
	struct hw_profile hw_from, hw_to;
};

/* Layers repeated or dropped: every stage's layers alike, the optimizer
 * scaled by the parameters (where it is not per layer already). */
static int plan_layers(struct edit_job *j)
{
	const struct predict_base *b = j->b;
	const struct synth_in *a = j->a, *c = j->c;
	int L = b->layers;
	if (c->m.layers == a->m.layers)
		return 0;
	if (!(j->lc = prism_malloc((size_t)L * sizeof(*j->lc))))
		return PRISM_ENOMEM;
	/* Labels count every stage's layers: each repeats alike. */
	spread(L, (int)((int64_t)c->m.layers * L / a->m.layers), j->lc);
	j->plan.layer_copies = j->lc;
	j->plan.n_layers = L;
	j->structural = 1;
	if (b->params > 0 && b->layer_params > 0 && !b->opt_per_layer)
		j->opt = (b->params +
			  (double)(c->m.layers - a->m.layers) / a->lay.pp * b->layer_params) /
			 b->params;
	return 0;
}

/* Microbatches repeated or dropped. */
static int plan_microbatches(struct edit_job *j)
{
	const struct predict_base *b = j->b;
	int M = j->a->lay.microbatches, M2 = j->c->lay.microbatches, pat;
	int32_t *mc;
	if (M2 == M)
		return 0;
	if (!(mc = j->mc = prism_malloc((size_t)M * sizeof(*mc))))
		return PRISM_ENOMEM;
	/* New microbatches copy one that accumulates gradients (not the
	 * first) and does not synchronise them (not the last); the last keeps
	 * its collectives.  Fewer: the first and the last stay (the last
	 * alone where it synchronises). */
	pat = M >= 3 ? 1 : M == 2 && !b->grad_group ? 1 : 0;
	for (int i = 0; i < M; i++)
		mc[i] = 1;
	if (M2 > M) {
		mc[pat] += M2 - M;
		/* Copies of a microbatch that took its gradients add them
		 * instead. */
		j->plan.add_acc = 1;
		j->plan.acc_ns = acc_add_ns;
		j->plan.acc_ctx = &b->hw;
		if (pat == M - 1 && b->grad_group)
			j->plan.strip_group = b->grad_group;
	} else {
		for (int i = 0; i < M; i++)
			mc[i] = 0;
		for (int i = 0; i < M2 - 1; i++)
			mc[i] = 1;
		mc[M2 > 1 || b->grad_group ? M - 1 : 0] = 1;
	}
	j->plan.mb_copies = mc;
	j->plan.n_mbs = M;
	j->structural = 1;
	return 0;
}

/* Data parallelism added to a run that had none: a gradient all-reduce
 * per bucket, as synth reduces them. */
static void plan_dp(struct edit_job *j)
{
	const struct predict_base *b = j->b;
	const struct synth_in *a = j->a, *c = j->c;
	struct reshape_plan *plan = &j->plan;
	int per = hw_domain(c->hw) / (a->lay.tp > 0 ? a->lay.tp : 1);
	if (c->lay.dp == a->lay.dp || b->grad_group || c->lay.dp <= 1)
		return;
	j->dpc.hw = c->hw;
	j->dpc.eff = a->comm_eff;
	j->dpc.grp.n = c->lay.dp;
	j->dpc.grp.per_node = per < 1 ? 1 : per > c->lay.dp ? c->lay.dp : per;
	plan->add_dp = 1;
	plan->dp = c->lay.dp;
	/* As synth reduces them: fp32 main gradients in Megatron-LM's
	 * buckets, the output side's first and the embedding's last (a plain
	 * trace's parameters outside its layers, from its optimizer's shapes,
	 * all with the embedding). */
	plan->dp_grad_bytes = synth_grad_bytes(c);
	plan->dp_bucket_params = synth_bucket_params(c);
	plan->dp_layer_params =
	    b->kind == PB_ANNOTATED ? llm_layer_params_rank(&c->m, c->lay.tp) : b->layer_params;
	for (int s = 0; s < c->lay.pp && s < LAYOUT_MAX_STAGES; s++) {
		if (b->kind == PB_ANNOTATED) {
			synth_extra_params(c, s, &j->dp_first[s], &j->dp_last[s]);
		} else {
			j->dp_first[s] = 0;
			j->dp_last[s] = s == 0 && b->params > b->layers * b->layer_params
					    ? b->params - b->layers * b->layer_params
					    : 0;
		}
	}
	plan->dp_first = j->dp_first;
	plan->dp_last = j->dp_last;
	plan->n_dp_extra =
	    (uint32_t)(c->lay.pp < LAYOUT_MAX_STAGES ? c->lay.pp : LAYOUT_MAX_STAGES);
	plan->dp_coll_ns = dp_allreduce_ns;
	plan->dp_ctx = &j->dpc;
	j->structural = j->add = 1;
}

/* The base's graph with the planned layers, microbatches and data
 * parallelism (reshape.h), or a clone of it: 0 with *cg set, or an error. */
static int reshaped(struct edit_job *j, struct graph **cg, struct prism_err *err)
{
	const struct predict_base *b = j->b;
	int rc;
	if (!j->structural)
		return (*cg = graph_clone(b->g))
			   ? 0
			   : prism_err_set(err, PRISM_ENOMEM, "out of memory");
	/* Added tasks' host costs: the base's medians. */
	j->plan.cpu_op_ns = prism_ns_round(b->host_op_s * 1e9);
	j->plan.launch_ns = prism_ns_round(b->host_launch_s * 1e9);
	j->plan.event_ns = prism_ns_round(b->host_event_s * 1e9);
	j->plan.gpu_lag_ns = prism_ns_round(j->a->gpu_lag_s * 1e9);
	if ((rc = reshape_apply(b->g, &j->plan, cg, &j->rs, err)) == PRISM_EINTERNAL) {
		/* A refusal of this base's edit, as the others (exit 2), not a
		 * failure of prism's. */
		prism_err_prefix(err,
				 "%s cannot be a graph edit of this trace (its steps overlap where "
				 "the copies would wait on each other)",
				 j->mc ? "the microbatch count" : "this candidate");
		err->code = rc = PRISM_EARG;
	}
	return rc;
}

/* The copy's time of `to` bytes over that of `from` (kernel model), or 0
 * where there is no such copy. */
static double copy_ratio(const struct synth_in *a, const struct synth_in *c, double from, double to)
{
	double t0 = from > 0 ? kperf_mem_s(a->hw, HW_MEM_ELEMENTWISE, from) : 0;
	return t0 > 0 && to > 0 ? kperf_mem_s(c->hw, HW_MEM_ELEMENTWISE, to) / t0 : 0;
}

/* The last stage's output side under ZeRO-3/FSDP (pipeline_plan's head):
 * a tied head's copy of the word embedding gathered and its gradient
 * reduce-scattered with the final norm's, as synth does
 * (synth_head_colls), where the base's one stage gathered the norm
 * alone. */
static void head_plan(const struct synth_in *a, const struct synth_in *c, struct pipeline_plan *pl)
{
	struct synth_head hb, hc;
	if (!synth_head_colls(a, 0, &hb) || !synth_head_colls(c, c->lay.pp - 1, &hc) ||
	    hc.params <= hb.params)
		return;
	for (int i = 0; i < 3; i++) {
		static const int kinds[3] = {GC_ALL_GATHER, GC_REDUCE_SCATTER, GC_ALL_REDUCE};
		struct comm_est be, ce;
		double from = i == 2 ? hb.ar_bytes : i ? hb.rs_bytes : hb.ag_bytes;
		double to = i == 2 ? hc.ar_bytes : i ? hc.rs_bytes : hc.ag_bytes;
		struct comm_group gb = {i == 2 ? hb.replicas : hb.group,
					i == 2 ? hb.replicas_per_node : hb.per_node};
		struct comm_group gc = {i == 2 ? hc.replicas : hc.group,
					i == 2 ? hc.replicas_per_node : hc.per_node};
		if (from <= 0 || to <= 0 ||
		    comm_time(a->hw, kinds[i], from, gb, a->comm_eff, COMM_AUTO, &be) ||
		    comm_time(c->hw, kinds[i], to, gc, a->comm_eff, COMM_AUTO, &ce))
			continue;
		pl->head[i].base_bytes = (int64_t)from;
		pl->head[i].bytes = (int64_t)to;
		pl->head[i].base_ns = prism_ns_round(be.time_s * 1e9);
		pl->head[i].ns = prism_ns_round(ce.time_s * 1e9);
		if (i == 2)
			continue;
		pl->head[i].in_ratio =
		    i ? copy_ratio(a, c, hb.rs_in, hc.rs_in) : copy_ratio(a, c, hb.ag_in, hc.ag_in);
		pl->head[i].out_ratio = i ? copy_ratio(a, c, hb.rs_out, hc.rs_out)
					  : copy_ratio(a, c, hb.ag_out, hc.ag_out);
	}
}

/* A one-stage base cut into the candidate's stages (pipeline.h): *cg
 * replaced; the optimizer outside the layers scaled to a stage's share. */
static int split_stages(struct edit_job *j, struct graph **cg, struct prism_err *err)
{
	const struct predict_base *b = j->b;
	const struct synth_in *a = j->a, *c = j->c;
	struct pipeline_plan pl;
	struct pipeline_stats ps;
	struct graph *sg = NULL;
	struct comm_group grp;
	struct comm_est ce;
	int rc;

	if (!splits(a, c))
		return 0;
	/* A run description says whose ZeRO/FSDP ran: stages it cannot run
	 * with (DeepSpeed's ZeRO-2/3) are refused as synth refuses them, by
	 * the layout's rule, not left to the cut. */
	if (b->kind == PB_ANNOTATED && (rc = layout_check(&c->m, &c->lay, c->hw, err)))
		return rc;
	memset(&pl, 0, sizeof(pl));
	pl.pp = c->lay.pp;
	pl.schedule = c->lay.schedule;
	pl.act_bytes = b->act_bytes;
	grp.n = 2;
	grp.per_node = a->lay.tp * c->lay.dp * 2 <= hw_domain(c->hw) ? 2 : 1;
	if (comm_time(c->hw, GC_SEND, pl.act_bytes, grp, a->comm_eff, COMM_AUTO, &ce) == 0)
		pl.xfer_ns = prism_ns_round(ce.time_s * 1e9);
	pl.cpu_op_ns = prism_ns_round(b->host_op_s * 1e9);
	pl.launch_ns = prism_ns_round(b->host_launch_s * 1e9);
	pl.event_ns = prism_ns_round(b->host_event_s * 1e9);
	pl.gpu_lag_ns = prism_ns_round(a->gpu_lag_s * 1e9);
	/* The step's end coupled across the stages as in prism synth: the
	 * gradient statistics all-reduced over the group spanning them. */
	{
		struct comm_group gs[2];
		int n = synth_grad_stats_groups(c, gs);
		pl.stats_n = synth_grad_stats_n(c);
		pl.stats_group = gs[n - 1].n;
		if (comm_time(c->hw, GC_ALL_REDUCE, 4, gs[n - 1], a->comm_eff, COMM_AUTO, &ce) == 0)
			pl.stats_ns = prism_ns_round(ce.time_s * 1e9);
		/* One group (Megatron-LM's grad_stats_parallel_group, not FSDP's
		 * two): the trace's own statistics' all-reduces are that group's
		 * at the base, widened rather than run twice. */
		pl.stats_widen = n == 1;
		if (pl.stats_widen && synth_grad_stats_groups(a, gs) == 1 && gs[0].n > 1 &&
		    comm_time(a->hw, GC_ALL_REDUCE, 4, gs[0], a->comm_eff, COMM_AUTO, &ce) == 0)
			pl.stats_base_ns = prism_ns_round(ce.time_s * 1e9);
		/* A tied embedding's gradient between the end stages: only a
		 * run description says the head is tied. */
		pl.emb_elem_bytes = synth_grad_bytes(c);
		if (b->kind == PB_ANNOTATED && synth_embed_grad_reduce(c, gs, &pl.emb_bytes) &&
		    comm_time(c->hw, GC_ALL_REDUCE, pl.emb_bytes, gs[0], a->comm_eff, COMM_AUTO,
			      &ce) == 0)
			pl.emb_ns = prism_ns_round(ce.time_s * 1e9);
		/* The last stage's output side under ZeRO-3/FSDP: a tied
		 * head's copy of the word embedding gathered and its gradient
		 * reduce-scattered with the final norm's, as synth does. */
		if (b->kind == PB_ANNOTATED)
			head_plan(a, c, &pl);
	}
	rc = pipeline_split(*cg, &pl, &sg, &ps, err);
	graph_free(*cg);
	*cg = sg;
	if (rc == PRISM_EINTERNAL) {
		/* This trace's refusal (exit 2), as the reshape's. */
		prism_err_prefix(err, "pipeline stages cannot be cut from this trace");
		err->code = rc = PRISM_EARG;
	}
	if (rc)
		return rc;
	j->split = 1;
	j->stats_n = pl.stats_n;
	j->emb = pl.emb_ns > 0;
	if (b->opt_per_layer && b->kind == PB_ANNOTATED) {
		/* The optimizer outside the layers, run on every stage, is the
		 * embedding's and the head's: the stage holding the most of them
		 * (a tied head's copy on the last stage is the word embedding
		 * again), over the one stage's. */
		double f, l, most = 0, one = 0;
		struct synth_in one_stage = *c;
		one_stage.lay.pp = 1;
		for (int s = 0; s < c->lay.pp; s++) {
			synth_extra_params(c, s, &f, &l);
			most = f + l > most ? f + l : most;
		}
		synth_extra_params(&one_stage, 0, &f, &l);
		one = f + l;
		j->opt *= one > 0 ? most / one : 1.0 / c->lay.pp;
	} else {
		j->opt /= c->lay.pp; /* each stage's optimizer over its share */
	}
	return 0;
}

/* What re-timing the kernels takes (edit.h): the hardware, the data
 * parallelism's collectives, and the width and TP a described base is
 * reshaped to. */
static void retime_plan(struct edit_job *j, struct edit_retime *r)
{
	const struct predict_base *b = j->b;
	const struct synth_in *a = j->a, *c = j->c;
	memset(r, 0, sizeof(*r));
	/* Each GPU at its run's clock (a ratio of two kernel-model times takes
	 * both): the base's description's own (run_clock: its step's mix, or
	 * the step clock of its GEMM dtype under its cap), the candidate's. */
	r->from = hw_at_clock(a->hw, run_clock(a), &j->hw_from);
	r->to = hw_at_clock(c->hw, run_clock(c), &j->hw_to);
	r->dp_from = b->grad_group ? (int)b->grad_group : 0;
	r->dp_to = b->grad_group ? c->lay.dp : 0;
	r->comm_eff = a->comm_eff;
	if (reshapes(b, c)) {
		struct llm shape = c->m;
		double l0 = llm_layer_params_rank(&a->m, a->lay.tp),
		       l1 = llm_layer_params_rank(&c->m, c->lay.tp);
		r->m_from = &a->m;
		r->m_to = &c->m;
		r->mbs = a->lay.mbs;
		r->recompute = a->lay.recompute;
		shape.hidden = a->m.hidden;
		shape.ffn = a->m.ffn;
		shape.heads = a->m.heads;
		shape.kv_heads = a->m.kv_heads;
		r->hr = (double)c->m.hidden / a->m.hidden;
		r->tp_from = a->lay.tp;
		r->tp_to = c->lay.tp;
		r->sp = a->lay.sp;
		r->layer_param_ratio = l0 > 0 ? l1 / l0 : 1;
		/* The optimizer outside the layers follows all parameters, or
		 * where the layers' own carry their layer (re-timed by
		 * layer_param_ratio) those outside them. */
		if (b->opt_per_layer) {
			double e0 = llm_params(&shape) - shape.layers * llm_layer_params(&shape),
			       e1 = llm_params(&c->m) - c->m.layers * llm_layer_params(&c->m);
			j->opt *= e0 > 0 ? e1 / c->lay.tp / (e0 / a->lay.tp) : 1;
		} else {
			j->opt *= llm_params(&c->m) / c->lay.tp / (llm_params(&shape) / a->lay.tp);
		}
		j->shaped = 1;
	}
	r->opt_scale = j->opt;
	r->tp = a->lay.tp;
	for (int k = 0; k < KC_NCLASSES; k++) {
		r->overhead_s[k] =
		    a->cost[k].overhead_s > 0 ? a->cost[k].overhead_s * a->scale[k] : 0;
		r->model_scale[k] = a->cost[k].eff > 0 ? a->scale[k] / a->cost[k].eff : a->scale[k];
	}
}

/* What the edit did, for people, into out->how. */
static void describe(const struct edit_job *j, struct predict_out *out)
{
	const struct synth_in *a = j->a, *c = j->c;
	size_t at = 0;
#define HOW(...)                                                                                   \
	do {                                                                                       \
		if (at < sizeof(out->how))                                                         \
			at += (size_t)snprintf(out->how + at, sizeof(out->how) - at, __VA_ARGS__); \
	} while (0)
	if (j->lc)
		HOW("layers %d -> %d (%s); ", a->m.layers, c->m.layers,
		    c->m.layers > a->m.layers ? "layer tasks repeated" : "layer tasks dropped");
	if (j->opt != 1 && (j->lc || !j->split))
		HOW("optimizer x%.2f by parameters%s; ", j->opt, j->split ? " and stages" : "");
	else if (j->split)
		HOW("optimizer outside the layers x1/%d (a stage's share); ", c->lay.pp);
	else if (j->lc)
		HOW("optimizer kept (no parameter count); ");
	if (j->split)
		HOW("pp 1 -> %d (%s: layers cut into stages, %d activation bytes sent, "
		    "%d gradient statistic%s a step all-reduced across them%s); ",
		    c->lay.pp, c->lay.schedule == LAYOUT_GPIPE ? "gpipe" : "1f1b",
		    (int)j->b->act_bytes, j->stats_n, j->stats_n == 1 ? "" : "s",
		    j->emb ? ", the tied embedding's gradient between the end ones" : "");
	if (j->mc)
		HOW("microbatches %d -> %d (%s); ", a->lay.microbatches, c->lay.microbatches,
		    c->lay.microbatches > a->lay.microbatches ? "repeated" : "dropped");
	if (j->rs.accs_added)
		HOW("%" PRIu64 " gradient accumulations added (the copied microbatch took its "
		    "gradients); ",
		    j->rs.accs_added);
	if (j->add)
		HOW("dp %d -> %d: %" PRIu64 " gradient all-reduces added; ", a->lay.dp, c->lay.dp,
		    j->rs.colls_added);
	else if (c->lay.dp != a->lay.dp)
		HOW("dp %d -> %d: %" PRIu64 " collectives re-timed (%" PRIu64
		    " without a size kept); ",
		    a->lay.dp, c->lay.dp, j->es.colls_scaled, j->es.colls_unsized);
	if (j->shaped && c->m.hidden != a->m.hidden)
		HOW("hidden %d -> %d; ", a->m.hidden, c->m.hidden);
	if (j->shaped && c->lay.tp != a->lay.tp)
		HOW("tp %d -> %d; ", a->lay.tp, c->lay.tp);
	if (j->shaped)
		HOW("TP collectives by their bytes; ");
	if (!same_hw(a, c)) {
		HOW("%s", a->hw->id);
		if (a->lay.power_w > 0)
			HOW(" at %g W", a->lay.power_w);
		HOW(" -> %s", c->hw->id);
		if (c->lay.power_w > 0)
			HOW(" at %g W", c->lay.power_w);
		if (a->lay.dtype != c->lay.dtype)
			HOW(" (a %s step's clock, %.4g, -> a %s step's, %.4g)",
			    hw_dtype_name(a->lay.dtype), run_clock(a), hw_dtype_name(c->lay.dtype),
			    run_clock(c));
		HOW("; ");
	}
	if (j->shaped || !same_hw(a, c))
		HOW("kernels: %" PRIu64 " re-timed by the kernel model from their shapes, %" PRIu64
		    " by work and peak ratios (not placed); ",
		    j->es.kernels_model, j->es.kernels_ratio);
	HOW("%" PRIu64 " tasks added, %" PRIu64 " dropped", j->rs.nodes_added, j->rs.nodes_dropped);
#undef HOW
}

/* Candidate c as a graph edit of base b: layers, microbatches and data
 * parallelism reshaped, one stage split, kernels re-timed, then replayed. */
static int by_edit(const struct predict_base *b, const struct synth_in *c, struct predict_out *out,
		   struct graph **keep_g, struct prism_err *err)
{
	struct edit_job j;
	struct edit_retime r;
	struct graph *cg = NULL;
	int rc;

	memset(&j, 0, sizeof(j));
	j.b = b;
	j.a = &b->in;
	j.c = c;
	j.opt = 1;
	reshape_plan_init(&j.plan);
	if (plan_layers(&j) || plan_microbatches(&j)) {
		rc = prism_err_set(err, PRISM_ENOMEM, "out of memory");
		goto out;
	}
	plan_dp(&j);
	if ((rc = reshaped(&j, &cg, err)) || (rc = split_stages(&j, &cg, err)))
		goto out;
	retime_plan(&j, &r);
	if (edit_retime(cg, &r, &j.es)) {
		rc = prism_err_set(err, PRISM_ENOMEM, "out of memory");
		goto out;
	}
	{
		double wb = edit_gpu_work(b->g), wc = edit_gpu_work(cg);
		if (wb > 0 && wc < wb && edit_unblock(cg, wc / wb, &j.es)) {
			rc = prism_err_set(err, PRISM_ENOMEM, "out of memory");
			goto out;
		}
	}
	if ((rc = replay_graph(cg, j.add ? c->hw : NULL, out, err)))
		goto out;
	out->method = PM_EDIT;
	if (b->kind == PB_ANNOTATED) {
		struct predict_out s = *out;
		predict_derive(c, s.iter_s, out);
		out->host_s = s.host_s;
		out->gpu_s = s.gpu_s;
		out->host_bound = s.host_bound;
		out->tasks = s.tasks;
		out->method = PM_EDIT;
	} else {
		out->gpus = c->lay.dp * j.a->lay.tp * j.a->lay.pp * layout_cp(&j.a->lay);
		out->gpu_hours = out->gpus * out->iter_s / 3600.0;
	}
	describe(&j, out);
	if (keep_g) {
		*keep_g = cg;
		cg = NULL;
	}
out:
	graph_free(cg);
	free(j.lc);
	free(j.mc);
	return rc;
}

int predict_eval(const struct predict_base *b, const struct synth_in *cand,
		 struct predict_scratch *s, struct predict_out *out, struct graph **keep_g,
		 struct synth_out *keep_so, struct prism_err *err)
{
	int m = predict_method(b, cand, err), rc;

	memset(out, 0, sizeof(*out));
	if (keep_g)
		*keep_g = NULL;
	if (m < 0)
		return err->code;
	switch (m) {
	case PM_REPLAY:
		*out = b->self;
		if (keep_g && !(*keep_g = graph_clone(b->g)))
			return prism_err_set(err, PRISM_ENOMEM, "out of memory");
		return 0;
	case PM_EDIT:
		return by_edit(b, cand, out, keep_g, err);
	default:
		if ((rc = synth_scratch(cand, s, out, keep_g, keep_so, err)))
			return rc;
		out->method = m;
		snprintf(out->how, sizeof(out->how), "%s%s",
			 m == PM_SYNTH ? "synthesised from the model"
				       : "rebuilt from the base's layers (kernel times calibrated "
					 "on them)",
			 cand->acc_elem_bytes > 0 && cand->lay.microbatches > 1
			     ? "; microbatches after the first add their parameters' gradients, "
			       "as the base's did"
			     : "");
		return 0;
	}
}
