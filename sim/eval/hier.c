/* hier.c - a candidate's step at any microbatch count from three folded runs. */
#include "hier.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One point: what the line is drawn through. */
struct point {
	struct settle_out st;
	int64_t iter_ns;		    /* the step */
	int64_t host_ns[LAYOUT_MAX_STAGES]; /* each stage's host time per step */
	int stages;
	uint64_t tasks;
	uint64_t kernels;
	uint32_t kdb_exact, kdb_interpolated;
};

/* Simulate in at m microbatches, folded, the units' templates carried in
 * tpl from the points before (synth_build_tpl: the same graph). */
static int point_run(const struct synth_in *in, int m, struct point *pt, struct synth_tpl *tpl,
		     struct sim *sm, struct settle_scratch *sc, struct prism_err *err)
{
	struct synth_in x = *in;
	struct graph *g = NULL;
	struct synth_out so;
	int64_t *host = pt->host_ns;
	int rc;

	x.lay.microbatches = m;
	x.units = 1;
	x.no_shapes = 1;
	if ((rc = synth_build_tpl(&x, tpl, &g, &so, err)))
		return rc;
	if ((rc = settle_synth_sim(sm, sc, g, &so, &pt->st, err))) {
		synth_tpl_recycle(tpl, g);
		synth_tpl_recycle_out(tpl, &so);
		return rc;
	}
	memset(pt->host_ns, 0, sizeof(pt->host_ns));
	for (uint32_t p = 0; p < g->n_procs; p++) {
		const struct graph_proc *pr = &g->procs[p];
		if (pr->gpu || pr->rank >= LAYOUT_MAX_STAGES)
			continue;
		for (uint32_t u = pr->first; u < pr->first + pr->n; u++)
			if (g->kind[u] != GN_WAIT) /* the host's own time */
				host[pr->rank] += g->dur_ns[u];
	}
	pt->stages = so.stages < LAYOUT_MAX_STAGES ? so.stages : LAYOUT_MAX_STAGES;
	for (int r = 0; r < pt->stages; r++)
		host[r] /= so.steps > 0 ? so.steps : 1;
	pt->iter_ns = llround(pt->st.iter_s * 1e9);
	pt->tasks = so.tasks;
	pt->kernels = so.kernels;
	pt->kdb_exact = so.kdb_exact;
	pt->kdb_interpolated = so.kdb_interpolated;
	synth_tpl_recycle(tpl, g); /* the next point's build fills it */
	synth_tpl_recycle_out(tpl, &so);
	return rc;
}

/* a, b, c (at x, x + 1, x + 2 steps of the line) on one line to the
 * unit; *at: its value q steps past c. */
static int line_i64(int64_t a, int64_t b, int64_t c, int64_t q, int64_t *at)
{
	int64_t d;
	/* Past PRISM_TIME_MAX: the direct run says what is wrong. */
	if (b - a != c - b || __builtin_mul_overflow(q, c - b, &d) ||
	    __builtin_add_overflow(c, d, at) || *at > PRISM_TIME_MAX)
		return 0;
	return 1;
}

/* The same for seconds (whole nanoseconds). */
static int line_s(double a, double b, double c, int64_t q, double *at)
{
	int64_t v;
	if (!line_i64(llround(a * 1e9), llround(b * 1e9), llround(c * 1e9), q, &v))
		return 0;
	*at = (double)v * 1e-9;
	return 1;
}

/* 1 where some pipeline stages' hosts decide the step at the points,
 * every microbatch alike, and the others' do not (issue 38), stage by
 * stage: a deciding stage's host time grows by the step's growth and its
 * launch-bound tasks by the same count each microbatch (more than none);
 * every other stage's host grows by less than the step and adds no
 * launch-bound task, so that its lead, growing, holds nothing back past
 * the points either (try_line's rule for the whole run, one stage at a
 * time).  The small model on h100-dgx at tp 2, pp 2, dp 2 and 48
 * microbatches: the last stage's host 3.6574 ms a microbatch, the step's
 * growth, 8 launch-bound tasks more each; stage 0's 3.4928 ms, its
 * launch-bound tasks 29 throughout; taken at 8, 9 and 10 microbatches. */
static int stages_decide(const struct point *pt)
{
	int64_t step = pt[2].iter_ns - pt[1].iter_ns;
	int deciding = 0;
	for (int r = 0; r < pt[2].stages; r++) {
		int64_t h1 = pt[1].host_ns[r] - pt[0].host_ns[r];
		int64_t h2 = pt[2].host_ns[r] - pt[1].host_ns[r];
		int64_t l1 = pt[1].st.launch_bound_stage[r] - pt[0].st.launch_bound_stage[r];
		int64_t l2 = pt[2].st.launch_bound_stage[r] - pt[1].st.launch_bound_stage[r];
		if (h1 == step && h2 == step && l1 == l2 && l1 > 0)
			deciding++;
		else if (h1 >= step || h2 >= step || l1 != 0 || l2 != 0)
			return 0;
	}
	return deciding > 0;
}

/* 1 where the host decides the step at the points, every microbatch
 * alike (issue 38): each stage's host time grows by the step's growth,
 * on its own line, and each microbatch adds the same number of tasks
 * whose launch decides their start (more than none).  The host's lead
 * then neither grows nor shrinks: its launches hold the GPU back in
 * every microbatch the same way, and the checks against a host as slow
 * as the step and against launch-bound tasks added (both guarding a lead
 * that changes) do not apply -- a launch-bound candidate, such as the
 * small model at tp 2, pp 1, dp 4 under DeepSpeed's ZeRO-2 (the step and
 * the host 7.1954 ms a microbatch, 14 launch-bound tasks more) or ZeRO-3
 * (8.4806 ms, 110).  GPipe never comes here (hier_extrapolate declines
 * it): a microbatch more adds a forward to one phase and a backward to
 * another, and the host can decide the step while the GPU's streams run
 * behind it through the backward phase by a lag the count changes, the
 * breakdown off its line (the small model at
 * tp 4, pp 1, dp 8, FSDP's ZeRO-2 and full recomputation on
 * a100-80gb-dgx: the step 10.2466 ms a microbatch throughout, exposed
 * compute 2.970952 ms a microbatch to 2 and 3 microbatches, 2.954815 to
 * 4, 2.946885 to 5, 2.970952 again to 6: the reduce-scatters, beside
 * the next backward, slowed by different kernels, 1.6810 ms at 3
 * microbatches, one of 1.6827 ms at 4 and one of 1.6852 at 5). */
static int host_decides(const struct point *pt)
{
	int64_t step = pt[2].iter_ns - pt[1].iter_ns;
	int64_t lb = pt[1].st.launch_bound - pt[0].st.launch_bound;
	if (pt[2].stages < 1 || lb <= 0 || pt[2].st.launch_bound - pt[1].st.launch_bound != lb)
		return 0;
	for (int r = 0; r < pt[2].stages; r++)
		if (pt[2].host_ns[r] - pt[1].host_ns[r] != step ||
		    pt[1].host_ns[r] - pt[0].host_ns[r] != step)
			return stages_decide(pt);
	return 1;
}

/* The line through the three points pt (run at m0, m0 + c, m0 + 2c),
 * extended to in's count: 1 with *out set, or 0 when the points say no
 * (as in hier.h), *host_slow set where a host slower per microbatch than
 * the step is why (a later window would say so too). */
static int try_line(const struct synth_in *in, const struct point *pt, int m0, int c,
		    struct hier_out *out, int *host_slow)
{
	int p = in->lay.pp, m = in->lay.microbatches, rc = 1;
	int64_t q, iter_ns, span, tasks, kernels, exact, interp;

	q = (m - (m0 + 2 * c)) / c;
	*host_slow = 0;
	/* A host slower per microbatch than the step grows would come to
	 * decide the step past the points (one that decides it already,
	 * every microbatch alike, does not: host_decides). */
	for (int r = 0; r < pt[2].stages; r++)
		if (pt[2].host_ns[r] - pt[1].host_ns[r] >= pt[2].iter_ns - pt[1].iter_ns)
			rc = 0, *host_slow = 1;
	/* Nor may a microbatch more add a task whose launch decides its
	 * start: the host's lead still growing into them would change the
	 * run past the points. */
	if (pt[0].st.launch_bound != pt[1].st.launch_bound ||
	    pt[1].st.launch_bound != pt[2].st.launch_bound)
		rc = 0;
	if (!rc && host_decides(pt))
		rc = 1, *host_slow = 0;
	for (int r = 0; rc && r < p && r < LAYOUT_MAX_STAGES; r++)
		rc = line_i64(pt[0].st.unit_busy_ns[r], pt[1].st.unit_busy_ns[r],
			      pt[2].st.unit_busy_ns[r], q, &out->st.unit_busy_ns[r]);
	if (!rc || !line_i64(pt[0].iter_ns, pt[1].iter_ns, pt[2].iter_ns, q, &iter_ns) ||
	    !line_i64(pt[0].st.unit_span_ns, pt[1].st.unit_span_ns, pt[2].st.unit_span_ns, q,
		      &span) ||
	    !line_i64((int64_t)pt[0].tasks, (int64_t)pt[1].tasks, (int64_t)pt[2].tasks, q,
		      &tasks) ||
	    !line_i64(pt[0].kernels, pt[1].kernels, pt[2].kernels, q, &kernels) ||
	    !line_i64(pt[0].kdb_exact, pt[1].kdb_exact, pt[2].kdb_exact, q, &exact) ||
	    !line_i64(pt[0].kdb_interpolated, pt[1].kdb_interpolated, pt[2].kdb_interpolated, q,
		      &interp) ||
	    !line_s(pt[0].st.exposed_compute_s, pt[1].st.exposed_compute_s,
		    pt[2].st.exposed_compute_s, q, &out->st.exposed_compute_s) ||
	    !line_s(pt[0].st.exposed_comm_s, pt[1].st.exposed_comm_s, pt[2].st.exposed_comm_s, q,
		    &out->st.exposed_comm_s) ||
	    !line_s(pt[0].st.overlap_s, pt[1].st.overlap_s, pt[2].st.overlap_s, q,
		    &out->st.overlap_s) ||
	    !line_s(pt[0].st.idle_s, pt[1].st.idle_s, pt[2].st.idle_s, q, &out->st.idle_s))
		return 0;
	out->st.iter_s = (double)iter_ns * 1e-9;
	out->st.unit_span_ns = span;
	out->st.bubble = settle_bubble(p, span, out->st.unit_busy_ns);
	out->tasks = (uint64_t)tasks;
	out->kernels = (uint64_t)kernels;
	out->kdb_exact = exact > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)exact;
	out->kdb_interpolated = interp > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)interp;
	out->m0 = m0;
	out->c = c;
	return 1;
}

/* 1 where every pipeline stage holds the same layers, chunk by chunk, as
 * in's partition places them (what the build reads of it, so that a
 * partition's twins take one path: synth_canonical): placed evenly (the
 * even partition, a balanced one that found every stage's layers equal),
 * or given, evenly. */
static int even_stages(const struct synth_in *in)
{
	struct layout l;
	int n;
	synth_mem_layout(in, &l);
	n = l.part_chunks ? l.part_chunks : l.pp;
	if (l.pp <= 1 || (l.part[0] == 0 && l.part_chunks == 0))
		return 1;
	if (l.partition != LAYOUT_PART_GIVEN)
		return 0;
	for (int k = 1; k < n && k < LAYOUT_MAX_STAGES; k++)
		if (l.part[k] != l.part[0])
			return 0;
	return 1;
}

int hier_extrapolate(const struct synth_in *in, struct hier_out *out, struct prism_err *err)
{
	return hier_extrapolate_tpl(in, NULL, NULL, NULL, out, err);
}

int hier_extrapolate_tpl(const struct synth_in *in, struct synth_tpl *tpl, struct sim *sm,
			 struct settle_scratch *sc, struct hier_out *out, struct prism_err *err)
{
	const struct layout *l = &in->lay;
	int p = l->pp, m = l->microbatches, m0, c, rc, have = 0, host_slow;
	double spent = 0;
	struct point pt[3];
	struct synth_tpl *own = NULL;

	memset(out, 0, sizeof(*out));
	/* Stages of unequal layers (a balanced, Megatron-Core or given
	 * partition) decline: their steady state is set by the slowest of
	 * paths through different stages' passes, whose growth per
	 * microbatch differs by the little the partition left between the
	 * stages, so that one a few microbatches past the points can overtake
	 * the one the points saw (docs/PERFORMANCE.md: GPT-3 1.3B's balanced
	 * 13/11 stages under GPipe, the step 0.55 ms short at 16 microbatches). */
	if (!in->units || in->steps > 2 || p < 1 || !even_stages(in))
		return 0;
	/* GPipe declines (issue 38): its forward phase and its backward
	 * phase each grow by a unit a microbatch, and inside a phase nothing
	 * ties one stage's pace to another's or a host's to its GPU's (no
	 * backward between two forwards, as in 1F1B's steady state), so
	 * processes of different periods run side by side and their relative
	 * phase drifts with the microbatch count: stage 0's sends at its
	 * forward's pace beside the last stage's compute at its own, a host
	 * slower per forward than the stage feeding it (per microbatch,
	 * forward and backward together, it is faster than the step) whose
	 * lead over that stage's sends shrinks until its receives decide
	 * (the small model at tp 2, pp 2 with SP on a100-80gb-dgx: the last
	 * stage's host 1,626.6 us a forward against stage 0's 1,611.9 us,
	 * its lead of 1.67 ms gone at microbatch 113, so exposed compute
	 * on the line up to 112 microbatches and 1.354 ms below the full
	 * run at 160), reduce-scatters queued behind backwards faster than
	 * they are.  The step can stay on its line while what a transfer or
	 * a collective overlaps (the breakdown) and, under contention, what
	 * it slows (the busy time behind the bubble) leave theirs past any
	 * few points, which cannot show it. */
	if (l->schedule == LAYOUT_GPIPE)
		return 0;
	/* The layout's own rules, at its own count. */
	if ((rc = synth_check(in, err)))
		return rc;
	if (l->schedule == LAYOUT_INTERLEAVED) {
		m0 = 2 * p;
		c = p;
	} else if (l->schedule == LAYOUT_ZB2P || layout_v(l->schedule)) {
		/* Past their 2p - 1 warm-up forwards (layout_zb_next; ZB-V's
		 * chunk 0 runs that many before its first backward; DualPipeV
		 * needs m >= 2p, its steady pairs from there on). */
		m0 = 2 * p;
		c = 1;
	} else {
		m0 = p;
		c = 1;
	}
	/* The 1F1B all-to-all overlap runs one more warm-up forward: with
	 * pp 1 its steady units, merged pairs, begin a microbatch later
	 * (interleaved, 2p is past it already). */
	if (l->moe_a2a_overlap && l->schedule != LAYOUT_INTERLEAVED)
		m0 += c;
	if (tpl)
		synth_tpl_reset(tpl);
	else if (!(tpl = own = synth_tpl_new()))
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	/* Points past a longer transient where the first ones disagree,
	 * while all of them cost at most HIER_POINTS_SHARE of m: a window 4x
	 * further on where it fits, else (a short transient: the host's lead
	 * still settling over the first microbatches, as ZB-V's and
	 * DualPipeV's at 2p, whose B passes launch every small kernel of the
	 * backward and little GPU work) the next window one step on, its
	 * first two points the last two run -- unless the host is too slow,
	 * which no later window mends.  The check stays the same: exact. */
	for (rc = 0; m0 + 2 * c < m;) {
		double cost = have ? m0 + 2.0 * c : 3.0 * (m0 + c);
		if (spent + cost > HIER_POINTS_SHARE * m)
			break;
		spent += cost;
		if ((m - m0) % c) {
			m0 *= 4;
			continue;
		}
		for (int k = have; k < 3; k++)
			if ((rc = point_run(in, m0 + k * c, &pt[k], tpl, sm, sc, err)) != 0)
				break;
		if (rc || (rc = try_line(in, pt, m0, c, out, &host_slow)) != 0)
			break;
		if (4 * m0 + 2 * c < m && spent + 3.0 * (4 * m0 + c) <= HIER_POINTS_SHARE * m) {
			m0 *= 4;
			have = 0;
		} else if (!host_slow) {
			pt[0] = pt[1];
			pt[1] = pt[2];
			have = 2;
			m0 += c;
		} else {
			break;
		}
	}
	synth_tpl_free(own);
	return rc;
}
