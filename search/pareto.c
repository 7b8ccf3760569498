/* pareto.c - a sweep's results ranked (pareto.h). */
#include "pareto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vec.h"

int pareto_knob(int k)
{
	return (layout_knobs[k].flags & LK_STORE) != 0;
}

int pareto_knobs(void)
{
	int n = 0;
	for (int k = 0; k < LK_N; k++)
		n += pareto_knob(k);
	return n;
}

void pareto_knob_text(const struct pareto_row *r, int k, char *buf, size_t n)
{
	const struct layout_knob *K = &layout_knobs[k];
	if (K->kind == LK_PART)
		snprintf(buf, n, "%s", r->partition);
	else if (K->kind == LK_NAME)
		snprintf(buf, n, "%s", K->name((int)r->v[k]));
	else if (K->kind == LK_REAL)
		snprintf(buf, n, "%g", r->v[k]);
	else
		snprintf(buf, n, "%d", (int)r->v[k]);
}

/* 1 if db's candidate table has column col. */
static int has_column(sqlite3 *db, const char *col)
{
	sqlite3_stmt *st;
	int found = 0;
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info('candidate') WHERE name=?1", -1,
			       &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, col, -1, SQLITE_STATIC);
	found = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return found;
}

int pareto_select(sqlite3 *db, char *sql, size_t n, const char *rest)
{
	size_t len = (size_t)snprintf(sql, n, "SELECT key, gpus");
	for (int k = 0; k < LK_N && len < n; k++) {
		const struct layout_knob *K = &layout_knobs[k];
		char dflt[64];
		struct layout l;
		if (!pareto_knob(k))
			continue;
		layout_default(&l);
		if (K->home == LK_M) /* the model's: no default of its own */
			snprintf(dflt, sizeof(dflt), "NULL");
		else if (K->kind == LK_NAME)
			snprintf(dflt, sizeof(dflt), "'%s'", K->name((int)K->def));
		else if (K->kind == LK_PART)
			snprintf(dflt, sizeof(dflt), "'even'");
		else
			layout_format(NULL, &l, k, 1, dflt, sizeof(dflt));
		if (has_column(db, K->id))
			len +=
			    (size_t)snprintf(sql + len, n - len, ", COALESCE(%s, %s)", K->id, dflt);
		else
			len += (size_t)snprintf(sql + len, n - len, ", %s", dflt);
	}
	if (len < n)
		len += (size_t)snprintf(sql + len, n - len, ", %s", rest);
	return len < n ? 0 : -1;
}

/* Column i of st as text; "" for NULL (the database may be anyone's). */
static const char *text(sqlite3_stmt *st, int i)
{
	const char *v = (const char *)sqlite3_column_text(st, i);
	return v ? v : "";
}

/* Row r from the columns of st (pareto_select's, then iter_s, bubble,
 * tokens_per_s, mfu, gpu_hours, mem_gb, mem_verdict). */
static void read_row(sqlite3_stmt *st, struct pareto_row *r)
{
	int i = 1;
	memset(r, 0, sizeof(*r));
	snprintf(r->key, sizeof(r->key), "%s", text(st, 0));
	r->gpus = sqlite3_column_int(st, i++);
	for (int k = 0; k < LK_N; k++) {
		const struct layout_knob *K = &layout_knobs[k];
		if (!pareto_knob(k))
			continue;
		if (K->kind == LK_NAME)
			r->v[k] = K->parse(text(st, i));
		else if (K->kind == LK_PART)
			snprintf(r->partition, sizeof(r->partition), "%s", text(st, i));
		else
			r->v[k] = sqlite3_column_double(st, i);
		i++;
	}
	r->iter_s = sqlite3_column_double(st, i++);
	r->bubble = sqlite3_column_double(st, i++);
	r->tps = sqlite3_column_double(st, i++);
	r->mfu = sqlite3_column_double(st, i++);
	r->gpuh = sqlite3_column_double(st, i++);
	r->mem_gb = sqlite3_column_double(st, i++);
	r->at_risk = strcmp(text(st, i++), "at-risk") == 0;
	if (strcmp(r->partition, "even") != 0)
		snprintf(r->part, sizeof(r->part), "%s", r->partition);
	r->shard = PARETO_KV(r, shard) > 0 && PARETO_KV(r, shard) < PARETO_KV(r, dp)
		       ? PARETO_KV(r, shard)
		       : 0;
}

int pareto_read(sqlite3 *db, long long sid, struct pareto *P)
{
	VEC(struct pareto_row) rv = {0};
	sqlite3_stmt *st = NULL;
	char sql[2048];
	int rc = 0;

	/* Databases before version 7 (read as they are) have no placement
	 * columns: their knobs read as the defaults (even stages, no hybrid
	 * sharding). */
	/* A database from before the memory verdict has no mem_verdict. */
	if ((rc = sqlite3_prepare_v2(db, "SELECT mem_verdict FROM candidate LIMIT 0", -1, &st,
				     NULL)) == SQLITE_OK)
		sqlite3_finalize(st);
	st = NULL;
	if (pareto_select(db, sql, sizeof(sql),
			  rc == SQLITE_OK ? "iter_s, bubble, tokens_per_s, mfu, gpu_hours, mem_gb,"
					    " mem_verdict FROM candidate WHERE sweep=?1 AND"
					    " status='simulated' ORDER BY gpus, iter_s, key"
					  : "iter_s, bubble, tokens_per_s, mfu, gpu_hours, mem_gb,"
					    " NULL FROM candidate WHERE sweep=?1 AND"
					    " status='simulated' ORDER BY gpus, iter_s, key") != 0)
		return SQLITE_INTERNAL;
	if ((rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL)) != SQLITE_OK)
		return rc;
	sqlite3_bind_int64(st, 1, sid);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (VEC_RESERVE(rv, rv.n + 1)) {
			rc = -1;
			break;
		}
		read_row(st, &rv.v[rv.n++]);
	}
	sqlite3_finalize(st);
	rc = rc == SQLITE_DONE ? 0 : rc;
	P->rows = rv.v;
	P->n = rv.n;
	return rc;
}

/*
 * What makes r and e the same run under two names, as a set of SAME_*
 * bits, or 0 when they are not: they differ only in ZeRO stage, recompute
 * setting or (without a pipeline) schedule, and predict the same time and
 * memory, to the bit (the model gives a run whose knob changes nothing
 * the same graph).  ZeRO with dp = 1 shards over one GPU; selective
 * recompute with flash attention recomputes nothing prism models; with
 * pp = 1 and one microbatch, GPipe and 1F1B are one order of work.
 */
enum { SAME_ZERO = 1, SAME_RECOMPUTE = 2, SAME_SCHEDULE = 4 };
static int same_run(const struct pareto_row *r, const struct pareto_row *e)
{
	int d = (PARETO_KV(r, zero) != PARETO_KV(e, zero) ? SAME_ZERO : 0) |
		(PARETO_KV(r, recompute) != PARETO_KV(e, recompute) ? SAME_RECOMPUTE : 0) |
		(PARETO_KV(r, schedule) != PARETO_KV(e, schedule) ||
			 PARETO_KV(r, vp) != PARETO_KV(e, vp)
		     ? SAME_SCHEDULE
		     : 0);
	if (r->gpus != e->gpus || r->iter_s != e->iter_s || r->mem_gb != e->mem_gb ||
	    strcmp(r->partition, e->partition) || ((d & SAME_SCHEDULE) && PARETO_KV(r, pp) != 1))
		return 0;
	/* Every other knob alike. */
	for (int k = 0; k < LK_N; k++)
		if (pareto_knob(k) && k != LK_zero && k != LK_recompute && k != LK_schedule &&
		    k != LK_vp && r->v[k] != e->v[k])
			return 0;
	return d;
}

/* 1 when a is the simpler of two names of one run: no recompute before
 * some, lower ZeRO stage before higher, 1F1B before the others. */
static int simpler(const struct pareto_row *a, const struct pareto_row *b)
{
	int ra = PARETO_KV(a, recompute) != LAYOUT_RECOMPUTE_NONE;
	int rb = PARETO_KV(b, recompute) != LAYOUT_RECOMPUTE_NONE;
	int sa = PARETO_KV(a, schedule) != LAYOUT_1F1B, sb = PARETO_KV(b, schedule) != LAYOUT_1F1B;
	if (ra != rb)
		return ra < rb;
	if (PARETO_KV(a, zero) != PARETO_KV(b, zero))
		return PARETO_KV(a, zero) < PARETO_KV(b, zero);
	return sa < sb;
}

/* Collapse rows that are the same run into the simplest name, and mark
 * near-ties.  rows are sorted by gpus, iter_s, key, so one run's names sit
 * among the rows of equal time. */
static void judge(struct pareto *R)
{
	struct pareto_row *rows = R->rows;
	for (size_t i = 0; i < R->n; i++) {
		rows[i].same_as = -1;
		rows[i].n_same = 0;
		rows[i].near_tie = 0;
	}
	for (size_t i = 1; i < R->n; i++) {
		for (size_t j = i;
		     j-- > 0 && rows[j].gpus == rows[i].gpus && rows[j].iter_s == rows[i].iter_s;) {
			int d;
			if (rows[j].same_as >= 0 || !(d = same_run(&rows[i], &rows[j])))
				continue;
			/* The simpler name heads the run, in j's place (same
			 * time: the order stands). */
			if (simpler(&rows[i], &rows[j])) {
				struct pareto_row t = rows[i];
				rows[i] = rows[j];
				rows[j] = t;
			}
			rows[i].same_as = (long)j;
			rows[j].n_same++;
			R->collapsed[d == SAME_ZERO	   ? PARETO_SAME_ZERO
				     : d == SAME_RECOMPUTE ? PARETO_SAME_RECOMPUTE
				     : d == SAME_SCHEDULE  ? PARETO_SAME_SCHEDULE
							   : PARETO_SAME_SEVERAL]++;
			break;
		}
	}
	for (size_t k = 0; k < R->nb; k++) {
		const struct pareto_row *b = &rows[R->best[k]];
		for (size_t i = R->best[k] + 1; i < R->n && rows[i].gpus == b->gpus; i++)
			if (rows[i].same_as < 0 && rows[i].iter_s <= b->iter_s * (1 + R->tie))
				rows[i].near_tie = 1;
	}
}

int pareto_near_ties(const struct pareto *R, size_t k)
{
	int n = 0;
	for (size_t i = R->best[k] + 1; i < R->n && R->rows[i].gpus == R->rows[R->best[k]].gpus;
	     i++)
		n += R->rows[i].near_tie;
	return n;
}

/* The Pareto fronts: a count is on the time front when its best is faster
 * than every smaller count's, on the GPU-hours front when cheaper. */
static void fronts(struct pareto *R)
{
	double front_t = 0, front_h = 0;
	for (size_t k = 0; k < R->nb; k++) {
		const struct pareto_row *r = &R->rows[R->best[k]];
		R->on_time[k] = front_t == 0 || r->iter_s < front_t;
		R->on_hours[k] = front_h == 0 || r->gpuh < front_h;
		if (R->on_time[k])
			front_t = r->iter_s;
		if (R->on_hours[k])
			front_h = r->gpuh;
	}
}

int pareto_rank(struct pareto *P, double tie)
{
	P->tie = tie;
	P->nb = 0;
	memset(P->collapsed, 0, sizeof(P->collapsed));
	free(P->best);
	free(P->on_time);
	free(P->on_hours);
	P->best = prism_malloc((P->n + 1) * sizeof(*P->best));
	P->on_time = prism_malloc((P->n + 1) * sizeof(*P->on_time));
	P->on_hours = prism_malloc((P->n + 1) * sizeof(*P->on_hours));
	if (!P->best || !P->on_time || !P->on_hours)
		return -1;
	/* Best per GPU count: the first row of each count (sorted). */
	for (size_t i = 0; i < P->n; i++)
		if (i == 0 || P->rows[i].gpus != P->rows[i - 1].gpus)
			P->best[P->nb++] = i;
	judge(P);
	fronts(P);
	return 0;
}

void pareto_release(struct pareto *P)
{
	free(P->rows);
	free(P->best);
	free(P->on_time);
	free(P->on_hours);
	memset(P, 0, sizeof(*P));
}
