/*
 * sweep.h - a search space from a libconfig file, and its candidates.
 *
 * A sweep file (in configs/sweeps/, each commented as its own manual)
 * names the base -- a model configuration, or a trace (or saved graph):
 * annotated (its kernels calibrate the costs) or plain (candidates are
 * graph edits of it, predict.h) -- and the hardware (a profile, or a list
 * of them: each an axis of the sweep, with its price), the GPU counts (a
 * list, or a budget: every power of two up to it), the global batch in
 * sequences, and for each sweep knob of layout.h (LK_SWEEP: tp, pp, mbs,
 * schedule, vp, ..., cp, seq) a list under space.ID; optionally a kernel
 * database (kernel_db, from prism calibrate --db) for kernel times, and
 * the tokens to train and the price of a GPU-hour (tokens,
 * price_per_gpu_hour) for the report's days and cost.  dp follows from the
 * GPU count (gpus / (tp x pp x cp)), the microbatch count from the global
 * batch (global / (dp x mbs)).
 *
 * Candidates are made one at a time from their index in the space
 * (sweep_candidate), each with its verdict: a candidate that breaks a rule
 * is stored as invalid with the rule, one that does not fit in memory as
 * oom.
 */
#ifndef PRISM_SWEEP_H
#define PRISM_SWEEP_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "hw.h"
#include "llm.h"
#include "predict.h"
#include "synth.h"

#define SWEEP_MAX_LIST 32

/* A sweep list's value for "the base's" (knobs with LK_BASE it lists none of). */
#define SWEEP_BASE INT_MIN

struct sweep_list {
	int v[SWEEP_MAX_LIST];
	int n;
};

#define SWEEP_MAX_BASE	      64
#define SWEEP_MAX_HW	      8		/* hardware profiles in one sweep */
#define SWEEP_NAME_MAX	      63	/* bytes of a sweep's name */
#define SWEEP_MAX_BATCH	      (1 << 24) /* global_batch, sequences */
#define SWEEP_MAX_BATCH_SCALE 1024	/* global_batch_scale: a plain trace's global batch times */

struct sweep {
	char path[512];
	char name[SWEEP_NAME_MAX + 1]; /* sweep_name_ok */
	char model_name[128];
	/* The target hardware: 'hw', one profile or a list (hw_list: a
	 * candidate's key then names its profile, and each profile is an axis
	 * slower than the GPU count), each with the price of its GPU-hour
	 * (the sweep's price_per_gpu_hour, one or one per profile, else the
	 * profile's; 0: not known). */
	char hw_name[SWEEP_MAX_HW][128];
	struct hw_profile hw[SWEEP_MAX_HW];
	double hw_price[SWEEP_MAX_HW];
	int n_hw, hw_list;
	char base_hw[128]; /* 'base_hw' or search --base-hw: the base's
			    * hardware where the trace does not say ("": its
			    * GPU's profile, or the first hw for a model) */
	struct llm m;
	/* A trace base: its files (the ranks of one job, or a saved graph).
	 * n_base == 0: the base is the model, with synth_in_default's costs. */
	char *base[SWEEP_MAX_BASE];
	int n_base;
	int base_dp;	      /* 'base_dp': a plain trace's data-parallel
				   * degree (0: its world size) */
	double base_step_s;   /* 'base_step_ms': the trace base's step without
			       * the profiler (0: as traced) */
	struct base bl;	      /* the base (base.h); do not move a sweep */
	struct synth_in tmpl; /* every candidate starts from it: the base's
				   * configuration (a plain trace's as found) */
	char kdb_path[1024];  /* 'kernel_db': measured kernel times, or "" */
	struct kdb *kdb;      /* loaded from it, or NULL */
	char fingerprint[64]; /* of the base's bytes (model file or traces)
				   * and the kernel database's */
	/* What its rows depend on beyond its own text, one line each, "WHAT
	 * HASH" (the same sweep resumed with another is refused: store.h):
	 * "prism VERSION" (cli_version), "model H" (the model file's settings
	 * as libconfig writes them back: comments and layout aside) or "base
	 * H" (the traces' bytes), "hw:ID H" (the hardware profile's settings
	 * but its kernel model), "kernels:ID H" (the profile's 'kernels'
	 * group: the kernel model), "kernel_db H" (the kernel database's rows).
	 * H: FNV-1a, 64 bits, "fnv1a64:" and 16 hex digits. */
	char inputs[1024];
	int global_batch;      /* sequences; 0 on a plain trace base: each candidate
				    * keeps the trace's own (mbs x microbatches x dp) */
	int global_batch_line; /* of 'global_batch', 1 if absent */
	int batch_scale;       /* 'global_batch_scale' (a plain trace base): the
				    * trace's own global batch times this; 0: not given */
	int batch_scale_line;
	double tokens;		   /* 'tokens': to train, for days and cost; 0: not given */
	double price_per_gpu_hour; /* 'price_per_gpu_hour' (one for every profile), any
				    * currency; 0: not given (or one per profile) */
	double margin;		   /* screen candidates beyond best x (1 + margin) */
	double imbalance;	   /* 'moe_imbalance': the busiest expert's tokens over
				    * the mean, every candidate (1: balanced) */
	int gpus_line;		   /* of 'gpus' or 'gpu_budget' */
	struct sweep_list gpus;
	/* Each sweep knob's values (layout.h's LK_SWEEP knobs; space.ID), in
	 * the order listed: SWEEP_BASE where the sweep keeps the base's. */
	struct sweep_list knob[LK_N];
	/* The knobs a candidate's index varies, slowest first (their digits;
	 * vp rides with the schedule: one axis), and how many. */
	int order[LK_N];
	int n_order;
	char *text;  /* the file's text, stored with the results */
	char *canon; /* its settings as libconfig writes them back: no
		      * comments, one layout (sweep_canon) */
};

enum cand_status { CS_PENDING, CS_INVALID, CS_OOM, CS_SCREENED, CS_SIMULATED, CS_FAILED };

struct cand {
	struct synth_in in;
	int gpus;
	int hw;	      /* index of its profile in sweep.hw (in.hw points there) */
	double price; /* of its GPU-hour (sweep.hw_price); 0: not known */
	char key[320];
	int status;
	char reason[160];
	double analytic_s;
	double bound_s;	      /* synth_lower_bound: the simulated time is >= it */
	struct predict_out p; /* when simulated */
	/* in.lay as placed (synth_mem_layout) where its memory was estimated
	 * (placed.pp > 0; else zero): its row's knobs show it, placed once. */
	struct layout placed;
	/* Its index, and the key of its canonical input where another
	 * candidate of the sweep may share it (sweep_canon_key; 0: none),
	 * where the search made it (batch_make). */
	int64_t index;
	uint64_t canon;
};

/* Load a sweep: 0, or PRISM_EIO / PRISM_EFORMAT naming the file, line and
 * setting.  Release with sweep_release. */
int sweep_load(const char *path, struct sweep *s, struct prism_err *err);
/* sweep_load with the base's hardware named (search --base-hw; NULL: the
 * file's base_hw, if any), which the file's base_hw then must not
 * contradict. */
int sweep_load_hw(const char *path, const char *base_hw, struct sweep *s, struct prism_err *err);
void sweep_release(struct sweep *s);

/* The most candidates a sweep may have (its lists' product): sweep_load
 * refuses more.  Candidates are made one at a time (sweep_candidate), never
 * all at once; what stays per candidate is a few bytes. */
#define SWEEP_MAX_CANDIDATES (1u << 22)

/* The settings of sweep file text as libconfig writes them back (comments
 * and layout gone): two texts that differ only there are one sweep.  0
 * (*out: a string to free), PRISM_EFORMAT (text does not parse: *out
 * NULL) or PRISM_ENOMEM. */
int sweep_canon(const char *text, char **out);

/* The size of s's candidate space: the product of its lists (vp counted
 * with the interleaved schedule only), UINT64_MAX when beyond 64 bits. */
uint64_t sweep_count(const struct sweep *s);

/* The inputs of sweep.inputs's form that differ between was (recorded)
 * and now, for a message into buf (n bytes): "the hardware profile
 * h100-dgx (hw:h100-dgx)", several joined by "; ".  Returns how many (0:
 * the same inputs). */
int sweep_inputs_diff(const char *was, const char *now, char *buf, size_t n);

/*
 * Candidate index (0 .. sweep_count(s) - 1) of s, in the order of nested
 * loops over the profiles, gpus and the knobs by their digits (layout.h;
 * schedule and vp one loop): 0 with *c filled and judged (an invalid one marked
 * with status and reason, the analytic estimate and bound of a valid one),
 * or 1 when index is no candidate (sp = 1 without tp repeats sp = 0).
 */
int sweep_candidate(const struct sweep *s, uint64_t index, struct cand *c);

/* sweep_candidate without the key (c->key ""): the verdict, its estimate
 * and bound, for a pass over the whole space that keeps no row
 * (batch_space; its key is formatted when the row is made). */
int sweep_verdict(const struct sweep *s, uint64_t index, struct cand *c);

/* What judging a pending candidate found that making it again would
 * estimate again: its analytic estimate, its bound, and its step's own
 * clock (c->in.clock: the same estimate's, analytic_step_clock; 0: the
 * reference). */
struct sweep_judged {
	double analytic_s, bound_s, clock;
};

/* A pending candidate made again from what sweep_candidate judged it (j):
 * the same struct cand, without the closed forms the judging ran (the
 * search keeps a few bytes a pending candidate between the two,
 * batch.h).  Only for an index that sweep_candidate judged pending with
 * these values: 0, or 1 as sweep_candidate's. */
int sweep_candidate_pending(const struct sweep *s, uint64_t index, const struct sweep_judged *j,
			    struct cand *c);

/* A pending candidate's placement (c->placed, synth_mem_layout) as its
 * own fields alone -- partition, part[], part_chunks, part_first,
 * part_last, part_mtp -- into p (the rest zero): 1 where c->placed is
 * c->in.lay but those (so that sweep_candidate_placed makes it again from
 * them), else 0.  Candidates share few placements: the search keeps each
 * distinct one once (batch.h). */
int sweep_placement(const struct cand *c, struct layout *p);

/* sweep_candidate_pending with its placement's fields given (p, from
 * sweep_placement of the same candidate): the placement not made again;
 * and its memory where mem is not NULL (the judging's, sweep_memory's of
 * the same candidate), else estimated again. */
int sweep_candidate_placed(const struct sweep *s, uint64_t index, const struct sweep_judged *j,
			   const struct layout *p, const struct mem_est *mem, struct cand *c);

/* A judged candidate's memory (c->p.mem) into m: 1 where the judging
 * estimated it (its placement made: sweep_candidate_placed's mem), else
 * 0 (a plain trace's, or an invalid one's). */
int sweep_memory(const struct cand *c, struct mem_est *m);

/*
 * Twins: candidates whose simulations are provably one another's, those
 * whose canonical inputs (synth_canonical: the input that builds the same
 * graph task for task) are equal byte for byte -- a balanced partition
 * placed evenly and "even"; with one microbatch GPipe and 1F1B, and there
 * ZeRO-1 and ZeRO-2 reduced during the backward (not FSDP).  synth says
 * which inputs build the same graph; the search only looks them up.  The
 * memory estimate may differ: a twin's prediction is derived again for c
 * (predict_derive).  So may the clock each twin's own estimate gives
 * (synth_in.clock, the judging's): the canonical inputs are compared
 * without it, and the one simulation runs at the clock of the canonical
 * input's own estimate (sweep_twin_clock), whichever twin runs it -- the
 * same graph draws the same power, and the rows do not depend on the
 * order the twins come in.
 *
 * sweep_canon_key: c's canonical input hashed (never 0) where another of
 * s's candidates may share it -- c pending, a knob that synth_canonical
 * set is one that s lists more than one value of, and c predicted by
 * building it (a model, or a base's rebuild: not a trace's replay or
 * edit) -- else 0.  Equal keys are a hint: sweep_same_graph says.
 */
uint64_t sweep_canon_key(const struct sweep *s, const struct cand *c);
/* 1 where a's and b's canonical inputs are equal but for their clocks
 * (their keys nonzero: each is predicted by building it). */
int sweep_same_graph(const struct cand *a, const struct cand *b);
/* The clock c's twins (c->canon nonzero) are simulated at: its canonical
 * input's own (analytic_step_clock of synth_canonical's input at the
 * reference clock), c->in.clock where c is that input. */
double sweep_twin_clock(const struct cand *c);
/* sweep_same_graph of c and candidate index of s (pending). */
int sweep_same_graph_at(const struct sweep *s, const struct cand *c, uint64_t index);

/* Only candidate index's key (what store_keys lists) into key[0..n): 0,
 * or 1 when index is no candidate. */
int sweep_key(const struct sweep *s, uint64_t index, char *key, size_t n);

const char *cand_status_name(int status);

/* 1 when name may name files (results/NAME.db, results/NAME/): 1 to
 * SWEEP_NAME_MAX bytes, one path component (no '/'), not starting with
 * '.' (so neither "." nor ".." nor hidden), no control characters. */
int sweep_name_ok(const char *name);

#endif
