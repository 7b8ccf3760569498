/* pool.c - threads that sleep between jobs (pool.h). */
#include "pool.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "prism.h"

struct pool {
	int n;	      /* threads in all, the caller's included */
	pthread_t *t; /* the n - 1 workers */
	int started;  /* workers running */
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	uint64_t gen; /* jobs handed out; a worker runs each once */
	int stop;
	int busy; /* workers not yet through the current job */
	/* The job. */
	void (*fn)(void *ctx, int i, int t);
	void *ctx;
	int len, grain, width;
	atomic_int next;
};

struct worker {
	struct pool *p;
	int id; /* 1..n-1 (the caller is 0) */
};

/* Thread t's share of the job. */
static void run(struct pool *p, int t)
{
	for (;;) {
		int i0 = atomic_fetch_add(&p->next, p->grain), i1;
		if (i0 >= p->len)
			return;
		i1 = p->len - i0 < p->grain ? p->len : i0 + p->grain;
		for (int i = i0; i < i1; i++)
			p->fn(p->ctx, i, t);
	}
}

static void *work(void *arg)
{
	struct pool *p = ((struct worker *)arg)->p;
	int id = ((struct worker *)arg)->id;
	uint64_t seen = 0;

	free(arg);
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->gen == seen && !p->stop)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->stop)
			break;
		seen = p->gen;
		if (id < p->width) {
			pthread_mutex_unlock(&p->mu);
			run(p, id);
			pthread_mutex_lock(&p->mu);
		}
		if (--p->busy == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

struct pool *pool_new(int threads)
{
	struct pool *p = prism_calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->n = threads > 1 ? threads : 1;
	if (pthread_mutex_init(&p->mu, NULL)) {
		free(p);
		return NULL;
	}
	if (pthread_cond_init(&p->go, NULL) || pthread_cond_init(&p->done, NULL) ||
	    (p->n > 1 && !(p->t = prism_calloc((size_t)p->n - 1, sizeof(*p->t))))) {
		p->n = 1; /* nothing started: pool_free releases the rest */
		pool_free(p);
		return NULL;
	}
	for (int k = 1; k < p->n; k++) {
		struct worker *w = prism_malloc(sizeof(*w));
		int e;
		if (!w) {
			pool_free(p);
			errno = ENOMEM;
			return NULL;
		}
		*w = (struct worker){p, k};
		if ((e = pthread_create(&p->t[k - 1], NULL, work, w))) {
			free(w);
			pool_free(p);
			errno = e;
			return NULL;
		}
		p->started++;
	}
	return p;
}

void pool_free(struct pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (int k = 0; k < p->started; k++)
		pthread_join(p->t[k], NULL);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
	pthread_mutex_destroy(&p->mu);
	free(p->t);
	free(p);
}

int pool_threads(const struct pool *p)
{
	return p->n;
}

void pool_for(struct pool *p, int n, int grain, int width, void (*fn)(void *ctx, int i, int t),
	      void *ctx)
{
	if (n <= 0)
		return;
	if (width <= 0 || width > p->n)
		width = p->n;
	p->fn = fn;
	p->ctx = ctx;
	p->len = n;
	p->grain = grain > 0 ? grain : 1;
	atomic_store(&p->next, 0);
	if (width == 1 || p->started == 0) {
		run(p, 0);
		return;
	}
	pthread_mutex_lock(&p->mu);
	p->width = width;
	p->busy = p->started;
	p->gen++;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	run(p, 0);
	pthread_mutex_lock(&p->mu);
	while (p->busy > 0)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

int pool_cpus(void)
{
	cpu_set_t set;
	long n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}
