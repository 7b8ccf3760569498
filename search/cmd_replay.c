/* cmd_replay.c - `prism replay`: simulate the base graph, compare with the trace. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "build.h"
#include "cli.h"
#include "metrics.h"
#include "sim.h"
#include "timeline.h"

static const char help[] =
    "usage: prism replay [options] TRACE...\n"
    "       prism replay [options] GRAPH\n"
    "\n"
    "Simulate the execution graph of the traced run as it is, and compare each\n"
    "iteration's predicted time with the measured one.  A step's time is the\n"
    "longer of its host side (the ProfilerStep#N span) and its GPU side (from\n"
    "the first GPU task it launched to the first its next step launched; for\n"
    "the last step, to its last GPU task's end): a host that runs ahead of a\n"
    "busy GPU ends its steps early.  Both sides are printed, and a run whose\n"
    "GPU idles over 30% of every step is called host-bound.\n"
    "Without step markers, the span of the GPU work.  Several trace files are\n"
    "the ranks of one job and are simulated together: collectives wait for all\n"
    "their ranks.\n"
    "\n"
    "options:\n"
    "      --json              print the results as JSON\n"
    "      --timeline FILE     write the simulated run as Chrome-trace JSON\n"
    "                          (opens in Perfetto; `prism ingest` reads it back;\n"
    "                          -: standard output, the figures then on stderr)\n"
    "      --no-event-edges    ablation: ignore cross-stream event edges\n"
    "      --no-share-edges    ablation: ignore shared-GPU edges (a task that\n"
    "                          waited while another stream's kernel held the GPU)\n"
    "      --no-inferred-edges ablation: ignore every edge inferred from timing\n"
    "      --no-rendezvous     collectives keep their traced durations\n"
    "  -r, --rank LIST         comma-separated rank of each trace file, in order\n"
    "      --allow-dangling, --no-infer-events, --no-infer-sync, --no-infer-threads,\n"
    "      --no-infer-share, --no-infer-layers, --lag-cap US   as for `prism ingest`\n"
    "  -h, --help              this help\n"
    "\n"
    "Exit status: 0 on success, 2 on bad input, 1 on other failures.\n";

static double pct(int64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

/* A run is called host-bound when its GPU idles more than this share of
 * every step. */
#define HOST_BOUND_IDLE_PCT 30.0

static double err_pct(const struct metrics_iter *it)
{
	return it->measured_ns > 0
		   ? 100.0 * (double)(it->predicted_ns - it->measured_ns) / (double)it->measured_ns
		   : 0.0;
}

static void print_text(const struct sim *s, const struct metrics_iter *its, long n,
		       const struct metrics_path *cp, double secs)
{
	const struct graph *g = s->g;
	double sum = 0, worst = 0, idle = 0;
	long host_bound = 0;

	printf("replay: %" PRIu32 " rank%s, %" PRIu32 " tasks simulated in %.1f ms (%.1f M "
	       "tasks/s)\n\n",
	       g->n_ranks, g->n_ranks == 1 ? "" : "s", g->n_nodes, secs * 1e3,
	       secs > 0 ? g->n_nodes / secs / 1e6 : 0.0);
	printf("%-20s %5s %12s %12s %8s  %10s %10s   %-39s\n", "iteration", "rank", "measured ms",
	       "predicted ms", "error", "host ms", "GPU ms",
	       "exposed compute / exposed comm / overlap / idle");
	for (long i = 0; i < n; i++) {
		const struct metrics_iter *it = &its[i];
		char label[48];
		int64_t w = it->predicted_ns;
		double e = err_pct(it);
		if (it->step >= 0)
			snprintf(label, sizeof(label), "ProfilerStep#%" PRId64, it->step);
		else
			snprintf(label, sizeof(label), "(GPU-active span)");
		printf("%-20s %5" PRId64
		       " %12.3f %12.3f %+7.2f%%  %10.3f %10.3f   %5.1f%% / %5.1f%% / "
		       "%5.1f%% / %5.1f%%\n",
		       label, g->ranks[it->rank].rank, it->measured_ns / 1e6,
		       it->predicted_ns / 1e6, e, it->host_ns / 1e6, it->gpu_ns / 1e6,
		       pct(it->exposed_compute_ns, w), pct(it->exposed_comm_ns, w),
		       pct(it->overlap_ns, w), pct(it->idle_ns, w));
		if (pct(it->idle_ns, w) > HOST_BOUND_IDLE_PCT)
			host_bound++;
		idle += pct(it->idle_ns, w);
		sum += e < 0 ? -e : e;
		if ((e < 0 ? -e : e) > worst)
			worst = e < 0 ? -e : e;
	}
	if (n > 0)
		printf("\nmean |error| %.2f%%, worst %.2f%% over %ld iteration%s\n", sum / n, worst,
		       n, n == 1 ? "" : "s");
	if (n > 0 && host_bound == n && idle / n > HOST_BOUND_IDLE_PCT)
		printf("host-bound: the GPU is idle %.0f%% of every step on average, waiting for "
		       "the host; edits to GPU work show only where they outgrow the host's time\n",
		       idle / n);
	printf("\ncritical path: %.3f ms over %" PRIu32 " tasks:", cp->length_ns / 1e6, cp->n);
	for (int k = 0; k < GN_NKINDS; k++)
		if (cp->by_kind_ns[k])
			printf(" %s %.1f%%", graph_node_kind_name(k),
			       pct(cp->by_kind_ns[k], cp->length_ns));
	if (cp->lag_ns)
		printf(" latency %.1f%%", pct(cp->lag_ns, cp->length_ns));
	printf("\n\nutilisation over the run (%.3f ms):\n", s->makespan_ns / 1e6);
	for (uint32_t p = 0; p < g->n_procs; p++) {
		const struct graph_proc *pr = &g->procs[p];
		printf("  rank %-4" PRId64 " %-6s %" PRId64 "/%-8" PRId64 " %5.1f%%\n",
		       g->ranks[pr->rank].rank, pr->gpu ? "stream" : "thread", pr->pid, pr->tid,
		       100.0 * metrics_utilisation(s, p, 0, s->makespan_ns));
	}
	if (s->n_mismatched)
		printf("\nwarning: %" PRIu32 " collectives matched across ranks (process group and "
		       "sequence) disagree on the collective: they were not made to wait for each "
		       "other\n",
		       s->n_mismatched);
}

static void print_json(const struct sim *s, const struct metrics_iter *its, long n,
		       const struct metrics_path *cp, double secs)
{
	const struct graph *g = s->g;
	printf("{\"ranks\":%" PRIu32 ",\"tasks\":%" PRIu32 ",\"sim_seconds\":%.6f,"
	       "\"makespan_ns\":%" PRId64 ",\"iterations\":[",
	       g->n_ranks, g->n_nodes, secs, s->makespan_ns);
	for (long i = 0; i < n; i++) {
		const struct metrics_iter *it = &its[i];
		printf("%s{\"rank\":%" PRId64 ",\"step\":%" PRId64 ",\"measured_ns\":%" PRId64
		       ",\"predicted_ns\":%" PRId64 ",\"error_pct\":%.4f,\"host_ns\":%" PRId64
		       ",\"gpu_ns\":%" PRId64 ",\"predicted_host_ns\":%" PRId64
		       ",\"predicted_gpu_ns\":%" PRId64 ",\"exposed_compute_ns\":%" PRId64
		       ",\"exposed_comm_ns\":%" PRId64 ",\"overlap_ns\":%" PRId64
		       ",\"idle_ns\":%" PRId64 "}",
		       i ? "," : "", g->ranks[it->rank].rank, it->step, it->measured_ns,
		       it->predicted_ns, err_pct(it), it->host_ns, it->gpu_ns, it->pred_host_ns,
		       it->pred_gpu_ns, it->exposed_compute_ns, it->exposed_comm_ns, it->overlap_ns,
		       it->idle_ns);
	}
	printf("],\"critical_path\":{\"length_ns\":%" PRId64 ",\"tasks\":%" PRIu32
	       ",\"by_kind_ns\":{",
	       cp->length_ns, cp->n);
	for (int k = 0; k < GN_NKINDS; k++)
		printf("%s\"%s\":%" PRId64, k ? "," : "", graph_node_kind_name(k),
		       cp->by_kind_ns[k]);
	printf("},\"lag_ns\":%" PRId64 "},\"utilisation\":[", cp->lag_ns);
	for (uint32_t p = 0; p < g->n_procs; p++)
		printf("%s{\"rank\":%" PRId64 ",\"gpu\":%d,\"pid\":%" PRId64 ",\"tid\":%" PRId64
		       ",\"busy\":%.6f}",
		       p ? "," : "", g->ranks[g->procs[p].rank].rank, g->procs[p].gpu,
		       g->procs[p].pid, g->procs[p].tid,
		       metrics_utilisation(s, p, 0, s->makespan_ns));
	printf("],\"mismatched_collectives\":%" PRIu32 "}\n", s->n_mismatched);
}

int cmd_replay(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"timeline", required_argument, NULL, 't'},
	    {"no-event-edges", no_argument, NULL, 'e'},
	    {"no-inferred-edges", no_argument, NULL, 'i'},
	    {"no-share-edges", no_argument, NULL, 's'},
	    {"no-rendezvous", no_argument, NULL, 'R'},
	    {"help", no_argument, NULL, 'h'},
	    CLI_BUILD_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	struct build_opts bo;
	struct sim_opts so;
	struct prism_err err;
	struct graph *g = NULL;
	struct sim *s = NULL;
	struct metrics_iter *its = NULL;
	struct metrics_path cp = {0};
	const char *timeline = NULL, *ranks = NULL;
	struct cli_parse args;
	struct timespec t0, t1;
	int json = 0, c, rc;
	long n = 0;

	build_opts_default(&bo);
	sim_opts_default(&so);
	prism_err_clear(&err);
	cli_parse_init(&args, "replay", help, "r:h", longopts, &bo, &ranks, "no trace given");
	while ((c = cli_next_option(&args, argc, argv, &err)) >= 0) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 't':
			timeline = optarg;
			break;
		case 'e':
			so.skip |= SIM_SKIP_EVENT;
			break;
		case 'i':
			so.skip |= SIM_SKIP_INFERRED;
			break;
		case 's':
			so.skip |= SIM_SKIP_SHARE;
			break;
		case 'R':
			so.rendezvous = 0;
			break;
		}
	}
	if (c == CLI_PARSE_EXIT)
		return args.status;
	if (cli_stdout_shared(timeline, "--timeline", json ? "--json" : NULL))
		return EXIT_USAGE;
	if (cli_not_input(timeline, "--timeline", argv + optind, argc - optind, &err))
		return cli_fail(&err);
	rc = cli_load_graph(argv + optind, argc - optind, ranks, &bo, &g, &err);
	if (rc == 0 && !(s = sim_new(g)))
		rc = prism_err_set(&err, PRISM_ENOMEM, "out of memory");
	if (rc == 0) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		rc = sim_run(s, &so, &err);
		clock_gettime(CLOCK_MONOTONIC, &t1);
	}
	if (rc == 0 && (n = metrics_iterations(s, &its)) < 0)
		rc = prism_err_set(&err, PRISM_ENOMEM, "out of memory");
	if (rc == 0)
		rc = metrics_critical_path(s, &cp)
			 ? prism_err_set(&err, PRISM_ENOMEM, "out of memory")
			 : 0;
	if (rc == 0 && timeline)
		rc = timeline_write(s, timeline, NULL, &err);
	if (rc == 0 && cli_is_stdout(timeline))
		cli_stdout_taken(); /* the replay's figures after it, on stderr */
	if (rc == 0) {
		double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		if (json)
			print_json(s, its, n, &cp, secs);
		else
			print_text(s, its, n, &cp, secs);
	}
	free(its);
	free(cp.nodes);
	sim_free(s);
	graph_free(g);
	return rc ? cli_fail(&err) : 0;
}
