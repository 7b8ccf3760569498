/* store.c - the results database. */
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "dbfile.h"
#include "vec.h"

#define STR_(x) #x
#define STR(x)	STR_(x)

/* The tables; the candidate table's knob columns (layout.h's LK_STORE
 * knobs, after gpus) are added by knob_columns(), from the knob list. */
static const char schema_head[] =
    "CREATE TABLE IF NOT EXISTS sweep("
    " id INTEGER PRIMARY KEY, name TEXT NOT NULL, config TEXT NOT NULL, model TEXT,"
    " hw TEXT, version TEXT, started REAL, finished REAL, base TEXT,"
    " tokens REAL, price_per_gpu_hour REAL, mode TEXT, batch INTEGER,"
    " UNIQUE(name, config));"
    "CREATE TABLE IF NOT EXISTS candidate("
    " sweep INTEGER NOT NULL REFERENCES sweep(id), key TEXT NOT NULL, gpus INTEGER,";
static const char schema_tail[] =
    " status TEXT NOT NULL, reason TEXT,"
    " analytic_s REAL, iter_s REAL, bubble REAL, tokens_per_s REAL, mfu REAL,"
    " gpu_hours REAL, mem_gb REAL, fits INTEGER, exposed_compute_s REAL,"
    " exposed_comm_s REAL, overlap_s REAL, idle_s REAL, bound_s REAL, method TEXT,"
    " mem_stage INTEGER, mem_weights_gb REAL, mem_grads_gb REAL, mem_optimizer_gb REAL,"
    " mem_buffers_gb REAL, mem_activations_gb REAL, mem_transient_gb REAL,"
    " mem_fragmentation_gb REAL, mem_verdict TEXT, mem_margin_gb REAL, hw TEXT,"
    " price_per_gpu_hour REAL,"
    " PRIMARY KEY(sweep, key));";

/* The SQL type of knob k's column. */
static const char *knob_type(int k)
{
	int kind = layout_knobs[k].kind;
	return kind == LK_NAME || kind == LK_PART ? "TEXT" : kind == LK_REAL ? "REAL" : "INTEGER";
}

/* Version 1 had no bound_s, and no base fingerprint; version 2 no tokens
 * to train and no price; version 3 no dtype, fp8_attention, flash;
 * version 4 no method; version 5 no mode, batch; version 6 no placement,
 * sharding, overlap or memory breakdown; version 7 no ep, etp, cp. */
static const char migrate_1[] = "ALTER TABLE candidate ADD COLUMN bound_s REAL;"
				"ALTER TABLE sweep ADD COLUMN base TEXT;";
static const char migrate_2[] = "ALTER TABLE sweep ADD COLUMN tokens REAL;"
				"ALTER TABLE sweep ADD COLUMN price_per_gpu_hour REAL;";
/* Version 4 did not say how a candidate was made (all were synthesised). */
static const char migrate_4[] = "ALTER TABLE candidate ADD COLUMN method TEXT;";
/* Version 5 did not record the screening mode and batch (NULL: unknown). */
static const char migrate_5[] = "ALTER TABLE sweep ADD COLUMN mode TEXT;"
				"ALTER TABLE sweep ADD COLUMN batch INTEGER;";

/* Version 6 had no memory breakdown.  Knobs added since version 1
 * (dtype, fp8_attention and flash in 4; partition, shard, prefetch,
 * bucket_mb, overlap_grad, overlap_param, tp_overlap and pp_overlap in 7;
 * ep, etp and cp in 8; any knob after) get their columns from
 * knob_columns(): the rows from before them keep NULL, which the report
 * reads as the knob's default (what those candidates ran). */
static const char migrate_6[] = "ALTER TABLE candidate ADD COLUMN mem_stage INTEGER;"
				"ALTER TABLE candidate ADD COLUMN mem_weights_gb REAL;"
				"ALTER TABLE candidate ADD COLUMN mem_grads_gb REAL;"
				"ALTER TABLE candidate ADD COLUMN mem_optimizer_gb REAL;"
				"ALTER TABLE candidate ADD COLUMN mem_buffers_gb REAL;"
				"ALTER TABLE candidate ADD COLUMN mem_activations_gb REAL;"
				"ALTER TABLE candidate ADD COLUMN mem_transient_gb REAL;"
				"ALTER TABLE candidate ADD COLUMN mem_fragmentation_gb REAL;";

/* The memory verdict (fits, at-risk, oom) and its margin, GB: added where a
 * database lacks them, without a version of their own (the rows before
 * keep NULL: the report reads their `fits`). */
static const char *const verdict_cols[][2] = {{"mem_verdict", "TEXT"}, {"mem_margin_gb", "REAL"}};

/* 1 when the candidate table has column `col` (a file whose version number
 * was lowered by hand keeps newer columns). */
static int has_column_in(sqlite3 *db, const char *table, const char *col)
{
	char sql[96];
	sqlite3_stmt *st = NULL;
	int ok;
	snprintf(sql, sizeof(sql), "SELECT %s FROM %s LIMIT 0", col, table);
	ok = sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK;
	sqlite3_finalize(st);
	return ok;
}

static int has_column(sqlite3 *db, const char *col)
{
	return has_column_in(db, "candidate", col);
}

/* The tables, where missing: the candidate table with a column for each
 * knob.  SQLITE_OK or the error. */
static int create(sqlite3 *db)
{
	char cols[2048], sql[sizeof(schema_head) + sizeof(cols) + sizeof(schema_tail)];
	size_t o = 0;
	cols[0] = '\0';
	for (int k = 0; k < LK_N; k++)
		if (layout_knobs[k].flags & LK_STORE)
			o += (size_t)snprintf(cols + o, sizeof(cols) - o, " %s %s,",
					      layout_knobs[k].id, knob_type(k));
	snprintf(sql, sizeof(sql), "%s%s%s", schema_head, cols, schema_tail);
	return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

/* A column for each knob the candidate table lacks (a database from
 * before the knob). */
static int knob_columns(sqlite3 *db)
{
	/* The sweep's inputs (sweep.h), a candidate's profile and its price
	 * came after version 8: added where missing, whatever the version
	 * (NULL: not recorded; the sweep's 'hw' and price). */
	static const char *const later[][3] = {{"sweep", "inputs", "TEXT"},
					       {"candidate", "hw", "TEXT"},
					       {"candidate", "price_per_gpu_hour", "REAL"}};
	for (size_t i = 0; i < sizeof(later) / sizeof(later[0]); i++) {
		char sql[128];
		if (has_column_in(db, later[i][0], later[i][1]))
			continue;
		snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s %s", later[i][0],
			 later[i][1], later[i][2]);
		if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
			return sqlite3_errcode(db);
	}
	for (int k = 0; k < LK_N; k++) {
		char sql[128];
		int rc;
		if (!(layout_knobs[k].flags & LK_STORE) || has_column(db, layout_knobs[k].id))
			continue;
		snprintf(sql, sizeof(sql), "ALTER TABLE candidate ADD COLUMN %s %s",
			 layout_knobs[k].id, knob_type(k));
		if ((rc = sqlite3_exec(db, sql, NULL, NULL, NULL)) != SQLITE_OK)
			return rc;
	}
	return SQLITE_OK;
}

/* verdict_cols the candidate table lacks. */
static int verdict_columns(sqlite3 *db)
{
	for (size_t i = 0; i < sizeof(verdict_cols) / sizeof(verdict_cols[0]); i++) {
		char sql[128];
		int rc;
		if (has_column(db, verdict_cols[i][0]))
			continue;
		snprintf(sql, sizeof(sql), "ALTER TABLE candidate ADD COLUMN %s %s",
			 verdict_cols[i][0], verdict_cols[i][1]);
		if ((rc = sqlite3_exec(db, sql, NULL, NULL, NULL)) != SQLITE_OK)
			return rc;
	}
	return SQLITE_OK;
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

/* What a results database holds (dbfile.h). */
static const char *const store_tables[] = {"sweep", "candidate", NULL};
static const struct dbfile_kind store_kind = {"results database", store_tables};

int store_open_read(const char *path, sqlite3 **db, struct prism_err *err)
{
	return dbfile_accept(path, &store_kind, DBFILE_READ, NULL, db, err);
}

int store_open(const char *path, sqlite3 **db, struct prism_err *err)
{
	int ver = 0, had_mode = 0, rc;

	*db = NULL;
	/* "" and ":memory:" are databases that vanish on closing. */
	if (!path[0] || strcmp(path, ":memory:") == 0)
		return prism_err_set(
		    err, PRISM_EARG,
		    "'%s' is no file: the results would be lost (give a file name)", path);
	if ((rc = dbfile_open(path, &store_kind, DBFILE_WRITE, db, err)))
		return rc;
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
		rc = dbfile_check(*db, path, &store_kind, DBFILE_WRITE, "give another --db", err);
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
	    (ver >= 1 && ver <= 4 && sqlite3_exec(*db, migrate_4, NULL, NULL, NULL) != SQLITE_OK) ||
	    (ver >= 1 && ver <= 5 && !had_mode &&
	     sqlite3_exec(*db, migrate_5, NULL, NULL, NULL) != SQLITE_OK) ||
	    (ver >= 1 && ver <= 6 && sqlite3_exec(*db, migrate_6, NULL, NULL, NULL) != SQLITE_OK) ||
	    create(*db) != SQLITE_OK || knob_columns(*db) != SQLITE_OK ||
	    verdict_columns(*db) != SQLITE_OK ||
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

/* 0 when sweep id, found again as s, ran on s's inputs (recorded: was,
 * NULL where the prism that ran it, version, did not record them); else
 * PRISM_EARG naming what changed and how to start a new sweep. */
static int resume_inputs(sqlite3 *db, const struct sweep *s, long long id, const char *was,
			 const char *version, struct prism_err *err)
{
	char what[768], shown[64];

	if (was && !sweep_inputs_diff(was, s->inputs, what, sizeof(what)))
		return 0;
	if (!was) {
		dbfile_shown(version ? version : "?", shown, sizeof(shown));
		return prism_err_set(
		    err, PRISM_EARG,
		    "%s: sweep %s (id %lld) was run by prism %s, which did not record its inputs: "
		    "resuming could mix its rows with rows computed from others: start a new "
		    "sweep (another 'name' in %s, or another --db)",
		    sqlite3_db_filename(db, "main"), s->name, id, shown, s->path);
	}
	return prism_err_set(err, PRISM_EARG,
			     "%s: sweep %s (id %lld) ran on other inputs (changed since: %s): "
			     "resuming would mix its rows with rows computed from these: start a "
			     "new sweep (another 'name' in %s, or another --db), or put back the "
			     "inputs it ran with (prism report %s --sweep %lld lists them)",
			     sqlite3_db_filename(db, "main"), s->name, id, what, s->path,
			     sqlite3_db_filename(db, "main"), id);
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
	if (sqlite3_prepare_v2(db,
			       "SELECT id, base, mode, batch, config, inputs, version FROM sweep"
			       " WHERE name=?1",
			       -1, &st, NULL) != SQLITE_OK)
		return fail(db, "query", err);
	sqlite3_bind_text(st, 1, s->name, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *text = (const char *)sqlite3_column_text(st, 4);
		char *canon = NULL;
		int same;
		if (!text)
			continue;
		if (strcmp(text, s->text) == 0)
			break;
		/* A stored text that does not parse is another sweep; out of
		 * memory is not an answer (it would start the sweep anew). */
		if (s->canon && sweep_canon(text, &canon) == PRISM_ENOMEM) {
			sqlite3_finalize(st);
			return prism_err_set(err, PRISM_ENOMEM, "%s: out of memory",
					     sqlite3_db_filename(db, "main"));
		}
		same = s->canon && canon && strcmp(canon, s->canon) == 0;
		free(canon);
		if (same)
			break;
	}
	if (rc == SQLITE_ROW) {
		const char *mode = (const char *)sqlite3_column_text(st, 2);
		*id = sqlite3_column_int64(st, 0);
		*resumed = 1;
		snprintf(run->was_mode, sizeof(run->was_mode), "%s", mode ? mode : "");
		run->was_batch = sqlite3_column_type(st, 3) == SQLITE_INTEGER
				     ? (int)sqlite3_column_int64(st, 3)
				     : 0;
		/* The same sweep file over changed inputs is not a resume: its
		 * rows would mix with rows of other inputs. */
		if ((rc = resume_inputs(db, s, *id, (const char *)sqlite3_column_text(st, 5),
					(const char *)sqlite3_column_text(st, 6), err))) {
			sqlite3_finalize(st);
			return rc;
		}
	}
	sqlite3_finalize(st);
	/* Resumed: its rows must be ones prism could have written. */
	if (*resumed)
		return store_rows_check(db, sqlite3_db_filename(db, "main"), *id, err);
	if (sqlite3_prepare_v2(
		db,
		"INSERT INTO sweep(name, config, model, hw, version, started, base,"
		" tokens, price_per_gpu_hour, mode, batch, inputs) VALUES(?1, ?2, ?3, ?4,"
		" ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
		-1, &st, NULL) != SQLITE_OK)
		return fail(db, "insert", err);
	sqlite3_bind_text(st, 1, s->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, s->text, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, s->m.name, -1, SQLITE_STATIC);
	{
		/* Its profiles, comma-separated. */
		char ids[SWEEP_MAX_HW * 65] = "";
		for (int i = 0, o = 0; i < s->n_hw; i++)
			o += snprintf(ids + o, sizeof(ids) - (size_t)o, "%s%s", i ? "," : "",
				      s->hw[i].id);
		sqlite3_bind_text(st, 4, ids, -1, SQLITE_TRANSIENT);
	}
	sqlite3_bind_text(st, 5, cli_version(), -1, SQLITE_STATIC);
	sqlite3_bind_double(st, 6, (double)time(NULL));
	if (s->fingerprint[0])
		sqlite3_bind_text(st, 7, s->fingerprint, -1, SQLITE_STATIC);
	if (s->tokens > 0)
		sqlite3_bind_double(st, 8, s->tokens);
	if (s->price_per_gpu_hour > 0)
		sqlite3_bind_double(st, 9, s->price_per_gpu_hour);
	sqlite3_bind_text(st, 10, run->mode, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 11, run->batch);
	sqlite3_bind_text(st, 12, s->inputs, -1, SQLITE_STATIC);
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

/* The candidate table's columns store_put writes, in order: these, then
 * the knobs' (LK_STORE). */
static const char *const result_cols[] = {"sweep",
					  "key",
					  "gpus",
					  "status",
					  "reason",
					  "analytic_s",
					  "iter_s",
					  "bubble",
					  "tokens_per_s",
					  "mfu",
					  "gpu_hours",
					  "mem_gb",
					  "fits",
					  "exposed_compute_s",
					  "exposed_comm_s",
					  "overlap_s",
					  "idle_s",
					  "bound_s",
					  "method",
					  "mem_stage",
					  "mem_weights_gb",
					  "mem_grads_gb",
					  "mem_optimizer_gb",
					  "mem_buffers_gb",
					  "mem_activations_gb",
					  "mem_transient_gb",
					  "mem_fragmentation_gb",
					  "mem_verdict",
					  "mem_margin_gb",
					  "hw",
					  "price_per_gpu_hour"};
enum {
	C_SWEEP = 1,
	C_KEY,
	C_GPUS,
	C_STATUS,
	C_REASON,
	C_ANALYTIC,
	C_ITER,
	C_BUBBLE,
	C_TPS,
	C_MFU,
	C_GPUH,
	C_MEM_GB,
	C_FITS,
	C_EXP_COMPUTE,
	C_EXP_COMM,
	C_OVERLAP,
	C_IDLE,
	C_BOUND,
	C_METHOD,
	C_MEM_STAGE,
	C_MEM_WEIGHTS,
	C_MEM_GRADS,
	C_MEM_OPT,
	C_MEM_BUFFERS,
	C_MEM_ACTS,
	C_MEM_TRANSIENT,
	C_MEM_FRAG,
	C_MEM_VERDICT,
	C_MEM_MARGIN,
	C_HW,
	C_PRICE,
	C_KNOBS /* the first knob's */
};
_Static_assert(sizeof(result_cols) / sizeof(result_cols[0]) == C_KNOBS - 1,
	       "a name for each result column");

/* The INSERT of store_put into sql (n bytes). */
static void insert_sql(char *sql, size_t n)
{
	size_t o = (size_t)snprintf(sql, n, "INSERT OR REPLACE INTO candidate(");
	int cols = 0;
	for (size_t i = 0; i < sizeof(result_cols) / sizeof(result_cols[0]); i++, cols++)
		o += (size_t)snprintf(sql + o, n - o, "%s%s", cols ? ", " : "", result_cols[i]);
	for (int k = 0; k < LK_N; k++)
		if (layout_knobs[k].flags & LK_STORE)
			o += (size_t)snprintf(sql + o, n - o, ", %s", layout_knobs[k].id), cols++;
	o += (size_t)snprintf(sql + o, n - o, ") VALUES(");
	for (int i = 1; i <= cols; i++)
		o += (size_t)snprintf(sql + o, n - o, "%s?%d", i > 1 ? "," : "", i);
	snprintf(sql + o, n - o, ")");
}

/* Knob k of candidate in (its partition resolved: r) as column i.  Text
 * is bound where it lies, not copied (SQLITE_STATIC: a copy was a malloc
 * and a free per named knob of every row): a name from its knob's static
 * table, a partition written into part (n bytes), which must outlive the
 * row's sqlite3_step.  One buffer serves because the partition is the one
 * LK_PART knob: a second would need its own. */
static void bind_knob(sqlite3_stmt *st, int i, const struct synth_in *in, const struct layout *r,
		      int k, char *part, size_t n)
{
	switch (layout_knobs[k].kind) {
	case LK_NAME: /* the name as layout_format_shown writes it */
		sqlite3_bind_text(st, i, layout_knobs[k].name((int)layout_shown(&in->m, r, k)), -1,
				  SQLITE_STATIC);
		break;
	case LK_PART:
		layout_format_shown(&in->m, r, k, part, n);
		sqlite3_bind_text(st, i, part, -1, SQLITE_STATIC);
		break;
	case LK_REAL:
		sqlite3_bind_double(st, i, layout_shown(&in->m, r, k));
		break;
	default:
		sqlite3_bind_int(st, i, (int)layout_shown(&in->m, r, k));
	}
}

void store_put_end(sqlite3_stmt *keep)
{
	sqlite3_finalize(keep);
}

int store_begin(sqlite3 *db, struct prism_err *err)
{
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return fail(db, "begin", err);
	return 0;
}

int store_end(sqlite3 *db, int rc, struct prism_err *err)
{
	if (rc == 0 && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
		return 0;
	if (rc == 0)
		rc = fail(db, "write", err);
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

int store_put(sqlite3 *db, long long id, const struct cand *c, size_t n, sqlite3_stmt **keep,
	      struct prism_err *err)
{
	int rc;
	if (n == 0)
		return 0;
	if ((rc = store_begin(db, err)))
		return rc;
	return store_end(db, store_rows(db, id, c, n, keep, err), err);
}

int store_rows(sqlite3 *db, long long id, const struct cand *c, size_t n, sqlite3_stmt **keep,
	       struct prism_err *err)
{
	sqlite3_stmt *st = keep ? *keep : NULL;
	char part[1600]; /* a row's partition, bound where it lies (bind_knob) */
	int ok = 1, rc;

	if (n == 0)
		return 0;
	if (!st) {
		/* Prepared once for a writer's batches (keep): the statement
		 * of an INSERT this wide costs as much as a batch's rows. */
		char sql[4096];
		insert_sql(sql, sizeof(sql));
		if (sqlite3_prepare_v3(db, sql, -1, keep ? SQLITE_PREPARE_PERSISTENT : 0, &st,
				       NULL) != SQLITE_OK)
			return fail(db, "insert", err);
		if (keep)
			*keep = st;
	}
	for (size_t i = 0; ok && i < n; i++) {
		const struct cand *k = &c[i];
		int sim = k->status == CS_SIMULATED, col = C_KNOBS;
		struct layout placed;
		const struct layout *r = &k->placed;
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		sqlite3_bind_int64(st, C_SWEEP, id);
		sqlite3_bind_text(st, C_KEY, k->key, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, C_GPUS, k->gpus);
		sqlite3_bind_text(st, C_STATUS, cand_status_name(k->status), -1, SQLITE_STATIC);
		sqlite3_bind_text(st, C_HW, k->in.hw->id, -1, SQLITE_STATIC);
		if (k->price > 0)
			sqlite3_bind_double(st, C_PRICE, k->price);
		/* The knobs, the partition as placed (by the judging where it
		 * estimated the memory). */
		if (k->placed.pp <= 0) {
			synth_mem_layout(&k->in, &placed);
			r = &placed;
		}
		for (int j = 0; j < LK_N; j++)
			if (layout_knobs[j].flags & LK_STORE)
				bind_knob(st, col++, &k->in, r, j, part, sizeof(part));
		if (k->status != CS_INVALID && k->status != CS_PENDING) {
			/* The memory of every candidate that has a layout: the
			 * stage needing the most, and its breakdown. */
			const struct mem_est *me = &k->p.mem;
			sqlite3_bind_int(st, C_MEM_STAGE, me->stage);
			sqlite3_bind_double(st, C_MEM_WEIGHTS, me->weights / 1e9);
			sqlite3_bind_double(st, C_MEM_GRADS, me->grads / 1e9);
			sqlite3_bind_double(st, C_MEM_OPT, me->optimizer / 1e9);
			sqlite3_bind_double(st, C_MEM_BUFFERS, me->buffers / 1e9);
			sqlite3_bind_double(st, C_MEM_ACTS, me->activations / 1e9);
			sqlite3_bind_double(st, C_MEM_TRANSIENT, me->transient / 1e9);
			sqlite3_bind_double(st, C_MEM_FRAG, me->fragmentation / 1e9);
			sqlite3_bind_text(st, C_MEM_VERDICT, mem_verdict_name(me->verdict, 1), -1,
					  SQLITE_STATIC);
			sqlite3_bind_double(st, C_MEM_MARGIN, me->margin / 1e9);
		}
		if (k->reason[0])
			sqlite3_bind_text(st, C_REASON, k->reason, -1, SQLITE_STATIC);
		if (k->analytic_s > 0)
			sqlite3_bind_double(st, C_ANALYTIC, k->analytic_s);
		if (k->bound_s > 0)
			sqlite3_bind_double(st, C_BOUND, k->bound_s);
		if (sim) {
			sqlite3_bind_double(st, C_ITER, k->p.iter_s);
			sqlite3_bind_double(st, C_BUBBLE, k->p.bubble);
			sqlite3_bind_double(st, C_TPS, k->p.tokens_per_s);
			sqlite3_bind_double(st, C_MFU, k->p.mfu);
			sqlite3_bind_double(st, C_GPUH, k->p.gpu_hours);
			sqlite3_bind_double(st, C_MEM_GB, k->p.mem.total / 1e9);
			sqlite3_bind_int(st, C_FITS, k->p.mem.fits);
			sqlite3_bind_double(st, C_EXP_COMPUTE, k->p.exposed_compute_s);
			sqlite3_bind_double(st, C_EXP_COMM, k->p.exposed_comm_s);
			sqlite3_bind_double(st, C_OVERLAP, k->p.overlap_s);
			sqlite3_bind_double(st, C_IDLE, k->p.idle_s);
			sqlite3_bind_text(st, C_METHOD, predict_method_name(k->p.method), -1,
					  SQLITE_STATIC);
		}
		ok = sqlite3_step(st) == SQLITE_DONE;
	}
	/* The error, before the statement is reset. */
	rc = ok ? 0 : fail(db, "write", err);
	if (keep) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
	} else {
		sqlite3_finalize(st);
	}
	return rc;
}

int store_best(sqlite3 *db, long long id, const struct sweep *s, int *gpus, int *hw, int *seq,
	       double *best, int max)
{
	sqlite3_stmt *st;
	int n = 0;
	if (sqlite3_prepare_v2(
		db,
		"SELECT gpus, hw, seq, MIN(iter_s) FROM candidate WHERE sweep=?1 AND "
		"status='simulated' GROUP BY gpus, hw, seq",
		-1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(st, 1, id);
	while (n < max && sqlite3_step(st) == SQLITE_ROW) {
		const char *h = (const char *)sqlite3_column_text(st, 1);
		gpus[n] = sqlite3_column_int(st, 0);
		hw[n] = 0;
		for (int i = 0; h && i < s->n_hw; i++)
			if (strcmp(h, s->hw[i].id) == 0)
				hw[n] = i;
		seq[n] = sqlite3_column_int(st, 2);
		best[n] = sqlite3_column_double(st, 3);
		n++;
	}
	sqlite3_finalize(st);
	return n;
}

/*
 * What store_put writes into each column, for the rows read back (a
 * report, a resume): NULL, or a number in lo..hi.  The columns the report
 * computes with are held to what prism could have written (a time of
 * 1e306 s would make the chart's tick loop run for ever, a knob of 1e300
 * is no int); the breakdowns it only copies, to finite bounds.
 */
#define STORE_MAX_S   ((double)PRISM_TIME_MAX / 1e9) /* the longest time prism holds, s */
#define STORE_MAX_GB  1e12			     /* a petabyte per GPU */
#define STORE_MAX_TPS ((double)SWEEP_MAX_BATCH * LLM_MAX_SEQ / 1e-9)
static const struct store_range {
	const char *col;
	double lo, hi;
} store_ranges[] = {
    {"gpus", 1, LAYOUT_MAX_GPUS},
    {"analytic_s", 0, STORE_MAX_S},
    {"bound_s", 0, STORE_MAX_S},
    {"iter_s", 1e-9, STORE_MAX_S}, /* whole nanoseconds */
    {"bubble", 0, 1},
    {"tokens_per_s", 0, STORE_MAX_TPS},
    {"mfu", 0, 100},
    {"gpu_hours", 0, LAYOUT_MAX_GPUS *STORE_MAX_S / 3600},
    {"mem_gb", 0, STORE_MAX_GB},
    {"fits", 0, 1},
    {"exposed_compute_s", -STORE_MAX_S, STORE_MAX_S},
    {"exposed_comm_s", -STORE_MAX_S, STORE_MAX_S},
    {"overlap_s", -STORE_MAX_S, STORE_MAX_S},
    {"idle_s", -STORE_MAX_S, STORE_MAX_S},
    {"mem_stage", 0, LAYOUT_MAX_STAGES *LAYOUT_MAX_VP},
    {"mem_weights_gb", -STORE_MAX_GB, STORE_MAX_GB},
    {"mem_grads_gb", -STORE_MAX_GB, STORE_MAX_GB},
    {"mem_optimizer_gb", -STORE_MAX_GB, STORE_MAX_GB},
    {"mem_buffers_gb", -STORE_MAX_GB, STORE_MAX_GB},
    {"mem_activations_gb", -STORE_MAX_GB, STORE_MAX_GB},
    {"mem_transient_gb", -STORE_MAX_GB, STORE_MAX_GB},
    {"mem_fragmentation_gb", -STORE_MAX_GB, STORE_MAX_GB},
    {"mem_margin_gb", -STORE_MAX_GB, STORE_MAX_GB},
    {"price_per_gpu_hour", 0, 1e6},
};
#define N_RANGES (sizeof(store_ranges) / sizeof(store_ranges[0]))

/* The columns to check (those db has): the ranges above and the numeric
 * knobs' (lo..hi of layout.h) into c[], returning how many. */
static size_t checked_columns(sqlite3 *db, struct store_range *c)
{
	size_t n = 0;
	for (size_t i = 0; i < N_RANGES; i++)
		if (has_column(db, store_ranges[i].col))
			c[n++] = store_ranges[i];
	for (int k = 0; k < LK_N; k++) {
		const struct layout_knob *K = &layout_knobs[k];
		if ((K->flags & LK_STORE) && K->kind != LK_NAME && K->kind != LK_PART &&
		    has_column(db, K->id))
			c[n++] = (struct store_range){K->id, K->lo, K->hi};
	}
	return n;
}

/* 1 when column i of st is NULL or a number in r's range. */
static int in_range(sqlite3_stmt *st, int i, const struct store_range *r)
{
	int t = sqlite3_column_type(st, i);
	double v = sqlite3_column_double(st, i);
	return t == SQLITE_NULL ||
	       ((t == SQLITE_INTEGER || t == SQLITE_FLOAT) && v >= r->lo && v <= r->hi);
}

int store_rows_check(sqlite3 *db, const char *path, long long id, struct prism_err *err)
{
	struct store_range c[N_RANGES + LK_N];
	size_t nc = checked_columns(db, c), o;
	sqlite3_stmt *st;
	char sql[8192];
	long long rows = 0;
	int rc;

	/* A sweep has at most SWEEP_MAX_CANDIDATES candidates. */
	if (sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM candidate WHERE sweep=?1", -1, &st,
			       NULL) != SQLITE_OK)
		return dbfile_fail(db, sqlite3_errcode(db), path, &store_kind, err);
	sqlite3_bind_int64(st, 1, id);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		rows = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return dbfile_fail(db, rc, path, &store_kind, err);
	if (rows > SWEEP_MAX_CANDIDATES)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s: sweep %lld holds %lld candidates, more than a sweep has "
				     "(%u): not what prism writes",
				     path, id, rows, SWEEP_MAX_CANDIDATES);
	/* The first row with a column out of range, in one pass. */
	o = (size_t)snprintf(sql, sizeof(sql), "SELECT key");
	for (size_t i = 0; i < nc; i++)
		o += (size_t)snprintf(sql + o, sizeof(sql) - o, ", %s", c[i].col);
	o += (size_t)snprintf(sql + o, sizeof(sql) - o, " FROM candidate WHERE sweep=?1 AND (0");
	for (size_t i = 0; i < nc && o < sizeof(sql); i++)
		o += (size_t)snprintf(sql + o, sizeof(sql) - o,
				      " OR NOT (%s IS NULL OR (typeof(%s) IN ('integer', 'real') "
				      "AND %s BETWEEN %.17g AND %.17g))",
				      c[i].col, c[i].col, c[i].col, c[i].lo, c[i].hi);
	if (o + sizeof(") LIMIT 1") > sizeof(sql))
		return prism_err_set(err, PRISM_EINTERNAL,
				     "store_rows_check: the query is too long");
	snprintf(sql + o, sizeof(sql) - o, ") LIMIT 1");
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return dbfile_fail(db, sqlite3_errcode(db), path, &store_kind, err);
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(st, 0);
		char k[96];
		size_t i = 0;
		while (i + 1 < nc && in_range(st, (int)i + 1, &c[i]))
			i++;
		dbfile_shown(key ? key : "", k, sizeof(k));
		if (sqlite3_column_type(st, (int)i + 1) == SQLITE_INTEGER ||
		    sqlite3_column_type(st, (int)i + 1) == SQLITE_FLOAT)
			rc = prism_err_set(err, PRISM_EFORMAT,
					   "%s: sweep %lld, candidate '%s': %s %g is outside "
					   "%g..%g: not what prism writes",
					   path, id, k, c[i].col,
					   sqlite3_column_double(st, (int)i + 1), c[i].lo, c[i].hi);
		else
			rc =
			    prism_err_set(err, PRISM_EFORMAT,
					  "%s: sweep %lld, candidate '%s': %s is not a number: not "
					  "what prism writes",
					  path, id, k, c[i].col);
	} else {
		rc = rc == SQLITE_DONE ? 0 : dbfile_fail(db, rc, path, &store_kind, err);
	}
	sqlite3_finalize(st);
	return rc;
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
	if (rc != SQLITE_DONE)
		return fail(db, "update", err);
	/* Out of WAL mode once the sweep is done: a rollback-journal file is
	 * read from a folder prism cannot write (WAL needs a -shm file beside
	 * it).  Where another process has the file open this fails, and the
	 * file stays in WAL mode: no matter. */
	sqlite3_busy_timeout(db, 0);
	sqlite3_exec(db, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL);
	return 0;
}
