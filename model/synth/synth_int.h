/*
 * synth_int.h - what the parts of the run builder share.  Private to
 * model/synth/: the public interface is synth.h.
 *
 * The parts, one file each, and who calls whom (calls go down, never up):
 *
 *   synth.c      public entry points; synth_build sets up a build and
 *      |         hands out its graph
 *      v
 *   step.c       the step and its schedule: units, pipeline transfers,
 *      |  \      gradient buckets and reduction, ZeRO gathers, optimizer
 *      |   `-->  fold.c     folded units: a unit's template, made once
 *      v                    and repeated (reads the unit from em's
 *                           writer, takes it back, stages the copies)
 *   layer.c      what a layer runs: its kernels, their times and ops'
 *      |         shapes, its tensor-parallel collectives
 *      v
 *   emit.c       how a task becomes nodes: host calls, launches, event
 *                waits, collectives, ops' records; the graph at the end
 *
 *   bound.c      closed-form times (a dry ctx through layer.c, and
 *                step.c's optimizer for its host time: emit.c adds up
 *                what it would build) and the lower bound; partition.c
 *                places layers with its times
 *
 * step.c calls emit.c too (its transfers, reductions and gathers).
 * layer.c knows nothing of the schedule but the rank's position
 * (rankst: layer, microbatch, phase, set by step.c); emit.c nothing of
 * layers: a task reaches it as a stream, a kind, a name and a time, an
 * op's numbers and a collective's group, and is stamped with the
 * position.
 *
 * Names: synth_ is synth.h's.  A function defined in one part and called
 * from another wears that part's prefix, s and the file's initial: se_
 * (emit.c), sl_ (layer.c), ss_ (step.c), sf_ (fold.c); bound.c,
 * partition.c and synth.c export only synth.h's functions.  Everything
 * else is static.  Errors: functions that add tasks set c->oom and go
 * on; the build checks it at each step's end.
 *
 * One build is one struct ctx.  Its state is grouped by the part that
 * owns it: the graph as it is built (em), what the build counted
 * (tally), the schedule's marks (sc), the folded units (fo); the run and
 * the ranks' state (rk) are shared by all.
 */
#ifndef PRISM_SYNTH_INT_H
#define PRISM_SYNTH_INT_H

#include <stddef.h>
#include <stdint.h>

#include "comm.h"
#include "graph.h"
#include "gwrite.h"
#include "hw.h"
#include "layout.h"
#include "strtab.h"
#include "synth.h"
#include "vec.h"

#define NONE32	      UINT32_MAX
#define SYNTH_TOO_BIG 2 /* ctx.oom: GRAPH_MAX_TASKS reached */

/* A rank's processors: its host thread, then these streams.  S_OFF, the
 * activation offload's copy stream, is made only for a layout that
 * offloads (lay.offload_layers), and S_SENDF2 .. S_RECVB2 only for ZB-V,
 * so that every other run's graph keeps its processors.  The pipeline's
 * transfers have a stream a kind (activations, gradients), way and peer,
 * each in its chunk's microbatch order (as PyTorch gives each pair of
 * ranks its own communicator and stream): S_SENDF .. S_RECVB the
 * activations from the stage before and to the one after and the
 * gradients back, the *2 streams the same of ZB-V's second chunk, whose
 * activations go down the ranks (step.c descends).  S_A2A, made only
 * where merged units overlap the expert all-to-alls (layout_a2a_overlap:
 * Megatron's 1F1B overlap, DualPipeV's F&B pairs), is their
 * communication stream (step.c unit_pair). */
enum stream {
	S_COMPUTE,
	S_DP,
	S_SENDF,
	S_RECVF,
	S_SENDB,
	S_RECVB,
	S_TP,
	S_OFF,
	S_SENDF2,
	S_RECVF2,
	S_SENDB2,
	S_RECVB2,
	S_A2A,
	S_N
};

/* ---- the graph as built -------------------------------------------- */

/* An event wait: stream `proc` waits for task `src` of stream `on_proc`. */
struct pending {
	uint32_t proc; /* the waiting stream */
	uint32_t src;  /* the recorded task */
	uint32_t wait; /* the cudaStreamWaitEvent call (for the timeline) */
	uint32_t record;
	uint32_t on_proc;
};

/* The next sequence number of rank's collectives in process group pg. */
struct pgseq {
	uint32_t rank, pg, n;
};

/* An op as a trace records it: name, "Input Dims", "Input type". */
struct oprec {
	uint32_t op, dims, types;
};

/* What an op's record is made from: its kind and numbers (record_op). */
#define OPMEMO 256
#define OPKEY  9
struct opmemo {
	double key[OPKEY];
	uint32_t rec; /* 0: empty */
};

/* The names a build interned last, by the address of the name given
 * (se_intern): most are literals, or a few buffers filled the same way
 * for every layer, so the next launch of a kernel finds its name's id
 * without hashing it (a hit is compared with the interned string). */
#define SE_NAMES 64
struct se_name {
	const char *s; /* NULL: empty */
	uint32_t id;
};

/* ---- folded units (hierarchical simulation, synth.h) ---------------- */

/* What a unit's build reads of its rank's state besides its buckets and
 * streams, and leaves there (rankst). */
struct fold_rank {
	int32_t layer, mb;
	uint8_t phase, mtp;
	double ebucket;
	int64_t region;
};

/* A string a template's unit interned: its text (fold_state.ftext) and
 * the id it had. */
struct fstr {
	uint32_t off, id;
};

/* Maps (synth.h synth_unit_map; umap.c): their entries and exits, their
 * matrices; one map's place in them: its entries, then its exits, from
 * port0, its matrix (n_out x n_in) from m0. */
struct umap_store {
	VEC(struct synth_port) ports;
	VEC(int64_t) m;
	/* Its pairs' guards (synth.h synth_pair_guard) and, per guard, two
	 * rows of n_in: the pair's start, its unit's host start. */
	VEC(struct synth_pair_guard) guards;
	VEC(int64_t) gm;
	/* Each map's tasks' start and end rows (2 n n_in: every start row,
	 * then every end row) and what each task is. */
	VEC(int64_t) rows;
	VEC(struct synth_map_task) tasks;
};

/* (g0, n_guard: its guards from g0 in guards; their rows from gm0 in gm) */
struct umap_at {
	uint32_t port0, n_in, n_out, m0;
	uint32_t g0, n_guard, gm0;
	uint32_t r0, t0; /* its rows from r0 in rows, its tasks from t0 */
};

/* A folded unit (found by its content, fold.c): its tasks, edges (ids
 * relative to its first task), collectives (node relative; seq: their
 * (rank, pg) entry in ctx.em.seqs) and marks in ctx.fo's f* arrays. */
struct ufold {
	uint32_t node0, n_nodes, edge0, n_edges, coll0, n_colls, mark0, n_marks;
	uint32_t ext0, n_ext;	   /* its events from before the unit (ctx.fo.fexts) */
	uint32_t last[S_N];	   /* each stream's last task, or NONE32 */
	uint32_t ufirst, ulast;	   /* first and last compute task, or NONE32 */
	uint64_t tasks;		   /* kernel-level tasks it stands for */
	double flops;		   /* ctx.tally.flops it added */
	uint32_t kernels, hits[3]; /* ctx.tally.kernels and kdb_hits it added */
	/* The rank's gradient bucket (rankst.bucket) before and after: a
	 * unit reduces a bucket once it is full, so the template holds only
	 * where the bucket starts as it did, and leaves it as it did. */
	double bucket0, bucket1;
	/* Carried to a later build (synth_build_tpl): the build that made or
	 * adopted it (fold_state.epoch); the strings its unit interned, in
	 * order, each once (fold_state.fstrs), which a build adopting it
	 * interns in that order and finds at the same ids; the (rank, pg)
	 * sequence entries its unit added (fold_state.fseqs) after seq_n0
	 * entries; the correlation ids it used; what of its rank the unit's
	 * build read (before) and left (after). */
	uint32_t epoch, str0, n_str, seq0, n_seq, seq_n0;
	int64_t corr_d;
	struct fold_rank before, after;
	/* Found by its content (fold.c, keys): its unit's key (ctx.fo.fkeys
	 * from key0, its hash khash, the next template of its hash chain
	 * knext), where it was made (rank; the chunk ch and, a merged
	 * pair's, the backward's chb, else ch; their first layers l0, lb0),
	 * the rank's streams with a task before it (mask0) and, of all, those
	 * its unit read before launching on them (rmask: the template holds
	 * wherever mask0 & rmask does), the process groups its unit used in their first use's order (ctx.fo.fpgs from
	 * pg0; each collective's in ctx.fo.fcpg), and whether another
	 * (stage, chunk) may repeat it (share: its names parse, no host
	 * region open at its ends, no event wait pending at its start). */
	uint32_t key0, n_key, khash, knext, pg0, n_pg, mask0, rmask;
	int32_t rank, ch, chb, l0, lb0;
	uint8_t share;
	struct umap_at map; /* its map (synth.h synth_unit_map; ctx.fo.fmaps) */
};

/* Where a unit of a template's kind stands (fold.c): its chunk ch (a
 * merged pair's forward; a lone backward's own) and first layer l0, a
 * merged pair's backward chunk chb and first layer lb0 (else ch, l0),
 * their transfers' peers. */
struct sf_pos {
	int32_t ch, chb, l0, lb0;
	/* Per side (ch, chb): the stage and chunk of the model chunk before
	 * and of the one after, where a transfer reaches them (else -1). */
	int32_t peer[2][4];
};

/* A (stage, chunk, flags) slot's template in this build (ctx.fo.fbind):
 * the build (epoch; another: not yet used in this one), the template
 * (NONE32: none, FOLD_NEVER: cannot be folded), what its tasks move by
 * here (processors, layers forward and backward) and its process groups'
 * names and (rank, pg) sequence entries here (ctx.fo.fbmap from map0). */
struct fbind {
	uint32_t epoch, t, map0;
	uint32_t dproc;
	int32_t dlf, dlb;
};

struct fbmap {
	uint32_t pg, seq;
};

/* An event a unit's task waits for from before the unit: the last task of
 * stream `stream` when the unit starts (ZeRO-3's first gather waits for
 * the compute before it). */
struct fext {
	uint32_t dst; /* template task */
	uint8_t stream;
};

/* Per task of the unit being folded: its host offset (host tasks) or its
 * launch's (GPU tasks), the template tasks it starts and ends, its
 * events. */
struct fscr {
	int64_t rel;
	uint32_t start_of, end_of;
	uint8_t evin, evout, launched;
	/* Pairing the ring's transfers (fold.c, fold_lanes): the task of the
	 * other lane whose event it waits on (NONE32: none), its run, its
	 * index in its run's lane (NONE32: a run's first kernel). */
	uint32_t xsrc, seg, lk;
};

/* A run of compute-stream kernels between events: its first and last task
 * (unit relative), the rest's length (durations and lags), and how many
 * tasks. */
struct fseg {
	uint32_t first, last, n;
	int64_t rest_ns;
};

/* A unit task, node relative. */
struct fmark {
	uint32_t node;
	uint32_t kern0, n_kern;	 /* its kernels in ctx.fo.fkerns */
	uint32_t kern2, n_kern2; /* a pair's side lane there (n_kern2 0: none) */
};

/* ---- the build ------------------------------------------------------ */

/* A rank (one pipeline stage): its processors and streams' last tasks
 * (emission), where it is (set by the schedule, stamped on every node it
 * adds), its gradient buckets (the schedule's). */
struct rankst {
	uint32_t host, stream[S_N]; /* processors */
	uint32_t last[S_N];	    /* last task launched on each stream, or NONE32 */
	int32_t layer, mb;	    /* where it is: its layer (-1: none), microbatch */
	uint8_t phase;		    /* and phase (PH_*) */
	uint8_t mtp;		    /* in a multi-token-prediction depth: its layer is
				     * of the last decoder layer's kind */
	double bucket;		    /* gradients ready and not yet reduced, parameters */
	double ebucket;		    /* the same for the routed experts' (their own group) */
	int64_t region;		    /* the host region (synth_host) last launched in, 0: none */
	double fp8_gemms;	    /* fp8 (fp4) GEMMs built forward so far (a dry
				     * run's count: ss_chunk_fp8_gemms) */
};

/* The graph as built: the writer (gwrite.h) holds the tasks as added
 * (their ids the writer's staged ids until se_finish), the launch, event
 * and sync edges (order edges: se_finish), the processors (per rank: its
 * host thread, then its S_N streams), the collectives and the strings;
 * beside it the event waits, sequence numbers, ops' records and the names
 * every build uses. */
struct emit_state {
	struct gw w;
	VEC(struct pending) pend;  /* event waits not yet applied */
	VEC(struct pending) waits; /* every event wait, for the timeline */
	VEC(struct pgseq) seqs;	   /* collectives' sequence numbers per (rank, pg) */
	int64_t next_corr;	   /* the next host call's correlation id */
	/* Names, interned once. */
	uint32_t n_cpu, n_launch, n_record, n_wait, n_sync;
	/* Ops as a trace records them (record_op): name, "Input Dims" and
	 * "Input type" string ids, each distinct one once (ops.v[0]: none),
	 * found again by their numbers through memo; op: the next kernel's. */
	VEC(struct oprec) ops;
	struct opmemo memo[OPMEMO];
	struct se_name names[SE_NAMES]; /* right after memo: dry_ctx skips both */
	uint32_t op;
	/* Kernels the next launched op runs beyond the one timed (an eager
	 * op that launches several: the host pays a launch for each, within
	 * the op's time; layer.c more_launches). */
	int extra;
	struct synth_host host; /* synth_host(in) */
};

/* A build's writer as it finished (se_finish): the tasks, edges (order
 * edges included) and collectives it staged.  The next build of a thread
 * reserves them (se_init), growing its columns once. */
struct se_sizes {
	size_t nodes, edges, colls;
};

/* What the build counted (synth_out). */
struct tally {
	double flops;	      /* GEMM and attention FLOPs, all steps */
	uint32_t kernels;     /* GPU tasks launched */
	uint32_t kdb_hits[3]; /* kernels timed: roofline, interpolated, exact */
};

/* The schedule's marks, node ids as built. */
/* A task on a side stream that the compute stream waits for later (a
 * layer's all-gather, step.c gather; an offloaded layer's copy out or
 * back, unit_fwd, unit_bwd): its task, and the event recorded as it was
 * issued that the compute waits on (NONE32 both in a dry run). */
struct issued {
	uint32_t task;
	uint32_t record;
};

struct sched_state {
	int32_t step; /* the step being built (every node is stamped with it) */
	/* Per step and rank: the first host node and the sync's wait node. */
	VEC(uint32_t) step_first;
	VEC(uint32_t) step_last;
	/* Compute-stream tasks of the pipeline units, for the bubble. */
	VEC(uint32_t) unit_first;
	VEC(uint32_t) unit_last;
	/* One unit's scratch, its capacity kept from unit to unit: the
	 * offloaded layers' copies (unit_fwd, unit_bwd) and the layers'
	 * gathers (gather_before). */
	VEC(struct issued) copies;
	VEC(struct issued) gathers;
	/* Each (stage, chunk)'s fp8 GEMMs (ss_chunk_fp8_gemms, counted on
	 * first use; -1: not yet) for its amax reductions (step.c
	 * amax_update; stage x v + chunk). */
	VEC(double) amax_gemms;
	/* Each (stage, chunk)'s part of a unit's key (step.c key_chunk,
	 * made on first use): offset + 1 in ckey (0: not yet), where its
	 * first layer, its words' count and its words follow. */
	VEC(uint32_t) ckey_at;
	VEC(uint32_t) ckey;
};

/* A unit repeated from template t on rank r, its first task k0 (as
 * built; synth_out.ulog in the graph's ids). */
struct unit_rec {
	uint32_t t, r, k0, step;
	uint32_t last[S_N]; /* the rank's streams' last tasks before it */
};

/* A step's tail on rank r (step.c ss_steps: the gradients' last
 * reductions, the optimizer, the closing synchronize): its n tasks from
 * k0 (as built), its map (ctx.fo.tmaps; n_in 0: none). */
struct tail_rec {
	uint32_t r, step, k0, n;
	uint32_t last[S_N]; /* the rank's streams' last tasks before it */
	struct umap_at map;
};

/* The tasks a map is made over (umap.c um_make): n rows in their order;
 * the edges between them (relative, each to a later task), ne; the events
 * into them from the rank's streams' last tasks before them, n_ext; their
 * unit tasks (marks, their kernels in kerns), n_marks; the rank; the
 * first compute task (a START exit; NONE32 none); whether every
 * collective may rendezvous (a PEER entry each), or the transfers alone
 * (GN_P2P: a unit's other collectives are its rank's own). */
struct umap_view {
	const struct gw_node *nd;
	uint32_t n;
	const struct gw_edge *ed;
	uint32_t ne;
	const struct fext *ext;
	uint32_t n_ext;
	const struct fmark *marks;
	uint32_t n_marks;
	const struct synth_fold_kern *kerns;
	const struct rankst *rk;
	const uint32_t *last; /* each stream's last task after them, or NONE32 */
	uint32_t ufirst;
	int all_colls;
};

/* Folded units (in->units): templates and their parts, the marks of the
 * unit tasks built so far, scratch for one fold. */
struct fold_state {
	int fold;			    /* in->units: fold units */
	VEC(struct ufold) folds;	    /* the templates */
	VEC(struct gw_node) fnodes;	    /* their tasks */
	VEC(struct gw_edge) fedges;	    /* their edges, template relative */
	VEC(struct graph_coll) fcolls;	    /* their collectives */
	VEC(struct fmark) fmarks;	    /* their unit tasks */
	VEC(struct fext) fexts;		    /* their events from before the unit */
	VEC(struct synth_fold_mark) marks;  /* the unit tasks built, node ids as built */
	VEC(struct synth_fold_kern) fkerns; /* the kernels inside the unit tasks */
	VEC(struct fscr) fscr;		    /* scratch: per task of the unit being folded */
	VEC(struct fseg) fsegs;		    /* scratch: its runs of compute kernels */
	VEC(int64_t) fgates;		    /* scratch: its host offsets that gate launches */
	VEC(uint32_t) fside;		    /* scratch: its side lanes' tasks, in order */
	VEC(struct fbind) fbind;	    /* per (stage, chunk, flags): its template here */
	VEC(struct fbmap) fbmap;	    /* the bindings' process groups */
	VEC(uint32_t) fkeys;		    /* the templates' content keys */
	VEC(uint32_t) fktab;		    /* by key hash: a template + 1, or 0 */
	VEC(uint32_t) fpgs;		    /* the templates' process groups */
	VEC(uint8_t) fprole;		    /* and what each names (fold.c PG_*) */
	VEC(uint32_t) fcpg;		    /* per template collective: its group's index */
	VEC(uint32_t) ukey;		    /* the key of the unit at hand (sf_key) */
	VEC(uint32_t) rec_pgs;		    /* the groups the unit being built used */
	/* The streams the unit being built launched on (a bit each), and
	 * those whose task before it it read (se_last). */
	uint32_t rec_written, rec_read;
	VEC(uint32_t) seqtab; /* c->em.seqs by (rank, pg): index + 1, or 0 */
	size_t seq_hashed;    /* of c->em.seqs, the entries in seqtab */
	uint32_t n_fold;      /* the name of a unit task */
	/* Carried from build to build (synth_build_tpl): this build's
	 * number, templates made or adopted in it, the strings the unit being
	 * built interns (rec: recording them), the templates' strings and
	 * sequence entries. */
	uint32_t epoch, kinds, carried;
	int rec, carry; /* carry: the templates go back to a synth_tpl */
	VEC(uint32_t) rec_ids;
	VEC(uint8_t) seen;
	VEC(char) ftext;
	VEC(struct fstr) fstrs;
	VEC(struct pgseq) fseqs;
	struct umap_store fmaps;	 /* the templates' maps */
	struct umap_store tmaps;	 /* the steps' tails' (this build's) */
	VEC(struct tail_rec) tails;	 /* the steps' tails (step.c ss_steps) */
	VEC(int64_t) mscr;		 /* scratch: one map's paths */
	VEC(int64_t) pscr;		 /* scratch: a pair's pieces' ends (um_pair) */
	VEC(struct gw_node) mrows;	 /* scratch: a tail's tasks */
	VEC(struct gw_edge) medges;	 /* and its edges */
	VEC(struct fext) mexts;		 /* and its events from before it */
	uint32_t mlast[S_N];		 /* and each stream's last task in it */
	VEC(struct unit_rec) ulog;	 /* in->unit_log: the units repeated */
	uint64_t tasks_folded;		 /* kernel-level tasks the folded units stand
					     * for, less their unit tasks */
	size_t units_folded, units_kept; /* units repeated from a template; built as they are */
};

/* A build's output arrays (synth_out's), kept by a synth_tpl between
 * builds: lent with the output to the caller, handed back by
 * synth_tpl_recycle_out. */
struct out_room {
	VEC(uint32_t) step_first, step_last, unit_first, unit_last;
	VEC(struct synth_fold_mark) marks;
	VEC(struct synth_fold_kern) kerns;
	VEC(struct graph_wait) waits;
};

struct ctx {
	const struct synth_in *in;     /* the run */
	const struct hw_profile *hw;   /* in->hw as the run drives it: at the
				      * layout's power cap (sl_run_hw); the
				      * kernel model times every kernel on it */
	struct hw_profile hw_run;      /* where hw points when the cap changes
				      * in->hw's clock */
	struct layout lay;	       /* in->lay resolved (synth_mem_layout): the
				    * layers of each stage, the precision */
	int kdb_gpu;		       /* the GPU's id in in->kdb (kdb_gpu), or -1 */
	double ab, rb;		       /* bytes of an activation (kperf_act_bytes) and of a
			* residual-stream value (kperf_resid_bytes) of in's
			* layout: sl_ctx_bytes */
	struct rankst *rk;	       /* per rank (pipeline stage) */
	int oom;		       /* 1: out of memory; SYNTH_TOO_BIG */
	int dry;		       /* time kernels into dry_s, build nothing */
	int kstream;		       /* the stream kernels launch on: S_COMPUTE, or
				      * S_TP for overlapped shared experts */
	int pass;		       /* which of a backward's tasks are built: SL_PASS_ALL,
				      * or a zero-bubble schedule's B (all but the
				      * weight-gradient kernels) or W (those alone) */
	int wk;			       /* 1 while layer.c adds a weight-gradient kernel */
	int part;		       /* which part of a layer is built: SL_PART_ALL, or one
				      * part of the 1F1B all-to-all overlap's (step.c
				      * unit_pair) */
	int part_now;		       /* the part of the task layer.c adds */
	double dry_s;		       /* dry: the kernels' time so far */
	double dry_mem_s;	       /* dry: the memory-bound kernels' on the
				      * compute stream (bound.c layer_mem_s) */
	double dry_heavy_s;	       /* dry: the compute-heavy kernels' (GEMMs,
				      * attention: what the power balance counts
				      * as compute, synth_layer_split) */
	int dry_comm;		       /* dry: add collectives' times to dry_comm_s */
	double dry_comm_s;	       /* dry: the collectives' time so far */
	double dry_side_s, dry_side_k; /* dry: collectives beside the compute
					* stream, and the kernels' time when
					* issued (layer.c side_issued) */
	double dry_host_s;	       /* dry: the host's time so far: every launch
				      * (kernels, collectives) and event call */
	double *dry_log;	       /* dry, where set: each addition to dry_host_s
				      * also kept here while dry_log_n < dry_log_cap
				      * (dry_log_n counts them all) */
	int dry_log_n, dry_log_cap;
	int dry_window;		 /* dry: the sliding window of the layer timed
				    * (0: a global one), whatever its index */
	int dry_out;		 /* dry: timing what no layer's host region
				      * holds (layer -1: the embedding, the head,
				      * the transfers) */
	int dry_host;		 /* dry: the host's time alone (GEMMs and
				      * memory-bound kernels are not timed) */
	int dry_kind;		 /* dry: the kind of the layer timed (enum
				      * llm_kind; LLM_KIND_FULL, 0, by default) */
	int dry_dp;		 /* dry: a unit's data-parallel work alone (its
				      * gathers and gradient reductions; its
				      * layers, embedding, head and transfers
				      * skipped: ss_dp_host) */
	int dry_last;		 /* dry: issuing what only a stage's last backward
				  * issues (ss_dp_host): its host time goes to
				  * dry_host_s, not to dry_steady_s */
	double dry_steady_s;	 /* dry: dry_host_s's additions but dry_last's,
				  * in the same order */
	unsigned dry_tasks;	 /* dry: tasks launched so far (a part's chain,
				      * step.c side_step, sees whether it added one) */
	struct se_sizes reserve; /* se_init reserves these (0: its default) */
	int em_kept;		 /* em.w is a thread's kept writer (gw_reset) */
	struct out_room ro;	 /* the output's arrays, a synth_tpl's (ro_keep) */
	int ro_keep;
	struct se_sizes built; /* se_finish: what was staged */
	struct emit_state em;  /* the graph as built */
	struct tally tally;    /* what the build counted */
	struct sched_state sc; /* the schedule's marks */
	struct fold_state fo;  /* folded units */
};

/* Templates carried from one build to the next of the same input but its
 * microbatches (synth.h, synth_build_tpl): fold_state moved in and out,
 * the input it was made for, the names every build interns first. */
struct synth_tpl {
	struct fold_state fo;
	struct synth_in key; /* lay.microbatches 0 */
	uint32_t n_fold, n_cpu;
	int have;
	struct se_sizes sizes; /* the last build's, kept by synth_tpl_reset */
	struct gw w;	       /* the builds' writer, kept (gwrite.h keep), and */
	int have_w;	       /* the last graph it made, once recycled */
	/* The builds' own arrays between builds (emptied, their room kept):
	 * the ranks' state, the emitter's and the schedule's scratch. */
	struct rankst *rk;
	size_t rk_cap;
	VEC(struct pending) pend, waits;
	VEC(struct pgseq) seqs;
	VEC(struct oprec) ops;
	VEC(struct issued) copies, gathers;
	VEC(double) amax_gemms;
	VEC(uint32_t) ckey_at, ckey;
	/* The output's arrays (out_lent: the last build's output holds them
	 * until synth_tpl_recycle_out gives them back). */
	struct out_room out;
	int out_lent;
};

/* The layout as the kernels of one layer and the schedule need it. */
struct shape {
	double b, s, h, f, V, t, a;
	double ab;	/* an activation's element, bytes (kperf_act_bytes) */
	double rb;	/* the residual stream's element, bytes (kperf_resid_bytes) */
	double d, w;	/* a head's width; the attention's, a x d (llm.h) */
	double dqk, dv; /* a head's Q and K width, its V's (d but for MLA) */
	double wo;	/* the projection's input: a x dv */
	/* Multi-head latent attention (mla = 0: the rest unused): the
	 * compressed q's width (0: Q from hidden), kv's, RoPE's decoupled
	 * dims (llm.h). */
	int mla;
	double ql, kvl, rope;
	double kv;	  /* key-value heads */
	double qkv, f_in; /* llm_qkv_width, llm_ffn_in */
	double qkv_r;	  /* llm_qkv_width_rank: one rank's share */
	double params;	  /* of one layer on one tensor-parallel rank */
	double train;	  /* of which trained: params, or under LoRA the
			   * adapters' (layout_lora_params) */
	int gated;
	int L; /* layers per model chunk */
	int p, v, m;
	int head; /* the stage of the model's last chunk (layout_head_stage) */
	int tp_per_node, pp_per_node;
	/* Mixture-of-experts (moe = 0: a dense model, the rest unused). */
	int cp;	       /* context-parallel ranks; s is then a rank's share */
	double s_full; /* the sequence */
	int cp_per_node;
	int moe;
	double E, k, fe, fe_in; /* experts, top_k, expert FFN width, FC1's */
	double shared;		/* shared experts */
	double ep, etp, eloc;	/* degrees; routed experts on a rank */
	double n_tok;		/* tokens entering the block on a rank: b s / t */
	double M;		/* routed tokens the rank's experts take (busiest) */
	double md, me;		/* an MoE layer's parameters on a GPU: split by
				 * tp, and the routed experts' share */
	int ep_per_node, etp_per_node, edp, edp_per_node;
	int tpep_per_node; /* of the ep x etp group (the allgather dispatcher's) */
	int disp;	   /* enum layout_dispatcher */
	/* Hybrid models (hybrid = 0: every layer LLM_KIND_FULL, the rest
	 * unused): each kind's parameters on one tensor-parallel rank; the
	 * Mamba-2 mixer's heads, groups (G), inner width (d_i), state (N),
	 * head width (P), convolution width and chunk (Q), whole (llm.h). */
	int hybrid;
	double kparams[LLM_KINDS];
	double mh, mg, mdi, mn, mp, mconv, mq;
};

/* ctx.pass: a backward's tasks all, its B pass's or its W pass's. */
enum { SL_PASS_ALL, SL_PASS_B, SL_PASS_W };

/* ctx.part: a layer's tasks all, or one of the parts the 1F1B all-to-all
 * overlap runs as nodes (Megatron-LM's TransformerLayerSchedulePlan,
 * megatron/core/models/gpt/fine_grained_callables.py): the attention,
 * the pre-MLP norm, the router, the shared experts and the dispatch's
 * preprocessing (pre_dispatch_computation); the dispatch's all-to-alls
 * (moe_dispatch, on S_A2A); the rest up to the combine (mlp: the
 * experts, the expert-tensor-parallel gather and reduce-scatter, the
 * sorts; a dense layer's norm, MLP and residual add); the combine's
 * all-to-alls (moe_combine, on S_A2A); and the combine's compute -- the
 * unpermute and the residual add after it, backward their gradients
 * before it (which Megatron runs on the communication stream, prism on
 * the compute stream: docs/MODEL.md).  Backward each part is its
 * gradient. */
enum {
	SL_PART_ALL,
	SL_PART_ATTN,
	SL_PART_DISPATCH,
	SL_PART_MLP,
	SL_PART_COMBINE,
	SL_PART_CMB_COMP
};

/* 1 where the task being added is not of the pass or the part being
 * built (emit.c adds nothing for it, layer.c counts nothing). */
static inline int sl_skip(const struct ctx *c)
{
	if (c->part != SL_PART_ALL && c->part != c->part_now)
		return 1;
	return c->pass == SL_PASS_B ? c->wk : c->pass == SL_PASS_W ? !c->wk : 0;
}

/* ---- emit.c: how a task becomes nodes ------------------------------- */

/* The graph's string table and the names every build uses, correlation
 * ids from 1: 0, or PRISM_ENOMEM (nothing to release). */
int se_init(struct ctx *c);

/* Per rank (c->rk, allocated): its host thread and its S_N streams as
 * processors, no task launched on them yet: 0, or PRISM_ENOMEM. */
int se_procs(struct ctx *c);

/* Rank r's step ends: cudaDeviceSynchronize, whose wait (its node id, the
 * return) ends after each stream's last task. */
uint32_t se_sync(struct ctx *c, int r);

/* Free what se_init and the build allocated in c->em. */
void se_release(struct ctx *c);

/* The string id of s in the graph's table (c->oom set on failure). */
uint32_t se_intern(struct ctx *c, const char *s);

/* The writer's first failure made the build's (c->oom: SYNTH_TOO_BIG for
 * PRISM_ELIMIT, else 1); c->oom. */
int se_failed(struct ctx *c);

/* The graph iteration of rank r's tasks in the step being built:
 * step-major, then rank. */
static inline int32_t se_iter(const struct ctx *c, int r)
{
	return c->sc.step * c->in->lay.pp + r;
}

/* Rank r's last task on stream st as a unit's build reads it: where the
 * unit being folded has launched nothing there yet, its template depends
 * on whether the stream had a task before it (fold.c, rec_read). */
static inline uint32_t se_last(struct ctx *c, int r, int st)
{
	if (c->fo.rec && !(c->fo.rec_written >> st & 1u))
		c->fo.rec_read |= 1u << st;
	return c->rk[r].last[st];
}

/* What an op's record is made from: fmt writes its name, dims and types
 * from key (its kind and numbers) the first time key is seen. */
typedef void (*se_op_fmt)(const double *key, const char **op, char *dims, size_t nd, char *types,
			  size_t nt);

/* The op whose shapes the next se_launch()ed task records (none in dry
 * runs or with in->no_shapes). */
void se_record_op(struct ctx *c, const double key[OPKEY], se_op_fmt fmt);

/* Launch GPU task `name` of kind (GN_*) taking `seconds` on rank r's
 * stream st, after the rank's host has spent in->cpu_op_s and
 * in->launch_s; coll: its collective entry, or NULL.  The task's node id
 * (0 in a dry run, which only adds a kernel's seconds to c->dry_s and
 * the launch's host time to c->dry_host_s). */
uint32_t se_launch(struct ctx *c, int r, int st, uint8_t kind, const char *name, double seconds,
		   const struct graph_coll *coll);

/* Rank r's stream `to` waits for what stream `from` has done so far
 * (event record and stream wait on the host). */
void se_event_wait(struct ctx *c, int r, int from, int to);

/* A cudaEventRecord on rank r's host now, for a later wait of stream
 * `to` (se_event_wait_task) on the task launched last: its node, or
 * NONE32 (a dry run, which counts its time with the wait's). */
uint32_t se_event_record(struct ctx *c, int r, int to);

/* The same for task src of stream `from` (nothing for NONE32), its event
 * recorded by `rec` (se_event_record) or, NONE32, at the wait. */
void se_event_wait_task(struct ctx *c, int r, uint32_t src, uint32_t rec, int from, int to);

/* A collective of kind (GC_*) on bytes over group g, timed by comm.h
 * (0 for bare runs), on rank r's stream st, in process group pg: of the
 * run's activations (se_dtype of kperf_act_bytes: fp32's 4, else 2). */
void se_collective(struct ctx *c, int r, int st, int kind, const char *kname, double bytes,
		   struct comm_group g, const char *pg);
/* The same of elements of dtype, Kineto's name for the tensor's dtype
 * (c10::ScalarType's, model/base/dtype.h).  Its time is the bytes'
 * alone; a timeline writes bytes / the dtype's size as the elements
 * (sim/timeline.c coll_args), so the label must be the data's. */
void se_collective_dt(struct ctx *c, int r, int st, int kind, const char *kname, double bytes,
		      struct comm_group g, const char *pg, const char *dtype);
/* Kineto's name of a collective's elements of eb bytes each
 * (dtype_coll_name, model/base/dtype.h): "Float" for 4 (fp32 main
 * gradients, fp32 weights and activations, amaxes, norms, the loss's
 * statistics), the run's 16-bit type for 2 ("Half" under fp16, else
 * "BFloat16"), and "Byte" for anything else: a torch.uint8 buffer of
 * quantised data (fp8 weights, Transformer Engine's fp8 gathers), or
 * values of mixed types or with their scales, counted in bytes. */
const char *se_dtype(const struct ctx *c, double eb);

/* The graph (gw_finish): tasks grouped by processor (stable), order edges
 * along each, a rank per pipeline stage, the run's description meta, the
 * counts by kind; c->em.w.newid maps the ids as built to the graph's.
 * The iterations are the caller's to push first.  NULL on failure
 * (c->oom set). */
struct graph *se_finish(struct ctx *c, const char *meta);

/* ---- layer.c: what a layer runs ------------------------------------- */

/* FP8 (and FP4) GEMMs as Transformer Engine runs them. */
static inline int sl_low_precision(int dtype)
{
	return dtype == HW_FP8 || dtype == HW_FP4;
}

/* The output layer's dtype: bf16 under fp8 and fp4. */
int sl_logit_dtype(const struct synth_in *in);

/* in->hw as the run drives it, the profile every kernel of a step is timed
 * on: at in->clock where set (the step's own clock: synth_in.clock), else
 * at the step clock of the layout's GEMM dtype (one GPU, one clock: every
 * kernel of the step at it) under the layout's power cap (hw_at_run:
 * in->hw itself, or *buf at that clock); NULL without a profile.  Every
 * ctx takes it (c->hw), and so does the bound (at the faster of the two,
 * synth_lower_bound). */
const struct hw_profile *sl_run_hw(const struct synth_in *in, struct hw_profile *buf);

/* in's shape as the kernels of one layer need it (tp_per_node,
 * pp_per_node left 0: synth_build places them). */
void sl_shape(const struct synth_in *in, struct shape *z);
/* A pipeline transfer's peers in one NVLink domain: 2 where a stage's
 * tp x dp x cp ranks leave room for the next stage's in the domain
 * (Megatron's order, pipeline outermost), else 1. */
int sl_pp_per_node(const struct synth_in *in);

/* A tensor-parallel collective of kind (GC_ALL_REDUCE, GC_REDUCE_SCATTER,
 * GC_ALL_GATHER) of bytes (a gather's: its output, the whole tensor) of
 * eb-byte elements over rank r's tensor-parallel group ("tp.R"), on
 * stream st: the one home of that group, for a layer's collectives and
 * the pipeline's scatter-gather (step.c pp_recv: the residual stream's
 * z->rb). */
void sl_tp_coll(struct ctx *c, int r, const struct shape *z, int st, int kind, double bytes,
		double eb);

/* c's element sizes from c->in (ctx.ab, ctx.rb), where a ctx is made. */
void sl_ctx_bytes(struct ctx *c);

/* A memory-bound kernel of class cls (KC_*) moving bytes, on rank r's
 * compute stream. */
void sl_kernel(struct ctx *c, int r, int cls, const char *name, double bytes);
/* The same on stream st (ZeRO's copies beside its collectives). */
void sl_kernel_on(struct ctx *c, int r, int st, int cls, const char *name, double bytes);
/* sl_kernel over values of elem bytes (the optimizer's passes: their
 * bandwidth by element size, cost_mem_impl; 0: unknown). */
void sl_kernel_elem(struct ctx *c, int r, int cls, int elem, const char *name, double bytes);

/* One layer's forward and backward on rank r (its current layer,
 * microbatch and phase: rankst), recomputation included in the backward;
 * the attention core's forward alone. */
void sl_layer_fwd(struct ctx *c, int r, const struct shape *z);
void sl_layer_bwd(struct ctx *c, int r, const struct shape *z);
void sl_attn_fwd(struct ctx *c, int r, const struct shape *z);

/* Stage 0's embedding and the last stage's final norm, logits and loss. */
void sl_embed_fwd(struct ctx *c, int r, const struct shape *z);
void sl_embed_bwd(struct ctx *c, int r, const struct shape *z);
void sl_head_fwd(struct ctx *c, int r, const struct shape *z);
void sl_head_bwd(struct ctx *c, int r, const struct shape *z);
/* A multi-token-prediction depth's work before its layer (the shifted
 * tokens' embedding, two norms, eh_proj and its gathers) and its
 * backward. */
void sl_mtp_fwd(struct ctx *c, int r, const struct shape *z);
void sl_mtp_bwd(struct ctx *c, int r, const struct shape *z);

/* One collective of an MoE layer's token dispatch (forward): its kind,
 * the bytes comm_time takes (an all-to-all's a rank's whole send, its own
 * share included; an all-gather's its output), its group, whether it
 * carries the routing map and probabilities (the allgather dispatcher's;
 * the combine has none), and its process group's name. */
struct sl_moe_coll {
	int kind;
	double bytes;
	struct comm_group g;
	int routing;
	const char *pg;
};
#define SL_MOE_COLLS 4

/* The dispatch's collectives of the layout's dispatcher, in order, into
 * out[SL_MOE_COLLS]: their count (0 for a dense model).  The combine runs
 * the tokens' ones in reverse, all-gathers as reduce-scatters
 * (docs/MODEL.md "Dispatchers"). */
int sl_moe_colls(const struct shape *z, struct sl_moe_coll *out);

/* The bytes of the dispatch's all-to-all over the expert-parallel group
 * (flex's and hybridep's across NVLink domains: the inter-domain one)
 * from the busiest rank; 0 where the
 * dispatcher has none. */
double sl_moe_a2a_bytes(const struct shape *z);

/* Ulysses context parallelism (layer.c cp_attn): the bytes of one
 * all-to-all of a rank's Q, K and V (qkv) or of its attention output;
 * the shape the attention runs at after the all-to-all over a cp ranks. */
double sl_cp_a2a_bytes(const struct shape *z, int qkv);
void sl_cp_inner(const struct shape *z, int a, struct shape *o);

/* ---- fold.c: folded units ------------------------------------------- */

/* The index of a unit's slot (stage, chunk, flags) in c->fo.fbind
 * (made on first use), or SIZE_MAX when out of memory; pass: the unit's
 * SL_PASS_* (a zero-bubble schedule's B or W, or a whole backward). */
size_t sf_slot(struct ctx *c, const struct shape *z, int s, int ch, int mb, int fwd, int bucket,
	       int pass);

/* The same for a merged pair of the 1F1B all-to-all overlap: the forward
 * of microbatch mbf on chunk chf beside the backward of mbb on chb
 * (bucket: the backward's). */
size_t sf_slot_pair(struct ctx *c, const struct shape *z, int s, int chf, int mbf, int chb, int mbb,
		    int bucket);

/* Whether slot's unit has been met in this build (its template, if any,
 * known); where not, the caller states the unit's content first:
 * sf_key_start, then sf_key for each word of what its build reads of its
 * (stage, chunk) besides the rank's names (step.c key_chunk). */
int sf_bound(const struct ctx *c, size_t slot);
void sf_key_start(struct ctx *c, size_t slot);
void sf_key(struct ctx *c, uint32_t w);

/* Where a unit starts (sf_begin), for sf_end. */
struct sf_start {
	size_t k0, e0, c0, w0; /* tasks, edges, collectives, event waits before it */
	size_t pend0;	       /* event waits pending at its start */
	uint32_t last0[S_N];   /* each stream's last task before it */
	struct ufold t;	       /* its template as far as it is known */
};

/* Repeat slot's template as rank r's next unit (at p; microbatch mb; a
 * merged pair's backward mbb, else mbb = mb) where one is made and holds
 * here: 1, or 0 when the unit is to be built.  The slot's first unit in a
 * build takes the template of a unit of the same content (its key) made
 * at any slot, its processors, layers and process groups moved here, as
 * if built (its strings interned, its sequence entries and correlation
 * ids taken, the rank's state left as it leaves it). */
int sf_reuse(struct ctx *c, size_t slot, const struct sf_pos *p, int r, int32_t mb, int32_t mbb);

/* Before rank r's unit is built. */
void sf_begin(struct ctx *c, int r, struct sf_start *u);

/* After it is built: where slot (SIZE_MAX: none) has no template yet,
 * fold the unit into one, take the unit back and repeat the template: 1
 * (also when out of memory, c->oom set), or 0 when the unit stays as
 * built. */
int sf_end(struct ctx *c, int r, int32_t mb, int32_t mbb, size_t slot, const struct sf_pos *p,
	   const struct sf_start *u);

/* Free c->fo. */
void sf_release(struct ctx *c);

/* umap.c: v's map (synth.h synth_unit_map) into st, its place in *at
 * (n_in 0: none, where v has a pair's side lane or too many entries): 0,
 * or -1 when out of memory. */
int um_make(struct ctx *c, const struct umap_view *v, struct umap_store *st, struct umap_at *at);
/* st's arrays freed; st emptied, its memory kept. */
void um_store_free(struct umap_store *st);
void um_store_empty(struct umap_store *st);
/* The map at *at in st, of n tasks, as synth.h gives it. */
void um_get(const struct umap_store *st, const struct umap_at *at, uint32_t n,
	    struct synth_unit_map *map);
/* The tail of rank r's step just built (its tasks from k0, edges from
 * e0, its streams' last tasks before it last0): its map, recorded in
 * ctx.fo.tails.  0, or -1 when out of memory. */
int um_tail(struct ctx *c, int r, size_t k0, size_t e0, const uint32_t *last0);

/* A build's start and end with templates carried (synth_build_tpl): take
 * tpl's templates into c (0, or PRISM_ENOMEM), give them back. */
int sf_carry_in(struct ctx *c, struct synth_tpl *tpl);
void sf_carry_out(struct ctx *c, struct synth_tpl *tpl, int ok);

/* ---- step.c: the step and its schedule ------------------------------ */

/* Every step of every rank: its units in schedule order, the optimizer,
 * the closing sync (c->oom set on failure, the build stopped there). */
void ss_steps(struct ctx *c, const struct shape *z);

/* Rank r's optimizer step, after its last backward: the gradient
 * statistics, the passes over its parameters, ZeRO's gathers of the
 * updated weights (a dry run's host time: synth_stage_host). */
void ss_optimizer(struct ctx *c, int r, const struct shape *z);

/* A dry ctx's host time of stage s's pipeline transfers, one microbatch:
 * every chunk's forward unit's (its input received, its output sent:
 * *fwd_s) and backward unit's (*bwd_s), as unit_fwd and unit_bwd issue
 * them. */
void ss_transfers(struct ctx *c, int s, const struct shape *z, double *fwd_s, double *bwd_s);

/* A dry ctx's host time of stage s's data-parallel work, as unit_fwd and
 * unit_bwd issue it (their layers, embedding, head and transfers left to
 * the other dry runs): a steady microbatch's forward units (*fwd_s: ZeRO-3's
 * and FSDP's per-layer gathers, with their event waits and copies) and
 * backward units (*bwd_s: ZeRO-3's gathers, and under ZeRO-2/3 every
 * microbatch's gradient reductions), and what the stage's last backward
 * adds (*last_s: ZeRO-0/1's bucket reductions, in each chunk's last
 * backward with overlap_grad, after the stage's last backward without).
 * One backward run, as the last: the steady one's time is its additions
 * but those the last alone makes (dry_last), summed in the same order. */
void ss_dp_host(struct ctx *c, int s, const struct shape *z, double *fwd_s, double *bwd_s,
		double *last_s);

/* FP8 delayed scaling's amax all-reduce and fused update for `gemms` fp8
 * GEMMs of a chunk, forward (fwd) or backward, on rank r (step.c
 * amax_update; bound.c times it dry). */
void ss_amax_update(struct ctx *c, int r, double gemms, int fwd);

/* The fp8 (fp4) GEMMs of chunk ch of stage s under partition lay, as
 * their forwards build them (bound.c, a dry forward of each kind of
 * layer; layer.c fp8_gemms). */
double ss_chunk_fp8_gemms(const struct synth_in *in, const struct layout *lay, int s, int ch);

/* A dry ctx's layer `layer` of rank r, forward (fwd) or backward, as the
 * 1F1B all-to-all overlap's merged units build it (unit_pair): its parts
 * in their order, chained by an event where a part changes stream. */
void ss_layer_parts(struct ctx *c, int r, const struct shape *z, int layer, int fwd);

#endif
