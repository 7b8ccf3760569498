/*
 * graph.h - the execution graph: tasks on processors, dependencies in CSR.
 *
 * A processor is a CPU thread or a CUDA stream of one rank.  Node ids are
 * grouped by processor, and inside a processor ordered by traced start, so
 * procs[p] owns the id range [first, first + n).  Every per-node column is
 * indexed by node id; times are integer nanoseconds relative to t0_ns (the
 * earliest event of the job).
 *
 * Edges are stored once, by source, in compressed sparse rows:
 *
 *   out_off:  [ 0 | 2 | 3 | 3 | 5 ]        n_nodes + 1 offsets
 *               |   |   |       |
 *   out_dst:  [ 4 7 | 5 | | 6 8 ]          n_edges target ids
 *   out_kind: [ O L | O | | S E ]          n_edges kinds (+ GE_INFERRED bit)
 *
 *   node u's successors are out_dst[out_off[u] .. out_off[u+1]).
 *
 * Every edge means "the target cannot start before the source finishes",
 * except launch edges: GPU work cannot start before its launch call
 * *starts* (it may start before the call returns; the measured latency is
 * the task's lag_ns).
 * A blocking call (stream/device/event synchronise, blocking memcpy) is
 * therefore two nodes: the call itself (duration 0; it launches, if it
 * launches anything) and a GN_WAIT node that the awaited GPU work points to
 * with sync edges.  The wait node's dur_ns is the call's own cost (traced
 * duration minus waiting); wait_ns holds the waiting that was traced, which
 * the simulator recomputes rather than replays.
 *
 * Ownership: struct graph owns every array and its string table;
 * graph_free() releases them.  After building, the topology is read-only
 * and may be shared by threads.  Graphs are made with the writer
 * (gwrite.h), which keeps these invariants.
 */
#ifndef PRISM_GRAPH_H
#define PRISM_GRAPH_H

#include <stdint.h>
#include <stdio.h>

#include "prism.h"
#include "strtab.h"

/* The op of autograd's gradient accumulation into a parameter's .grad; a
 * host task of its own where it launched nothing (it took the gradient:
 * the first microbatch after zero_grad(set_to_none=True)). */
#define GRAPH_ACC_OP "torch::autograd::AccumulateGrad"
/* The kernel of an accumulation prism adds (graph edits, synth). */
#define GRAPH_ACC_KERNEL "vectorized_elementwise_kernel (gradient accumulation)"

enum graph_node_kind {
	GN_CPU,	    /* CPU work between runtime calls on a thread */
	GN_RUNTIME, /* a CUDA runtime/driver call (its non-waiting part) */
	GN_WAIT,    /* the waiting part of a blocking call */
	GN_KERNEL,  /* a compute kernel */
	GN_MEMCPY,
	GN_MEMSET,
	GN_COLL, /* a collective kernel (NCCL all-reduce, all-gather, ...) */
	GN_P2P,	 /* a point-to-point kernel (NCCL SendRecv/Send/Recv) */
	GN_NKINDS
};

enum graph_edge_kind {
	GE_ORDER,  /* same thread or same stream */
	GE_LAUNCH, /* runtime call -> the GPU work it launched; start to start */
	GE_SYNC,   /* GPU work -> the wait node of a blocking call */
	GE_EVENT,  /* GPU work on stream S -> GPU work on stream T (record/wait) */
	GE_THREAD, /* CPU node on one thread -> CPU node on another */
	GE_SHARE,  /* GPU work on stream S -> GPU work on stream T that waited
		    * while it held the GPU (inferred only: no record shows it) */
	GE_NKINDS
};
#define GE_INFERRED 0x80 /* or-ed into out_kind: found from timing, not recorded */
#define GE_KIND(k)  ((k)&0x7f)

/* When an edge of kind k from a task [start, end) releases its target. */
static inline int64_t graph_edge_release(uint8_t k, int64_t start, int64_t end)
{
	return GE_KIND(k) == GE_LAUNCH ? start : end;
}

/* What a runtime call does, from its name. */
enum graph_rt_class {
	RT_OTHER,
	RT_LAUNCH,	 /* cudaLaunchKernel, cuLaunchKernel, ... */
	RT_GRAPH_LAUNCH, /* cudaGraphLaunch: owns many GPU tasks */
	RT_MEMCPY,	 /* asynchronous memcpy */
	RT_MEMCPY_SYNC,	 /* cudaMemcpy and other blocking copies */
	RT_MEMSET,
	RT_STREAM_SYNC,
	RT_DEVICE_SYNC,
	RT_EVENT_SYNC,
	RT_EVENT_RECORD,
	RT_STREAM_WAIT, /* cudaStreamWaitEvent */
	RT_EVENT_QUERY,
	RT_NCLASSES
};

/* Node flags. */
#define NF_BLOCKING 0x01 /* a runtime call followed by its GN_WAIT node */
#define NF_IDLE_GAP 0x02 /* CPU gap before work that a cross-thread edge starts */
#define NF_ANCHORED                                                                                \
	0x04 /* launched before the window: starts no earlier than
			  * its traced start (what held it back is unseen) */
#define NF_GRAPH                                                                                   \
	0x08 /* a CUDA graph's task (launched by cudaGraphLaunch):
			  * its start lag is kept whole, not capped */
#define NF_ADDED                                                                                   \
	0x20 /* a collective a graph edit added: the base's kernels
			  * beside it were not slowed by it in the trace
			  * (sim_opts.contention_added) */
#define NF_WAKE                                                                                    \
	0x10 /* a host task woken by another thread (inferred
			  * thread edge from a task that ended before the
			  * other thread entered a long CPU task): its lag,
			  * from that task, is kept whole */
#define NF_STAGED                                                                                  \
	0x40 /* a host-to-device copy from pageable memory: the
			  * calling thread stages it through a pinned buffer
			  * before the DMA runs, so the copy begins where the
			  * staging let it; its start lag is kept whole */

enum graph_coll_kind {
	GC_UNKNOWN,
	GC_ALL_REDUCE,
	GC_ALL_GATHER,
	GC_REDUCE_SCATTER,
	GC_BROADCAST,
	GC_REDUCE,
	GC_ALL_TO_ALL,
	GC_SEND_RECV,
	GC_SEND,
	GC_RECV,
	GC_NKINDS
};

/*
 * Annotations.  A trace may mark ranges on its host threads with
 * user_annotation / record_function names "prism::layer#I",
 * "prism::phase#forward|backward|optimizer" and "prism::microbatch#I"
 * (scripts/collect_trace.py and `prism synth` write them).  Host tasks
 * inside a range take its value; GPU work takes its launch call's.
 * Without prism:: ranges, phases come from PyTorch's own (Optimizer.step#,
 * DDP's forward, "## backward ##", autograd's backward ops; the forward is
 * the step up to its first backward op) and layers are inferred from
 * repeated op sequences (infer.h), backward ops following their forward
 * op's autograd sequence number.
 */
enum graph_phase { PH_NONE, PH_FORWARD, PH_BACKWARD, PH_OPTIMIZER, PH_NPHASES };

struct graph_proc {
	uint32_t rank;	/* index into ranks[] */
	uint8_t gpu;	/* 0: CPU thread, 1: CUDA stream */
	int64_t pid;	/* as in the trace: OS pid / device index */
	int64_t tid;	/* as in the trace: OS thread id / stream id */
	uint32_t first; /* first node id */
	uint32_t n;	/* number of nodes */
};

struct graph_rank {
	int64_t rank;	    /* global rank */
	int64_t world_size; /* 0 if unknown */
	uint32_t path;	    /* string id: the trace file */
	uint32_t device;    /* string id: GPU name, "" if unknown */
	int64_t device_mem; /* bytes, 0 if unknown */
	/* What the rank's file held (for summaries). */
	uint64_t json_bytes, n_events, n_complete, n_instant, n_flow, n_meta, n_cuda_sync;
};

struct graph_iter {
	uint32_t rank;
	uint32_t proc;	  /* the host thread the step was recorded on, or UINT32_MAX */
	int64_t step;	  /* N of ProfilerStep#N */
	int64_t start_ns; /* the step's host span, relative to t0_ns */
	int64_t dur_ns;
};

struct graph_coll {
	uint32_t node;
	uint8_t kind;	    /* enum graph_coll_kind */
	int64_t bytes;	    /* message size per rank, -1 if unknown */
	int64_t group_size; /* -1 if unknown */
	uint32_t pg;	    /* string id: process group name, "" if unknown */
	uint32_t ranks;	    /* string id: "[0, 1]" if known */
	uint32_t dtype;	    /* string id */
	uint32_t seq;	    /* ordinal among this rank's collectives on pg */
};

/* A recorded cross-stream wait (cudaEventRecord on one stream, then
 * cudaStreamWaitEvent on another), as a graph builder knew it; written
 * into timelines as Kineto's cuda_sync events. */
struct graph_wait {
	uint32_t call;	    /* the cudaStreamWaitEvent node */
	uint32_t record;    /* the cudaEventRecord node */
	uint32_t stream;    /* processor: the waiting stream */
	uint32_t on_stream; /* processor: the recorded stream */
};

/* What the builder saw and decided; printed by `prism ingest`. */
struct graph_stats {
	uint64_t nodes[GN_NKINDS];
	uint64_t edges[GE_NKINDS];
	uint64_t inferred[GE_NKINDS];
	uint64_t rt_class[RT_NCLASSES];
	uint64_t colls[GC_NKINDS];	  /* by what was communicated */
	uint64_t coll_kernels[GC_NKINDS]; /* by the NCCL kernel's own name */
	uint64_t launch_no_gpu;		  /* launch-class calls with no GPU work traced */
	uint64_t gpu_no_launch;		  /* GPU work whose launch precedes the window */
	uint64_t nested_runtime;	  /* runtime calls nested in another (merged) */
	uint64_t clipped_runtime;	  /* runtime calls overlapping the previous one */
	uint64_t rt_no_op;		  /* runtime calls with no enclosing CPU op */
	uint64_t cuda_sync_used;	  /* cuda_sync records that gave an edge */
	uint64_t cuda_sync_unused;
	/* cudaStreamWaitEvent calls: paired with their cudaEventRecord by a
	 * cuda_sync record (exact), else by the host's call order (the trace
	 * names no event: the latest record before the wait on its thread),
	 * and of those the pairs the timing contradicts (left out). */
	uint64_t waits_exact;
	uint64_t waits_by_position;
	uint64_t waits_position_contradicted;
	uint64_t sync_no_wait;	/* blocking calls with nothing to wait for */
	uint64_t dropped_edges; /* recorded dependencies the timing contradicts */
	int64_t lag_cap_ns;	/* the cap the graph was built with */
	uint64_t lag_capped;	/* tasks whose start lag exceeded the cap */
	int64_t lag_capped_ns;	/* the lag the cap left unexplained, in all */
	uint64_t idle_threads;	/* host threads without runtime calls */
	uint64_t annotations;	/* cpu_op/user_annotation/python_function/gpu ann. */
	uint64_t other_events;	/* instants, flows, metadata, other 'X' */
	/* How annotations were found, by kind (GRAPH_ANN_LAYER, ...): an OR
	 * over ranks of GRAPH_ANN_RANGES and GRAPH_ANN_INFERRED (and MODULES). */
	uint32_t ann_found[3];
	uint32_t pad_;
	uint64_t layer_ops;   /* ops per inferred layer block (the last found) */
	uint64_t graph_gaps;  /* CUDA graph tasks whose start lag exceeded the */
	int64_t graph_gap_ns; /* cap, kept whole; and that lag in all */
};
enum { GRAPH_ANN_LAYER, GRAPH_ANN_PHASE, GRAPH_ANN_MB };
#define GRAPH_ANN_RANGES   1 /* prism:: ranges */
#define GRAPH_ANN_INFERRED 2 /* PyTorch's own ranges, backward ops, repeats */
#define GRAPH_ANN_MODULES  4 /* with INFERRED: layers from module names */

/*
 * The per-node columns, in the order graph files store them: the struct's
 * fields, their allocation, freeing, copy, clone, save and load all come
 * from this one list (X(type, name)).
 *   start_ns  traced start
 *   dur_ns    traced duration (own cost for GN_WAIT)
 *   wait_ns   traced waiting (GN_WAIT), else 0
 *   lag_ns    traced start minus the latest traced end of its dependencies
 *             (launch latency, thread wake-up), capped
 *   corr      correlation id, or -1
 *   proc      processor index
 *   name      string id
 *   op        string id of the enclosing CPU op, "" if none
 *   op_dims   string id of that op's raw "Input Dims", "" if none
 *   op_types  string id of that op's raw "Input type", "" if none
 *   src       event index in the rank's file; UINT32_MAX for gaps
 *   coll      index into colls[], or UINT32_MAX
 *   iter      index into iters[], or -1
 *   layer     transformer layer, or -1 (see annotations below)
 *   mb        microbatch, or -1
 *   phase     enum graph_phase
 *   kind      enum graph_node_kind
 *   flags     NF_*
 *   rtclass   enum graph_rt_class for GN_RUNTIME/GN_WAIT
 */
/* clang-format off */
#define GRAPH_NODE_COLUMNS(X)                                                                      \
	X(int64_t, start_ns) X(int64_t, dur_ns) X(int64_t, wait_ns) X(int64_t, lag_ns)          \
	X(int64_t, corr) X(uint32_t, proc) X(uint32_t, name) X(uint32_t, op)                     \
	X(uint32_t, op_dims) X(uint32_t, op_types) X(uint32_t, src) X(uint32_t, coll)            \
	X(int32_t, iter) X(int32_t, layer) X(int32_t, mb) X(uint8_t, phase) X(uint8_t, kind)     \
	X(uint8_t, flags) X(uint8_t, rtclass)
/* clang-format on */

struct graph {
	uint32_t n_nodes, n_edges, n_procs, n_ranks, n_iters, n_colls;
	int64_t t0_ns; /* job clock (ns since the epoch) of time 0 */

	/* Per node: GRAPH_NODE_COLUMNS, one array each. */
#define GRAPH_NODE_FIELD(type, f) type *f;
	GRAPH_NODE_COLUMNS(GRAPH_NODE_FIELD)
#undef GRAPH_NODE_FIELD

	/* Edges by source (see the picture above). */
	uint32_t *out_off;
	uint32_t *out_dst;
	uint8_t *out_kind;

	struct graph_proc *procs;
	struct graph_rank *ranks;
	struct graph_iter *iters;
	struct graph_coll *colls;

	struct strtab st;
	struct graph_stats stats;
	uint32_t meta; /* string id: the run's "prism::model#..." description,
			    * 0 if the trace has none */
};

/* The most tasks of a graph prism builds from a description (synth, a
 * sweep's candidates, whatif on a run description) or an edit (whatif
 * --layers): about 3 GB of graph.  Graphs read from traces and graph files
 * are bounded by the input's size instead. */
#define GRAPH_MAX_TASKS (1u << 25)
/* The most ranks a graph may state (a collective's group, a rank's world
 * size; a rank is below it): the trace reader's bound (KINETO_MAX_RANKS),
 * so that a graph file says no more than a trace could. */
#define GRAPH_MAX_RANKS (1 << 24)

/* Allocate a graph with room for the given counts (columns zeroed, the
 * string table empty).  NULL when out of memory. */
struct graph *graph_new(uint32_t n_nodes, uint32_t n_edges, uint32_t n_procs, uint32_t n_ranks,
			uint32_t n_iters, uint32_t n_colls);
void graph_free(struct graph *g);

/* A deep copy that the caller may edit while g stays shared and
 * read-only: one memcpy per column.  NULL when out of memory. */
struct graph *graph_clone(const struct graph *g);

/* Copy every per-node column of src's nodes [w, w + count) to dst's
 * [x, x + count) (both graphs' string ids must agree); edges, processors
 * and the other tables are the caller's. */
void graph_copy_nodes(struct graph *dst, uint32_t x, const struct graph *src, uint32_t w,
		      uint32_t count);

/* Number colls[0..n) among the collectives of one rank on one process
 * group: seq = 0, 1, ... in the order of t[i] (ties: their present seq,
 * then their index).  rank[i] is collective i's rank, or NULL for one rank.
 * 0, or PRISM_ENOMEM. */
int graph_number_colls(struct graph_coll *colls, size_t n, const int64_t *t, const uint32_t *rank);

/*
 * Pair colls[0..n) across ranks by what they are, not by their place in
 * each rank's order (issue 36): the n-th collective of one kind and size
 * on a process group of one rank is the n-th of that kind and size of
 * every other rank, and gets one sequence number (what the simulator's
 * rendezvous matches).  Ranks whose files hold different subsets of
 * collectives, or launched them in another order on two streams, no
 * longer pair an all-reduce of one size with another's.  The size
 * identifies all-reduce, all-gather, reduce-scatter, broadcast and reduce
 * (every member moves the same); all-to-all, send/recv (one kind) and
 * collectives of unknown size pair by kind alone.  Each (group, kind,
 * size, n-th) slot is numbered per group in its lowest rank's order, so
 * ranks that agree keep the numbers their order gave.  seq must hold each
 * rank's order on its group (graph_number_colls); rank[i] is collective
 * i's rank.  Nothing changes unless two ranks hold collectives.  0, or
 * PRISM_ENOMEM.
 */
int graph_pair_colls(struct graph_coll *colls, size_t n, const uint32_t *rank);

/* graph_number_colls then graph_pair_colls over all of g's collectives, each rank on its own, in
 * the order of their nodes' traced starts (by_start) or of their node ids
 * (a stream's tasks are in launch order).  0, or PRISM_ENOMEM. */
int graph_renumber_colls(struct graph *g, int by_start);

/* g->stats' node and edge counts by kind, from the graph itself (after an
 * edit made it). */
void graph_count(struct graph *g);

/* g's edges by target, for edits that walk dependencies backwards: the
 * sources of node v are (*src)[(*off)[v] .. (*off)[v + 1]), in source
 * order.  Both arrays are the caller's (free).  0, or PRISM_ENOMEM. */
int graph_in_edges(const struct graph *g, uint32_t **off, uint32_t **src);

/* When each task's dependencies released it, as traced: ready[v] the
 * latest graph_edge_release() over v's edges in (INT64_MIN: none), by[v]
 * (by may be NULL) the task whose edge gave it (UINT32_MAX: none).  With
 * GRAPH_READY_WAKE a woken task's order edge from the idle gap before it
 * does not count (its lag runs from what woke it: NF_WAKE). */
#define GRAPH_READY_WAKE 1
void graph_ready(const struct graph *g, unsigned flags, int64_t *ready, uint32_t *by);

/* How many of thread or stream p's tasks start at or before t (its tasks
 * are in start order): the task t falls in or follows is the one before. */
uint32_t graph_proc_upto(const struct graph *g, uint32_t p, int64_t t);

/*
 * Verify the invariants: CSR offsets monotone and in range, every id and
 * string id in range (nodes, edges, processors, ranks, iterations,
 * collectives), kinds and classes known, times from time 0 (t0_ns) to
 * PRISM_TIME_MAX,
 * processors tiling the node ids, each blocking call followed by its wait,
 * the run description a "prism::model#" string, no edge from a node to
 * itself, acyclic (Kahn), in-degrees consistent.  graph_load runs it on
 * every file.  0, or PRISM_EINTERNAL with err saying what is wrong.
 */
int graph_check(const struct graph *g, struct prism_err *err);

/* The acyclicity part of graph_check alone (Kahn's algorithm), for graphs
 * whose structure is right by construction: 0, PRISM_EINTERNAL naming how
 * many tasks a cycle blocks, or PRISM_ENOMEM. */
int graph_acyclic(const struct graph *g, struct prism_err *err);

/* Names for messages and summaries. */
const char *graph_node_kind_name(int kind);
const char *graph_edge_kind_name(int kind);
const char *graph_rt_class_name(int cls);
const char *graph_coll_kind_name(int kind);
const char *graph_phase_name(int phase);
/* The phase named s ("forward", ...), or PH_NONE. */
int graph_phase_parse(const char *s);

/* Classify a runtime call by name. */
int graph_rt_classify(const char *name);

/*
 * The binary graph file ("prism graph cache"): magic, version, counts,
 * then each column raw, then the string table, then a checksum.  Files of
 * another version are refused with PRISM_EVERSION; graph_load validates
 * the rest before use (sizes against the file, the checksum, strings valid
 * UTF-8, time 0, then graph_check): PRISM_EFORMAT naming what is wrong.
 */
#define GRAPH_FILE_VERSION 5
int graph_save(const struct graph *g, const char *path, struct prism_err *err);
int graph_load(const char *path, struct graph **out, struct prism_err *err);
/* The same from an open stream (seekable; read from its start; not
 * closed), named path in messages. */
int graph_read(FILE *f, const char *path, struct graph **out, struct prism_err *err);

/* 1 if the file at path starts with the graph file magic. */
int graph_file_is(const char *path);

#endif
