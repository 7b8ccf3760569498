/*
 * reshape.h - structural edits of a traced graph: layers and microbatches
 * repeated or dropped, gradient collectives added, a one-stage run split
 * into pipeline stages.
 *
 * The base graph is only read (threads may share it); the candidate is a
 * new graph built from the base's columns.  A candidate is a list of
 * copies of the base's tasks, processor by processor:
 *
 *   a *microbatch run* is a maximal run of tasks of one processor with the
 *   same (step, microbatch); a *layer run* one with the same (step, phase,
 *   microbatch, layer).  A run whose microbatch (layer) has k copies in the
 *   plan is emitted k times back to back, in place; k = 0 drops it.  Layer
 *   runs nest in microbatch runs.  So layers 2 -> 4 repeats each layer's
 *   runs twice (layers 0 0 1 1; identical layers make the order moot),
 *   16 -> 2 drops all but the first and the last.
 *
 *   Edges: an edge whose two ends are in one run group (the same step and
 *   microbatch; the same step, phase, microbatch and layer) joins copy c to
 *   copy c; an edge leaving a group leaves from its last copy, one entering
 *   it enters its first.  Order edges are made anew along each processor.
 *   Tasks outside every group that a group waits for, and that wait for
 *   the group (through other outside tasks), repeat with it (or the copies
 *   would form a cycle: a collective on another stream between two parts
 *   of one layer).  Dropped tasks are removed and what waited on them
 *   waits on what they waited on (edges through them are contracted).
 *
 *   Each processor keeps its own traced clock: a copy starts where the
 *   previous one ended, later tasks move by what the copies add (or the
 *   dropped ones took), and the step spans move with their thread.
 *   Collectives in copies are new instances, numbered again per rank and
 *   process group in the new order.
 *
 * Gradient collectives (add_dp): where the base has none, an all-reduce of
 * each layer's gradients is issued after the layer's backward in the last
 * microbatch, on a new stream of the rank, as prism synth does: the
 * launching thread records an event and makes the stream wait (two calls),
 * runs the op's CPU time and launches the collective; the optimizer's
 * first kernel waits for the last of them, and so does the step's closing
 * device synchronise.
 *
 * Stages (pp > 1, from a one-stage base): docs/MODEL.md, "Graph edits".
 */
#ifndef PRISM_RESHAPE_H
#define PRISM_RESHAPE_H

#include <stdint.h>

#include "graph.h"
#include "hw.h"

struct reshape_plan {
	/* Copies per base layer index (0: dropped), n_layers entries, or
	 * NULL: as traced.  Layers beyond n_layers are kept. */
	const int32_t *layer_copies;
	int32_t n_layers;
	/* Copies per base microbatch index, or NULL.  A trace without
	 * microbatch labels is one microbatch (0): its forward and backward. */
	const int32_t *mb_copies;
	int32_t n_mbs;
	/* > 0: in all copies of a microbatch but its last, drop the
	 * collectives of this group size that reduce gradients (all-reduce,
	 * reduce-scatter) and the host calls that launched them: a repeated
	 * last microbatch synchronises its gradients once. */
	int64_t strip_group;
	/* Add the gradient all-reduces (the base has none), as prism synth
	 * issues them: buckets of gradients filled in the order the backward
	 * completes them -- rank r's dp_first[r] parameters (the output
	 * side's), then each layer's dp_layer_params from the top -- and
	 * all-reduced after the layer that fills one (dp_bucket_params or
	 * more); the rest, with rank r's dp_last[r] (the embedding's), after
	 * the bottom layer.  dp_first and dp_last: n_dp_extra entries, or
	 * NULL (0).  dp_coll_ns(dp_ctx, bytes): an all-reduce's duration. */
	int add_dp;
	int dp; /* its group */
	double dp_layer_params, dp_bucket_params;
	double dp_grad_bytes; /* per parameter */
	const double *dp_first, *dp_last;
	uint32_t n_dp_extra;
	int64_t (*dp_coll_ns)(const void *dp_ctx, double bytes);
	const void *dp_ctx;
	/* Add the gradient accumulation a repeated microbatch runs where the
	 * copied one took its gradients (GRAPH_ACC_OP host tasks: the first
	 * microbatch after zero_grad(set_to_none=True) launches no add):
	 * after each copy but the first of such a task, the add's CPU time
	 * and launch (cpu_op_ns, launch_ns) and, after the kernel its thread
	 * launched last, on that kernel's stream, an elementwise kernel of
	 * acc_ns(acc_ctx, bytes): both gradients read, one written, at the
	 * op's shape and element size. */
	int add_acc;
	int64_t (*acc_ns)(const void *acc_ctx, double bytes);
	const void *acc_ctx;
	/* Host costs of added tasks. */
	int64_t cpu_op_ns, launch_ns, event_ns, gpu_lag_ns;
};

struct reshape_stats {
	uint64_t nodes_added;	/* copies and added tasks */
	uint64_t nodes_dropped; /* base tasks (or copies) removed */
	uint64_t colls_added;	/* collectives added (add_dp) */
	uint64_t accs_added;	/* gradient accumulations added (add_acc) */
	uint64_t bridges;	/* outside tasks that repeat with a group */
	uint64_t groups;	/* run groups repeated or dropped */
};

/*
 * The gradients g's microbatches take rather than add (GRAPH_ACC_OP host
 * tasks with a shape, after a launch on their thread, not followed by a
 * hook's add of that shape): how many, and where last is not NULL, per
 * task the kernel its thread launched last for those (NONE32 for every
 * other task); *elem_bytes, where not NULL, their largest element size.
 */
size_t reshape_taken_grads(const struct graph *g, uint32_t *last, double *elem_bytes);

/* Initialise p to "no change". */
void reshape_plan_init(struct reshape_plan *p);

/*
 * The candidate p describes, from g.  *out is a new graph (graph_free it).
 * 0, PRISM_EARG where the plan asks for what g does not have (layer copies
 * on a graph without layers), PRISM_EINTERNAL if the copies would wait on
 * each other (a cycle: the message says how many tasks), PRISM_ENOMEM or
 * PRISM_ELIMIT (over 2^32 tasks or edges).
 */
int reshape_apply(const struct graph *g, const struct reshape_plan *p, struct graph **out,
		  struct reshape_stats *st, struct prism_err *err);

#endif
