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

/* Add the rows of file path (an SQLite database that kdbstore_save wrote)
 * to db.  0, or PRISM_EIO / PRISM_EFORMAT naming the file (and the row and
 * field at fault), or PRISM_ENOMEM. */
int kdbstore_load(struct kdb *db, const char *path, struct prism_err *err);

/* Write every row of db to path (created if absent; its rows replaced in
 * one transaction).  0, or PRISM_EIO naming the file. */
int kdbstore_save(const struct kdb *db, const char *path, struct prism_err *err);

#endif
