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

#include <stddef.h>
#include <stdint.h>

#include "sim.h"

/*
 * A step's time is the longer of its two sides: the host span (the
 * ProfilerStep#N range) and the GPU side, from the first GPU task launched
 * in the step to the first launched in the rank's next step (for its last
 * step, to the end of the last GPU task it launched).  A host that runs
 * ahead of a busy GPU ends its ranges early; the GPU side is then the
 * step's time.  The same definition holds for measured and predicted.
 */
struct metrics_iter {
	uint32_t rank;			   /* index into graph.ranks */
	int64_t step;			   /* ProfilerStep#N; -1: the GPU-active span */
	int64_t measured_ns;		   /* the longer side, traced (or the GPU span) */
	int64_t predicted_ns;		   /* the same in the simulation */
	int64_t host_ns, gpu_ns;	   /* traced host span, GPU side */
	int64_t pred_host_ns, pred_gpu_ns; /* the same, simulated */
	int64_t sim_start_ns;		   /* the window in simulated time */
	int64_t sim_host_start_ns;	   /* the host span's start, simulated */
	int64_t exposed_compute_ns, exposed_comm_ns, overlap_ns, idle_ns;
};

/*
 * One entry per iteration of every rank (graph order), or one GPU-active
 * span per rank that has no step markers.  *out is malloc'd (caller
 * frees); returns the count, or -1 when out of memory.
 */
long metrics_iterations(const struct sim *s, struct metrics_iter **out);

/* The same without the breakdowns (their four fields 0): all a step time
 * needs.  metrics_breakdown() then fills one iteration's, the same as
 * metrics_iterations() gives it (its rank's GPU work over
 * [sim_start_ns, sim_start_ns + predicted_ns)); 0 or PRISM_ENOMEM. */
long metrics_iteration_times(const struct sim *s, struct metrics_iter **out);
int metrics_breakdown(const struct sim *s, struct metrics_iter *it);

/*
 * The same with memory kept from call to call (a thread's, candidate after
 * candidate: no allocation once it has room), each call's results those
 * of the calls above.  metrics_iteration_times_k's *its lies in k, valid
 * until k's next use; metrics_scratch_trim frees any of k's arrays with
 * room for more than keep entries (so that one huge graph's are not held
 * for good).
 */
struct metrics_scratch;
struct metrics_scratch *metrics_scratch_new(void);
void metrics_scratch_free(struct metrics_scratch *k);
void metrics_scratch_trim(struct metrics_scratch *k, size_t keep);
long metrics_iteration_times_k(const struct sim *s, struct metrics_scratch *k,
			       struct metrics_iter **its);
int metrics_breakdown_k(const struct sim *s, struct metrics_scratch *k, struct metrics_iter *it);

/* A step is called host-bound when its GPU idles over this share of it
 * (the breakdown's idle): the host's launches decide its time. */
#define METRICS_HOST_BOUND_IDLE 0.30

/*
 * The iteration time a prediction reports: per step, the slowest rank's
 * predicted time, averaged over the steps after the first (which starts
 * from idle streams) when there are several; without step markers, the
 * slowest rank's GPU-active span.  *iter_s in seconds; 0, or PRISM_ENOMEM.
 */
int metrics_step_time(const struct metrics_iter *its, long n, double *iter_s);

int metrics_step_time_k(const struct metrics_iter *its, long n, struct metrics_scratch *k,
			double *iter_s);

/*
 * Over the same steps, the mean of the slowest rank's simulated host span
 * and GPU side (seconds), and whether every one of those steps was
 * host-bound (its GPU idle over METRICS_HOST_BOUND_IDLE of it; 0 without
 * entries).  0, or PRISM_ENOMEM.
 */
int metrics_step_sides(const struct metrics_iter *its, long n, double *host_s, double *gpu_s,
		       int *host_bound);

/* Busy fraction of processor p over [from, to) of simulated time. */
double metrics_utilisation(const struct sim *s, uint32_t p, int64_t from, int64_t to);

struct metrics_path {
	uint32_t *nodes; /* from the last task back to the first */
	uint32_t n;
	int64_t length_ns;	       /* the makespan the path explains */
	int64_t by_kind_ns[GN_NKINDS]; /* time each kind of task holds the path */
	int64_t lag_ns;		       /* latencies between them (launch, wake-up) */
};

/* The critical path of the run: from the task that ends last, back along
 * the dependencies that decided each start.  0 or PRISM_ENOMEM; free
 * p->nodes. */
int metrics_critical_path(const struct sim *s, struct metrics_path *p);

#endif
