/*
 * writer.h - a search's batches of rows stored in order, by a thread of
 * their own where the search has more than one.
 *
 * Storing a batch (store_put: SQLite's inserts and its COMMIT) is serial,
 * and the sweep's other work waits for it when process 0 stores between
 * its parallel phases: 13 % of the default sweep's time on one thread,
 * which kept two threads at ~1.5x one (docs/PERFORMANCE.md).  A writer
 * thread stores each batch while the pool makes and simulates the next
 * ones; the batches it has not stored yet wait in a ring of slots, in the
 * order they were put, so the database receives the same rows in the same
 * transactions as when they are stored at once.
 *
 *   writer_new     slots of `cap` candidates: a thread storing them in
 *                  order into db (threaded), or none (each batch stored at
 *                  once by writer_put; db NULL: nothing stored, a process
 *                  other than 0's)
 *   writer_slot    the slot to fill next (waits while every slot holds a
 *                  batch not yet stored)
 *   writer_put     that slot's first n candidates handed on to be stored
 *   writer_put_made  candidates to be made by the writer (their indices)
 *                  and stored, in the same order
 *   writer_finish  every batch put stored, the thread ended: 0, or the
 *                  first failure (its error)
 *
 * A batch is never split between transactions, so a kill at any time
 * leaves a prefix of the batches stored and the sweep resumes after it.
 * Not threaded, each batch is a transaction of its own.  The thread's
 * transaction takes the oldest batch queued and those queued behind it by
 * the time its rows are in (up to 4,096 rows): a writer behind commits
 * them together (a COMMIT costs three quarters of a 32-row batch's
 * storing), and a kill loses at most the batches queued, as before.  One
 * thread drives a writer (writer_slot, writer_put, writer_finish).
 */
#ifndef PRISM_WRITER_H
#define PRISM_WRITER_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "prism.h"
#include "sweep.h"

struct writer;

/* NULL when out of memory or the thread could not start (errno set). */
struct writer *writer_new(sqlite3 *db, long long sid, int cap, int slots, int threaded);

/* The slot to fill: cap candidates.  NULL after a failure (writer_put
 * says which). */
struct cand *writer_slot(struct writer *w);

/* The slot writer_slot gave, its first n candidates, stored (threaded:
 * queued to be).  0, or the first failure so far (PRISM_EIO, err set): a
 * threaded writer reports a batch's failure at a later put or at
 * writer_finish. */
int writer_put(struct writer *w, size_t n, struct prism_err *err);

/* Makes candidate `index` into c (the rows of writer_put_made). */
typedef void (*writer_make_fn)(const void *ctx, uint32_t index, struct cand *c);

/* index[0..n) (copied), each made by make(ctx, ...) on the writer's
 * thread, stored after the batches put so far as one transaction: the
 * rejected candidates, whose rows need only their indices kept, made while
 * the pool works.  ctx must outlive the writer.  0, or the first failure
 * so far (PRISM_ENOMEM when the indices cannot be copied). */
int writer_put_made(struct writer *w, writer_make_fn make, const void *ctx, const uint32_t *index,
		    size_t n, struct prism_err *err);

/* Waits for every batch put, ends the thread and frees w (NULL: nothing):
 * 0, or the first failure (err set). */
int writer_finish(struct writer *w, struct prism_err *err);

#endif
