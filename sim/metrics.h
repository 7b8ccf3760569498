/*
 * metrics.h - what a simulation says: iteration times against the
 * measured ones, the Lumos breakdown, stream utilisation, critical path.
 *
 * Breakdown (Lumos, MLSys 2025), per rank over an iteration's window on
 * the GPU: compute = union of the intervals of kernels, copies and sets;
 * communication = union of collective and point-to-point kernels;
 * overlap = their intersection; exposed compute = compute - overlap;
 * exposed communication = communication - overlap; idle = the window
 * minus both.  The four add up to the window.
 */
#ifndef PRISM_METRICS_H
#define PRISM_METRICS_H

#include <stdint.h>

#include "sim.h"

struct metrics_iter {
	uint32_t rank;         /* index into graph.ranks */
	int64_t step;          /* ProfilerStep#N; -1: the GPU-active span */
	int64_t measured_ns;   /* the step's host span (or the traced GPU span) */
	int64_t predicted_ns;  /* the same span in the simulation */
	int64_t sim_start_ns;  /* the window in simulated time */
	int64_t exposed_compute_ns, exposed_comm_ns, overlap_ns, idle_ns;
};

/*
 * One entry per iteration of every rank (graph order), or one GPU-active
 * span per rank that has no step markers.  *out is malloc'd (caller
 * frees); returns the count, or -1 when out of memory.
 */
long metrics_iterations(const struct sim *s, struct metrics_iter **out);

/*
 * The iteration time a prediction reports: per step, the slowest rank's
 * predicted time, averaged over the steps after the first (which starts
 * from idle streams) when there are several; without step markers, the
 * slowest rank's GPU-active span.  *iter_s in seconds; 0, or PRISM_ENOMEM.
 */
int metrics_step_time(const struct metrics_iter *its, long n, double *iter_s);

/* Busy fraction of processor p over [from, to) of simulated time. */
double metrics_utilisation(const struct sim *s, uint32_t p, int64_t from, int64_t to);

struct metrics_path {
	uint32_t *nodes;           /* from the last task back to the first */
	uint32_t n;
	int64_t length_ns;         /* the makespan the path explains */
	int64_t by_kind_ns[GN_NKINDS]; /* time each kind of task holds the path */
	int64_t lag_ns;            /* latencies between them (launch, wake-up) */
};

/* The critical path of the run: from the task that ends last, back along
 * the dependencies that decided each start.  0 or PRISM_ENOMEM; free
 * p->nodes. */
int metrics_critical_path(const struct sim *s, struct metrics_path *p);

#endif
