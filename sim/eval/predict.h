/*
 * predict.h - one candidate, end to end, from a base: replay, edit or
 * synthesise its graph, simulate it, and derive what users compare
 * layouts by.
 *
 * A base is a model (a configuration synthesised with the default costs),
 * an annotated trace (its run description says what it ran; costs are
 * fitted on its kernels), or any other trace or saved graph (what prism
 * found in it: layers, microbatches, the data-parallel group).  One
 * evaluation serves whatif and search (predict_eval):
 *
 *   model                synthesised at the candidate's configuration
 *   trace = candidate    the base's replay
 *   trace, an edit       a graph edit of a clone (reshape.h, edit.h): layers
 *                        repeated or dropped (optimizer work outside them
 *                        scaled by the parameters), microbatches repeated or
 *                        dropped, gradient collectives re-timed or added,
 *                        another GPU; the base's own kernels stay
 *   annotated, others    rebuilt by synth at the candidate's configuration
 *                        with the fitted costs (hidden, TP, PP, schedule,
 *                        ...); a plain trace cannot: refused, saying what
 *                        is missing
 *
 * The base is read-only after predict_base_init: threads share it.
 *
 *   iteration time  the slowest stage's step (settle.h)
 *   tokens/s        global batch x sequence / iteration time, where the
 *                   global batch is mbs x microbatches x dp sequences
 *   MFU             model FLOPs (llm_flops_iter, no recomputation) per
 *                   iteration / (time x GPUs x peak of the dtype)
 *   GPU-hours/step  GPUs x iteration time / 3600
 *   memory          mem_estimate() of the layout against the profile
 */
#ifndef PRISM_PREDICT_H
#define PRISM_PREDICT_H

#include "analytic.h"
#include "graph.h"
#include "hw.h"
#include "mem.h"
#include "settle.h"
#include "synth.h"

/* How a candidate was predicted. */
enum predict_method { PM_SYNTH, PM_REPLAY, PM_EDIT, PM_REBUILD, PM_NMETHODS };
const char *predict_method_name(int m);

struct predict_out {
	double iter_s, bubble, tokens_per_s, mfu, gpu_hours;
	/* The two sides of a step (metrics.h), replays and edits only: host
	 * span and GPU side, simulated; host_bound: the GPU idles over
	 * METRICS_HOST_BOUND_IDLE of every step, so GPU edits hardly show. */
	double host_s, gpu_s;
	int host_bound;
	int method;						     /* enum predict_method */
	char how[320];						     /* what was done, for people */
	double exposed_compute_s, exposed_comm_s, overlap_s, idle_s; /* settle.h */
	double global_batch;					     /* sequences per iteration */
	int gpus;
	uint64_t tasks, kernels;	      /* of the kernel-level graph */
	uint32_t kdb_exact, kdb_interpolated; /* synth_out's */
	struct mem_est mem;
};

/*
 * Predict the run `in` describes.  keep_g / keep_so, when not NULL, receive
 * the settled graph and its bookkeeping (for timelines and traces; free
 * with graph_free / synth_out_release).  0, or the error of synth_build or
 * the simulation.
 */
int predict_synth(const struct synth_in *in, struct predict_out *out, struct graph **keep_g,
		  struct synth_out *keep_so, struct prism_err *err);

/*
 * The closed-form estimate of in's iteration (analytic.h) with the kernel
 * model's times over PREDICT_ANALYTIC_EFF (as modelled: host costs and
 * overlap are what it leaves out), the screen of prism search: the
 * iteration time in seconds, or 0 where the layout has no estimate.
 */
#define PREDICT_ANALYTIC_EFF 1.0
double predict_analytic(const struct synth_in *in);
/* The same, and the step's clock it gives into *clock (analytic_out.clock:
 * the power balance at the step's own mix) where in's profile states a
 * balance, else 0 (the reference clock, synth_in.clock's default). */
double predict_analytic_clock(const struct synth_in *in, double *clock);

/* The derived figures from an iteration time (used by predict_synth and
 * by the analytic screen). */
void predict_derive(const struct synth_in *in, double iter_s, struct predict_out *out);

enum predict_kind { PB_MODEL, PB_ANNOTATED, PB_TRACE };
enum { PREDICT_EDIT_PREFERRED, PREDICT_EDIT_ALL, PREDICT_REBUILD };

struct predict_base {
	int kind;	       /* enum predict_kind */
	const struct graph *g; /* the base graph (not a model's), borrowed */
	struct hw_profile hw;  /* the base's hardware; in.hw points here */
	/* The configuration: the model's, or the run description's with
	 * costs fitted on the base (edit_fit), or for a plain trace what was
	 * found (layers, microbatches, dp; tp and pp 1; the model's shape
	 * unknown, 0). */
	struct synth_in in;
	/* Structure found in the graph (annotated and plain traces). */
	int layers;	     /* layers per pass, 0: none found */
	int microbatches;    /* passes per step, at least 1 */
	char grad_pg[48];    /* their process group's name */
	int world;	     /* the trace's world size */
	int64_t grad_group;  /* group size of the gradient collectives
				  * (all-reduce, reduce-scatter of the DP group), 0:
				  * none */
	int other_group;     /* the gradient collectives' group size where it
			      * is not in.lay.dp (a base_dp given against
			      * them), 0: none */
	double params;	     /* parameters of the model, 0: unknown */
	double act_bytes;    /* activations a stage boundary carries per
				  * microbatch, 0: unknown */
	double layer_params; /* of one layer, 0: unknown */
	int dtype_known;     /* a plain trace: 1 when in.lay.dtype is the
			      * precision its GEMMs, attention and convolutions
			      * ran in (their ops' input types, the most time),
			      * 0: unknown (synth_in_default's) */
	int opt_per_layer;   /* 1: optimizer kernels carry their layer (a layer
			    * edit copies them; the rest is the embedding's
			    * and head's and keeps its size) */
	double host_op_s, host_launch_s, host_event_s; /* medians (edit.h) */
	/* An annotated base: 0 edits as a graph only what the base's own
	 * kernels carry well (layers, microbatches, dp, hardware) and rebuilds
	 * the rest; PREDICT_EDIT_ALL edits everything a graph edit can make
	 * (hidden, TP, PP too); PREDICT_REBUILD rebuilds every change. */
	int prefer;
	/* The base's own prediction: its replay (traces) or synthesis. */
	struct predict_out self;
	/* An annotated base's own configuration rebuilt with the costs fitted
	 * on it, as its rebuilt candidates are: what they are compared with
	 * (predict_base_same); iter_s 0 for other bases. */
	struct predict_out rebuilt;
	/* Its host tasks' scale (predict_match_step; 1: as traced) and the
	 * replay's step before it (0: not scaled); set by the caller. */
	double host_scale, host_traced_s;
	char found[200]; /* what was found, for people */
};

/*
 * A base.  model: its configuration `in` (costs as given; g NULL).
 * annotated: g with its run description parsed into `in` (hw set), whose
 * costs are fitted on g here.  trace: g alone; hw its GPU's profile;
 * base_dp its data-parallel degree (0: the trace's world size).  The
 * base's own prediction is made here.  g and hw must outlive b.  0, or the
 * error of the fit or the simulation.
 */
int predict_base_init(struct predict_base *b, int kind, const struct graph *g,
		      const struct synth_in *in, const struct hw_profile *hw, int base_dp,
		      struct prism_err *err);

/*
 * The base as predicted by `method`, the one its candidate was made by,
 * so that a change is never a difference of methods (a no-op is 0.0 %):
 * an annotated base rebuilt for a rebuilt candidate, else its own replay
 * or synthesis (a graph edit that changes nothing replays the base:
 * edits keep what they do not change as traced).
 */
const struct predict_out *predict_base_same(const struct predict_base *b, int method);

/*
 * Whether b can predict the configuration cand (a copy of b->in with
 * knobs changed; cand->hw the candidate's hardware) and how: PM_*, or -1
 * with why (for people: what the base lacks) in err (PRISM_EARG).
 */
int predict_method(const struct predict_base *b, const struct synth_in *cand,
		   struct prism_err *err);

/*
 * A thread's memory kept from one candidate to the next (the folded
 * units' templates: synth_build_tpl, reset for each candidate, so that
 * what it predicts is what it would without them), so that a candidate
 * evaluated allocates none of it again.  One thread at a time; whoever
 * calls _new calls _free.  NULL when out of memory.
 */
struct predict_scratch;
struct predict_scratch *predict_scratch_new(void);
void predict_scratch_free(struct predict_scratch *s);

/*
 * Predict cand from b (predict_method chooses how), with the calling
 * thread's scratch s (NULL: memory of its own, freed before it returns).
 * keep_g, when not NULL, receives the candidate's graph (replayed or
 * edited: simulate it again for a timeline; rebuilt or synthesised:
 * settled, with keep_so's bookkeeping -- keep_so must then be given too).
 * 0, PRISM_EARG when b cannot predict cand, or the error of the edit or
 * simulation.
 */
int predict_eval(const struct predict_base *b, const struct synth_in *cand,
		 struct predict_scratch *s, struct predict_out *out, struct graph **keep_g,
		 struct synth_out *keep_so, struct prism_err *err);

/*
 * Scale the host tasks of a trace's graph g (CPU work, runtime calls, a
 * blocking call's own cost: dur_ns) and every task's traced lag (launch
 * latency, wake-up: lag_ns) by one factor, the steps' bounds moving with
 * the host tasks they fall in, so that its replay's step time is step_s:
 * a step timed without the profiler, whose per-call overhead
 * slows the traced host and its launches (docs/MODEL.md, "The base's step
 * without the profiler").  *scale receives the factor (1: as traced),
 * *traced_s the replay's step before.  0; PRISM_EARG where no factor in
 * PREDICT_HOST_SCALE_MIN..MAX reaches step_s within PREDICT_STEP_TOL (the
 * GPU side alone is longer, or the host would have to be slower than
 * that), g then as it was; or the simulation's error.
 */
#define PREDICT_HOST_SCALE_MIN 0.01
#define PREDICT_HOST_SCALE_MAX 100.0
#define PREDICT_STEP_TOL       1e-3
int predict_match_step(struct graph *g, double step_s, double *scale, double *traced_s,
		       struct prism_err *err);

/* The precision a trace's compute-bound kernels (GEMMs, attention,
 * convolutions) spent the most time in, by their ops' input types
 * (cost_dtype): an enum hw_dtype, -1 where none says, or PRISM_ENOMEM as
 * -2. */
int predict_trace_dtype(const struct graph *g);

/* Kernel and host costs fitted on g against base's synthesised run
 * (edit_fit), written into *fitted (fitted may be base). */
int predict_fit(const struct graph *g, const struct synth_in *base, struct synth_in *fitted,
		struct prism_err *err);

#endif
