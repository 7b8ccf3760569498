/* cmd_synth.c - `prism synth`: a training run's trace from the cost models. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cost.h"
#include "desc.h"
#include "predict.h"
#include "show.h"

static const char help[] =
    "usage: prism synth MODEL --hw HW [options] [-o TRACE.json]\n"
    "\n"
    "Build the execution graph of a GPT training run from its shape and layout\n"
    "alone (kernel times from the cost model, collectives from the\n"
    "communication model), simulate it, and print the prediction.  With -o,\n"
    "write the simulated run as Kineto traces that `prism ingest`, `replay` and\n"
    "`whatif` read: one file, or with --pp > 1 one per stage (TRACE.rankR.json).\n"
    "MODEL is a file or a name in configs/models/ (gpt-small, gpt3-1.3b, ...),\n"
    "a Hugging Face config.json or a Megatron-LM argument list (docs/FORMATS.md);\n"
    "HW a file or a name in configs/hw/ (h100-dgx, a100-80gb-dgx, ...).\n"
    "The memory line gives the stage needing the most and the verdict: fits,\n"
    "at risk (within the memory model's " MEM_UNCERTAINTY_TEXT
    " % uncertainty of the usable memory)\n"
    "or OUT OF MEMORY, with the margin (docs/MODEL.md, \"Memory\";\n"
    "--expandable-segments for PyTorch's allocator option).\n"
    "\n"
    "options:\n"
    "      --hw HW             the hardware profile (required)\n"
    "  -o, --output FILE       write the trace(s) (-: one trace to standard output,\n"
    "                          the prediction then on stderr)\n"
    "      --eff CLASS=E,...   a kernel class runs at E times the kernel model's\n"
    "                          speed (gemm, attention, norm, softmax, elementwise,\n"
    "                          embedding, optimizer; default 1: as modelled by\n"
    "                          shape, dtype and GPU: prism kernels, docs/MODEL.md)\n"
    "      --db FILE           kernel times from this kernel database (prism\n"
    "                          calibrate --db) where it holds the GPU and size;\n"
    "                          the kernel model for the rest\n"
    "      --host-us OP,LAUNCH host time per op and per kernel launch, in us\n"
    "                          (default " SYNTH_EAGER_HOST_TEXT ": eager PyTorch as\n"
    "                          measured, docs/MODEL.md \"Host\")\n"
    "      --full              simulate every kernel of every microbatch (the\n"
    "                          reference; without -o, each distinct pipeline unit\n"
    "                          is simulated once and the units folded:\n"
    "                          docs/MODEL.md, \"Hierarchical simulation\")\n"
    "      --json              print the prediction as JSON\n"
    "  -h, --help              this help\n";

/* --eff gemm=0.55,attention=0.4 */
static int parse_eff(const char *arg, struct synth_in *in, struct prism_err *err)
{
	char buf[256], *save = NULL, *tok;
	snprintf(buf, sizeof(buf), "%s", arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end;
		double e;
		int k;
		if (!eq)
			return prism_err_set(err, PRISM_EARG, "--eff '%s': expected CLASS=E", tok);
		*eq = '\0';
		for (k = 0; k < KC_NCLASSES; k++)
			if (strcmp(tok, cost_class_name(k)) == 0)
				break;
		e = strtod(eq + 1, &end);
		if (k == KC_NCLASSES || *end || !(e > 0 && e <= 1))
			return prism_err_set(
			    err, PRISM_EARG,
			    "--eff '%s=%s': expected a kernel class and a fraction in (0, 1]", tok,
			    eq + 1);
		in->cost[k].eff = e;
	}
	return 0;
}

static int parse_host(const char *arg, struct synth_in *in, struct prism_err *err)
{
	double op, launch;
	char tail;
	/* At most a second each; written so that NaN fails too. */
	if (sscanf(arg, "%lf,%lf%c", &op, &launch, &tail) != 2 || !(op >= 0 && op <= 1e6) ||
	    !(launch >= 0 && launch <= 1e6))
		return prism_err_set(err, PRISM_EARG,
				     "--host-us '%s': expected OP,LAUNCH in us, each in 0..1e6",
				     arg);
	in->cpu_op_s = op * 1e-6;
	in->launch_s = launch * 1e-6;
	return 0;
}

/*
 * A profile named by its file: the run description records that file
 * (issue 19: it recorded the file's stem, which no other folder finds),
 * relative to the trace's folder where it fits the description's 63
 * bytes, else absolute; otherwise the stem stays and a line says to give
 * --base-hw.  The loader (search/base.c) tries it from the trace's folder.
 * The description is written again whole with that reference (it used to
 * be cut at hw=, losing every field after it).
 */
static int profile_reference(struct graph *g, const char *hw_path, const char *out,
			     const struct synth_in *in, struct prism_err *err)
{
	char hw_abs[PATH_MAX], out_abs[PATH_MAX], ref[PATH_MAX], meta[4096];
	struct layout l;
	char *slash;
	size_t dl;

	if (!realpath(hw_path, hw_abs))
		return 0;
	/* The trace's folder (the file need not exist yet). */
	snprintf(out_abs, sizeof(out_abs), "%s", out);
	if ((slash = strrchr(out_abs, '/')))
		*slash = '\0';
	else
		snprintf(out_abs, sizeof(out_abs), ".");
	{
		char tmp[PATH_MAX];
		if (!realpath(out_abs, tmp))
			return 0;
		snprintf(out_abs, sizeof(out_abs), "%s", tmp);
	}
	dl = strlen(out_abs);
	if (strncmp(hw_abs, out_abs, dl) == 0 && hw_abs[dl] == '/')
		snprintf(ref, sizeof(ref), "%s", hw_abs + dl + 1);
	else
		snprintf(ref, sizeof(ref), "%s", hw_abs);
	if (strlen(ref) > 63) {
		fprintf(stderr,
			"prism synth: the run description records hw=%s; %s is too long for it: "
			"give --base-hw %s to whatif and search\n",
			in->hw->id, ref, hw_abs);
		return 0;
	}
	synth_mem_layout(in, &l);
	desc_write(&in->m, &l, ref, meta, sizeof(meta));
	if (strtab_intern(&g->st, meta, strlen(meta), &g->meta))
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	return 0;
}

int cmd_synth(int argc, char **argv)
{
	static const struct option own[] = {
	    {"hw", required_argument, NULL, 'w'},
	    {"output", required_argument, NULL, 'o'},
	    {"json", no_argument, NULL, 'j'},
	    {"full", no_argument, NULL, 'F'},
	    {"eff", required_argument, NULL, 'e'},
	    {"host-us", required_argument, NULL, 'H'},
	    {"db", required_argument, NULL, 'D'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct synth_in in;
	struct cli_layout opt;
	struct cli_parse args;
	struct option longopts[32 + CLI_LAYOUT_NOPTS];
	struct hw_profile hw;
	struct predict_out p;
	struct prism_err err;
	struct graph *g = NULL;
	struct synth_out so;
	const char *hw_name = NULL, *out = NULL, *eff = NULL, *host = NULL, *db_path = NULL;
	struct kdb *db = NULL;
	int json = 0, full = 0, to_stdout = 0, c, rc;
	char mpath[1024], hpath[1024];
	char *inputs[3] = {mpath, hpath, NULL};

	prism_err_clear(&err);
	cli_layout_init(&opt);
	cli_longopts(own, longopts, sizeof(longopts) / sizeof(longopts[0]));
	cli_parse_init(&args, "synth", help, "o:h", longopts, NULL, NULL, "give one MODEL");
	args.lay = &opt;
	while ((c = cli_next_option(&args, argc, argv, &err)) >= 0) {
		switch (c) {
		case 'w':
			hw_name = optarg;
			break;
		case 'o':
			out = optarg;
			to_stdout = strcmp(out, "-") == 0;
			break;
		case 'j':
			json = 1;
			break;
		case 'F':
			full = 1;
			break;
		case 'e':
			eff = optarg;
			break;
		case 'H':
			host = optarg;
			break;
		case 'D':
			db_path = inputs[2] = optarg;
			break;
		}
	}
	if (c == CLI_PARSE_EXIT)
		return args.status;
	if (cli_stdout_shared(out, "-o", json ? "--json" : NULL))
		return EXIT_USAGE;
	if (optind != argc - 1 || !hw_name) {
		fprintf(stderr, "prism synth: %s\n%s",
			optind != argc - 1 ? "give one MODEL" : "give the hardware with --hw",
			help);
		return EXIT_USAGE;
	}
	synth_in_default(&in);
	if ((rc = cli_load_model(argv[optind], &in.m, &err)) ||
	    (rc = cli_load_hw(hw_name, &hw, &err)))
		return cli_fail(&err);
	if (cli_layout_apply(&opt, &in, &err))
		return cli_fail(&err);
	in.hw = &hw;
	/* The files the trace will be written to (one per stage) are checked
	 * before any work: none may be an input. */
	if (cli_find_config("models", argv[optind], mpath, sizeof(mpath), NULL))
		mpath[0] = '\0';
	if (cli_find_config("hw", hw_name, hpath, sizeof(hpath), NULL))
		hpath[0] = '\0';
	/* -o -: the trace on standard output, the prediction on stderr. */
	if (to_stdout && in.lay.pp > 1) {
		fprintf(stderr, "prism synth: -o - writes one trace to standard output: --pp > 1 "
				"writes one per stage (give -o FILE)\n");
		return EXIT_USAGE;
	}
	for (int r = 0; out && r < in.lay.pp; r++) {
		char rp[CLI_PATH_MAX];
		if (cli_rank_path(out, "-o", r, in.lay.pp, rp, sizeof(rp), &err) ||
		    cli_not_input(rp, "-o", inputs, 3, &err))
			return cli_fail(&err);
	}
	if ((eff && parse_eff(eff, &in, &err)) || (host && parse_host(host, &in, &err)) ||
	    (db_path && cli_load_kdb(db_path, &db, &err)))
		return cli_fail(&err);
	in.kdb = db;
	in.units = !full;
	rc = predict_synth(&in, &p, out ? &g : NULL, out ? &so : NULL, &err);
	kdb_free(db);
	if (rc)
		return cli_fail(&err);
	if (json) {
		fputs("{", stdout);
		show_prediction_json(stdout, &in, &p);
		fputs("}\n", stdout);
	} else {
		show_prediction(to_stdout ? stderr : stdout, &in, &p);
	}
	if (out && !to_stdout && (strchr(hw_name, '/') || strstr(hw_name, ".cfg")) &&
	    (rc = profile_reference(g, hw_name, out, &in, &err))) {
		graph_free(g);
		synth_out_release(&so);
		return cli_fail(&err);
	}
	if (out) {
		rc = cli_write_trace(g, &so, out, "-o", inputs, 3, &err);
		graph_free(g);
		synth_out_release(&so);
		if (rc)
			return cli_fail(&err);
	}
	return 0;
}
