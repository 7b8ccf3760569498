/*
 * sim.h - the discrete-event simulator over an execution graph.
 *
 * Every task runs on its processor in graph order (the order edges say so)
 * and starts at the latest finish of its dependencies; a task with no
 * dependency starts at its traced start.  Ready tasks wait in one binary
 * heap ordered by (start time, push order), so runs are deterministic.
 * A blocking call's wait node starts when both the call and what it waits
 * for are done, and then takes the call's own cost: the waiting is
 * simulated, not replayed.
 *
 * Collectives rendezvous across ranks: the instances of one collective
 * (same process group, same sequence number, same kind -- a send and a
 * recv are one -- one per rank present) all start when the last of them
 * is ready (members that disagree on the kind do not wait for each
 * other; n_mismatched counts them), and last the shortest of their
 * traced durations (in a trace, the last rank to arrive waited least, so
 * its duration is the transfer).  An instance with one member present
 * keeps its traced duration.
 *
 * Ownership: struct sim borrows the graph (read-only; many sims may share
 * one) and owns its working arrays, which are reused across runs: a run
 * allocates nothing.
 */
#ifndef PRISM_SIM_H
#define PRISM_SIM_H

#include <stdint.h>

#include "evq.h"
#include "graph.h"
#include "prism.h"

/* Which edges a run ignores (ablations). */
#define SIM_SKIP_EVENT	  0x01 /* cross-stream event edges */
#define SIM_SKIP_INFERRED 0x02 /* every edge inferred from timing */
#define SIM_SKIP_SHARE	  0x04 /* edges from GPU work that held the GPU */

/*
 * Contention (synthesised runs): while a collective kernel runs beside
 * compute kernels on the same GPU, both slow down -- the collective's
 * thread blocks take SMs and both share HBM bandwidth.  A compute kernel
 * then progresses at 1 / (1 + compute) of its speed, a collective at
 * 1 / (1 + comm) of its; each task's remaining work is carried across
 * every change of what runs beside it.  The factors are fitted
 * (configs/hw, `contention`; docs/MODEL.md).  Only GPU kernels and
 * collectives with one member present are slowed (point-to-point
 * transfers and rendezvous instances keep their times), so a settled
 * graph replays as it ran.  Both 0: off (replays of traces, whose
 * durations already hold what contention they met).
 */
struct sim_opts {
	unsigned skip;	      /* SIM_SKIP_* */
	int rendezvous;	      /* 1: collectives rendezvous across ranks */
	double slow_compute;  /* contention: compute kernels' slowdown */
	double slow_comm;     /* contention: collectives' slowdown */
	int contention_added; /* 1: only collectives flagged NF_ADDED contend
			       * (a graph edit: the trace's kernels hold what
			       * its own collectives did to them) */
};

void sim_opts_default(struct sim_opts *o);

struct sim {
	const struct graph *g;
	/* Per node, valid after sim_run. */
	int64_t *start_ns;
	int64_t *end_ns;
	uint32_t *binding; /* the dependency that decided the start, or UINT32_MAX */
	/* Working state. */
	int64_t *ready_ns;
	uint32_t *indeg;
	struct evq q;
	/* Collective instances. */
	uint32_t n_inst;
	uint32_t *inst_of;	/* per collective: its instance */
	uint32_t *inst_first;	/* instance i's members are inst_members[first[i]..first[i+1]) */
	uint32_t *inst_members; /* collective indices, grouped by instance */
	uint32_t *inst_size;	/* members present */
	uint32_t *inst_arrived;
	int64_t *inst_ready;
	int64_t *inst_dur;     /* the transfer time */
	uint32_t *inst_last;   /* the member that arrived last */
	uint32_t n_mismatched; /* (group, sequence) pairs whose ranks disagree on
				 * the kind: not made to wait for each other */
	int64_t makespan_ns;   /* end of the last task */
	uint64_t n_done;
	/* Contention (allocated on the first run that asks for it). */
	double *rem;	   /* per node: work left at full speed, ns */
	int64_t *pred_end; /* per node: when it ends at the current rates */
	uint32_t n_gpu_ranks;
	struct sim_running *run; /* per rank: what runs on its GPU */
};

/* The tasks running on one rank's GPU under contention. */
struct sim_running {
	uint32_t *v;
	uint32_t n, cap;
	uint32_t n_comm; /* of them, collectives */
	int64_t since;	 /* progress accounted up to */
};

/* A simulator for g (which must outlive it).  NULL when out of memory. */
struct sim *sim_new(const struct graph *g);
void sim_free(struct sim *s);

/*
 * Simulate the whole graph.  0, or PRISM_EINTERNAL with err saying which
 * tasks could never start (a collective whose members wait on each other).
 */
int sim_run(struct sim *s, const struct sim_opts *o, struct prism_err *err);

/*
 * Simulated time of traced time t on processor p: the tasks of a host
 * thread tile its span, so a traced instant maps into the task that was
 * running then (a waiting interval maps to where the wait ended).
 */
int64_t sim_map_time(const struct sim *s, uint32_t p, int64_t t);

#endif
