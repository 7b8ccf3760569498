/* cmd_whatif.c - `prism whatif`: one candidate layout against the base. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "calib.h"
#include "cli.h"
#include "usage.h"
#include "edit.h"
#include "metrics.h"
#include "predict.h"
#include "show.h"
#include "sim.h"
#include "timeline.h"

static const char help[] =
	"usage: prism whatif BASE [options]\n"
	"\n"
	"Predict one candidate layout from a base run.  BASE is a model (a file or a\n"
	"name in configs/models/), a trace (or the traces of a job's ranks), or a\n"
	"saved graph.  The options below give what differs from the base; the rest\n"
	"stays as it was.\n"
	"\n"
	"  - A model is synthesised at both configurations (needs --hw).\n"
	"  - A trace with prism:: layer ranges and a run description (written by\n"
	"    `prism synth` and scripts/collect_trace.py) is rebuilt at the candidate's\n"
	"    configuration with kernel times calibrated, class by class, on its own\n"
	"    layers, and host costs measured on it.\n"
	"  - Any other trace takes --dp, --layers and --hw edits: --layers must be a\n"
	"    multiple of the layers found (prism::layer ranges, else inferred from\n"
	"    repeated op sequences; `prism ingest` shows them), whose tasks are\n"
	"    repeated; the rest is kept and re-timed (collectives of the\n"
	"    data-parallel group through the communication model; kernels by\n"
	"    FLOP/s or bandwidth on another GPU).\n"
	"  With no change, the candidate is the base and the prediction its replay.\n"
	"\n"
	"options:\n"
	"      --hw HW             the candidate's hardware (default: the base's)\n"
	"      --base-hw HW        the base's hardware, when the trace does not say\n"
	"      --base-dp N         the base's data-parallel degree (default: the\n"
	"                          trace's world size)\n"
	"      --db FILE           kernel times from this kernel database (prism\n"
	"                          calibrate --db) where it holds the GPU and size\n"
	"      --timeline FILE     write the candidate's simulated run (Perfetto)\n"
	"      --json              print the prediction as JSON\n"
	"  -h, --help              this help\n"
	"  and the trace options of `prism ingest` (--rank, --allow-dangling, ...)\n";

/* Replay g; its iteration time (metrics_step_time). */
static int replay_time(const struct graph *g, const char *timeline, double *t,
		       struct prism_err *err)
{
	struct sim *s = sim_new(g);
	struct sim_opts o;
	struct metrics_iter *its = NULL;
	long n;
	int rc;

	if (!s)
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	sim_opts_default(&o);
	rc = sim_run(s, &o, err);
	if (rc == 0 && (n = metrics_iterations(s, &its)) < 0)
		rc = prism_err_set(err, PRISM_ENOMEM, "out of memory");
	if (rc == 0)
		*t = metrics_step_time(its, n);
	if (rc == 0 && timeline)
		rc = timeline_write(s, timeline, NULL, err);
	free(its);
	sim_free(s);
	return rc;
}

static int is_model(const char *arg)
{
	size_t n = strlen(arg);
	char path[1024];
	if (n > 4 && strcmp(arg + n - 4, ".cfg") == 0)
		return 1;
	return !strchr(arg, '/') && cli_find_config("models", arg, path, sizeof(path)) == 0 &&
	       strcmp(path, arg) != 0;
}

static void print_pair(const struct synth_in *base, double base_s, const struct synth_in *in,
		       const struct predict_out *p, const char *how, int json)
{
	if (json) {
		printf("{\"method\":\"%s\",\"base_iteration_s\":%.9f,\"speedup\":%.6f,", how, base_s,
		       p->iter_s > 0 ? base_s / p->iter_s : 0);
		show_prediction_json(stdout, in, p);
		printf("}\n");
		return;
	}
	printf("base       ");
	if (base)
		show_layout(stdout, base);
	else
		printf("the trace as recorded");
	printf("\n           %.3f ms per iteration\n", base_s * 1e3);
	printf("method     %s\n\n", how);
	show_prediction(stdout, in, p);
	printf("\nchange     %+.1f %% iteration time against the base\n",
	       base_s > 0 ? (p->iter_s / base_s - 1) * 100 : 0);
}

static int same_config(const struct synth_in *a, const struct synth_in *b)
{
	return a->m.layers == b->m.layers && a->m.hidden == b->m.hidden &&
	       a->m.heads == b->m.heads && a->m.ffn == b->m.ffn && a->m.seq == b->m.seq &&
	       a->lay.tp == b->lay.tp && a->lay.pp == b->lay.pp && a->lay.dp == b->lay.dp &&
	       a->lay.vp == b->lay.vp && a->lay.mbs == b->lay.mbs &&
	       a->lay.microbatches == b->lay.microbatches && a->lay.schedule == b->lay.schedule &&
	       a->lay.recompute == b->lay.recompute && a->lay.sp == b->lay.sp &&
	       a->lay.zero == b->lay.zero && a->lay.flash == b->lay.flash && a->dtype == b->dtype &&
	       a->fp8_attention == b->fp8_attention && synth_same_placement(a, b) &&
	       a->hw == b->hw;
}

/* The candidate from a rebuilt model; timeline if asked. */
static int predict_write(const struct synth_in *in, struct predict_out *p, const char *timeline,
			 char *const *inputs, int n_inputs, struct prism_err *err)
{
	struct graph *g = NULL;
	struct synth_out so;
	int rc = predict_synth(in, p, timeline ? &g : NULL, timeline ? &so : NULL, err);
	if (rc == 0 && timeline) {
		rc = cli_write_trace(g, &so, timeline, inputs, n_inputs, err);
		graph_free(g);
		synth_out_free(&so);
	}
	return rc;
}

int cmd_whatif(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"hw", required_argument, NULL, 'w'},
		{"base-hw", required_argument, NULL, 'W'},
		{"base-dp", required_argument, NULL, 'B'},
		{"timeline", required_argument, NULL, 't'},
		{"db", required_argument, NULL, 'D'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		CLI_BUILD_LONGOPTS,
		CLI_LAYOUT_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	struct synth_in opt, base, cand;
	struct hw_profile hw_base, hw_cand;
	struct build_opts bo;
	struct prism_err err;
	struct predict_out p;
	struct graph *g = NULL;
	const char *hw_name = NULL, *base_hw_name = NULL, *timeline = NULL, *ranks = NULL;
	const char *db_path = NULL;
	struct kdb *db = NULL;
	unsigned given = 0;
	int json = 0, c, rc = 0, base_dp = 0;
	double base_s = 0;

	build_opts_default(&bo);
	prism_err_clear(&err);
	synth_in_default(&opt);
	optind = 1;
	while ((c = getopt_long(argc, argv, "r:h", longopts, NULL)) != -1) {
		int used = cli_layout_option(c, optarg, &opt, &given, &err);
		if (used == 0)
			used = cli_build_option(c, optarg, &bo, &ranks, &err);
		if (used < 0)
			return cli_fail(&err);
		if (used)
			continue;
		switch (c) {
		case 'w': hw_name = optarg; break;
		case 'W': base_hw_name = optarg; break;
		case 'B':
			if (cli_count(optarg, "base-dp", 1, 1 << 20, &base_dp, &err))
				return cli_fail(&err);
			break;
		case 't': timeline = optarg; break;
		case 'D': db_path = optarg; break;
		case 'j': json = 1; break;
		case 'h':
			fputs(help, stdout);
			fputs(cli_layout_help, stdout);
			return 0;
		default: return usage_bad_option("whatif", "r:h", longopts, argv);
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "prism whatif: no BASE given\n%s", help);
		return EXIT_USAGE;
	}
	/* The timeline (or its first rank's file) is no input; the others are
	 * checked where they are named (cli_write_trace). */
	if (cli_not_input(timeline, "--timeline", argv + optind, argc - optind, &err) ||
	    (db_path && cli_load_kdb(db_path, &db, &err)))
		return cli_fail(&err);
	synth_in_default(&base);
	base.kdb = db;
	memset(&p, 0, sizeof(p));

	/* A model: synthesise both. */
	if (argc - optind == 1 && is_model(argv[optind])) {
		if (!hw_name && !base_hw_name) {
			fprintf(stderr, "prism whatif: a model BASE needs --hw\n");
			kdb_free(db);
			return EXIT_USAGE;
		}
		if ((rc = cli_load_model(argv[optind], &base.m, &err)) ||
		    (rc = cli_load_hw(base_hw_name ? base_hw_name : hw_name, &hw_base, &err)) ||
		    (rc = cli_load_hw(hw_name ? hw_name : base_hw_name, &hw_cand, &err)))
			goto fail;
		base.hw = &hw_base;
		cand = base;
		if ((rc = cli_layout_apply(&opt, given, &cand, &err)))
			goto fail;
		cand.hw = &hw_cand;
		if ((rc = predict_synth(&base, &p, NULL, NULL, &err)))
			goto fail;
		base_s = p.iter_s;
		{
			char mpath[1024], *inputs[1] = {mpath};
			if (cli_find_config("models", argv[optind], mpath, sizeof(mpath)))
				mpath[0] = '\0';
			if ((rc = predict_write(&cand, &p, timeline, inputs, 1, &err)))
				goto fail;
		}
		print_pair(&base, base_s, &cand, &p, "both synthesised from the model", json);
		kdb_free(db);
		return 0;
	}

	if ((rc = cli_load_graph(argv + optind, argc - optind, ranks, &bo, &g, &err)))
		goto fail;
	if (g->meta) {
		/* An annotated run: its description gives the base configuration;
		 * a changed one is rebuilt with the costs fitted on the base. */
		int same;
		if ((rc = cli_base(g, base_hw_name, &hw_base, &base, &err)))
			goto fail;
		base.kdb = db;
		if ((rc = cli_load_hw(hw_name ? hw_name : hw_base.id, &hw_cand, &err)))
			goto fail;
		cand = base;
		if ((rc = cli_layout_apply(&opt, given, &cand, &err)))
			goto fail;
		cand.hw = hw_name && strcmp(hw_cand.id, hw_base.id) != 0 ? &hw_cand : &hw_base;
		same = same_config(&base, &cand);
		if ((rc = replay_time(g, same ? timeline : NULL, &base_s, &err)))
			goto fail;
		if (same) {
			predict_derive(&cand, base_s, &p);
			p.tasks = g->n_nodes;
			print_pair(&base, base_s, &cand, &p, "identity: the base's own replay", json);
		} else {
			if ((rc = cli_fit(g, &base, &cand, &err)))
				goto fail;
			/* On another GPU the roofline uses its peaks and the scale
			 * keeps the efficiency measured on the base: compute-bound
			 * kernels move with FLOP/s, memory-bound ones with bandwidth. */
			if ((rc = predict_write(&cand, &p, timeline, argv + optind, argc - optind,
						&err)))
				goto fail;
			print_pair(&base, base_s, &cand, &p,
				   "rebuilt from the base's layers (kernel times calibrated on them)",
				   json);
		}
		graph_free(g);
		kdb_free(db);
		return 0;
	}

	/* A plain trace: repeat its layers, re-time a clone. */
	if (given & ~(CLI_SET(CLI_OPT_DP) | CLI_SET(CLI_OPT_STEPS) | CLI_SET(CLI_OPT_LAYERS))) {
		rc = prism_err_set(&err, PRISM_EARG,
				   "%s: no run description in the trace (prism::model#), so only "
				   "--dp, --layers and --hw edits apply (record with "
				   "scripts/collect_trace.py for the others)",
				   argv[optind]);
		goto fail;
	}
	{
		struct edit_retime r;
		struct edit_stats st;
		struct edit_layer_stats ls;
		struct graph *cg = NULL;
		const char *gpu = g->n_ranks ? strtab_get(&g->st, g->ranks[0].device) : "";
		char found[1024];
		int layers = 0, k = 1;
		memset(&ls, 0, sizeof(ls));
		for (uint32_t u = 0; u < g->n_nodes; u++)
			if (g->layer[u] + 1 > layers)
				layers = g->layer[u] + 1;
		if (given & CLI_SET(CLI_OPT_LAYERS)) {
			if (layers == 0 || opt.m.layers % layers != 0) {
				rc = prism_err_set(
					&err, PRISM_EARG,
					layers ? "%s: %d layers found in the trace; without a run "
						 "description --layers must be a multiple of %d (the "
						 "found blocks are repeated)"
					       : "%s: no layers found in the trace (no prism::layer "
						 "ranges, no repeated op sequence): --layers does not "
						 "apply",
					argv[optind], layers, layers);
				goto fail;
			}
			k = opt.m.layers / layers;
		}
		if (!base_hw_name) {
			base_hw_name = calib_profile_for(gpu, (double)g->ranks[0].device_mem);
			if (!base_hw_name || cli_find_config("hw", base_hw_name, found, sizeof(found))) {
				rc = prism_err_set(&err, PRISM_EARG,
						   "no hardware profile for the trace's GPU '%s': give "
						   "one with --base-hw",
						   gpu);
				goto fail;
			}
			base_hw_name = found;
		}
		if ((rc = cli_load_hw(base_hw_name, &hw_base, &err)) ||
		    (rc = cli_load_hw(hw_name ? hw_name : base_hw_name, &hw_cand, &err)))
			goto fail;
		if ((rc = replay_time(g, NULL, &base_s, &err)))
			goto fail;
		memset(&r, 0, sizeof(r));
		r.from = &hw_base;
		r.to = hw_name && strcmp(hw_cand.id, hw_base.id) != 0 ? &hw_cand : &hw_base;
		r.dp_from = base_dp > 0 ? base_dp : (int)(g->ranks[0].world_size > 0 ? g->ranks[0].world_size : 1);
		r.dp_to = given & CLI_SET(CLI_OPT_DP) ? opt.lay.dp : r.dp_from;
		r.comm_eff = 1.0;
		if (k > 1) {
			/* The copies' wiring is checked, not trusted. */
			if ((rc = edit_layers(g, k, &cg, &ls, &err)) == 0)
				rc = graph_acyclic(cg, &err);
		} else if (!(cg = graph_clone(g))) {
			rc = prism_err_set(&err, PRISM_ENOMEM, "out of memory");
		}
		if (rc) {
			graph_free(cg);
			goto fail;
		}
		if (edit_retime(cg, &r, &st) || replay_time(cg, timeline, &p.iter_s, &err)) {
			graph_free(cg);
			rc = err.code ? err.code : prism_err_set(&err, PRISM_ENOMEM, "out of memory");
			goto fail;
		}
		graph_free(cg);
		if (json) {
			printf("{\"method\":\"retimed\",\"base_iteration_s\":%.9f,\"iteration_s\":%.9f,"
			       "\"dp_from\":%d,\"dp_to\":%d,\"layers_from\":%d,\"layers_to\":%d,"
			       "\"tasks_added\":%" PRIu64 ",\"hw_from\":\"%s\",\"hw_to\":\"%s\","
			       "\"kernels_scaled\":%" PRIu64 ",\"collectives_scaled\":%" PRIu64
			       ",\"collectives_unsized\":%" PRIu64 "}\n",
			       base_s, p.iter_s, r.dp_from, r.dp_to, layers, layers * k, ls.nodes_added,
			       r.from->id, r.to->id, st.kernels_scaled, st.colls_scaled,
			       st.colls_unsized);
		} else {
			printf("base       the trace as recorded, dp %d on %s", r.dp_from, r.from->name);
			if (layers)
				printf(", %d layers found", layers);
			printf("\n           %.3f ms per iteration (replay)\n", base_s * 1e3);
			printf("candidate  dp %d on %s", r.dp_to, r.to->name);
			if (k > 1)
				printf(", %d layers", layers * k);
			printf("\nmethod     ");
			if (k > 1)
				printf("layer tasks repeated x%d (%" PRIu64 " runs, %" PRIu64
				       " tasks added); ",
				       k, ls.segments, ls.nodes_added);
			printf("re-timed clone: %" PRIu64 " kernels, %" PRIu64
			       " collectives re-timed (%" PRIu64 " without a size kept)\n\n",
			       st.kernels_scaled, st.colls_scaled, st.colls_unsized);
			printf("iteration  %12.3f ms\n", p.iter_s * 1e3);
			printf("change     %+.1f %% iteration time against the base\n",
			       base_s > 0 ? (p.iter_s / base_s - 1) * 100 : 0);
		}
	}
	graph_free(g);
	kdb_free(db);
	return 0;
fail:
	graph_free(g);
	kdb_free(db);
	return cli_fail(&err);
}
