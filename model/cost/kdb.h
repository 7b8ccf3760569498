/*
 * kdb.h - the kernel database: measured kernel times by GPU, class, dtype
 * and work.  This module holds the rows and looks them up; the file they
 * live in (SQLite) is search/kdbstore.h's: the model knows no database.
 *
 * `prism calibrate TRACE... --db FILE` adds every GPU task of the traces
 * that calib_point() can place (class, work from its op's shapes: FLOPs
 * for GEMMs, attention and convolutions, bytes for the bandwidth-bound
 * classes) under the GPU of the trace's hardware profile.  Tasks of the same
 * GPU, class, dtype and work are one row: the median of their times and
 * their count.  A row met again (a second calibration) keeps the mean of
 * the two medians weighed by their counts.
 *
 * An estimate for a kernel of a class doing some work on a GPU looks the
 * work up among that GPU's rows of the class and dtype (any dtype for the
 * bandwidth-bound classes, whose bytes already count the element size):
 *   - the same work (within 1e-9 relative): that row's time;
 *   - between the smallest and the largest work of the rows: the time
 *     interpolated in log(time) over log(work) through them, with GSL's
 *     Steffen interpolation (monotone between points, no overshoot; linear
 *     between two rows);
 *   - outside them, or no rows: none, and the caller falls back to the
 *     roofline (calib.h).
 * Work alone places a kernel: GEMMs of the same FLOPs and other shapes get
 * the same time.  kdb_loo() says how well that holds on the rows
 * themselves.
 *
 * A loaded database is read-only: lookups from many threads are safe.
 */
#ifndef PRISM_KDB_H
#define PRISM_KDB_H

#include <stddef.h>

#include "graph.h"
#include "hw.h"
#include "prism.h"

struct kdb;

/* An empty database; NULL when out of memory. */
struct kdb *kdb_new(void);
void kdb_free(struct kdb *db);

/* Add one row (a reader's: search/kdbstore.h): GPU, the op's shape for
 * people, class, dtype (enum hw_dtype; ignored for the bandwidth-bound
 * classes), work, median time and samples.  0, or PRISM_ENOMEM.  Call
 * kdb_finish() after the last before looking anything up. */
int kdb_push(struct kdb *db, const char *gpu, const char *shape, int cls, int dtype, double work,
	     double time_s, double samples);

/* Sort and merge the rows pushed and build the curves.  0, or
 * PRISM_ENOMEM. */
int kdb_finish(struct kdb *db);

/* Row i (0 .. kdb_rows()-1) into *out (strings owned by db); 1, or 0
 * past the end. */
struct kdb_row {
	const char *gpu, *shape;
	int cls, dtype; /* dtype -1: any (bandwidth-bound) */
	double work, time_s, samples;
};
int kdb_row(const struct kdb *db, size_t i, struct kdb_row *out);

/* Add g's kernels measured on hw's GPU; *added: the tasks used.  0, or
 * PRISM_ENOMEM. */
int kdb_add_graph(struct kdb *db, const struct graph *g, const struct hw_profile *hw,
		  size_t *added);

/* Rows in all. */
size_t kdb_rows(const struct kdb *db);

enum { KDB_NONE, KDB_INTERPOLATED, KDB_EXACT };

/* The id of the GPU named gpu (hw_profile.gpu) in db, or -1 when db has no
 * row of it: resolve it once, then look kernels up by it. */
int kdb_gpu(const struct kdb *db, const char *gpu);

/*
 * The time of a kernel of class cls doing `work` (FLOPs or bytes, as
 * calib_point counts them) on GPU gpu (kdb_gpu), in dtype (enum hw_dtype;
 * ignored for the bandwidth-bound classes).  KDB_EXACT or KDB_INTERPOLATED
 * with *time_s set, or KDB_NONE.
 */
int kdb_time(const struct kdb *db, int gpu, int cls, int dtype, double work, double *time_s);

/* Leave-one-out over the rows of class cls on gpu: each row that is not
 * the first or last of its curve, predicted by interpolating the others.
 * *n rows predicted, the mean and median of |predicted - measured| /
 * measured. */
void kdb_loo(const struct kdb *db, const char *gpu, int cls, size_t *n, double *mean,
	     double *median);

#endif
