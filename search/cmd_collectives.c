/* cmd_collectives.c - `prism collectives`: the communication model against
 * measured collectives, and fitting the profiles' collective parameters on
 * them (cbench.h, comm.h). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbench.h"
#include "cli.h"
#include "comm.h"
#include "graph.h"
#include "hw.h"
#include "kbench.h"

static const char help[] =
    "usage: prism collectives [options] FILE|DIR...\n"
    "\n"
    "Predict every collective of measurement files (../shared/kernels/\n"
    "collectives.csv and collectives_xla_table.csv; a directory means its\n"
    "collectives*.csv) with the communication model (ring, hierarchical,\n"
    "tree and NVLink SHARP algorithms over the node and the network, the\n"
    "fastest unless the row forced one) and the hardware profiles' bus\n"
    "efficiencies and latencies, and print per GPU, source and collective the\n"
    "rows and the mean, median and worst |predicted - measured| / measured;\n"
    "then per GPU, collective and scale (ranks, NVLink domains) the rows of all\n"
    "sources together, how many sources measured it and the mean error (held\n"
    "out by source with --loso where two or more did, by row with --loo), how\n"
    "far apart the sources are where they measured the same size (\"apart\":\n"
    "each row against the other sources' rows of its size and forced\n"
    "algorithm, |theirs / its - 1|, 0 where none matches, averaged over the\n"
    "group: what a fit held out by source scores when it reproduces the other\n"
    "sources exactly) and the rows so matched, and how many groups of two or\n"
    "more sources are within 10 %.\n"
    "\n"
    "options:\n"
    "      --fit        fit each profile's collective parameters on its rows\n"
    "                   (GSL Nelder-Mead on the mean absolute log error, each\n"
    "                   source weighed alike), evaluate with them and print them\n"
    "                   as the profiles' `node` settings\n"
    "      --loso       leave one source out: each source's rows predicted with\n"
    "                   parameters fitted on the profile's other sources\n"
    "      --loo        leave one row out: each row predicted with parameters\n"
    "                   fitted on the profile's other rows (from the full fit)\n"
    "      --rows       every row as CSV: measured and predicted times (us), and\n"
    "                   the held-out signed errors (predicted / measured - 1)\n"
    "                   with --loso and --loo\n"
    "      --json       the table as one JSON object on stdout (groups: profile,\n"
    "                   source, collective, rows, mean, median, worst; loso_* and\n"
    "                   loo_* with those options, null where no source was left;\n"
    "                   scale_groups: profile, collective, ranks, domains, rows,\n"
    "                   sources, mean, loso_mean, loo_mean, sources_apart,\n"
    "                   matched; with --fit the fitted\n"
    "                   settings per profile)\n"
    "  -h, --help       this help\n";

#define MAX_PROF 16

struct prof {
	char name[32];
	struct hw_profile shipped, fitted;
	int nvls;
};

static int nvls_capable(const char *profile)
{
	/* NVSwitch with SHARP: the third NVSwitch generation on (Hopper,
	 * Blackwell). */
	return !strcmp(kbench_family(profile), "gh100") || !strcmp(profile, "b200-dgx") ||
	       !strcmp(profile, "b300-hgx") || !strcmp(profile, "gb200-nvl72") ||
	       !strcmp(profile, "gb300-nvl72");
}

static const char *kind_name(int k)
{
	return graph_coll_kind_name(k);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Errors of rows idx[0..n) on hw: mean, median, worst. */
static void errors(const struct hw_profile *hw, const struct cbench *cb, const size_t *idx,
		   size_t n, double *mean, double *median, double *worst)
{
	double *e = prism_malloc((n ? n : 1) * sizeof(*e)), s = 0;
	*mean = *median = *worst = 0;
	if (!e || !n) {
		free(e);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct cbench_row *r = &cb->rows[idx[i]];
		double t = cbench_predict(hw, r);
		e[i] = fabs(t - r->time_s) / r->time_s;
		s += e[i];
	}
	qsort(e, n, sizeof(*e), cmp_d);
	*mean = s / (double)n;
	*median = n % 2 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2;
	*worst = e[n - 1];
	free(e);
}

static void short_source(const char *src, char *out, size_t n)
{
	const char *at = strchr(src, '@'), *colon = at ? strchr(at, ':') : NULL;
	if (at && colon)
		snprintf(out, n, "%.*s:%.60s", (int)(at - src), src, colon + 1);
	else
		snprintf(out, n, "%.90s", src);
}

/* Mean of |v| over rows[0..n) where it is a number; NAN when none is. */
static double mean_of(const double *v, const size_t *rows, size_t n)
{
	double s = 0;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!isnan(v[rows[i]]))
			s += fabs(v[rows[i]]), k++;
	return k ? s / (double)k : NAN;
}

static void put_pct(double v, int json, const char *key)
{
	if (json && isnan(v))
		printf(",\"%s\":null", key);
	else if (json)
		printf(",\"%s\":%.6g", key, v);
	else if (isnan(v))
		printf(" %9s", "-");
	else
		printf(" %8.1f%%", 100 * v);
}

/*
 * The acceptance view (issue 34): per profile, collective and scale (group
 * size and NVLink domains), the rows of every source together, how many
 * sources measured it, and the mean error with the profiles as used (fit or
 * shipped), held out by source (--loso; only where the group has >= 2
 * sources: otherwise the held-out fit never saw the scale at all) and by row
 * (--loo).  Ends with how many groups of >= 2 sources are within 10 %.
 */
/* A row as sources_apart sorts it: size, forced algorithm, source. */
struct apart_key {
	double bytes, log_t;
	int algo;
	const char *source;
};

static int cmp_apart(const void *a, const void *b)
{
	const struct apart_key *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? -1 : 1;
	if (x->algo != y->algo)
		return x->algo < y->algo ? -1 : 1;
	return strcmp(x->source, y->source);
}

/*
 * How far apart a group's sources are where they measured the same thing:
 * each row of rows[0..n) against the other sources' rows of the same size
 * and forced algorithm (the geometric mean of their times), |t_other /
 * t_row - 1|, and 0 for a row no other source matches; the mean over the
 * group.  A fit held out by source that reproduced the other sources
 * exactly would score this: it scores less only by missing the sources it
 * was fitted on towards the one held out.  Also the rows matched, in
 * *matched.  Sorted by size, algorithm and source (n log n: a group may
 * hold tens of thousands of rows), each run of one size and algorithm is a
 * bucket and each source's rows a sub-run in it: a row's other sources
 * are the bucket's log-time sum and count less its sub-run's.  NAN when
 * out of memory.
 */
static double sources_apart(const struct cbench *cb, const size_t *rows, size_t n, size_t *matched)
{
	struct apart_key *k = prism_malloc((n ? n : 1) * sizeof(*k));
	double sum = 0;
	*matched = 0;
	if (!k)
		return NAN;
	for (size_t i = 0; i < n; i++) {
		const struct cbench_row *r = &cb->rows[rows[i]];
		k[i] = (struct apart_key){r->bytes, log(r->time_s), r->algo, r->source};
	}
	qsort(k, n, sizeof(*k), cmp_apart);
	for (size_t b = 0, e; b < n; b = e) {
		double lt = 0;
		for (e = b; e < n && k[e].bytes == k[b].bytes && k[e].algo == k[b].algo; e++)
			lt += k[e].log_t;
		for (size_t s = b, t; s < e; s = t) {
			double ls = 0;
			for (t = s; t < e && !strcmp(k[t].source, k[s].source); t++)
				ls += k[t].log_t;
			if (t - s == e - b)
				continue; /* one source alone measured this size */
			for (size_t q = s; q < t; q++, (*matched)++)
				sum += fabs(
				    exp((lt - ls) / (double)(e - b - (t - s)) - k[q].log_t) - 1);
		}
	}
	free(k);
	return n ? sum / (double)n : NAN;
}

static void scale_groups(const struct cbench *cb, const struct prof *pr, int np, int fit,
			 const double *loso_e, const double *loo_e, size_t *rows, int json)
{
	size_t multi = 0, within = 0;
	const char *sep = "";
	double *err = prism_malloc((cb->n ? cb->n : 1) * sizeof(*err));

	if (!err) {
		fprintf(stderr, "prism collectives: out of memory for the scale groups\n");
		return;
	}

	if (json)
		printf(",\"scale_groups\":[");
	else
		printf("\n%-14s %-15s %5s %6s %5s %8s %9s %9s %9s %9s %7s\n", "profile",
		       "collective", "ranks", "domains", "rows", "sources", "mean", "loso mean",
		       "loo mean", "apart", "matched");
	for (int p = 0; p < np; p++) {
		const struct hw_profile *hw = fit ? &pr[p].fitted : &pr[p].shipped;
		for (size_t i = 0; i < cb->n; i++) {
			const struct cbench_row *r = &cb->rows[i];
			size_t n = 0, nsrc = 0, first = 1, matched = 0;
			double mean, loso, apart;
			if (strcmp(r->profile, pr[p].name))
				continue;
			for (size_t j = 0; j < i && first; j++)
				first = strcmp(cb->rows[j].profile, r->profile) ||
					cb->rows[j].kind != r->kind || cb->rows[j].n != r->n ||
					cb->rows[j].per_node != r->per_node;
			if (!first)
				continue;
			for (size_t j = i; j < cb->n; j++) {
				const struct cbench_row *x = &cb->rows[j];
				int seen = 0;
				if (strcmp(x->profile, r->profile) || x->kind != r->kind ||
				    x->n != r->n || x->per_node != r->per_node)
					continue;
				for (size_t q = 0; q < n && !seen; q++)
					seen = !strcmp(cb->rows[rows[q]].source, x->source);
				nsrc += !seen;
				err[j] = fabs(cbench_predict(hw, x) - x->time_s) / x->time_s;
				rows[n++] = j;
			}
			mean = mean_of(err, rows, n);
			loso = nsrc >= 2 ? mean_of(loso_e, rows, n) : NAN;
			apart = nsrc >= 2 ? sources_apart(cb, rows, n, &matched) : NAN;
			if (nsrc >= 2) {
				double judged = isnan(loso) ? mean : loso;
				multi++;
				within += judged <= 0.10;
			}
			if (json) {
				printf("%s\n{\"profile\":", sep);
				prism_fput_json_str(stdout, r->profile);
				printf(",\"collective\":\"%s\",\"ranks\":%d,\"domains\":%d,"
				       "\"rows\":%zu,\"sources\":%zu",
				       kind_name(r->kind), r->n, r->n / r->per_node, n, nsrc);
				sep = ",";
			} else {
				printf("%-14s %-15s %5d %6d %5zu %8zu", r->profile,
				       kind_name(r->kind), r->n, r->n / r->per_node, n, nsrc);
			}
			put_pct(mean, json, "mean");
			put_pct(loso, json, "loso_mean");
			put_pct(mean_of(loo_e, rows, n), json, "loo_mean");
			put_pct(apart, json, "sources_apart");
			if (json)
				printf(",\"matched\":%zu", matched);
			else
				printf(" %7zu", matched);
			printf(json ? "}" : "\n");
		}
	}
	if (json)
		printf("],\"groups_2_sources\":%zu,\"groups_2_sources_within_10pct\":%zu", multi,
		       within);
	else
		printf("\ngroups measured by >= 2 sources: %zu, within 10 %% (held out by source "
		       "where --loso, else as fitted): %zu\n",
		       multi, within);
	free(err);
}

/* One run of `prism collectives`: the rows, the profiles they name, the
 * options and the scratch the groups share. */
struct cx {
	struct cbench cb;
	struct prof pr[MAX_PROF];
	int np, fit, loso, loo, rows, json;
	const char *gsep;
	size_t *idx, *sub;
	double *loso_e, *loo_e; /* each row's held-out error, signed: (predicted -
				 * measured) / measured (NAN: none) */
};

static void cx_release(struct cx *x)
{
	free(x->idx);
	free(x->sub);
	free(x->loso_e);
	free(x->loo_e);
	cbench_release(&x->cb);
}

/* The profiles the rows name, and the scratch. */
static int cx_load(struct cx *x, struct prism_err *err)
{
	const struct cbench *cb = &x->cb;
	size_t n = cb->n ? cb->n : 1;
	int rc;
	for (size_t i = 0; i < cb->n; i++) {
		struct prof *q = &x->pr[x->np];
		int k;
		for (k = 0; k < x->np && strcmp(x->pr[k].name, cb->rows[i].profile); k++)
			;
		if (k < x->np || x->np == MAX_PROF)
			continue;
		snprintf(q->name, sizeof(q->name), "%s", cb->rows[i].profile);
		if ((rc = cli_load_hw(q->name, &q->shipped, err)))
			return rc;
		q->fitted = q->shipped;
		/* NVLS is fitted wherever the switch has SHARP: NCCL enables it
		 * by default where the system supports it (NCCL_NVLS_ENABLE=2,
		 * src/transport/nvls.cc), and XLA's NVL72 all-reduces reach
		 * 909 GB/s of bus bandwidth over 900 GB/s links, which no ring
		 * does. */
		q->nvls = nvls_capable(q->name);
		x->np++;
	}
	x->idx = prism_malloc(n * sizeof(*x->idx));
	x->sub = prism_malloc(n * sizeof(*x->sub));
	x->loso_e = prism_malloc(n * sizeof(*x->loso_e));
	x->loo_e = prism_malloc(n * sizeof(*x->loo_e));
	if (!x->idx || !x->sub || !x->loso_e || !x->loo_e)
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	for (size_t i = 0; i < cb->n; i++)
		x->loso_e[i] = x->loo_e[i] = NAN;
	return 0;
}

/* Group sub[0..n) (one profile, source and collective) predicted by a fit
 * on the profile's other sources; its mean and median where any is left,
 * each row's error in loso_e. */
static void cx_loso(struct cx *x, const struct prof *pp, const struct cbench_row *r, size_t n)
{
	struct hw_profile w = pp->shipped;
	const struct cbench *cb = &x->cb;
	double mean, med, worst;
	size_t m = 0;
	for (size_t j = 0; j < cb->n; j++)
		if (!strcmp(cb->rows[j].profile, r->profile) &&
		    strcmp(cb->rows[j].source, r->source))
			x->idx[m++] = j;
	if (pp->nvls && w.nvls_eff <= 0)
		w.nvls_eff = 0.6;
	if (m)
		cbench_fit(&w, cb->rows, x->idx, m, pp->nvls);
	errors(&w, cb, x->sub, n, &mean, &med, &worst);
	for (size_t q = 0; m && q < n; q++)
		x->loso_e[x->sub[q]] =
		    (cbench_predict(&w, &cb->rows[x->sub[q]]) - cb->rows[x->sub[q]].time_s) /
		    cb->rows[x->sub[q]].time_s;
	if (x->json && m)
		printf(",\"loso_mean\":%.6g,\"loso_median\":%.6g", mean, med);
	else if (x->json)
		printf(",\"loso_mean\":null,\"loso_median\":null");
	else if (m)
		printf(" %8.1f%% %7.1f%%", 100 * mean, 100 * med);
	else
		printf(" %9s %8s", "-", "-");
}

/* Each row of group sub[0..n) by a fit on the profile's other rows, from
 * the full fit; the mean and median, each row's error in loo_e. */
static void cx_loo(struct cx *x, const struct prof *pp, const struct cbench_row *r, size_t n)
{
	const struct cbench *cb = &x->cb;
	double *e = prism_malloc(n * sizeof(*e)), sum = 0, md;
	if (!e)
		return;
	for (size_t q = 0; q < n; q++) {
		struct hw_profile w = pp->fitted;
		const struct cbench_row *y = &cb->rows[x->sub[q]];
		size_t m = 0;
		for (size_t j = 0; j < cb->n; j++)
			if (!strcmp(cb->rows[j].profile, r->profile) && j != x->sub[q])
				x->idx[m++] = j;
		cbench_fit(&w, cb->rows, x->idx, m, pp->nvls);
		x->loo_e[x->sub[q]] = (cbench_predict(&w, y) - y->time_s) / y->time_s;
		e[q] = fabs(x->loo_e[x->sub[q]]);
		sum += e[q];
	}
	qsort(e, n, sizeof(*e), cmp_d);
	md = n % 2 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2;
	if (x->json)
		printf(",\"loo_mean\":%.6g,\"loo_median\":%.6g", sum / (double)n, md);
	else
		printf(" %8.1f%% %7.1f%%", 100 * sum / (double)n, 100 * md);
	free(e);
}

/* The table: a line (or JSON group) per profile, source and collective,
 * with the held-out errors asked for, and the mean over every row. */
static void cx_groups(struct cx *x)
{
	const struct cbench *cb = &x->cb;
	size_t all_n = 0;
	double all_sum = 0;
	if (!x->json) {
		printf("\n%-14s %-58s %-15s %5s %9s %8s %8s", "profile", "source", "collective",
		       "rows", "mean", "median", "worst");
		if (x->loso)
			printf(" %9s %8s", "loso mean", "median");
		if (x->loo)
			printf(" %9s %8s", "loo mean", "median");
		printf("\n");
	}
	for (int p = 0; p < x->np; p++) {
		const struct prof *pp = &x->pr[p];
		const struct hw_profile *hw = x->fit ? &pp->fitted : &pp->shipped;
		for (size_t i = 0; i < cb->n; i++) {
			const struct cbench_row *r = &cb->rows[i];
			size_t n = 0, first = 1;
			double mean, med, worst;
			char src[200];
			if (strcmp(r->profile, pp->name))
				continue;
			for (size_t j = 0; j < i && first; j++)
				first = strcmp(cb->rows[j].profile, r->profile) ||
					strcmp(cb->rows[j].source, r->source) ||
					cb->rows[j].kind != r->kind;
			if (!first)
				continue;
			for (size_t j = i; j < cb->n; j++)
				if (!strcmp(cb->rows[j].profile, r->profile) &&
				    !strcmp(cb->rows[j].source, r->source) &&
				    cb->rows[j].kind == r->kind)
					x->sub[n++] = j;
			errors(hw, cb, x->sub, n, &mean, &med, &worst);
			all_n += n;
			all_sum += mean * (double)n;
			short_source(r->source, src, sizeof(src));
			if (x->json) {
				printf("%s\n{\"profile\":", x->gsep);
				prism_fput_json_str(stdout, r->profile);
				printf(",\"source\":");
				prism_fput_json_str(stdout, src);
				printf(",\"collective\":\"%s\",\"rows\":%zu,\"mean\":%.6g,"
				       "\"median\":%.6g,\"worst\":%.6g",
				       kind_name(r->kind), n, mean, med, worst);
				x->gsep = ",";
			} else {
				printf("%-14s %-58.58s %-15s %5zu %8.1f%% %7.1f%% %7.1f%%",
				       r->profile, src, kind_name(r->kind), n, 100 * mean,
				       100 * med, 100 * worst);
			}
			if (x->loso)
				cx_loso(x, pp, r, n);
			if (x->loo)
				cx_loo(x, pp, r, n);
			printf(x->json ? "}" : "\n");
		}
	}
	if (x->json && all_n)
		printf("],\"mean\":%.6g", all_sum / (double)all_n);
	else if (x->json)
		printf("],\"mean\":null");
	else if (all_n)
		printf("\nall %zu rows: mean |error| %.1f%%\n", all_n,
		       100 * all_sum / (double)all_n);
}

/* The fitted settings, as the profiles' node group names them: a JSON
 * object, or each profile's lines to paste. */
static void cx_put_fitted(const struct cx *x)
{
	if (x->json) {
		printf(",\"fitted\":");
		for (int p = 0; x->fit && p < x->np; p++) {
			const struct hw_profile *f = &x->pr[p].fitted;
			printf("%s", p ? "," : "{");
			prism_fput_json_str(stdout, x->pr[p].name);
			printf(":{\"nvlink_bus_eff\":%.6g,\"nvlink_latency_us\":%.6g,"
			       "\"nvls_bus_eff\":",
			       f->nvl_eff, f->nvlink_lat_s * 1e6);
			if (x->pr[p].nvls)
				printf("%.6g", f->nvls_eff);
			else
				printf("null");
			printf(",\"network_bus_eff\":%.6g,\"network_latency_us\":%.6g,"
			       "\"collective_base_us\":%.6g}",
			       f->net_eff, f->net_lat_s * 1e6, f->coll_base_s * 1e6);
		}
		printf("%s}\n", x->fit && x->np ? "}" : "null");
		return;
	}
	for (int p = 0; x->fit && p < x->np; p++) {
		const struct hw_profile *f = &x->pr[p].fitted;
		printf("\n# %s: fitted by prism collectives --fit\n", x->pr[p].name);
		printf("  nvlink_bus_eff = %.3f;\n  nvlink_latency_us = %.3f;\n", f->nvl_eff,
		       f->nvlink_lat_s * 1e6);
		if (x->pr[p].nvls)
			printf("  nvls_bus_eff = %.3f;\n", f->nvls_eff);
		printf("  network_bus_eff = %.3f;\n  network_latency_us = %.3f;\n"
		       "  collective_base_us = %.3f;\n",
		       f->net_eff, f->net_lat_s * 1e6, f->coll_base_s * 1e6);
	}
}

/* --rows: each row measured and predicted, as CSV. */
static void cx_put_rows(const struct cx *x)
{
	printf("\nprofile,kind,n,per_node,algo,bytes,measured_us,predicted_us,loso_error,loo_error,"
	       "source\n");
	for (size_t i = 0; i < x->cb.n; i++) {
		const struct cbench_row *r = &x->cb.rows[i];
		const struct hw_profile *hw = NULL;
		for (int p = 0; p < x->np; p++)
			if (!strcmp(x->pr[p].name, r->profile))
				hw = x->fit ? &x->pr[p].fitted : &x->pr[p].shipped;
		if (!hw)
			continue;
		printf("%s,%s,%d,%d,%s,%.0f,%.3f,%.3f,", r->profile, kind_name(r->kind), r->n,
		       r->per_node, comm_algo_name(r->algo), r->bytes, r->time_s * 1e6,
		       cbench_predict(hw, r) * 1e6);
		if (!isnan(x->loso_e[i]))
			printf("%.4f", x->loso_e[i]);
		putchar(',');
		if (!isnan(x->loo_e[i]))
			printf("%.4f", x->loo_e[i]);
		printf(",%s\n", r->source);
	}
}

int cmd_collectives(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"fit", no_argument, NULL, 'f'},
	    {"loso", no_argument, NULL, 'l'},
	    {"loo", no_argument, NULL, 'o'},
	    {"rows", no_argument, NULL, 'r'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	static struct cx x; /* MAX_PROF profiles: not on the stack */
	struct prism_err err;
	struct cli_parse args;
	int c, rc = 0;

	prism_err_clear(&err);
	memset(&x, 0, sizeof(x));
	x.gsep = "";
	cli_parse_init(&args, "collectives", help, "h", longopts, NULL, NULL,
		       "give measurement files");
	while ((c = cli_next_option(&args, argc, argv, &err)) >= 0) {
		switch (c) {
		case 'f':
			x.fit = 1;
			break;
		case 'l':
			x.loso = 1;
			break;
		case 'o':
			x.loo = x.fit = 1;
			break;
		case 'r':
			x.rows = 1;
			break;
		case 'j':
			x.json = 1;
			break;
		}
	}
	if (c == CLI_PARSE_EXIT)
		return args.status;
	if (x.json && x.rows) {
		fprintf(stderr, "prism collectives: --json prints the table alone: not with "
				"--rows\n");
		return EXIT_USAGE;
	}
	for (int i = optind; i < argc && !rc; i++)
		rc = cbench_read(&x.cb, argv[i], &err);
	if (rc || (rc = cx_load(&x, &err))) {
		cx_release(&x);
		return cli_fail(&err);
	}
	if (x.json) {
		putchar('{');
		cli_put_skips_json(stdout, x.cb.n, &x.cb.skips);
		printf(",\"groups\":[");
	} else {
		printf("collectives: %zu rows placed, %zu left out", x.cb.n, x.cb.skips.skipped);
		for (int i = 0; i < x.cb.skips.n_why; i++)
			printf("%s%zu %s", i ? ", " : " (", x.cb.skips.n[i], x.cb.skips.why[i]);
		printf("%s\n", x.cb.skips.n_why ? ")" : "");
	}
	for (int p = 0; p < x.np && x.fit; p++) {
		size_t n = 0;
		for (size_t i = 0; i < x.cb.n; i++)
			if (!strcmp(x.cb.rows[i].profile, x.pr[p].name))
				x.idx[n++] = i;
		if (x.pr[p].nvls && x.pr[p].fitted.nvls_eff <= 0)
			x.pr[p].fitted.nvls_eff = 0.6;
		cbench_fit(&x.pr[p].fitted, x.cb.rows, x.idx, n, x.pr[p].nvls);
	}
	cx_groups(&x);
	scale_groups(&x.cb, x.pr, x.np, x.fit, x.loso_e, x.loo_e, x.idx, x.json);
	cx_put_fitted(&x);
	if (x.rows)
		cx_put_rows(&x);
	cx_release(&x);
	return 0;
}
