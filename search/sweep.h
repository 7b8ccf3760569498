/*
 * sweep.h - a search space from a libconfig file, and its candidates.
 *
 * A sweep file (in configs/sweeps/, each commented as its own manual)
 * names the base -- a model configuration, or an annotated trace (or saved
 * graph) whose kernels calibrate the costs -- and the hardware, the GPU counts (a list, or a budget:
 * every power of two up to it), the global batch in sequences, and for
 * each knob a list: tp, pp, mbs, schedule, vp, recompute, zero, sp, layers,
 * hidden, dtype (the linear layers' GEMMs), fp8_attention, flash,
 * partition, shard, prefetch, bucket_mb, overlap_grad, overlap_param,
 * tp_overlap, pp_overlap; optionally a kernel database
 * (kernel_db, from prism calibrate --db) for kernel times, and the tokens to train and the price of a
 * GPU-hour (tokens, price_per_gpu_hour) for the report's days and cost.  dp follows from the GPU count (gpus / (tp x pp)), the microbatch
 * count from the global batch (global / (dp x mbs)).
 *
 * Enumeration keeps every point with its verdict: a candidate that breaks
 * a rule is stored as invalid with the rule, one that does not fit in
 * memory as oom.
 */
#ifndef PRISM_SWEEP_H
#define PRISM_SWEEP_H

#include <stddef.h>

#include "hw.h"
#include "llm.h"
#include "predict.h"
#include "synth.h"

#define SWEEP_MAX_LIST 32

struct sweep_list {
	int v[SWEEP_MAX_LIST];
	int n;
};

#define SWEEP_MAX_BASE 64
#define SWEEP_NAME_MAX 63 /* bytes of a sweep's name */
#define SWEEP_MAX_BATCH (1 << 24) /* global_batch, sequences */

struct sweep {
	char path[512];
	char name[SWEEP_NAME_MAX + 1]; /* sweep_name_ok */
	char model_name[128], hw_name[128];
	struct llm m;
	struct hw_profile hw;     /* the target hardware */
	/* A trace base: its files (the ranks of one job, or a saved graph),
	 * the hardware it ran on, and the configuration it describes with
	 * costs fitted on its kernels (cli_base, cli_fit).  n_base == 0: the base
	 * is the model, with synth_in_default's costs. */
	char *base[SWEEP_MAX_BASE];
	int n_base;
	struct hw_profile base_hw;
	struct synth_in tmpl;     /* every candidate starts from it */
	char kdb_path[1024];      /* 'kernel_db': measured kernel times, or "" */
	struct kdb *kdb;          /* loaded from it, or NULL */
	char fingerprint[64];     /* of the base's bytes (model file or traces)
				   * and the kernel database's */
	int global_batch;
	double tokens;            /* 'tokens': to train, for days and cost; 0: not given */
	double price_per_gpu_hour; /* 'price_per_gpu_hour', any currency; 0: not given */
	double margin;            /* screen candidates beyond best x (1 + margin) */
	int gpus_line;            /* of 'gpus' or 'gpu_budget' */
	struct sweep_list gpus, tp, pp, mbs, schedule, vp, recompute, zero, sp, layers, hidden;
	struct sweep_list dtype, fp8_attention, flash;
	/* Placement, sharding and overlap (issue 17): partition (enum
	 * synth_part: even, balanced, embed-loss), the ZeRO sharding group
	 * (0: the data-parallel group), ZeRO-3's prefetch, gradient buckets
	 * (MB; 0: Megatron's), and the overlaps, each 0 or 1. */
	struct sweep_list partition, shard, prefetch, bucket_mb, overlap_grad, overlap_param,
		tp_overlap, pp_overlap;
	char *text;               /* the file's text, stored with the results */
};

enum cand_status { CS_PENDING, CS_INVALID, CS_OOM, CS_SCREENED, CS_SIMULATED, CS_FAILED };

struct cand {
	struct synth_in in;
	int gpus;
	char key[320];
	int status;
	char reason[160];
	double analytic_s;
	double bound_s;       /* synth_lower_bound: the simulated time is >= it */
	struct predict_out p; /* when simulated */
};

/* Load a sweep: 0, or PRISM_EIO / PRISM_EFORMAT naming the file, line and
 * setting.  Free with sweep_free. */
int sweep_load(const char *path, struct sweep *s, struct prism_err *err);
void sweep_free(struct sweep *s);

/* Every candidate of s, with invalid ones marked (status and reason) and
 * the analytic estimate of the valid ones; *out malloc'd.  Returns the
 * count, or -1 when out of memory. */
long sweep_enumerate(const struct sweep *s, struct cand **out);

const char *cand_status_name(int status);

/* 1 when name may name files (results/NAME.db, results/NAME/): 1 to
 * SWEEP_NAME_MAX bytes, one path component (no '/'), not starting with
 * '.' (so neither "." nor ".." nor hidden), no control characters. */
int sweep_name_ok(const char *name);

#endif
