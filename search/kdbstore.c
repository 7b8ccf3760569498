/* kdbstore.c - the kernel database's SQLite file (see kdbstore.h). */
#include "kdbstore.h"

#include <math.h>
#include <sqlite3.h>
#include <string.h>

#include "calib.h"
#include "cost.h"
#include "dbfile.h"
#include "hw.h"

static int class_parse(const char *s)
{
	for (int k = 0; k < KC_NCLASSES; k++)
		if (strcmp(s, cost_class_name(k)) == 0)
			return k;
	return -1;
}

static const char schema[] = "CREATE TABLE IF NOT EXISTS kernel ("
			     " gpu TEXT NOT NULL,"   /* hw_profile.gpu of the trace's profile */
			     " class TEXT NOT NULL," /* cost_class_name */
			     " dtype TEXT NOT NULL," /* hw_dtype_name, or 'any' (bandwidth-bound) */
			     " work REAL NOT NULL,"  /* FLOPs or bytes */
			     " time_s REAL NOT NULL," /* median measured time */
			     " samples INTEGER NOT NULL,"
			     " shape TEXT," /* the op's Input Dims, for people */
			     " PRIMARY KEY (gpu, class, dtype, work))";

/* What a kernel database holds (dbfile.h). */
static const char *const kdb_tables[] = {"kernel", NULL};
static const struct dbfile_kind kdb_kind = {"kernel database", kdb_tables};

int kdbstore_load(struct kdb *db, const char *path, struct prism_err *err)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	int rc = 0, step;
	long line = 0;

	if ((rc = dbfile_accept(path, &kdb_kind, DBFILE_READ, NULL, &h, err)))
		return rc;
	if ((step = sqlite3_prepare_v2(h,
				       "SELECT gpu, class, dtype, work, time_s, samples, shape "
				       "FROM kernel ORDER BY rowid",
				       -1, &st, NULL)) != SQLITE_OK) {
		rc = dbfile_fail(h, step, path, &kdb_kind, err);
		sqlite3_close(h);
		return rc;
	}
	while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
		const char *gpu = (const char *)sqlite3_column_text(st, 0);
		const char *cname = (const char *)sqlite3_column_text(st, 1);
		const char *dname = (const char *)sqlite3_column_text(st, 2);
		const char *shape = (const char *)sqlite3_column_text(st, 6);
		double work = sqlite3_column_double(st, 3), t = sqlite3_column_double(st, 4);
		long n = (long)sqlite3_column_int64(st, 5);
		int cls = cname ? class_parse(cname) : -1, dt = -1;
		char cshown[64], dshown[64];
		dbfile_shown(cname ? cname : "", cshown, sizeof(cshown));
		dbfile_shown(dname ? dname : "", dshown, sizeof(dshown));
		if (++line > KDBSTORE_MAX_ROWS)
			rc = prism_err_set(err, PRISM_EFORMAT,
					   "%s: more than %d rows: not what prism writes", path,
					   KDBSTORE_MAX_ROWS);
		else if (cls < 0 || !calib_fitted_class(cls))
			rc = prism_err_set(err, PRISM_EFORMAT, "%s: row %ld: class: unknown '%s'",
					   path, line, cshown);
		else if (cost_compute_bound(cls) && (!dname || (dt = hw_dtype_parse(dname)) < 0))
			rc = prism_err_set(err, PRISM_EFORMAT, "%s: row %ld: dtype: unknown '%s'",
					   path, line, dshown);
		else if (!(work > 0 && work <= KDBSTORE_MAX_WORK) ||
			 !(t > 0 && t <= (double)PRISM_TIME_MAX / 1e9) || n < 1)
			rc = prism_err_set(err, PRISM_EFORMAT,
					   "%s: row %ld: work, time_s and samples must be positive "
					   "(work at most %g, time_s at most %g)",
					   path, line, KDBSTORE_MAX_WORK,
					   (double)PRISM_TIME_MAX / 1e9);
		else if (!gpu || !*gpu)
			rc = prism_err_set(err, PRISM_EFORMAT, "%s: row %ld: gpu: empty", path,
					   line);
		else if (kdb_push(db, gpu, shape, cls, dt, work, t, (double)n))
			rc = prism_err_set(err, PRISM_ENOMEM, "out of memory");
	}
	if (!rc && step != SQLITE_DONE)
		rc = dbfile_fail(h, step, path, &kdb_kind, err);
	sqlite3_finalize(st);
	sqlite3_close(h);
	if (!rc && kdb_finish(db))
		rc = prism_err_set(err, PRISM_ENOMEM, "out of memory");
	return rc;
}

int kdbstore_save(const struct kdb *db, const char *path, struct prism_err *err)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	int ok;

	if (dbfile_accept(path, &kdb_kind, DBFILE_WRITE, NULL, &h, err))
		return err->code;
	ok = sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK &&
	     sqlite3_exec(h, schema, NULL, NULL, NULL) == SQLITE_OK &&
	     sqlite3_exec(h, "DELETE FROM kernel", NULL, NULL, NULL) == SQLITE_OK &&
	     sqlite3_prepare_v2(
		 h,
		 "INSERT INTO kernel (gpu, class, dtype, work, time_s, samples, shape)"
		 " VALUES (?, ?, ?, ?, ?, ?, ?)",
		 -1, &st, NULL) == SQLITE_OK;
	for (size_t i = 0; ok && i < kdb_rows(db); i++) {
		struct kdb_row r;
		kdb_row(db, i, &r);
		sqlite3_bind_text(st, 1, r.gpu, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, cost_class_name(r.cls), -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, r.dtype >= 0 ? hw_dtype_name(r.dtype) : "any", -1,
				  SQLITE_STATIC);
		sqlite3_bind_double(st, 4, r.work);
		sqlite3_bind_double(st, 5, r.time_s);
		sqlite3_bind_int64(st, 6, (sqlite3_int64)llround(r.samples));
		sqlite3_bind_text(st, 7, r.shape, -1, SQLITE_STATIC);
		ok = sqlite3_step(st) == SQLITE_DONE && sqlite3_reset(st) == SQLITE_OK;
	}
	sqlite3_finalize(st);
	if (ok)
		ok = sqlite3_exec(h, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
	if (!ok) {
		int rc = prism_err_set(err, PRISM_EIO, "%s: %s", path, sqlite3_errmsg(h));
		sqlite3_close(h);
		return rc;
	}
	sqlite3_close(h);
	return 0;
}
