/* cmd_report.c - `prism report`: best layouts and Pareto fronts of a sweep. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "store.h"
#include "sweep.h"
#include "vec.h"

static const char help[] =
	"usage: prism report DB [options]\n"
	"\n"
	"Read a sweep's results from the database `prism search` wrote and write,\n"
	"into DIR: report.md (the best layout per GPU count, the Pareto fronts of\n"
	"iteration time and of GPU-hours per iteration against GPU count, the\n"
	"runners-up at each GPU count and why they lose, what was rejected),\n"
	"best.csv (the best layout per GPU count) and pareto.svg (drawn by\n"
	"gnuplot's SVG terminal).  report.md is also printed.\n"
	"\n"
	"options:\n"
	"      --sweep ID      the sweep (default: the latest in the database)\n"
	"  -o, --output DIR    where to write (default results/NAME/)\n"
	"  -h, --help          this help\n";

struct row {
	int gpus, tp, pp, dp, vp, mbs, mb, zero, sp, layers, hidden;
	char schedule[16], recompute[16];
	double iter_s, bubble, tps, mfu, gpuh, mem_gb;
};

static void layout(char *buf, size_t n, const struct row *r)
{
	char vp[16] = "", rc[32] = "";
	if (strcmp(r->schedule, "interleaved") == 0)
		snprintf(vp, sizeof(vp), " vp %d", r->vp);
	if (strcmp(r->recompute, "none") != 0)
		snprintf(rc, sizeof(rc), ", recompute %s", r->recompute);
	snprintf(buf, n, "tp %d pp %d dp %d%s, mbs %d x %d, %s%s, zero %d%s", r->tp, r->pp, r->dp,
		 vp, r->mbs, r->mb, r->schedule, rc, r->zero, r->sp ? ", sp" : "");
}

/* Why runner-up r loses to b (same GPU count). */
static void why(char *buf, size_t n, const struct row *b, const struct row *r)
{
	if (r->bubble > b->bubble + 0.03)
		snprintf(buf, n, "pipeline bubble %.0f%% against %.0f%%", r->bubble * 100,
			 b->bubble * 100);
	else if (r->mfu < b->mfu * 0.97 && r->tp > b->tp)
		snprintf(buf, n, "tensor-parallel communication (tp %d against %d)", r->tp, b->tp);
	else if (strcmp(r->recompute, b->recompute) && strcmp(r->recompute, "full") == 0)
		snprintf(buf, n, "recomputation (one more forward pass)");
	else if (r->mbs < b->mbs)
		snprintf(buf, n, "smaller microbatches: less efficient kernels, more launches");
	else
		snprintf(buf, n, "exposed communication and overheads (MFU %.1f%% against %.1f%%)",
			 r->mfu * 100, b->mfu * 100);
}

/* Column i of st as text; "" for NULL (the database may be anyone's). */
static const char *text(sqlite3_stmt *st, int i)
{
	const char *v = (const char *)sqlite3_column_text(st, i);
	return v ? v : "";
}

/* name as text safe to show anywhere (a gnuplot string, a Markdown
 * heading): letters, digits and " +-.,:=_()" kept, every other byte '?'.
 * The name comes from the database, which may be anyone's. */
static void shown(char *buf, size_t n, const char *name)
{
	size_t i = 0;
	for (; name[i] && i + 1 < n; i++) {
		unsigned char ch = (unsigned char)name[i];
		buf[i] = ch < 0x80 && (isalnum(ch) || strchr(" +-.,:=_()", ch)) ? (char)ch : '?';
	}
	buf[i] = '\0';
}

/*
 * pareto.svg from pareto.dat in dir, drawn by gnuplot's SVG terminal.
 * gnuplot runs in dir, so its program names no path, and the only text
 * in it from outside is the title, passed through shown(): gnuplot's
 * `system`, `!` and backquotes run shell commands, so nothing from the
 * database is ever pasted in raw.  0, or -1 when gnuplot is missing or
 * fails.
 */
static int chart(const char *dir, const char *name)
{
	struct sigaction ign, old;
	char title[128], svg[1100], tmp[1100];
	int fd[2], st = 0, wrote;
	pid_t pid;
	FILE *gp;

	shown(title, sizeof(title), name);
	if (pipe(fd))
		return -1;
	if ((pid = fork()) < 0) {
		close(fd[0]);
		close(fd[1]);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(fd[0], 0);
		close(fd[0]);
		close(fd[1]);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		if (chdir(dir) == 0)
			execlp("gnuplot", "gnuplot", (char *)NULL);
		_exit(127);
	}
	close(fd[0]);
	/* A gnuplot that is missing or dies early must not kill us by SIGPIPE. */
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ign, &old);
	if ((gp = fdopen(fd[1], "w"))) {
		wrote = fprintf(gp,
				"set terminal svg size 800,500 dynamic background rgb 'white'\n"
				"set output 'pareto.svg.tmp'\n"
				"set title 'Sweep %s: best iteration time per GPU count' noenhanced\n"
				"set xlabel 'GPUs'\nset ylabel 'iteration time (ms)'\n"
				"set y2label 'GPU-hours per iteration'\nset logscale x 2\n"
				"set y2tics\nset ytics nomirror\nset key top right\nset grid\n"
				"plot 'pareto.dat' using 1:2 with linespoints lw 2 pt 7 "
				"title 'iteration time', "
				"'' using 1:($4 > 0 ? $2 : 1/0) with points pt 6 ps 2 lc rgb 'black' "
				"title 'Pareto front (time)', "
				"'' using 1:3 axes x1y2 with linespoints dt 2 pt 5 "
				"title 'GPU-hours per iteration'\n",
				title) > 0;
		wrote = fclose(gp) == 0 && wrote;
	} else {
		close(fd[1]);
		wrote = 0;
	}
	sigaction(SIGPIPE, &old, NULL);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	/* The chart, whole or not at all: a failed gnuplot keeps the old one. */
	snprintf(svg, sizeof(svg), "%s/pareto.svg", dir);
	snprintf(tmp, sizeof(tmp), "%s/pareto.svg.tmp", dir);
	if (wrote && WIFEXITED(st) && WEXITSTATUS(st) == 0 && rename(tmp, svg) == 0)
		return 0;
	unlink(tmp);
	return -1;
}

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"sweep", required_argument, NULL, 's'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	long long sid = -1;
	const char *outdir = NULL;
	char name[128] = "", dir[1024], path[1100];
	VEC(struct row) rv = {0};
	struct row *rows = NULL;
	size_t n = 0;
	/* report.md, best.csv, pareto.dat: each whole or not at all. */
	static const char *const outs[3] = {"report.md", "best.csv", "pareto.dat"};
	struct prism_wfile wf[3] = {{0}};
	char wpath[3][1100];
	FILE *md = NULL, *csv = NULL, *dat = NULL;
	int c, rc = 0, drawn;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's': sid = atoll(optarg); break;
		case 'o': outdir = optarg; break;
		case 'h': fputs(help, stdout); return 0;
		default: fputs(help, stderr); return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "prism report: give one DB\n%s", help);
		return EXIT_USAGE;
	}
	if (sqlite3_open_v2(argv[optind], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		fprintf(stderr, "prism: %s: %s\n", argv[optind], sqlite3_errmsg(db));
		sqlite3_close(db);
		return EXIT_USAGE;
	}
	{
		struct prism_err err;
		prism_err_clear(&err);
		if (store_check(db, argv[optind], &err)) {
			sqlite3_close(db);
			return cli_fail(&err);
		}
	}
	if (sqlite3_prepare_v2(db,
			       sid >= 0 ? "SELECT id, name FROM sweep WHERE id=?1"
					: "SELECT id, name FROM sweep ORDER BY id DESC LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "prism: %s: not a prism results database (%s)\n", argv[optind],
			sqlite3_errmsg(db));
		sqlite3_close(db);
		return EXIT_USAGE;
	}
	if (sid >= 0)
		sqlite3_bind_int64(st, 1, sid);
	if (sqlite3_step(st) != SQLITE_ROW) {
		fprintf(stderr, "prism: %s: no sweep%s\n", argv[optind], sid >= 0 ? " with that id" : "");
		sqlite3_finalize(st);
		sqlite3_close(db);
		return EXIT_USAGE;
	}
	sid = sqlite3_column_int64(st, 0);
	snprintf(name, sizeof(name), "%s", text(st, 1));
	sqlite3_finalize(st);
	sqlite3_prepare_v2(db,
			   "SELECT gpus, tp, pp, dp, vp, mbs, microbatches, zero, sp, layers, hidden,"
			   " schedule, recompute, iter_s, bubble, tokens_per_s, mfu, gpu_hours, mem_gb"
			   " FROM candidate WHERE sweep=?1 AND status='simulated'"
			   " ORDER BY gpus, iter_s, key",
			   -1, &st, NULL);
	sqlite3_bind_int64(st, 1, sid);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct row *r;
		if (VEC_RESERVE(rv, rv.n + 1)) {
			rc = 1;
			break;
		}
		r = &rv.v[rv.n++];
		r->gpus = sqlite3_column_int(st, 0);
		r->tp = sqlite3_column_int(st, 1);
		r->pp = sqlite3_column_int(st, 2);
		r->dp = sqlite3_column_int(st, 3);
		r->vp = sqlite3_column_int(st, 4);
		r->mbs = sqlite3_column_int(st, 5);
		r->mb = sqlite3_column_int(st, 6);
		r->zero = sqlite3_column_int(st, 7);
		r->sp = sqlite3_column_int(st, 8);
		r->layers = sqlite3_column_int(st, 9);
		r->hidden = sqlite3_column_int(st, 10);
		snprintf(r->schedule, sizeof(r->schedule), "%s", text(st, 11));
		snprintf(r->recompute, sizeof(r->recompute), "%s", text(st, 12));
		r->iter_s = sqlite3_column_double(st, 13);
		r->bubble = sqlite3_column_double(st, 14);
		r->tps = sqlite3_column_double(st, 15);
		r->mfu = sqlite3_column_double(st, 16);
		r->gpuh = sqlite3_column_double(st, 17);
		r->mem_gb = sqlite3_column_double(st, 18);
	}
	sqlite3_finalize(st);
	rows = rv.v;
	n = rv.n;
	if (rc)
		goto out;
	if (outdir) {
		snprintf(dir, sizeof(dir), "%s", outdir);
	} else if (sweep_name_ok(name)) {
		snprintf(dir, sizeof(dir), "results/%s", name);
		mkdir("results", 0777);
	} else {
		/* A name prism search refuses: the database was made by hand,
		 * and "../../x" must not write outside results/. */
		shown(path, sizeof(path), name);
		fprintf(stderr,
			"prism: %s: sweep %lld is named '%s', which is not one file name: give "
			"-o DIR\n",
			argv[optind], sid, path);
		rc = EXIT_USAGE;
		goto out;
	}
	if (mkdir(dir, 0777) && errno != EEXIST) {
		fprintf(stderr, "prism: %s: %s\n", dir, strerror(errno));
		rc = EXIT_USAGE;
		goto out;
	}
	for (int i = 0; i < 4; i++) {
		/* Never over the database itself. */
		snprintf(path, sizeof(path), "%s/%s", dir, i < 3 ? outs[i] : "pareto.svg");
		if (prism_same_file(path, argv[optind])) {
			fprintf(stderr, "prism: -o %s would overwrite the input %s: give another "
					"folder\n",
				dir, argv[optind]);
			rc = EXIT_USAGE;
			goto out;
		}
	}
	for (int i = 0; i < 3; i++) {
		snprintf(wpath[i], sizeof(wpath[i]), "%s/%s", dir, outs[i]);
		if (prism_wfile_open(&wf[i], wpath[i])) {
			fprintf(stderr, "prism: %s: %s\n", wpath[i], strerror(errno));
			rc = EXIT_USAGE;
			goto out;
		}
	}
	md = wf[0].f;
	csv = wf[1].f;
	dat = wf[2].f;
	{
		/* Best per GPU count: the first row of each count (sorted). */
		size_t *best = prism_malloc((n + 1) * sizeof(*best)), nb = 0;
		double front_t = 0, front_h = 0;
		char lay[160];
		if (!best) {
			rc = 1;
			goto out;
		}
		for (size_t i = 0; i < n; i++)
			if (i == 0 || rows[i].gpus != rows[i - 1].gpus)
				best[nb++] = i;
		shown(lay, sizeof(lay), name);
		fprintf(md, "# Sweep %s (id %lld)\n\n", lay, sid);
		sqlite3_prepare_v2(db,
				   "SELECT status, COUNT(*) FROM candidate WHERE sweep=?1 GROUP BY "
				   "status ORDER BY status",
				   -1, &st, NULL);
		sqlite3_bind_int64(st, 1, sid);
		fprintf(md, "Candidates:");
		while (sqlite3_step(st) == SQLITE_ROW)
			fprintf(md, " %s %d;", text(st, 0),
				sqlite3_column_int(st, 1));
		sqlite3_finalize(st);
		fprintf(md, "\n\n## Best layout per GPU count\n\n");
		fprintf(md, "| GPUs | layout | iteration ms | tokens/s | MFU | bubble | memory GB |"
			    " GPU-hours/iter | Pareto (time) | Pareto (GPU-hours) |\n");
		fprintf(md, "|---:|---|---:|---:|---:|---:|---:|---:|---|---|\n");
		fprintf(csv, "gpus,tp,pp,dp,vp,mbs,microbatches,schedule,recompute,zero,"
			     "iter_s,tokens_per_s,mfu,bubble,mem_gb,gpu_hours,pareto_time,"
			     "pareto_gpu_hours\n");
		for (size_t k = 0; k < nb; k++) {
			const struct row *r = &rows[best[k]];
			/* On the front when faster (cheaper) than every smaller count. */
			int pt = front_t == 0 || r->iter_s < front_t, ph;
			double cheapest = r->gpuh;
			for (size_t i = best[k]; i < n && rows[i].gpus == r->gpus; i++)
				if (rows[i].gpuh < cheapest)
					cheapest = rows[i].gpuh;
			ph = front_h == 0 || cheapest < front_h;
			if (pt)
				front_t = r->iter_s;
			if (ph)
				front_h = cheapest;
			layout(lay, sizeof(lay), r);
			fprintf(md, "| %d | %s | %.3f | %.0f | %.1f%% | %.1f%% | %.1f | %.4g | %s | %s |\n",
				r->gpus, lay, r->iter_s * 1e3, r->tps, r->mfu * 100, r->bubble * 100,
				r->mem_gb, r->gpuh, pt ? "yes" : "no", ph ? "yes" : "no");
			fprintf(csv,
				"%d,%d,%d,%d,%d,%d,%d,%s,%s,%d,%.9f,%.3f,%.6f,%.6f,%.3f,%.9g,%d,%d\n",
				r->gpus, r->tp, r->pp, r->dp, r->vp, r->mbs, r->mb, r->schedule,
				r->recompute, r->zero, r->iter_s, r->tps, r->mfu, r->bubble, r->mem_gb,
				r->gpuh, pt, ph);
			fprintf(dat, "%d %.6f %.6g %d %d\n", r->gpus, r->iter_s * 1e3, cheapest, pt,
				ph);
		}
		fprintf(md, "\n## Runners-up, and why they lose\n\n");
		fprintf(md, "| GPUs | layout | iteration ms | vs best | why |\n|---:|---|---:|---:|---|\n");
		for (size_t k = 0; k < nb; k++) {
			const struct row *b = &rows[best[k]];
			for (size_t i = best[k] + 1, shown = 0;
			     i < n && rows[i].gpus == b->gpus && shown < 3; i++, shown++) {
				char w[160];
				layout(lay, sizeof(lay), &rows[i]);
				why(w, sizeof(w), b, &rows[i]);
				fprintf(md, "| %d | %s | %.3f | %+.1f%% | %s |\n", b->gpus, lay,
					rows[i].iter_s * 1e3, (rows[i].iter_s / b->iter_s - 1) * 100, w);
			}
		}
		fprintf(md, "\n## Rejected before simulation (first of each reason)\n\n");
		sqlite3_prepare_v2(db,
				   "SELECT status, reason, COUNT(*) FROM candidate WHERE sweep=?1 AND "
				   "status IN ('invalid','oom','failed') GROUP BY status, "
				   "substr(reason, 1, 24) ORDER BY COUNT(*) DESC LIMIT 12",
				   -1, &st, NULL);
		sqlite3_bind_int64(st, 1, sid);
		while (sqlite3_step(st) == SQLITE_ROW)
			fprintf(md, "- %s (%d): %s\n", text(st, 0), sqlite3_column_int(st, 2),
				text(st, 1));
		sqlite3_finalize(st);
		free(best);
	}
	for (int i = 0; i < 3; i++)
		if (prism_wfile_commit(&wf[i])) {
			fprintf(stderr, "prism: %s: write failed: %s\n", wf[i].path, strerror(errno));
			rc = EXIT_USAGE;
			goto out;
		}
	drawn = chart(dir, name) == 0;
	if (!drawn)
		fprintf(stderr, "prism report: gnuplot failed; no chart (install gnuplot-nox)\n");
	snprintf(path, sizeof(path), "%s/report.md", dir);
	{
		FILE *f = fopen(path, "r");
		char line[1024];
		while (f && fgets(line, sizeof(line), f))
			fputs(line, stdout);
		if (f)
			fclose(f);
	}
	fprintf(stderr, "prism report: wrote %s/report.md, best.csv%s\n", dir,
		drawn ? ", pareto.svg" : "");
out:
	for (int i = 0; i < 3; i++)
		prism_wfile_abort(&wf[i]);
	VEC_FREE(rv);
	sqlite3_close(db);
	return rc;
}
