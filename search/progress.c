#include "progress.h"

#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double progress_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void progress_print(struct progress *p)
{
	size_t done = atomic_load(&p->done), sim = atomic_load(&p->sim);
	size_t scr = atomic_load(&p->screened);
	double el = progress_now() - p->t0;
	char eta[32];

	/* The time per candidate so far, screened ones (all but free) and
	 * simulated ones as they came: the rest are taken at that mix. */
	if (done > 0 && el > 0)
		snprintf(eta, sizeof(eta), "%.0f s", el / (double)done * (double)(p->total - done));
	else
		snprintf(eta, sizeof(eta), "?");
	pthread_mutex_lock(&p->mu);
	fprintf(p->f,
		"\r  %zu/%zu evaluated, %zu simulated, %zu screened, %.1f/s, %.0f s, ETA %s%s%s   ",
		done, p->total, sim, scr, el > 0 ? (double)done / el : 0.0, el, eta,
		p->tail[0] ? ", " : "", p->tail);
	fflush(p->f);
	pthread_mutex_unlock(&p->mu);
}

static void *tick(void *arg)
{
	struct progress *p = arg;
	const struct timespec step = {0, 100 * 1000 * 1000};
	double last = progress_now();

	while (!atomic_load(&p->stop)) {
		nanosleep(&step, NULL);
		if (progress_now() - last >= 1.0) {
			progress_print(p);
			last = progress_now();
		}
	}
	return NULL;
}

int progress_start(struct progress *p, FILE *f, size_t total)
{
	memset(p, 0, sizeof(*p));
	p->f = f;
	p->total = total;
	atomic_init(&p->done, 0);
	atomic_init(&p->sim, 0);
	atomic_init(&p->screened, 0);
	atomic_init(&p->stop, 0);
	p->t0 = progress_now();
	pthread_mutex_init(&p->mu, NULL);
	progress_print(p);
	if (pthread_create(&p->th, NULL, tick, p) != 0)
		return -1;
	p->running = 1;
	return 0;
}

void progress_add(struct progress *p, int simulated)
{
	atomic_fetch_add(&p->done, 1);
	atomic_fetch_add(simulated ? &p->sim : &p->screened, 1);
}

void progress_set(struct progress *p, size_t done, size_t sim, size_t screened, const char *tail)
{
	atomic_store(&p->done, done);
	atomic_store(&p->sim, sim);
	atomic_store(&p->screened, screened);
	pthread_mutex_lock(&p->mu);
	snprintf(p->tail, sizeof(p->tail), "%s", tail);
	pthread_mutex_unlock(&p->mu);
}

void progress_stop(struct progress *p)
{
	if (!p->f)
		return;
	atomic_store(&p->stop, 1);
	if (p->running)
		pthread_join(p->th, NULL);
	progress_print(p);
	fputc('\n', p->f);
	pthread_mutex_destroy(&p->mu);
	p->f = NULL;
}

static void interrupted(int sig)
{
	static const char msg[] =
	    "\nprism search: interrupted: every batch stored so far is kept; run the same "
	    "command again to resume\n";
	ssize_t w = write(2, msg, sizeof(msg) - 1);
	(void)w;
	_exit(128 + sig);
}

void progress_on_interrupt(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = interrupted;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}
