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
 * allocates nothing once they have grown (contention's and folded tasks'
 * on the first run that has them; the log of followed pieces as it
 * fills).
 */
#ifndef PRISM_SIM_H
#define PRISM_SIM_H

#include <stdint.h>

#include "evq.h"
#include "graph.h"
#include "prism.h"
#include "vec.h"

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
 * GN_COLL tasks with one member present are slowed (the context-parallel
 * ring's send/recv among them: a GN_COLL); GN_P2P transfers and
 * rendezvous instances keep their times (their members share one
 * transfer time), so a settled graph replays as it ran.  Both 0: off
 * (replays of traces, whose durations already hold what contention they
 * met).
 */
/*
 * Folded tasks (synth.h "units"; docs/MODEL.md, "Hierarchical
 * simulation"): one task standing for a run of kernels on one stream.
 * Its pieces run in order: piece k waits for the later of the previous
 * piece's end (the task's ready time for the first) and its launch, `rel`
 * after the start of the unit's host task `host`, then for its lag, then
 * runs `dur` as a compute kernel, a collective or neither (a
 * point-to-point transfer: never slowed), as the kernel-level run would.
 * Without contention, or while nothing else runs on its GPU, a folded
 * task is one event; while a collective or kernel runs beside it, the sim
 * follows it piece by piece, and the pieces it followed are logged
 * (sim.plog) with their simulated times.
 */
/*
 * A pair (sim_folded.n2 > 0): a folded task with a side lane, two runs of
 * pieces at once -- the main lane on the task's stream, the side lane on
 * another stream of its rank (the context-parallel ring's transfers beside
 * its attention steps, each lane waiting on the other).  A piece of
 * either lane also waits for the end of the other lane's piece xw (none:
 * SIM_NO_XW); the lanes slow each other as a kernel and a collective
 * would.  The task starts when its graph edges release it, both lanes
 * from then, and ends with the later lane.  Alone on its GPU the pair is
 * evaluated in a loop of its own over its lanes' events (the sim's
 * arithmetic in the sim's order); while anything else runs there, its
 * lanes are followed event by event through the queue.  Every piece's
 * simulated times are kept (sim.xstart, xend; not in plog), and its busy
 * time (fold_busy) is its main lane's.
 */
#define SIM_NO_XW UINT32_MAX

#define SIM_PIECE_IDLE	  0
#define SIM_PIECE_COMPUTE 1
#define SIM_PIECE_COMM	  2

struct sim_piece {
	int64_t rel_ns, lag_ns, dur_ns;
	/* From this piece to the last: the sum of lags and durations, the
	 * latest launch plus what follows it (max of rel_i + rest_i), the
	 * sum of durations (sim_fold_pieces() fills them). */
	int64_t rest_ns, reach_ns, busy_ns;
	uint8_t kind; /* SIM_PIECE_* */
	uint32_t xw;  /* a pair's: the other lane's piece it waits for (SIM_NO_XW none) */
};

struct sim_folded {
	uint32_t node, host; /* the task; the host task whose start launches are offset from */
	uint32_t first, n;   /* pieces[first .. first + n) */
	uint32_t first2, n2; /* a pair's side lane (n2 0: none) */
};

struct sim_fold {
	const struct sim_folded *tasks;
	uint32_t n_tasks;
	const struct sim_piece *pieces;
};

/* Fill rest/reach/busy of pieces[first .. first + n). */
void sim_fold_pieces(struct sim_piece *pieces, uint32_t first, uint32_t n);

/* A piece the sim followed: its task (index in sim_fold.tasks), its
 * index in the task, and its simulated start and end. */
struct sim_piece_time {
	uint32_t task, piece;
	int64_t start_ns, end_ns;
};

struct sim_opts {
	const struct sim_fold *fold; /* folded tasks, or NULL */
	unsigned skip;		     /* SIM_SKIP_* */
	int rendezvous;		     /* 1: collectives rendezvous across ranks */
	double slow_compute;	     /* contention: compute kernels' slowdown */
	double slow_comm;	     /* contention: collectives' slowdown */
	int contention_added;	     /* 1: only collectives flagged NF_ADDED contend
			       * (a graph edit: the trace's kernels hold what
			       * its own collectives did to them) */
};

void sim_opts_default(struct sim_opts *o);

/* A folded task's progress (SIM_F_* in sim.c): its pieces from k on run
 * at full speed as one (the previous one having ended at at_ns; or piece
 * k starting at at_ns; or running since at_ns, rem0 of it left at t0), or
 * the sim follows piece k (waiting for it to start at at_ns, or running
 * it since at_ns). */
struct sim_lane;

/* A pair's whole run once every piece was launched by its start (sim.c
 * pair_alone: the max-plus pass's, or a collapse at its start under
 * contention), from that start: kept per template (its first piece). */
struct sim_pair_memo {
	uint32_t first2, n, n2;
	int64_t reach, len, busy;
	size_t off; /* its pieces' starts and ends, in sim.memo_t */
};

struct sim_fstate {
	int64_t at_ns, t0_ns;
	double rem0;
	uint32_t k;
	uint8_t mode;
};

/* Per node, the fields a run reads and writes at an edge's target, in one
 * record (32 bytes, two to a cache line: sim.nd is aligned to 64), not
 * five arrays each missing the cache on its own (docs/PERFORMANCE.md). */
struct sim_node {
	int64_t ready_ns; /* working state: when its last dependency released it */
	/* Contention: when it ends at the current rates; before it starts,
	 * in the max-plus hybrid, when the release kept in mp_pb was. */
	int64_t pred_end;
	uint32_t binding; /* valid after sim_run: the dependency that decided
			   * the start, or UINT32_MAX */
	uint32_t indeg;	  /* working state: the edges it still waits on */
	/* The max-plus hybrid's (sim.mp_hybrid): the task whose release
	 * pushed it in the sim (UINT32_MAX: two at one instant). */
	uint32_t mp_pb;
	uint32_t unused;
};

struct sim {
	const struct graph *g;
	/* Per node, valid after sim_run. */
	int64_t *start_ns;
	int64_t *end_ns;
	struct sim_node *nd; /* per node: binding, and the working fields */
	void *nd_mem;	     /* nd's allocation */
	/* Working state. */
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
	double *rem; /* per node: work left at full speed, ns */
	/* The run's slowed rates, 1 / (1 + sim_opts.slow_compute) and
	 * 1 / (1 + slow_comm), computed once a run (sim_rates). */
	double rate_comp, rate_comm;
	uint32_t n_gpu_ranks;
	struct sim_running *run; /* per rank: what runs on its GPU */
	uint8_t *rkind;		 /* per node: what it runs as now (SIM_PIECE_*) */
	/* Folded tasks (sim_opts.fold; allocated by the first run that has
	 * them).  fold_busy: per task, the time its pieces ran (their
	 * durations as slowed), valid after sim_run; plog: the pieces
	 * followed one by one, by task and piece. */
	uint32_t *fold_of; /* per node: its folded task, or UINT32_MAX */
	struct sim_fstate *fst;
	int64_t *fold_busy;
	uint32_t n_fold_cap;
	VEC(struct sim_piece_time) plog;
	VEC(struct sim_piece_time) ptmp; /* scratch: plog sorted */
	VEC(uint32_t) pcount;		 /* scratch: per task, its first row */
	/* Pairs (sim.h above): per folded task its two lanes and their copy
	 * (sim.c); each pair's pieces' simulated times, valid after sim_run:
	 * pair f's main lane's piece k at xstart, xend[xoff[f] + k], its side
	 * lane's at [xoff[f] + n + k] (not in plog). */
	struct sim_lane *lane;
	uint32_t *xoff;
	int64_t *xstart, *xend;
	size_t xend_cap;
	uint32_t n_pairs;  /* of sim_opts.fold's tasks */
	uint32_t *memo_at; /* per piece: the memo of the template it begins, or UINT32_MAX */
	size_t memo_cap;
	VEC(struct sim_pair_memo) memo;
	VEC(int64_t) memo_t;
	/* sim_run_maxplus(): the worklist; why the last call declined
	 * (SIM_MP_*); how many tasks its hybrid took through the queue;
	 * whether it ran the hybrid, which keeps per node the task whose
	 * release pushed it in the sim (sim_node.mp_pb, pred_end). */
	uint32_t *mp_work;
	int mp_why;
	uint64_t mp_queued;
	int mp_hybrid;
	/* The hybrid's windows (mp_alone in sim.c).  Per node: mp_q 1 where
	 * a contended task went through the queue (it might run beside
	 * another of its rank), 2 where it went straight through (mp_direct
	 * counts those), 0 for every other task; mp_a, the last task of its
	 * rank's main stream that a task of another stream waits on
	 * (UINT32_MAX: none).  Per rank its main stream and (mp_other) its
	 * others, per stream the first contended task not known to have
	 * ended. */
	uint8_t *mp_q;
	uint32_t *mp_a, *mp_main, *mp_cur, *mp_other;
	int64_t *mp_t;	  /* per rank: the time of its last check */
	uint32_t *mp_cnt; /* per rank: mp_windows_init's counts */
	uint64_t mp_direct;
	/* What the arrays hold (sim_bind keeps them from graph to graph):
	 * nodes, collectives, processors, ranks (run and the hybrid's
	 * per-rank arrays); match_collectives' sort keys (2 cap_c). */
	size_t cap_n, cap_c, cap_p;
	uint32_t cap_r;
	void *inst_keys;
	void *mp_scr; /* sim_run_maxplus's scratch (mp_scratch in sim.c) */
	size_t mp_scr_cap;
};

/* The tasks running on one rank's GPU under contention. */
struct sim_running {
	uint32_t *v;
	uint32_t n, cap;
	uint32_t n_comm; /* of them, running as collectives */
	uint32_t n_comp; /* running as compute kernels */
	uint32_t n_fold; /* folded tasks */
	int64_t since;	 /* progress accounted up to */
};

/* A simulator for g (which must outlive it; NULL: none yet, sim_bind
 * gives it one).  NULL when out of memory. */
struct sim *sim_new(const struct graph *g);
/* s made ready for g (which must outlive its use) as sim_new(g) makes a
 * simulator: nothing of the graph before is read again.  Its arrays are
 * kept and grow only when g outgrows them, so a thread's simulator
 * simulating graph after graph allocates nothing once the largest has
 * been seen.  0, or PRISM_ENOMEM (s then has no graph: bind again or
 * free it). */
int sim_bind(struct sim *s, const struct graph *g);
void sim_free(struct sim *s);

/*
 * Simulate the whole graph.  0, or PRISM_EINTERNAL with err saying which
 * tasks could never start (a collective whose members wait on each other).
 */
int sim_run(struct sim *s, const struct sim_opts *o, struct prism_err *err);

/*
 * The same run as sim_run() without its event queue where the queue's
 * order cannot matter: every task starts at the latest release of its
 * dependencies (plus its lag), collectives at their last member's
 * arrival, folded tasks as one (sim.h above) -- a longest-path pass in
 * dependency order, a max-plus evaluation.  With contention on and a
 * rank's contended tasks (compute kernels, collectives with one member
 * present, folded tasks) on two streams or more (data-parallel
 * reductions beside the backward), the hybrid: those tasks go through
 * the queue as in sim_run(), on their rank, every other task straight
 * through (s->mp_queued counts the queued) -- and so are the contended
 * tasks of a rank's main stream that start when no contended task of its
 * other streams can run beside them (every one ended, or waiting on a
 * later task of the main stream: mp_alone in sim.c; s->mp_direct counts
 * them: it runs alone, as in sim_run(), where every stream's order is
 * its edges; a rank with a stream that is not gets no windows).  It equals sim_run()'s
 * start, end, binding, ready, fold_busy and plog to the nanosecond when
 * no tie between two releases is left to the queue's push order, and,
 * contention on: in the plain pass, no two contended tasks of one stream
 * run at once; in the hybrid, a rank's events at one instant either
 * involve no folded task or come in the sim's order (hy_after in sim.c).
 * Otherwise it declines, saying why in s->mp_why, and the caller runs
 * sim_run().  1: evaluated; 0: declined; PRISM_ENOMEM.
 */
#define SIM_MP_RUN	0 /* evaluated */
#define SIM_MP_STREAMS	1 /* (internal: contended tasks on two streams, the hybrid) */
#define SIM_MP_OVERLAP	2 /* contention on, one stream's contended tasks at once */
#define SIM_MP_TIE	3 /* two releases at the same instant decide a binding */
#define SIM_MP_STUCK	4 /* a task past PRISM_TIME_MAX or never started: sim_run says */
#define SIM_MP_SAMETIME 5 /* the hybrid: a rank's events at one instant, not one chain */
#define SIM_MP_OPTS	6 /* ablation options (skip, contention_added) */
int sim_run_maxplus(struct sim *s, const struct sim_opts *o, struct prism_err *err);

/*
 * Simulated time of traced time t on processor p: the tasks of a host
 * thread tile its span, so a traced instant maps into the task that was
 * running then (a waiting interval maps to where the wait ended).
 */
int64_t sim_map_time(const struct sim *s, uint32_t p, int64_t t);

#endif
