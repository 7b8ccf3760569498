/* dbfile.c - SQLite files from anyone (dbfile.h). */
#include "dbfile.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

void dbfile_shown(const char *s, char *buf, size_t n)
{
	size_t i = 0;
	for (; s[i] && i + 1 < n; i++)
		buf[i] = s[i] >= ' ' && s[i] < 0x7f ? s[i] : '?';
	buf[i] = '\0';
	if (s[i] && n > 4)
		memcpy(buf + n - 4, "...", 4);
}

int dbfile_fail(sqlite3 *db, int rc, const char *path, const struct dbfile_kind *k,
		struct prism_err *err)
{
	const char *msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
	switch (rc & 0xff) {
	case SQLITE_NOTADB:
		return prism_err_set(err, PRISM_EFORMAT, "%s: not a prism %s (%s)", path,
				     k ? k->what : "database", msg);
	case SQLITE_CORRUPT:
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s: the database is damaged (%s): restore it or use another",
				     path, msg);
	case SQLITE_NOMEM:
		return prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
	case SQLITE_READONLY:
	case SQLITE_CANTOPEN:
		/* A write-ahead log left by a search that did not finish, in
		 * a folder prism cannot write. */
		return prism_err_set(err, PRISM_EIO,
				     "%s: cannot read the database (%s; its write-ahead log %s-wal "
				     "needs a folder prism may write)",
				     path, msg, path);
	}
	return prism_err_set(err, PRISM_EIO, "%s: cannot read the database (%s)", path, msg);
}

/* Nothing in the file may act: no writable schema, no function with side
 * effects run from it, no view or trigger at all (dbfile_check refuses
 * them by name first; these hold whatever it missed). */
static void defend(sqlite3 *db)
{
	sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
	sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL);
#ifdef SQLITE_DBCONFIG_ENABLE_VIEW
	sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, NULL);
#endif
	sqlite3_busy_timeout(db, 10000);
}

/* "file:PATH?immutable=1" into buf (n bytes), PATH percent-encoded: 0, or
 * -1 when it does not fit. */
static int immutable_uri(const char *path, char *buf, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	/* "file:///abs" for an absolute path, so that "//x" names no host. */
	size_t o = (size_t)snprintf(buf, n, "%s", path[0] == '/' ? "file://" : "file:");
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if (o + 4 >= n)
			return -1;
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("/._~-", *p)) {
			buf[o++] = (char)*p;
		} else {
			buf[o++] = '%';
			buf[o++] = hex[*p >> 4];
			buf[o++] = hex[*p & 15];
		}
	}
	return (size_t)snprintf(buf + o, n - o, "?immutable=1") < n - o ? 0 : -1;
}

/* 1 when no write-ahead log with anything in it lies beside path. */
static int no_log(const char *path)
{
	char wal[4200];
	struct stat sb;
	if (snprintf(wal, sizeof(wal), "%s-wal", path) >= (int)sizeof(wal))
		return 0;
	return stat(wal, &sb) != 0 ? errno == ENOENT : sb.st_size == 0;
}

/* Open name (flags) into *db, defended; reading, read its schema once, so
 * that a file that cannot be read fails here.  The SQLite code. */
static int open_as(const char *name, int flags, sqlite3 **db)
{
	int rc = sqlite3_open_v2(name, db, flags, NULL);
	if (rc != SQLITE_OK)
		return rc;
	defend(*db);
	if (flags & SQLITE_OPEN_READWRITE)
		return SQLITE_OK;
	return sqlite3_exec(*db, "SELECT 1 FROM sqlite_master LIMIT 1", NULL, NULL, NULL);
}

int dbfile_open(const char *path, const struct dbfile_kind *k, int mode, sqlite3 **db,
		struct prism_err *err)
{
	char name[4200];
	int rc;

	*db = NULL;
	if ((rc = cli_not_special(path, err)))
		return rc;
	/* A path, never a URI, whatever SQLite was built with. */
	if (snprintf(name, sizeof(name), "%s%s", strncmp(path, "file:", 5) == 0 ? "./" : "",
		     path) >= (int)sizeof(name))
		return cli_path_long("the database", path, sizeof(name) - 3, err);
	rc = open_as(name,
		     mode == DBFILE_WRITE ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
					  : SQLITE_OPEN_READONLY,
		     db);
	/* In WAL mode, reading needs a -shm file beside the database; where
	 * the folder is not prism's to write and no log is there, the file
	 * alone is the database: read it as immutable. */
	if (mode == DBFILE_READ && rc != SQLITE_OK && *db &&
	    ((rc & 0xff) == SQLITE_READONLY || (rc & 0xff) == SQLITE_CANTOPEN) &&
	    access(path, F_OK) == 0 && no_log(path) &&
	    immutable_uri(path, name, sizeof(name)) == 0) {
		sqlite3_close(*db);
		*db = NULL;
		rc = open_as(name, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, db);
	}
	if (rc == SQLITE_OK)
		return 0;
	if (!*db)
		rc = prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
	else if ((rc & 0xff) == SQLITE_CANTOPEN && sqlite3_system_errno(*db))
		rc = prism_err_set(err, PRISM_EIO, "%s: %s", path,
				   strerror(sqlite3_system_errno(*db)));
	else
		rc = dbfile_fail(*db, rc, path, k, err);
	sqlite3_close(*db);
	*db = NULL;
	return rc;
}

/* The index of name in tables[], or -1. */
static int table_index(const char *const *tables, const char *name)
{
	for (int i = 0; tables[i]; i++)
		if (strcmp(tables[i], name) == 0)
			return i;
	return -1;
}

/* 1 when sqlite_master's row (type, name, tbl_name, sql) is one of k's
 * tables (its index into *found set) or their automatic indexes. */
static int expected(const struct dbfile_kind *k, const char *type, const char *name,
		    const char *tbl, const char *sql, unsigned *found)
{
	int t = tbl ? table_index(k->tables, tbl) : -1;
	if (t < 0 || !type || !name)
		return 0;
	if (strcmp(type, "table") == 0 && strcmp(name, tbl) == 0 && sql &&
	    strncmp(sql, "CREATE TABLE ", 13) == 0) {
		*found |= 1u << t;
		return 1;
	}
	return strcmp(type, "index") == 0 && strncmp(name, "sqlite_autoindex_", 17) == 0 && !sql;
}

/* The schema: k's tables and their automatic indexes, nothing else. */
static int check_schema(sqlite3 *db, const char *path, const struct dbfile_kind *k, int mode,
			const char *hint, struct prism_err *err)
{
	sqlite3_stmt *st;
	unsigned found = 0;
	int rc;

	if ((rc = sqlite3_prepare_v2(db, "SELECT type, name, tbl_name, sql FROM sqlite_master", -1,
				     &st, NULL)) != SQLITE_OK)
		return dbfile_fail(db, rc, path, k, err);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *type = (const char *)sqlite3_column_text(st, 0);
		const char *name = (const char *)sqlite3_column_text(st, 1);
		char a[32], b[96];
		if (expected(k, type, name, (const char *)sqlite3_column_text(st, 2),
			     (const char *)sqlite3_column_text(st, 3), &found))
			continue;
		dbfile_shown(type ? type : "", a, sizeof(a));
		dbfile_shown(name ? name : "", b, sizeof(b));
		rc = prism_err_set(err, PRISM_EFORMAT, "%s: not a prism %s (it holds %s %s)%s%s",
				   path, k->what, a, b, hint ? ": " : "", hint ? hint : "");
		sqlite3_finalize(st);
		return rc;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return dbfile_fail(db, rc, path, k, err);
	for (int i = 0; k->tables[i]; i++) {
		char sql[160];
		int generated = 0;
		if (!(found & (1u << i))) {
			if (mode == DBFILE_READ)
				return prism_err_set(err, PRISM_EFORMAT,
						     "%s: not a prism %s (it has no table %s)%s%s",
						     path, k->what, k->tables[i], hint ? ": " : "",
						     hint ? hint : "");
			continue;
		}
		/* Generated columns are the schema's code too. */
		snprintf(sql, sizeof(sql),
			 "SELECT COUNT(*) FROM pragma_table_xinfo('%s') WHERE hidden != 0",
			 k->tables[i]);
		if ((rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL)) != SQLITE_OK)
			return dbfile_fail(db, rc, path, k, err);
		if ((rc = sqlite3_step(st)) == SQLITE_ROW)
			generated = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
		if (rc != SQLITE_ROW)
			return dbfile_fail(db, rc, path, k, err);
		if (generated)
			return prism_err_set(err, PRISM_EFORMAT,
					     "%s: not a prism %s (its table %s has generated "
					     "columns)%s%s",
					     path, k->what, k->tables[i], hint ? ": " : "",
					     hint ? hint : "");
	}
	return 0;
}

int dbfile_check(sqlite3 *db, const char *path, const struct dbfile_kind *k, int mode,
		 const char *hint, struct prism_err *err)
{
	const char *pragma = mode == DBFILE_WRITE ? "integrity_check" : "quick_check";
	sqlite3_stmt *st;
	char sql[64], first[256] = "";
	int rc;

	if ((rc = check_schema(db, path, k, mode, hint, err)))
		return rc;
	snprintf(sql, sizeof(sql), "PRAGMA %s(1)", pragma);
	if ((rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL)) != SQLITE_OK)
		return dbfile_fail(db, rc, path, k, err);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *v = (const char *)sqlite3_column_text(st, 0);
		char line[256];
		/* The first finding on one line. */
		snprintf(line, sizeof(line), "%s", v ? v : "");
		for (char *c = line; *c; c++)
			*c = *c == '\n' ? ' ' : *c;
		dbfile_shown(line, first, sizeof(first));
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_OK)
		return dbfile_fail(db, rc, path, k, err);
	if (strcmp(first, "ok") == 0)
		return 0;
	return prism_err_set(err, PRISM_EFORMAT,
			     "%s: the database is damaged (%s: %s): restore it or use another",
			     path, pragma, first);
}

int dbfile_accept(const char *path, const struct dbfile_kind *k, int mode, const char *hint,
		  sqlite3 **db, struct prism_err *err)
{
	int rc;
	if ((rc = dbfile_open(path, k, mode, db, err)) == 0 &&
	    (rc = dbfile_check(*db, path, k, mode, hint, err))) {
		sqlite3_close(*db);
		*db = NULL;
	}
	return rc;
}
