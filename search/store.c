/* store.c - the results database. */
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "vec.h"

#define STR_(x) #x
#define STR(x)	STR_(x)

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS sweep("
    " id INTEGER PRIMARY KEY, name TEXT NOT NULL, config TEXT NOT NULL, model TEXT,"
    " hw TEXT, version TEXT, started REAL, finished REAL, base TEXT,"
    " tokens REAL, price_per_gpu_hour REAL, mode TEXT, batch INTEGER,"
    " UNIQUE(name, config));"
    "CREATE TABLE IF NOT EXISTS candidate("
    " sweep INTEGER NOT NULL REFERENCES sweep(id), key TEXT NOT NULL,"
    " gpus INTEGER, tp INTEGER, pp INTEGER, dp INTEGER, vp INTEGER, mbs INTEGER,"
    " microbatches INTEGER, schedule TEXT, recompute TEXT, zero INTEGER, sp INTEGER,"
    " layers INTEGER, hidden INTEGER, status TEXT NOT NULL, reason TEXT,"
    " analytic_s REAL, iter_s REAL, bubble REAL, tokens_per_s REAL, mfu REAL,"
    " gpu_hours REAL, mem_gb REAL, fits INTEGER, exposed_compute_s REAL,"
    " exposed_comm_s REAL, overlap_s REAL, idle_s REAL, bound_s REAL,"
    " dtype TEXT, fp8_attention INTEGER, flash INTEGER, method TEXT,"
    " partition TEXT, shard INTEGER, prefetch INTEGER, bucket_mb INTEGER,"
    " overlap_grad INTEGER, overlap_param INTEGER, tp_overlap INTEGER, pp_overlap INTEGER,"
    " mem_stage INTEGER, mem_weights_gb REAL, mem_grads_gb REAL, mem_optimizer_gb REAL,"
    " mem_buffers_gb REAL, mem_activations_gb REAL, mem_transient_gb REAL,"
    " mem_fragmentation_gb REAL, ep INTEGER, etp INTEGER, cp INTEGER,"
    " PRIMARY KEY(sweep, key));";

/* Version 1 had no bound_s, and no base fingerprint; version 2 no tokens
 * to train and no price; version 3 no dtype, fp8_attention, flash;
 * version 4 no method; version 5 no mode, batch; version 6 no placement,
 * sharding, overlap or memory breakdown; version 7 no ep, etp, cp. */
static const char migrate_1[] = "ALTER TABLE candidate ADD COLUMN bound_s REAL;"
				"ALTER TABLE sweep ADD COLUMN base TEXT;";
static const char migrate_2[] = "ALTER TABLE sweep ADD COLUMN tokens REAL;"
				"ALTER TABLE sweep ADD COLUMN price_per_gpu_hour REAL;";
/* Version 3 had no precision and attention knobs (its candidates ran bf16
 * GEMMs with flash attention; their rows keep NULL). */
static const char migrate_3[] = "ALTER TABLE candidate ADD COLUMN dtype TEXT;"
				"ALTER TABLE candidate ADD COLUMN fp8_attention INTEGER;"
				"ALTER TABLE candidate ADD COLUMN flash INTEGER;";
/* Version 4 did not say how a candidate was made (all were synthesised). */
static const char migrate_4[] = "ALTER TABLE candidate ADD COLUMN method TEXT;";
/* Version 5 did not record the screening mode and batch (NULL: unknown). */
static const char migrate_5[] = "ALTER TABLE sweep ADD COLUMN mode TEXT;"
				"ALTER TABLE sweep ADD COLUMN batch INTEGER;";

/* Version 6 had no placement, sharding or overlap knobs and no memory
 * breakdown (its candidates ran even stages, ZeRO over the whole
 * data-parallel group, overlapped gradients and sends; their rows keep
 * NULL). */
static const char migrate_7[] = "ALTER TABLE candidate ADD COLUMN ep INTEGER;"
				"ALTER TABLE candidate ADD COLUMN etp INTEGER;"
				"ALTER TABLE candidate ADD COLUMN cp INTEGER;";
static const char migrate_6[] = "ALTER TABLE candidate ADD COLUMN partition TEXT;"
				"ALTER TABLE candidate ADD COLUMN shard INTEGER;"
				"ALTER TABLE candidate ADD COLUMN prefetch INTEGER;"
				"ALTER TABLE candidate ADD COLUMN bucket_mb INTEGER;"
				"ALTER TABLE candidate ADD COLUMN overlap_grad INTEGER;"
				"ALTER TABLE candidate ADD COLUMN overlap_param INTEGER;"
				"ALTER TABLE candidate ADD COLUMN tp_overlap INTEGER;"
				"ALTER TABLE candidate ADD COLUMN pp_overlap INTEGER;"
				"ALTER TABLE candidate ADD COLUMN mem_stage INTEGER;"
				"ALTER TABLE candidate ADD COLUMN mem_weights_gb REAL;"
				"ALTER TABLE candidate ADD COLUMN mem_grads_gb REAL;"
				"ALTER TABLE candidate ADD COLUMN mem_optimizer_gb REAL;"
				"ALTER TABLE candidate ADD COLUMN mem_buffers_gb REAL;"
				"ALTER TABLE candidate ADD COLUMN mem_activations_gb REAL;"
				"ALTER TABLE candidate ADD COLUMN mem_transient_gb REAL;"
				"ALTER TABLE candidate ADD COLUMN mem_fragmentation_gb REAL;";

/* 1 when the candidate table has column `col` (a file whose version number
 * was lowered by hand keeps newer columns). */
static int has_column(sqlite3 *db, const char *col)
{
	char sql[96];
	sqlite3_stmt *st = NULL;
	int ok;
	snprintf(sql, sizeof(sql), "SELECT %s FROM candidate LIMIT 0", col);
	ok = sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK;
	sqlite3_finalize(st);
	return ok;
}

static int fail(sqlite3 *db, const char *what, struct prism_err *err)
{
	return prism_err_set(err, PRISM_EIO, "%s: %s: %s", sqlite3_db_filename(db, "main"), what,
			     sqlite3_errmsg(db));
}

/* The first row of a one-column query as text into buf ("" when none);
 * 0, or the SQLite error code. */
static int query_text(sqlite3 *db, const char *sql, char *buf, size_t n)
{
	sqlite3_stmt *st;
	int rc;

	buf[0] = '\0';
	if ((rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL)) != SQLITE_OK)
		return rc;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *v = (const char *)sqlite3_column_text(st, 0);
		snprintf(buf, n, "%s", v ? v : "");
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc;
}

/* A query that failed on path: not a database (or damaged past reading),
 * out of memory, or another failure to read it -- never the file's fault
 * unless SQLite says so. */
static int unreadable(sqlite3 *db, int rc, const char *path, struct prism_err *err)
{
	if ((rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT)
		return prism_err_set(err, PRISM_EFORMAT, "%s: not a results database (%s)", path,
				     sqlite3_errmsg(db));
	if ((rc & 0xff) == SQLITE_NOMEM)
		return prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
	return prism_err_set(err, PRISM_EIO, "%s: cannot read the database (%s)", path,
			     sqlite3_errmsg(db));
}

int store_check(sqlite3 *db, const char *path, struct prism_err *err)
{
	char buf[256];
	int rc;

	if ((rc = query_text(db, "PRAGMA quick_check(1)", buf, sizeof(buf))) != SQLITE_OK)
		return unreadable(db, rc, path, err);
	if (strcmp(buf, "ok") == 0)
		return 0;
	/* quick_check's first finding, on one line. */
	for (char *c = buf; *c; c++)
		if (*c == '\n')
			*c = ' ';
	return prism_err_set(err, PRISM_EFORMAT,
			     "%s: the database is damaged (quick_check: %s): restore it or use "
			     "another",
			     path, buf);
}

/* Whether the file at db is one prism may write into, before anything is
 * written: undamaged (store_check), and empty or holding prism's tables
 * alone. */
static int check_file(sqlite3 *db, const char *path, struct prism_err *err)
{
	char buf[256];
	int rc;

	if ((rc = store_check(db, path, err)))
		return rc;
	if ((rc = query_text(db,
			     "SELECT type || ' ' || name FROM sqlite_master WHERE name NOT IN "
			     "('sweep', 'candidate') AND name NOT LIKE 'sqlite_autoindex_%' "
			     "ORDER BY name",
			     buf, sizeof(buf))) != SQLITE_OK)
		return unreadable(db, rc, path, err);
	if (buf[0])
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s: not a prism results database (it holds %s): give "
				     "another --db",
				     path, buf);
	return 0;
}

int store_open(const char *path, sqlite3 **db, struct prism_err *err)
{
	char name[4096];
	int ver = 0, had_mode = 0, rc;

	*db = NULL;
	/* "" and ":memory:" are databases that vanish on closing. */
	if (!path[0] || strcmp(path, ":memory:") == 0)
		return prism_err_set(
		    err, PRISM_EARG,
		    "'%s' is no file: the results would be lost (give a file name)", path);
	/* A path, never a URI, whatever SQLite was built with. */
	snprintf(name, sizeof(name), "%s%s", strncmp(path, "file:", 5) == 0 ? "./" : "", path);
	if (sqlite3_open_v2(name, db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
	    SQLITE_OK) {
		rc = prism_err_set(err, PRISM_EIO, "%s: %s", path, sqlite3_errmsg(*db));
		sqlite3_close(*db);
		*db = NULL;
		return rc;
	}
	sqlite3_busy_timeout(*db, 10000);
	{
		char v[32];
		if (query_text(*db, "PRAGMA user_version", v, sizeof(v)) == SQLITE_OK)
			ver = atoi(v);
	}
	if (ver < 0 || ver > STORE_VERSION)
		rc = prism_err_set(err, PRISM_EVERSION,
				   "%s: results database version %d (this prism writes %d)", path,
				   ver, STORE_VERSION);
	else
		rc = check_file(*db, path, err);
	if (rc) {
		sqlite3_close(*db);
		*db = NULL;
		return rc;
	}
	/* The branch that first recorded mode and batch numbered that version
	 * 3, which is tokens and price here: such a file is version 2 with
	 * mode and batch. */
	if (ver == 3) {
		sqlite3_stmt *st;
		if (sqlite3_prepare_v2(*db, "SELECT mode, batch FROM sweep LIMIT 0", -1, &st,
				       NULL) == SQLITE_OK) {
			had_mode = 1;
			ver = 2;
		}
		sqlite3_finalize(st);
	}
	/* The schema, an upgrade from an older version and the version number
	 * in one transaction: a killed run leaves the old file or the new one. */
	if (sqlite3_exec(*db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL,
			 NULL) != SQLITE_OK ||
	    sqlite3_exec(*db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		rc = fail(*db, "cannot create the schema", err);
		sqlite3_close(*db);
		*db = NULL;
		return rc;
	}
	if ((ver == 1 && sqlite3_exec(*db, migrate_1, NULL, NULL, NULL) != SQLITE_OK) ||
	    (ver >= 1 && ver <= 2 && sqlite3_exec(*db, migrate_2, NULL, NULL, NULL) != SQLITE_OK) ||
	    (ver >= 1 && ver <= 3 && sqlite3_exec(*db, migrate_3, NULL, NULL, NULL) != SQLITE_OK) ||
	    (ver >= 1 && ver <= 4 && sqlite3_exec(*db, migrate_4, NULL, NULL, NULL) != SQLITE_OK) ||
	    (ver >= 1 && ver <= 5 && !had_mode &&
	     sqlite3_exec(*db, migrate_5, NULL, NULL, NULL) != SQLITE_OK) ||
	    (ver >= 1 && ver <= 6 && sqlite3_exec(*db, migrate_6, NULL, NULL, NULL) != SQLITE_OK) ||
	    (ver >= 1 && ver <= 7 && !has_column(*db, "ep") &&
	     sqlite3_exec(*db, migrate_7, NULL, NULL, NULL) != SQLITE_OK) ||
	    sqlite3_exec(*db, schema, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(*db, "PRAGMA user_version=" STR(STORE_VERSION), NULL, NULL, NULL) !=
		SQLITE_OK ||
	    sqlite3_exec(*db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		rc = fail(*db, ver ? "cannot upgrade the schema" : "cannot create the schema", err);
		sqlite3_exec(*db, "ROLLBACK", NULL, NULL, NULL);
		sqlite3_close(*db);
		*db = NULL;
		return rc;
	}
	return 0;
}

int store_sweep(sqlite3 *db, const struct sweep *s, struct store_run *run, long long *id,
		int *resumed, struct prism_err *err)
{
	sqlite3_stmt *st;
	int rc;

	*resumed = 0;
	run->was_mode[0] = '\0';
	run->was_batch = 0;
	/* The sweep of that name whose file says the same: the same text, or
	 * the same settings (sweep_canon: comments and layout aside). */
	if (sqlite3_prepare_v2(db, "SELECT id, base, mode, batch, config FROM sweep WHERE name=?1",
			       -1, &st, NULL) != SQLITE_OK)
		return fail(db, "query", err);
	sqlite3_bind_text(st, 1, s->name, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *text = (const char *)sqlite3_column_text(st, 4);
		char *canon;
		int same;
		if (!text)
			continue;
		if (strcmp(text, s->text) == 0)
			break;
		canon = s->canon ? sweep_canon(text) : NULL;
		same = canon && strcmp(canon, s->canon) == 0;
		free(canon);
		if (same)
			break;
	}
	if (rc == SQLITE_ROW) {
		const char *was = (const char *)sqlite3_column_text(st, 1);
		const char *mode = (const char *)sqlite3_column_text(st, 2);
		*id = sqlite3_column_int64(st, 0);
		*resumed = 1;
		snprintf(run->was_mode, sizeof(run->was_mode), "%s", mode ? mode : "");
		run->was_batch = sqlite3_column_type(st, 3) == SQLITE_INTEGER
				     ? (int)sqlite3_column_int64(st, 3)
				     : 0;
		/* The same sweep file over a changed base is not a resume. */
		if (was && s->fingerprint[0] && strcmp(was, s->fingerprint) != 0) {
			rc = prism_err_set(err, PRISM_EARG,
					   "%s: sweep %s (id %lld) was run on another base (%s, "
					   "now %s): give another --db, or rename the sweep",
					   sqlite3_db_filename(db, "main"), s->name, *id, was,
					   s->fingerprint);
			sqlite3_finalize(st);
			return rc;
		}
	}
	sqlite3_finalize(st);
	if (*resumed)
		return 0;
	if (sqlite3_prepare_v2(
		db,
		"INSERT INTO sweep(name, config, model, hw, version, started, base,"
		" tokens, price_per_gpu_hour, mode, batch) VALUES(?1, ?2, ?3, ?4, ?5,"
		" ?6, ?7, ?8, ?9, ?10, ?11)",
		-1, &st, NULL) != SQLITE_OK)
		return fail(db, "insert", err);
	sqlite3_bind_text(st, 1, s->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, s->text, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, s->m.name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, s->hw.id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, PRISM_VERSION, -1, SQLITE_STATIC);
	sqlite3_bind_double(st, 6, (double)time(NULL));
	if (s->fingerprint[0])
		sqlite3_bind_text(st, 7, s->fingerprint, -1, SQLITE_STATIC);
	if (s->tokens > 0)
		sqlite3_bind_double(st, 8, s->tokens);
	if (s->price_per_gpu_hour > 0)
		sqlite3_bind_double(st, 9, s->price_per_gpu_hour);
	sqlite3_bind_text(st, 10, run->mode, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 11, run->batch);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return fail(db, "insert", err);
	*id = sqlite3_last_insert_rowid(db);
	return 0;
}

int store_sweep_run(sqlite3 *db, long long id, const struct store_run *run, struct prism_err *err)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db, "UPDATE sweep SET mode=?1, batch=?2 WHERE id=?3", -1, &st,
			       NULL) != SQLITE_OK)
		return fail(db, "update", err);
	sqlite3_bind_text(st, 1, run->mode, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, run->batch);
	sqlite3_bind_int64(st, 3, id);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : fail(db, "update", err);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int store_keys(sqlite3 *db, long long id, char ***keys, size_t *n, struct prism_err *err)
{
	sqlite3_stmt *st;
	VEC(char *) v = {0};

	*keys = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(db, "SELECT key FROM candidate WHERE sweep=?1", -1, &st, NULL) !=
	    SQLITE_OK)
		return fail(db, "query", err);
	sqlite3_bind_int64(st, 1, id);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(st, 0);
		char *d = prism_strdup(k ? k : "");
		if (!d || VEC_PUSH(v, d)) {
			free(d);
			goto oom;
		}
	}
	sqlite3_finalize(st);
	if (v.n)
		qsort(v.v, v.n, sizeof(*v.v), cmp_str);
	*keys = v.v;
	*n = v.n;
	return 0;
oom:
	sqlite3_finalize(st);
	store_keys_free(v.v, v.n);
	return prism_err_set(err, PRISM_ENOMEM, "out of memory");
}

void store_keys_free(char **keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
}

int store_put(sqlite3 *db, long long id, const struct cand *c, size_t n, struct prism_err *err)
{
	sqlite3_stmt *st;
	int ok = 1;

	if (n == 0)
		return 0;
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return fail(db, "begin", err);
	if (sqlite3_prepare_v2(
		db,
		"INSERT OR REPLACE INTO candidate(sweep, key, gpus, tp, pp, dp, vp, mbs,"
		" microbatches, schedule, recompute, zero, sp, layers, hidden, status,"
		" reason, analytic_s, iter_s, bubble, tokens_per_s, mfu, gpu_hours,"
		" mem_gb, fits, exposed_compute_s, exposed_comm_s, overlap_s, idle_s,"
		" bound_s, dtype, fp8_attention, flash, method, partition, shard, prefetch,"
		" bucket_mb, overlap_grad, overlap_param, tp_overlap, pp_overlap,"
		" mem_stage, mem_weights_gb, mem_grads_gb, mem_optimizer_gb,"
		" mem_buffers_gb, mem_activations_gb, mem_transient_gb,"
		" mem_fragmentation_gb, ep, etp, cp) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,"
		"?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,"
		"?26,?27,?28,?29,?30,?31,?32,?33,?34,?35,?36,?37,?38,?39,?40,?41,?42,"
		"?43,?44,?45,?46,?47,?48,?49,?50,?51,?52,?53)",
		-1, &st, NULL) != SQLITE_OK) {
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		return fail(db, "insert", err);
	}
	for (size_t i = 0; ok && i < n; i++) {
		const struct cand *k = &c[i];
		const struct layout *l = &k->in.lay;
		int sim = k->status == CS_SIMULATED;
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_text(st, 2, k->key, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 3, k->gpus);
		sqlite3_bind_int(st, 4, l->tp);
		sqlite3_bind_int(st, 5, l->pp);
		sqlite3_bind_int(st, 6, l->dp);
		sqlite3_bind_int(st, 7, l->vp);
		sqlite3_bind_int(st, 8, l->mbs);
		sqlite3_bind_int(st, 9, l->microbatches);
		sqlite3_bind_text(st, 10, layout_schedule_name(l->schedule), -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 11, layout_recompute_name(l->recompute), -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 12, l->zero);
		sqlite3_bind_int(st, 13, l->sp);
		sqlite3_bind_int(st, 14, k->in.m.layers);
		sqlite3_bind_int(st, 15, k->in.m.hidden);
		sqlite3_bind_text(st, 16, cand_status_name(k->status), -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 31, hw_dtype_name(k->in.lay.dtype), -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 32, k->in.lay.fp8_attention);
		sqlite3_bind_int(st, 33, l->flash);
		{
			char part[1600];
			struct layout r;
			synth_mem_layout(&k->in, &r);
			if (r.part[0] && l->pp > 1) { /* the layers of each stage */
				size_t m = 0;
				for (int s = 0; s < l->pp && m + 8 < sizeof(part); s++)
					m += (size_t)snprintf(part + m, sizeof(part) - m, "%s%d",
							      s ? "," : "", r.part[s]);
			} else {
				snprintf(part, sizeof(part), "even");
			}
			sqlite3_bind_text(st, 35, part, -1, SQLITE_TRANSIENT);
		}
		sqlite3_bind_int(st, 36, layout_shard_group(l));
		sqlite3_bind_int(st, 37, l->prefetch);
		sqlite3_bind_int(st, 38, l->bucket_mb);
		sqlite3_bind_int(st, 39, l->overlap_grad);
		sqlite3_bind_int(st, 40, l->overlap_param);
		sqlite3_bind_int(st, 41, l->tp_overlap);
		sqlite3_bind_int(st, 42, l->pp_overlap);
		sqlite3_bind_int(st, 51, layout_ep(l));
		sqlite3_bind_int(st, 52, layout_etp(l));
		sqlite3_bind_int(st, 53, layout_cp(l));
		if (k->status != CS_INVALID && k->status != CS_PENDING) {
			/* The memory of every candidate that has a layout: the
			 * stage needing the most, and its breakdown. */
			const struct mem_est *me = &k->p.mem;
			sqlite3_bind_int(st, 43, me->stage);
			sqlite3_bind_double(st, 44, me->weights / 1e9);
			sqlite3_bind_double(st, 45, me->grads / 1e9);
			sqlite3_bind_double(st, 46, me->optimizer / 1e9);
			sqlite3_bind_double(st, 47, me->buffers / 1e9);
			sqlite3_bind_double(st, 48, me->activations / 1e9);
			sqlite3_bind_double(st, 49, me->transient / 1e9);
			sqlite3_bind_double(st, 50, me->fragmentation / 1e9);
		}
		if (k->reason[0])
			sqlite3_bind_text(st, 17, k->reason, -1, SQLITE_STATIC);
		if (k->analytic_s > 0)
			sqlite3_bind_double(st, 18, k->analytic_s);
		if (k->bound_s > 0)
			sqlite3_bind_double(st, 30, k->bound_s);
		if (sim) {
			sqlite3_bind_double(st, 19, k->p.iter_s);
			sqlite3_bind_double(st, 20, k->p.bubble);
			sqlite3_bind_double(st, 21, k->p.tokens_per_s);
			sqlite3_bind_double(st, 22, k->p.mfu);
			sqlite3_bind_double(st, 23, k->p.gpu_hours);
			sqlite3_bind_double(st, 24, k->p.mem.total / 1e9);
			sqlite3_bind_int(st, 25, k->p.mem.fits);
			sqlite3_bind_double(st, 26, k->p.exposed_compute_s);
			sqlite3_bind_double(st, 27, k->p.exposed_comm_s);
			sqlite3_bind_double(st, 28, k->p.overlap_s);
			sqlite3_bind_double(st, 29, k->p.idle_s);
			sqlite3_bind_text(st, 34, predict_method_name(k->p.method), -1,
					  SQLITE_STATIC);
		}
		ok = sqlite3_step(st) == SQLITE_DONE;
	}
	sqlite3_finalize(st);
	if (!ok || sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		int rc = fail(db, "write", err);
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		return rc;
	}
	return 0;
}

int store_best(sqlite3 *db, long long id, int *gpus, double *best, int max)
{
	sqlite3_stmt *st;
	int n = 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT gpus, MIN(iter_s) FROM candidate WHERE sweep=?1 AND "
			       "status='simulated' GROUP BY gpus",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(st, 1, id);
	while (n < max && sqlite3_step(st) == SQLITE_ROW) {
		gpus[n] = sqlite3_column_int(st, 0);
		best[n] = sqlite3_column_double(st, 1);
		n++;
	}
	sqlite3_finalize(st);
	return n;
}

int store_finish(sqlite3 *db, long long id, struct prism_err *err)
{
	sqlite3_stmt *st;
	int rc;
	if (sqlite3_prepare_v2(db, "UPDATE sweep SET finished=?2 WHERE id=?1", -1, &st, NULL) !=
	    SQLITE_OK)
		return fail(db, "update", err);
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_double(st, 2, (double)time(NULL));
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : fail(db, "update", err);
}
