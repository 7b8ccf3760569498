/*
 * predict.h - one candidate, end to end: synthesise its graph, simulate
 * it, and derive what users compare layouts by.
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
#include "mem.h"
#include "settle.h"
#include "synth.h"

struct predict_out {
	double iter_s, bubble, tokens_per_s, mfu, gpu_hours;
	double exposed_compute_s, exposed_comm_s, overlap_s, idle_s; /* settle.h */
	double global_batch; /* sequences per iteration */
	int gpus;
	uint32_t tasks, kernels;
	uint32_t kdb_exact, kdb_interpolated; /* synth_out's */
	struct mem_est mem;
};

/*
 * Predict the run `in` describes.  keep_g / keep_so, when not NULL, receive
 * the settled graph and its bookkeeping (for timelines and traces; free
 * with graph_free / synth_out_free).  0, or the error of synth_build or
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

/* The derived figures from an iteration time (used by predict_synth and
 * by the analytic screen). */
void predict_derive(const struct synth_in *in, double iter_s, struct predict_out *out);

#endif
