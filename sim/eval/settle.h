/*
 * settle.h - simulate a synthesised graph and make it a trace of itself.
 *
 * synth_build() leaves its graph's times unset; settle_synth() simulates
 * it, writes the simulated start of every task into the graph's traced
 * start (a wait node's waiting into wait_ns), makes one iteration per step
 * and stage (the host span from the step's first task to the end of its
 * closing synchronise), and measures what the run predicts: the step
 * time of the slowest stage (the mean over steps after the first, which
 * starts from idle streams, when there are several), and the pipeline bubble of the first step
 * (per stage, the compute stream's idle fraction over the span from the
 * first pipeline unit's start on any stage to the last one's end; the
 * mean over stages).
 */
#ifndef PRISM_SETTLE_H
#define PRISM_SETTLE_H

#include "graph.h"
#include "synth.h"

struct settle_out {
	double iter_s;
	double bubble;
	/* Lumos breakdown (metrics.h) of the slowest stage's last step. */
	double exposed_compute_s, exposed_comm_s, overlap_s, idle_s;
	/* What the bubble is made of: the span of the first step's pipeline
	 * units and each stage's compute stream's busy time in it
	 * (settle_bubble). */
	int64_t unit_span_ns, unit_busy_ns[LAYOUT_MAX_STAGES];
	/* GPU tasks whose start their launch decided (the host was behind). */
	int64_t launch_bound;
	/* The same by the stage whose host launched them (the rank's index,
	 * below LAYOUT_MAX_STAGES; hier.c's per-stage rule). */
	int64_t launch_bound_stage[LAYOUT_MAX_STAGES];
	/* Whether the run was the max-plus pass (SIM_MP_RUN) or why it
	 * declined (SIM_MP_*, sim.h; SIM_MP_OPTS from settle_synth_events):
	 * the event simulation ran instead. */
	int maxplus;
	uint64_t maxplus_queued; /* tasks its hybrid took through the queue */
	uint64_t maxplus_direct; /* contended tasks it took straight through */
};

/* The bubble of `stages` compute streams, stage r busy busy_ns[r] over a
 * span of span_ns: the mean of their idle fractions (0 without a span). */
double settle_bubble(int stages, int64_t span_ns, const int64_t *busy_ns);

/* 0, or PRISM_ENOMEM / PRISM_EINTERNAL (a schedule that deadlocks). */
int settle_synth(struct graph *g, const struct synth_out *so, struct settle_out *out,
		 struct prism_err *err);

/*
 * What settling works in besides the simulator (the breakdown's unions,
 * the folded tasks, the metrics' arrays), kept from graph to graph by a
 * thread so that settling a candidate allocates nothing once it has room;
 * each use starts from it as from new memory (the results are the same
 * as with a scratch of their own).  After each graph any of its arrays
 * with room for more than SETTLE_KEEP entries is freed, as gwrite.h's
 * GW_KEEP_NODES: one huge build's memory is not held for the rest of a
 * sweep.
 */
#define SETTLE_KEEP (1u << 16)
struct settle_scratch;
struct settle_scratch *settle_scratch_new(void);
void settle_scratch_free(struct settle_scratch *sc);

/* settle_synth() through sm (sim.h: bound to g here, its memory kept
 * for the next graph; NULL: a simulator of its own) and sc (NULL: memory
 * of its own, freed before it returns). */
struct sim;
int settle_synth_sim(struct sim *sm, struct settle_scratch *sc, struct graph *g,
		     const struct synth_out *so, struct settle_out *out, struct prism_err *err);

/* settle_synth() with the event simulation alone, never the max-plus
 * pass (sim_run_maxplus): the reference that pass is tested against. */
int settle_synth_events(struct graph *g, const struct synth_out *so, struct settle_out *out,
			struct prism_err *err);

/* Build in (synth_build) and settle it.  On failure *g is NULL and so
 * freed. */
int settle_build(const struct synth_in *in, struct graph **g, struct synth_out *so,
		 struct settle_out *st, struct prism_err *err);

#endif
