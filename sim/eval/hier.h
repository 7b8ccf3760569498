/*
 * hier.h - a synthesised candidate's step at any microbatch count, from
 * three folded runs at a few microbatches.
 *
 * With its units folded (synth.h, "units"), a run costs CPU in proportion
 * to its pipeline units.  Past the pipeline's fill, every microbatch more
 * adds the same units in the same order, and the simulated step grows by
 * the same amount: the step time, the pipeline span and busy time behind
 * the bubble, and the task counts are affine in the microbatch count m.
 * hier_extrapolate() simulates m0, m0 + c and m0 + 2c microbatches (m0 the
 * pipeline's depth, twice it for the interleaved schedule, whose c is the
 * depth so that every point is a valid layout, and for ZB-2p and ZB-V,
 * past their 2p - 1 warm-up forwards; c = 1 otherwise), checks
 * that both steps are the same to the nanosecond, and extends the line to
 * m.  The check cannot see a change of regime beyond the points: the ones
 * that can come are the host's (a host slower per microbatch than the
 * pipeline, whose lead shrinks until the launches decide; a host whose
 * lead still grows into tasks that its launches hold back, until they no
 * longer are), excluded by requiring every host's time per microbatch
 * below the step's growth and the same tasks launch-bound at every point
 * (a microbatch more adds none), unless the host decides the step already,
 * every microbatch alike (its time growing exactly as the step does, the
 * same launch-bound tasks added by each microbatch: hier.c,
 * host_decides), or in a pipeline some stages' hosts do so, each with its
 * own launch-bound tasks, and the others' stay below the step's growth,
 * adding none (stages_decide); otherwise, or under GPipe (inside its forward or its
 * backward phase nothing ties a stage's pace to another's or a host's to
 * its GPU's, so what runs beside what drifts with the count and the
 * breakdown and bubble can leave their lines past any points: hier.c), or when
 * the points disagree (after the later windows that fit HIER_POINTS_SHARE:
 * 4x further, or one step on where that does not fit, hier.c), or the run
 * has more than two steps (each step's own line), or its stages hold
 * unequal layers (a balanced, Megatron-Core or given partition: paths
 * through different stages' passes grow by amounts the partition left a
 * little apart, and one the points did not see can overtake past them),
 * it declines and the caller simulates m directly.  The breakdown's four
 * parts are held to their own lines the same way, exactly at the three
 * points; docs/PERFORMANCE.md has the sweep checked against direct runs.
 * docs/MODEL.md, "Hierarchical simulation".
 */
#ifndef PRISM_HIER_H
#define PRISM_HIER_H

#include "settle.h"
#include "synth.h"

/* Extrapolate only where the three points cost at most this fraction of
 * simulating m directly (their microbatches over m).  A declined line
 * costs its points on top of the direct run, so the share is a bet on
 * the line being taken; it almost always is, and a run costs more than
 * its microbatches' share (a bigger graph: GPT-3 175B at pp 32, vp 3 and
 * 384 microbatches took 0.9-1.1 s CPU and 310 MB directly, 0.56-0.65 s
 * and 109 MB through 64, 96 and 128).  The line needs m >= 12 pp microbatches
 * under the interleaved schedule (18 pp at a share of 0.5), 4 pp + 4
 * under 1F1B (6 pp + 6; GPipe declines), 8 pp + 4 under ZB-2p and the V
 * schedules (12 pp + 6); docs/PERFORMANCE.md has the sweep's figures. */
#define HIER_POINTS_SHARE 0.75

struct hier_out {
	struct settle_out st;
	uint64_t tasks;			      /* of the kernel-level graph */
	uint64_t kernels;		      /* GPU tasks of that graph */
	uint32_t kdb_exact, kdb_interpolated; /* synth_out's */
	int m0, c;			      /* the points: m0, m0 + c, m0 + 2c microbatches */
};

/*
 * in: a layout with in->units set.  1 with *out filled when extrapolated,
 * 0 when declined (as above), or the error of a run
 * (synth_build, settle_synth).
 */
int hier_extrapolate(const struct synth_in *in, struct hier_out *out, struct prism_err *err);

/* hier_extrapolate() with the points' templates in tpl (reset first,
 * synth_tpl_reset: a thread's, kept from candidate to candidate so that
 * none of its memory is allocated again); NULL: one of its own.  The
 * points simulated through sm and settled in sc (settle_synth_sim: a
 * thread's, kept the same way), or NULL: a simulator and memory each. */
struct sim;
struct settle_scratch;
int hier_extrapolate_tpl(const struct synth_in *in, struct synth_tpl *tpl, struct sim *sm,
			 struct settle_scratch *sc, struct hier_out *out, struct prism_err *err);

#endif
