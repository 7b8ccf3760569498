/* cmd_search.c - `prism search`: a sweep into the results database. */
#include <errno.h>
#include <getopt.h>
#ifdef __GLIBC__
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "cli.h"
#include "configs.h"
#include "progress.h"
#include "store.h"
#include "shard.h"
#include "sweep.h"
#include "vec.h"
#include "writer.h"

static const char help[] =
    "usage: prism search SWEEP [options]\n"
    "       prism search --model M --hw H --gpus N,N,... --gbs N [options]\n"
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
    "layout).  A sweep is also the content of its inputs (the model, the\n"
    "hardware profile and its kernel model, the kernel database) and the\n"
    "prism build (prism --version): a rerun after any of them changed is\n"
    "refused, naming what changed (docs/RESULTS.md).  A killed run loses at\n"
    "most the batches not yet stored (a prefix of them always is), which the\n"
    "rerun evaluates again; Ctrl-C says so and exits 130.  On a terminal the\n"
    "progress is one line, rewritten every second (candidates evaluated,\n"
    "simulated and screened, the rate,\n"
    "the time left at that rate, the best so far); elsewhere (a log, a pipe)\n"
    "a line after the first batch, then at most one every 10 s, and one at\n"
    "the end; --quiet: none.  `prism report DB` reads the results.\n"
    "\n"
    "Candidates are visited best-first by their analytic estimates, per GPU\n"
    "count, and batches ramp up: each count's best estimate is simulated\n"
    "before the rest of its count is judged, its next 2 against the best of\n"
    "that 1, its next 4 against the best of those 3, ... (up to --batch;\n"
    "the counts share batches).  Each also has a proven lower bound of its\n"
    "simulated time (its GEMMs, attention and tensor-parallel collectives,\n"
    "with the pipeline's fill and drain; docs/MODEL.md).  Three modes:\n"
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
    "The second form writes the sweep file it runs (results/NAME.cfg, or\n"
    "--sweep-file) and runs it: model M on hardware H at those GPU counts with\n"
    "a global batch of N sequences, over tp 1-8, pp 1-8, mbs 1-4, 1F1B and\n"
    "interleaved (vp 2), every recompute, ZeRO 0 and 1, with and without\n"
    "sequence parallelism; NAME is M-H.  Edit the file and run `prism search\n"
    "FILE` for more; the same command again resumes it.\n"
    "\n";
/* The options (apart: one string would be beyond C's 4095 bytes). */
static const char help_options[] =
    "options:\n"
    "      --model M       the model (a file, or a name in configs/models/)\n"
    "      --hw H          the hardware profile (a file, or a name in configs/hw/)\n"
    "      --gpus LIST     GPU counts, comma-separated (64,128,256,512)\n"
    "      --gbs N         global batch, sequences\n"
    "      --name NAME     the sweep's name (default M-H)\n"
    "      --tokens N      tokens to train, for days and cost\n"
    "      --price P       price of one GPU-hour, for cost\n"
    "      --sweep-file F  where the sweep file goes (default results/NAME.cfg)\n"
    "      --db FILE       the database (default results/NAME.db)\n"
    "      --base-hw HW    the base's hardware, when its trace names no GPU with a\n"
    "                      profile (the sweep's base_hw; part of the base's\n"
    "                      fingerprint: a resumed sweep keeps its own)\n"
    "      --optimise      prune by the proven bound alone (also --optimize)\n"
    "      --exhaustive    screen nothing\n"
    "      --threads N     threads (default: OMP_NUM_THREADS, else the CPUs it may use;\n"
    "                      idle ones sleep; with N > 1 the rows are stored by one\n"
    "                      more, SQLite's, while they work); fewer from the next\n"
    "                      batch on where the largest candidates so far would\n"
    "                      not fit in memory at one a thread (said when it happens)\n"
    "      --batch N       candidates per batch and transaction at most (default\n"
    "                      32; the first of each GPU count fewer: the ramp above);\n"
    "                      the results do not depend on the thread count; which\n"
    "                      are screened does depend on N, so a sweep resumes with\n"
    "                      its own N and mode, and another is refused)\n"
    "  -q, --quiet         no progress and no counts on stderr (errors and\n"
    "                      warnings only)\n"
    "      --json          the summary on stdout as JSON (counts, the best\n"
    "                      layout per GPU count, days and cost to train where\n"
    "                      the sweep gives tokens and price_per_gpu_hour)\n"
    "  -h, --help          this help\n";

/* The one-line search's settings (--model, --hw, --gpus, --gbs, ...). */
struct oneline {
	const char *model, *hw, *gpus, *name, *file;
	int gbs;
	double tokens, price;
};

/* The space the one-line search sweeps (its help says it). */
static const char oneline_space[] = "space = {\n"
				    "  tp = [1, 2, 4, 8];\n"
				    "  pp = [1, 2, 4, 8];\n"
				    "  mbs = [1, 2, 4];\n"
				    "  schedule = [\"1f1b\", \"interleaved\"];\n"
				    "  vp = [2];\n"
				    "  recompute = [\"none\", \"selective\", \"full\"];\n"
				    "  zero = [0, 1];\n"
				    "  sp = [0, 1];\n"
				    "};\n";

/* A file's name without its folder and extension, in name-safe letters
 * (others '_'), into out (n bytes). */
static void stem(const char *path, char *out, size_t n)
{
	const char *b = strrchr(path, '/');
	size_t k = 0;
	b = b ? b + 1 : path;
	for (; *b && *b != '.' && k + 1 < n; b++) {
		unsigned char c = (unsigned char)*b;
		out[k++] = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
				   (c >= 'A' && c <= 'Z') || c == '-' || c == '_'
			       ? (char)c
			       : '_';
	}
	out[k] = '\0';
}

/* A model or profile argument as the sweep file names it: an existing
 * file by its absolute path (so the file runs from any folder), else the
 * name; one a libconfig string cannot hold as it is refused. */
static int oneline_arg(const char *opt, const char *arg, char *out, size_t n, struct prism_err *err)
{
	char *abs = strchr(arg, '/') ? realpath(arg, NULL) : NULL;
	const char *v = abs ? abs : arg;
	int rc = 0;
	if (strpbrk(v, "\"\\") || !v[0])
		rc = prism_err_set(err, PRISM_EARG,
				   "--%s '%s': a name or path without quotes or "
				   "backslashes",
				   opt, arg);
	else if ((size_t)snprintf(out, n, "%s", v) >= n)
		rc = cli_path_long(opt, v, n - 1, err);
	for (size_t i = 0; !rc && out[i]; i++)
		if ((unsigned char)out[i] < 0x20)
			rc = prism_err_set(err, PRISM_EARG, "--%s: control characters in '%s'", opt,
					   arg);
	free(abs);
	return rc;
}

/* The one-line search's sweep file, written to q->file or results/NAME.cfg
 * (path: where, n bytes).  0, or the error. */
static int oneline_write(const struct oneline *q, char *path, size_t n, struct prism_err *err)
{
	char model[1024], hw[1024], name[SWEEP_NAME_MAX + 1], a[64], b[64],
	    list[SWEEP_MAX_LIST * 9];
	size_t o = 0;
	struct prism_wfile w;
	const char *p = q->gpus;
	int rc, ng = 0;

	if (!q->hw || !q->gpus || q->gbs <= 0)
		return prism_err_set(err, PRISM_EARG,
				     "--model needs --hw, --gpus and --gbs "
				     "(prism search --help)");
	if ((rc = oneline_arg("model", q->model, model, sizeof(model), err)) ||
	    (rc = oneline_arg("hw", q->hw, hw, sizeof(hw), err)))
		return rc;
	stem(q->model, a, sizeof(a));
	stem(q->hw, b, sizeof(b));
	snprintf(name, sizeof(name), "%s", q->name ? q->name : "");
	if (!q->name)
		snprintf(name, sizeof(name), "%.31s-%.31s", a, b);
	if (!sweep_name_ok(name))
		return prism_err_set(err, PRISM_EARG,
				     "--name '%s': one file name (1 to %d bytes, "
				     "no '/', no leading '.')",
				     name, SWEEP_NAME_MAX);
	/* --gpus: whole numbers, comma-separated. */
	do {
		char one[32];
		size_t k = strcspn(p, ",");
		int g;
		snprintf(one, sizeof(one), "%.*s", (int)(k < 31 ? k : 31), p);
		if (k >= 31 || (rc = cli_count(one, "gpus", 1, LAYOUT_MAX_GPUS, &g, err)))
			return rc ? rc : prism_err_set(err, PRISM_EARG, "--gpus '%s'", q->gpus);
		if (++ng > SWEEP_MAX_LIST)
			return prism_err_set(err, PRISM_EARG, "--gpus lists more than %d counts",
					     SWEEP_MAX_LIST);
		o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%d", o ? ", " : "", g);
		p += k + (p[k] == ',');
		if (p[-1] == ',' && !*p)
			return prism_err_set(err, PRISM_EARG,
					     "--gpus '%s': a count after each comma", q->gpus);
	} while (*p);
	if (q->file) {
		if ((size_t)snprintf(path, n, "%s", q->file) >= n)
			return cli_path_long("--sweep-file", q->file, n - 1, err);
	} else {
		mkdir("results", 0777);
		snprintf(path, n, "results/%s.cfg", name);
	}
	if (prism_wfile_replace(&w, path))
		return prism_err_set(err, PRISM_EIO, "%s: %s", path, strerror(errno));
	fprintf(w.f,
		"# Written by: prism search --model %s --hw %s --gpus %s --gbs %d; run it with\n"
		"# prism search %s (docs/FORMATS.md: the sweep manual).\n"
		"name = \"%s\";\nmodel = \"%s\";\nhw = \"%s\";\ngpus = [%s];\n"
		"global_batch = %d;\n",
		model, hw, q->gpus, q->gbs, path, name, model, hw, list, q->gbs);
	if (q->tokens > 0)
		fprintf(w.f, "tokens = %.17g;\n", q->tokens);
	if (q->price > 0)
		fprintf(w.f, "price_per_gpu_hour = %.17g;\n", q->price);
	fputs(oneline_space, w.f);
	if (prism_wfile_commit(&w))
		return prism_err_set(err, PRISM_EIO, "%s: write failed: %s", path, strerror(errno));
	return 0;
}

/* The batches process 0's writer may hold before they are stored. */
#define WRITER_BYTES ((size_t)16 << 20)

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

static const char *const mode_options[] = {"the default mode", "--optimise", "--exhaustive"};

/* Memory the system has for us (MemAvailable, bytes), 0 when unknown. */
static double available_bytes(void)
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
	for (int m = 0; m <= BATCH_EXHAUSTIVE; m++)
		if (strcmp(run->was_mode, batch_mode_name(m)) == 0)
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
	/* Every simulated row ordered by time within its count of its setting
	 * (profile, seq): the first of each is its best, as prism report
	 * finds it; each priced at its profile's price. */
	if (sqlite3_prepare_v2(
		db,
		"SELECT gpus, key, iter_s, tokens_per_s, hw, seq, price_per_gpu_hour FROM"
		" candidate WHERE sweep=?1 AND status='simulated'"
		" ORDER BY hw, seq, gpus, iter_s, key",
		-1, &st, NULL) == SQLITE_OK) {
		char last_hw[64] = "";
		int last_seq = -1;
		sqlite3_bind_int64(st, 1, sid);
		while (sqlite3_step(st) == SQLITE_ROW) {
			int gpus = sqlite3_column_int(st, 0), seq = sqlite3_column_int(st, 5);
			const char *key = (const char *)sqlite3_column_text(st, 1);
			const char *hw = (const char *)sqlite3_column_text(st, 4);
			double t = sqlite3_column_double(st, 2), tps = sqlite3_column_double(st, 3);
			double price = sqlite3_column_double(st, 6);
			if (gpus == last && seq == last_seq && strcmp(hw ? hw : "", last_hw) == 0)
				continue;
			printf("%s{\"gpus\":%d,\"hw\":", last < 0 ? "" : ",", gpus);
			prism_fput_json_str(stdout, hw ? hw : "");
			printf(",\"seq\":%d,\"key\":", seq);
			prism_fput_json_str(stdout, key ? key : "");
			printf(",\"iter_s\":%.9g,\"tokens_per_s\":%.9g", t, tps);
			if (sw->tokens > 0 && tps > 0) {
				double sec = sw->tokens / tps;
				printf(",\"days_to_train\":%.6g,\"gpu_hours_to_train\":%.6g",
				       sec / 86400, gpus * sec / 3600);
				if (price > 0)
					printf(",\"cost_to_train\":%.6g",
					       gpus * sec / 3600 * price);
			}
			printf("}");
			last = gpus;
			last_seq = seq;
			snprintf(last_hw, sizeof(last_hw), "%s", hw ? hw : "");
		}
		sqlite3_finalize(st);
	}
	printf("]}\n");
}

/* --threads' default: OMP_NUM_THREADS where set (the batch scripts of
 * docs/SCALING.md set it), else the CPUs this process may run on. */
static int default_threads(void)
{
	const char *e = getenv("OMP_NUM_THREADS");
	char *end;
	long n;
	if (e && *e) {
		errno = 0;
		n = strtol(e, &end, 10);
		if (!errno && *end == '\0' && n >= 1 && n <= 1024)
			return (int)n;
	}
	return pool_cpus();
}

/* What a search run holds between its steps. */
struct run {
	struct sweep sw;
	struct batch_space sp;
	struct shard sh;
	sqlite3 *db; /* process 0's */
	long long sid;
	char dbpath[1024];
	int *plan; /* the batches' sizes (batch_plan), those stored dropped */
	size_t nplan;
	char *stored; /* per ref of sp.order, then per rejected: stored before */
	size_t done;  /* stored before, or now */
	size_t stats[CS_FAILED + 1];
	struct batch_best best;
	struct batch_twins twins;     /* predictions a balanced twin may take */
	struct pool *pool;	      /* this process's threads */
	struct predict_scratch **scr; /* each thread's, kept batch to batch */
	struct writer *w;	      /* stores process 0's rows (NULL before open_results) */
	int mode, bsize, resumed, lead;
	int quiet;	  /* --quiet: no progress, no counts */
	double last_line; /* when the last progress line went to a log */
};

/* A log's progress: at most a line every this many seconds. */
#define PROGRESS_LOG_S 10.0

/* Process 0 opens the database (its path given, or results/NAME.db) and
 * finds the sweep's row (resumed: as it ran), the best times so far and
 * which candidates are stored; every process learns them. */
static int open_results(struct run *R, const char *db_arg, int batch_given, struct prism_err *err)
{
	size_t n = R->sp.norder + R->sp.nrejected;
	char **keys = NULL;
	size_t nkeys = 0;
	struct store_run run = {batch_mode_name(R->mode), R->bsize, "", 0};
	int rc = 0;

	if (db_arg) {
		/* Cut short, it would name another file. */
		if ((size_t)snprintf(R->dbpath, sizeof(R->dbpath), "%s", db_arg) >=
		    sizeof(R->dbpath))
			return cli_path_long("--db", db_arg, sizeof(R->dbpath) - 1, err);
	} else {
		if (R->lead)
			mkdir("results", 0777);
		snprintf(R->dbpath, sizeof(R->dbpath), "results/%s.db", R->sw.name);
	}
	memset(&R->best, 0, sizeof(R->best));
	if (!(R->stored = prism_calloc(n + 1, 1)))
		rc = prism_err_set(err, PRISM_ENOMEM, "out of memory");
	if (rc == 0 && R->lead &&
	    ((rc = store_open(R->dbpath, &R->db, err)) == 0 &&
	     (rc = store_sweep(R->db, &R->sw, &run, &R->sid, &R->resumed, err)) == 0 &&
	     (rc = resume_run(R->db, &R->sw, R->sid, R->resumed, batch_given, &run, &R->bsize,
			      err)) == 0 &&
	     (rc = store_keys(R->db, R->sid, &keys, &nkeys, err)) == 0)) {
		char key[sizeof(((struct cand *)0)->key)];
		R->best.n = store_best(R->db, R->sid, &R->sw, R->best.gpus, R->best.hw, R->best.seq,
				       R->best.t, BATCH_MAX_BEST);
		for (size_t i = 0; nkeys && i < n; i++) {
			uint32_t ix = i < R->sp.norder ? R->sp.order[i].index
						       : R->sp.rejected[i - R->sp.norder];
			sweep_key(&R->sw, ix, key, sizeof(key));
			R->stored[i] = bsearch(key, keys, nkeys, sizeof(*keys), cmp_key) != NULL;
		}
	}
	store_keys_free(keys, nkeys);
	return rc;
}

/* A rejected candidate made again for its row (writer_make_fn). */
static void make_rejected(const void *sw, uint32_t index, struct cand *c)
{
	sweep_candidate(sw, index, c);
}

/* Process 0 stores the rejected candidates not stored before, in
 * transactions of REJECT_CHUNK (a kill between them loses nothing: the
 * rerun stores the rest): made again and stored by the writer while the
 * batches begin (their statuses, counted here, are batch_space's). */
static int keep_rejected(struct run *R, struct prism_err *err)
{
	uint32_t index[REJECT_CHUNK];
	size_t nrej = 0;
	int rc = 0;

	if (!R->lead)
		return 0;
	for (size_t i = 0; rc == 0 && i <= R->sp.nrejected; i++) {
		if (i < R->sp.nrejected && R->stored[R->sp.norder + i]) {
			R->done++;
		} else if (i < R->sp.nrejected) {
			index[nrej++] = R->sp.rejected[i];
			R->stats[R->sp.rejected_status[i]]++;
		}
		if (nrej && (nrej == REJECT_CHUNK || i == R->sp.nrejected)) {
			rc = writer_put_made(R->w, make_rejected, &R->sw, index, nrej, err);
			nrej = 0;
		}
	}
	return rc;
}

/* Process 0's rows stored by a thread of their own where the search has
 * more than one (writer.h), up to WRITER_BYTES of batches behind; the
 * other processes' writer stores nothing. */
static int open_writer(struct run *R, int threads, struct prism_err *err)
{
	size_t per = (size_t)R->bsize * sizeof(struct cand);
	int slots = per * 256 <= WRITER_BYTES ? 256 : (int)(WRITER_BYTES / per);
	if (!(R->w = writer_new(R->lead ? R->db : NULL, R->sid, R->bsize, slots, threads > 1)))
		return prism_err_set(err, errno == ENOMEM ? PRISM_ENOMEM : PRISM_EIO,
				     "cannot start the writer: %s", strerror(errno));
	return 0;
}

/* The batches planned over every ref (as the sweep ran), then the refs
 * not stored before kept in place, each batch less those stored
 * (batch_unstored). */
static int plan_unstored(struct run *R, struct prism_err *err)
{
	size_t all = R->sp.norder;
	if (!(R->plan = prism_malloc((all + 1) * sizeof(*R->plan))))
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	R->nplan = batch_plan(R->sp.order, all, R->bsize, R->mode, R->plan);
	R->nplan = batch_unstored(R->sp.order, &R->sp.norder, R->plan, R->nplan, R->stored);
	R->done += all - R->sp.norder;
	R->stats[CS_PENDING] += R->sp.norder;
	return 0;
}

/* Process 0's line after a batch: on a terminal the progress line, else
 * one line a batch. */
static void progress_line(struct run *R, struct progress *pg, size_t at, double t0)
{
	double el = now() - t0, rate = at / (el > 0 ? el : 1e-9), top = 0;
	int topg = 0;
	for (int i = 0; i < R->best.n; i++)
		if (R->best.t[i] > 0 && (top == 0 || R->best.gpus[i] > topg)) {
			top = R->best.t[i];
			topg = R->best.gpus[i];
		}
	if (pg->f) {
		char tail[96];
		snprintf(tail, sizeof(tail), "best at %d GPUs %.3f ms", topg, top * 1e3);
		progress_set(pg, at, R->stats[CS_SIMULATED], R->stats[CS_SCREENED], tail);
		progress_print(pg);
	} else if (!R->quiet && (R->last_line == 0 || at == R->sp.norder ||
				 now() - R->last_line >= PROGRESS_LOG_S)) {
		/* Not a terminal: the first batch's line, then one every
		 * PROGRESS_LOG_S at most, and the last. */
		R->last_line = now();
		fprintf(
		    stderr,
		    "  %zu/%zu evaluated, %zu simulated, %zu screened, %.1f/s, ETA %.0f s, best "
		    "at %d GPUs %.3f ms\n",
		    at, R->sp.norder, R->stats[CS_SIMULATED], R->stats[CS_SCREENED], rate,
		    (double)(R->sp.norder - at) / (rate > 0 ? rate : 1), topg, top * 1e3);
	}
}

/* The batches: each made and screened, dealt to the processes, simulated
 * by their threads (fewer once the largest candidates so far would not fit
 * one a thread), gathered and stored by process 0; the best times updated
 * between batches. */
static int run_batches(struct run *R, int threads, struct progress *pg, struct prism_err *err)
{
	struct writer *W = R->w;
	int *owner = prism_malloc((size_t)R->bsize * sizeof(*owner));
	struct batch_job *work = prism_malloc((size_t)R->bsize * sizeof(*work));
	double avail = available_bytes(), t0 = now();
	int tn = threads, rc = 0;

	if (!W || !owner || !work)
		rc = prism_err_set(err, PRISM_ENOMEM, "out of memory");
	if ((rc = shard_any(&R->sh, rc)))
		goto out;
	for (size_t at = 0, b = 0; b < R->nplan; b++) {
		int nb = R->plan[b], t;
		struct cand *batch = writer_slot(W);
		if (!batch) { /* the writer failed: writer_put says why */
			rc = writer_put(W, 0, err);
			goto fail;
		}
		batch_make(&R->sw, R->pool, R->sp.order + at, nb, R->sp.places, R->sp.mems, R->mode,
			   &R->best, batch, pg);
		at += (size_t)nb;
		shard_deal(&R->sh, batch, nb, owner);
		batch_simulate_twins(&R->sw, R->pool, batch, nb, owner, R->sh.rank, tn, work, pg,
				     &R->twins, R->scr);
		/* A candidate too large for every thread to hold one: fewer
		 * threads from the next batch on (the rows do not depend on how
		 * many). */
		if ((t = threads_by_memory(tn, threads, avail)) < tn && R->lead)
			fprintf(stderr,
				"prism search: %d thread%s from here on: the largest candidates so "
				"far need up to %.0f MB a thread, %.0f MB were available\n",
				t, t > 1 ? "s" : "", getrusage_mb() / threads, avail / 1048576);
		tn = t;
		if (shard_gather(&R->sh, batch, nb, owner, R->sw.hw)) {
			fprintf(stderr, "prism: process %d: out of memory\n", R->sh.rank);
			shard_abort(&R->sh, 1);
			rc = prism_err_set(err, PRISM_ENOMEM, "out of memory");
			goto out;
		}
		for (int i = 0; i < nb; i++)
			R->stats[batch[i].status]++;
		batch_best_add(&R->best, batch, nb);
		/* The batch is the writer's from here. */
		if (R->lead && (rc = writer_put(W, (size_t)nb, err)))
			goto fail;
		if (R->lead)
			progress_line(R, pg, at, t0);
	}
	/* Every batch stored before the sweep's row is finished. */
	rc = writer_finish(W, err);
	R->w = NULL;
	if (rc)
		goto fail;
out:
	free(owner);
	free(work);
	return rc;
fail:
	if (R->sh.size > 1) {
		cli_fail(err);
		shard_abort(&R->sh, 1);
	}
	goto out;
}

/* The one-line search's options (--model, --hw, --gpus, --gbs, --name,
 * --tokens, --price, --sweep-file) into q: 0, or PRISM_EARG. */
static int oneline_option(int c, const char *arg, struct oneline *q, struct prism_err *err)
{
	switch (c) {
	case 'M':
		q->model = arg;
		return 0;
	case 'H':
		q->hw = arg;
		return 0;
	case 'G':
		q->gpus = arg;
		return 0;
	case 'B':
		return cli_count(arg, "gbs", 1, SWEEP_MAX_BATCH, &q->gbs, err);
	case 'N':
		q->name = arg;
		return 0;
	case 'T':
		return cli_number(arg, "tokens", 1, 1e16, &q->tokens, err);
	case 'P':
		return cli_number(arg, "price", 0, 1e6, &q->price, err);
	default: /* 'F' */
		q->file = arg;
		return 0;
	}
}

/* The sweep file to run: the one-line search's, written now, or the one
 * named (argv[optind]).  0, or the exit status (a usage error or cli_fail's). */
static int sweep_path(const struct oneline *q, int argc, char **argv, int quiet, char *path,
		      size_t n)
{
	struct prism_err err;
	prism_err_clear(&err);
	if (q->model || q->hw || q->gpus || q->gbs || q->name || q->tokens > 0 || q->price > 0 ||
	    q->file) {
		/* The one-line search: its sweep file written, then run. */
		if (optind != argc || !q->model) {
			fprintf(stderr, "prism search: give a SWEEP file, or --model with --hw, "
					"--gpus and --gbs (not both)\n");
			return EXIT_USAGE;
		}
		if (oneline_write(q, path, n, &err))
			return cli_fail(&err);
		if (!quiet)
			fprintf(stderr, "prism search: wrote the sweep %s\n", path);
		return 0;
	}
	if (optind != argc - 1) {
		fprintf(stderr, "prism search: give one SWEEP file\n%s%s", help, help_options);
		return EXIT_USAGE;
	}
	if (cli_config_path("sweeps", argv[optind], path, n, &err))
		return cli_fail(&err);
	return 0;
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
	    {"quiet", no_argument, NULL, 'q'},
	    {"model", required_argument, NULL, 'M'},
	    {"hw", required_argument, NULL, 'H'},
	    {"gpus", required_argument, NULL, 'G'},
	    {"gbs", required_argument, NULL, 'B'},
	    {"name", required_argument, NULL, 'N'},
	    {"tokens", required_argument, NULL, 'T'},
	    {"price", required_argument, NULL, 'P'},
	    {"sweep-file", required_argument, NULL, 'F'},
	    {"base-hw", required_argument, NULL, 'W'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct oneline q = {0};
	struct run R;
	struct prism_err err;
	struct cli_parse args;
	char path[1024];
	const char *db_arg = NULL, *base_hw = NULL;
	int threads = 0, c, rc = 0, json = 0, batch_given, quiet = 0;
	size_t before;
	double t0;
	struct progress pg; /* the terminal's line (pg.f NULL: none) */

	memset(&R, 0, sizeof(R));
	memset(&pg, 0, sizeof(pg));
	R.mode = BATCH_SCREEN;
	prism_err_clear(&err);
	/* The operand (a sweep file, or none with the one-line search's
	 * options) is sweep_path's to check. */
	cli_parse_init(&args, "search", help, "hq", longopts, NULL, NULL, NULL);
	args.help_more = help_options;
	while ((c = cli_next_option(&args, argc, argv, &err)) >= 0) {
		switch (c) {
		case 'd':
			db_arg = optarg;
			break;
		case 'W':
			base_hw = optarg;
			break;
		case 'x':
			R.mode = BATCH_EXHAUSTIVE;
			break;
		case 'o':
			R.mode = BATCH_OPTIMISE;
			break;
		case 't':
			if (cli_count(optarg, "threads", 1, 1024, &threads, &err))
				return cli_fail(&err);
			break;
		case 'b':
			if (cli_count(optarg, "batch", 1, 1 << 16, &R.bsize, &err))
				return cli_fail(&err);
			break;
		case 'j':
			json = 1;
			break;
		case 'q':
			R.quiet = 1;
			break;
		case 'M':
		case 'H':
		case 'G':
		case 'B':
		case 'N':
		case 'T':
		case 'P':
		case 'F':
			if (oneline_option(c, optarg, &q, &err))
				return cli_fail(&err);
			break;
		}
	}
	if (c == CLI_PARSE_EXIT)
		return args.status;
	if ((rc = sweep_path(&q, argc, argv, R.quiet, path, sizeof(path))))
		return rc;
	if (shard_init(&R.sh, &argc, &argv))
		return EXIT_USAGE;
	R.lead = R.sh.rank == 0;
	if (threads <= 0)
		threads = default_threads();
	if (!(R.pool = pool_new(threads))) {
		rc = prism_err_set(&err, errno == ENOMEM ? PRISM_ENOMEM : PRISM_EIO,
				   "cannot start %d threads: %s", threads, strerror(errno));
		shard_finalize(&R.sh);
		return cli_fail(&err);
	}
	if (!(R.scr = prism_calloc((size_t)threads, sizeof(*R.scr))))
		rc = prism_err_set(&err, PRISM_ENOMEM, "out of memory");
	for (int t = 0; rc == 0 && t < threads; t++)
		if (!(R.scr[t] = predict_scratch_new()))
			rc = prism_err_set(&err, PRISM_ENOMEM, "out of memory");
	if (rc) {
		free(R.scr);
		pool_free(R.pool);
		shard_finalize(&R.sh);
		return cli_fail(&err);
	}
	/* Every candidate once: the pending ones best-first, the rejected. */
	if ((rc = sweep_load_hw(path, base_hw, &R.sw, &err)) == 0)
		rc = batch_space(&R.sw, R.pool, &R.sp, &err);
	/* A budget no layout can use is the sweep file's error. */
	if (rc == 0 && R.sp.norder == 0)
		rc = prism_err_set(&err, PRISM_EFORMAT,
				   "%s:%d: no layout is possible with these GPU counts "
				   "(%ld candidates, all rejected; the first: %s)",
				   path, R.sw.gpus_line, R.sp.n, R.sp.first_reason);
	if ((rc = agree(&R.sh, rc, &quiet)))
		goto out;
	batch_given = R.bsize > 0;
	if (R.bsize <= 0)
		R.bsize = 32;
	rc = open_results(&R, db_arg, batch_given, &err);
	if ((rc = agree(&R.sh, rc, &quiet)))
		goto out;
	shard_bcast(&R.sh, &R.best, sizeof(R.best));
	shard_bcast(&R.sh, &R.resumed, sizeof(R.resumed));
	shard_bcast(&R.sh, &R.bsize, sizeof(R.bsize)); /* a resumed sweep's own */
	shard_bcast(&R.sh, R.stored, R.sp.norder + R.sp.nrejected);
	rc = open_writer(&R, threads, &err);
	if (rc == 0)
		rc = keep_rejected(&R, &err);
	if ((rc = agree(&R.sh, rc, &quiet)))
		goto out;
	rc = plan_unstored(&R, &err);
	if ((rc = agree(&R.sh, rc, &quiet)))
		goto out;
	if (R.lead && !R.quiet)
		fprintf(stderr,
			"prism search: %s: %ld candidates (%zu invalid, %zu out of memory, %zu "
			"stored before%s), %zu to evaluate, %d threads%s -> %s\n",
			R.sw.name, R.sp.n, R.stats[CS_INVALID], R.stats[CS_OOM], R.done,
			R.resumed ? ": resuming" : "", R.sp.norder, threads, procs(&R.sh),
			R.dbpath);
	before = R.done;
	t0 = now();
	if (R.lead) {
		progress_on_interrupt();
		if (isatty(2) && R.sp.norder && !R.quiet) {
			fprintf(stderr, "  (Ctrl-C stops it; the same command resumes)\n");
			if (progress_start(&pg, stderr, R.sp.norder))
				pg.f = NULL; /* no thread: the batches' lines only */
		}
	}
	if ((rc = run_batches(&R, threads, &pg, &err)) || !R.lead)
		goto out;
	progress_stop(&pg);
	if ((rc = store_finish(R.db, R.sid, &err)))
		goto out;
	if (json) {
		summary_json(R.db, R.sid, &R.sw, R.dbpath, R.stats, before, batch_mode_name(R.mode),
			     now() - t0);
		goto out;
	}
	printf("sweep %s (id %lld) in %s: %zu simulated, %zu screened, %zu invalid, %zu out of "
	       "memory, %zu failed\n",
	       R.sw.name, R.sid, R.dbpath, R.stats[CS_SIMULATED], R.stats[CS_SCREENED],
	       R.stats[CS_INVALID], R.stats[CS_OOM], R.stats[CS_FAILED]);
	printf("report: prism report %s\n", R.dbpath);
out:
	progress_stop(&pg);
	writer_finish(R.w, &(struct prism_err){0});
	batch_space_release(&R.sp);
	batch_twins_release(&R.twins);
	free(R.stored);
	free(R.plan);
	if (R.db)
		sqlite3_close(R.db);
	sweep_release(&R.sw);
	for (int t = 0; t < threads; t++)
		predict_scratch_free(R.scr[t]);
	free(R.scr);
	pool_free(R.pool);
	shard_finalize(&R.sh);
	/* Only the process that failed says why. */
	if (!rc)
		return 0;
	return quiet ? 1 : cli_fail(&err);
}
