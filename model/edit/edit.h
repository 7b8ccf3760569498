/*
 * edit.h - what a candidate changes, applied to a copy of the base.
 *
 * Two kinds of edit:
 *
 * Re-timing in place (any trace): the candidate's graph is a clone of the
 * base with the same tasks and dependencies, and new durations.  A kernel
 * whose op recorded its shapes is re-timed by the kernel model (kperf.h):
 * its time beyond the fixed part scales by kperf(new shape, new GPU) /
 * kperf(old shape, old GPU) -- GEMMs by (M, N, K), attention by batch,
 * heads, sequence and head dim, memory-bound kernels by bytes and kind.
 * Where the model cannot place a kernel (no shapes, a class it does not
 * model, a GEMM matching no linear layer of the description) its work
 * scales by the edit's work ratio and, on another GPU, the ratio of peak
 * FLOP/s times clock (GEMMs, attention, convolutions) or HBM bandwidth
 * (the rest: SimAI's rule), the kernel model's own overhead kept; collectives by the
 * ratio of the communication model's times (comm.h) on the old and new
 * hardware and group.  Another data-parallel degree regroups the
 * collectives whose group is the base's DP group: their time is scaled by
 * comm_time(new group) / comm_time(old group), which keeps the efficiency
 * the trace measured.  Host work is left as traced.
 *
 * Structural edits (layers, microbatches, stages, added collectives) are
 * reshape.h's and pipeline.h's; this module re-times what they give.
 *
 * Rebuilding from measured blocks (annotated traces, for what is not
 * edited as a graph): the candidate is built by synth.h with kernel times
 * calibrated on the base: edit_fit() compares the base's layer kernels
 * class by class with a synthesised model of the base's own
 * configuration, and the ratios (measured / modelled) scale the
 * candidate's kernels; host costs per op and per launch are the base's
 * medians.
 */
#ifndef PRISM_EDIT_H
#define PRISM_EDIT_H

#include "calib.h"
#include "cost.h"
#include "graph.h"
#include "hw.h"

struct llm;

struct edit_retime {
	const struct hw_profile *from, *to; /* the base's and the candidate's GPU,
					     * each at its run's clock (hw.h) */
	int dp_from, dp_to;		    /* data-parallel degree, 0: unchanged */
	double comm_eff;		    /* scales the profile's bus efficiencies (comm.h) */
	double opt_scale;		    /* > 0: optimizer-phase GPU work outside the layers
			   * (a fused optimizer over all parameters, zero_grad)
			   * and its host CPU work take this times as long: the
			   * candidate's parameters over the base's */
	int tp;				    /* tensor-parallel ranks sharing a node with each DP
			   * rank (0: 1): a DP group has hw_domain() / tp
			   * members per NVLink domain */
	/* The model's shape (a run description's): hidden h -> hr h (the
	 * FFN with it), tensor parallelism tp_from -> tp_to (the base's
	 * collectives of that group are its TP collectives; 0: unchanged).
	 * Kernel work in the layers (the bytes of memory-bound kernels the
	 * kernel model re-times, and the work of kernels it cannot place):
	 * GEMMs x hr^2 tp_from/tp_to, attention and the FFN's activation x hr
	 * tp_from/tp_to, norms and residuals x hr (and / t with sp), scores'
	 * softmax x tp_from/tp_to; outside them the logits GEMM x hr
	 * tp_from/tp_to, its softmax and cross-entropy x tp_from/tp_to, the
	 * rest x hr.  TP collectives: bytes x hr over tp_to ranks; pipeline
	 * transfers x hr tp_from/tp_to; the DP collectives' bytes and the
	 * per-layer optimizer x layer_param_ratio. */
	double hr;
	int tp_from, tp_to, sp;
	double layer_param_ratio; /* a layer's parameters per rank, candidate
				   * over base (0: unchanged) */
	/* Per class, the fixed part of a kernel's time (the fitted overhead
	 * times its scale; 0: none): on another GPU only the rest scales. */
	double overhead_s[KC_NCLASSES];
	/* Per class, the measured time per second of kernel-model time (the
	 * fitted line's scale / eff; 0: 1): what the kernel model's own
	 * overhead (kperf.h) takes in a kernel re-timed by a ratio of work. */
	double model_scale[KC_NCLASSES];
	/* With a shape edit (hr != 1 or tp_from != tp_to): the described
	 * model before and after (NULL: none; hidden size and TP edits are
	 * made with it), the microbatch size (a GEMM's tokens: mbs x seq)
	 * and the base's recomputation (enum layout_recompute): each GEMM is
	 * matched to a linear layer of the description to find which of its
	 * dimensions are hidden, sharded over TP or tokens (docs/MODEL.md). */
	const struct llm *m_from, *m_to;
	int mbs, recompute;
};

struct edit_stats {
	uint64_t kernels_scaled; /* kernels on another GPU */
	uint64_t kernels_model;	 /* re-timed by the kernel model from their shapes */
	uint64_t kernels_ratio;	 /* by ratios of work and peaks: not placed */
	uint64_t colls_scaled, colls_unsized;
	uint64_t opt_scaled;  /* optimizer tasks scaled by opt_scale */
	uint64_t unblocked;   /* launch calls given their quartile */
	int64_t unblocked_ns; /* the waiting taken out */
};

/* Re-time g (a clone) in place.  0, or PRISM_ENOMEM. */
int edit_retime(struct graph *g, const struct edit_retime *r, struct edit_stats *st);

/*
 * Launch back-pressure: an asynchronous launch call longer than its name's
 * first quartile in g waited for the launch queue (a GPU far behind the
 * host); of what it took beyond that quartile, keep (0..1) stays.  An
 * edit that takes GPU work away takes the waiting with it (keep: the
 * candidate's GPU work over the base's, at most 1).  0, or PRISM_ENOMEM.
 */
int edit_unblock(struct graph *g, double keep, struct edit_stats *st);

/* Total duration of g's GPU tasks, in ns. */
double edit_gpu_work(const struct graph *g);

/*
 * The parameters of the traced model, from its optimizer's op shapes: the
 * first tensor list of a fused or for-each optimizer op (aten::_fused_adamw_,
 * aten::_foreach_*, ...; PyTorch records every parameter's shape there)
 * launched in the optimizer phase.  *total: their elements; *per_layer:
 * those of one block of the longest run of identical blocks of shapes
 * (infer.h) that repeats `layers` times (the layers' parameters), else 0.
 * A trace without such an op (a per-parameter optimizer): the shapes of
 * autograd's accumulations that took their gradients (GRAPH_ACC_OP host
 * tasks of one backward pass; zero_grad(set_to_none=True), PyTorch's
 * default, makes every first one so), one a parameter: summed, the exact
 * count.  0 with *total 0 when the trace has neither.
 */
int edit_params(const struct graph *g, int layers, double *total, double *per_layer);

/* Bytes of the activations entering the first layer's forward: the first
 * input shape of its first op with shapes (Input Dims) times its element
 * size (Input type), or 0 when the trace records none. */
double edit_activation_bytes(const struct graph *g);

/* The same, and the size of one of those elements in *elem (2 where the
 * trace records no type or one dtype.h does not size: bf16's) and in
 * *half whether they are fp16 ("c10::Half"), each where not NULL: what
 * the collectives an edit adds of the activations are labelled by
 * (dtype_coll_name). */
double edit_activation_type(const struct graph *g, double *elem, int *half);

/* Host costs measured on g: median launch call, median CPU work before a
 * launch, median event record / stream wait call (*event_s -1 if none).
 * 0, or -1 when g launches nothing. */
int edit_host_costs(const struct graph *g, double *op_s, double *launch_s, double *event_s);

struct edit_fit {
	struct calib_class cost[KC_NCLASSES]; /* fitted overhead and efficiency */
	double scale[KC_NCLASSES];	      /* or, where no line could be fitted, the
				    * ratio measured / modelled of the class */
	int fitted[KC_NCLASSES];	      /* 2: a line, 1: a ratio, 0: the overall ratio */
	uint64_t n[KC_NCLASSES];	      /* the base's tasks of the class */
	double overall;			      /* all kernels together */
	double cpu_op_s, launch_s;	      /* host cost per op and per launch (medians) */
	int host_fitted;
};

/*
 * Compare base (a trace of a run prism can describe) with model (that run
 * synthesised with the costs in model_in).  Kernels are paired by name:
 * each name the model has gives a point (x, t) per class, x its ideal time
 * (recovered from the model's time and model_in's cost line), t its mean
 * measured time in the base; a weighted least-squares line t = a + x / e
 * through a class's points (two distinct sizes at least) gives the class's
 * overhead a and efficiency e, which carry to other sizes.  A class with
 * one size gets the ratio of its times, a class the base lacks the ratio
 * over all kernels.  Collectives are not fitted here.  0, or PRISM_ENOMEM.
 */
struct synth_in;
int edit_fit(const struct graph *base, const struct graph *model, const struct synth_in *model_in,
	     struct edit_fit *f);

#endif
