/* cmd_whatif.c - `prism whatif`: one candidate layout against the base. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "build.h"
#include "cli.h"
#include "frame.h"
#include "metrics.h"
#include "predict.h"
#include "show.h"
#include "sim.h"
#include "timeline.h"

static const char help[] =
    "usage: prism whatif BASE [options]\n"
    "\n"
    "Predict one candidate layout from a base run, and its memory verdict as\n"
    "synth prints it (fits, at risk or OUT OF MEMORY, with the margin).  BASE\n"
    "is a model (a file or a name in configs/models/, a Hugging Face\n"
    "config.json, Megatron-LM arguments), a trace (or the traces of a job's\n"
    "ranks), or a saved graph.  The options below give what differs from the\n"
    "base; the rest stays as it was.  How the candidate is made (the `method`\n"
    "line says):\n"
    "\n"
    "  - replay       no change: the base's own replay;\n"
    "  - graph edit   a clone of the traced graph, edited: layers repeated or\n"
    "                 dropped (optimizer work outside them scaled by the\n"
    "                 parameters), microbatches repeated or dropped, gradient\n"
    "                 collectives re-timed for the new data-parallel group or\n"
    "                 added where the base had none, kernels carried to another\n"
    "                 GPU (by FLOP/s or bandwidth), pipeline stages cut from a\n"
    "                 one-stage run; the trace's own kernels stay;\n"
    "  - rebuilt      a trace with a run description (prism::model#, written by\n"
    "                 `prism synth`, scripts/collect_trace.py, scripts/gpt_bench.py)\n"
    "                 for the rest (hidden size, TP, PP, schedule, ...; see\n"
    "                 --method): rebuilt at the candidate's configuration with\n"
    "                 kernel times calibrated, class by class, on its own kernels;\n"
    "  - synthesised  a model base (needs --hw).\n"
    "\n"
    "The change is against the base made by the candidate's method: a rebuilt\n"
    "candidate against the base's own configuration rebuilt (printed beside\n"
    "its replay), so a change that changes nothing is 0.0 %.\n"
    "\n"
    "A trace without a run description takes the graph edits only; layers come\n"
    "from prism::layer ranges, module names (nn.Module: ...Layer_N, profiled\n"
    "with with_modules) or repeated op blocks, microbatches from backward\n"
    "passes (`prism ingest` shows what was found), and the message says what is\n"
    "missing for anything else (its precision is its GEMMs' op types: --dtype\n"
    "to another is refused; --gbs counts samples, which it does not give).  The\n"
    "step time is the longer of the host span and the GPU side (both are\n"
    "printed); a host-bound step shows GPU edits little.\n"
    "\n"
    "options:\n"
    "      --hw HW             the candidate's hardware (default: the base's)\n"
    "      --base-hw HW        the base's hardware, when the trace does not say\n"
    "      --base-dp N         the base's data-parallel degree (default: the\n"
    "                          trace's world size)\n"
    "      --base-step-ms MS   the base's step as timed without the profiler (a\n"
    "                          training log's): the trace's host tasks and launch\n"
    "                          latencies are scaled by one factor until its replay\n"
    "                          takes MS, since the profiler slows both (a\n"
    "                          host-bound base's edits then start from the host as\n"
    "                          it ran)\n"
    "      --db FILE           kernel times from this kernel database (prism\n"
    "                          calibrate --db) where it holds the GPU and size\n"
    "      --timeline FILE     write the candidate's simulated run (Perfetto; -:\n"
    "                          standard output, the prediction then on stderr)\n"
    "      --json              print the prediction as JSON\n"
    "      --export FW         then the candidate's layout as FW's launch options:\n"
    "                          megatron (Megatron-LM arguments), bridge\n"
    "                          (Megatron-Bridge / NeMo 2 recipe overrides) or\n"
    "                          torchtitan (a TOML fragment); knobs FW cannot\n"
    "                          express are named in a comment (docs/FORMATS.md)\n"
    "      --method M          a trace with a run description: auto (graph edits for\n"
    "                          layers, microbatches, dp and the hardware, rebuilt\n"
    "                          otherwise), edit (graph edits for hidden size, TP and\n"
    "                          PP too) or rebuild (every change rebuilt)\n"
    "  -h, --help              this help\n"
    "  and the trace options of `prism ingest` (--rank, --allow-dangling, ...)\n";

/* The candidate's run for Perfetto: a replayed or edited graph simulated
 * again, a synthesised one written as traces. */
static int write_timeline(struct graph *g, const struct synth_out *so, int method, const char *path,
			  char *const *in, int n_in, struct prism_err *err)
{
	struct sim *s;
	struct sim_opts o;
	int rc;

	if (method == PM_SYNTH || method == PM_REBUILD)
		return cli_write_trace(g, so, path, "--timeline", in, n_in, err);
	if (!(s = sim_new(g)))
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	sim_opts_default(&o);
	if ((rc = sim_run(s, &o, err)) == 0)
		rc = timeline_write(s, path, NULL, err);
	sim_free(s);
	return rc;
}

static void print_sides(const char *what, const struct predict_out *p)
{
	if (p->host_s <= 0 && p->gpu_s <= 0)
		return;
	if (p->host_s <= 0) {
		printf("%-10s GPU %.3f ms (no host span: the trace has no steps)%s\n", what,
		       p->gpu_s * 1e3,
		       p->host_bound ? "; the GPU idles over 30% of it: host-bound" : "");
		return;
	}
	printf("%-10s host %.3f ms, GPU %.3f ms per step%s\n", what, p->host_s * 1e3,
	       p->gpu_s * 1e3,
	       p->host_bound ? ": host-bound (the GPU idles over 30% of every step), so GPU "
			       "edits show little"
			     : "");
}

static void print_json(const struct base *b, const struct synth_in *cand,
		       const struct predict_out *p)
{
	const struct predict_out *s = predict_base_same(&b->pb, p->method);
	printf("{\"method\":\"%s\",\"how\":", predict_method_name(p->method));
	prism_fput_json_str(stdout, p->how);
	printf(",\"base\":");
	prism_fput_json_str(stdout, b->pb.found);
	printf(",\"base_host_scale\":%.6f,\"base_traced_s\":%.9f",
	       b->pb.host_traced_s > 0 ? b->pb.host_scale : 1,
	       b->pb.host_traced_s > 0 ? b->pb.host_traced_s : b->pb.self.iter_s);
	/* The base by the candidate's method (base_iteration_s below, and the
	 * speedup), and its own replay or synthesis. */
	printf(",\"base_method\":\"%s\",\"base_self_s\":%.9f", predict_method_name(s->method),
	       b->pb.self.iter_s);
	/* The sides are the base's replay's (a rebuilt base has none). */
	printf(",\"base_iteration_s\":%.9f,\"base_host_s\":%.9f,\"base_gpu_s\":%.9f,"
	       "\"base_host_bound\":%s,\"host_s\":%.9f,\"gpu_s\":%.9f,\"host_bound\":%s,"
	       "\"speedup\":",
	       s->iter_s, b->pb.self.host_s, b->pb.self.gpu_s,
	       b->pb.self.host_bound ? "true" : "false", p->host_s, p->gpu_s,
	       p->host_bound ? "true" : "false");
	/* null where not known (no candidate time) */
	if (p->iter_s > 0)
		printf("%.6f,", s->iter_s / p->iter_s);
	else
		printf("null,");
	if (b->pb.kind == PB_TRACE)
		printf(
		    "\"iteration_s\":%.9f,\"layers_from\":%d,\"layers_to\":%d,"
		    "\"microbatches_from\":%d,\"microbatches_to\":%d,\"dp_from\":%d,\"dp_to\":%d,"
		    "\"hw_from\":\"%s\",\"hw_to\":\"%s\",\"tasks\":%" PRIu64 ",\"gpus\":%d}\n",
		    p->iter_s, b->pb.in.m.layers, cand->m.layers, b->pb.in.lay.microbatches,
		    cand->lay.microbatches, b->pb.in.lay.dp, cand->lay.dp, b->pb.in.hw->id,
		    cand->hw->id, p->tasks, p->gpus);
	else {
		show_prediction_json(stdout, cand, p);
		printf("}\n");
	}
}

static void print_text(const struct base *b, const struct synth_in *cand,
		       const struct predict_out *p)
{
	const struct predict_out *s = &b->pb.self, *same = predict_base_same(&b->pb, p->method);
	printf("base       ");
	if (b->pb.kind == PB_TRACE)
		printf("the trace as recorded on %s: %s", b->pb.in.hw->name, b->pb.found);
	else
		show_layout(stdout, &b->pb.in);
	printf("\n           %.3f ms per iteration%s\n", s->iter_s * 1e3,
	       b->pb.kind == PB_MODEL ? " (synthesised)" : " (replay)");
	if (b->pb.host_traced_s > 0)
		printf("           its host tasks and latencies x%.3f: %.3f ms per step as "
		       "traced, the step given without the profiler\n",
		       b->pb.host_scale, b->pb.host_traced_s * 1e3);
	print_sides("", s);
	if (same != s)
		printf("           %.3f ms per iteration %s: the candidate's method, which the "
		       "change is against\n",
		       same->iter_s * 1e3, predict_method_name(same->method));
	printf("method     %s: %s\n\n", predict_method_name(p->method), p->how);
	if (b->pb.kind == PB_TRACE) {
		printf("candidate  %d layers, %d microbatches, dp %d on %s\n", cand->m.layers,
		       cand->lay.microbatches, cand->lay.dp, cand->hw->name);
		printf("iteration  %12.3f ms\n", p->iter_s * 1e3);
	} else {
		show_prediction(stdout, cand, p);
	}
	print_sides("sides", p);
	printf("\nchange     %+.1f %% iteration time against the base (%s)\n",
	       same->iter_s > 0 ? (p->iter_s / same->iter_s - 1) * 100 : 0,
	       predict_method_name(same->method));
}

int cmd_whatif(int argc, char **argv)
{
	static const struct option own[] = {
	    {"hw", required_argument, NULL, 'w'},
	    {"base-hw", required_argument, NULL, 'W'},
	    {"base-dp", required_argument, NULL, 'B'},
	    {"base-step-ms", required_argument, NULL, 'P'},
	    {"timeline", required_argument, NULL, 't'},
	    {"db", required_argument, NULL, 'D'},
	    {"json", no_argument, NULL, 'j'},
	    {"method", required_argument, NULL, 'M'},
	    {"export", required_argument, NULL, 'x'},
	    {"help", no_argument, NULL, 'h'},
	    CLI_BUILD_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	struct synth_in cand;
	struct cli_layout opt;
	struct option longopts[48 + CLI_LAYOUT_NOPTS];
	struct hw_profile hw_cand;
	struct build_opts bo;
	struct base_opts o;
	struct base b;
	struct prism_err err;
	struct predict_out p;
	struct graph *cg = NULL;
	struct synth_out so;
	const char *timeline = NULL, *db_path = NULL;
	struct cli_parse args;
	struct kdb *db = NULL;
	int json = 0, c, rc = 0, prefer = PREDICT_EDIT_PREFERRED, fw = -1;

	build_opts_default(&bo);
	prism_err_clear(&err);
	cli_layout_init(&opt);
	cli_longopts(own, longopts, sizeof(longopts) / sizeof(longopts[0]));
	memset(&o, 0, sizeof(o));
	memset(&b, 0, sizeof(b));
	memset(&so, 0, sizeof(so));
	o.bo = &bo;
	cli_parse_init(&args, "whatif", help, "r:h", longopts, &bo, &o.ranks, "no BASE given");
	args.lay = &opt;
	while ((c = cli_next_option(&args, argc, argv, &err)) >= 0) {
		switch (c) {
		case 'w':
			o.hw = optarg;
			break;
		case 'W':
			o.base_hw = optarg;
			break;
		case 'B':
			if (cli_count(optarg, "base-dp", 1, 1 << 20, &o.base_dp, &err))
				return cli_fail(&err);
			break;
		case 'P': {
			double ms;
			if (cli_number(optarg, "base-step-ms", 1e-3, 1e9, &ms, &err))
				return cli_fail(&err);
			o.base_step_s = ms / 1e3;
			break;
		}
		case 't':
			timeline = optarg;
			break;
		case 'D':
			db_path = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'x':
			if ((fw = frame_parse(optarg)) < 0) {
				prism_err_set(
				    &err, PRISM_EARG,
				    "--export '%s': expected megatron, bridge or torchtitan",
				    optarg);
				return cli_fail(&err);
			}
			break;
		case 'M':
			if (strcmp(optarg, "edit") == 0)
				prefer = PREDICT_EDIT_ALL;
			else if (strcmp(optarg, "rebuild") == 0)
				prefer = PREDICT_REBUILD;
			else if (strcmp(optarg, "auto") == 0)
				prefer = PREDICT_EDIT_PREFERRED;
			else {
				prism_err_set(&err, PRISM_EARG,
					      "--method '%s': expected auto, edit or rebuild",
					      optarg);
				return cli_fail(&err);
			}
			break;
		}
	}
	if (c == CLI_PARSE_EXIT)
		return args.status;
	if (cli_stdout_shared(timeline, "--timeline",
			      json	? "--json"
			      : fw >= 0 ? "--export"
					: NULL))
		return EXIT_USAGE;
	if (json && fw >= 0) {
		prism_err_set(&err, PRISM_EARG, "--export writes text: give it without --json");
		return cli_fail(&err);
	}
	/* The timeline (or its first rank's file) is no input; the others are
	 * checked where they are named (cli_write_trace). */
	if (cli_not_input(timeline, "--timeline", argv + optind, argc - optind, &err) ||
	    (db_path && cli_load_kdb(db_path, &db, &err)))
		return cli_fail(&err);
	o.kdb = db;
	if ((rc = base_load(&b, argv + optind, argc - optind, &o, &err)))
		goto fail;
	b.pb.prefer = prefer;
	cand = b.pb.in;
	/* What a plain trace does not say cannot be changed from: a
	 * precision its kernels do not name, a global batch in samples when
	 * a microbatch's samples are unknown (not the recorded steps). */
	if (b.pb.kind == PB_TRACE && (opt.given & LK_BIT(LK_dtype)) && !b.pb.dtype_known) {
		rc = prism_err_set(&err, PRISM_EARG,
				   "%s: the trace has no run description (prism::model#): dtype: "
				   "the trace's precision is unknown (no GEMM, attention or "
				   "convolution with its op's input types: profile with "
				   "record_shapes=True)",
				   argv[optind]);
		goto fail;
	}
	if (b.pb.kind == PB_TRACE && opt.gbs) {
		rc = prism_err_set(&err, PRISM_EARG,
				   "%s: the trace has no run description (prism::model#): --gbs "
				   "counts samples, and the trace does not say how many a "
				   "microbatch holds: give --microbatches (it found %d)",
				   argv[optind], b.pb.in.lay.microbatches);
		goto fail;
	}
	if ((rc = cli_layout_apply(&opt, &cand, &err)))
		goto fail;
	if (o.hw && strcmp(o.hw, b.pb.hw.id) != 0 && (b.pb.kind != PB_MODEL || o.base_hw)) {
		if ((rc = cli_load_hw(o.hw, &hw_cand, &err)))
			goto fail;
		if (strcmp(hw_cand.id, b.pb.hw.id) != 0)
			cand.hw = &hw_cand;
	}
	if ((rc = predict_eval(&b.pb, &cand, NULL, &p, timeline ? &cg : NULL, timeline ? &so : NULL,
			       &err))) {
		if (rc == PRISM_EARG)
			prism_err_prefix(&err, "%s", argv[optind]);
		goto fail;
	}
	if (timeline) {
		char *mp[1] = {b.model_path};
		rc = b.model_path[0] ? write_timeline(cg, &so, p.method, timeline, mp, 1, &err)
				     : write_timeline(cg, &so, p.method, timeline, argv + optind,
						      argc - optind, &err);
		graph_free(cg);
		if (p.method == PM_SYNTH || p.method == PM_REBUILD)
			synth_out_release(&so);
		if (rc)
			goto fail;
		if (cli_is_stdout(timeline))
			cli_stdout_taken(); /* the prediction after it, on stderr */
	}
	if (json)
		print_json(&b, &cand, &p);
	else
		print_text(&b, &cand, &p);
	if (fw >= 0) {
		putchar('\n');
		if (frame_export(stdout, fw, &cand.m, &cand.lay)) {
			rc = prism_err_set(&err, PRISM_ENOMEM, "out of memory");
			goto fail;
		}
	}
	base_release(&b);
	kdb_free(db);
	return 0;
fail:
	base_release(&b);
	kdb_free(db);
	return cli_fail(&err);
}
