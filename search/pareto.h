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
};

/* Knob id of row r, as a whole number; its name (LK_NAME knobs). */
#define PARETO_KV(r, id)    ((int)(r)->v[LK_##id])
#define PARETO_KNAME(r, id) layout_knobs[LK_##id].name(PARETO_KV(r, id))

/* Which names of one run were collapsed: same run differing in ZeRO
 * stage, recompute, schedule (pp 1), several of these. */
enum { PARETO_SAME_ZERO, PARETO_SAME_RECOMPUTE, PARETO_SAME_SCHEDULE, PARETO_SAME_SEVERAL };

struct pareto {
	struct pareto_row *rows; /* simulated, by gpus, iter_s, key */
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

/* Sweep sid's simulated rows of db into P->rows (by gpus, iter_s, key),
 * rows store_rows_check found within what prism writes: 0, -1 when out of
 * memory, or the SQLite code (> 0) when they cannot be read. */
int pareto_read(sqlite3 *db, long long sid, struct pareto *P);

/* Rank P's rows (sorted by gpus, iter_s, key) with near-tie fraction tie:
 * the best of each GPU count, the rows that are one run under several
 * names collapsed into the simplest (same time and memory to the bit,
 * differing only in ZeRO stage, recompute, or without a pipeline the
 * schedule), the near-ties, the fronts.  0, or -1 when out of memory. */
int pareto_rank(struct pareto *P, double tie);

/* Near-ties of best row k (collapsed rows not counted). */
int pareto_near_ties(const struct pareto *P, size_t k);

void pareto_release(struct pareto *P);

#endif
