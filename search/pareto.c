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
 * tokens_per_s, mfu, gpu_hours, mem_gb, mem_verdict, hw, price, the four
 * of the breakdown). */
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
	snprintf(r->hw, sizeof(r->hw), "%s", text(st, i++));
	r->price = sqlite3_column_double(st, i++);
	{
		double *b[4] = {&r->exp_compute_s, &r->exp_comm_s, &r->overlap_s, &r->idle_s};
		for (int j = 0; j < 4; j++, i++)
			*b[j] = sqlite3_column_type(st, i) == SQLITE_NULL
				    ? -1
				    : sqlite3_column_double(st, i);
	}
	if (strcmp(r->partition, "even") != 0)
		snprintf(r->part, sizeof(r->part), "%s", r->partition);
	r->shard = PARETO_KV(r, shard) > 0 && PARETO_KV(r, shard) < PARETO_KV(r, dp)
		       ? PARETO_KV(r, shard)
		       : 0;
}

/* Rows by setting (profile, seq), gpus, iter_s, key. */
static int cmp_row(const void *pa, const void *pb)
{
	const struct pareto_row *a = pa, *b = pb;
	int c = strcmp(a->hw, b->hw);
	if (c)
		return c;
	if (a->v[LK_seq] != b->v[LK_seq])
		return a->v[LK_seq] < b->v[LK_seq] ? -1 : 1;
	if (a->gpus != b->gpus)
		return a->gpus < b->gpus ? -1 : 1;
	if (a->iter_s != b->iter_s)
		return a->iter_s < b->iter_s ? -1 : 1;
	return strcmp(a->key, b->key);
}

/* Number P's settings and name what varies among them. */
static void settings(struct pareto *P)
{
	int hws = 1, seqs = 1;
	P->settings = 0;
	for (size_t i = 0; i < P->n; i++) {
		struct pareto_row *r = &P->rows[i], *q = i ? &P->rows[i - 1] : NULL;
		if (q && strcmp(q->hw, r->hw) != 0)
			hws++;
		if (q && q->v[LK_seq] != r->v[LK_seq])
			seqs++;
		if (!q || strcmp(q->hw, r->hw) != 0 || q->v[LK_seq] != r->v[LK_seq])
			P->settings++;
		r->setting = P->settings - 1;
	}
	for (size_t i = 0; P->settings > 1 && i < P->n; i++) {
		struct pareto_row *r = &P->rows[i];
		if (hws > 1 && seqs > 1)
			snprintf(r->setting_name, sizeof(r->setting_name), "%s, seq %d", r->hw,
				 PARETO_KV(r, seq));
		else if (hws > 1)
			snprintf(r->setting_name, sizeof(r->setting_name), "%s", r->hw);
		else
			snprintf(r->setting_name, sizeof(r->setting_name), "seq %d",
				 PARETO_KV(r, seq));
	}
}

int pareto_read(sqlite3 *db, long long sid, struct pareto *P)
{
	VEC(struct pareto_row) rv = {0};
	sqlite3_stmt *st = NULL;
	char sql[2048], rest[400];
	int rc = 0;

	/* Databases before version 7 (read as they are) have no placement
	 * columns: their knobs read as the defaults (even stages, no hybrid
	 * sharding). */
	/* A database from before the memory verdict has no mem_verdict. */
	if ((rc = sqlite3_prepare_v2(db, "SELECT mem_verdict FROM candidate LIMIT 0", -1, &st,
				     NULL)) == SQLITE_OK)
		sqlite3_finalize(st);
	st = NULL;
	/* Nor one from before a candidate's profile and price their columns. */
	snprintf(rest, sizeof(rest),
		 "iter_s, bubble, tokens_per_s, mfu, gpu_hours, mem_gb, %s, %s, %s FROM candidate"
		 " WHERE sweep=?1 AND status='simulated' ORDER BY gpus, iter_s, key",
		 rc == SQLITE_OK ? "mem_verdict" : "NULL",
		 has_column(db, "hw") ? "hw, price_per_gpu_hour" : "NULL, NULL",
		 has_column(db, "idle_s") ? "exposed_compute_s, exposed_comm_s, overlap_s, idle_s"
					  : "NULL, NULL, NULL, NULL");
	if (pareto_select(db, sql, sizeof(sql), rest) != 0)
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
	if (P->n)
		qsort(P->rows, P->n, sizeof(*P->rows), cmp_row);
	settings(P);
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
	if (!PARETO_SAME_COUNT(r, e) || r->iter_s != e->iter_s || r->mem_gb != e->mem_gb ||
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
		for (size_t j = i; j-- > 0 && PARETO_SAME_COUNT(&rows[j], &rows[i]) &&
				   rows[j].iter_s == rows[i].iter_s;) {
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
		for (size_t i = R->best[k] + 1; i < R->n && PARETO_SAME_COUNT(&rows[i], b); i++)
			if (rows[i].same_as < 0 && rows[i].iter_s <= b->iter_s * (1 + R->tie))
				rows[i].near_tie = 1;
	}
}

int pareto_near_ties(const struct pareto *R, size_t k)
{
	int n = 0;
	for (size_t i = R->best[k] + 1;
	     i < R->n && PARETO_SAME_COUNT(&R->rows[i], &R->rows[R->best[k]]); i++)
		n += R->rows[i].near_tie;
	return n;
}

/* The Pareto fronts: a count is on the time front when its best is faster
 * than every smaller count's of its setting, on the GPU-hours front when
 * cheaper. */
static void fronts(struct pareto *R)
{
	double front_t = 0, front_h = 0;
	for (size_t k = 0; k < R->nb; k++) {
		const struct pareto_row *r = &R->rows[R->best[k]];
		if (k && r->setting != R->rows[R->best[k - 1]].setting)
			front_t = front_h = 0;
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
		if (i == 0 || !PARETO_SAME_COUNT(&P->rows[i], &P->rows[i - 1]))
			P->best[P->nb++] = i;
	judge(P);
	fronts(P);
	return 0;
}

int pareto_family(const struct pareto_row *r, int f)
{
	return f == PARETO_FAM_PIPELINE ? PARETO_KV(r, pp) > 1
	       : f == PARETO_FAM_ZERO	? PARETO_KV(r, zero)
					: PARETO_KV(r, tp);
}

size_t pareto_family_best(const struct pareto *P, size_t k, int f, size_t *out, size_t cap)
{
	size_t n = 0;
	const struct pareto_row *b = &P->rows[P->best[k]];
	/* Rows run fastest first: the first of each value is its best.  The
	 * values seen are few (tp and ZeRO stages): a scan of out is enough. */
	for (size_t i = P->best[k]; i < P->n && PARETO_SAME_COUNT(&P->rows[i], b) && n < cap; i++) {
		int v = pareto_family(&P->rows[i], f), seen = 0;
		if (P->rows[i].same_as >= 0)
			continue;
		for (size_t j = 0; j < n && !seen; j++)
			seen = pareto_family(&P->rows[out[j]], f) == v;
		if (!seen)
			out[n++] = i;
	}
	return n;
}

double pareto_perturbed(const struct pareto_row *r, int p)
{
	if (r->exp_compute_s < 0 || r->exp_comm_s < 0 || r->overlap_s < 0 || r->idle_s < 0)
		return -1;
	if (p == PARETO_SLOWER_KERNELS)
		return r->iter_s +
		       PARETO_KERNELS_SLOWER * (r->exp_compute_s + r->overlap_s + r->idle_s);
	return r->iter_s + PARETO_OVERLAP_LESS * r->overlap_s;
}

long pareto_robust(const struct pareto *P, size_t k, int p, double *margin)
{
	const struct pareto_row *b = &P->rows[P->best[k]];
	double t_best = pareto_perturbed(b, p), t_win = t_best, t_second = 0;
	long win = (long)P->best[k];
	int n = 1;
	if (t_best < 0)
		return -1;
	for (size_t i = P->best[k] + 1;
	     i < P->n && PARETO_SAME_COUNT(&P->rows[i], b) && n < PARETO_ROBUST_TOP; i++) {
		double t;
		if (P->rows[i].same_as >= 0)
			continue;
		if ((t = pareto_perturbed(&P->rows[i], p)) < 0)
			return -1;
		n++;
		/* Ties keep the faster as simulated (the earlier row). */
		if (t < t_win) {
			t_second = t_win;
			t_win = t;
			win = (long)i;
		} else if (t_second == 0 || t < t_second) {
			t_second = t;
		}
	}
	if (margin)
		*margin = win != (long)P->best[k] ? t_best / t_win - 1
			  : t_second > 0	  ? t_second / t_win - 1
						  : 0;
	return win;
}

void pareto_release(struct pareto *P)
{
	free(P->rows);
	free(P->best);
	free(P->on_time);
	free(P->on_hours);
	memset(P, 0, sizeof(*P));
}
