/* cmd_report.c - `prism report`: best layouts and Pareto fronts of a sweep. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "dbfile.h"
#include "mem.h"
#include "pareto.h"
#include "frame.h"
#include "store.h"
#include "sweep.h"
#include "synth.h"
#include "vec.h"

/*
 * The near-tie threshold: the model's error between two layouts, the mean
 * over every pair of Megatron-LM's measured runs (SC21 Table 1, ten runs
 * of 1.7B to 1T parameters) of |predicted ratio / measured ratio - 1|,
 * synth + simulate (docs/VALIDATION.md, "Near-tie threshold").  The error
 * of a ratio, not of each time: a bias both layouts share cancels, and a
 * ranking is a ratio.  A runner-up this close to the best is a near-tie:
 * the model cannot order the two.  Printed by scripts/tie_error.py from the
 * table docs/VALIDATION.md records; tests/tie_error.py fails when the two
 * disagree.
 */
#define REPORT_TIE_PCT	   11.3
#define REPORT_TIE_STR(x)  #x
#define REPORT_TIE_XSTR(x) REPORT_TIE_STR(x)
#define REPORT_TIE_TEXT	   REPORT_TIE_XSTR(REPORT_TIE_PCT)
#define REPORT_TIE_SOURCE                                                                          \
	"mean error of the predicted ratio of two of Megatron-LM's measured runs, "                \
	"docs/VALIDATION.md"

static const char help[] =
    "usage: prism report DB [options]\n"
    "\n"
    "Read a sweep's results from the database `prism search` wrote and write,\n"
    "into DIR: report.md (the best layout per GPU count with, where the sweep\n"
    "gives 'tokens' and 'price_per_gpu_hour', the days, GPU-hours and cost to\n"
    "train; the Pareto fronts of iteration time and of GPU-hours against GPU\n"
    "count; the best of each family -- with and without a pipeline, each ZeRO\n"
    "stage, each TP degree; whether the best stays best if kernels run 10 %\n"
    "slower or communication overlaps 20 % less, and which perturbation flips\n"
    "it (the five fastest re-timed from their stored breakdown); the\n"
    "runners-up at each GPU count and why they lose, near-ties marked; what\n"
    "was rejected), best.csv (the best layout per GPU count, every knob) and\n"
    "pareto.svg (drawn by gnuplot's SVG terminal: time, and cost from zero,\n"
    "against GPUs; days to train beside the time ticks).\n"
    "A sweep over several hardware profiles or sequence lengths is ranked per\n"
    "setting (profile and length), and report.md compares the settings by\n"
    "tokens/s and by cost per token, each profile at its own price.\n"
    "report.md is also printed, after what the sweep was computed from (its\n"
    "inputs' content hashes and the prism build: docs/RESULTS.md).\n"
    "\n"
    "Near-ties: layouts whose time is within the model's error between two\n"
    "layouts (" REPORT_TIE_TEXT " %: the mean error of the predicted ratio of two of\n"
    "Megatron-LM's measured runs, scripts/tie_error.py, docs/VALIDATION.md) of\n"
    "the best are marked; the model does not rank them.  Layouts\n"
    "that are the same run (ZeRO with dp = 1, a recompute setting that\n"
    "changes neither time nor memory, GPipe or 1F1B without a pipeline) are\n"
    "collapsed into the simplest.  Layouts whose memory is within the memory\n"
    "model's uncertainty (" MEM_UNCERTAINTY_TEXT
    " %) of the usable memory are marked \"(at risk)\".\n"
    "\n"
    "options:\n"
    "      --sweep ID      the sweep (default: the latest in the database)\n"
    "  -o, --output DIR    where to write (default results/NAME/)\n"
    "      --json          print the report as JSON instead of Markdown\n"
    "      --csv-all[=FILE] every candidate, simulated or not, as CSV into\n"
    "                      FILE (default DIR/all.csv; FILE.gz is gzipped; -:\n"
    "                      standard output, report.md then not printed)\n"
    "      --tokens N      tokens to train (default: the sweep's 'tokens')\n"
    "      --price P       price of one GPU-hour, every row (default: each\n"
    "                      row's profile's, as the sweep priced it)\n"
    "      --tie PCT       near-tie threshold in percent (default " REPORT_TIE_TEXT ")\n"
    "      --export FW     print the best layout of each GPU count as FW's launch\n"
    "                      options instead of report.md: megatron (Megatron-LM\n"
    "                      arguments), bridge (Megatron-Bridge / NeMo 2 recipe\n"
    "                      overrides) or torchtitan (TOML); knobs FW cannot express\n"
    "                      are named in a comment (docs/FORMATS.md)\n"
    "      --gpus N        with --export: the best at N GPUs only\n"
    "  -h, --help          this help\n";

/* What a training run needs, for days and cost (0: not known). */
struct train {
	double tokens, price;
	int price_given; /* --price: every row at it, not at its profile's */
	int priced;	 /* some row has a price (its own or price) */
};

/* Everything the writers share. */
struct report {
	long long sid;
	char name[128]; /* shown() */
	const char *db;
	struct pareto P; /* the rows, ranked */
	struct train tr;
	int tie_given; /* by --tie, not REPORT_TIE_PCT */
	/* What the sweep was computed from (sweep.h's inputs, "" where not
	 * recorded) and by which prism. */
	char inputs[1024], version[128];
};

/* R's sweep's version and inputs from db (either "" where the database
 * has no such column: written before it). */
static void read_inputs(struct report *R, sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	R->inputs[0] = R->version[0] = '\0';
	if (sqlite3_prepare_v2(db, "SELECT version, inputs FROM sweep WHERE id=?1", -1, &st,
			       NULL) != SQLITE_OK &&
	    sqlite3_prepare_v2(db, "SELECT version, NULL FROM sweep WHERE id=?1", -1, &st, NULL) !=
		SQLITE_OK)
		return;
	sqlite3_bind_int64(st, 1, R->sid);
	if (sqlite3_step(st) == SQLITE_ROW) {
		const char *v = (const char *)sqlite3_column_text(st, 0);
		const char *in = (const char *)sqlite3_column_text(st, 1);
		snprintf(R->version, sizeof(R->version), "%s", v ? v : "");
		snprintf(R->inputs, sizeof(R->inputs), "%s", in ? in : "");
	}
	sqlite3_finalize(st);
}

/* Each line "WHAT\tVALUE" of R->inputs to fn. */
static void each_input(const struct report *R, void (*fn)(FILE *, const char *, const char *, int),
		       FILE *f)
{
	const char *p = R->inputs;
	for (int i = 0; *p; i++) {
		const char *eol = strchr(p, '\n'), *tab = strchr(p, '\t');
		char what[160], val[512];
		if (!eol)
			eol = p + strlen(p);
		if (tab && tab < eol) {
			snprintf(what, sizeof(what), "%.*s", (int)(tab - p), p);
			snprintf(val, sizeof(val), "%.*s", (int)(eol - tab - 1), tab + 1);
			fn(f, what, val, i);
		}
		p = *eol ? eol + 1 : eol;
	}
}

static void shown(char *buf, size_t n, const char *name);

static void layout(char *buf, size_t n, const struct pareto_row *r)
{
	char vp[16] = "", rc[32] = "", impl[32] = "", set[112] = "";
	size_t k0;
	if (PARETO_KV(r, schedule) == LAYOUT_INTERLEAVED)
		snprintf(vp, sizeof(vp), " vp %d", PARETO_KV(r, vp));
	if (PARETO_KV(r, recompute) != LAYOUT_RECOMPUTE_NONE)
		snprintf(rc, sizeof(rc), ", recompute %s", PARETO_KNAME(r, recompute));
	/* Which setting, where the sweep compares several. */
	if (r->setting_name[0]) {
		shown(set, sizeof(set) - 2, r->setting_name);
		strcat(set, ": ");
	}
	k0 = (size_t)snprintf(buf, n, "%s", set);
	if (k0 >= n)
		return;
	buf += k0;
	n -= k0;
	/* Whose sharding, where not Megatron-LM's (dp_impl). */
	if (PARETO_KV(r, zero) > 0 && PARETO_KV(r, dp_impl) != LAYOUT_DP_MEGATRON)
		snprintf(impl, sizeof(impl), " (%s)", PARETO_KNAME(r, dp_impl));
	snprintf(buf, n, "tp %d pp %d dp %d%s, mbs %d x %d, %s%s, zero %d%s%s", PARETO_KV(r, tp),
		 PARETO_KV(r, pp), PARETO_KV(r, dp), vp, PARETO_KV(r, mbs),
		 PARETO_KV(r, microbatches), PARETO_KNAME(r, schedule), rc, PARETO_KV(r, zero),
		 impl, PARETO_KV(r, sp) ? ", sp" : "");
	if (PARETO_KV(r, cp) > 1) {
		size_t k = strlen(buf);
		snprintf(buf + k, n - k, ", cp %d", PARETO_KV(r, cp));
	}
	if (r->part[0] || r->shard) {
		size_t k = strlen(buf);
		snprintf(buf + k, n - k, "%s%s%s", r->part[0] ? ", stages " : "", r->part,
			 r->shard ? ", hybrid" : "");
	}
	if (PARETO_KV(r, ep) > 1 || PARETO_KV(r, etp) > 1) {
		size_t k = strlen(buf);
		snprintf(buf + k, n - k, ", ep %d etp %d", PARETO_KV(r, ep), PARETO_KV(r, etp));
	}
}

/* The chart's label of a layout: short, ASCII, made of numbers and the
 * canonical names alone. */
static void label(char *buf, size_t n, const struct pareto_row *r)
{
	char vp[16] = "";
	if (PARETO_KV(r, schedule) == LAYOUT_INTERLEAVED)
		snprintf(vp, sizeof(vp), " vp%d", PARETO_KV(r, vp));
	snprintf(buf, n, "tp%d pp%d dp%d%s mbs%d%s%s", PARETO_KV(r, tp), PARETO_KV(r, pp),
		 PARETO_KV(r, dp), vp, PARETO_KV(r, mbs),
		 (PARETO_KV(r, recompute) != LAYOUT_RECOMPUTE_NONE) ? " rc-" : "",
		 (PARETO_KV(r, recompute) != LAYOUT_RECOMPUTE_NONE) ? PARETO_KNAME(r, recompute)
								    : "");
	if (PARETO_KV(r, ep) > 1 || PARETO_KV(r, etp) > 1) {
		size_t k = strlen(buf);
		snprintf(buf + k, n - k, " ep%d etp%d", PARETO_KV(r, ep), PARETO_KV(r, etp));
	}
	if (PARETO_KV(r, cp) > 1) {
		size_t k = strlen(buf);
		snprintf(buf + k, n - k, " cp%d", PARETO_KV(r, cp));
	}
}

/* Why runner-up r loses to b (same GPU count). */
static void why(char *buf, size_t n, const struct pareto_row *b, const struct pareto_row *r)
{
	if (r->iter_s <= b->iter_s * (1 + 5e-4))
		snprintf(buf, n, "as fast (memory %.1f GB against %.1f GB)", r->mem_gb, b->mem_gb);
	else if (r->bubble > b->bubble + 0.03)
		snprintf(buf, n, "pipeline bubble %.0f%% against %.0f%%", r->bubble * 100,
			 b->bubble * 100);
	else if (r->mfu < b->mfu * 0.97 && PARETO_KV(r, tp) > PARETO_KV(b, tp))
		snprintf(buf, n, "tensor-parallel communication (tp %d against %d)",
			 PARETO_KV(r, tp), PARETO_KV(b, tp));
	else if (PARETO_KV(r, recompute) != PARETO_KV(b, recompute) &&
		 PARETO_KV(r, recompute) == LAYOUT_RECOMPUTE_FULL)
		snprintf(buf, n, "recomputation (one more forward pass)");
	else if (PARETO_KV(r, mbs) < PARETO_KV(b, mbs))
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
 * heading, JSON): letters, digits and " +-.,:=_()" kept, every other byte
 * '?'.  The name comes from the database, which may be anyone's. */
static void shown(char *buf, size_t n, const char *name)
{
	size_t i = 0;
	for (; name[i] && i + 1 < n; i++) {
		unsigned char ch = (unsigned char)name[i];
		buf[i] = ch < 0x80 && (isalnum(ch) || strchr(" +-.,:=_()", ch)) ? (char)ch : '?';
	}
	buf[i] = '\0';
}

/* 1,234,567 */
static void grouped(char *buf, size_t n, double v)
{
	char digits[64];
	size_t len, o = 0;
	if (!isfinite(v) || fabs(v) >= 1e18) {
		snprintf(buf, n, "%.3g", v);
		return;
	}
	snprintf(digits, sizeof(digits), "%.0f", fabs(v));
	len = strlen(digits);
	if (v < 0 && digits[0] != '0' && o + 1 < n)
		buf[o++] = '-';
	for (size_t i = 0; i < len && o + 1 < n; i++) {
		buf[o++] = digits[i];
		if ((len - i - 1) % 3 == 0 && i + 1 < len && o + 1 < n)
			buf[o++] = ',';
	}
	buf[o] = '\0';
}

/* Days, GPU-hours and cost to train on row r: 0 where not known. */
static void to_train(const struct train *t, const struct pareto_row *r, double *days, double *gpuh,
		     double *cost)
{
	double s = t->tokens > 0 && r->tps > 0 ? t->tokens / r->tps : 0;
	*days = s / 86400;
	*gpuh = r->gpus * s / 3600;
	/* Each row at its profile's price (stored with it), unless --price. */
	double p = t->price_given ? t->price : r->price > 0 ? r->price : t->price;
	*cost = p > 0 ? *gpuh * p : 0;
}

static void json_num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.9g", v);
	else
		fputs("null", f);
}

/* A figure that is positive where known (tokens/s, MFU, memory of a run a
 * plain trace cannot tell): null where it is not. */
static void json_pos(FILE *f, double v)
{
	json_num(f, v > 0 ? v : NAN);
}

/* The same in CSV: an empty cell where not known. */
static void csv_pos(FILE *f, double v, int prec, int g)
{
	if (v > 0 && isfinite(v))
		fprintf(f, g ? "%.*g" : "%.*f", prec, v);
	putc(',', f);
}

/* A JSON string of text from the database: valid UTF-8 kept, every other
 * byte '?', so the output parses whatever the database holds. */
static void json_text(FILE *f, const char *s)
{
	size_t n = strlen(s);
	char *c = prism_malloc(n + 1);
	if (!c) {
		fputs("null", f);
		return;
	}
	for (size_t i = 0; i < n;) {
		unsigned char b = (unsigned char)s[i];
		size_t k = b < 0x80		? 1
			   : (b & 0xe0) == 0xc0 ? 2
			   : (b & 0xf0) == 0xe0 ? 3
			   : (b & 0xf8) == 0xf0 ? 4
						: 0;
		int ok = k > 0 && i + k <= n && !(k == 2 && b < 0xc2);
		for (size_t j = 1; ok && j < k; j++)
			ok = ((unsigned char)s[i + j] & 0xc0) == 0x80;
		if (ok) {
			memcpy(c + i, s + i, k);
			i += k;
		} else {
			c[i++] = '?';
		}
	}
	c[n] = '\0';
	prism_fput_json_str(f, c);
	free(c);
}

/* The knobs' columns of the CSV ("gpus,tp,...,"). */

static void csv_knob_header(FILE *f)
{
	fputs("gpus,", f);
	for (int k = 0; k < LK_N; k++)
		if (pareto_knob(k))
			fprintf(f, "%s,", layout_knobs[k].id);
}

static void csv_knobs(FILE *f, const struct pareto_row *r)
{
	fprintf(f, "%d,", r->gpus);
	for (int k = 0; k < LK_N; k++) {
		char v[160];
		if (!pareto_knob(k))
			continue;
		pareto_knob_text(r, k, v, sizeof(v));
		prism_fput_csv_str(f, v);
		putc(',', f);
	}
}

static void json_knobs(FILE *f, const struct pareto_row *r)
{
	fprintf(f, "\"gpus\":%d", r->gpus);
	for (int k = 0; k < LK_N; k++) {
		const struct layout_knob *K = &layout_knobs[k];
		char v[160];
		if (!pareto_knob(k))
			continue;
		pareto_knob_text(r, k, v, sizeof(v));
		fprintf(f, ",\"%s\":", K->id);
		if (K->kind == LK_NAME || K->kind == LK_PART)
			prism_fput_json_str(f, v);
		else
			fputs(v, f);
	}
}

static void md_input(FILE *f, const char *what, const char *val, int i)
{
	char a[160], b[512];
	(void)i;
	shown(a, sizeof(a), what);
	shown(b, sizeof(b), val);
	fprintf(f, "- %s: %s\n", a, b);
}

static void json_input(FILE *f, const char *what, const char *val, int i)
{
	fputs(i ? "," : "", f);
	json_text(f, what);
	putc(':', f);
	json_text(f, val);
}

/* Best rows k of P ordered by GPU count, then tokens/s (fastest first). */
static const struct pareto *cmp_P;
static int cmp_best(const void *a, const void *b)
{
	const struct pareto_row *x = &cmp_P->rows[*(const size_t *)a];
	const struct pareto_row *y = &cmp_P->rows[*(const size_t *)b];
	if (x->gpus != y->gpus)
		return x->gpus < y->gpus ? -1 : 1;
	if (x->tps != y->tps)
		return x->tps > y->tps ? -1 : 1;
	return x->setting - y->setting;
}

/* Where the sweep compares settings (hardware profiles, sequence
 * lengths): at each GPU count, each setting's best by throughput and by
 * cost per token, against the count's fastest and cheapest. */
static void compare(FILE *md, const struct report *R)
{
	const struct train *t = &R->tr;
	size_t *ix;
	if (R->P.settings < 2 || !(ix = prism_malloc((R->P.nb + 1) * sizeof(*ix))))
		return;
	for (size_t k = 0; k < R->P.nb; k++)
		ix[k] = R->P.best[k];
	cmp_P = &R->P;
	qsort(ix, R->P.nb, sizeof(*ix), cmp_best);
	fprintf(md,
		"## Settings compared (hardware, sequence length)\n\n"
		"| GPUs | setting | layout | tokens/s | vs fastest | GPU-hours per 1M tokens |%s"
		"%s\n|---:|---|---|---:|---:|---:|%s%s\n",
		t->priced ? " cost per 1M tokens | vs cheapest |" : "",
		t->tokens > 0 ? " days to train |" : "", t->priced ? "---:|---:|" : "",
		t->tokens > 0 ? "---:|" : "");
	for (size_t a = 0; a < R->P.nb;) {
		size_t b = a;
		double fast = 0, cheap = 0;
		/* The count's fastest and cheapest per token. */
		for (; b < R->P.nb && R->P.rows[ix[b]].gpus == R->P.rows[ix[a]].gpus; b++) {
			const struct pareto_row *r = &R->P.rows[ix[b]];
			struct train one = *t;
			double d, h, c;
			one.tokens = 1e6;
			to_train(&one, r, &d, &h, &c);
			fast = r->tps > fast ? r->tps : fast;
			if (c > 0 && (cheap == 0 || c < cheap))
				cheap = c;
		}
		for (size_t i = a; i < b; i++) {
			const struct pareto_row *r = &R->P.rows[ix[i]];
			struct train one = *t;
			char lay[200], set[96], *colon;
			double d, h, c;
			one.tokens = 1e6;
			to_train(&one, r, &d, &h, &c);
			shown(set, sizeof(set), r->setting_name);
			layout(lay, sizeof(lay), r);
			colon = strstr(lay, ": ");
			fprintf(md, "| %d | %s | %s | %.0f | %+.1f%% | %.4g |", r->gpus, set,
				colon ? colon + 2 : lay, r->tps, (r->tps / fast - 1) * 100, h);
			if (t->priced && c > 0)
				fprintf(md, " %.4g | %+.1f%% |", c, (c / cheap - 1) * 100);
			else if (t->priced)
				fprintf(md, " | |");
			if (t->tokens > 0)
				fprintf(md, " %.2f |", t->tokens / r->tps / 86400);
			fprintf(md, "\n");
		}
		a = b;
	}
	fprintf(md, "\nEach setting's best layout at each GPU count (ranked apart: a longer "
		    "sequence is more work per step, so throughput and cost per token "
		    "compare them, not iteration time).\n");
	free(ix);
}

static const char *const fam_name[PARETO_FAM_N] = {"pipeline", "zero", "tp"};
static const char *const perturb_name[PARETO_PERTURB_N] = {"kernels_10pct_slower",
							   "overlap_20pct_less"};
static const char *const perturb_text[PARETO_PERTURB_N] = {"kernels +10 %", "overlap -20 %"};

/* A family's value for people: "no pipeline", "ZeRO 1", "tp 4". */
static void fam_value(char *buf, size_t n, const struct pareto_row *r, int f)
{
	int v = pareto_family(r, f);
	if (f == PARETO_FAM_PIPELINE)
		snprintf(buf, n, "%s", v ? "pipeline" : "no pipeline");
	else
		snprintf(buf, n, "%s %d", f == PARETO_FAM_ZERO ? "ZeRO" : "tp", v);
}

/* Best k's robustness in a word: "yes", "no (kernels +10 %)", "no
 * (both)", or "n/a" (no breakdown stored). */
static void robust_word(char *buf, size_t n, const struct pareto *P, size_t k)
{
	int flips = 0, which = 0;
	for (int p = 0; p < PARETO_PERTURB_N; p++) {
		long w = pareto_robust(P, k, p, NULL);
		if (w < 0) {
			snprintf(buf, n, "n/a");
			return;
		}
		if ((size_t)w != P->best[k]) {
			flips++;
			which = p;
		}
	}
	if (!flips)
		snprintf(buf, n, "yes");
	else
		snprintf(buf, n, "no (%s)", flips > 1 ? "both" : perturb_text[which]);
}

/* The same for best.csv: "yes", "kernels", "overlap", "both", or "" (no
 * breakdown). */
static const char *robust_csv(const struct pareto *P, size_t k)
{
	int flips = 0;
	for (int p = 0; p < PARETO_PERTURB_N; p++) {
		long w = pareto_robust(P, k, p, NULL);
		if (w < 0)
			return "";
		flips |= ((size_t)w != P->best[k]) << p;
	}
	return flips == 0 ? "yes" : flips == 1 ? "kernels" : flips == 2 ? "overlap" : "both";
}

/* Per GPU count the best of each family with two values or more there. */
static void md_families(FILE *md, const struct report *R)
{
	size_t ix[64];
	int any = 0;
	for (size_t k = 0; k < R->P.nb; k++) {
		const struct pareto_row *b = &R->P.rows[R->P.best[k]];
		for (int f = 0; f < PARETO_FAM_N; f++) {
			size_t n = pareto_family_best(&R->P, k, f, ix, 64);
			if (n < 2)
				continue;
			if (!any++)
				fprintf(md, "\n## Best of each family\n\n"
					    "| GPUs | family | layout | iteration ms | vs best |\n"
					    "|---:|---|---|---:|---:|\n");
			for (size_t j = 0; j < n; j++) {
				const struct pareto_row *r = &R->P.rows[ix[j]];
				char v[32], lay[200];
				fam_value(v, sizeof(v), r, f);
				layout(lay, sizeof(lay), r);
				fprintf(md, "| %d | %s | %s | %.3f | ", b->gpus, v, lay,
					r->iter_s * 1e3);
				if (ix[j] == R->P.best[k])
					fprintf(md, "the best |\n");
				else
					fprintf(md, "%+.1f%% |\n",
						(r->iter_s / b->iter_s - 1) * 100);
			}
		}
	}
	if (any)
		fprintf(md, "\nThe fastest layout with and without a pipeline, of each ZeRO "
			    "stage and of each tensor-parallel degree the sweep simulated at "
			    "that GPU count (families of one value left out).\n");
}

/* Per GPU count: the best's fate if the model is wrong in the usual ways. */
static void md_robust(FILE *md, const struct report *R)
{
	fprintf(md, "\n## Robustness\n\n"
		    "| GPUs | best | kernels 10 %% slower | communication overlaps 20 %% less |\n"
		    "|---:|---|---|---|\n");
	for (size_t k = 0; k < R->P.nb; k++) {
		const struct pareto_row *b = &R->P.rows[R->P.best[k]];
		char lay[200];
		layout(lay, sizeof(lay), b);
		fprintf(md, "| %d | %s |", b->gpus, lay);
		for (int p = 0; p < PARETO_PERTURB_N; p++) {
			double m = 0;
			long w = pareto_robust(&R->P, k, p, &m);
			if (w < 0)
				fprintf(md, " n/a (no breakdown stored) |");
			else if ((size_t)w == R->P.best[k] && m < 5e-4)
				fprintf(md, " stays best (tied with the next) |");
			else if ((size_t)w == R->P.best[k])
				fprintf(md, " stays best (%+.1f%% ahead) |", m * 100);
			else {
				layout(lay, sizeof(lay), &R->P.rows[w]);
				fprintf(md, " **%s** best, by %.1f%% |", lay, m * 100);
			}
		}
		fprintf(md, "\n");
	}
	fprintf(md,
		"\nEach perturbation re-times the %d fastest layouts of a GPU count from "
		"the breakdown stored with them (first order, not a re-simulation): kernels "
		"%.0f %% slower lengthens compute and the idle time waiting on it (the "
		"bubble) by %.0f %%; overlap %.0f %% less exposes that share of the "
		"communication that overlapped compute (docs/RESULTS.md, \"Robustness\").\n",
		PARETO_ROBUST_TOP, PARETO_KERNELS_SLOWER * 100, PARETO_KERNELS_SLOWER * 100,
		PARETO_OVERLAP_LESS * 100);
}

/* The status counts and the rejected reasons, each read by the Markdown
 * report and by the JSON one: one query each. */
static const char SQL_STATUS_COUNTS[] =
    "SELECT status, COUNT(*) FROM candidate WHERE sweep=?1 GROUP BY status ORDER BY status";
/* The first of each reason (its first 24 characters), most common first. */
static const char SQL_REJECTED[] =
    "SELECT status, reason, COUNT(*) FROM candidate WHERE sweep=?1 AND "
    "status IN ('invalid','oom','failed') GROUP BY status, substr(reason, 1, 24) "
    "ORDER BY COUNT(*) DESC LIMIT 12";

/* sql prepared with sweep sid bound as ?1 (NULL where it cannot be: a
 * step on NULL returns at once, as the callers' loops expect). */
static sqlite3_stmt *sweep_stmt(sqlite3 *db, long long sid, const char *sql)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return NULL;
	}
	sqlite3_bind_int64(st, 1, sid);
	return st;
}

static void write_md(FILE *md, const struct report *R, sqlite3 *db)
{
	const struct train *t = &R->tr;
	sqlite3_stmt *st = NULL;
	char lay[200], a[48], b[48], c[48];
	int at_risk = 0;

	fprintf(md, "# Sweep %s (id %lld)\n\n", R->name, R->sid);
	st = sweep_stmt(db, R->sid, SQL_STATUS_COUNTS);
	fprintf(md, "Candidates:");
	while (sqlite3_step(st) == SQLITE_ROW) {
		shown(a, sizeof(a), text(st, 0));
		fprintf(md, " %s %d;", a, sqlite3_column_int(st, 1));
	}
	sqlite3_finalize(st);
	fprintf(md, "\n\n");
	if (R->inputs[0]) {
		/* docs/RESULTS.md: a resume on other inputs is refused. */
		fprintf(md, "Computed from (content hashes; a resume on other inputs is "
			    "refused):\n\n");
		each_input(R, md_input, md);
		fprintf(md, "\n");
	} else {
		shown(a, sizeof(a), R->version[0] ? R->version : "?");
		fprintf(md, "Computed by prism %s, which did not record its inputs.\n\n", a);
	}
	if (t->tokens > 0) {
		grouped(a, sizeof(a), t->tokens);
		fprintf(md, "Training: %s tokens", a);
		if (t->price > 0)
			fprintf(md, " at %.4g per GPU-hour", t->price);
		else if (t->priced)
			fprintf(md, " at each profile's price per GPU-hour");
		fprintf(md, ".\n\n");
	}
	fprintf(md, "## Best layout per GPU count\n\n");
	fprintf(md, "| GPUs | layout | iteration ms | tokens/s | MFU | bubble | memory GB |"
		    " GPU-hours/iter |");
	if (t->tokens > 0)
		fprintf(md, " days to train | GPU-hours to train |%s",
			t->priced ? " cost to train |" : "");
	fprintf(md, " near-ties | Pareto (time) | Pareto (GPU-hours) | robust |\n");
	fprintf(md, "|---:|---|---:|---:|---:|---:|---:|---:|%s%s---:|---|---|---|\n",
		t->tokens > 0 ? "---:|---:|" : "", t->tokens > 0 && t->priced ? "---:|" : "");
	for (size_t k = 0; k < R->P.nb; k++) {
		const struct pareto_row *r = &R->P.rows[R->P.best[k]];
		layout(lay, sizeof(lay), r);
		fprintf(md, "| %d | %s | %.3f | %.0f | %.1f%% | %.1f%% | %.1f%s | %.4g |", r->gpus,
			lay, r->iter_s * 1e3, r->tps, r->mfu * 100, r->bubble * 100, r->mem_gb,
			r->at_risk ? " (at risk)" : "", r->gpuh);
		at_risk += r->at_risk;
		if (t->tokens > 0) {
			double days, gpuh, cost;
			to_train(t, r, &days, &gpuh, &cost);
			grouped(b, sizeof(b), gpuh);
			fprintf(md, " %.*f | %s |", days < 10 ? 2 : 1, days, b);
			if (t->priced) {
				grouped(c, sizeof(c), cost);
				fprintf(md, " %s |", c);
			}
		}
		robust_word(c, sizeof(c), &R->P, k);
		fprintf(md, " %d | %s | %s | %s |\n", pareto_near_ties(&R->P, k),
			R->P.on_time[k] ? "yes" : "no", R->P.on_hours[k] ? "yes" : "no", c);
	}
	if (at_risk)
		fprintf(md,
			"\nAt risk: a layout whose memory is within the memory model's "
			"uncertainty (+/-%.0f %%, docs/VALIDATION.md) of the GPU's usable memory; "
			"it may run out of memory.\n",
			MEM_UNCERTAINTY * 100);
	fprintf(md,
		"\nNear-ties: other layouts within %.1f %% of the best at their GPU count (%s%s); "
		"prism does not order them.",
		R->P.tie * 100,
		R->tie_given ? "set by --tie" : "the model's error between two layouts: ",
		R->tie_given ? "" : REPORT_TIE_SOURCE);
	if (t->tokens > 0)
		fprintf(md, " Days to train: tokens / (tokens/s); GPU-hours: days x 24 x GPUs%s.",
			t->priced ? "; cost: GPU-hours x price" : "");
	fprintf(md,
		" Robust: the best stays best if kernels run %.0f %% slower and if "
		"communication overlaps %.0f %% less (below).\n",
		PARETO_KERNELS_SLOWER * 100, PARETO_OVERLAP_LESS * 100);
	compare(md, R);
	md_families(md, R);
	md_robust(md, R);
	fprintf(md, "\n## Runners-up, and why they lose\n\n");
	fprintf(md, "| GPUs | layout | iteration ms | vs best | near-tie | why |\n"
		    "|---:|---|---:|---:|---|---|\n");
	for (size_t k = 0; k < R->P.nb; k++) {
		const struct pareto_row *bst = &R->P.rows[R->P.best[k]];
		int listed = 0, ties = 0;
		for (size_t i = R->P.best[k] + 1;
		     i < R->P.n && PARETO_SAME_COUNT(&R->P.rows[i], bst); i++) {
			const struct pareto_row *r = &R->P.rows[i];
			char w[160];
			if (r->same_as >= 0)
				continue;
			if (listed == 3) {
				ties += r->near_tie;
				continue;
			}
			layout(lay, sizeof(lay), r);
			why(w, sizeof(w), bst, r);
			fprintf(md, "| %d | %s | %.3f | %+.1f%% | %s | %s |\n", bst->gpus, lay,
				r->iter_s * 1e3, (r->iter_s / bst->iter_s - 1) * 100,
				r->near_tie ? "yes" : "no", w);
			listed++;
		}
		if (ties)
			fprintf(md, "| %d | (%d more near-ties) | | | yes | |\n", bst->gpus, ties);
	}
	if (R->P.collapsed[0] + R->P.collapsed[1] + R->P.collapsed[2] + R->P.collapsed[3])
		fprintf(md,
			"\nThe same run under another name (the same time and memory), not "
			"listed: %d differing only in ZeRO stage (dp = 1), %d only in recompute "
			"setting, %d only in schedule (no pipeline), %d in several of these "
			"(`--csv-all`: their `same_as`).\n",
			R->P.collapsed[0], R->P.collapsed[1], R->P.collapsed[2], R->P.collapsed[3]);
	fprintf(md, "\n## Rejected before simulation (first of each reason)\n\n");
	st = sweep_stmt(db, R->sid, SQL_REJECTED);
	while (sqlite3_step(st) == SQLITE_ROW)
		fprintf(md, "- %s (%d): %s\n", text(st, 0), sqlite3_column_int(st, 2), text(st, 1));
	sqlite3_finalize(st);
}

/* Row r's days, GPU-hours and cost to train as CSV cells (empty where
 * the sweep gives no tokens, or no price), each followed by a comma. */
static void csv_train(FILE *csv, const struct report *R, const struct pareto_row *r)
{
	double days, gpuh, cost;
	to_train(&R->tr, r, &days, &gpuh, &cost);
	if (R->tr.tokens > 0)
		fprintf(csv, "%.6g,%.6g,", days, gpuh);
	else
		fputs(",,", csv);
	if (R->tr.tokens > 0 && R->tr.priced)
		fprintf(csv, "%.6g,", cost);
	else
		fputs(",", csv);
}

static void write_best_csv(FILE *csv, const struct report *R)
{
	csv_knob_header(csv);
	fputs("iter_s,tokens_per_s,mfu,bubble,mem_gb,gpu_hours,days_to_train,"
	      "gpu_hours_to_train,cost_to_train,near_ties,same_runs,pareto_time,"
	      "pareto_gpu_hours,hw,price_per_gpu_hour,robust\n",
	      csv);
	for (size_t k = 0; k < R->P.nb; k++) {
		const struct pareto_row *r = &R->P.rows[R->P.best[k]];
		csv_knobs(csv, r);
		fprintf(csv, "%.9f,", r->iter_s);
		csv_pos(csv, r->tps, 3, 0);
		csv_pos(csv, r->mfu, 6, 0);
		fprintf(csv, "%.6f,", r->bubble);
		csv_pos(csv, r->mem_gb, 3, 0);
		csv_pos(csv, r->gpuh, 9, 1);
		csv_train(csv, R, r);
		fprintf(csv, "%d,%d,%d,%d,", pareto_near_ties(&R->P, k), r->n_same, R->P.on_time[k],
			R->P.on_hours[k]);
		prism_fput_csv_str(csv, r->hw);
		if (r->price > 0)
			fprintf(csv, ",%.9g,", r->price);
		else
			fputs(",,", csv);
		fprintf(csv, "%s\n", robust_csv(&R->P, k));
	}
}

static int cmp_key(const void *a, const void *b)
{
	const struct pareto_row *const *x = a, *const *y = b;
	return strcmp((*x)->key, (*y)->key);
}

/* Every candidate of the sweep, simulated or not, with the judgement of
 * the simulated ones (same_as: the key of the run it is another name of). */
static int write_all_csv(FILE *csv, const struct report *R, sqlite3 *db)
{
	static const char *const cols[] = {
	    "status",	      "reason",	   "analytic_s", "bound_s", "iter_s", "bubble",
	    "tokens_per_s",   "mfu",	   "gpu_hours",	 "mem_gb",  "fits",   "exposed_compute_s",
	    "exposed_comm_s", "overlap_s", "idle_s"};
	const struct pareto_row **by_key = prism_malloc((R->P.n + 1) * sizeof(*by_key));
	sqlite3_stmt *st = NULL;
	char sql[2048];
	int rc = 0;

	if (!by_key)
		return -1;
	for (size_t i = 0; i < R->P.n; i++)
		by_key[i] = &R->P.rows[i];
	qsort(by_key, R->P.n, sizeof(*by_key), cmp_key);
	fputs("key,", csv);
	csv_knob_header(csv);
	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
		fprintf(csv, "%s,", cols[i]);
	fputs("days_to_train,gpu_hours_to_train,cost_to_train,near_tie,same_as\n", csv);
	if (pareto_select(db, sql, sizeof(sql),
			  "status, reason, analytic_s, bound_s, iter_s, bubble, tokens_per_s,"
			  " mfu, gpu_hours, mem_gb, fits, exposed_compute_s, exposed_comm_s,"
			  " overlap_s, idle_s FROM candidate WHERE sweep=?1 ORDER BY gpus, key") ||
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		free(by_key);
		return -1;
	}
	sqlite3_bind_int64(st, 1, R->sid);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int nc = sqlite3_column_count(st);
		struct pareto_row probe, *pp = &probe;
		const struct pareto_row *const *hit;
		for (int i = 0; i < nc; i++) {
			prism_fput_csv_str(csv, text(st, i));
			putc(',', csv);
		}
		snprintf(probe.key, sizeof(probe.key), "%s", text(st, 0));
		hit = R->P.n && strcmp(text(st, 2 + pareto_knobs()), "simulated") == 0
			  ? bsearch(&pp, by_key, R->P.n, sizeof(*by_key), cmp_key)
			  : NULL;
		if (hit) {
			const struct pareto_row *r = *hit;
			csv_train(csv, R, r);
			fprintf(csv, "%d,", r->near_tie);
			if (r->same_as >= 0)
				prism_fput_csv_str(csv, R->P.rows[r->same_as].key);
			putc('\n', csv);
		} else {
			fputs(",,,,\n", csv);
		}
	}
	sqlite3_finalize(st);
	free(by_key);
	return rc == SQLITE_DONE ? 0 : -1;
}

static void json_row(FILE *f, const struct report *R, const struct pareto_row *r)
{
	double days, gpuh, cost;
	to_train(&R->tr, r, &days, &gpuh, &cost);
	fputs("{\"layout\":{", f);
	json_knobs(f, r);
	fputs("},\"key\":", f);
	json_text(f, r->key);
	fputs(",\"iter_s\":", f);
	json_num(f, r->iter_s);
	fputs(",\"tokens_per_s\":", f);
	json_pos(f, r->tps);
	fputs(",\"mfu\":", f);
	json_pos(f, r->mfu);
	fputs(",\"bubble\":", f);
	json_num(f, r->bubble);
	fputs(",\"mem_gb\":", f);
	json_pos(f, r->mem_gb);
	fprintf(f, ",\"mem_at_risk\":%s", r->at_risk ? "true" : "false");
	fputs(",\"gpu_hours_per_iter\":", f);
	json_pos(f, r->gpuh);
	if (R->tr.tokens > 0) {
		fputs(",\"days_to_train\":", f);
		json_num(f, days);
		fputs(",\"gpu_hours_to_train\":", f);
		json_num(f, gpuh);
		if (R->tr.priced) {
			fputs(",\"cost_to_train\":", f);
			json_num(f, cost);
		}
	}
	fprintf(f, ",\"same_runs\":%d", r->n_same);
	/* Its profile and price (null where the database does not say). */
	fputs(",\"hw\":", f);
	if (r->hw[0])
		json_text(f, r->hw);
	else
		fputs("null", f);
	fputs(",\"price_per_gpu_hour\":", f);
	if (r->price > 0)
		json_num(f, r->price);
	else
		fputs("null", f);
}

/* Best k's families and robustness, as ',"families":[...],"robust":{...}'. */
static void json_decide(FILE *f, const struct report *R, size_t k)
{
	const struct pareto_row *b = &R->P.rows[R->P.best[k]];
	size_t ix[64];
	const char *sep = "";
	fputs(",\"families\":[", f);
	for (int fam = 0; fam < PARETO_FAM_N; fam++) {
		size_t n = pareto_family_best(&R->P, k, fam, ix, 64);
		for (size_t j = 0; j < n; j++) {
			const struct pareto_row *r = &R->P.rows[ix[j]];
			fprintf(f, "%s{\"family\":\"%s\",\"value\":%d,\"key\":", sep, fam_name[fam],
				pareto_family(r, fam));
			json_text(f, r->key);
			fputs(",\"iter_s\":", f);
			json_num(f, r->iter_s);
			fputs(",\"vs_best\":", f);
			json_num(f, r->iter_s / b->iter_s - 1);
			fputs("}", f);
			sep = ",";
		}
	}
	fputs("],\"robust\":{", f);
	for (int p = 0; p < PARETO_PERTURB_N; p++) {
		double m = 0;
		long w = pareto_robust(&R->P, k, p, &m);
		fprintf(f, "%s\"%s\":", p ? "," : "", perturb_name[p]);
		if (w < 0) {
			fputs("null", f);
			continue;
		}
		fprintf(
		    f, "{\"stays\":%s,\"best_key\":", (size_t)w == R->P.best[k] ? "true" : "false");
		json_text(f, R->P.rows[w].key);
		fputs(",\"best_iter_s\":", f);
		json_num(f, pareto_perturbed(&R->P.rows[w], p));
		fputs(",\"margin\":", f);
		json_num(f, m);
		fputs("}", f);
	}
	fputs("}", f);
}

static void write_json(FILE *f, const struct report *R, sqlite3 *db, const char *dir,
		       const char *all, int drawn)
{
	sqlite3_stmt *st = NULL;
	const char *sep = "";

	fprintf(f, "{\"sweep\":{\"id\":%lld,\"name\":", R->sid);
	json_text(f, R->name);
	fputs(",\"database\":", f);
	json_text(f, R->db);
	fputs(",\"version\":", f);
	json_text(f, R->version);
	fputs(",\"inputs\":", f);
	if (R->inputs[0]) {
		putc('{', f);
		each_input(R, json_input, f);
		putc('}', f);
	} else {
		fputs("null", f);
	}
	fputs("},\"tokens\":", f);
	if (R->tr.tokens > 0)
		json_num(f, R->tr.tokens);
	else
		fputs("null", f);
	fputs(",\"price_per_gpu_hour\":", f);
	if (R->tr.price > 0)
		json_num(f, R->tr.price);
	else
		fputs("null", f);
	fputs(",\"near_tie\":{\"fraction\":", f);
	json_num(f, R->P.tie);
	fputs(",\"source\":", f);
	prism_fput_json_str(f, !R->tie_given ? REPORT_TIE_SOURCE : "--tie");
	fputs("},\"candidates\":{", f);
	st = sweep_stmt(db, R->sid, SQL_STATUS_COUNTS);
	while (sqlite3_step(st) == SQLITE_ROW) {
		fputs(sep, f);
		json_text(f, text(st, 0));
		fprintf(f, ":%d", sqlite3_column_int(st, 1));
		sep = ",";
	}
	sqlite3_finalize(st);
	fprintf(f, "},\"same_run\":{\"zero\":%d,\"recompute\":%d,\"schedule\":%d,\"several\":%d}",
		R->P.collapsed[0], R->P.collapsed[1], R->P.collapsed[2], R->P.collapsed[3]);
	fputs(",\"best\":[", f);
	for (size_t k = 0; k < R->P.nb; k++) {
		const struct pareto_row *r = &R->P.rows[R->P.best[k]];
		fprintf(f, "%s\n{\"gpus\":%d,", k ? "," : "", r->gpus);
		fputs("\"best\":", f);
		json_row(f, R, r);
		fprintf(f, "},\"near_ties\":%d,\"pareto_time\":%s,\"pareto_gpu_hours\":%s",
			pareto_near_ties(&R->P, k), R->P.on_time[k] ? "true" : "false",
			R->P.on_hours[k] ? "true" : "false");
		fputs(",\"runners_up\":[", f);
		sep = "";
		for (size_t i = R->P.best[k] + 1, listed = 0;
		     i < R->P.n && PARETO_SAME_COUNT(&R->P.rows[i], r) && listed < 3; i++) {
			const struct pareto_row *u = &R->P.rows[i];
			char w[160];
			if (u->same_as >= 0)
				continue;
			why(w, sizeof(w), r, u);
			fputs(sep, f);
			json_row(f, R, u);
			fputs(",\"vs_best\":", f);
			json_num(f, u->iter_s / r->iter_s - 1);
			fprintf(f, ",\"near_tie\":%s,\"why\":", u->near_tie ? "true" : "false");
			prism_fput_json_str(f, w);
			fputs("}", f);
			sep = ",";
			listed++;
		}
		fputs("]", f);
		json_decide(f, R, k);
		fputs("}", f);
	}
	fputs("],\"rejected\":[", f);
	st = sweep_stmt(db, R->sid, SQL_REJECTED);
	sep = "";
	while (sqlite3_step(st) == SQLITE_ROW) {
		fprintf(f, "%s\n{\"status\":", sep);
		json_text(f, text(st, 0));
		fprintf(f, ",\"count\":%d,\"reason\":", sqlite3_column_int(st, 2));
		json_text(f, text(st, 1));
		fputs("}", f);
		sep = ",";
	}
	sqlite3_finalize(st);
	fputs("],\"files\":{\"report\":", f);
	{
		char p[1200];
		snprintf(p, sizeof(p), "%s/report.md", dir);
		json_text(f, p);
		snprintf(p, sizeof(p), "%s/best.csv", dir);
		fputs(",\"best_csv\":", f);
		json_text(f, p);
		fputs(",\"chart\":", f);
		snprintf(p, sizeof(p), "%s/pareto.svg", dir);
		if (drawn)
			json_text(f, p);
		else
			fputs("null", f);
		fputs(",\"all_csv\":", f);
		if (all)
			json_text(f, all);
		else
			fputs("null", f);
	}
	fputs("}}\n", f);
}

/* Days to train per millisecond of iteration, where the chart can put days
 * beside its time axis: tokens given and every best row training the same
 * tokens per iteration (one global batch and sequence length: then days are
 * proportional to iteration time); 0 otherwise. */
static double days_per_ms(const struct report *R)
{
	double per = 0;
	for (size_t k = 0; k < R->P.nb; k++) {
		const struct pareto_row *r = &R->P.rows[R->P.best[k]];
		double tok = r->tps * r->iter_s; /* tokens an iteration */
		if (!(R->tr.tokens > 0 && tok > 0 && isfinite(tok)))
			return 0;
		if (k && fabs(tok / per - 1) > 1e-6)
			return 0;
		per = tok;
	}
	return per > 0 ? R->tr.tokens / per * 1e-3 / 86400 : 0;
}

/*
 * The chart at svg (DIR/pareto.svg), drawn by gnuplot's SVG terminal from
 * the best row of each GPU count.  gnuplot writes to its standard output,
 * a new file prism created (prism_wfile_replace: O_EXCL, renamed over svg
 * once gnuplot succeeded), so it opens no file by name: a link planted in
 * a shared folder sends the chart nowhere else.  Its program names no
 * path; the data goes inline (a datablock: no file to leave behind), and
 * the only text in the program from outside is the title and the points'
 * labels, each passed through shown() (the labels are made of numbers and
 * canonical names before that): gnuplot's `system`, `!` and backquotes run
 * shell commands, so nothing from the database is ever pasted in raw.
 * 0, or -1 when gnuplot is missing or fails (svg is then left as it was).
 */
static int chart(const char *svg, const struct report *R)
{
	struct sigaction ign, old;
	struct prism_wfile out;
	const char *y2;
	int fd[2], st = 0, wrote;
	pid_t pid;
	FILE *gp;

	if (R->tr.tokens > 0 && R->tr.priced)
		y2 = "cost to train (GPU-hours x price)";
	else if (R->tr.tokens > 0)
		y2 = "GPU-hours to train";
	else
		y2 = "GPU-hours per 1000 iterations";
	if (prism_wfile_replace(&out, svg))
		return -1;
	if (pipe(fd)) {
		prism_wfile_abort(&out);
		return -1;
	}
	if ((pid = fork()) < 0) {
		close(fd[0]);
		close(fd[1]);
		prism_wfile_abort(&out);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(fd[0], 0);
		close(fd[0]);
		close(fd[1]);
		dup2(fileno(out.f), 1);
		if (null >= 0)
			dup2(null, 2);
		execlp("gnuplot", "gnuplot", (char *)NULL);
		_exit(127);
	}
	close(fd[0]);
	/* A gnuplot that is missing or dies early must not kill us by SIGPIPE. */
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ign, &old);
	if ((gp = fdopen(fd[1], "w"))) {
		wrote =
		    fprintf(gp,
			    "set terminal svg size 800,500 dynamic background rgb 'white'\n"
			    "set title 'Sweep %s: best iteration time per GPU count' noenhanced\n"
			    "set xlabel 'GPUs'\nset ylabel 'iteration time (ms, log scale)'\n"
			    "set y2label '%s'\nset logscale x 2\nset logscale y 10\n"
			    "set format y '%%g'\nset format y2 '%%.1s%%c'\nset y2tics\n"
			    "set y2range [0:*]\n"
			    "set ytics nomirror\nset key below horizontal\nset grid\n"
			    "$best << EOD\n",
			    R->name, y2) > 0;
		for (size_t k = 0; wrote && k < R->P.nb; k++) {
			const struct pareto_row *r = &R->P.rows[R->P.best[k]];
			double days, gpuh, cost, y2v;
			to_train(&R->tr, r, &days, &gpuh, &cost);
			y2v = R->tr.tokens > 0 ? (R->tr.priced ? cost : gpuh) : r->gpuh * 1000;
			/* Each setting its own data set (gnuplot's index). */
			if (k && r->setting != R->P.rows[R->P.best[k - 1]].setting)
				wrote = fputs("\n\n", gp) >= 0;
			wrote = wrote && fprintf(gp, "%d %.6g %.6g %d\n", r->gpus, r->iter_s * 1e3,
						 isfinite(y2v) ? y2v : 0, R->P.on_time[k]) > 0;
		}
		wrote = wrote && fputs("EOD\n", gp) >= 0;
		/* Room for the labels: to the right of the last count, above
		 * the slowest point. */
		if (wrote && R->P.nb) {
			double lo = R->P.rows[R->P.best[0]].iter_s, hi = lo;
			int g0 = R->P.rows[R->P.best[0]].gpus, g1 = g0;
			for (size_t k = 1; k < R->P.nb; k++) {
				double t = R->P.rows[R->P.best[k]].iter_s;
				int g = R->P.rows[R->P.best[k]].gpus;
				lo = t < lo ? t : lo;
				hi = t > hi ? t : hi;
				g0 = g < g0 ? g : g0;
				g1 = g > g1 ? g : g1;
			}
			if (lo > 0 && isfinite(hi))
				wrote =
				    fprintf(gp, "set xrange [%.6g:%.6g]\nset yrange [%.6g:%.6g]\n",
					    g0 / 1.5, g1 * 2.5, lo * 1e3 / 2, hi * 1e3 * 4) > 0;
			/* Ticks at the GPU counts swept, and at 1, 2, 5 x 10^k ms. */
			for (size_t k = 0; wrote && k < R->P.nb; k++)
				wrote = fprintf(gp, "%s%d", k ? ", " : "set xtics (",
						R->P.rows[R->P.best[k]].gpus) > 0;
			wrote = wrote && fputs(")\n", gp) >= 0;
			if (wrote && lo > 0 && isfinite(hi)) {
				const char *sep = "set ytics (";
				double dpm = days_per_ms(R);
				if (dpm > 0)
					wrote = fputs("set ylabel 'iteration time, ms (days to "
						      "train), log scale'\n",
						      gp) >= 0;
				for (double d = pow(10, floor(log10(lo * 1e3 / 2)));
				     d <= hi * 1e3 * 4; d *= 10)
					for (int m = 1; m <= 5 && wrote; m += m == 1 ? 1 : 3) {
						if (d * m >= lo * 1e3 / 2 &&
						    d * m <= hi * 1e3 * 4) {
							wrote =
							    dpm > 0
								? fprintf(gp,
									  "%s'%g (%.3g d)' %.6g",
									  sep, d * m, d * m * dpm,
									  d * m) > 0
								: fprintf(gp, "%s%.6g", sep,
									  d * m) > 0;
							sep = ", ";
						}
					}
				wrote = wrote && fputs(")\n", gp) >= 0;
			}
		}
		/* The layouts' labels: with one setting (several would crowd). */
		for (size_t k = 0; wrote && R->P.settings < 2 && k < R->P.nb; k++) {
			const struct pareto_row *r = &R->P.rows[R->P.best[k]];
			char lab[96], safe[96];
			label(lab, sizeof(lab), r);
			shown(safe, sizeof(safe), lab);
			wrote =
			    fprintf(gp,
				    "set label %zu '%s' at %d, %.6g rotate by 20 offset 0.6, 0.6 "
				    "font ',9' noenhanced\n",
				    k + 1, safe, r->gpus, r->iter_s * 1e3) > 0;
		}
		/* Several settings: each its time and its y2 series. */
		for (int i = 0, k = 0; wrote && R->P.settings > 1 && i < R->P.settings; i++) {
			char set[96];
			while (R->P.rows[R->P.best[k]].setting != i)
				k++;
			shown(set, sizeof(set), R->P.rows[R->P.best[k]].setting_name);
			wrote =
			    fprintf(gp,
				    "%s$best index %d using 1:2 with linespoints lw 2 pt 7 lc %d "
				    "title '%s', $best index %d using 1:3 axes x1y2 with "
				    "linespoints dt 2 pt 5 lc %d title '%s: %s'",
				    i ? ", " : "plot ", i, i + 1, set, i, i + 1, set, y2) > 0;
			wrote = wrote && (i + 1 < R->P.settings || fputs("\n", gp) >= 0);
		}
		wrote =
		    wrote &&
		    (R->P.settings > 1 ||
		     (fputs(
			  "plot $best using 1:2 with linespoints lw 2 pt 7 "
			  "title 'iteration time (best layout)', "
			  "$best using 1:($4 > 0 ? $2 : 1/0) with points pt 6 ps 2 lc rgb 'black' "
			  "title 'Pareto front (time)', "
			  "$best using 1:3 axes x1y2 with linespoints dt 2 pt 5 title '",
			  gp) >= 0 &&
		      fprintf(gp, "%s'\n", y2) > 0));
		wrote = fclose(gp) == 0 && wrote;
	} else {
		close(fd[1]);
		wrote = 0;
	}
	sigaction(SIGPIPE, &old, NULL);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			prism_wfile_abort(&out);
			return -1;
		}
	/* The chart, whole or not at all: a failed gnuplot keeps the old one. */
	if (wrote && WIFEXITED(st) && WEXITSTATUS(st) == 0 && prism_wfile_commit(&out) == 0)
		return 0;
	prism_wfile_abort(&out);
	return -1;
}

/* A positive number for option opt into *v: 0, or an error said. */
static int positive(const char *arg, const char *opt, double lo, double hi, double *v)
{
	char *end;
	errno = 0;
	*v = strtod(arg, &end);
	if (end == arg || *end || errno || !(*v >= lo && *v <= hi)) {
		fprintf(stderr, "prism report: --%s '%s': expected a number in %g..%g\n", opt, arg,
			lo, hi);
		return -1;
	}
	return 0;
}

/* Open the results database db_arg (R->db) read-only and find sweep sid
 * (the latest where sid < 0): R's id, shown name and what training it
 * takes (tokens, price: the options' where given, >= 0), its name as
 * stored into name.  0, or the exit status after saying why. */
static int open_sweep(struct report *R, sqlite3 **dbp, long long sid, double tokens, double price,
		      char *name, size_t n)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	struct prism_err err;

	*dbp = NULL;
	prism_err_clear(&err);
	if (store_open_read(R->db, &db, &err))
		return cli_fail(&err);
	/* The tokens and price columns came with version 3: an older database
	 * (opened read-only, so not upgraded) has neither. */
	if (sqlite3_prepare_v2(db,
			       sid >= 0 ? "SELECT id, name, tokens, price_per_gpu_hour FROM sweep "
					  "WHERE id=?1"
					: "SELECT id, name, tokens, price_per_gpu_hour FROM sweep "
					  "ORDER BY id DESC LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK &&
	    sqlite3_prepare_v2(db,
			       sid >= 0 ? "SELECT id, name, NULL, NULL FROM sweep WHERE id=?1"
					: "SELECT id, name, NULL, NULL FROM sweep ORDER BY id DESC "
					  "LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "prism: %s: not a prism results database (%s)\n", R->db,
			sqlite3_errmsg(db));
		sqlite3_close(db);
		return EXIT_USAGE;
	}
	if (sid >= 0)
		sqlite3_bind_int64(st, 1, sid);
	if (sqlite3_step(st) != SQLITE_ROW) {
		fprintf(stderr, "prism: %s: no sweep%s\n", R->db, sid >= 0 ? " with that id" : "");
		sqlite3_finalize(st);
		sqlite3_close(db);
		return EXIT_USAGE;
	}
	R->sid = sqlite3_column_int64(st, 0);
	snprintf(name, n, "%s", text(st, 1));
	R->tr.tokens = tokens >= 0 ? tokens : sqlite3_column_double(st, 2);
	R->tr.price = price >= 0 ? price : sqlite3_column_double(st, 3);
	R->tr.price_given = price >= 0;
	/* A database made by hand may hold anything: only sane values count. */
	if (!(R->tr.tokens >= 1 && R->tr.tokens <= 1e16))
		R->tr.tokens = 0;
	if (!(R->tr.price > 0 && R->tr.price <= 1e6))
		R->tr.price = 0;
	sqlite3_finalize(st);
	shown(R->name, sizeof(R->name), name);
	read_inputs(R, db);
	/* Its rows: as many, and numbers such as, prism writes. */
	if (store_rows_check(db, R->db, R->sid, &err)) {
		sqlite3_close(db);
		return cli_fail(&err);
	}
	*dbp = db;
	return 0;
}

/* Where report writes: the folder, its files, the --csv-all file. */
enum { OUT_MD, OUT_BEST, OUT_ALL, OUT_SVG, OUT_N };
#define REPORT_DIR  1024	      /* a folder's path, its '\0' included */
#define REPORT_PATH (REPORT_DIR + 64) /* a path in it, or --csv-all's */

/*
 * The output folder (outdir, or results/NAME) into dir (n bytes), made,
 * and path[OUT_*] its files' paths (path[OUT_ALL] "" unless all, the
 * --csv-all file, "" for DIR/all.csv); report.md, best.csv and where asked
 * the --csv-all file opened whole-or-not (wf[OUT_MD..OUT_ALL]).  The
 * folder's own files are always new files renamed over their names
 * (prism_wfile_replace: a link planted there is replaced, not followed); a
 * --csv-all FILE the user named may be a device (/dev/stdout).  None over
 * the database; a path that does not fit is refused, never cut.  0, or
 * the exit status after saying why.
 */
static int open_outputs(const struct report *R, const char *outdir, const char *name, char *dir,
			size_t n, const char *all, char path[OUT_N][REPORT_PATH],
			struct prism_wfile *wf)
{
	static const char *const outs[OUT_N] = {"report.md", "best.csv", "all.csv", "pareto.svg"};
	struct prism_err err;

	prism_err_clear(&err);
	if (outdir) {
		if ((size_t)snprintf(dir, n, "%s", outdir) >= n) {
			cli_path_long("-o", outdir, n - 1, &err);
			return cli_fail(&err);
		}
	} else if (sweep_name_ok(name)) {
		snprintf(dir, n, "results/%s", name);
		mkdir("results", 0777);
	} else {
		/* A name prism search refuses: the database was made by hand,
		 * and "../../x" must not write outside results/. */
		fprintf(stderr,
			"prism: %s: sweep %lld is named '%s', which is not one file name: give "
			"-o DIR\n",
			R->db, R->sid, R->name);
		return EXIT_USAGE;
	}
	if (all && (size_t)snprintf(path[OUT_ALL], REPORT_PATH, "%s", all) >= REPORT_PATH) {
		cli_path_long("--csv-all", all, REPORT_PATH - 1, &err);
		return cli_fail(&err);
	}
	for (int i = 0; i < OUT_N; i++) {
		if (i == OUT_ALL && !all)
			path[i][0] = '\0';
		else if (i != OUT_ALL || !all[0])
			snprintf(path[i], REPORT_PATH, "%s/%s", dir, outs[i]);
		/* Never over the database itself. */
		if (path[i][0] && prism_same_file(path[i], R->db)) {
			fprintf(stderr, "prism: %s would overwrite the input %s: give another %s\n",
				path[i], R->db,
				i == OUT_ALL && all[0] ? "file (--csv-all)" : "folder (-o)");
			return EXIT_USAGE;
		}
	}
	if (mkdir(dir, 0777) && errno != EEXIST) {
		fprintf(stderr, "prism: %s: %s\n", dir, strerror(errno));
		return EXIT_USAGE;
	}
	for (int i = OUT_MD; i <= OUT_ALL; i++) {
		if (!path[i][0])
			continue;
		if (i == OUT_ALL && all[0] ? prism_wfile_open(&wf[i], path[i])
					   : prism_wfile_replace(&wf[i], path[i])) {
			fprintf(stderr, "prism: %s: %s\n", path[i], strerror(errno));
			return EXIT_USAGE;
		}
	}
	return 0;
}

/* The sweep's model (its 'model' column, loaded as the sweep did) into
 * *m, for the export's model options; the model zeroed, its name kept,
 * where it cannot be loaded (a trace's base): the knobs alone. */
static void sweep_model(sqlite3 *db, long long sid, struct llm *m)
{
	sqlite3_stmt *st = NULL;
	memset(m, 0, sizeof(*m));
	if (sqlite3_prepare_v2(db, "SELECT model FROM sweep WHERE id=?1", -1, &st, NULL) ==
	    SQLITE_OK) {
		sqlite3_bind_int64(st, 1, sid);
		if (sqlite3_step(st) == SQLITE_ROW) {
			char path[1024];
			struct frame_extra x;
			struct prism_err e;
			const char *name = text(st, 0);
			prism_err_clear(&e);
			if (!name[0] || cli_find_config("models", name, path, sizeof(path), NULL) ||
			    frame_load_model(path, m, &x, &e)) {
				memset(m, 0, sizeof(*m));
				snprintf(m->name, sizeof(m->name), "%.63s", name);
			}
		}
	}
	sqlite3_finalize(st);
}

/* The best layout of each GPU count (or of gpus alone) as framework fw's
 * launch options, to f.  0, or EXIT_USAGE when no GPU count matches. */
static int write_export(FILE *f, const struct report *R, sqlite3 *db, int fw, int gpus)
{
	struct llm base;
	int n = 0;
	sweep_model(db, R->sid, &base);
	for (size_t i = 0; i < R->P.nb; i++) {
		const struct pareto_row *r = &R->P.rows[R->P.best[i]];
		struct llm m = base;
		struct layout l;
		struct prism_err e;
		if (gpus && r->gpus != gpus)
			continue;
		layout_default(&l);
		prism_err_clear(&e);
		for (int k = 0; k < LK_N; k++) {
			if (!pareto_knob(k) || r->v[k] < 0)
				continue;
			if (layout_knobs[k].kind == LK_PART) {
				if (layout_partition_parse(r->partition, &l, &e)) {
					/* not one prism writes: even stages */
					l.partition = LAYOUT_PART_GIVEN;
					memset(l.part, 0, sizeof(l.part));
				}
				continue;
			}
			layout_set(&m, &l, k, r->v[k]);
		}
		{
			/* The setting, where the sweep compares several. */
			char set[112] = "";
			if (r->setting_name[0]) {
				set[0] = ' ';
				set[1] = '(';
				shown(set + 2, sizeof(set) - 3, r->setting_name);
				strcat(set, ")");
			}
			fprintf(f,
				"%s# prism report: the best layout of %s%s at %d GPUs, %.4g s an "
				"iteration\n",
				n ? "\n" : "", R->name, set, r->gpus, r->iter_s);
		}
		if (frame_export(f, fw, &m, &l)) {
			fprintf(stderr, "prism: out of memory\n");
			return 1;
		}
		n++;
	}
	if (!n) {
		fprintf(stderr, "prism report: %s: no simulated layout at %d GPUs\n", R->db, gpus);
		return EXIT_USAGE;
	}
	return 0;
}

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"sweep", required_argument, NULL, 's'},
	    {"output", required_argument, NULL, 'o'},
	    {"json", no_argument, NULL, 'j'},
	    {"csv-all", optional_argument, NULL, 'a'},
	    {"tokens", required_argument, NULL, 'T'},
	    {"price", required_argument, NULL, 'P'},
	    {"tie", required_argument, NULL, 't'},
	    {"export", required_argument, NULL, 'x'},
	    {"gpus", required_argument, NULL, 'g'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	sqlite3 *db = NULL;
	long long sid = -1;
	const char *outdir = NULL, *all_arg = NULL;
	char name[128] = "", dir[REPORT_DIR], path[OUT_N][REPORT_PATH];
	struct report R;
	/* report.md, best.csv and all.csv: each whole or not at all. */
	struct prism_wfile wf[OUT_ALL + 1] = {{0}};
	char *mdbuf = NULL;
	size_t mdlen = 0;
	FILE *mem = NULL;
	double tokens = -1, price = -1, tie = REPORT_TIE_PCT / 100;
	struct cli_parse args;
	struct prism_err err;
	int c, rc = 0, drawn, json = 0, want_all = 0, tie_given = 0, fw = -1, gpus = 0;

	memset(&R, 0, sizeof(R));
	prism_err_clear(&err);
	/* One DB after the options, said without the help below. */
	cli_parse_init(&args, "report", help, "o:h", longopts, NULL, NULL, NULL);
	while ((c = cli_next_option(&args, argc, argv, &err)) >= 0) {
		switch (c) {
		case 's': {
			/* A sweep id (1.. as SQLite numbers them): "abc", "-3" and
			 * "2x" are refused, not read as 0 or 2. */
			struct prism_err e;
			int id;
			prism_err_clear(&e);
			if (cli_count(optarg, "sweep", 1, INT32_MAX, &id, &e))
				return cli_fail(&e);
			sid = id;
			break;
		}
		case 'o':
			outdir = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'a':
			want_all = 1;
			all_arg = optarg;
			break;
		case 'T':
			if (positive(optarg, "tokens", 1, 1e16, &tokens))
				return EXIT_USAGE;
			break;
		case 'P':
			if (positive(optarg, "price", 0, 1e6, &price))
				return EXIT_USAGE;
			break;
		case 't':
			if (positive(optarg, "tie", 0, 100, &tie))
				return EXIT_USAGE;
			tie /= 100;
			tie_given = 1;
			break;
		case 'x':
			if ((fw = frame_parse(optarg)) < 0) {
				fprintf(stderr,
					"prism report: --export '%s': expected megatron, bridge or "
					"torchtitan\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'g': {
			struct prism_err e;
			prism_err_clear(&e);
			if (cli_count(optarg, "gpus", 1, LAYOUT_MAX_GPUS, &gpus, &e))
				return cli_fail(&e);
			break;
		}
		}
	}
	if (c == CLI_PARSE_EXIT)
		return args.status;
	if (optind != argc - 1) {
		fprintf(stderr, "prism report: give one DB (prism report --help)\n");
		return EXIT_USAGE;
	}
	/* "-": standard output, for a file, not the folder. */
	if ((json && fw >= 0) || (gpus && fw < 0) || cli_is_stdout(outdir)) {
		fprintf(stderr, "prism report: %s\n",
			cli_is_stdout(outdir)
			    ? "-o - : the report is a folder (report.md, best.csv, pareto.svg); "
			      "--json prints it on standard output"
			: gpus && fw < 0 ? "--gpus goes with --export"
					 : "--export writes text: not with --json");
		return EXIT_USAGE;
	}
	if (cli_stdout_shared(all_arg, "--csv-all=", json ? "--json" : fw >= 0 ? "--export" : NULL))
		return EXIT_USAGE;
	R.db = argv[optind];
	R.tie_given = tie_given;
	if ((rc = open_sweep(&R, &db, sid, tokens, price, name, sizeof(name))))
		return rc;
	if ((rc = pareto_read(db, R.sid, &R.P)) > 0) {
		struct prism_err e;
		prism_err_clear(&e);
		dbfile_fail(db, rc, R.db, NULL, &e);
		rc = cli_fail(&e);
		goto out;
	}
	R.tr.priced = R.tr.price > 0;
	for (size_t i = 0; !R.tr.price_given && i < R.P.n; i++)
		R.tr.priced |= R.P.rows[i].price > 0;
	if (rc || pareto_rank(&R.P, tie)) {
		fprintf(stderr, "prism: out of memory\n");
		rc = 1;
		goto out;
	}
	if ((rc = open_outputs(&R, outdir, name, dir, sizeof(dir),
			       want_all ? (all_arg ? all_arg : "") : NULL, path, wf)))
		goto out;
	/* report.md in memory first: written to its file and printed. */
	if (!(mem = open_memstream(&mdbuf, &mdlen))) {
		fprintf(stderr, "prism: out of memory\n");
		rc = 1;
		goto out;
	}
	write_md(mem, &R, db);
	if (fclose(mem) != 0) {
		mem = NULL;
		fprintf(stderr, "prism: out of memory\n");
		rc = 1;
		goto out;
	}
	mem = NULL;
	fwrite(mdbuf, 1, mdlen, wf[OUT_MD].f);
	write_best_csv(wf[OUT_BEST].f, &R);
	if (want_all && write_all_csv(wf[OUT_ALL].f, &R, db)) {
		fprintf(stderr, "prism: %s: cannot read the candidates (%s)\n", argv[optind],
			sqlite3_errmsg(db));
		rc = EXIT_USAGE;
		goto out;
	}
	for (int i = 0; i <= OUT_ALL; i++)
		if (wf[i].f && prism_wfile_commit(&wf[i])) {
			fprintf(stderr, "prism: %s: write failed: %s\n", wf[i].path,
				strerror(errno));
			rc = EXIT_USAGE;
			goto out;
		}
	drawn = chart(path[OUT_SVG], &R) == 0;
	if (fw >= 0) {
		if ((rc = write_export(stdout, &R, db, fw, gpus)))
			goto out;
	} else if (json)
		write_json(stdout, &R, db, dir, want_all ? path[OUT_ALL] : NULL, drawn);
	else if (!cli_is_stdout(all_arg)) /* standard output holds the CSV */
		fwrite(mdbuf, 1, mdlen, stdout);
	fflush(stdout);
	if (!drawn)
		fprintf(stderr, "prism report: gnuplot failed; no chart (install gnuplot-nox)\n");
	fprintf(stderr, "prism report: wrote %s/report.md, best.csv%s%s%s\n", dir,
		drawn ? ", pareto.svg" : "", want_all ? ", " : "", want_all ? path[OUT_ALL] : "");
out:
	for (int i = 0; i <= OUT_ALL; i++)
		prism_wfile_abort(&wf[i]);
	if (mem)
		fclose(mem);
	free(mdbuf);
	pareto_release(&R.P);
	sqlite3_close(db);
	return rc;
}
