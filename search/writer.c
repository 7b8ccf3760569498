/* writer.c - a search's batches stored in order (writer.h). */
#include "writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

/* What a slot of the queue holds: a batch in the slot's own candidates,
 * or the indices of candidates the writer makes (writer_put_made). */
struct entry {
	size_t n;
	uint32_t *index; /* NULL: the slot's candidates */
	writer_make_fn make;
	const void *ctx;
};

struct writer {
	sqlite3 *db;
	sqlite3_stmt *ins; /* store_put's INSERT, prepared once */
	long long sid;
	int cap, nslots, threaded, started;
	struct cand *slot; /* nslots x cap */
	struct entry *e;   /* per slot */
	struct cand *made; /* the writer's scratch for made rows */
	size_t nmade;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t more, room; /* a batch queued; a slot stored */
	int head;		   /* the oldest batch not yet stored */
	int queued;		   /* batches put and not yet stored */
	int stop;
	int rc; /* the first failure, and its error */
	struct prism_err err;
};

static struct cand *slot_of(struct writer *w, int k)
{
	return w->slot + (size_t)k * (size_t)w->cap;
}

/* A transaction of the writer's thread takes every batch queued behind
 * the first, up to this many rows: a COMMIT writes again each page of the
 * (sweep, key) index its rows touched, keys in no order, so it costs
 * three quarters of a 32-row batch's storing (docs/PERFORMANCE.md), and a
 * writer behind its queue holds up the pool. */
#define GROUP_ROWS 4096

/* Entry k's candidates (made first where it has indices, into the
 * writer's scratch until the next entry): 0, or the failure with e set. */
static int entry_cands(struct writer *w, int k, struct cand **out, struct prism_err *e)
{
	struct entry *x = &w->e[k];
	*out = slot_of(w, k);
	if (!x->index)
		return 0;
	if (x->n > w->nmade) {
		struct cand *m = realloc(w->made, x->n * sizeof(*m));
		if (!m)
			return prism_err_set(e, PRISM_ENOMEM, "out of memory");
		w->made = m;
		w->nmade = x->n;
	}
	for (size_t i = 0; i < x->n; i++)
		x->make(x->ctx, x->index[i], &w->made[i]);
	*out = w->made;
	return 0;
}

/* Entry k done with: its indices and the scratch its rows were made in
 * (the rejected come first: no scratch held after them). */
static void entry_done(struct writer *w, int k)
{
	if (w->e[k].index) {
		free(w->made);
		w->made = NULL;
		w->nmade = 0;
	}
	free(w->e[k].index);
	w->e[k].index = NULL;
}

/* Entry k stored in a transaction of its own (not threaded): 0, or the
 * failure with e set. */
static int store_entry(struct writer *w, int k, struct prism_err *e)
{
	struct cand *c;
	int rc = entry_cands(w, k, &c, e);
	if (rc == 0 && w->db)
		rc = store_put(w->db, w->sid, c, w->e[k].n, &w->ins, e);
	return rc;
}

/* The writer's thread: the oldest batch queued and, in the same
 * transaction, those queued behind it by the time it is stored (up to
 * GROUP_ROWS rows).  A batch's slot is free again once its rows are
 * inserted: SQLite holds them from there.  A kill before the COMMIT loses
 * the batches of the transaction, which were queued: the database keeps a
 * prefix of the batches either way. */
static void *drain(void *arg)
{
	struct writer *w = arg;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct prism_err e;
		size_t rows = 0;
		int rc = 0, open = 0;
		while (w->queued == 0 && !w->stop)
			pthread_cond_wait(&w->more, &w->mu);
		if (w->queued == 0)
			break; /* stopped, every batch stored */
		prism_err_clear(&e);
		do {
			int k = w->head;
			struct cand *c;
			pthread_mutex_unlock(&w->mu);
			/* After a failure the rest are dropped: the sweep
			 * stops, and resumes after the batches stored. */
			if (!w->rc && !rc && !(rc = entry_cands(w, k, &c, &e))) {
				if (!open && !(rc = store_begin(w->db, &e)))
					open = 1;
				if (!rc)
					rc = store_rows(w->db, w->sid, c, w->e[k].n, &w->ins, &e);
				rows += w->e[k].n;
			}
			entry_done(w, k);
			pthread_mutex_lock(&w->mu);
			w->head = (w->head + 1) % w->nslots;
			w->queued--;
			pthread_cond_signal(&w->room);
		} while (w->queued > 0 && rows < GROUP_ROWS && !rc);
		if (open) {
			pthread_mutex_unlock(&w->mu);
			rc = store_end(w->db, rc, &e);
			pthread_mutex_lock(&w->mu);
		}
		if (rc && !w->rc) {
			w->rc = rc;
			w->err = e;
			pthread_cond_signal(&w->room);
		}
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static void release(struct writer *w)
{
	if (w->threaded) {
		pthread_cond_destroy(&w->more);
		pthread_cond_destroy(&w->room);
		pthread_mutex_destroy(&w->mu);
	}
	for (int k = 0; w->e && k < w->nslots; k++)
		free(w->e[k].index);
	free(w->e);
	free(w->made);
	store_put_end(w->ins);
	free(w->slot);
	free(w);
}

struct writer *writer_new(sqlite3 *db, long long sid, int cap, int slots, int threaded)
{
	struct writer *w = prism_calloc(1, sizeof(*w));
	int e;

	if (!w)
		return NULL;
	w->db = db;
	w->sid = sid;
	w->cap = cap > 0 ? cap : 1;
	w->threaded = threaded && db;
	w->nslots = w->threaded ? (slots > 2 ? slots : 2) : 1;
	w->slot = prism_malloc((size_t)w->nslots * (size_t)w->cap * sizeof(*w->slot));
	w->e = prism_calloc((size_t)w->nslots, sizeof(*w->e));
	if (!w->slot || !w->e) {
		w->threaded = 0;
		release(w);
		errno = ENOMEM;
		return NULL;
	}
	if (!w->threaded)
		return w;
	if (pthread_mutex_init(&w->mu, NULL)) {
		w->threaded = 0;
		release(w);
		return NULL;
	}
	pthread_cond_init(&w->more, NULL);
	pthread_cond_init(&w->room, NULL);
	if ((e = pthread_create(&w->th, NULL, drain, w))) {
		release(w);
		errno = e;
		return NULL;
	}
	w->started = 1;
	return w;
}

/* The slot the next put fills, once one is free (threaded). */
static int next_free(struct writer *w)
{
	while (w->queued == w->nslots && !w->rc)
		pthread_cond_wait(&w->room, &w->mu);
	return (w->head + w->queued) % w->nslots;
}

struct cand *writer_slot(struct writer *w)
{
	int k;
	if (!w->threaded)
		return w->rc ? NULL : w->slot;
	pthread_mutex_lock(&w->mu);
	k = next_free(w);
	pthread_mutex_unlock(&w->mu);
	return w->rc ? NULL : slot_of(w, k);
}

/* Entry x queued in the next slot (threaded), or stored now: 0, or the
 * first failure so far.  x.index is the writer's from here. */
static int put(struct writer *w, struct entry x, struct prism_err *err)
{
	int rc;
	if (!w->threaded) {
		w->e[0] = x;
		if (!w->rc && (w->rc = store_entry(w, 0, &w->err)))
			*err = w->err;
		entry_done(w, 0);
		return w->rc;
	}
	pthread_mutex_lock(&w->mu);
	if (!(rc = w->rc)) {
		int k = next_free(w);
		if (!(rc = w->rc)) {
			w->e[k] = x;
			w->queued++;
			pthread_cond_signal(&w->more);
		}
	}
	if (rc) {
		*err = w->err;
		free(x.index);
	}
	pthread_mutex_unlock(&w->mu);
	return rc;
}

int writer_put(struct writer *w, size_t n, struct prism_err *err)
{
	return put(w, (struct entry){n, NULL, NULL, NULL}, err);
}

int writer_put_made(struct writer *w, writer_make_fn make, const void *ctx, const uint32_t *index,
		    size_t n, struct prism_err *err)
{
	uint32_t *copy = prism_malloc((n ? n : 1) * sizeof(*copy));
	if (!copy)
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	memcpy(copy, index, n * sizeof(*copy));
	return put(w, (struct entry){n, copy, make, ctx}, err);
}

int writer_finish(struct writer *w, struct prism_err *err)
{
	int rc;
	if (!w)
		return 0;
	if (w->started) {
		pthread_mutex_lock(&w->mu);
		w->stop = 1;
		pthread_cond_signal(&w->more);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->th, NULL);
	}
	if ((rc = w->rc))
		*err = w->err;
	release(w);
	return rc;
}
