/*
 * edit.h - what a candidate changes, applied to a copy of the base.
 *
 * Two kinds of edit:
 *
 * Re-timing in place (any trace): the candidate's graph is a clone of the
 * base with the same tasks and dependencies, and new durations.  Another
 * GPU scales each kernel by its class (SimAI's rule): GEMMs, attention and
 * convolutions by the ratio of peak FLOP/s for their dtype, the
 * memory-bound classes by the ratio of HBM bandwidths; collectives by the
 * ratio of the communication model's times (comm.h) on the old and new
 * hardware and group.  Another data-parallel degree regroups the
 * collectives whose group is the base's DP group: their time is scaled by
 * comm_time(new group) / comm_time(old group), which keeps the efficiency
 * the trace measured.  Host work is left as traced.
 *
 * Rebuilding from measured blocks (annotated traces): structural edits
 * (layers, hidden, TP, PP and schedule, microbatches) need the run's
 * layers, which the trace's prism:: ranges give.  The candidate is built
 * by synth.h with kernel times calibrated on the base: edit_fit() compares
 * the base's layer kernels class by class with a synthesised model of the
 * base's own configuration, and the ratios (measured / modelled) scale the
 * candidate's kernels; host costs per op and per launch are the base's
 * medians.
 */
#ifndef PRISM_EDIT_H
#define PRISM_EDIT_H

#include "cost.h"
#include "graph.h"
#include "hw.h"

struct edit_retime {
	const struct hw_profile *from, *to; /* the base's and the candidate's GPU */
	int dp_from, dp_to;                 /* data-parallel degree, 0: unchanged */
	double comm_eff;                    /* bus efficiency for the comm model */
};

struct edit_stats {
	uint64_t kernels_scaled, colls_scaled, colls_unsized;
};

/* Re-time g (a clone) in place.  0, or PRISM_ENOMEM. */
int edit_retime(struct graph *g, const struct edit_retime *r, struct edit_stats *st);

struct edit_fit {
	double scale[KC_NCLASSES]; /* measured / modelled time of each class */
	uint64_t n[KC_NCLASSES];   /* the base's layer tasks of the class */
	double overall;            /* all layer kernels together */
	double cpu_op_s, launch_s; /* host cost per op and per launch (medians) */
	int host_fitted;
};

/*
 * Compare base (an annotated trace) with model (synthesised for the same
 * configuration): per kernel class, the GPU time of tasks inside layers
 * per step.  A class the model has and the base lacks (or the reverse)
 * gets the overall ratio.  0, or PRISM_ENOMEM.
 */
int edit_fit(const struct graph *base, const struct graph *model, struct edit_fit *f);

#endif
