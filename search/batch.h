/*
 * batch.h - a sweep's search, batch by batch: what prism search does
 * between loading a sweep and storing its rows, without the command line,
 * the database or MPI (the caller's, search/cmd_search.c), so that each
 * step can be tested alone.
 *
 *   batch_space    every candidate of the sweep once, judged (sweep.h):
 *                  the rejected ones' indices, and the pending ones as
 *                  small refs, ranked best-first by their analytic
 *                  estimate per GPU count (ties in the sweep's order) and
 *                  taken stage by stage: each count's best estimate, then
 *                  each count's next 2, next 4, ...
 *   batch_plan     the batches' sizes: at most N, and no batch holds two
 *                  stages of one GPU count (the ramp)
 *   batch_make     a batch of refs made into candidates, each screened
 *                  against the best simulated time at its GPU count so far
 *   batch_simulate the batch's candidates this process owns simulated by
 *                  the threads, the costliest first
 *   batch_best_add the batch's simulated times into the best per GPU count
 *
 * Which candidates are screened depends on the mode and on the batch size
 * (the best times change between batches only), never on the threads or
 * processes.  The ramp has each GPU count's best estimate simulated
 * before the rest of its count is judged, against the best of its first
 * 1, 3, 7, 15, ... (a count's screening depends only on the best at its
 * own count: the counts' stages share batches).  batch_space's arrays are
 * the caller's to release (batch_space_release).
 */
#ifndef PRISM_BATCH_H
#define PRISM_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "imap.h"
#include "pool.h"
#include "progress.h"
#include "sweep.h"

enum batch_mode {
	BATCH_SCREEN,	 /* by the bound, and by the analytic estimate's margin */
	BATCH_OPTIMISE,	 /* by the proven bound alone: the exhaustive run's best */
	BATCH_EXHAUSTIVE /* nothing screened */
};

/* "screen", "optimise", "exhaustive" (what the database records). */
const char *batch_mode_name(int mode);

/* A candidate to evaluate, without its struct cand (made again when its
 * batch comes, from the index and what its judging found:
 * sweep_candidate_placed): a sweep of millions of candidates holds 40
 * bytes for each, not kilobytes. */
struct batch_ref {
	uint32_t index; /* in the sweep's space (sweep_candidate) */
	int gpus;
	double analytic_s, bound_s;
	double clock;	/* its step's own clock, the judging's estimate's
			 * (synth_in.clock; 0: the reference): its build
			 * estimated it again */
	uint32_t place; /* its placement, places[place - 1] (0: made again) */
	uint32_t mem;	/* its memory, mems[mem - 1] (0: estimated again) */
};

struct batch_space {
	struct batch_ref *order; /* pending candidates, best-first */
	size_t norder;
	/* The pending candidates' distinct placements (sweep_placement: a
	 * placement's own fields), each once: the judging made them, and
	 * making them again was a dry run of the layer, the embedding and
	 * the head per candidate (a balanced partition). */
	struct layout *places;
	size_t nplaces;
	/* Each pending candidate's memory as the judging estimated it
	 * (sweep_memory), in the sweep's order: estimating it again when
	 * its batch comes was a walk of every stage's schedule a candidate,
	 * against 160 bytes kept. */
	struct mem_est *mems;
	size_t nmems;
	uint32_t *rejected;	  /* invalid or out of memory: their indices */
	uint8_t *rejected_status; /* and their status (CS_INVALID, CS_OOM) */
	size_t nrejected;
	long n;			/* candidates in all */
	char first_reason[160]; /* the first candidate's verdict ("none": pending) */
};

/* Every candidate of sw, made by the pool's threads a chunk at a time: 0,
 * or PRISM_ENOMEM.  Release with batch_space_release. */
int batch_space(const struct sweep *sw, struct pool *pool, struct batch_space *sp,
		struct prism_err *err);
void batch_space_release(struct batch_space *sp);

/*
 * The sizes of the batches that take order[0..n) (batch_space's order,
 * the whole of it: a resumed sweep plans the batches it ran, then drops
 * those stored) into sizes[] (n entries at most): how many.  A batch ends
 * at bsize candidates and, unless mode is BATCH_EXHAUSTIVE (nothing to
 * screen), before a candidate of a GPU count whose earlier stage it holds
 * -- the rank-th candidate of a count (0: its best estimate) is of stage
 * floor(log2(rank + 1)).
 */
size_t batch_plan(const struct batch_ref *order, size_t n, int bsize, int mode, int *sizes);

/* The refs of order[0..*n) that stored[] (one a ref) does not mark kept in
 * place (*n: how many), and sizes[0..nb) (batch_plan's) each less its
 * stored ones, those left with none dropped: how many batches are left.
 * A killed run stored a prefix of its batches: the rest are walked as
 * they were planned. */
size_t batch_unstored(struct batch_ref *order, size_t *n, int *sizes, size_t nb,
		      const char *stored);

/* The best simulated time per GPU count of each setting -- profile (its
 * index in sweep.hw) and sequence length: a faster GPU's or a shorter
 * sequence's time screens none of another's (0: none yet). */
#define BATCH_MAX_BEST (SWEEP_MAX_LIST * 32)
struct batch_best {
	int gpus[BATCH_MAX_BEST], hw[BATCH_MAX_BEST], seq[BATCH_MAX_BEST];
	double t[BATCH_MAX_BEST];
	int n;
};

/* The entry of gpus on profile hw at sequence length seq (added at 0
 * where new), or NULL when full (nothing is screened by it then). */
double *batch_best_of(struct batch_best *b, int gpus, int hw, int seq);

/* Each simulated candidate of c[0..n) into b. */
void batch_best_add(struct batch_best *b, const struct cand *c, int n);

/* Screen k against best, the best simulated time at its GPU count and
 * setting (0:
 * none): the bound is proven (a simulated time cannot be below it), so a
 * candidate whose bound is no better cannot win; the analytic margin is a
 * heuristic, used in BATCH_SCREEN only. */
void batch_screen(struct cand *k, int mode, double best, double margin);

/* refs[0..n) made into batch[0..n) by the pool's threads (their
 * placements from places and their memory from mems, batch_space's, where
 * they have them; NULL: each made again) and screened (mode, best, sw's margin), those left to
 * simulate given their canonical keys (sweep_canon_key; the others 0);
 * each screened one counted on pg where not NULL. */
void batch_make(const struct sweep *sw, struct pool *pool, const struct batch_ref *refs, int n,
		const struct layout *places, const struct mem_est *mems, int mode,
		struct batch_best *best, struct cand *batch, struct progress *pg);

/* The relative cost of simulating k: its pipeline units up to the few
 * microbatches its steady state is drawn through (sim/eval/hier.h). */
double batch_cost(const struct cand *k);

/* A candidate of a batch to simulate, and its cost. */
struct batch_job {
	double cost;
	int i;
};

/*
 * The simulations kept for twins to follow (sweep_canon_key): each
 * simulated candidate with a canonical key, the first of its key, by that
 * key with its index (sweep_same_graph_at checks a follower against it);
 * and one batch's scratch: its first pending candidate of each key, and
 * whom each follows.  Zero it to start; release with batch_twins_release.
 */
struct batch_kept {
	struct predict_out p;
	int64_t index;
};
struct batch_twins {
	struct imap at; /* canonical key (its top 63 bits) -> its place in kept */
	struct batch_kept *kept;
	size_t n, kcap;
	/* One batch: its first place of each key, and each place's leader
	 * in the batch (-1: none). */
	struct imap first;
	int *lead;
	size_t lcap;
};
void batch_twins_release(struct batch_twins *tw);

/* The candidates of batch[0..n) whose owner is rank simulated by up to
 * threads of the pool's threads, the costliest first (a thread left with one long
 * candidate at the batch's end idles the others; the rows do not depend
 * on the order); each counted on pg where not NULL.  work: n entries of
 * scratch.  scr: a predict_scratch per pool thread (pool_threads), kept by
 * the caller from batch to batch, or NULL (each simulation its own).  A
 * failure is a candidate with status CS_FAILED and its reason. */
void batch_simulate(const struct sweep *sw, struct pool *pool, struct cand *batch, int n,
		    const int *owner, int rank, int threads, struct batch_job *work,
		    struct progress *pg, struct predict_scratch *const *scr);
/* batch_simulate, a candidate whose twin (the same canonical input:
 * sweep_canon_key, made by batch_make) this process simulated -- in tw
 * from an earlier batch, or in this one first -- given its twin's
 * prediction instead of a simulation of its own (the one simulation at the
 * twins' clock, sweep_twin_clock, whichever runs it); this batch's simulations
 * kept in tw (out of memory: tw emptied, the predictions the same).  tw
 * NULL: batch_simulate. */
void batch_simulate_twins(const struct sweep *sw, struct pool *pool, struct cand *batch, int n,
			  const int *owner, int rank, int threads, struct batch_job *work,
			  struct progress *pg, struct batch_twins *tw,
			  struct predict_scratch *const *scr);

#endif
