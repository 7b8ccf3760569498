/*
 * analytic.h - a closed-form iteration time for screening layouts.
 *
 * Per pipeline stage and microbatch: compute = the kernel model's time of
 * the stage's layers (kperf.h through synth_layer_times: GEMMs by shape,
 * attention, memory-bound passes, FP8 casts, recomputation) and its share
 * of the logits, over compute_eff; tensor-parallel all-reduces, 2
 * per layer forward and 2 backward (Megatron), of the b s h activations;
 * point-to-point activations between stages (with pp_overlap on the fill
 * and drain, not in the slot).  The pipeline runs m slots of its slowest
 * stage after the fill (the stages before it, their forwards) and before
 * the drain (their backwards, ZB's held W passes beside it), over v
 * virtual stages, at the stages' GPU side where their host's launches
 * set the slot, a host-bound stage's host absorbing the fill as far as
 * it runs ahead (ZB-V and DualPipeV: m + (p-1)/v slots, Qi et al.'s
 * scale); each stage's tail after its own end.  Then the data-parallel
 * gradient reductions the last backward's buckets leave after it (their
 * chain on the data-parallel stream, the last, first layers' and
 * embedding's, reduced after the backward), the weights' gathers, and the optimizer
 * step, its kernels as synth builds them (its clipping passes with the
 * update: synth_stage_host's opt_gpu_s).  Activation offloading adds the waits for its
 * copies over the host link (synth_offload_exposed).  A unit's forward
 * and backward each take the longer of their GPU side and the host's
 * launches (synth_layer_host, synth_extra_host: kernels, collectives,
 * events), the optimizer the longer of its own and its launches'
 * (synth_stage_host).  Without flash attention (lay.flash = 0) the
 * layers' time holds the passes over the materialised attention scores.
 * The terms are timed at the run's reference clock; where the profile
 * states a power balance, the step's own mix (its busiest GPU's
 * compute-heavy, memory-bound and waiting time) sets its clock, and the
 * compute-heavy terms are rescaled to it (analytic_out.clock).
 * Microseconds per evaluation; docs/MODEL.md gives every term.
 */
#ifndef PRISM_ANALYTIC_H
#define PRISM_ANALYTIC_H

#include "comm.h"
#include "hw.h"
#include "llm.h"
#include "mem.h"

struct analytic_in {
	struct llm m;
	const struct hw_profile *hw;
	double global_batch;   /* sequences per iteration */
	struct layout lay;     /* the layout (layout.h); its microbatches are
				* derived from global_batch */
	double compute_eff;    /* the kernel model's speed is divided by it (1: as
			       * modelled; below 1 slower) */
	double comm_eff;       /* scales the profile's bus efficiencies (comm.h) */
	double acc_elem_bytes; /* > 0: each microbatch after the first adds its
				* gradients, as synth_in.acc_elem_bytes; 0 (the
				* default): the framework's (synth_acc_bytes) */
	int no_mem;	       /* 1: analytic_out.mem left zero (a caller that
				* has the memory estimate already: a sweep's
				* judging) */
};

struct analytic_out {
	int microbatches;
	double t_iter;	  /* seconds */
	double t_slot;	  /* one microbatch on one stage, fwd + bwd */
	double t_compute; /* of which compute */
	double t_tp;	  /* of which tensor-parallel communication */
	double t_p2p;	  /* of which pipeline sends */
	double t_offload; /* of which waits for activation offloading's copies
			   * (synth_offload_exposed) */
	double t_bubble;  /* fill and drain (the stages' GPU side: a host-bound
			   * stage's host runs on through them) */
	double t_dp;	  /* data-parallel all-reduce */
	double t_dp_exposed;
	double t_opt;
	double clock;	    /* the step's clock (a fraction of the burst):
			     * the run's reference clock (hw_run_clock at
			     * the layout's dtype and cap) moved by the power
			     * balance at the step's own mix (hw_mix_clock:
			     * its busiest GPU's compute-heavy, memory-bound
			     * and waiting time), which the times above are
			     * at; the reference clock where the profile
			     * states no balance (synth_in.clock takes it) */
	double model_flops; /* per iteration, without recomputation */
	double mfu;	    /* model FLOPs / (time x GPUs x peak) */
	double tokens_per_s;
	struct mem_est mem;
};

/* Defaults: bf16, kernels as modelled (compute_eff 1), collectives as the
 * profile says (comm_eff 1), flash attention. */
void analytic_in_default(struct analytic_in *in);

/* 0, or PRISM_EARG with err saying which rule the layout breaks: the
 * global batch not divisible by mbs x dp, or a rule of layout_check (with
 * the microbatches the batch gives): an infeasible layout. */
int analytic_estimate(const struct analytic_in *in, struct analytic_out *out,
		      struct prism_err *err);

/* The estimate's input for the run in describes: its model and profile,
 * its layout placed (synth_mem_layout), its global batch (mbs x
 * microbatches x dp), its gradient adds; the time only (no_mem),
 * compute_eff 1. */
struct synth_in;
void analytic_in_of(const struct synth_in *in, struct analytic_in *ai);

/* The clock in's step runs at (synth_in.clock; docs/MODEL.md, "Sustained
 * rates"): in->clock where set (a sweep's candidate: its screen's
 * estimate), else the clock one estimate of in's own description gives
 * (analytic_in_of; analytic_out.clock; the last input's kept per thread),
 * 0 where its profile states no balance (the reference clock).
 * predict_synth builds at it, and a graph edit takes each side at its
 * own, so that an edit's two sides and synth's own build agree. */
double analytic_step_clock(const struct synth_in *in);

#endif
