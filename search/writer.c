/* writer.c - a search's batches stored in order (writer.h). */
#include "writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "store.h"

struct writer {
	sqlite3 *db;
	long long sid;
	int cap, nslots, threaded, started;
	struct cand *slot; /* nslots x cap */
	size_t *n;	   /* rows put in each slot */
	struct cand **own; /* a slot's rows given by writer_put_rows, or NULL */
	int owned;	   /* such arrays queued */
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

static void *drain(void *arg)
{
	struct writer *w = arg;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct prism_err e;
		int k, rc = 0;
		while (w->queued == 0 && !w->stop)
			pthread_cond_wait(&w->more, &w->mu);
		if (w->queued == 0)
			break; /* stopped, every batch stored */
		k = w->head;
		pthread_mutex_unlock(&w->mu);
		/* After a failure the rest are dropped: the sweep stops, and
		 * resumes after the batches stored. */
		prism_err_clear(&e);
		if (!w->rc && w->db)
			rc = store_put(w->db, w->sid, w->own[k] ? w->own[k] : slot_of(w, k),
				       w->n[k], &e);
		pthread_mutex_lock(&w->mu);
		if (w->own[k]) {
			free(w->own[k]);
			w->own[k] = NULL;
			w->owned--;
		}
		if (rc && !w->rc) {
			w->rc = rc;
			w->err = e;
		}
		w->head = (w->head + 1) % w->nslots;
		w->queued--;
		pthread_cond_broadcast(&w->room);
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
	for (int k = 0; w->own && k < w->nslots; k++)
		free(w->own[k]);
	free(w->own);
	free(w->slot);
	free(w->n);
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
	w->n = prism_calloc((size_t)w->nslots, sizeof(*w->n));
	w->own = prism_calloc((size_t)w->nslots, sizeof(*w->own));
	if (!w->slot || !w->n || !w->own) {
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

struct cand *writer_slot(struct writer *w)
{
	int k;
	if (!w->threaded)
		return w->rc ? NULL : w->slot;
	pthread_mutex_lock(&w->mu);
	while (w->queued == w->nslots && !w->rc)
		pthread_cond_wait(&w->room, &w->mu);
	k = (w->head + w->queued) % w->nslots;
	pthread_mutex_unlock(&w->mu);
	return w->rc ? NULL : slot_of(w, k);
}

int writer_put(struct writer *w, size_t n, struct prism_err *err)
{
	int rc;
	if (!w->threaded) {
		if (!w->rc && w->db && (w->rc = store_put(w->db, w->sid, w->slot, n, &w->err)))
			*err = w->err;
		return w->rc;
	}
	pthread_mutex_lock(&w->mu);
	if (!(rc = w->rc)) {
		int k = (w->head + w->queued) % w->nslots;
		w->n[k] = n;
		w->queued++;
		pthread_cond_signal(&w->more);
	} else {
		*err = w->err;
	}
	pthread_mutex_unlock(&w->mu);
	return rc;
}

int writer_put_rows(struct writer *w, struct cand *rows, size_t n, struct prism_err *err)
{
	int rc;
	if (!w->threaded) {
		if (!w->rc && w->db && (w->rc = store_put(w->db, w->sid, rows, n, &w->err)))
			*err = w->err;
		free(rows);
		return w->rc;
	}
	pthread_mutex_lock(&w->mu);
	while ((w->queued == w->nslots || w->owned == WRITER_ROWS) && !w->rc)
		pthread_cond_wait(&w->room, &w->mu);
	if (!(rc = w->rc)) {
		int k = (w->head + w->queued) % w->nslots;
		w->n[k] = n;
		w->own[k] = rows;
		w->owned++;
		w->queued++;
		pthread_cond_signal(&w->more);
	} else {
		*err = w->err;
		free(rows);
	}
	pthread_mutex_unlock(&w->mu);
	return rc;
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
