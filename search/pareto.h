/*
 * pareto.h - a sweep's results ranked: the simulated rows of the results
 * database, the best per GPU count, the names of one run collapsed, the
 * near-ties, and the Pareto fronts of time and GPU-hours against GPU count.
 * What prism report shows (search/cmd_report.c writes it), apart from how
 * it is written, so that the ranking can be tested on rows made by hand.
 *
 * A row holds the knobs the database stores (layout.h's LK_STORE knobs,
 * each a column under its id, in the CSV's order after gpus); a database
 * from before a knob's column reads it as the knob's default (what its
 * candidates ran).  Names (LK_NAME) are read back to their numbers (-1:
 * not a name prism knows, shown as "?"), so that only names prism knows
 * reach a table, a label or the chart; the partition is kept as stored
 * ("even", or the layers of each stage).
 */
#ifndef PRISM_PARETO_H
#define PRISM_PARETO_H

#include <sqlite3.h>
#include <stddef.h>

#include "layout.h"

struct pareto_row {
	char key[320]; /* as cand.key (sweep.h) */
	int gpus;
	double v[LK_N];	     /* each stored knob's value (a name's number; -1: unknown) */
	char partition[128]; /* as stored */
	double iter_s, bubble, tps, mfu, gpuh, mem_gb;
	int at_risk;	/* the memory verdict "at-risk" (mem.h; NULL before it: 0) */
	char part[128]; /* layers per stage where uneven ("" even, or schema < 7) */
	int shard;	/* ZeRO's hybrid group where below dp, else 0 */
	long same_as;	/* the row it is the same run as, or -1 */
	int n_same;	/* rows collapsed into this one */
	int near_tie;	/* a runner-up within the tie threshold of the best */
	/* Its setting: the hardware profile (as stored; "" before the
	 * column) and the sequence length (v[LK_seq]) -- what a sweep over
	 * profiles and seq compares, each ranked apart -- its index in the
	 * order of P's settings, and "b200-dgx, seq 2048" naming what varies
	 * among them ("" where a sweep has one setting). */
	char hw[64];
	double price; /* of its GPU-hour as stored (0: not known) */
	/* The breakdown of its slowest stage's step (settle.h; they add up to
	 * iter_s), s: each -1 where the database holds none. */
	double exp_compute_s, exp_comm_s, overlap_s, idle_s;
	int setting;
	char setting_name[96];
};

/* 1 when a and b are of one GPU count of one setting (ranked together). */
#define PARETO_SAME_COUNT(a, b) ((a)->setting == (b)->setting && (a)->gpus == (b)->gpus)

/* Knob id of row r, as a whole number; its name (LK_NAME knobs). */
#define PARETO_KV(r, id)    ((int)(r)->v[LK_##id])
#define PARETO_KNAME(r, id) layout_knobs[LK_##id].name(PARETO_KV(r, id))

/* Which names of one run were collapsed: same run differing in ZeRO
 * stage, recompute, schedule (pp 1), several of these. */
enum { PARETO_SAME_ZERO, PARETO_SAME_RECOMPUTE, PARETO_SAME_SCHEDULE, PARETO_SAME_SEVERAL };

struct pareto {
	struct pareto_row *rows; /* simulated, by setting, gpus, iter_s, key */
	int settings;		 /* how many (1: one profile, one seq) */
	size_t n;
	size_t *best; /* index of each GPU count's best row */
	size_t nb;
	int *on_time, *on_hours; /* per best: on the time front, on the GPU-hours front */
	double tie;		 /* near-tie fraction */
	int collapsed[4];	 /* by PARETO_SAME_* */
};

/* 1 when knob k is one a row holds (LK_STORE). */
int pareto_knob(int k);

/* How many knobs a row holds. */
int pareto_knobs(void);

/* Knob k of r as text: a name (canonical, or "?"), the partition as
 * stored, or the number. */
void pareto_knob_text(const struct pareto_row *r, int k, char *buf, size_t n);

/* "SELECT key, gpus, <the knobs>, REST" into sql (n bytes): a knob the
 * database lacks (it predates the column), or a NULL in it, reads as the
 * knob's default.  0, or -1 if sql is too small. */
int pareto_select(sqlite3 *db, char *sql, size_t n, const char *rest);

/* Sweep sid's simulated rows of db into P->rows (by setting -- profile,
 * then seq -- gpus, iter_s, key),
 * rows store_rows_check found within what prism writes: 0, -1 when out of
 * memory, or the SQLite code (> 0) when they cannot be read. */
int pareto_read(sqlite3 *db, long long sid, struct pareto *P);

/* Rank P's rows (sorted by setting, gpus, iter_s, key) with near-tie
 * fraction tie: the best of each GPU count of each setting, the rows that are one run under several
 * names collapsed into the simplest (same time and memory to the bit,
 * differing only in ZeRO stage, recompute, or without a pipeline the
 * schedule), the near-ties, the fronts.  0, or -1 when out of memory. */
int pareto_rank(struct pareto *P, double tie);

/* Near-ties of best row k (collapsed rows not counted). */
int pareto_near_ties(const struct pareto *P, size_t k);

/*
 * The families a decision is made between: with or without a pipeline,
 * the ZeRO stage, the tensor-parallel degree.  pareto_family: row r's value
 * in family f (pipeline: 1 where pp > 1, else 0; the ZeRO stage; tp).
 * pareto_family_best: at best k's GPU count, the fastest run (collapsed
 * names left out) of each value of family f into out (at most cap row
 * indices), fastest first, so out[0] is the best itself; how many.
 */
enum { PARETO_FAM_PIPELINE, PARETO_FAM_ZERO, PARETO_FAM_TP, PARETO_FAM_N };
int pareto_family(const struct pareto_row *r, int f);
size_t pareto_family_best(const struct pareto *P, size_t k, int f, size_t *out, size_t cap);

/*
 * Robustness of a choice to the model's usual errors, first order from
 * each row's stored breakdown (no re-simulation):
 *   PARETO_SLOWER_KERNELS  every kernel PARETO_KERNELS_SLOWER slower (GEMMs
 *                          are most of it): the step's compute, and the idle
 *                          time waiting on compute (the bubble), that much
 *                          longer; exposed communication as it was
 *   PARETO_LESS_OVERLAP    PARETO_OVERLAP_LESS of the communication that
 *                          overlapped compute exposed instead
 * pareto_perturbed: row r's iteration time under perturbation p, s; -1
 * where r has no breakdown.
 * pareto_robust: at best k's count, the fastest under p of the
 * PARETO_ROBUST_TOP fastest runs (collapsed names left out): its row
 * index, with *margin (may be NULL) the second fastest's perturbed time
 * over the fastest's, less 1, where the best stays best, or the best's
 * over the new fastest's, less 1, where another wins; -1 when one of them
 * has no breakdown.
 */
enum { PARETO_SLOWER_KERNELS, PARETO_LESS_OVERLAP, PARETO_PERTURB_N };
#define PARETO_KERNELS_SLOWER 0.10
#define PARETO_OVERLAP_LESS   0.20
#define PARETO_ROBUST_TOP     5
double pareto_perturbed(const struct pareto_row *r, int p);
long pareto_robust(const struct pareto *P, size_t k, int p, double *margin);

void pareto_release(struct pareto *P);

#endif
