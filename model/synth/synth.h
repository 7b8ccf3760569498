/*
 * synth.h - the execution graph of a GPT training run, from its shape and
 * layout alone.
 *
 * One data-parallel replica is built, one rank per pipeline stage (DP
 * replicas are symmetric; their gradient collectives are timed for the
 * whole group).  Each rank has a host thread that launches every kernel
 * (an op's CPU cost, then cudaLaunchKernel) and six streams: compute,
 * data-parallel communication, and a send and a receive stream per
 * direction between stages.  Per layer and microbatch, forward:
 *
 *   layernorm, QKV GEMM, attention, projection GEMM, [TP all-reduce],
 *   residual + layernorm, FC1 GEMM, GeLU, FC2 GEMM, [TP all-reduce], residual
 *
 * and backward the same in reverse with two GEMMs (input and weight
 * gradients) for each forward GEMM and the attention backward at twice the
 * forward FLOPs; full recomputation runs the forward again first.  Stage 0
 * adds the embedding, the last stage the final norm, logits GEMM and loss.
 * The units (forward or backward of one microbatch on one model chunk)
 * follow the schedule: GPipe, 1F1B (PipeDream-flush), Megatron's
 * interleaved 1F1B, or a zero-bubble one (zb-1p, zb-2p, zb-v: each
 * backward a B unit, the input gradient, and a W unit, the weight-gradient
 * GEMMs, placed as layout_zb_next orders them; zb-v's two chunks a stage
 * in a V, the head on stage 0), or DualPipeV on the same V (its whole
 * backwards one unit, its F&B pairs back to back).  Where each model chunk sits is
 * layout_chunk_model's.  Activations and their gradients cross stages as
 * send/recv pairs that rendezvous.  The gradient all-reduce of each layer
 * (reduce-scatter under ZeRO >= 1, all-gathering the weights after the
 * step) is issued on the DP stream as the last microbatch's backward
 * leaves the layer, then the optimizer runs (multi-tensor Adam, memory
 * bound) and the step ends with cudaDeviceSynchronize.
 *
 * Mixture-of-experts layers (the model's experts, from first_dense on)
 * replace FC1..FC2 by the router, the permutation, an all-to-all over the
 * expert-parallel group, grouped expert GEMMs on the busiest rank's
 * tokens, the all-to-all back and the shared experts; their experts'
 * gradients are reduced over the expert data-parallel group.  With
 * context parallelism (cp > 1) a rank holds s / cp tokens of each
 * sequence and runs attention as a ring of cp steps whose key-value
 * transfers overlap the steps.  docs/MODEL.md gives both.
 *
 * Kernel times come from the kernel database where one is given and it
 * holds the kernel's GPU, class and work (measured, or interpolated between
 * measured sizes: kdb.h), else from the kernel model (kperf.h: a GEMM by
 * its shape, attention by sequence, heads and head dim, memory-bound
 * kernels by bytes) through a per-class line: t = overhead + kperf / eff
 * (overhead 0 and eff 1 by default; calibration fits them); either times a
 * per-class scale.  Collectives from comm.h.  Every node carries its
 * layer, phase and microbatch; the graph's meta string describes the run
 * ("prism::model#...") so that a synthesised trace says what it is.
 *
 * sim/settle.h simulates the built graph once and sets its traced times
 * to the simulated ones, as if it were a trace: replaying it gives its own
 * iteration times.
 */
#ifndef PRISM_SYNTH_H
#define PRISM_SYNTH_H

#include "calib.h"
#include "graph.h"
#include "hw.h"
#include "kdb.h"
#include "llm.h"
#include "mem.h"

struct comm_group; /* comm.h */

struct synth_in {
	struct llm m;
	const struct hw_profile *hw;
	struct layout lay;		      /* the layout (layout.h) */
	int steps;			      /* iterations to build (>= 1) */
	struct calib_class cost[KC_NCLASSES]; /* by class: overhead_s, eff */
	double scale[KC_NCLASSES];	      /* multiplies each class's time */
	const struct kdb *kdb;		      /* measured kernel times (kdb.h), or NULL */
	double comm_eff;		      /* scales the profile's bus efficiencies (comm.h) */
	double cpu_op_s;		      /* host time of an op before its launch */
	double launch_s;		      /* cudaLaunchKernel */
	double gpu_lag_s;		      /* launch (or previous kernel) to kernel start */
	double event_s;			      /* cudaEventRecord, cudaStreamWaitEvent */
	double acc_elem_bytes;		      /* > 0: every microbatch after the first
				  * adds each parameter tensor's gradient
				  * into the accumulated one (PyTorch's
				  * autograd accumulating .grad: weights,
				  * biases, norms), at this element size;
				  * 0: the framework's (synth_acc_bytes:
				  * PyTorch's 2-byte adds under the pure-bf16
				  * optimizer, else Megatron-LM's gradient-
				  * accumulation fusion, none); < 0: none */
	double clock;			      /* the step's clock, a fraction of the burst
				  * (docs/MODEL.md, "Sustained rates"): every
				  * kernel is timed at it (sl_run_hw) in place
				  * of the reference one; 0 (the default): the
				  * reference, hw_run_clock at the layout's
				  * dtype and cap.  The run's estimate gives
				  * the clock of its own mix
				  * (analytic_out.clock, analytic_step_clock);
				  * the balanced partition places at the
				  * reference and the lower bound at the faster
				  * of the two */
	char hw_id[64];			      /* synth_meta_parse: the profile named in the
				  * description */
	int bare;			      /* only the layers: no embedding, head, loss or
				  * optimizer, and communication takes no time
				  * (for checks against closed forms) */
	int no_shapes;			      /* 1: kernels' ops record no shapes (op,
				  * op_dims, op_types; a graph that is only
				  * simulated, never written or edited) */
	int units;			      /* 1: each distinct pipeline unit is built
				  * kernel by kernel once and every unit is
				  * folded into a few unit tasks (hierarchical
				  * simulation, below); 0: every kernel (the
				  * reference, and what timelines and traces
				  * need) */
	int units_by_slot;		      /* 1: a unit template only for the
				  * (stage, chunk) it was made at, not for
				  * every unit of the same content (the
				  * builds before content keys; tests hold
				  * the two equal) */
	int unit_log;			      /* 1: the output lists every unit repeated
				  * from a template (synth_out.ulog: its
				  * template and its tasks' ids), for tests
				  * holding the templates' maps (below) */
};

/*
 * Eager PyTorch's host cost of a kernel, the default of synth_in's
 * cpu_op_s and launch_s (microseconds): measured where the host sets the
 * step, the unprofiled step (CUDA events) of our H100 set's host-bound
 * eager points over the launch calls their traces make a step, 24.3-33.8
 * us, median 26.6 (docs/MODEL.md "Host"); cudaLaunchKernel takes its 5
 * and the op the rest.  An op that launches more kernels pays the launch
 * again for each.
 */
#define SYNTH_EAGER_OP_US     21.6
#define SYNTH_EAGER_LAUNCH_US 5
/* The two as text, for help texts ("21.6,5"). */
#define SYNTH_STR_(x)	      #x
#define SYNTH_XSTR_(x)	      SYNTH_STR_(x)
#define SYNTH_EAGER_HOST_TEXT SYNTH_XSTR_(SYNTH_EAGER_OP_US) "," SYNTH_XSTR_(SYNTH_EAGER_LAUNCH_US)

/*
 * The host's cost of launching a kernel, by execution mode (lay.exec;
 * docs/MODEL.md "Host").  Eager: in's cpu_op_s, launch_s, event_s and
 * gpu_lag_s for every kernel.  Graphs and compiled change them inside a
 * layer's forward or backward (a region; graphs: dense layers only): one
 * region_s on the host as the region starts, then per kernel op_s and
 * launch_s, per event event_s, and lag_s on the GPU.  Compiled keeps the
 * layer's kernels (our H100 compiled traces launch as many as eager).
 */
struct synth_host {
	double op_s, launch_s, event_s, lag_s, region_s;
};
void synth_host(const struct synth_in *in, struct synth_host *h);

/* CUDA-graph replay, fitted by least squares on ocannl issue 488's
 * replays of N-kernel chains (../shared/kernels/other.csv): *fixed_s the
 * graph launch (and its sync), *node_s each node's GPU time. */
void synth_graph_fit(double *fixed_s, double *node_s);

/* Inductor's launch path, from tritonbench PR 1017's GB200 rows
 * (other.csv): CachingAutotuner.run of a 19-argument kernel (its
 * cuLaunchKernel apart) and a compiled graph's guards and wrapper (the
 * end-to-end launch of a one-kernel graph less its kernel's run, 0
 * arguments both). */
#define SYNTH_INDUCTOR_RUN_S	(9.1e-6)
#define SYNTH_INDUCTOR_LAUNCH_S (3.3e-6)
#define SYNTH_INDUCTOR_GRAPH_S	(44.3e-6 - 6.8e-6)

/* Host time of one layer's forward (*fwd_s) and backward (*bwd_s), one
 * microbatch, as lay.exec launches them (moe: an MoE layer's): a dry run
 * of the layer, every kernel's and collective's op and launch and every
 * event's record and wait, as the built graph's host tasks have them
 * (test_exec_host_forms); the GPU's is synth_layer_times'. */
void synth_layer_host(const struct synth_in *in, int moe, double *fwd_s, double *bwd_s);

/* The same two for a layer of kind k (llm.h enum llm_kind; a hybrid
 * model's Mamba, attention or MLP layer; FULL a dense layer's): its
 * kernel-model times (an attention layer's over the model's windows as
 * synth_layer_times weighs them) and its host's. */
void synth_kind_layer_times(const struct synth_in *in, int k, double *fwd_s, double *bwd_s,
			    double *attn_fwd_s);
void synth_kind_layer_host(const struct synth_in *in, int k, double *fwd_s, double *bwd_s);

/* Host time of stage 0's embedding and of the last stage's final norm,
 * logits and loss, forward and backward, one microbatch (eager whatever
 * lay.exec: no layer's region holds them); the GPU's is
 * synth_extra_times', the embedding's backward alone in emb_bwd_gpu_s
 * (where the step's last backward runs at its GPU's pace: grad_chain). */
struct synth_extra_host {
	double emb_fwd_s, emb_bwd_s, head_fwd_s, head_bwd_s;
	double emb_bwd_gpu_s;
};
void synth_extra_host(const struct synth_in *in, struct synth_extra_host *h);

/* Host time of each pipeline stage, into st[0 .. pp): its pipeline
 * transfers' a microbatch, forward and backward units (their sends and
 * receives, with their event waits), and its optimizer step's (its
 * kernels' and collectives' launches and event calls; 0 for a bare run);
 * its data-parallel work's a steady microbatch, forward and backward units
 * (ZeRO-3's and FSDP's per-layer gathers with their event waits and
 * copies; under ZeRO-2/3 the gradient reductions of every backward), and
 * what its last backward adds (ZeRO-0/1's bucket reductions, each chunk's
 * last backward's, or after the last without overlap_grad); synth's, in a
 * dry run (the transfers and the optimizer eager, outside every layer's
 * region; the data-parallel work as the units issue it). */
struct synth_stage_host {
	double xfer_fwd_s, xfer_bwd_s, opt_s;
	double dp_fwd_s, dp_bwd_s, dp_last_s;
	double opt_gpu_s; /* the optimizer step's kernels' GPU time, the
			   * same dry run timed: fp16's unscale, the
			   * clipping norm and scale, the update (its
			   * collectives not in it) */
};
void synth_stage_host(const struct synth_in *in, struct synth_stage_host *st);

/* Iterations a run may build (synth_in.steps). */
#define SYNTH_MAX_STEPS 100

/* The kernel model's time, one microbatch forward and backward, of stage
 * 0's embedding (*emb_s) and of the last stage's final norm, logits and
 * loss (*head_s). */
void synth_extra_times(const struct synth_in *in, double *emb_s, double *head_s);

/* The time of their tensor-parallel collectives, one microbatch, as synth
 * emits them (layer.c embed_reduce, embed_reduce_bwd, ce_allreduce) and
 * comm.h prices them: the embedding's reduction forward (emb_s[0]) and its
 * gradient's gather backward (emb_s[1]), the cross-entropy's three
 * all-reduces (*head_s, forward).  0 at tp 1 or for a bare run. */
void synth_extra_tp_s(const struct synth_in *in, double emb_s[2], double *head_s);

/* The time of the tensor-parallel collectives one dense layer's forward
 * and backward (recomputation included) run (comm.h's times, as synth's
 * layer emits them: all-reduces, or with sequence parallelism each
 * reduce-scatter and all-gather priced on its own; MLA's and LoRA's
 * included; sequence parallelism's backward re-gathers as far as the
 * input gradients' GEMMs beside them do not cover them; context
 * parallelism's left out), one microbatch; the
 * forward's alone in *fwd_s where not NULL.  The analytic estimate's
 * tensor-parallel term. */
double synth_layer_tp_s(const struct synth_in *in, double *fwd_s);

/* FP8 delayed scaling's amax reduction (step.c amax_update): the group it
 * is all-reduced over (tp x dp x cp), the bytes of the fused history and
 * scale update of `amaxes` amaxes (histories of SYNTH_AMAX_HISTORY), and
 * the time of stage s's reductions and updates in one microbatch, forward
 * and backward, every chunk (0 under the other recipes and dtypes), and
 * where host is given the host's launches of them, host[0] forward and
 * host[1] backward (outside every layer's region, as built). */
#define SYNTH_AMAX_HISTORY 1024
struct comm_group synth_amax_group(const struct synth_in *in);
double synth_amax_update_bytes(double amaxes);
double synth_stage_amax_s(const struct synth_in *in, int stage, double host[2]);

/* Parameters outside the layers on one GPU of pipeline stage `stage`, in
 * the order the backward completes their gradients: *first the output
 * side's (final norm; the head, its own matrix when untied, a copy of the
 * word embedding on a last stage that is not the first), *last the
 * embedding's (word embedding, learned positions; stage 0). */
void synth_extra_params(const struct synth_in *in, int stage, double *first, double *last);

/* The element size at which each microbatch after the first adds its
 * parameters' gradients into the accumulated ones (synth_in's
 * acc_elem_bytes where > 0; none where < 0); where 0, the framework's:
 * under the pure-bf16 optimizer (optimizer_dtype bf16: PyTorch's AdamW on
 * the bf16 parameters, no fp32 main gradients) PyTorch's autograd
 * accumulates each tensor's .grad, an add of 2-byte values (AccumulateGrad,
 * torch/csrc/autograd/functions/accumulate_grad.h: `variable_grad +=
 * new_grad` once a .grad exists); else none (Megatron-LM's weight-gradient
 * GEMMs accumulate into the main gradients). */
double synth_acc_bytes(double acc_elem_bytes, const struct layout *l);

/* Bytes per parameter of a gradient as the data-parallel collectives
 * reduce it (the main gradients': fp32 for bf16 weights, Megatron-LM). */
double synth_grad_bytes(const struct synth_in *in);

/* The groups over which the gradient statistics are all-reduced before
 * the optimizer step (the clip norm's squares, fp16's found-inf flag:
 * Megatron-LM's grad_stats_parallel_group, torchtitan's two under FSDP),
 * into g (room for 2): how many; the last spans the pipeline stages. */
int synth_grad_stats_groups(const struct synth_in *in, struct comm_group *g);

/* The word embedding on two stages -- tied to the head, or looked up by
 * the MTP depths (Megatron-LM's finalize_model_grads.py
 * _allreduce_word_embedding_grads, _get_shared_word_embedding_weight) --
 * its gradient all-reduced between the first stage and the head's after
 * the backward: 1 with its group (*g) and bytes per rank (*bytes), or 0
 * where there is none (one stage holds both, untied without MTP, LoRA's
 * frozen embedding). */
int synth_embed_grad_reduce(const struct synth_in *in, struct comm_group *g, double *bytes);

/* The output side's weights of stage `stage` (synth_extra_params' first:
 * the final norm, the head -- on a last stage that is not the first, a
 * tied head's copy of the word embedding -- and MTP's) under ZeRO-3,
 * FSDP and FSDP2 (and FSDP's ZeRO-2, SHARD_GRAD_OP): all-gathered before
 * the head's forward (ag_bytes a rank) and their gradient
 * reduce-scattered after its backward (rs_bytes; 0 without overlap_grad,
 * where it waits for the unit's end with the layers'), each microbatch, over the
 * sharding group, with the implementation's elementwise copies
 * (layout_dp_traits: the copy-in before each on its stream, the gather's
 * copy-out on the compute stream, the reduce-scatter's after it) and,
 * with hybrid sharding, the shard's all-reduce over the replicas.  1 with
 * *h, or 0 where there are none (no gathers, no sharding, LoRA, bare, no
 * such weights). */
struct synth_head {
	double params;		   /* the weights */
	double ag_bytes, rs_bytes; /* the collectives' bytes a rank (0: none) */
	double ag_in, ag_out;	   /* the gather's copies' bytes (0: none) */
	double rs_in, rs_out;	   /* the reduce-scatter's */
	int group, per_node;	   /* the sharding group (a comm_group) */
	/* Hybrid sharding: the shard's all-reduce over the replicas after
	 * the reduce-scatter (bytes a rank, 0: none; its group). */
	double ar_bytes;
	int replicas, replicas_per_node;
};
int synth_head_colls(const struct synth_in *in, int stage, struct synth_head *h);

/* How many statistics are all-reduced over those groups a step: the
 * clip norm's (clip_grad > 0) and, under fp16, the found-inf flag's. */
int synth_grad_stats_n(const struct synth_in *in);

/* Their all-reduces' time a step (4 bytes each: latency-bound), in
 * seconds: the norm's, and under fp16 the found-inf flag's; 0 when bare. */
double synth_grad_stats_s(const struct synth_in *in);

/* One pipeline transfer (a microbatch's activations forward, or their
 * gradients back) between adjacent stages as synth's pp_send and pp_recv
 * issue it and the collective model prices it, in seconds: b s h bf16
 * values each tensor-parallel rank (1 / t of them with sequence
 * parallelism or pp_scatter_gather), over NVLink where the two
 * stages share a domain, else one NIC; 0 without a pipeline. */
double synth_pp_transfer_s(const struct synth_in *in);

/* Under pp_scatter_gather (where it applies: tp > 1, no sp), the
 * receiver's all-gather of each transfer's t pieces over its
 * tensor-parallel group, on the compute stream before the unit that
 * takes it (step.c pp_gather): stage `stage`'s, one microbatch, in
 * seconds, its forward units' (*fwd_s: the activations') and backward
 * units' (*bwd_s: their gradients'); 0 where there is none (or bare). */
void synth_pp_gather_s(const struct synth_in *in, int stage, double *fwd_s, double *bwd_s);

/* Parameters a gradient bucket holds before it is reduced: bucket_mb of
 * main gradients, or Megatron-LM's max(40M, 1M x dp). */
double synth_bucket_params(const struct synth_in *in);
/* Tasks every layer's forward and backward of one microbatch make at the
 * least (9 kernels each way, each an op, a launch and the kernel: 54):
 * steps x layers x microbatches x this is checked against GRAPH_MAX_TASKS
 * before building, so a run too large to build is refused at once. */
#define SYNTH_MIN_TASKS_PER_LAYER 48

/* What was built: node ids in the returned graph. */
struct synth_out {
	double flops;	  /* GEMM and attention FLOPs of one replica, one step */
	uint32_t kernels; /* GPU tasks, all steps */
	uint32_t kdb_exact, kdb_interpolated; /* kernels timed from the kernel
					       * database (the others: roofline
					       * or communication model) */
	int steps, stages;
	/* Event record -> stream wait pairs, for timeline_write. */
	struct graph_wait *waits;
	uint32_t n_waits;
	/* Per step and stage (step-major): its first host task and the wait
	 * of its closing cudaDeviceSynchronize. */
	uint32_t *step_first, *step_last;
	size_t n_steps;
	/* Per pipeline unit, all steps: its first and last compute task. */
	uint32_t *unit_first, *unit_last;
	size_t n_units;
	uint32_t compute[LAYOUT_MAX_STAGES]; /* each stage's compute stream */
	/* What the graph stands for: tasks of the kernel-level graph (equal to
	 * the graph's own count unless units were folded). */
	uint64_t tasks;
	/* Folded units (in->units): the unit tasks that stand for several
	 * compute-stream kernels, each with the time inside it that the
	 * kernels leave idle (their start lags) and that tensor-parallel
	 * collectives hold; node ids.  n_units_folded units were folded,
	 * n_units_kept stayed kernel by kernel (what could not be folded). */
	struct synth_fold_mark *marks;
	size_t n_marks;
	struct synth_fold_kern *kerns; /* the kernels inside the unit tasks */
	size_t n_kerns;
	size_t n_units_folded, n_units_kept, n_unit_kinds;
	size_t n_unit_kinds_carried; /* of the kinds, templates taken from an
				      * earlier build (synth_build_tpl) */
	/* Contention (sim.h): the profile's, 0 for bare runs. */
	double slow_compute, slow_comm;
	/* in->unit_log: each unit repeated from a template, in build order,
	 * then each step's tail (tpl: its index, synth_tpl_tail_map), its
	 * stage's steps in order, stage after stage (NULL, 0 otherwise;
	 * synth_out_release frees them). */
	struct synth_unit_rec *ulog;
	size_t n_ulog, n_tails;
	uint32_t *ulog_nodes;
};

/* Streams of a stage (at least those synth builds on). */
#define SYNTH_STREAMS 16

/* A unit repeated from template tpl (synth_tpl_unit_map; a tail, the last
 * n_tails of the log: tail tpl, synth_tpl_tail_map) on stage rank:
 * the graph's id of the template's task i is ulog_nodes[node0 + i], i <
 * n (the template's tasks, in its order). */
struct synth_unit_rec {
	uint32_t tpl, rank, node0, n;
	uint32_t step; /* the step it was built in (a tail: its step) */
	/* The stage's streams' last tasks before it (UINT32_MAX: none):
	 * what its LAST entries are the ends of. */
	uint32_t last[SYNTH_STREAMS];
};

/* A unit task: node, the first host task of its unit (which starts at
 * the unit's host offset 0), and its kernels kerns[kern0 .. kern0 +
 * n_kern) in their order; a pair's (sim.h: the context-parallel ring's
 * transfers folded beside its attention) also the side lane's,
 * kerns[kern2 .. kern2 + n_kern2) (n_kern2 0: none). */
struct synth_fold_mark {
	uint32_t node, host;
	uint32_t kern0, n_kern;
	uint32_t kern2, n_kern2;
};

/* A kernel inside a unit task: its launch's offset from the unit's host
 * start, its start lag and duration; comm: SYNTH_KERN_COLL a collective
 * (tensor parallel), SYNTH_KERN_P2P a transfer, else 0.  Each starts at
 * the later of the previous one's end and its launch, plus its lag (the
 * first after the task's predecessor). */
#define SYNTH_KERN_COMPUTE 0
#define SYNTH_KERN_COLL	   1
#define SYNTH_KERN_P2P	   2

struct synth_fold_kern {
	int64_t rel_ns, lag_ns, dur_ns;
	uint8_t comm;
	/* A pair's: the other lane's kernel (its index there) whose end this
	 * one also waits for, by an event; SYNTH_NO_XW none. */
	uint32_t xw;
};
#define SYNTH_NO_XW UINT32_MAX

/* Defaults: bf16, two steps (the first starts from idle streams and is
 * left out of the prediction), kernels as the kernel model times them
 * (every class's line: overhead 0, eff 1), comm_eff 1 (collectives as the
 * profile's fitted bus efficiencies say), host 10 us per
 * op + 5 us per launch, 2 us per event call, 1 us launch-to-start. */
void synth_in_default(struct synth_in *in);

/* in's layout with its partition resolved: the layers of each stage in
 * l->part (synth_partition; part[0] = 0 where every stage holds layers /
 * pp), as mem.h and the graph's stages take it. */
void synth_mem_layout(const struct synth_in *in, struct layout *l);

/* in's layout with the layers of each stage (or model chunk) that its
 * partition gives placed, into out (part[0] = 0 and part_chunks = 0 when
 * every chunk holds layers / (pp x vp)): 0, or PRISM_EARG naming the rule
 * broken (layout_check_partition). */
int synth_partition(const struct synth_in *in, struct layout *out, struct prism_err *err);

/*
 * The canonical input of in (one synth_check accepts) into *out (not in):
 * in with each knob whose values the build and its simulation (synth_build,
 * predict_synth's folded points and their line, sim/eval/hier.c) do not
 * tell apart set to one of them:
 * - partition (pp >= 2): placed with every stage's layers equal
 *   (synth_mem_layout: part[0] = 0, no chunk list), "even": the build
 *   and the line read the partition only as placed.
 * - schedule: one microbatch under GPipe or 1F1B, 1F1B: every stage runs
 *   its forward, then its backward, under both (step.c stage_step: the
 *   warm-up clamped to the one microbatch), and nothing else reads the
 *   two apart.
 * - zero: one microbatch under GPipe or 1F1B, DeepSpeed's ZeRO-1 or
 *   ZeRO-2 with the gradients reduced during the backward (overlap_grad),
 *   ZeRO-1: step.c reads the two apart only where a backward is not its
 *   chunk's last (stage_step's reduce, every unit's grad_flush); the only
 *   backward is the last.  Not FSDP's SHARD_GRAD_OP (dp_impl fsdp, fsdp2:
 *   its gathers), nor Megatron-FSDP's optim_grads (dp_impl megatron: the
 *   reduced shard's add after each reduce-scatter and the shard's fill,
 *   layout_dp_traits rs_out, step.c grad_buffer_zero).
 * Returns the knobs so set (LK_BIT of layout.h's ids), whatever their
 * value was: 0 where no rule applies (*out is then in).  Two inputs whose
 * canonical inputs are equal byte for byte build the same graph task for
 * task (its run description aside) and predict the same step; what reads
 * the layout itself differs (mem.h's memory: 1F1B's last stage holds no
 * warm-up microbatch, ZeRO-2 shards the gradients).  A change here or in
 * what the rules name must keep test_synth's canonical cases equal.
 */
layout_mask synth_canonical(const struct synth_in *in, struct synth_in *out);

/* mem_estimate() of in's layout (synth_mem_layout). */
void synth_mem(const struct synth_in *in, struct mem_est *out);

/* The kernel model's time of one layer's compute on one tensor-parallel
 * rank for one microbatch (kperf.h, before each class's line): forward,
 * backward (recomputation included) and the attention core's forward
 * alone.  For the analytic estimate and for tests. */
void synth_layer_times(const struct synth_in *in, double *fwd_s, double *bwd_s, double *attn_fwd_s);

/* The part of that backward a zero-bubble schedule runs as its W pass:
 * the weight-gradient GEMMs and their accumulation (layer.c), a dense
 * layer's (moe 0) or a mixture-of-experts layer's (moe 1, where the model
 * has them).  The B pass is the rest. */
double synth_layer_wgrad_s(const struct synth_in *in, int moe);
/* The host's time of that W pass (its kernels' launches, as lay.exec
 * launches them: synth_layer_host's dry run of the W pass alone). */
double synth_layer_wgrad_host_s(const struct synth_in *in, int moe);

/* The same for a mixture-of-experts layer of in's model on the busiest
 * rank (a dense layer's for a dense model): attention, router, permutes,
 * grouped expert GEMMs, shared experts (collectives are not in it). */
void synth_moe_layer_times(const struct synth_in *in, double *fwd_s, double *bwd_s,
			   double *attn_fwd_s);

/* The compute-heavy part of those times (GEMMs and attention, KC_GEMM and
 * KC_ATTENTION: the kernels the power balance counts as compute,
 * docs/MODEL.md "Sustained rates"), from the same dry run: t[3] a layer's
 * times as synth_layer_times gives them (moe: synth_moe_layer_times';
 * kind other than LLM_KIND_FULL: synth_kind_layer_times' of that kind),
 * h[3] their heavy parts; the embedding's and the head's (t[2]:
 * synth_extra_times', h[2]); a W pass's (synth_layer_wgrad_s, *heavy). */
void synth_layer_split(const struct synth_in *in, int moe, int kind, double t[3], double h[3]);
void synth_extra_split(const struct synth_in *in, double t[2], double h[2]);
double synth_layer_wgrad_split(const struct synth_in *in, int moe, double *heavy);

/*
 * Activation offloading (lay.offload_layers; docs/MODEL.md "Activation
 * offloading"): the seconds the compute waits for the copies, one
 * microbatch's forward (or backward) of a chunk of L layers of which the
 * first N offload, Transformer Engine's schedule (step.c) on one copy
 * stream, with every layer's forward f (backward) and every copy x alike.
 * Copy i starts when layer i is done and the copy before it; layer L - N +
 * i waits for it.  L - N = 1: every copy between its layer and the next,
 * N x.  Else the copies run back to back behind layer 0 and the last layer
 * waits for the last: max(0, N x - (L - 2) f) -- hidden while (L - 2) f
 * covers them.  The backward is the same with the copies back (layer L - 1
 * - N + i starts copy i, layer i waits for it).
 */
double synth_offload_exposed(int L, int N, double f, double x);

/* The seconds one layer's offloaded activations take over hw's host link,
 * one microbatch: out (*d2h_s) and back (*h2d_s), a dense layer's (moe 0)
 * or an MoE layer's (mem_act_per_layer, mem_act_moe_layer). */
void synth_offload_copy_s(const struct synth_in *in, const struct hw_profile *hw, int moe,
			  double *d2h_s, double *h2d_s);

/* Bytes one expert-parallel all-to-all of one MoE layer sends from the
 * busiest rank, one microbatch: b s / tp tokens x top_k copies x rho (the
 * busiest rank's load over the mean, mem_moe_tokens) x hidden x 2 bytes
 * (the flex and hybridep dispatchers: x the distinct ranks, or NVLink
 * domains, a token goes to over top_k); 0 for a dense model, ep 1 or the
 * allgather dispatcher.  Four per layer: dispatch and combine, forward
 * and backward. */
double synth_moe_a2a_bytes(const struct synth_in *in);

/* comm_time of one dispatch's all-to-alls as synth places them: the one
 * over the EP group, or flex's and hybridep's two stages across NVLink
 * domains (0 where there is none). */
double synth_moe_a2a_s(const struct synth_in *in);

/* comm_time of one MoE layer's dispatch and combine, forward, as synth
 * places them: every collective of the layout's dispatcher (all-to-alls,
 * all-gathers, the expert tensor-parallel ones; the combine's reduce-
 * scatters); the backward runs the same again. */
double synth_moe_dispatch_s(const struct synth_in *in);

/*
 * Hierarchical simulation (in->units): a step repeats the same units (the
 * forward or backward of one microbatch on one model chunk of a stage).
 * A unit is keyed by its stage, chunk, phase, whether it issues the
 * chunk's gradient collectives, and whether its microbatch is the first
 * or the last; the first unit of each key is built kernel by kernel and
 * folded, the others repeat the fold.  A fold keeps the host's time and
 * every task off the compute stream (point-to-point and data-parallel
 * collectives, which rendezvous and overlap as before) and replaces each
 * run of compute-stream kernels between cross-stream events by two
 * tasks: its first kernel as it is, then one task as long as the rest
 * (their durations and start lags), launched by the unit's first host
 * task, whose kernels (marks, kerns) the simulator places as the kernel
 * by kernel run does (each at the later of the previous end and its
 * launch, plus its lag; sim.h, folded tasks), under contention too.  The
 * host's time is split at every launch it gates.  A unit whose build
 * leaves event waits pending, or whose edges reach outside it (but for
 * events from a stream's last task before it, kept in the template),
 * stays kernel by kernel (counted in n_units_kept).  docs/MODEL.md,
 * "Hierarchical simulation".
 */
#define SYNTH_MIN_TASKS_PER_UNIT 4

/*
 * Build the run.  0 with *out_g set (free with graph_free) and *out filled
 * (release with synth_out_release), or PRISM_EARG naming the rule the layout
 * breaks, or PRISM_ENOMEM.  The graph's times are not set yet: settle.h
 * simulates it and makes the simulated times its traced ones.
 */
int synth_build(const struct synth_in *in, struct graph **out_g, struct synth_out *out,
		struct prism_err *err);
void synth_out_release(struct synth_out *o);

/*
 * Folded units' templates carried from one build to the next
 * (hierarchical simulation's points: one input at several microbatch
 * counts).  synth_build_tpl() is synth_build() that takes the templates
 * tpl holds where tpl was last used for the same input but its
 * microbatches (else it starts empty), and leaves its own there.  A
 * carried template is taken at its unit's first use only where the build
 * stands as the one that made it did (the rank's state, the collectives'
 * sequence entries, each string its unit interned found at, or new added
 * at, the id it had), with what building the unit would have left
 * (strings, sequence entries, correlation ids, the rank's state); else the
 * unit is built and folded as without it.  The graph and the output are
 * those of synth_build(), task for task (tests/test_hier.c).  tpl owns
 * its memory, kept from build to build; free it with synth_tpl_free().
 */
struct synth_tpl;
struct synth_tpl *synth_tpl_new(void);
void synth_tpl_free(struct synth_tpl *tpl);
/* tpl as synth_tpl_new() made it, its memory kept: the next build starts
 * with no templates, allocating none of their arrays again until they
 * outgrow what an earlier input left (a thread's tpl reused candidate
 * after candidate).  The last build's sizes stay: the next build reserves
 * its writer's columns from them (they move no prediction). */
void synth_tpl_reset(struct synth_tpl *tpl);
/* g, a graph synth_build_tpl made with tpl, done with: tpl keeps it for
 * its next build to fill in place (its writer's, gwrite.h gw_recycle),
 * so that a thread's builds in steady state allocate no graph; freed
 * where tpl is NULL or has no writer.  The graph escapes otherwise
 * (graph_free it as any). */
void synth_tpl_recycle(struct synth_tpl *tpl, struct graph *g);
int synth_build_tpl(const struct synth_in *in, struct synth_tpl *tpl, struct graph **out_g,
		    struct synth_out *out, struct prism_err *err);
/* so, the output of tpl's last build, done with: tpl keeps its arrays
 * for the next build's output (emptied and filled again, as new ones
 * would be), up to GW_KEEP_NODES entries each; synth_out_release(so)
 * where it is not tpl's last (or tpl is NULL).  An output released
 * instead, or still held at the next build, is its holder's as any. */
void synth_tpl_recycle_out(struct synth_tpl *tpl, struct synth_out *so);

/*
 * A template's map (issue 38's unit map, docs/PERFORMANCE.md): the
 * latest times at which its unit's exits happen as a max-plus function of
 * its entries, computed once per template where it is made (fold.c
 * sf_end), over its own tasks as the simulator (sim.h) times them where
 * nothing contends: each task starts at the latest release of its edges
 * (a launch's at its host task's start, any other at its source's end)
 * plus its start lag, a point-to-point transfer not before the other
 * members of its instance arrive, and ends its duration later; a unit
 * task (sim.h, folded tasks) at max(start + rest, host start + reach) of
 * its kernels.  Tasks on one processor run in their order (the graph's
 * order edges), the first after the processor's last task before the
 * unit.
 *
 * Entries (in[i]):
 * - SYNTH_PORT_PROC: the end of the last task before the unit on
 *   processor `proc` (an offset from the stage's host thread, which is 0:
 *   the host's free time; a stream's: what its first task here follows),
 *   INT64_MIN where there is none (the host's then: its first task's
 *   start);
 * - SYNTH_PORT_LAST: the end of the stage's last task of stream `proc`
 *   before the unit (what its events from before it wait on; after a
 *   pair (sim.h), a stream whose tasks were its side lane's has the pair's
 *   unit task there), INT64_MIN where none;
 * - SYNTH_PORT_PEER: the latest arrival of the other members of
 *   template task `task`'s instance (a pipeline transfer's other side),
 *   INT64_MIN where it has none.
 * Exits (out[j]):
 * - SYNTH_PORT_END: the end of task `task`, the unit's last on processor
 *   `proc` (the host's: its free time after the unit);
 * - SYNTH_PORT_LAST: the end of task `task`, the stage's last task of
 *   stream `proc` after the unit (the next unit's LAST entry);
 * - SYNTH_PORT_ARRIVE: when task `task` (a transfer) arrives, ready to
 *   rendezvous: the PEER entry of the other side's unit;
 * - SYNTH_PORT_START: the start of task `task`, the unit's first compute
 *   task (the bubble's span).
 * m[j * n_in + i]: the longest path from entry i to exit j, INT64_MIN
 * where there is none; exit j is the max over i of m[j * n_in + i] +
 * in[i].  Exact, to the nanosecond, for a unit whose tasks run alone on
 * their GPU (no contention: test_hier's test_unit_map holds it against
 * the settled graph); a pair's (sim.h, pairs) end row is its start row
 * plus its lanes' run from a start past every launch, and, without
 * contention, its host start's plus its run from the latest launches;
 * under contention it holds within its guard (synth_pair_guard).
 */
#define SYNTH_PORT_PROC	  0
#define SYNTH_PORT_PEER	  1
#define SYNTH_PORT_END	  2
#define SYNTH_PORT_ARRIVE 3
#define SYNTH_PORT_START  4
#define SYNTH_PORT_LAST	  5

struct synth_port {
	uint8_t kind;  /* SYNTH_PORT_* */
	int32_t proc;  /* PROC, END: processor, from the stage's host thread */
	uint32_t task; /* PEER, END, ARRIVE, START: the template's task */
};

/*
 * A pair's guard (sim.h "pairs"; issue 38's unit map, step 6;
 * docs/PERFORMANCE.md): a template task that is a pair (its run of
 * compute kernels with a side lane of collectives beside it) ends at
 * its start plus len wherever its start is at least bound after its
 * unit's host start -- where no launch holds any of its pieces back
 * from the start its lanes alone would give it, the run being then its
 * lanes' one run shifted (the sim's arithmetic is shift-invariant: sim.c
 * pair_whole).  Outside that, under contention, its lanes slow each other
 * by how they overlap, which a launch moves: no max-plus function of
 * the start (synth_pair_end steps it).  Without contention a pair is
 * max-plus in its start and its host start everywhere and gets no guard.
 */
struct synth_pair_guard {
	uint32_t task;
	int64_t bound, len;
};

/* A map's task (synth_unit_map.task): its processor (an offset from the
 * stage's host thread, 0 the host's), its kind (graph.h GN_*), whether it
 * is a pair (sim.h "pairs"), its duration as the map runs it (a unit
 * task's: its kernels' rest; a pair's: its run past every launch) and, on
 * a GPU, its busy time (settle.c's unit busy time: a unit task's its
 * kernels' durations, a pair's its main lane's pieces' run in its run
 * past every launch -- the same within its guard; any other task's -1:
 * its span, end less start); a unit task's reach (sim_fold_pieces: its
 * end is no earlier than its unit's host start plus it; INT64_MIN none)
 * and a pair's bound (synth_pair_guard's: from a start at least this
 * after its host start, no launch holds a piece; INT64_MIN none). */
struct synth_map_task {
	int32_t proc;
	uint8_t kind, pair, launched; /* launched: a host task releases it (tl) */
	int64_t dur, busy, reach, bound;
};

struct synth_unit_map {
	uint32_t n_tasks, n_in, n_out;
	const struct synth_port *in, *out;
	const int64_t *m;
	/* Every task's start row and end row (ts, te: task i's at i n_in;
	 * its start is max_j(ts[i n_in + j] + in[j]), as the exits' rows),
	 * and what each is (task[i]): the points' outputs read the tasks
	 * inside (synth_ueval). */
	const int64_t *ts, *te;
	/* A GPU task's releases by source, the same form: from host tasks
	 * (its launch, tl), from any other task (tr: the task before it on
	 * its stream, an event's source), each with its lag; the launch
	 * binds it (settle.c's launch-bound count) where tl's is the later
	 * (sim.c mp_release: at a tie the one released first, never the
	 * launch).  INT64_MIN rows for host tasks. */
	const int64_t *tl, *tr;
	const struct synth_map_task *task;
	/* Its pairs' guards, in their tasks' order: the map holds where each
	 * holds, max_i(gm[2 g n_in + i] + in[i]) (guard g's task's start) -
	 * max_i(gm[(2 g + 1) n_in + i] + in[i]) (the host start) >= bound;
	 * an evaluator declines elsewhere.  (n_guard 0 under no contention.) */
	uint32_t n_guard;
	const struct synth_pair_guard *guard;
	const int64_t *gm;
};

/*
 * A pair's end as the simulator times it alone on its GPU (sim.c
 * lanes_alone, event by event; its periods' jumps and the main lane's
 * solo stretches are the same arithmetic taken at once): its unit task
 * mk (its kernels in kerns), starting at start, its unit's host at host,
 * under the contention factors slow_compute and slow_comm (sim.h; 0 and
 * 0: none).  ends: room for mk->n_kern + mk->n_kern2 values, each piece's
 * end (the main lane's, then the side's).  0 and *end; 1 where its lanes
 * wait on each other for ever (*end PRISM_TIME_MAX + 1, as the sim).
 */
int synth_pair_end(const struct synth_fold_kern *kerns, const struct synth_fold_mark *mk,
		   double slow_compute, double slow_comm, int64_t start, int64_t host,
		   int64_t *ends, int64_t *end);

/* The same for task `task` of template t of tpl's last build (its
 * contention factors that build's), ends room for n_ends values: 0, 1 as
 * synth_pair_end; -1 where that task is no pair, or n_ends is fewer than
 * its pieces (its main and side lanes'). */
int synth_tpl_pair_end(const struct synth_tpl *tpl, uint32_t t, uint32_t task, int64_t start,
		       int64_t host, int64_t *ends, size_t n_ends, int64_t *end);

/* The same, and *held: whether a launch held one of its pieces (sim.c
 * lane_next's rule: its launch later than both its other releases; the
 * sim then counts the pair launch-bound). */
int synth_tpl_pair_held(const struct synth_tpl *tpl, uint32_t t, uint32_t task, int64_t start,
			int64_t host, int64_t *ends, size_t n_ends, int64_t *end, int *held);

/* Template t of tpl's last build (synth_unit_rec.tpl): its map into *map
 * (pointing into tpl, valid until its next build): 0, or -1 where tpl has
 * no such template. */
int synth_tpl_unit_map(const struct synth_tpl *tpl, uint32_t t, struct synth_unit_map *map);

/*
 * The same for the tail of each stage's step (issue 38's unit map, step
 * 4): its tasks after the stage's last unit -- the gradients' last
 * reductions, the optimizer (the statistics' all-reduces across the
 * stages and the tied embedding's between two among them: every
 * collective a PEER entry, INT64_MIN where it has no other member), the
 * closing synchronize -- made where the step is built (hierarchical
 * simulation: in->units), the i-th of tpl's last build (synth_out's
 * tails, stage after stage, step after step): 0, or -1 where there is
 * none.  n_in 0 where an edge reaches into it from a task before it other
 * than a stream's last (an event wait left pending by the last unit).
 */
int synth_tpl_tail_map(const struct synth_tpl *tpl, uint32_t i, struct synth_unit_map *map);

/*
 * The unit map's evaluator (issue 38's unit map, step 5;
 * docs/PERFORMANCE.md "The evaluator"): every exit of every unit and tail
 * of so's log (a build of tpl with in->unit_log) from the templates' and
 * tails' maps alone, without the settled graph's times -- each stage's
 * units and tails walked in its build order (step by step, the tail after
 * its step's units), a processor's and a stream's last entry the latest
 * earlier exit of its kind, a transfer's PEER entry the latest ARRIVE
 * exit of the other members of its instance; resolved exit by exit (a
 * worklist: an exit is known once every entry with a path to it is), as
 * the transfers couple the stages cyclically unit by unit but never exit
 * by exit.  g is the build's graph, read only for what the log does not
 * say: its task count (every task must be in a unit or a tail), which
 * collectives are one instance (the simulator's rule: process group,
 * sequence, kind, one member a rank), each stage's compute stream's
 * offset from its host thread (the processor of a unit's first task),
 * and, contention on, whether a rank's contended tasks lie on two
 * streams; no time of it is read.  The points' outputs (synth_ueval.step
 * ...) read every task's rows (synth_unit_map.ts ...) and so's steps'
 * first and last tasks.
 * Exact to the nanosecond where it evaluates (test_hier's
 * test_unit_eval holds it against the settled graph).  A unit whose
 * template has a map of any form (a pair's, once made) is read as any.
 *
 * 0: evaluated, ev filled (synth_ueval_free); SYNTH_EVAL_* (> 0): not in
 * its domain, ev empty; PRISM_ENOMEM.
 */
#define SYNTH_EVAL_NOLOG      1 /* no unit log (in->unit_log 0, or no units) */
#define SYNTH_EVAL_UNCOVERED  2 /* a task in no unit or tail (a unit kept kernel by kernel) */
#define SYNTH_EVAL_NOMAP      3 /* a unit or tail without a map (a pair, a tail with a wait) */
#define SYNTH_EVAL_CONTENTION 4 /* contention on, a rank's contended tasks on two streams */
#define SYNTH_EVAL_RENDEZVOUS 5 /* a collective with other members that no map joins */
#define SYNTH_EVAL_CYCLE      6 /* exits left unresolved (never, where the maps are right) */
#define SYNTH_EVAL_GUARD      7 /* under contention, a pair started before its guard */

struct synth_ueval {
	/* Log item i's exits (its map's out order): x[off[i] .. off[i + 1]). */
	int64_t *x;
	uint32_t *off;
	size_t n_items;
	/* Each stage's step ends (its tail's host exit: the closing
	 * synchronize's end), end[rank * n_steps + step]. */
	int64_t *end;
	uint32_t n_ranks, n_steps;
	/* The first step's unit span (settle_out.unit_span_ns: the first
	 * unit's first compute task's start to the last unit's last compute
	 * task's end, so->unit_first/unit_last's first n_units / steps); -1
	 * where a unit's last compute task is not an exit of its map. */
	int64_t span_ns;
	/* The points' outputs (docs/PERFORMANCE.md "The points' outputs
	 * from the evaluator"), as settle.c and metrics.c take them from the
	 * settled graph: each stage's step (step[rank * n_steps + step]) --
	 * its host side from its first host task's start (host_a) to its
	 * closing synchronize's end (host_b), its GPU tasks' first start
	 * (gpu_a; INT64_MAX none) and last end (gpu_b), and metrics.c's
	 * predicted step (pred_ns: the later of the host side and the GPU
	 * side, from gpu_a to the next step's, else to gpu_b); the step time
	 * (settle_out.iter_s: the slowest stage's, the mean over the steps
	 * after the first); each stage's host time a step (its host tasks'
	 * durations but its waits', over the steps: hier.c's point) and the
	 * first step's busy time (settle_out.unit_busy_ns: its compute
	 * stream's tasks inside the span, a unit task's kernels' run). */
	struct synth_ueval_step {
		int64_t host_a, host_b, gpu_a, gpu_b, pred_ns;
	} * step;
	double iter_s;
	int64_t host_ns[LAYOUT_MAX_STAGES], busy_ns[LAYOUT_MAX_STAGES];
	/* settle_out.launch_bound and launch_bound_stage: GPU tasks whose
	 * launch decided their start (sim.c mp_release's binding, a unit
	 * task's held by its launches, a rendezvous' member bound by the
	 * last to arrive). */
	int64_t launch_bound, launch_bound_stage[LAYOUT_MAX_STAGES];
};

int synth_unit_eval(const struct synth_tpl *tpl, const struct synth_out *so, const struct graph *g,
		    struct synth_ueval *ev);
void synth_ueval_free(struct synth_ueval *ev);

/* The layout rules alone, the limits above and LLM_MAX_* first (so that
 * no rule divides by zero or overflows), and the graph's size: 0, or
 * PRISM_EARG naming the rule broken, or PRISM_ELIMIT for a run of more
 * than GRAPH_MAX_TASKS tasks. */
int synth_check(const struct synth_in *in, struct prism_err *err);

/*
 * A lower bound of the simulated iteration time of in's run, from its
 * GEMMs, attention and tensor-parallel collectives alone (each kernel's
 * time is at least its FLOPs at peak over its efficiency; every step holds
 * the pipeline's fill and drain around the last stage's work, all on one
 * stream).  Memory-bound kernels, host costs, pipeline and data-parallel
 * communication only add to it.  0 where a class's cost makes no bound
 * (not timed by FLOPs, or a negative fitted overhead) and with a kernel
 * database (measured times need not lie above the roofline).  docs/MODEL.md
 * gives the argument; prism search --optimise prunes with it.
 */
double synth_lower_bound(const struct synth_in *in);

/* The run description of in (desc.h: desc_write with in's partition
 * resolved and its profile's id) into buf of n bytes. */
void synth_meta(const struct synth_in *in, char *buf, size_t n);

/* Read a run description into in (desc_parse; the profile named goes to
 * in->hw_id; other fields of *in are left alone): 0, or PRISM_EFORMAT
 * naming the field. */
int synth_meta_parse(const char *s, struct synth_in *in, struct prism_err *err);

#endif
