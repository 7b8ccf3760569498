/*
 * base.h - the base of whatif and search, from what the user named: a
 * model (a file, or a name in configs/models/), the trace files of a job's
 * ranks, or a saved graph.
 *
 * A trace with a run description (prism::model#, written by prism synth,
 * scripts/collect_trace.py and scripts/gpt_bench.py) is an annotated
 * base: the description says what ran, and costs are fitted on its
 * kernels.  Any other trace is a plain base: prism works with what it
 * finds in it (predict.h).  The hardware: a model's is named (hw or
 * base_hw); a trace's is its description's, else base_hw, else the
 * profile for its GPU's name.
 */
#ifndef PRISM_BASE_H
#define PRISM_BASE_H

#include "build.h"
#include "kdb.h"
#include "predict.h"

struct base {
	struct predict_base pb; /* in.hw points into it: do not move a base */
	struct graph *g;	/* the base graph (traces), owned */
	char model_path[1024];	/* a model's file, "" for traces */
};

struct base_opts {
	const char *hw;	     /* hardware named for the candidate (a model's base
			      * too, without base_hw), or NULL */
	const char *base_hw; /* the base's hardware, or NULL */
	int base_dp;	     /* a plain trace's data-parallel degree, 0: its
			      * world size */
	const char *ranks;   /* --rank of the trace files, or NULL */
	const struct build_opts *bo;
	const struct kdb *kdb; /* kernel times for synthesised candidates */
	double base_step_s;    /* a trace's step timed without the profiler:
				* its host tasks scaled to it
				* (predict_match_step), 0: as traced */
	const char *step_name; /* how the user gave it, for errors:
				* "--base-step-ms" (NULL) or "base_step_ms" */
};

/* 1 when arg names a model rather than a trace or graph file. */
int base_is_model(const char *arg);

/*
 * Load the base named by paths[0..n) and make its own prediction
 * (predict_base_init).  0, or the error (the file and what is wrong with
 * it).  Release with base_release, also after a failure.
 */
int base_load(struct base *b, char *const *paths, int n, const struct base_opts *o,
	      struct prism_err *err);
void base_release(struct base *b);

#endif
