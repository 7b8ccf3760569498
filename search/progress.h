/*
 * progress.h - a sweep's progress on a terminal: one line, rewritten from
 * the first candidate and at least every second by a thread of its own
 * (a batch of large candidates can take minutes), with the rate and an
 * estimate of the time left; and what Ctrl-C leaves behind.
 *
 * The counts are updated from any thread (progress_add, lock-free) and
 * set exactly between batches (progress_set); the line's tail (the best
 * time so far) is set between batches too.
 */
#ifndef PRISM_PROGRESS_H
#define PRISM_PROGRESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>

struct progress {
	FILE *f;
	size_t total;		 /* candidates to evaluate */
	atomic_size_t done, sim; /* evaluated, of which simulated */
	atomic_size_t screened;	 /* of which screened */
	atomic_int stop;
	double t0;	    /* when evaluation began (progress_now) */
	char tail[160];	    /* after the counts: the best so far */
	pthread_mutex_t mu; /* tail, and the line */
	pthread_t th;
	int running;
};

/* Seconds on a monotonic clock. */
double progress_now(void);

/* Start the line on f (a terminal) for total candidates: 0, or -1 when
 * no thread could be started (then progress_print is the caller's). */
int progress_start(struct progress *p, FILE *f, size_t total);

/* One more candidate evaluated (simulated: 1, screened: 0). */
void progress_add(struct progress *p, int simulated);

/* The exact counts, and the tail, between batches. */
void progress_set(struct progress *p, size_t done, size_t sim, size_t screened, const char *tail);

/* Write the line now (under the lock). */
void progress_print(struct progress *p);

/* Stop the thread, write the last line and end it. */
void progress_stop(struct progress *p);

/* Ctrl-C (SIGINT) and SIGTERM: write a line saying that what was stored
 * is kept and that running the same command resumes, and exit (130, 143);
 * a batch in flight is lost, never half-stored (every batch is one
 * transaction). */
void progress_on_interrupt(void);

#endif
