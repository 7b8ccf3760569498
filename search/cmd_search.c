/* cmd_search.c - `prism search`: a sweep into the results database. */
#include <getopt.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "configs.h"
#include "progress.h"
#include "usage.h"
#include "store.h"
#include "shard.h"
#include "sweep.h"
#include "vec.h"

static const char help[] =
    "usage: prism search SWEEP [options]\n"
    "\n"
    "Enumerate the layouts a sweep file describes (a file, or a name in\n"
    "configs/sweeps/) over its base -- a model configuration, or a trace:\n"
    "each candidate is then the trace's graph edited (layers, microbatches,\n"
    "data parallelism, hardware) or, for what a graph edit cannot do, rebuilt\n"
    "with costs calibrated on the trace's kernels (traces with a run\n"
    "description; a plain trace's other candidates are invalid, with what it\n"
    "lacks).  Reject the\n"
    "invalid layouts and those that do not fit in memory (each stored with\n"
    "its reason), screen the rest, simulate the survivors best-first in\n"
    "parallel batches, and store every candidate in a SQLite database.\n"
    "Rerunning the same sweep resumes it: stored candidates are skipped (the\n"
    "same settings are the same sweep whatever the file's comments and\n"
    "layout).  A killed run loses at most the batch in flight; Ctrl-C says\n"
    "so and exits 130.  On a terminal the progress is one line, rewritten\n"
    "every second (candidates evaluated, simulated and screened, the rate,\n"
    "the time left at that rate, the best so far); elsewhere a line per\n"
    "batch.  `prism report DB` reads the results.\n"
    "\n"
    "Candidates are visited best-first by their analytic estimates, per GPU\n"
    "count.  Each also has a proven lower bound of its simulated time (its\n"
    "GEMMs, attention and tensor-parallel collectives, with the pipeline's\n"
    "fill and drain; docs/MODEL.md).  Three modes:\n"
    "  default       screen a candidate whose bound is no better than the best\n"
    "                simulated time at its GPU count, or whose analytic estimate\n"
    "                is beyond it by more than the sweep's screen_margin (0.3)\n"
    "  --optimise    screen only by the bound: the best layout per GPU count is\n"
    "                the exhaustive run's (a screened one cannot beat it)\n"
    "  --exhaustive  screen nothing: simulate every valid candidate\n"
    "\n"
    "Under mpirun (or srun) the processes share the sweep: process 0 writes\n"
    "the database, the others simulate their share of each batch; the rows\n"
    "are those of one process (docs/SCALING.md).\n"
    "\n"
    "options:\n"
    "      --db FILE       the database (default results/NAME.db)\n"
    "      --optimise      prune by the proven bound alone (also --optimize)\n"
    "      --exhaustive    screen nothing\n"
    "      --threads N     OpenMP threads (default: all cores); fewer from the next\n"
    "                      batch on where the largest candidates so far would\n"
    "                      not fit in memory at one a thread (said when it happens)\n"
    "      --batch N       candidates per batch and transaction (default 32; the\n"
    "                      results do not depend on the thread count; which are\n"
    "                      screened does depend on N, so a sweep resumes with its\n"
    "                      own N and mode, and another is refused)\n"
    "      --json          the summary on stdout as JSON (counts, the best\n"
    "                      layout per GPU count, days and cost to train where\n"
    "                      the sweep gives tokens and price_per_gpu_hour)\n"
    "  -h, --help          this help\n";

/* A candidate to evaluate, without its struct cand (sweep_candidate makes
 * that again when its batch comes): a sweep of millions of candidates
 * holds 16 bytes for each, not kilobytes. */
struct ref {
	uint32_t index; /* in the sweep's space (sweep_candidate) */
	int gpus;
	double analytic_s;
};

/* Best-first per GPU count; equal estimates in the sweep's order. */
static int cmp_analytic(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;
	if (x->gpus != y->gpus)
		return x->gpus < y->gpus ? -1 : 1;
	if (x->analytic_s != y->analytic_s)
		return x->analytic_s < y->analytic_s ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

/* Rejected candidates are stored in transactions of this many. */
#define REJECT_CHUNK 4096

static int cmp_key(const void *k, const void *e)
{
	return strcmp((const char *)k, *(char *const *)e);
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

struct best {
	int gpus[SWEEP_MAX_LIST * 4];
	double t[SWEEP_MAX_LIST * 4];
	int n;
};

static double *best_of(struct best *b, int gpus)
{
	for (int i = 0; i < b->n; i++)
		if (b->gpus[i] == gpus)
			return &b->t[i];
	if (b->n == (int)(sizeof(b->gpus) / sizeof(b->gpus[0])))
		return NULL;
	b->gpus[b->n] = gpus;
	b->t[b->n] = 0;
	return &b->t[b->n++];
}

enum { MODE_SCREEN, MODE_OPTIMISE, MODE_EXHAUSTIVE };
static const char *const mode_names[] = {"screen", "optimise", "exhaustive"};
static const char *const mode_options[] = {"the default mode", "--optimise", "--exhaustive"};

/* Candidates made at once while the sweep is enumerated, and what is kept
 * of each. */
#define ENUM_CHUNK 4096
struct made {
	int ok, status, gpus;
	double analytic_s;
	char reason[160]; /* the first candidate's only */
};

/* Memory the system has for us (MemAvailable, bytes), 0 when unknown. */
static double mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	double kb = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

/* The process's peak RSS, MB. */
static double getrusage_mb(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_SELF, &ru) ? 0 : (double)ru.ru_maxrss / 1024;
}

/* Threads by memory: the most whose peaks, at the largest a thread may
 * have reached so far (the process's peak over the max threads that ran),
 * fit in 80 % of what was available at the start; never more than now,
 * never fewer than 1. */
static int threads_by_memory(int now, int max, double avail)
{
	double per = getrusage_mb() * 1048576 / max, fit;
	if (avail <= 0)
		return now;
	fit = per > 0 ? 0.8 * avail / per : now;
	return fit >= now ? now : fit < 1 ? 1 : (int)fit;
}

/* A simulated candidate's cost, roughly: its pipeline units up to the
 * few microbatches its line is drawn through (sim/hier.h). */
static double sim_cost(const struct cand *k)
{
	const struct layout *l = &k->in.lay;
	int m = l->microbatches, cap = 4 * l->pp * (l->vp > 0 ? l->vp : 1);
	return (double)l->pp * (l->vp > 0 ? l->vp : 1) * (m < cap ? m : cap);
}

/* A candidate of a batch to simulate, and its cost. */
struct job {
	double cost;
	int i;
};

/* Costliest first, then in batch order. */
static int cmp_cost(const void *a, const void *b)
{
	const struct job *x = a, *y = b;
	if (x->cost != y->cost)
		return x->cost > y->cost ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/*
 * A resumed sweep continues as it ran: which candidates are screened
 * depends on the mode and, when it screens, on the batch (the best time
 * is updated between batches), so the rows of a sweep resumed otherwise
 * would be those of no run.  Another mode is refused; another --batch
 * too, and without --batch the sweep's own is taken (*bsize).  A sweep
 * of a database that did not record them gets them recorded now.
 */
static int resume_run(sqlite3 *db, const struct sweep *sw, long long sid, int resumed,
		      int batch_given, struct store_run *run, int *bsize, struct prism_err *err)
{
	int was = -1;

	if (!resumed)
		return 0;
	for (int m = 0; m < 3; m++)
		if (strcmp(run->was_mode, mode_names[m]) == 0)
			was = m;
	if (!run->was_mode[0] || run->was_batch <= 0)
		return store_sweep_run(db, sid, run, err);
	if (was < 0 || strcmp(run->was_mode, run->mode) != 0)
		return prism_err_set(err, PRISM_EARG,
				     "%s: sweep %s was run in %s; its screened rows depend on "
				     "it: resume it the same way, or give another --db",
				     sqlite3_db_filename(db, "main"), sw->name,
				     was < 0 ? run->was_mode : mode_options[was]);
	if (strcmp(run->mode, "exhaustive") == 0 || run->was_batch == *bsize)
		return 0;
	if (batch_given)
		return prism_err_set(err, PRISM_EARG,
				     "%s: sweep %s was run with --batch %d; which candidates it "
				     "screens depends on it: resume with --batch %d (or no "
				     "--batch), or give another --db",
				     sqlite3_db_filename(db, "main"), sw->name, run->was_batch,
				     run->was_batch);
	fprintf(stderr, "prism search: %s: resuming with --batch %d, as it ran\n", sw->name,
		run->was_batch);
	*bsize = run->was_batch;
	return 0;
}

/* Screen k against the best simulated time at its GPU count (0: none
 * yet).  The bound is proven (the simulated time cannot be below it), so
 * a candidate whose bound is no better than the best cannot win; the
 * analytic margin is a heuristic, used in the default mode only. */
static void screen(struct cand *k, int mode, double best, double margin)
{
	if (mode == MODE_EXHAUSTIVE || best <= 0)
		return;
	if (k->bound_s >= best) {
		k->status = CS_SCREENED;
		snprintf(k->reason, sizeof(k->reason),
			 "lower bound %.3f ms >= best simulated %.3f ms", k->bound_s * 1e3,
			 best * 1e3);
	} else if (mode == MODE_SCREEN && k->analytic_s > best * (1 + margin)) {
		k->status = CS_SCREENED;
		snprintf(k->reason, sizeof(k->reason),
			 "analytic %.3f ms > best simulated %.3f ms + %.0f%%", k->analytic_s * 1e3,
			 best * 1e3, margin * 100);
	}
}

/* Every process's rc, agreed: when any failed, all stop; one that did not
 * fail itself stays quiet (*quiet), the one that did says why. */
static int agree(const struct shard *sh, int rc, int *quiet)
{
	int any = shard_any(sh, rc);
	if (any && !rc)
		*quiet = 1;
	return any;
}

/* ", N processes" under MPI. */
static const char *procs(const struct shard *sh)
{
	static char buf[32];
	if (sh->size == 1)
		return "";
	snprintf(buf, sizeof(buf), " x %d processes", sh->size);
	return buf;
}

/* The summary as one JSON object on stdout: the sweep, the counts, and
 * the best simulated layout per GPU count with, where the sweep gives
 * them, the days and cost to train (docs/RESULTS.md). */
static void summary_json(sqlite3 *db, long long sid, const struct sweep *sw, const char *dbpath,
			 const size_t *stats, size_t before, const char *mode, double secs)
{
	sqlite3_stmt *st = NULL;
	int last = -1;

	printf("{\"sweep\":");
	prism_fput_json_str(stdout, sw->name);
	printf(",\"id\":%lld,\"database\":", sid);
	prism_fput_json_str(stdout, dbpath);
	printf(",\"mode\":\"%s\",\"seconds\":%.3f,\"stored_before\":%zu,\"candidates\":{"
	       "\"simulated\":%zu,\"screened\":%zu,\"invalid\":%zu,\"oom\":%zu,\"failed\":%zu}",
	       mode, secs, before, stats[CS_SIMULATED], stats[CS_SCREENED], stats[CS_INVALID],
	       stats[CS_OOM], stats[CS_FAILED]);
	/* This run's counts above; the database's, resumed runs included. */
	printf(",\"in_database\":{");
	if (sqlite3_prepare_v2(
		db,
		"SELECT status, COUNT(*) FROM candidate WHERE sweep=?1 GROUP BY status"
		" ORDER BY status",
		-1, &st, NULL) == SQLITE_OK) {
		const char *sep = "";
		sqlite3_bind_int64(st, 1, sid);
		while (sqlite3_step(st) == SQLITE_ROW) {
			const char *v = (const char *)sqlite3_column_text(st, 0);
			printf("%s", sep);
			prism_fput_json_str(stdout, v ? v : "");
			printf(":%d", sqlite3_column_int(st, 1));
			sep = ",";
		}
		sqlite3_finalize(st);
	}
	printf("}");
	if (sw->tokens > 0)
		printf(",\"tokens\":%.9g", sw->tokens);
	if (sw->price_per_gpu_hour > 0)
		printf(",\"price_per_gpu_hour\":%.9g", sw->price_per_gpu_hour);
	printf(",\"best\":[");
	/* Every simulated row ordered by time within its count: the first of
	 * each count is its best, as prism report finds it. */
	if (sqlite3_prepare_v2(
		db,
		"SELECT gpus, key, iter_s, tokens_per_s FROM candidate WHERE sweep=?1"
		" AND status='simulated' ORDER BY gpus, iter_s, key",
		-1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, sid);
		while (sqlite3_step(st) == SQLITE_ROW) {
			int gpus = sqlite3_column_int(st, 0);
			const char *key = (const char *)sqlite3_column_text(st, 1);
			double t = sqlite3_column_double(st, 2), tps = sqlite3_column_double(st, 3);
			if (gpus == last)
				continue;
			printf("%s{\"gpus\":%d,\"key\":", last < 0 ? "" : ",", gpus);
			prism_fput_json_str(stdout, key ? key : "");
			printf(",\"iter_s\":%.9g,\"tokens_per_s\":%.9g", t, tps);
			if (sw->tokens > 0 && tps > 0) {
				double sec = sw->tokens / tps;
				printf(",\"days_to_train\":%.6g,\"gpu_hours_to_train\":%.6g",
				       sec / 86400, gpus * sec / 3600);
				if (sw->price_per_gpu_hour > 0)
					printf(",\"cost_to_train\":%.6g",
					       gpus * sec / 3600 * sw->price_per_gpu_hour);
			}
			printf("}");
			last = gpus;
		}
		sqlite3_finalize(st);
	}
	printf("]}\n");
}

int cmd_search(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"db", required_argument, NULL, 'd'},
	    {"exhaustive", no_argument, NULL, 'x'},
	    {"optimise", no_argument, NULL, 'o'},
	    {"optimize", no_argument, NULL, 'o'},
	    {"threads", required_argument, NULL, 't'},
	    {"batch", required_argument, NULL, 'b'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct sweep sw;
	struct prism_err err;
	struct cand *batch = NULL, *rej = NULL, one;
	struct ref *order = NULL;
	struct job *work = NULL;
	uint32_t *rejected = NULL;
	char path[1024], dbpath[1024], **keys = NULL, first_reason[sizeof(batch->reason)] = "none";
	const char *db_arg = NULL;
	size_t nkeys = 0, norder = 0, nrejected = 0;
	sqlite3 *db = NULL;
	long long sid = 0;
	long n = 0;
	int mode = MODE_SCREEN, threads = 0, bsize = 0, resumed = 0, c, rc = 0, tty = isatty(2);
	int batch_given;
	struct store_run run;
	int json = 0;
	size_t before = 0;
	size_t done = 0, stats[CS_FAILED + 1] = {0};
	struct best best;
	struct shard sh;
	int *owner = NULL, nw, lead, quiet = 0, tn;
	double avail;
	char *stored = NULL;
	double t0;
	struct progress pg; /* the terminal's line (pg.f NULL: none) */

	memset(&pg, 0, sizeof(pg));
	prism_err_clear(&err);
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			db_arg = optarg;
			break;
		case 'x':
			mode = MODE_EXHAUSTIVE;
			break;
		case 'o':
			mode = MODE_OPTIMISE;
			break;
		case 't':
			if (cli_count(optarg, "threads", 1, 1024, &threads, &err))
				return cli_fail(&err);
			break;
		case 'b':
			if (cli_count(optarg, "batch", 1, 1 << 16, &bsize, &err))
				return cli_fail(&err);
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			fputs(help, stdout);
			return 0;
		default:
			return usage_bad_option("search", "h", longopts, argv);
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "prism search: give one SWEEP file\n%s", help);
		return EXIT_USAGE;
	}
	if (cli_find_config("sweeps", argv[optind], path, sizeof(path))) {
		char near[128];
		int k = strchr(argv[optind], '/')
			    ? -1
			    : configs_suggest("sweeps", argv[optind], near, sizeof(near));
		fprintf(stderr,
			"prism: %s: no such file, nor configs/sweeps/%s.cfg%s%s%s (prism list "
			"sweeps)\n",
			argv[optind], argv[optind], k == 0 ? "; did you mean " : "",
			k == 0 ? near : "", k == 0 ? "?" : "");
		return EXIT_USAGE;
	}
	if (shard_init(&sh, &argc, &argv))
		return EXIT_USAGE;
	lead = sh.rank == 0;
	if (threads > 0)
		omp_set_num_threads(threads);
	threads = omp_get_max_threads();
	if ((rc = sweep_load(path, &sw, &err)) == 0) {
		/* Every candidate once, made by the threads a chunk at a time
		 * (sweep_candidate only reads the sweep) and kept in order: the
		 * pending ones as refs to sort, the rejected ones as their
		 * index. */
		uint64_t total = sweep_count(&sw);
		size_t cap = 0, rcap = 0;
		struct made *mk = prism_malloc(ENUM_CHUNK * sizeof(*mk));
		if (!mk)
			rc = prism_err_set(&err, PRISM_ENOMEM, "out of memory");
		for (uint64_t i0 = 0; i0 < total && rc == 0; i0 += ENUM_CHUNK) {
			int nk = total - i0 < ENUM_CHUNK ? (int)(total - i0) : ENUM_CHUNK;
#pragma omp parallel for schedule(dynamic, 64)
			for (int j = 0; j < nk; j++) {
				struct cand k;
				mk[j].ok = sweep_candidate(&sw, i0 + (uint64_t)j, &k) == 0;
				mk[j].status = k.status;
				mk[j].gpus = k.gpus;
				mk[j].analytic_s = k.analytic_s;
				if (mk[j].ok && n == 0)
					snprintf(mk[j].reason, sizeof(mk[j].reason), "%s",
						 k.reason);
			}
			for (int j = 0; j < nk && rc == 0; j++) {
				uint64_t i = i0 + (uint64_t)j;
				if (!mk[j].ok)
					continue;
				if (n++ == 0)
					snprintf(first_reason, sizeof(first_reason), "%s",
						 mk[j].reason);
				if (mk[j].status == CS_PENDING) {
					if (vec_reserve_((void **)&order, &cap, norder + 1,
							 sizeof(*order))) {
						rc = prism_err_set(&err, PRISM_ENOMEM,
								   "out of memory");
						break;
					}
					order[norder].index = (uint32_t)i;
					order[norder].gpus = mk[j].gpus;
					order[norder++].analytic_s = mk[j].analytic_s;
				} else {
					if (vec_reserve_((void **)&rejected, &rcap, nrejected + 1,
							 sizeof(*rejected))) {
						rc = prism_err_set(&err, PRISM_ENOMEM,
								   "out of memory");
						break;
					}
					rejected[nrejected++] = (uint32_t)i;
				}
			}
		}
		free(mk);
	}
	/* A budget no layout can use is the sweep file's error. */
	if (rc == 0 && norder == 0)
		rc = prism_err_set(&err, PRISM_EFORMAT,
				   "%s:%d: no layout is possible with these GPU counts "
				   "(%ld candidates, all rejected; the first: %s)",
				   path, sw.gpus_line, n, first_reason);
	if ((rc = agree(&sh, rc, &quiet)))
		goto out;
#ifdef __GLIBC__
	/* Each simulated candidate allocates and frees its graphs (tens to
	 * hundreds of MB): glibc would map each large array afresh and return
	 * it on free, every page faulted in again by the next candidate (a
	 * quarter of a large sweep's CPU, docs/PERFORMANCE.md).  Arrays up to
	 * glibc's largest threshold stay in one heap shared by the threads,
	 * and freed memory is kept for the next candidate. */
	mallopt(M_ARENA_MAX, 1);
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, INT32_MAX);
#endif
	batch_given = bsize > 0;
	if (bsize <= 0)
		bsize = 32;
	if (db_arg) {
		snprintf(dbpath, sizeof(dbpath), "%s", db_arg);
	} else {
		if (lead)
			mkdir("results", 0777);
		snprintf(dbpath, sizeof(dbpath), "results/%s.db", sw.name);
	}
	/* Process 0 alone opens the database; the others learn from it what is
	 * stored and the best times so far.  stored[]: the refs in order[],
	 * then the rejected. */
	memset(&best, 0, sizeof(best));
	stored = prism_calloc(norder + nrejected + 1, 1);
	if (!stored)
		rc = prism_err_set(&err, PRISM_ENOMEM, "out of memory");
	run.mode = mode_names[mode];
	run.batch = bsize;
	if (rc == 0 && lead &&
	    ((rc = store_open(dbpath, &db, &err)) == 0 &&
	     (rc = store_sweep(db, &sw, &run, &sid, &resumed, &err)) == 0 &&
	     (rc = resume_run(db, &sw, sid, resumed, batch_given, &run, &bsize, &err)) == 0 &&
	     (rc = store_keys(db, sid, &keys, &nkeys, &err)) == 0)) {
		char key[sizeof(one.key)];
		best.n = store_best(db, sid, best.gpus, best.t, SWEEP_MAX_LIST * 4);
		for (size_t i = 0; nkeys && i < norder + nrejected; i++) {
			uint32_t ix = i < norder ? order[i].index : rejected[i - norder];
			sweep_key(&sw, ix, key, sizeof(key));
			stored[i] = bsearch(key, keys, nkeys, sizeof(*keys), cmp_key) != NULL;
		}
	}
	if ((rc = agree(&sh, rc, &quiet)))
		goto out;
	shard_bcast(&sh, &best, sizeof(best));
	shard_bcast(&sh, &resumed, sizeof(resumed));
	shard_bcast(&sh, &bsize, sizeof(bsize)); /* a resumed sweep's own */
	shard_bcast(&sh, stored, norder + nrejected);
	batch = prism_malloc((size_t)bsize * sizeof(*batch));
	owner = prism_malloc((size_t)bsize * sizeof(*owner));
	work = prism_malloc((size_t)bsize * sizeof(*work));
	if (!batch || !owner || !work)
		rc = prism_err_set(&err, PRISM_ENOMEM, "out of memory");
	if ((rc = agree(&sh, rc, &quiet)))
		goto out;
	/* Stored already: skipped.  Rejected: stored now by process 0, in
	 * transactions of REJECT_CHUNK (a kill between them loses nothing:
	 * the rerun stores the rest). */
	if (lead && !(rej = prism_malloc(REJECT_CHUNK * sizeof(*rej))))
		rc = prism_err_set(&err, PRISM_ENOMEM, "out of memory");
	for (size_t i = 0, nrej = 0; lead && rc == 0 && i <= nrejected; i++) {
		if (i < nrejected && stored[norder + i]) {
			done++;
		} else if (i < nrejected) {
			sweep_candidate(&sw, rejected[i], &one);
			stats[one.status]++;
			rej[nrej++] = one;
		}
		if (nrej && (nrej == REJECT_CHUNK || i == nrejected)) {
			rc = store_put(db, sid, rej, nrej, &err);
			nrej = 0;
		}
	}
	free(rej);
	rej = NULL;
	if ((rc = agree(&sh, rc, &quiet)))
		goto out;
	{
		/* The refs not stored, in place. */
		size_t k = 0;
		for (size_t i = 0; i < norder; i++) {
			if (stored[i]) {
				done++;
				continue;
			}
			order[k++] = order[i];
			stats[CS_PENDING]++;
		}
		norder = k;
	}
	if (lead)
		fprintf(stderr,
			"prism search: %s: %ld candidates (%zu invalid, %zu out of memory, %zu "
			"stored before%s), %zu to evaluate, %d threads%s -> %s\n",
			sw.name, n, stats[CS_INVALID], stats[CS_OOM], done,
			resumed ? ": resuming" : "", norder, threads, procs(&sh), dbpath);
	if (norder)
		qsort(order, norder, sizeof(*order), cmp_analytic);
	before = done;
	t0 = now();
	if (lead) {
		progress_on_interrupt();
		if (tty && norder) {
			fprintf(stderr, "  (Ctrl-C stops it; the same command resumes)\n");
			if (progress_start(&pg, stderr, norder))
				pg.f = NULL; /* no thread: the batches' lines only */
		}
	}
	avail = mem_available();
	tn = threads;
	for (size_t at = 0; at < norder;) {
		int nb = norder - at < (size_t)bsize ? (int)(norder - at) : bsize;
		/* Fill a batch: screened ones are decided here, the rest simulated
		 * (every process decides the same).  The best times change only
		 * between batches, so the threads make the candidates. */
#pragma omp parallel for schedule(static)
		for (int i = 0; i < nb; i++)
			sweep_candidate(&sw, order[at + (size_t)i].index, &batch[i]);
		at += (size_t)nb;
		for (int i = 0; i < nb; i++) {
			double *b = best_of(&best, batch[i].gpus);
			screen(&batch[i], mode, b ? *b : 0, sw.margin);
			if (pg.f && batch[i].status == CS_SCREENED)
				progress_add(&pg, 0);
		}
		shard_deal(&sh, batch, nb, owner);
		/* This process's candidates, the costliest first: a thread
		 * left with one long candidate at the batch's end idles the
		 * others (the rows do not depend on the order). */
		nw = 0;
		for (int i = 0; i < nb; i++)
			if (owner[i] == sh.rank)
				work[nw++] = (struct job){sim_cost(&batch[i]), i};
		qsort(work, (size_t)nw, sizeof(*work), cmp_cost);
#pragma omp parallel for schedule(dynamic, 1) num_threads(tn)
		for (int w = 0; w < nw; w++) {
			struct prism_err e;
			int i = work[w].i;
			prism_err_clear(&e);
			if (predict_eval(&sw.bl.pb, &batch[i].in, &batch[i].p, NULL, NULL, &e) ==
			    0) {
				batch[i].status = CS_SIMULATED;
			} else {
				batch[i].status = CS_FAILED;
				snprintf(batch[i].reason, sizeof(batch[i].reason), "%.159s", e.msg);
			}
			if (pg.f)
				progress_add(&pg, 1);
		}
		{
			/* A candidate too large for every thread to hold one:
			 * fewer threads from the next batch on (the rows do not
			 * depend on how many). */
			int t = threads_by_memory(tn, threads, avail);
			if (t < tn && lead)
				fprintf(stderr,
					"prism search: %d thread%s from here on: the largest "
					"candidates so far need up to %.0f MB a thread, %.0f MB "
					"were available\n",
					t, t > 1 ? "s" : "", getrusage_mb() / threads,
					avail / 1048576);
			tn = t;
		}
		if (shard_gather(&sh, batch, nb, owner, &sw.hw)) {
			fprintf(stderr, "prism: process %d: out of memory\n", sh.rank);
			shard_abort(&sh, 1);
			rc = prism_err_set(&err, PRISM_ENOMEM, "out of memory");
			goto out;
		}
		if (lead && (rc = store_put(db, sid, batch, (size_t)nb, &err))) {
			if (sh.size > 1) {
				cli_fail(&err);
				shard_abort(&sh, 1);
			}
			goto out;
		}
		for (int i = 0; i < nb; i++) {
			double *b = best_of(&best, batch[i].gpus);
			stats[batch[i].status]++;
			if (batch[i].status == CS_SIMULATED && b &&
			    (*b == 0 || batch[i].p.iter_s < *b))
				*b = batch[i].p.iter_s;
		}
		if (lead) {
			double el = now() - t0, rate = at / (el > 0 ? el : 1e-9);
			double top = 0;
			int topg = 0;
			for (int i = 0; i < best.n; i++)
				if (best.t[i] > 0 && (top == 0 || best.gpus[i] > topg)) {
					top = best.t[i];
					topg = best.gpus[i];
				}
			if (pg.f) {
				char tail[96];
				snprintf(tail, sizeof(tail), "best at %d GPUs %.3f ms", topg,
					 top * 1e3);
				progress_set(&pg, at, stats[CS_SIMULATED], stats[CS_SCREENED],
					     tail);
				progress_print(&pg);
			} else {
				fprintf(
				    stderr,
				    "  %zu/%zu evaluated, %zu simulated, %zu screened, %.1f/s, ETA "
				    "%.0f s, best at %d GPUs %.3f ms\n",
				    at, norder, stats[CS_SIMULATED], stats[CS_SCREENED], rate,
				    (double)(norder - at) / (rate > 0 ? rate : 1), topg, top * 1e3);
			}
		}
	}
	if (!lead)
		goto out;
	progress_stop(&pg);
	if ((rc = store_finish(db, sid, &err)))
		goto out;
	if (json) {
		summary_json(db, sid, &sw, dbpath, stats, before, mode_names[mode], now() - t0);
		goto out;
	}
	printf("sweep %s (id %lld) in %s: %zu simulated, %zu screened, %zu invalid, %zu out of "
	       "memory, %zu failed\n",
	       sw.name, sid, dbpath, stats[CS_SIMULATED], stats[CS_SCREENED], stats[CS_INVALID],
	       stats[CS_OOM], stats[CS_FAILED]);
	printf("report: prism report %s\n", dbpath);
out:
	progress_stop(&pg);
	store_keys_free(keys, nkeys);
	free(order);
	free(rejected);
	free(batch);
	free(owner);
	free(work);
	free(stored);
	if (db)
		sqlite3_close(db);
	sweep_free(&sw);
	shard_finalize(&sh);
	/* Only the process that failed says why. */
	if (!rc)
		return 0;
	return quiet ? 1 : cli_fail(&err);
}
