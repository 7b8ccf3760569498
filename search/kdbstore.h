/*
 * kdbstore.h - the kernel database's file: SQLite, one table
 *   kernel(gpu, class, dtype, work, time_s, samples, shape)
 * primary key (gpu, class, dtype, work).  model/kdb.h holds the rows and
 * looks kernels up; this module reads and writes them, so that model/
 * knows no database.
 */
#ifndef PRISM_KDBSTORE_H
#define PRISM_KDBSTORE_H

#include "kdb.h"
#include "prism.h"

/* The most rows a kernel database holds (one per measured kernel shape of
 * a GPU, class and precision: a trace gives hundreds). */
#define KDBSTORE_MAX_ROWS (1 << 20)
/* The most work a row's kernel does, FLOPs or bytes (a GEMM of the largest
 * model's shapes does under 1e18). */
#define KDBSTORE_MAX_WORK 1e30

/* Add the rows of file path (an SQLite database that kdbstore_save wrote)
 * to db: a regular file holding the kernel table and its automatic index
 * alone, passing PRAGMA quick_check (dbfile.h), of at most
 * KDBSTORE_MAX_ROWS rows, each with a known class and dtype, work in
 * (0, KDBSTORE_MAX_WORK], time_s in (0, PRISM_TIME_MAX ns] and samples
 * >= 1.  0, or PRISM_EIO / PRISM_EFORMAT / PRISM_EARG naming the
 * file (and the row and field at fault), or PRISM_ENOMEM. */
int kdbstore_load(struct kdb *db, const char *path, struct prism_err *err);

/* Write every row of db to path (created if absent; its rows replaced in
 * one transaction), a file that is absent or a kernel database passing
 * PRAGMA integrity_check.  0, or PRISM_EIO / PRISM_EFORMAT / PRISM_EARG
 * naming the file. */
int kdbstore_save(const struct kdb *db, const char *path, struct prism_err *err);

#endif
