/*
 * pool.h - the search's threads: a fixed set that sleeps between jobs.
 *
 * A sweep alternates parallel work (making and simulating a batch of
 * candidates) with serial work on one thread (screening; storing rows in
 * SQLite, which search/writer.h's thread does beside the pool when there
 * are two or more).  OpenMP's threads spin through the serial part by default
 * (libgomp's OMP_WAIT_POLICY, read before main runs): on a shared
 * two-core machine the spinning thread took 58 % of the CPU and two
 * threads ran 1.4-3x slower than one.  These threads block on a condition
 * variable instead, so an idle thread costs nothing.
 *
 *   pool_new(n)   n threads in all: the caller's and n - 1 workers
 *   pool_for      fn(ctx, i, t) for every i in [0, n), `grain` consecutive
 *                 indices at a time, taken in order by whichever thread is
 *                 free (the caller works too); returns when all are done.
 *                 At most `width` threads take part (0: all of them).  t:
 *                 the thread running it, in [0, width) (the caller's 0),
 *                 never two calls at once with the same t: an index into
 *                 per-thread scratch
 *   pool_cpus     the CPUs this process may run on (its affinity mask)
 *
 * fn must be safe to run on several threads at once for different i.
 * One pool_for at a time per pool (the caller's thread drives it).
 */
#ifndef PRISM_POOL_H
#define PRISM_POOL_H

struct pool;

/* NULL when out of memory or no thread could be started (errno set). */
struct pool *pool_new(int threads);
void pool_free(struct pool *p);
int pool_threads(const struct pool *p);

void pool_for(struct pool *p, int n, int grain, int width, void (*fn)(void *ctx, int i, int t),
	      void *ctx);

int pool_cpus(void);

#endif
