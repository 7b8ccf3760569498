/*
 * build.h - the execution graph of a job from its ranks' Kineto traces.
 *
 * Nodes: per host thread, its runtime calls and the CPU work between them;
 * per CUDA stream, its kernels, copies and sets.  Edges: order, launch (by
 * correlation id), sync (blocking calls), event (cross-stream record/wait)
 * and thread (cross-thread).  Where the trace records a dependency
 * (cuda_sync records, correlation ids, device synchronise) the edge is
 * exact; where it does not, it is inferred from timing with the tolerances
 * below and flagged GE_INFERRED.  docs/FORMATS.md states every rule.
 */
#ifndef PRISM_BUILD_H
#define PRISM_BUILD_H

#include <stddef.h>

#include "graph.h"
#include "kineto.h"

struct build_opts {
	int infer_events;      /* cross-stream edges from timing where no cuda_sync */
	int infer_sync;	       /* stream/event-sync sources from timing */
	int infer_threads;     /* cross-thread edges from timing */
	int infer_share;       /* shared-GPU edges from timing */
	int infer_layers;      /* layers from repeated op sequences (infer.h)
				* where the trace has no prism::layer ranges */
	int allow_dangling;    /* place GPU work whose launch is missing in the window */
	int64_t event_tol_ns;  /* a waited-on task ends at most this long before */
	int event_tol_auto;    /* 1: per rank, at least the trace's own launch
				* latency (event_tol_measured) */
	int64_t share_tail_ns; /* a task on another stream holding the GPU ends at
				* most this long after the waiting task begins */
	int64_t sync_tol_ns;   /* a synchronise returns at most this long after */
	int64_t thread_gap_ns; /* idle host gap that may hide a cross-thread wait */
	int64_t thread_tol_ns; /* the other thread's task ends at most this long before */
	int64_t wake_tol_ns;   /* or it began a CPU task at most this long before
				* that still runs (it woke the thread) */
	int64_t lag_cap_ns;    /* the most start lag a task keeps as latency */
};

/* The defaults documented in docs/FORMATS.md. */
void build_opts_default(struct build_opts *o);

/*
 * Build the graph of the job whose ranks are traces[0..n).  Each trace's
 * rank is its rank when has_rank is set (distributedInfo, or the command
 * line); the others take the lowest ranks no trace claims, in order.
 * st (the table the traces were read with) is moved into the graph and
 * left empty.  On success *out owns everything; the traces may be
 * released.  Errors (duplicate ranks, duplicate or dangling correlation
 * ids) name the file and event and return PRISM_EFORMAT.
 */
int build_graph(const struct kineto_trace *traces, size_t n, struct strtab *st,
		const struct build_opts *o, struct graph **out, struct prism_err *err);

#endif
