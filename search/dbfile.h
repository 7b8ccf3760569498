/*
 * dbfile.h - an SQLite file from anyone, opened so that nothing it says
 * can act.
 *
 * prism's databases (the results database, store.h; the kernel database,
 * kdbstore.h) come from colleagues, shared folders, anyone.  SQLite runs
 * what a file's schema says: a view or a trigger under a prism table's
 * name runs on every read or write of it (a view over an endless
 * recursive query never returns; a trigger rewrites what prism stores).
 * So a file is opened here as follows, and nothing else is trusted:
 *   - by name only when it is a regular file (or, to be created, absent):
 *     a FIFO blocks whoever opens it, a device is no database;
 *   - as a file name, never a URI;
 *   - SQLITE_DBCONFIG_DEFENSIVE (no writable schema, no corrupting
 *     pragmas) and trusted_schema off (no function with side effects run
 *     from the schema);
 *   - dbfile_check: sqlite_master holds the kind's tables (each a plain
 *     CREATE TABLE, no generated columns) and their automatic indexes, and
 *     nothing else -- no view, trigger, index or other table -- and the
 *     file passes PRAGMA quick_check (to read it) or integrity_check
 *     (before writing into it: it also compares every index with its
 *     table, so a key changed by hand is found).
 * A database in WAL mode is read from a folder prism cannot write (no
 * -shm file can be made there) as immutable, where no write-ahead log lies
 * beside it (nothing then is in the log, and no writer is at work).
 * Nothing here prints.
 */
#ifndef PRISM_DBFILE_H
#define PRISM_DBFILE_H

#include <sqlite3.h>

#include "prism.h"

/* What a kind of database holds. */
struct dbfile_kind {
	const char *what;	   /* "results database", "kernel database" */
	const char *const *tables; /* its tables, NULL-terminated */
};

enum {
	DBFILE_READ,  /* read only: the file must exist */
	DBFILE_WRITE, /* read and write: created where absent */
};

/* Open the file at path, a database of kind k, (mode DBFILE_*) into *db,
 * configured as above.  0, or PRISM_EARG / PRISM_EIO / PRISM_EFORMAT (not
 * a database) / PRISM_ENOMEM with err naming the file (*db NULL). */
int dbfile_open(const char *path, const struct dbfile_kind *k, int mode, sqlite3 **db,
		struct prism_err *err);

/* Whether db (opened from path by dbfile_open in mode) is a database of
 * kind k: its tables and their automatic indexes alone (all of them when
 * reading; any of them, or none, before writing), undamaged.  0, or
 * PRISM_EFORMAT "PATH: not a prism WHAT (it holds view candidate): HINT"
 * (hint, when not NULL, says what to do) / "PATH: the database is damaged
 * (...)", PRISM_ENOMEM or PRISM_EIO. */
int dbfile_check(sqlite3 *db, const char *path, const struct dbfile_kind *k, int mode,
		 const char *hint, struct prism_err *err);

/* dbfile_open, then dbfile_check: the file at path opened in mode only
 * where it is a database of kind k.  0, or the error (*db NULL). */
int dbfile_accept(const char *path, const struct dbfile_kind *k, int mode, const char *hint,
		  sqlite3 **db, struct prism_err *err);

/* The error of a query on path (a database of kind k) that failed with
 * SQLite code rc: not such a database or damaged (PRISM_EFORMAT), out of
 * memory, or another failure to read it (PRISM_EIO).  Returns the code. */
int dbfile_fail(sqlite3 *db, int rc, const char *path, const struct dbfile_kind *k,
		struct prism_err *err);

/* Text s (from a database) made fit for a one-line message into buf (n
 * bytes): its first bytes, every byte outside printable ASCII '?', "..."
 * where cut. */
void dbfile_shown(const char *s, char *buf, size_t n);

#endif
