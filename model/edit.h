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

#include "calib.h"
#include "cost.h"
#include "graph.h"
#include "hw.h"

struct edit_retime {
	const struct hw_profile *from, *to; /* the base's and the candidate's GPU */
	int dp_from, dp_to;                 /* data-parallel degree, 0: unchanged */
	double comm_eff;                    /* scales the profile's bus efficiencies (comm.h) */
};

struct edit_stats {
	uint64_t kernels_scaled, colls_scaled, colls_unsized;
};

/* Re-time g (a clone) in place.  0, or PRISM_ENOMEM. */
int edit_retime(struct graph *g, const struct edit_retime *r, struct edit_stats *st);

struct edit_layer_stats {
	uint64_t segments;    /* runs of layer tasks repeated (per processor) */
	uint64_t groups;      /* (step, phase, microbatch) windows */
	uint64_t nodes_added;
};

/*
 * Layers x k on any graph whose layers were found (prism:: ranges or
 * inferred, graph.h), without a model of the run: on each processor, the
 * run of tasks from a step's first to its last layer task of one phase and
 * microbatch, with whatever lies between, is repeated k times back to
 * back.  Edges inside such a group join copy c to copy c; edges leaving it
 * leave from the last copy, edges entering it enter the first; the copies
 * of a run follow each other in order.  Tasks outside every run that a
 * group waits for and that wait for the group (a collective between two
 * layers) repeat with it.  Later tasks' traced starts move by what the
 * copies add, so roots and step spans keep their place.  Collectives in
 * the copies are new instances, numbered in the new order.  g is only
 * read; *out is a new graph.  0, PRISM_EARG if g has no layers, or
 * PRISM_ENOMEM / PRISM_ELIMIT.
 */
int edit_layers(const struct graph *g, int k, struct graph **out, struct edit_layer_stats *st,
		struct prism_err *err);

struct edit_fit {
	struct calib_class cost[KC_NCLASSES]; /* fitted overhead and efficiency */
	double scale[KC_NCLASSES]; /* or, where no line could be fitted, the
				    * ratio measured / modelled of the class */
	int fitted[KC_NCLASSES];   /* 2: a line, 1: a ratio, 0: the overall ratio */
	uint64_t n[KC_NCLASSES];   /* the base's tasks of the class */
	double overall;            /* all kernels together */
	double cpu_op_s, launch_s; /* host cost per op and per launch (medians) */
	int host_fitted;
};

/*
 * Compare base (a trace of a run prism can describe) with model (that run
 * synthesised with the costs in model_in).  Kernels are paired by name:
 * each name the model has gives a point (x, t) per class, x its ideal time
 * (recovered from the model's time and model_in's cost line), t its mean
 * measured time in the base; a weighted least-squares line t = a + x / e
 * through a class's points (two distinct sizes at least) gives the class's
 * overhead a and efficiency e, which carry to other sizes.  A class with
 * one size gets the ratio of its times, a class the base lacks the ratio
 * over all kernels.  Collectives are not fitted here.  0, or PRISM_ENOMEM.
 */
struct synth_in;
int edit_fit(const struct graph *base, const struct graph *model,
	     const struct synth_in *model_in, struct edit_fit *f);

#endif
