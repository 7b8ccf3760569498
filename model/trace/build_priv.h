/*
 * build_priv.h - what the graph builder's two parts share (model/build.c:
 * threads, streams, synchronisation and inferred edges; model/annotate.c:
 * steps, phases, passes, microbatches and layers).  Private to them: the
 * public interface is build.h.
 */
#ifndef PRISM_BUILD_PRIV_H
#define PRISM_BUILD_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "build.h"
#include "graph.h"
#include "gwrite.h"
#include "imap.h"
#include "kineto.h"
#include "vec.h"

#define NONE32 UINT32_MAX

struct key {
	uint32_t thread;
	uint32_t ev;
	int64_t ts;
	int64_t negdur;
};

/* The graph as built: tasks in the writer (gwrite.h), nodes grouped by
 * processor as they are made, their times absolute (the job's clock)
 * until finish() moves time 0 to the earliest. */
struct builder {
	const struct build_opts *o;
	struct prism_err *err;
	struct gw w;
	/* Per node (side arrays of w.nodes): the comm index of its enclosing
	 * op (NONE32: none), and for a runtime call whether it launched GPU
	 * work the trace holds. */
	VEC(uint32_t) hint;
	VEC(uint8_t) launched;
	VEC(uint8_t) rtclass_of; /* by string id; 0xff = not yet classified */
};

/* ---- per-rank state ----------------------------------------------------- */

struct stream_ix {
	uint32_t first, n; /* node range */
};

struct rank_ctx {
	const struct kineto_trace *tr;
	uint32_t rank_ix;
	struct key *keys; /* all kept events, sorted */
	size_t nkeys;
	struct imap rt_by_corr;	     /* correlation -> runtime (call) node */
	struct imap gpu_by_corr;     /* correlation -> first GPU event */
	struct imap gpunode_by_corr; /* correlation -> first GPU node */
	int64_t min_rt_corr;
	VEC(uint32_t) cpu_procs; /* processor indices of this rank */
	VEC(uint32_t) gpu_procs;
	int64_t *lts;		 /* per node of this rank: launch start (GPU nodes) */
	uint32_t node_base;	 /* first node id of this rank */
	const uint32_t *proc_of; /* kineto thread -> processor, or NONE32 */
	size_t nsync;
	int64_t event_tol; /* event_tol_ns, or the rank's own (event_tol_measured) */
};

static inline const struct kt_event *ev_at(const struct rank_ctx *rc, size_t k)
{
	return &rc->tr->events.v[rc->keys[k].ev];
}

static inline int64_t node_end(const struct builder *b, uint32_t u)
{
	return b->w.start_ns[u] + b->w.dur_ns[u] + b->w.wait_ns[u];
}

/* build.c */
int build_nomem(struct builder *b);
int build_rt_class(struct builder *b, uint32_t name);
int build_fail_ev(struct builder *b, const struct rank_ctx *rc, const struct kt_event *e,
		  const char *fmt, ...) PRISM_PRINTF(4, 5);

/* annotate.c: the rank's steps (ProfilerStep#N ranges, iters[] from
 * it_lo), then its phases, passes, microbatches and layers (prism ranges,
 * PyTorch's autograd, module names, repeated op blocks).  0, or an error
 * set in b->err. */
int build_iterations(struct builder *b, struct rank_ctx *rc);
int build_annotations(struct builder *b, struct rank_ctx *rc, size_t it_lo);

#endif
