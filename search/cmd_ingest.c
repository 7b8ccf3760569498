/* cmd_ingest.c - `prism ingest`: traces into a graph, a summary, a cache file. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "cli.h"
#include "cost.h"
#include "imap.h"

static const char help[] =
    "usage: prism ingest [options] TRACE... \n"
    "       prism ingest [options] GRAPH\n"
    "\n"
    "Read PyTorch profiler (Kineto) Chrome-trace files, plain or gzipped, into\n"
    "prism's execution graph and print what was found.  Several files are the\n"
    "ranks of one job; each file's rank comes from its distributedInfo, else\n"
    "from --rank, else from its position on the command line.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE     save the graph to FILE (a versioned binary file that\n"
    "                        every prism command accepts instead of the traces;\n"
    "                        -: standard output, the summary then on stderr)\n"
    "  -r, --rank LIST       comma-separated rank of each trace file, in order\n"
    "      --json            print the summary as JSON\n"
    "      --unexplained N   list the N tasks that waited longest beyond the lag\n"
    "                        cap after their last dependency: where the trace\n"
    "                        waited on something the graph does not show\n"
    "      --allow-dangling  place GPU work whose launch call is missing from\n"
    "                        the window instead of failing\n"
    "      --no-infer-events   no cross-stream edges inferred (from the host's call\n"
    "                          order or from timing)\n"
    "      --no-infer-sync     no stream/event-sync sources inferred from timing\n"
    "      --no-infer-threads  no cross-thread edges inferred from timing\n"
    "      --no-infer-share    no shared-GPU edges inferred from timing (a task\n"
    "                          that waited while another stream's kernel ran)\n"
    "      --no-infer-layers   no layers inferred from repeated op sequences\n"
    "                          (without prism::layer ranges: none at all)\n"
    "      --lag-cap US        keep at most US microseconds of a task's traced\n"
    "                          start lag after its dependencies (default 50)\n"
    "  -h, --help            this help\n"
    "\n"
    "Annotations: layers, phases and microbatches come from the trace's\n"
    "prism:: ranges (scripts/collect_trace.py, prism synth).  Without them,\n"
    "phases come from PyTorch's own ranges and backward ops; a step with\n"
    "several backward passes (forward work between them) has as many\n"
    "microbatches; layers come from module names where the profile recorded\n"
    "them (with_stack and with_modules: \"nn.Module: LlamaDecoderLayer_3\", the\n"
    "Layer or Block class with the most instances: Hugging Face, Megatron core,\n"
    "torchtitan, DeepSpeed), else are inferred: the longest run of identical\n"
    "op blocks (names and shapes) in each microbatch's forward; backward ops\n"
    "follow their forward op's autograd sequence number.  The summary says\n"
    "which, and the coverage.\n"
    "\n"
    "Exit status: 0 on success, 2 on bad input (one line names the file, the\n"
    "byte offset or event index, and the field), 1 on other failures.\n";

/* Count and traced GPU time of each kernel class (zeros if out of memory). */
static void class_totals(const struct graph *g, uint64_t *count, int64_t *ns)
{
	uint8_t *cls = prism_malloc(g->n_nodes ? g->n_nodes : 1);
	for (int k = 0; k < KC_NCLASSES; k++)
		count[k] = 0, ns[k] = 0;
	if (!cls || cost_classify_all(g, cls)) {
		free(cls);
		return;
	}
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		if (g->kind[u] < GN_KERNEL)
			continue;
		count[cls[u]]++;
		ns[cls[u]] = prism_add_sat(ns[cls[u]], g->dur_ns[u]);
	}
	free(cls);
}

/* How much of the GPU work the annotations cover. */
struct ann_cov {
	uint64_t gpu, layer, phase, mb;
	int n_layers, n_mb; /* distinct values: max + 1 */
};

static void ann_coverage(const struct graph *g, struct ann_cov *a)
{
	memset(a, 0, sizeof(*a));
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		if (g->kind[u] < GN_KERNEL)
			continue;
		a->gpu++;
		a->layer += g->layer[u] >= 0;
		a->phase += g->phase[u] != PH_NONE;
		a->mb += g->mb[u] >= 0;
		if (g->layer[u] + 1 > a->n_layers)
			a->n_layers = g->layer[u] + 1;
		if (g->mb[u] + 1 > a->n_mb)
			a->n_mb = g->mb[u] + 1;
	}
}

/* How an annotation kind was found (graph_stats.ann_found): for JSON and
 * for people. */
static const char *const ann_key[] = {"none", "ranges", "inferred", "mixed"};
static const char *const ann_text[] = {"none", "from prism:: ranges", "inferred",
				       "ranges on some ranks, inferred on others"};

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

static void print_text(const struct graph *g)
{
	const struct graph_stats *s = &g->stats;
	uint32_t ncpu = 0, ngpu = 0;

	for (uint32_t p = 0; p < g->n_procs; p++)
		g->procs[p].gpu ? ngpu++ : ncpu++;
	printf("job: %" PRIu32 " rank%s, %" PRIu32 " processors (%" PRIu32 " CPU thread%s, %" PRIu32
	       " GPU stream%s), %" PRIu32 " nodes, %" PRIu32 " edges\n",
	       g->n_ranks, g->n_ranks == 1 ? "" : "s", g->n_procs, ncpu, ncpu == 1 ? "" : "s", ngpu,
	       ngpu == 1 ? "" : "s", g->n_nodes, g->n_edges);
	printf("\ninputs:\n");
	for (uint32_t r = 0; r < g->n_ranks; r++) {
		const struct graph_rank *rk = &g->ranks[r];
		printf("  rank %-4" PRId64 " %s\n", rk->rank, strtab_get(&g->st, rk->path));
		printf("            %" PRIu64 " events (%" PRIu64 " complete, %" PRIu64
		       " instant, %" PRIu64 " flow, %" PRIu64 " metadata), %.1f MB JSON",
		       rk->n_events, rk->n_complete, rk->n_instant, rk->n_flow, rk->n_meta,
		       (double)rk->json_bytes / 1e6);
		if (rk->device && strtab_get(&g->st, rk->device)[0])
			printf(", %s", strtab_get(&g->st, rk->device));
		if (rk->world_size)
			printf(", world size %" PRId64, rk->world_size);
		printf("\n");
	}
	printf("\nprocessors:\n");
	for (uint32_t p = 0; p < g->n_procs; p++) {
		const struct graph_proc *pr = &g->procs[p];
		printf("  rank %-4" PRId64 " %-6s %" PRId64 "/%" PRId64 "  %" PRIu32 " nodes\n",
		       g->ranks[pr->rank].rank, pr->gpu ? "stream" : "thread", pr->pid, pr->tid,
		       pr->n);
	}
	printf("\nnodes:\n");
	for (int k = 0; k < GN_NKINDS; k++)
		printf("  %-12s %10" PRIu64 "\n", graph_node_kind_name(k), s->nodes[k]);
	printf("\nedges:        %10s %10s\n", "exact", "inferred");
	for (int k = 0; k < GE_NKINDS; k++)
		printf("  %-12s %10" PRIu64 " %10" PRIu64 "\n", graph_edge_kind_name(k),
		       s->edges[k], s->inferred[k]);
	if (s->waits_by_position || s->waits_position_contradicted)
		printf("  stream waits paired by position: %" PRIu64
		       " cudaStreamWaitEvent calls with no cuda_sync record\n"
		       "  (the trace names no event: enable_cuda_sync_events records it) waited, "
		       "by the\n  host's call order, for the work before their thread's latest "
		       "cudaEventRecord;\n  %" PRIu64
		       " of those pairs the timing contradicts, left out (a wait on an event\n"
		       "  recorded earlier, as FSDP2's gathers)\n",
		       s->waits_by_position + s->waits_position_contradicted,
		       s->waits_position_contradicted);
	{
		uint64_t cnt[KC_NCLASSES];
		int64_t ns[KC_NCLASSES], all = 0;
		class_totals(g, cnt, ns);
		for (int k = 0; k < KC_NCLASSES; k++)
			all = prism_add_sat(all, ns[k]);
		printf("\nGPU time by kernel class:\n");
		for (int k = 0; k < KC_NCLASSES; k++)
			if (cnt[k])
				printf("  %-12s %8" PRIu64 " tasks %12.3f ms %6.1f%%\n",
				       cost_class_name(k), cnt[k], ns[k] / 1e6,
				       all ? 100.0 * ns[k] / all : 0.0);
	}
	printf("\nruntime calls by class:\n");
	for (int k = 0; k < RT_NCLASSES; k++)
		if (s->rt_class[k])
			printf("  %-18s %10" PRIu64 "\n", graph_rt_class_name(k), s->rt_class[k]);
	printf("\niterations:\n");
	if (g->n_iters == 0)
		printf("  none (no ProfilerStep#N ranges)\n");
	for (uint32_t i = 0; i < g->n_iters; i++)
		printf("  rank %-4" PRId64 " ProfilerStep#%-6" PRId64 " %12.3f ms\n",
		       g->ranks[g->iters[i].rank].rank, g->iters[i].step,
		       (double)g->iters[i].dur_ns / 1e6);
	{
		struct ann_cov a;
		ann_coverage(g, &a);
		printf("\nannotations (share of the %" PRIu64 " GPU tasks, and how found):\n",
		       a.gpu);
		printf("  layer       %5.1f %%  %d layers, %s", pct(a.layer, a.gpu), a.n_layers,
		       ann_text[s->ann_found[GRAPH_ANN_LAYER] & 3]);
		if (s->ann_found[GRAPH_ANN_LAYER] & GRAPH_ANN_MODULES)
			printf(" (from module names, nn.Module: ...Layer_N / ...Block_N)");
		else if (s->ann_found[GRAPH_ANN_LAYER] & GRAPH_ANN_INFERRED)
			printf(" (blocks of %" PRIu64 " ops)", s->layer_ops);
		printf("\n  phase       %5.1f %%  %s\n", pct(a.phase, a.gpu),
		       ann_text[s->ann_found[GRAPH_ANN_PHASE] & 3]);
		printf("  microbatch  %5.1f %%  %d microbatches, %s\n", pct(a.mb, a.gpu), a.n_mb,
		       ann_text[s->ann_found[GRAPH_ANN_MB] & 3]);
		if (a.layer == 0)
			printf("  no layers found: --layers edits need prism::layer ranges "
			       "(scripts/collect_trace.py), module names (with_modules) or "
			       "repeated op blocks\n");
		if (g->meta)
			printf("  run: %s\n", strtab_get(&g->st, g->meta) + 13);
	}
	printf("\ncollectives:\n");
	if (g->n_colls == 0)
		printf("  none\n");
	for (int k = 0; k < GC_NKINDS; k++) {
		uint64_t sized = 0, bytes = 0;
		if (!s->colls[k])
			continue;
		for (uint32_t c = 0; c < g->n_colls; c++)
			if (g->colls[c].kind == k && g->colls[c].bytes >= 0) {
				sized++;
				bytes = (uint64_t)prism_add_sat((int64_t)bytes, g->colls[c].bytes);
			}
		printf("  %-16s %6" PRIu64 "  (%" PRIu64 " with sizes, %.3f MB in all)\n",
		       graph_coll_kind_name(k), s->colls[k], sized, (double)bytes / 1e6);
	}
	printf("\nnot placed as nodes, or placed with a caveat:\n");
	printf("  launch calls without GPU work in the window   %10" PRIu64 "\n", s->launch_no_gpu);
	printf("  GPU work launched before the window          %10" PRIu64 "\n", s->gpu_no_launch);
	printf("  runtime calls nested in another (merged)      %10" PRIu64 "\n",
	       s->nested_runtime);
	printf("  runtime calls overlapping the previous one    %10" PRIu64 "\n",
	       s->clipped_runtime);
	printf("  runtime calls without an enclosing CPU op     %10" PRIu64 "\n", s->rt_no_op);
	printf("  blocking calls with nothing found to wait on  %10" PRIu64 "\n", s->sync_no_wait);
	printf("  recorded dependencies the timing contradicts  %10" PRIu64 "\n", s->dropped_edges);
	printf("  tasks starting > %.0f us after their dependencies %10" PRIu64
	       " (%.3f ms unexplained)\n",
	       s->lag_cap_ns / 1e3, s->lag_capped, s->lag_capped_ns / 1e6);
	printf("  CUDA graph tasks keeping a lag over the cap   %10" PRIu64 " (%.3f ms kept)\n",
	       s->graph_gaps, s->graph_gap_ns / 1e6);
	printf("  cuda_sync records used / unused               %10" PRIu64 " / %" PRIu64 "\n",
	       s->cuda_sync_used, s->cuda_sync_unused);
	printf("  stream waits paired by cuda_sync / position   %10" PRIu64 " / %" PRIu64
	       " (%" PRIu64 " more by position the timing contradicts, left out)\n",
	       s->waits_exact, s->waits_by_position, s->waits_position_contradicted);
	printf("  host threads without runtime calls            %10" PRIu64 "\n", s->idle_threads);
	printf("  annotation events (ops, ranges)               %10" PRIu64 "\n", s->annotations);
	printf("  other events (flows, instants, metadata, ...) %10" PRIu64 "\n", s->other_events);
}

/* Distinct correlation ids of rank r's GPU work, and of those whose launch
 * call is in the window (a cudaGraphLaunch id owns many GPU tasks). */
static void gpu_corr_ids(const struct graph *g, uint32_t r, uint64_t *ids, uint64_t *launched)
{
	struct imap all = {0}, hit = {0};

	*ids = *launched = 0;
	for (uint32_t p = 0; p < g->n_procs; p++) {
		if (g->procs[p].rank != r)
			continue;
		for (uint32_t u = g->procs[p].first; u < g->procs[p].first + g->procs[p].n; u++) {
			uint32_t old;
			if (g->procs[p].gpu && imap_put(&all, g->corr[u], 1, &old) == 0 &&
			    old == IMAP_NONE)
				(*ids)++;
			for (uint32_t e = g->out_off[u]; e < g->out_off[u + 1]; e++)
				if (GE_KIND(g->out_kind[e]) == GE_LAUNCH &&
				    imap_put(&hit, g->corr[g->out_dst[e]], 1, &old) == 0 &&
				    old == IMAP_NONE)
					(*launched)++;
		}
	}
	imap_release(&all);
	imap_release(&hit);
}

/* ,"key":{"name0":v0,...} for the n counts of a kind enumeration. */
static void put_counts(const char *key, const char *(*name)(int), const uint64_t *v, int n)
{
	printf(",\"%s\":{", key);
	for (int k = 0; k < n; k++)
		printf("%s\"%s\":%" PRIu64, k ? "," : "", name(k), v[k]);
	printf("}");
}

static void put_count(const char *key, uint64_t v)
{
	printf(",\"%s\":%" PRIu64, key, v);
}

static void print_json(const struct graph *g)
{
	const struct graph_stats *s = &g->stats;

	printf("{\"ranks\":[");
	for (uint32_t r = 0; r < g->n_ranks; r++) {
		const struct graph_rank *rk = &g->ranks[r];
		printf("%s{\"rank\":%" PRId64 ",\"path\":", r ? "," : "", rk->rank);
		prism_fput_json_str(stdout, strtab_get(&g->st, rk->path));
		printf(",\"device\":");
		prism_fput_json_str(stdout, strtab_get(&g->st, rk->device));
		printf(",\"world_size\":%" PRId64 ",\"json_bytes\":%" PRIu64 ",\"events\":%" PRIu64
		       ",\"complete\":%" PRIu64 ",\"instant\":%" PRIu64 ",\"flow\":%" PRIu64
		       ",\"meta\":%" PRIu64 ",\"cuda_sync\":%" PRIu64 ",\"streams\":[",
		       rk->world_size, rk->json_bytes, rk->n_events, rk->n_complete, rk->n_instant,
		       rk->n_flow, rk->n_meta, rk->n_cuda_sync);
		for (uint32_t p = 0, first = 1; p < g->n_procs; p++) {
			if (g->procs[p].rank != r || !g->procs[p].gpu)
				continue;
			printf("%s\"%" PRId64 "/%" PRId64 "\"", first ? "" : ",", g->procs[p].pid,
			       g->procs[p].tid);
			first = 0;
		}
		{
			uint64_t ids, launched;
			gpu_corr_ids(g, r, &ids, &launched);
			printf("],\"gpu_corr_ids\":%" PRIu64 ",\"gpu_corr_ids_launched\":%" PRIu64,
			       ids, launched);
		}
		printf(",\"steps\":[");
		for (uint32_t i = 0, first = 1; i < g->n_iters; i++) {
			if (g->iters[i].rank != r)
				continue;
			printf("%s[%" PRId64 ",%" PRId64 ",%" PRId64 "]", first ? "" : ",",
			       g->iters[i].step, g->iters[i].start_ns + g->t0_ns,
			       g->iters[i].dur_ns);
			first = 0;
		}
		printf("]}");
	}
	printf("],\"processors\":%" PRIu32, g->n_procs);
	put_counts("nodes", graph_node_kind_name, s->nodes, GN_NKINDS);
	put_counts("edges", graph_edge_kind_name, s->edges, GE_NKINDS);
	put_counts("inferred_edges", graph_edge_kind_name, s->inferred, GE_NKINDS);
	put_counts("runtime_calls", graph_rt_class_name, s->rt_class, RT_NCLASSES);
	put_counts("collectives", graph_coll_kind_name, s->colls, GC_NKINDS);
	put_counts("collective_kernels", graph_coll_kind_name, s->coll_kernels, GC_NKINDS);
	{
		/* Communication by other libraries' kernels (DeepEP, symmetric
		 * memory, custom all-reduces): among the collectives. */
		uint64_t other = 0;
		for (uint32_t u = 0; u < g->n_nodes; u++)
			if ((g->kind[u] == GN_COLL || g->kind[u] == GN_P2P) &&
			    strncmp(strtab_get(&g->st, g->name[u]), "nccl", 4) != 0)
				other++;
		printf(",\"comm_kernels_not_nccl\":%" PRIu64, other);
	}
	{
		uint64_t cnt[KC_NCLASSES];
		int64_t ns[KC_NCLASSES];
		class_totals(g, cnt, ns);
		printf(",\"kernel_classes\":{");
		for (int k = 0; k < KC_NCLASSES; k++)
			printf("%s\"%s\":{\"tasks\":%" PRIu64 ",\"ns\":%" PRId64 "}", k ? "," : "",
			       cost_class_name(k), cnt[k], ns[k]);
		printf("}");
	}
	put_count("launch_no_gpu", s->launch_no_gpu);
	put_count("gpu_no_launch", s->gpu_no_launch);
	put_count("nested_runtime", s->nested_runtime);
	put_count("clipped_runtime", s->clipped_runtime);
	put_count("rt_no_op", s->rt_no_op);
	put_count("sync_no_wait", s->sync_no_wait);
	put_count("dropped_edges", s->dropped_edges);
	put_count("lag_capped", s->lag_capped);
	printf(",\"lag_capped_ns\":%" PRId64, s->lag_capped_ns);
	put_count("graph_gaps", s->graph_gaps);
	printf(",\"graph_gap_ns\":%" PRId64, s->graph_gap_ns);
	put_count("cuda_sync_used", s->cuda_sync_used);
	put_count("cuda_sync_unused", s->cuda_sync_unused);
	put_count("waits_exact", s->waits_exact);
	put_count("waits_by_position", s->waits_by_position);
	put_count("waits_position_contradicted", s->waits_position_contradicted);
	put_count("idle_threads", s->idle_threads);
	put_count("annotations", s->annotations);
	put_count("other_events", s->other_events);
	{
		struct ann_cov a;
		ann_coverage(g, &a);
		printf(",\"coverage\":{\"gpu_tasks\":%" PRIu64 ",\"layer\":%" PRIu64
		       ",\"phase\":%" PRIu64 ",\"microbatch\":%" PRIu64 ",\"layers\":%d,"
		       "\"microbatches\":%d,\"layer_source\":\"%s\",\"phase_source\":\"%s\","
		       "\"microbatch_source\":\"%s\",\"layer_ops\":%" PRIu64 "}",
		       a.gpu, a.layer, a.phase, a.mb, a.n_layers, a.n_mb,
		       s->ann_found[GRAPH_ANN_LAYER] == (GRAPH_ANN_INFERRED | GRAPH_ANN_MODULES)
			   ? "modules"
			   : ann_key[s->ann_found[GRAPH_ANN_LAYER] & 3],
		       ann_key[s->ann_found[GRAPH_ANN_PHASE] & 3],
		       ann_key[s->ann_found[GRAPH_ANN_MB] & 3], s->layer_ops);
		printf(",\"run\":");
		prism_fput_json_str(stdout, g->meta ? strtab_get(&g->st, g->meta) + 13 : "");
	}
	printf("}\n");
}

/* The n tasks whose traced start lag after their last dependency most
 * exceeds the cap (what the replay cannot explain), longest first, with
 * the dependency that released them last.  CUDA graph tasks keep their
 * lag whole and are left out. */
static int print_unexplained(const struct graph *g, int n)
{
	int64_t *ready = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*ready));
	uint32_t *by = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*by));
	uint32_t *top = prism_calloc((size_t)n, sizeof(*top));
	int64_t cap = g->stats.lag_cap_ns;
	int k = 0;

	if (!ready || !by || !top) {
		free(ready), free(by), free(top);
		fprintf(stderr, "prism ingest: out of memory\n");
		return 1;
	}
	graph_ready(g, 0, ready, by);
#define LAG(u) (g->start_ns[u] - ready[u])
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		if (by[u] == UINT32_MAX || g->kind[u] == GN_WAIT ||
		    (g->flags[u] & (NF_ANCHORED | NF_GRAPH | NF_STAGED)) || LAG(u) <= cap)
			continue;
		if (k == n && LAG(u) <= LAG(top[n - 1]))
			continue;
		int i = k < n ? k++ : n - 1; /* insert into the top n, longest first */
		while (i > 0 && LAG(top[i - 1]) < LAG(u)) {
			top[i] = top[i - 1];
			i--;
		}
		top[i] = u;
	}
	printf("\ntasks that waited longest after their last dependency, over the %.0f us "
	       "lag cap\n(traced start from the job's start, wait, task; then the dependency):\n",
	       cap / 1e3);
	for (int i = 0; i < k; i++) {
		uint32_t u = top[i], d = by[u];
		const struct graph_proc *pu = &g->procs[g->proc[u]], *pd = &g->procs[g->proc[d]];
		printf("  %10.3f ms  waited %9.1f us  rank %" PRId64 " %s %" PRId64 "  %.60s\n"
		       "%29safter %s %" PRId64 "  %.60s\n",
		       g->start_ns[u] / 1e6, LAG(u) / 1e3, g->ranks[pu->rank].rank,
		       pu->gpu ? "stream" : "thread", pu->tid, strtab_get(&g->st, g->name[u]), "",
		       pd->gpu ? "stream" : "thread", pd->tid, strtab_get(&g->st, g->name[d]));
	}
	if (!k)
		printf("  none\n");
#undef LAG
	free(ready), free(by), free(top);
	return 0;
}

int cmd_ingest(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"json", no_argument, NULL, 'j'},
	    {"unexplained", required_argument, NULL, 'U'},
	    {"help", no_argument, NULL, 'h'},
	    CLI_BUILD_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	struct build_opts o;
	struct prism_err err;
	struct cli_parse args;
	struct graph *g = NULL;
	const char *out = NULL, *ranks = NULL;
	int json = 0, unexplained = 0, c, rc;

	build_opts_default(&o);
	prism_err_clear(&err);
	/* No trace is said after a --json --unexplained clash, below. */
	cli_parse_init(&args, "ingest", help, "o:r:h", longopts, &o, &ranks, NULL);
	while ((c = cli_next_option(&args, argc, argv, &err)) >= 0) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'U':
			if (cli_count(optarg, "unexplained", 1, 100000, &unexplained, &err))
				return cli_fail(&err);
			break;
		}
	}
	if (c == CLI_PARSE_EXIT)
		return args.status;
	if (json && unexplained) {
		fprintf(stderr, "prism: --unexplained lists in text; give it without --json\n");
		return EXIT_USAGE;
	}
	if (optind >= argc) {
		fprintf(stderr, "prism ingest: no trace given\n%s", help);
		return EXIT_USAGE;
	}
	/* cli_load_graph checks the graph: build_graph and graph_load both
	 * run graph_check before they hand a graph out. */
	if (cli_not_input(out, "-o", argv + optind, argc - optind, &err))
		return cli_fail(&err);
	rc = cli_load_graph(argv + optind, argc - optind, ranks, &o, &g, &err);
	if (rc == 0 && out)
		rc = graph_save(g, out, &err);
	if (rc != 0) {
		graph_free(g);
		return cli_fail(&err);
	}
	if (cli_is_stdout(out))
		cli_stdout_taken(); /* the summary after it, on stderr */
	if (json)
		print_json(g);
	else {
		print_text(g);
		if (unexplained)
			rc = print_unexplained(g, unexplained);
		if (out)
			printf("\ngraph saved to %s\n", out);
	}
	graph_free(g);
	return 0;
}
