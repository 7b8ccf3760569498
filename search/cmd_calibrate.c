/* cmd_calibrate.c - `prism calibrate`: kernel efficiency fitted on a trace. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "calib.h"
#include "cli.h"
#include "kdb.h"
#include "kdbstore.h"
#include "predict.h"

static const char help[] =
    "usage: prism calibrate [options] TRACE...|GRAPH\n"
    "\n"
    "Fit, for each kernel class, the fraction of the GPU's peak its kernels\n"
    "reach and their fixed overhead, from the trace's own kernels whose work is\n"
    "known from their op's shapes (FLOPs for GEMMs, bytes for the rest: the\n"
    "trace must record them, torch.profiler's record_shapes=True), and\n"
    "report how well the fit predicts each kernel when left out of it, and\n"
    "how well the kernel model (prism kernels) predicts its GEMMs.  The\n"
    "kernels also form a kernel database (median time per GPU, class, dtype and\n"
    "work), interpolated in log-log between measured sizes; its leave-one-out\n"
    "error is reported beside the fit's.  With --db, the database is merged\n"
    "into FILE (SQLite, created if absent) for synth and whatif --db and for\n"
    "sweeps (kernel_db = \"FILE\").\n"
    "\n"
    "options:\n"
    "      --db FILE     add the trace's kernels to the kernel database FILE\n"
    "      --gemms       also each GEMM shape against the kernel model: its\n"
    "                    kernels, their median time, the model's, the error,\n"
    "                    and the tiles and waves the model chose, or stream-K\n"
    "                    (most measured time first; in JSON kernel_model.shapes)\n"
    "      --hw FILE     the hardware profile (default: chosen from the trace's\n"
    "                    GPU name among configs/hw/*.cfg)\n"
    "      --json        print the results as JSON\n"
    "  -h, --help        this help\n"
    "  and the trace options of `prism ingest` (--rank, --allow-dangling, ...)\n";

/* What `prism calibrate` fitted on one trace (graph), to print. */
struct cal {
	const struct graph *g;
	struct hw_profile hw;
	const char *hw_path, *db_path;
	const struct kdb *db;
	size_t added; /* the trace's kernels put in the database */
	struct calib_class cc[KC_NCLASSES];
	struct calib_comm cm[GC_NKINDS];
	struct calib_contention ct;
	struct calib_kmodel km;
	size_t loo_n[KC_NCLASSES];
	double loo_mean[KC_NCLASSES], loo_med[KC_NCLASSES];
	struct calib_gshape *gs;
	size_t ngs;
	int gemms;
};

/* The fits as one JSON object on stdout. */
static void put_json(const struct cal *x)
{
	printf("{\"hw\":");
	prism_fput_json_str(stdout, x->hw_path);
	printf(",\"classes\":{");
	for (int k = 0, first = 1; k < KC_NCLASSES; k++) {
		if (x->cc[k].n < 3)
			continue;
		char why[320];
		const char *flag = calib_flag(x->g, &x->hw, k, &x->cc[k], why, sizeof(why));
		printf("%s\"%s\":{\"samples\":%zu,\"by\":\"%s\",\"efficiency\":%.6f,"
		       "\"overhead_s\":%.9f,\"loo_mean\":%.6f,\"loo_median\":%.6f,"
		       "\"db_loo_rows\":%zu,\"db_loo_mean\":%.6f,\"db_loo_median\":%.6f",
		       first ? "" : ",", cost_class_name(k), x->cc[k].n,
		       x->cc[k].by_flops ? "flops" : "bytes", x->cc[k].eff, x->cc[k].overhead_s,
		       x->cc[k].loo_mean, x->cc[k].loo_median, x->loo_n[k], x->loo_mean[k],
		       x->loo_med[k]);
		/* A fit that is no cost model says so (calib_flag). */
		printf(",\"valid\":%s,\"flag\":", flag ? "false" : "true");
		if (flag)
			prism_fput_json_str(stdout, flag);
		else
			printf("null");
		printf("}");
		first = 0;
	}
	printf("},\"collectives\":{");
	for (int k = 0, first = 1; k < GC_NKINDS; k++) {
		if (!x->cm[k].n)
			continue;
		printf("%s\"%s\":{\"samples\":%zu,\"median_bus_eff\":%.6f,"
		       "\"best_bus_eff\":%.6f}",
		       first ? "" : ",", graph_coll_kind_name(k), x->cm[k].n, x->cm[k].median_eff,
		       x->cm[k].best_eff);
		first = 0;
	}
	printf("},\"kernel_model\":{\"gemms\":%zu,\"mean\":%.6f,\"median\":%.6f,"
	       "\"worst\":%.6f,\"signed_mean\":%.6f,\"flat_mean\":%.6f,"
	       "\"flat_median\":%.6f",
	       x->km.n, x->km.mean, x->km.median, x->km.worst, x->km.signed_mean, x->km.flat_mean,
	       x->km.flat_median);
	if (x->gemms) {
		printf(",\"shapes\":[");
		for (size_t i = 0; i < x->ngs; i++)
			printf("%s{\"dtype\":\"%s\",\"b\":%.0f,\"m\":%.0f,\"n\":%.0f,"
			       "\"k\":%.0f,\"kernels\":%zu,\"measured_s\":%.9f,"
			       "\"model_s\":%.9f,\"tile_m\":%.0f,\"tile_n\":%.0f,"
			       "\"splits\":%.0f,\"waves\":%.4g,\"stream_k\":%s,"
			       "\"memory_bound\":%s}",
			       i ? "," : "", hw_dtype_name(x->gs[i].dtype), x->gs[i].b, x->gs[i].m,
			       x->gs[i].n, x->gs[i].k, x->gs[i].count, x->gs[i].measured_s,
			       x->gs[i].model_s, x->gs[i].plan.tm, x->gs[i].plan.tn,
			       x->gs[i].plan.splits, x->gs[i].plan.waves,
			       x->gs[i].plan.stream_k ? "true" : "false",
			       x->gs[i].plan.mem_bound ? "true" : "false");
		printf("]");
	}
	printf("}");
	printf(",\"contention\":{\"groups\":%zu,\"pairs\":%zu,\"compute_slowdown\":%.6f,"
	       "\"group_slowdowns\":[",
	       x->ct.keys, x->ct.pairs, x->ct.compute);
	for (size_t i = 0; i < x->ct.keys && i < CALIB_CONT_GROUPS; i++)
		printf("%s%.6f", i ? "," : "", x->ct.group[i]);
	printf("]}");
	printf(",\"db\":{\"tasks\":%zu,\"rows\":%zu}}\n", x->added, kdb_rows(x->db));
}

/* --gemms: each GEMM shape of the trace, measured and by the model, with
 * the tiles and waves the model chose. */
static void put_gemms_text(const struct cal *x)
{
	printf("\n%-6s %-28s %8s %12s %12s %8s  %s\n", "dtype", "b x M x N x K", "kernels",
	       "measured us", "model us", "error", "the model's tiles, waves");
	for (size_t i = 0; i < x->ngs; i++) {
		const struct kperf_gemm_plan *pl = &x->gs[i].plan;
		char shape[96], how[96];
		snprintf(shape, sizeof(shape), "%.0f x %.0f x %.0f x %.0f", x->gs[i].b, x->gs[i].m,
			 x->gs[i].n, x->gs[i].k);
		if (pl->stream_k)
			snprintf(how, sizeof(how), "%.0f of %.0fx%.0f, stream-K: %.2f waves%s",
				 pl->tiles, pl->tm, pl->tn, pl->waves,
				 pl->mem_bound ? "; memory-bound" : "");
		else
			snprintf(how, sizeof(how), "%.0f of %.0fx%.0f%s, %.0f wave%s%s",
				 pl->splits > 0 ? pl->tiles / pl->splits : 0, pl->tm, pl->tn,
				 pl->splits > 2	  ? " split-K 4"
				 : pl->splits > 1 ? " split-K 2"
						  : "",
				 pl->waves, pl->waves == 1 ? "" : "s",
				 pl->mem_bound ? "; memory-bound" : "");
		printf("%-6s %-28s %8zu %12.3f %12.3f %+7.1f%%  %s\n",
		       hw_dtype_name(x->gs[i].dtype), shape, x->gs[i].count,
		       x->gs[i].measured_s * 1e6, x->gs[i].model_s * 1e6,
		       100 * (x->gs[i].model_s - x->gs[i].measured_s) / x->gs[i].measured_s, how);
	}
	if (!x->ngs)
		printf("(no GEMM with shapes)\n");
}

/* The fits as text: the classes, what is no cost model, the database, the
 * kernel model, the collectives and contention. */
static void put_text(const struct cal *x)
{
	int shown = 0;

	printf("calibrate: %s, profile %s (%s)\n\n", x->hw.gpu, x->hw_path, x->hw.name);
	printf("%-12s %8s %18s %11s %22s %26s\n", "class", "samples", "efficiency", "overhead",
	       "leave-one-out |error|", "database leave-one-out");
	printf("%-12s %8s %18s %11s %22s %26s\n", "", "", "(of peak, large)", "", "mean / median",
	       "sizes: mean / median");
	for (int k = 0; k < KC_NCLASSES; k++) {
		if (x->cc[k].n < 3)
			continue;
		shown++;
		printf("%-12s %8zu %9.1f%% %-8s %8.2f us %12.1f%% / %5.1f%%", cost_class_name(k),
		       x->cc[k].n, 100 * x->cc[k].eff, x->cc[k].by_flops ? "FLOP/s" : "HBM",
		       x->cc[k].overhead_s * 1e6, 100 * x->cc[k].loo_mean,
		       100 * x->cc[k].loo_median);
		if (x->loo_n[k])
			printf(" %6zu: %6.1f%% / %5.1f%%\n", x->loo_n[k], 100 * x->loo_mean[k],
			       100 * x->loo_med[k]);
		else
			printf(" %25s\n", "-");
	}
	for (int k = 0, first = 1; k < KC_NCLASSES; k++) {
		char why[320];
		if (!calib_flag(x->g, &x->hw, k, &x->cc[k], why, sizeof(why)))
			continue;
		if (first)
			printf("\nfits that are not a cost model:\n");
		first = 0;
		printf("  %s\n", why);
	}
	if (!shown) {
		/* Nothing fitted: say why rather than print an empty table. */
		size_t sized = 0, kernels = 0, dims = 0;
		for (int k = 0; k < KC_NCLASSES; k++)
			sized += x->cc[k].n;
		for (uint32_t u = 0; u < x->g->n_nodes; u++) {
			kernels += x->g->kind[u] >= GN_KERNEL;
			dims += x->g->op_dims[u] != 0;
		}
		printf("(none): no class has 3 kernels with a size; %zu of the trace's %zu "
		       "GPU tasks\nhave one (FLOPs or bytes, from the shapes their op "
		       "records)%s\n",
		       sized, kernels,
		       dims ? ""
			    : ": its ops record no\nshapes (profile with torch.profiler's "
			      "record_shapes=True)");
	}
	printf("\nEach class: time = overhead + ideal time / efficiency, fitted by least\n"
	       "squares (ideal time: FLOPs at peak, or bytes at HBM bandwidth).  The\n"
	       "database: %zu kernels of this trace; %zu rows in all (median per GPU,\n"
	       "class, dtype and work); each size between the smallest and largest\n"
	       "of its class interpolated from the other rows of this GPU.\n",
	       x->added, kdb_rows(x->db));
	if (x->db_path)
		printf("Kernel database written: %s\n", x->db_path);
	if (x->km.n)
		printf("\nKernel model (by shape, dtype and GPU; prism kernels) on the %zu "
		       "GEMMs with shapes:\n  |error| mean %.1f%%, median %.1f%%, worst "
		       "%.1f%% (signed mean %+.1f%%); the flat model before it (70%% of "
		       "peak + 3 us): mean %.1f%%, median %.1f%%\n",
		       x->km.n, 100 * x->km.mean, 100 * x->km.median, 100 * x->km.worst,
		       100 * x->km.signed_mean, 100 * x->km.flat_mean, 100 * x->km.flat_median);
	if (x->gemms)
		put_gemms_text(x);
	for (int k = 0, first = 1; k < GC_NKINDS; k++) {
		if (!x->cm[k].n)
			continue;
		if (first)
			printf("\n%-16s %8s %18s %12s\n", "collective", "samples", "bus efficiency",
			       "best");
		first = 0;
		printf("%-16s %8zu %17.1f%% %11.1f%%\n", graph_coll_kind_name(k), x->cm[k].n,
		       100 * x->cm[k].median_eff, 100 * x->cm[k].best_eff);
	}
	if (x->ct.keys)
		printf("\nContention: kernels beside communication run %+.1f%% (the median "
		       "of %zu kernels\ntimed both beside it and clear of it, %zu pairs; the "
		       "profile's contention.compute)\n",
		       100 * x->ct.compute, x->ct.keys, x->ct.pairs);
}

int cmd_calibrate(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"hw", required_argument, NULL, 'w'},
	    {"db", required_argument, NULL, 'D'},
	    {"json", no_argument, NULL, 'j'},
	    {"gemms", no_argument, NULL, 'g'},
	    {"help", no_argument, NULL, 'h'},
	    CLI_BUILD_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	static struct cal x; /* the classes' and collectives' fits: not on the stack */
	struct build_opts bo;
	struct prism_err err;
	struct graph *g = NULL;
	const char *ranks = NULL;
	struct cli_parse args;
	struct kdb *db = NULL;
	char found[1024];
	int json = 0, c, rc, dt = -1;

	memset(&x, 0, sizeof(x));
	build_opts_default(&bo);
	prism_err_clear(&err);
	cli_parse_init(&args, "calibrate", help, "r:h", longopts, &bo, &ranks, "no trace given");
	while ((c = cli_next_option(&args, argc, argv, &err)) >= 0) {
		switch (c) {
		case 'w':
			x.hw_path = optarg;
			break;
		case 'D':
			x.db_path = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'g':
			x.gemms = 1;
			break;
		}
	}
	if (c == CLI_PARSE_EXIT)
		return args.status;
	rc = cli_load_graph(argv + optind, argc - optind, ranks, &bo, &g, &err);
	if (rc == 0 && !x.hw_path) {
		rc = cli_trace_hw_path(g, found, sizeof(found), NULL, ": give one with --hw", &err);
		x.hw_path = found;
	}
	if (rc == 0)
		rc = cli_load_hw(x.hw_path, &x.hw, &err);
	/* A trace is a training step: its kernels against the model at the
	 * step clock of the dtype its GEMMs ran in (hw_run_clock; bf16's
	 * where no kernel says, as loaded). */
	if (rc == 0 && (dt = predict_trace_dtype(g)) == -2)
		rc = prism_err_set(&err, PRISM_ENOMEM, "out of memory");
	if (rc == 0 && dt >= 0)
		x.hw.clock = hw_run_clock(&x.hw, dt, 0);
	if (rc == 0 && !(db = kdb_new()))
		rc = prism_err_set(&err, PRISM_ENOMEM, "out of memory");
	if (rc == 0 && x.db_path && access(x.db_path, F_OK) == 0)
		rc = kdbstore_load(db, x.db_path, &err);
	if (rc == 0 && kdb_add_graph(db, g, &x.hw, &x.added))
		rc = prism_err_set(&err, PRISM_ENOMEM, "out of memory");
	if (rc == 0 && x.db_path)
		rc = kdbstore_save(db, x.db_path, &err);
	if (rc == 0 && x.gemms)
		rc = calib_gemm_shapes(g, &x.hw, &x.gs, &x.ngs, &err);
	if (rc == 0 && (calib_fit(g, &x.hw, x.cc) || calib_kernel_model(g, &x.hw, &x.km) ||
			calib_comm_fit(g, &x.hw, x.cm) || calib_contention(g, &x.ct)))
		rc = prism_err_set(&err, PRISM_ENOMEM, "out of memory");
	if (rc == 0) {
		x.g = g;
		x.db = db;
		for (int k = 0; k < KC_NCLASSES; k++)
			kdb_loo(db, x.hw.gpu, k, &x.loo_n[k], &x.loo_mean[k], &x.loo_med[k]);
		if (json)
			put_json(&x);
		else
			put_text(&x);
	}
	free(x.gs);
	kdb_free(db);
	graph_free(g);
	return rc ? cli_fail(&err) : 0;
}
