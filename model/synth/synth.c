/*
 * synth.c - a GPT training run's execution graph from its shape and
 * layout: the public entry points (synth.h).  synth_build checks the
 * layout, sets up a build (struct ctx, synth_int.h), runs its steps
 * (step.c) and hands out the graph and what was built; beside it the
 * defaults, the checks, the layout with its partition resolved, the
 * memory estimate and the run's description.
 */
#include "synth.h"
#include "synth_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "desc.h"
#include "vec.h"

void synth_in_default(struct synth_in *in)
{
	memset(in, 0, sizeof(*in));
	layout_default(&in->lay);
	in->steps = 2;
	/* The kernel model (kperf.h) times every kernel; each class's line
	 * starts as the identity and calibration fits it. */
	for (int c = 0; c < KC_NCLASSES; c++) {
		in->cost[c].by_flops = cost_compute_bound(c);
		in->cost[c].eff = 1;
		in->cost[c].overhead_s = 0;
		in->scale[c] = 1;
	}
	in->comm_eff = 1.0;
	in->cpu_op_s = SYNTH_EAGER_OP_US * 1e-6;
	in->launch_s = SYNTH_EAGER_LAUNCH_US * 1e-6;
	in->gpu_lag_s = 1e-6;
	in->event_s = 2e-6;
}

/* ocannl issue 488 (other.csv): a chain of N no-op kernels replayed as a
 * stream-captured CUDA graph, with its sync, median microseconds. */
static const double graph_rows[][2] = {{8, 19.4},  {16, 25.6}, {24, 28.7},
				       {36, 37.9}, {64, 49.1}, {117, 82.9}};

void synth_graph_fit(double *fixed_s, double *node_s)
{
	int n = (int)(sizeof(graph_rows) / sizeof(graph_rows[0]));
	double mx = 0, my = 0, sxy = 0, sxx = 0;
	for (int i = 0; i < n; i++) {
		mx += graph_rows[i][0] / n;
		my += graph_rows[i][1] / n;
	}
	for (int i = 0; i < n; i++) {
		sxy += (graph_rows[i][0] - mx) * (graph_rows[i][1] - my);
		sxx += (graph_rows[i][0] - mx) * (graph_rows[i][0] - mx);
	}
	*node_s = sxy / sxx * 1e-6;
	*fixed_s = my * 1e-6 - *node_s * mx;
}

void synth_host(const struct synth_in *in, struct synth_host *h)
{
	h->op_s = in->cpu_op_s;
	h->launch_s = in->launch_s;
	h->event_s = in->event_s;
	h->lag_s = in->gpu_lag_s;
	h->region_s = 0;
	if (in->lay.exec == LAYOUT_EXEC_GRAPHS) {
		/* The captured kernels cost the host nothing: the graph's
		 * launch once, each node its replay time on the GPU. */
		synth_graph_fit(&h->region_s, &h->lag_s);
		h->op_s = h->launch_s = h->event_s = 0;
	} else if (in->lay.exec == LAYOUT_EXEC_COMPILED) {
		h->op_s = SYNTH_INDUCTOR_RUN_S - SYNTH_INDUCTOR_LAUNCH_S;
		h->launch_s = SYNTH_INDUCTOR_LAUNCH_S;
		h->region_s = SYNTH_INDUCTOR_GRAPH_S;
	}
}

void synth_mem_layout(const struct synth_in *in, struct layout *l)
{
	if (in->lay.partition == LAYOUT_PART_GIVEN || synth_partition(in, l, NULL)) {
		*l = in->lay;
		if (in->lay.partition != LAYOUT_PART_GIVEN)
			l->part[0] = 0, l->part_chunks = 0;
	}
}

layout_mask synth_canonical(const struct synth_in *in, struct synth_in *out)
{
	const struct layout *l = &in->lay;
	struct layout *o = &out->lay;
	layout_mask set = 0;
	int one =
	    l->microbatches == 1 && (l->schedule == LAYOUT_GPIPE || l->schedule == LAYOUT_1F1B);

	/* Byte for byte (padding too): callers compare the bytes. */
	memcpy(out, in, sizeof(*out));
	if (l->pp >= 2) {
		struct layout placed;
		if (synth_partition(in, &placed, NULL) == 0 && placed.part[0] == 0 &&
		    placed.part_chunks == 0) {
			o->partition = LAYOUT_PART_GIVEN;
			memset(o->part, 0, sizeof(o->part));
			o->part_chunks = o->part_first = o->part_last = o->part_mtp = 0;
			set |= LK_BIT(LK_partition);
		}
	}
	if (one) {
		o->schedule = LAYOUT_1F1B;
		set |= LK_BIT(LK_schedule);
	}
	if (one && (l->zero == 1 || l->zero == 2) && l->overlap_grad &&
	    l->dp_impl == LAYOUT_DP_DEEPSPEED) {
		o->zero = 1;
		set |= LK_BIT(LK_zero);
	}
	return set;
}

void synth_mem(const struct synth_in *in, struct mem_est *out)
{
	struct layout l;
	synth_mem_layout(in, &l);
	mem_estimate(&in->m, &l, in->hw, out);
}

/* The mixture-of-experts rules (synth_check), after the dense ones'
 * ranges. */
int synth_check(const struct synth_in *in, struct prism_err *err)
{
	const struct layout *l = &in->lay;
	const struct llm *m = &in->m;
	int rc;

	if ((rc = layout_check(m, l, in->hw, err)))
		return rc;
	{
		/* The graph's size, before anything is built (each at most 2^16,
		 * steps 100: the product fits 64 bits). */
		int64_t steps = in->steps > 0 ? in->steps : 1;
		int64_t least = steps * m->layers * l->microbatches * SYNTH_MIN_TASKS_PER_LAYER;
		if (in->units) {
			/* Folded: a few tasks per unit (each pass built:
			 * a zero-bubble schedule's B and W apart), and the
			 * largest unit (a chunk's layers) built once. */
			int v = layout_stage_chunks(l);
			int64_t units = steps * layout_step_passes(l);
			if (units * SYNTH_MIN_TASKS_PER_UNIT > GRAPH_MAX_TASKS)
				return prism_err_set(
				    err, PRISM_ELIMIT,
				    "layout: %" PRId64 " steps x %d stages x %d chunks x %d "
				    "microbatches make %" PRId64 " pipeline units (%s), more "
				    "than the %u tasks prism simulates can hold",
				    steps, l->pp, v, l->microbatches, units,
				    layout_schedule_name(l->schedule), GRAPH_MAX_TASKS);
			least = (int64_t)m->layers / (l->pp * v) * SYNTH_MIN_TASKS_PER_LAYER;
		}
		if (least > GRAPH_MAX_TASKS)
			return prism_err_set(
			    err, PRISM_ELIMIT,
			    "layout: %" PRId64 " steps x %d layers x %d microbatches "
			    "make at least %" PRId64 " tasks, more than the %u "
			    "prism simulates",
			    steps, m->layers, l->microbatches, least, GRAPH_MAX_TASKS);
	}
	return 0;
}

void synth_out_release(struct synth_out *o)
{
	free(o->waits);
	free(o->step_first);
	free(o->step_last);
	free(o->unit_first);
	free(o->unit_last);
	free(o->marks);
	free(o->kerns);
	free(o->ulog);
	free(o->ulog_nodes);
	memset(o, 0, sizeof(*o));
}

void synth_meta(const struct synth_in *in, char *buf, size_t n)
{
	struct layout l;
	synth_mem_layout(in, &l);
	desc_write(&in->m, &l, in->hw ? in->hw->id : NULL, buf, n);
}

int synth_meta_parse(const char *s, struct synth_in *in, struct prism_err *err)
{
	return desc_parse(s, &in->m, &in->lay, in->hw_id, sizeof(in->hw_id), err);
}

/* The schedule's marks in the graph's ids. */
static int remap_marks(struct ctx *c, const uint32_t *newid)
{
	if (VEC_RESERVE(c->sc.step_first, 1) || VEC_RESERVE(c->sc.unit_first, 1))
		return PRISM_ENOMEM;
	for (size_t i = 0; i < c->sc.step_first.n; i++) {
		c->sc.step_first.v[i] = newid[c->sc.step_first.v[i]];
		c->sc.step_last.v[i] = newid[c->sc.step_last.v[i]];
	}
	for (size_t i = 0; i < c->sc.unit_first.n; i++) {
		c->sc.unit_first.v[i] = newid[c->sc.unit_first.v[i]];
		c->sc.unit_last.v[i] = newid[c->sc.unit_last.v[i]];
	}
	return 0;
}

/* One iteration per step and stage (each task's was stamped as built:
 * se_iter); settle.h gives their times. */
static void push_iters(struct ctx *c)
{
	int P = c->in->lay.pp;
	for (size_t i = 0; i < c->sc.step_first.n; i++) {
		struct graph_iter it = {(uint32_t)(i % (size_t)P), c->rk[i % (size_t)P].host,
					(int64_t)(i / (size_t)P), 0, 0};
		gw_iter(&c->em.w, &it);
	}
}

/* The units repeated from templates (in->unit_log) into out, in the
 * graph's ids: 0, or PRISM_ENOMEM. */
static int take_ulog(const struct ctx *c, struct synth_out *out)
{
	const uint32_t *newid = c->em.w.newid;
	size_t n = 0, k = 0, nu = c->fo.ulog.n, nt = c->fo.tails.n;
	for (size_t i = 0; i < nu; i++)
		n += c->fo.folds.v[c->fo.ulog.v[i].t].n_nodes;
	for (size_t i = 0; i < nt; i++)
		n += c->fo.tails.v[i].n;
	out->ulog = prism_malloc((nu + nt) * sizeof(*out->ulog));
	out->ulog_nodes = prism_malloc((n ? n : 1) * sizeof(*out->ulog_nodes));
	if (!out->ulog || !out->ulog_nodes)
		return PRISM_ENOMEM;
	for (size_t i = 0; i < nu + nt; i++) {
		const struct unit_rec *x = i < nu ? &c->fo.ulog.v[i] : NULL;
		const struct tail_rec *y = i < nu ? NULL : &c->fo.tails.v[i - nu];
		uint32_t nn = x ? c->fo.folds.v[x->t].n_nodes : y->n, k0 = x ? x->k0 : y->k0;
		const uint32_t *last = x ? x->last : y->last;
		out->ulog[i] = (struct synth_unit_rec){x ? x->t : (uint32_t)(i - nu),
						       x ? x->r : y->r,
						       (uint32_t)k,
						       nn,
						       x ? x->step : y->step,
						       {0}};
		for (int st = 0; st < SYNTH_STREAMS; st++)
			out->ulog[i].last[st] =
			    st < S_N && last[st] != NONE32 ? newid[last[st]] : UINT32_MAX;
		for (uint32_t j = 0; j < nn; j++)
			out->ulog_nodes[k++] = newid[k0 + j];
	}
	out->n_ulog = nu + nt;
	out->n_tails = nt;
	return 0;
}

/* What was built, into out: the schedule's marks (taken from c), the
 * counts, the folded units' marks and every event wait, in the graph's
 * ids. */
static int take_out(struct ctx *c, uint32_t n_tasks, struct synth_out *out)
{
	const uint32_t *newid = c->em.w.newid;
	const struct synth_in *in = c->in;
	int P = in->lay.pp;

	out->n_steps = c->sc.step_first.n;
	out->step_first = c->sc.step_first.v;
	out->step_last = c->sc.step_last.v;
	out->n_units = c->sc.unit_first.n;
	out->unit_first = c->sc.unit_first.v;
	out->unit_last = c->sc.unit_last.v;
	if (c->ro_keep) { /* the thread's arrays, lent with out */
		VEC_TAKE(c->ro.step_first, c->sc.step_first);
		VEC_TAKE(c->ro.step_last, c->sc.step_last);
		VEC_TAKE(c->ro.unit_first, c->sc.unit_first);
		VEC_TAKE(c->ro.unit_last, c->sc.unit_last);
	}
	memset(&c->sc.step_first, 0, sizeof(c->sc.step_first));
	memset(&c->sc.step_last, 0, sizeof(c->sc.step_last));
	memset(&c->sc.unit_first, 0, sizeof(c->sc.unit_first));
	memset(&c->sc.unit_last, 0, sizeof(c->sc.unit_last));
	out->steps = in->steps > 0 ? in->steps : 1;
	out->stages = P;
	if (!in->bare) {
		out->slow_compute = in->hw->slow_compute;
		out->slow_comm = in->hw->slow_comm;
	}
	for (int r = 0; r < P && r < LAYOUT_MAX_STAGES; r++)
		out->compute[r] = c->rk[r].stream[S_COMPUTE];
	out->flops = c->tally.flops / (in->steps > 0 ? in->steps : 1);
	out->kernels = c->tally.kernels;
	out->kdb_exact = c->tally.kdb_hits[KDB_EXACT];
	out->kdb_interpolated = c->tally.kdb_hits[KDB_INTERPOLATED];
	out->tasks = (uint64_t)n_tasks + c->fo.tasks_folded;
	out->n_units_folded = c->fo.units_folded;
	out->n_units_kept = c->fo.units_kept;
	out->n_unit_kinds = c->fo.kinds;
	out->n_unit_kinds_carried = c->fo.carried;
	if (c->fo.marks.n) {
		if (c->ro_keep)
			out->marks = VEC_RESERVE(c->ro.marks, c->fo.marks.n) ? NULL : c->ro.marks.v;
		else
			out->marks = prism_malloc(c->fo.marks.n * sizeof(*out->marks));
		if (!out->marks)
			return PRISM_ENOMEM;
		for (size_t i = 0; i < c->fo.marks.n; i++) {
			out->marks[i] = c->fo.marks.v[i];
			out->marks[i].node = newid[c->fo.marks.v[i].node];
			out->marks[i].host = newid[c->fo.marks.v[i].host];
		}
		out->n_marks = c->fo.marks.n;
		out->n_kerns = c->fo.fkerns.n;
		if (c->fo.carry) { /* the templates' own, kept for the next build */
			size_t nk = c->fo.fkerns.n ? c->fo.fkerns.n : 1;
			if (c->ro_keep)
				out->kerns = VEC_RESERVE(c->ro.kerns, nk) ? NULL : c->ro.kerns.v;
			else
				out->kerns = prism_malloc(nk * sizeof(*out->kerns));
			if (!out->kerns)
				return PRISM_ENOMEM;
			memcpy(out->kerns, c->fo.fkerns.v, c->fo.fkerns.n * sizeof(*out->kerns));
		} else {
			out->kerns = c->fo.fkerns.v;
			memset(&c->fo.fkerns, 0, sizeof(c->fo.fkerns));
		}
	}
	if (c->in->unit_log && take_ulog(c, out))
		return PRISM_ENOMEM;
	out->n_waits = (uint32_t)c->em.waits.n;
	if (c->ro_keep)
		out->waits = VEC_RESERVE(c->ro.waits, c->em.waits.n ? c->em.waits.n : 1)
				 ? NULL
				 : c->ro.waits.v;
	else
		out->waits =
		    prism_malloc((c->em.waits.n ? c->em.waits.n : 1) * sizeof(*out->waits));
	if (!out->waits)
		return PRISM_ENOMEM;
	for (size_t i = 0; i < c->em.waits.n; i++) {
		out->waits[i].call = newid[c->em.waits.v[i].wait];
		out->waits[i].record = newid[c->em.waits.v[i].record];
		out->waits[i].stream = c->em.waits.v[i].proc;
		out->waits[i].on_stream = c->em.waits.v[i].on_proc;
	}
	return 0;
}

/* ro's arrays freed. */
static void room_free(struct out_room *ro)
{
	VEC_FREE(ro->step_first);
	VEC_FREE(ro->step_last);
	VEC_FREE(ro->unit_first);
	VEC_FREE(ro->unit_last);
	VEC_FREE(ro->marks);
	VEC_FREE(ro->kerns);
	VEC_FREE(ro->waits);
}

struct synth_tpl *synth_tpl_new(void)
{
	return prism_calloc(1, sizeof(struct synth_tpl));
}

void synth_tpl_free(struct synth_tpl *tpl)
{
	struct ctx c;
	if (!tpl)
		return;
	memset(&c, 0, sizeof(c));
	c.fo = tpl->fo;
	sf_release(&c);
	if (tpl->have_w)
		gw_release(&tpl->w);
	free(tpl->rk);
	VEC_FREE(tpl->pend);
	VEC_FREE(tpl->waits);
	VEC_FREE(tpl->seqs);
	VEC_FREE(tpl->ops);
	VEC_FREE(tpl->copies);
	VEC_FREE(tpl->gathers);
	VEC_FREE(tpl->amax_gemms);
	VEC_FREE(tpl->ckey_at);
	VEC_FREE(tpl->ckey);
	if (!tpl->out_lent) /* (else the output's holder frees them) */
		room_free(&tpl->out);
	free(tpl);
}

void synth_tpl_recycle(struct synth_tpl *tpl, struct graph *g)
{
	if (tpl && tpl->have_w)
		gw_recycle(&tpl->w, g);
	else
		graph_free(g);
}

/* vec's array freed where it has room for more than GW_KEEP_NODES. */
#define ROOM_TRIM(vec)                                                                             \
	do {                                                                                       \
		if ((vec).cap > GW_KEEP_NODES)                                                     \
			VEC_FREE(vec);                                                             \
	} while (0)

void synth_tpl_recycle_out(struct synth_tpl *tpl, struct synth_out *so)
{
	if (!tpl || !tpl->out_lent || !so->waits || so->waits != tpl->out.waits.v) {
		synth_out_release(so);
		return;
	}
	tpl->out_lent = 0;
	free(so->ulog); /* (in->unit_log's: never the thread's) */
	free(so->ulog_nodes);
	ROOM_TRIM(tpl->out.step_first);
	ROOM_TRIM(tpl->out.step_last);
	ROOM_TRIM(tpl->out.unit_first);
	ROOM_TRIM(tpl->out.unit_last);
	ROOM_TRIM(tpl->out.marks);
	ROOM_TRIM(tpl->out.kerns);
	ROOM_TRIM(tpl->out.waits);
	memset(so, 0, sizeof(*so));
}

void synth_tpl_reset(struct synth_tpl *tpl)
{
	tpl->have = 0; /* sf_carry_in: none carried, the arrays emptied, kept */
}

int synth_build(const struct synth_in *in, struct graph **out_g, struct synth_out *out,
		struct prism_err *err)
{
	return synth_build_tpl(in, NULL, out_g, out, err);
}

int synth_build_tpl(const struct synth_in *in, struct synth_tpl *tpl, struct graph **out_g,
		    struct synth_out *out, struct prism_err *err)
{
	struct ctx c;
	struct shape z;
	struct graph *g = NULL;
	char meta[4096];
	size_t rk_room = 0;
	int rc;

	*out_g = NULL;
	memset(out, 0, sizeof(*out));
	if ((rc = synth_check(in, err)))
		return rc;
	memset(&c, 0, sizeof(c));
	c.in = in;
	sl_ctx_bytes(&c);
	c.hw = sl_run_hw(in, &c.hw_run);
	synth_mem_layout(in, &c.lay);
	c.kdb_gpu = in->kdb ? kdb_gpu(in->kdb, in->hw->gpu) : -1;
	if (tpl) {
		c.reserve = tpl->sizes;
		/* The thread's writer, kept with its room (and its last
		 * graph, recycled). */
		if (tpl->have_w) {
			c.em.w = tpl->w;
			c.em_kept = 1;
			tpl->have_w = 0;
		}
	}
	if (se_init(&c)) {
		se_release(&c); /* (a kept writer too: the next build starts anew) */
		return prism_err_set(err, PRISM_ENOMEM, "synth: out of memory");
	}
	c.em.w.keep = tpl != NULL;
	if (tpl) {
		/* The thread's arrays, empty (a build's start, as zeroed). */
		VEC_TAKE(c.em.pend, tpl->pend);
		VEC_TAKE(c.em.waits, tpl->waits);
		VEC_TAKE(c.em.seqs, tpl->seqs);
		VEC_TAKE(c.em.ops, tpl->ops);
		VEC_TAKE(c.sc.copies, tpl->copies);
		VEC_TAKE(c.sc.gathers, tpl->gathers);
		VEC_TAKE(c.sc.amax_gemms, tpl->amax_gemms);
		VEC_TAKE(c.sc.ckey_at, tpl->ckey_at);
		VEC_TAKE(c.sc.ckey, tpl->ckey);
		/* The output's arrays: the thread's, unless the last output
		 * still holds them (then they are its holder's, forgotten). */
		if (tpl->out_lent)
			memset(&tpl->out, 0, sizeof(tpl->out));
		tpl->out_lent = 0;
		c.ro = tpl->out;
		memset(&tpl->out, 0, sizeof(tpl->out));
		c.ro_keep = 1;
		VEC_TAKE(c.sc.step_first, c.ro.step_first);
		VEC_TAKE(c.sc.step_last, c.ro.step_last);
		VEC_TAKE(c.sc.unit_first, c.ro.unit_first);
		VEC_TAKE(c.sc.unit_last, c.ro.unit_last);
	}
	sl_shape(in, &z);
	z.tp_per_node = in->lay.tp;
	z.pp_per_node = sl_pp_per_node(in);
	c.fo.n_fold = se_intern(&c, "prism::unit");
	c.fo.fold = in->units;
	if (tpl && sf_carry_in(&c, tpl))
		goto oom;
	rk_room = (size_t)in->lay.pp;
	if (tpl && tpl->rk_cap >= rk_room) {
		c.rk = tpl->rk; /* the thread's, zeroed as calloc leaves it */
		rk_room = tpl->rk_cap;
		tpl->rk = NULL;
		tpl->rk_cap = 0;
		memset(c.rk, 0, (size_t)in->lay.pp * sizeof(*c.rk));
	} else {
		c.rk = prism_calloc(rk_room, sizeof(*c.rk));
	}
	if (!c.rk || se_procs(&c))
		goto oom;
	{
		/* The schedule's marks, handed to the caller (take_out): a
		 * step's first and last task per stage, a unit's compute
		 * tasks per pass, each array allocated once at its size
		 * rather than grown by doubling. */
		size_t steps = (size_t)(in->steps > 0 ? in->steps : 1);
		size_t units = steps * (size_t)layout_step_passes(&in->lay);
		if (VEC_RESERVE(c.sc.step_first, steps * (size_t)in->lay.pp) ||
		    VEC_RESERVE(c.sc.step_last, steps * (size_t)in->lay.pp) ||
		    VEC_RESERVE(c.sc.unit_first, units) || VEC_RESERVE(c.sc.unit_last, units))
			goto oom;
	}
	ss_steps(&c, &z);
	if (c.oom)
		goto oom;
	push_iters(&c);
	synth_meta(in, meta, sizeof(meta));
	g = se_finish(&c, meta);
	if (!g)
		goto oom;
	if (remap_marks(&c, c.em.w.newid) || take_out(&c, g->n_nodes, out))
		goto oom;
	*out_g = g;
	g = NULL;
	rc = 0;
	goto done;
oom:
	if (c.oom == SYNTH_TOO_BIG)
		rc = prism_err_set(err, PRISM_ELIMIT, "synth: the run has more than %u tasks",
				   GRAPH_MAX_TASKS);
	else
		rc = prism_err_set(err, PRISM_ENOMEM, "synth: out of memory");
	if (c.ro_keep) { /* its arrays are c.ro's (or c.sc's), kept below */
		free(out->ulog);
		free(out->ulog_nodes);
		memset(out, 0, sizeof(*out));
	} else
		synth_out_release(out);
done:
	graph_free(g);
	if (tpl) {
		sf_carry_out(&c, tpl, rc == 0);
		if (rc == 0)
			tpl->sizes = c.built;
		/* The writer stays the thread's (its arrays kept). */
		tpl->w = c.em.w;
		tpl->have_w = 1;
		memset(&c.em.w, 0, sizeof(c.em.w));
		/* The build's arrays too, for the next. */
		if (c.rk) {
			free(tpl->rk); /* (one too small to take) */
			tpl->rk = c.rk;
			tpl->rk_cap = rk_room;
			c.rk = NULL;
		}
		VEC_TAKE(tpl->pend, c.em.pend);
		VEC_TAKE(tpl->waits, c.em.waits);
		VEC_TAKE(tpl->seqs, c.em.seqs);
		VEC_TAKE(tpl->ops, c.em.ops);
		VEC_TAKE(tpl->copies, c.sc.copies);
		VEC_TAKE(tpl->gathers, c.sc.gathers);
		VEC_TAKE(tpl->amax_gemms, c.sc.amax_gemms);
		VEC_TAKE(tpl->ckey_at, c.sc.ckey_at);
		VEC_TAKE(tpl->ckey, c.sc.ckey);
		/* The output's arrays, lent with it where it was made. */
		tpl->out = c.ro;
		tpl->out_lent = rc == 0;
		memset(&c.ro, 0, sizeof(c.ro));
	}
	se_release(&c);
	sf_release(&c);
	free(c.rk);
	VEC_FREE(c.sc.step_first);
	VEC_FREE(c.sc.step_last);
	VEC_FREE(c.sc.unit_first);
	VEC_FREE(c.sc.unit_last);
	VEC_FREE(c.sc.copies);
	VEC_FREE(c.sc.gathers);
	VEC_FREE(c.sc.amax_gemms);
	VEC_FREE(c.sc.ckey_at);
	VEC_FREE(c.sc.ckey);
	return rc;
}
