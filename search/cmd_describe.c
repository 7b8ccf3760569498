/*
 * cmd_describe.c - `prism describe`: a run description (desc.h) attached
 * to a user's own trace, checked against what the trace holds.
 *
 * The description goes where scripts/collect_trace.py puts it: a
 * "prism::model#..." user_annotation range in the trace itself.  describe
 * writes a copy of each rank's file with that range as the first event of
 * traceEvents (the first description is the one read), every other byte
 * as it was; whatif, search and sweeps then read the copy as any described
 * trace, with no option of their own.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "cli.h"
#include "desc.h"
#include "edit.h"
#include "input.h"
#include "kineto.h"
#include "predict.h"

static const char help[] =
    "usage: prism describe TRACE... --model M [layout options] -o OUT\n"
    "\n"
    "Attach a run description to a trace prism did not write (a user's own\n"
    "PyTorch profiler trace), so that whatif and search edit every knob of it\n"
    "(TP, hidden size, ZeRO, ...: rebuilt with the costs fitted on its kernels)\n"
    "and not only what a plain trace shows (layers, microbatches, DP, the GPU).\n"
    "The description is the model (--model) and the layout (the options below,\n"
    "--megatron-args; dp not given is the trace's world size over tp x pp x cp,\n"
    "the microbatches its backward passes), checked against the trace: the\n"
    "layers found in it (prism::layer ranges, module names, repeated op blocks),\n"
    "the parameters its gradient and optimizer shapes add up to, its world size\n"
    "and the groups of its collectives; a contradiction is refused (exit 2)\n"
    "naming both sides.\n"
    "OUT is a copy of the trace with the description as its first event, a\n"
    "\"prism::model#...\" range as scripts/collect_trace.py records it; with\n"
    "several rank files, OUT.rankR.json for rank R (docs/FORMATS.md, \"Run\n"
    "description\").\n"
    "\n"
    "options:\n"
    "      --model M           the model: a file or a name in configs/models/, a\n"
    "                          Hugging Face config.json or a Megatron-LM argument\n"
    "                          list (required)\n"
    "      --hw HW             the hardware profile recorded (default: the one for\n"
    "                          the trace's GPU)\n"
    "  -o, --output OUT        the described trace (required; .gz: compressed)\n"
    "      --no-check          write the description without checking it\n"
    "  -h, --help              this help\n"
    "\n"
    "trace options: --rank R,... --no-infer-layers ... (as for replay)\n";

/* The trace's own evidence, for the checks. */
struct found {
	int layers, microbatches; /* per pass, passes per step (at least 1) */
	int world;		  /* distributedInfo's world size, 0: not recorded */
	int grad_group;		  /* the gradient collectives' group (the most bytes), 0 */
	int has_p2p;		  /* sends or receives */
	uint32_t ncolls;	  /* collectives (NCCL kernels) */
	int64_t sizes[16];	  /* group sizes: collectives', process groups' */
	int nsizes;
	double params; /* per rank, from gradient or optimizer shapes; 0 */
	int dtype;     /* the GEMMs' precision (enum hw_dtype), -1: unknown */
};

static void add_size(struct found *f, int64_t size)
{
	int k;
	if (size < 2)
		return;
	for (k = 0; k < f->nsizes && f->sizes[k] != size; k++)
		;
	if (k == f->nsizes && k < 16)
		f->sizes[f->nsizes++] = size;
}

static void find(const struct graph *g, struct found *f)
{
	double bytes[16] = {0};
	int64_t gsz[16];
	int ng = 0, best = -1;
	double per = 0;

	memset(f, 0, sizeof(*f));
	f->microbatches = 1;
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		if (g->layer[u] + 1 > f->layers)
			f->layers = g->layer[u] + 1;
		if (g->mb[u] + 1 > f->microbatches)
			f->microbatches = g->mb[u] + 1;
	}
	if (g->n_ranks && g->ranks[0].world_size > 0 && g->ranks[0].world_size <= LAYOUT_MAX_GPUS)
		f->world = (int)g->ranks[0].world_size;
	f->ncolls = g->n_colls;
	for (uint32_t c = 0; c < g->n_colls; c++) {
		const struct graph_coll *gc = &g->colls[c];
		uint32_t u = gc->node;
		int k;
		if (gc->kind == GC_SEND || gc->kind == GC_RECV || gc->kind == GC_SEND_RECV)
			f->has_p2p = 1;
		add_size(f, gc->group_size);
		/* As predict_base_init finds them: all-reduces and
		 * reduce-scatters of the backward pass and the optimizer. */
		if ((gc->kind != GC_ALL_REDUCE && gc->kind != GC_REDUCE_SCATTER) ||
		    gc->group_size < 2 ||
		    (g->phase[u] != PH_BACKWARD && g->phase[u] != PH_OPTIMIZER))
			continue;
		for (k = 0; k < ng && gsz[k] != gc->group_size; k++)
			;
		if (k == ng) {
			if (ng == 16)
				continue;
			gsz[ng++] = gc->group_size;
		}
		bytes[k] += gc->bytes > 0 ? (double)gc->bytes : 1;
	}
	for (int k = 0; k < ng; k++)
		if (best < 0 || bytes[k] > bytes[best])
			best = k;
	if (best >= 0 && gsz[best] <= LAYOUT_MAX_GPUS)
		f->grad_group = (int)gsz[best];
	if (edit_params(g, f->layers, &f->params, &per))
		f->params = 0;
	f->dtype = predict_trace_dtype(g);
}

static int has_size(const struct found *f, int n)
{
	for (int k = 0; k < f->nsizes; k++)
		if (f->sizes[k] == n)
			return 1;
	return 0;
}

/* The parameters of a rank may differ from the model's by this much
 * (norms, biases, position tables a model file leaves out). */
#define DESCRIBE_PARAM_TOL 0.10

/* The description in against the trace's evidence f: 0, or PRISM_EARG
 * naming the field, the trace's value and where it was found. */
static int check(const struct synth_in *in, const struct found *f, struct prism_err *err)
{
	const struct layout *l = &in->lay;
	int gpus = l->tp * l->pp * l->cp * l->dp;
	int stage = (in->m.layers + l->pp - 1) / l->pp, ok = 0;

	if (f->world ? gpus != f->world : gpus > 1 && !f->nsizes)
		return prism_err_set(
		    err, PRISM_EARG,
		    "the description's tp %d x pp %d x cp %d x dp %d = %d GPU%s, "
		    "but the trace ran on %d (%s)",
		    l->tp, l->pp, l->cp, l->dp, gpus, gpus > 1 ? "s" : "", f->world ? f->world : 1,
		    f->world ? "distributedInfo's world size" : "no world size and no collectives");
	/* The ops' input types are what their GEMMs were given: FP32 under
	 * TF32, BF16 (FP16) where Transformer Engine casts to FP8 or FP4
	 * inside the op. */
	if (f->dtype >= 0 && l->dtype != f->dtype &&
	    !(l->dtype == HW_TF32 && f->dtype == HW_FP32) &&
	    !((l->dtype == HW_FP8 || l->dtype == HW_FP4) &&
	      (f->dtype == HW_BF16 || f->dtype == HW_FP16)))
		return prism_err_set(
		    err, PRISM_EARG,
		    "dtype: the description's %s, but the trace's GEMMs, attention "
		    "and convolutions ran in %s (their ops' input types)",
		    hw_dtype_name(l->dtype), hw_dtype_name(f->dtype));
	if (!(in->hw->peak_flops[l->dtype] > 0))
		return prism_err_set(
		    err, PRISM_EARG,
		    "dtype: %s%s, but %s has no %s peak: give the run's with --dtype",
		    hw_dtype_name(l->dtype),
		    f->dtype < 0 ? " (the default: the trace's ops record no types)" : "",
		    in->hw->gpu, hw_dtype_name(l->dtype));
	if (f->layers) {
		/* A stage's layers: an even split, or the partition's. */
		ok = f->layers == stage || f->layers == in->m.layers / l->pp;
		for (int s = 0; l->part[0] && s < l->pp; s++)
			ok |= l->part[s] == f->layers;
		if (!ok)
			return prism_err_set(
			    err, PRISM_EARG,
			    "layers: the description's %d over pp %d, but the trace "
			    "shows %d layers per pass (prism::layer ranges, module "
			    "names or repeated op blocks; --no-infer-layers drops the "
			    "last)",
			    in->m.layers, l->pp, f->layers);
	}
	if (f->microbatches != l->microbatches)
		return prism_err_set(err, PRISM_EARG,
				     "microbatches: the description's %d, but the trace shows %d "
				     "backward passes per step",
				     l->microbatches, f->microbatches);
	if (f->grad_group && f->grad_group != l->dp && f->grad_group != l->dp * l->cp)
		return prism_err_set(err, PRISM_EARG,
				     "dp: the description's %d (cp %d), but the trace's gradient "
				     "collectives run on a group of %d ranks",
				     l->dp, l->cp, f->grad_group);
	/* What the trace lacks is no contradiction where it may lie outside
	 * it (a window without the optimizer, communication without NCCL
	 * kernels: DeepEP); TP is held to the group sizes where the trace
	 * gives some, PP to the collectives where it has some. */
	if (l->tp > 1 && f->nsizes && !has_size(f, l->tp))
		return prism_err_set(err, PRISM_EARG,
				     "tp: the description's %d, but no collective or process group "
				     "(pg_config) of the trace has %d ranks",
				     l->tp, l->tp);
	if (l->pp > 1 && f->ncolls && !f->has_p2p)
		return prism_err_set(err, PRISM_EARG,
				     "pp: the description's %d, but the trace has no sends or "
				     "receives between stages",
				     l->pp);
	/* Where a rank holds the whole model: TP, PP and EP split it, and
	 * under ZeRO the optimizer's tensor lists may be shards. */
	if (f->params > 0 && l->tp * l->pp * l->ep == 1 && l->zero == 0) {
		double want = llm_params(&in->m);
		if (fabs(f->params - want) > DESCRIBE_PARAM_TOL * want)
			return prism_err_set(
			    err, PRISM_EARG,
			    "parameters: the model has %.0f, but the trace's gradient "
			    "or optimizer shapes add up to %.0f (more than %.0f %% "
			    "apart)",
			    want, f->params, DESCRIBE_PARAM_TOL * 100);
	}
	return 0;
}

struct range {
	const char *name;
	int64_t pid, tid, ts_ns;
};

/*
 * The layout given (o) over in, with what was not given taken from the
 * trace f: dp from its world size over tp x pp x cp, the microbatches
 * from its backward passes (or a global batch given: gbs / (mbs x dp)).
 * 0, or PRISM_EARG for a global batch that does not divide.
 */
static int from_trace(const struct cli_layout *o, const struct found *f, struct synth_in *in,
		      struct prism_err *err)
{
	struct cli_layout g = *o;
	int split;

	g.gbs = 0;
	cli_layout_apply(&g, in, err);
	split = in->lay.tp * in->lay.pp * in->lay.cp;
	if (!(o->given & LK_BIT(LK_dp)) && f->world && f->world % split == 0)
		in->lay.dp = f->world / split;
	if (!(o->given & LK_BIT(LK_microbatches)))
		in->lay.microbatches = f->microbatches;
	if (!(o->given & LK_BIT(LK_dtype)) && f->dtype >= 0)
		in->lay.dtype = f->dtype;
	if (o->gbs) {
		long per = (long)in->lay.mbs * in->lay.dp;
		if (o->gbs % per)
			return prism_err_set(err, PRISM_EARG,
					     "--gbs %d is not a multiple of mbs %d x dp %d", o->gbs,
					     in->lay.mbs, in->lay.dp);
		in->lay.microbatches = (int)(o->gbs / per);
	}
	return 0;
}

/* Where the description range goes in path's trace: the thread and start
 * of its first host op, in the file's own time (baseTimeNanoseconds taken
 * off); and the sizes of its process groups (distributedInfo.pg_config)
 * into f's group sizes.  0, or the reader's error. */
static int place(const char *path, struct range *r, struct found *f, struct prism_err *err)
{
	struct kineto_trace tr;
	struct strtab st;
	int rc;

	memset(&tr, 0, sizeof(tr));
	if (strtab_init(&st))
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	if ((rc = kineto_read(path, &st, &tr, err)) == 0) {
		for (size_t i = 0; i < tr.events.n; i++) {
			const struct kt_event *e = &tr.events.v[i];
			if (e->kind != KT_CPU_OP && e->kind != KT_USER_ANN)
				continue;
			r->pid = tr.threads.v[e->thread].pid;
			r->tid = tr.threads.v[e->thread].tid;
			r->ts_ns = e->ts_ns - tr.base_ns;
			break;
		}
		for (size_t i = 0; i < tr.pgs.n; i++)
			add_size(f, tr.pgs.v[i].size);
	}
	kineto_release(&tr);
	strtab_release(&st);
	return rc;
}

/*
 * Copy path to out with the range ev put first in
 * the top-level "traceEvents" array.  A small scanner follows strings and
 * depth so that only the top-level key is taken.  0, or the error.
 */
/* The range as a Kineto complete event of no duration. */
static void put_range(FILE *f, const struct range *r)
{
	int64_t a = r->ts_ns < 0 ? -r->ts_ns : r->ts_ns;
	fputs("{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": ", f);
	prism_fput_json_str(f, r->name);
	fprintf(f,
		", \"pid\": %" PRId64 ", \"tid\": %" PRId64 ", \"ts\": %s%" PRId64 ".%03" PRId64
		", \"dur\": 0, \"args\": {}}",
		r->pid, r->tid, r->ts_ns < 0 ? "-" : "", a / 1000, a % 1000);
}

static int copy_with(const char *path, const char *out, const struct range *ev,
		     struct prism_err *err)
{
	struct input *in = NULL;
	struct prism_wfile w;
	char buf[1 << 16], key[16];
	int depth = 0, str = 0, esc = 0, state = 0, rc;
	size_t kl = 0;
	long n;

	/* state 0: looking for the key; 1: key seen at depth 1, ':' next;
	 * 2: '[' next; 3: inside, the event not yet written; 4: done. */
	if ((rc = input_open(path, &in, err)))
		return rc;
	if (prism_wfile_open(&w, out)) {
		input_free(in);
		return prism_err_set(err, PRISM_EIO, "-o %s: %s", out, strerror(errno));
	}
	while ((n = input_read(in, buf, sizeof(buf), err)) > 0) {
		for (long i = 0; i < n; i++) {
			char c = buf[i];
			if (state == 3 && !str && c != ' ' && c != '\n' && c != '\t' && c != '\r') {
				put_range(w.f, ev);
				fputs(c == ']' ? "\n" : ",\n", w.f);
				state = 4;
			}
			fputc(c, w.f);
			if (str) {
				if (esc)
					esc = 0;
				else if (c == '\\')
					esc = 1;
				else if (c == '"') {
					str = 0;
					if (depth == 1 && state == 0 && kl == 11 &&
					    memcmp(key, "traceEvents", 11) == 0)
						state = 1;
				} else if (kl < sizeof(key))
					key[kl++] = c;
				continue;
			}
			if (c == '"') {
				str = 1;
				kl = 0;
			} else if (c == '{' || c == '[') {
				depth++;
				if (state == 2 && c == '[' && depth == 2)
					state = 3;
			} else if (c == '}' || c == ']') {
				depth--;
			} else if (c == ':' && state == 1) {
				state = 2;
			} else if (c != ' ' && c != '\n' && c != '\t' && c != '\r' && state == 2) {
				state = 0; /* traceEvents is not an array here */
			} else if (c == ',' && state == 1) {
				state = 0;
			}
		}
	}
	input_free(in);
	if (n < 0) {
		prism_wfile_abort(&w);
		return (int)n;
	}
	if (state != 4) {
		prism_wfile_abort(&w);
		return prism_err_set(
		    err, PRISM_EFORMAT,
		    "%s: no top-level \"traceEvents\" array to put the description "
		    "in",
		    path);
	}
	if (prism_wfile_commit(&w))
		return prism_err_set(err, PRISM_EIO, "-o %s: %s", out, strerror(errno));
	return 0;
}

/* Rank R's file is OUT.rankR.json (OUT with one file), R the rank the
 * job's graph gives paths[i]; into rp (n bytes).  0, or PRISM_EARG where
 * it does not fit or would overwrite an input. */
static int out_path(const struct graph *g, char **paths, int i, int n, const char *out, char *rp,
		    size_t len, struct prism_err *err)
{
	int64_t r = i;
	for (uint32_t k = 0; k < g->n_ranks; k++)
		if (strcmp(strtab_get(&g->st, g->ranks[k].path), paths[i]) == 0)
			r = g->ranks[k].rank;
	if (r < 0 || r > INT_MAX)
		r = i;
	if (cli_rank_path(out, "-o", (int)r, n, rp, len, err) ||
	    cli_not_input(rp, "-o", paths, n, err))
		return PRISM_EARG;
	return 0;
}

int cmd_describe(int argc, char **argv)
{
	static const struct option own[] = {
	    {"model", required_argument, NULL, 'm'},
	    {"hw", required_argument, NULL, 'w'},
	    {"output", required_argument, NULL, 'o'},
	    {"no-check", no_argument, NULL, 'N'},
	    {"help", no_argument, NULL, 'h'},
	    CLI_BUILD_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	struct option longopts[32 + CLI_LAYOUT_NOPTS];
	struct cli_layout opt;
	struct cli_parse args;
	struct build_opts bo;
	struct synth_in in;
	struct hw_profile hw;
	struct prism_err err;
	struct graph *g = NULL;
	struct found f;
	struct layout l;
	struct range *ev = NULL;
	const char *model = NULL, *hw_name = NULL, *out = NULL, *ranks = NULL;
	char hw_path[1024], hw_ref[PATH_MAX], desc[4096];
	int nocheck = 0, c, rc, n;
	char **paths;

	prism_err_clear(&err);
	build_opts_default(&bo);
	cli_layout_init(&opt);
	cli_longopts(own, longopts, sizeof(longopts) / sizeof(longopts[0]));
	cli_parse_init(&args, "describe", help, "o:r:h", longopts, &bo, &ranks,
		       "give the trace file(s)");
	args.lay = &opt;
	while ((c = cli_next_option(&args, argc, argv, &err)) >= 0) {
		switch (c) {
		case 'm':
			model = optarg;
			break;
		case 'w':
			hw_name = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'N':
			nocheck = 1;
			break;
		}
	}
	if (c == CLI_PARSE_EXIT)
		return args.status;
	n = argc - optind;
	paths = argv + optind;
	if (n < 1 || !model || !out) {
		fprintf(stderr, "prism describe: %s\n%s",
			n < 1	 ? "give the trace file(s)"
			: !model ? "give the model with --model"
				 : "give the output with -o",
			help);
		return EXIT_USAGE;
	}
	if (n > 1 && cli_is_stdout(out)) {
		fprintf(stderr, "prism describe: -o - takes one trace, not %d\n", n);
		return EXIT_USAGE;
	}
	for (int i = 0; i < n; i++) {
		if (graph_file_is(paths[i])) {
			fprintf(stderr,
				"prism describe: %s: a saved graph; describe the traces it was "
				"built from\n",
				paths[i]);
			return EXIT_USAGE;
		}
	}
	synth_in_default(&in);
	if ((rc = cli_load_model(model, &in.m, &err)) ||
	    (rc = cli_load_graph(paths, n, ranks, &bo, &g, &err)))
		return cli_fail(&err);
	find(g, &f);
	if (!(ev = prism_calloc((size_t)n, sizeof(*ev))))
		rc = prism_err_set(&err, PRISM_ENOMEM, "out of memory");
	for (int i = 0; i < n && !rc; i++) {
		char rp[CLI_PATH_MAX];
		if (!(rc = out_path(g, paths, i, n, out, rp, sizeof(rp), &err)))
			rc = place(paths[i], &ev[i], &f, &err);
	}
	if (rc || (rc = from_trace(&opt, &f, &in, &err))) {
		graph_free(g);
		free(ev);
		return cli_fail(&err);
	}
	if (hw_name)
		snprintf(hw_path, sizeof(hw_path), "%s", hw_name);
	if ((!hw_name && (rc = cli_trace_hw_path(g, hw_path, sizeof(hw_path), NULL,
						 ": give one with --hw", &err))) ||
	    (rc = cli_load_hw(hw_path, &hw, &err))) {
		graph_free(g);
		free(ev);
		return cli_fail(&err);
	}
	/* The profile as whatif will look for it: its name where it is one
	 * of configs/hw, else its file's absolute path. */
	if (cli_find_config("hw", hw.id, hw_ref, sizeof(hw_ref), NULL) == 0 &&
	    prism_same_file(hw_ref, hw_path)) {
		snprintf(hw_ref, sizeof(hw_ref), "%s", hw.id);
	} else if (strchr(hw_path, '/') || strstr(hw_path, ".cfg")) {
		if (!realpath(hw_path, hw_ref) || strlen(hw_ref) > 63)
			snprintf(hw_ref, sizeof(hw_ref), "%s", hw.id);
	} else {
		snprintf(hw_ref, sizeof(hw_ref), "%s", hw_path);
	}
	in.hw = &hw;
	rc = nocheck ? 0 : check(&in, &f, &err);
	if (rc) {
		graph_free(g);
		free(ev);
		prism_err_prefix(&err, "%s", paths[0]);
		fprintf(stderr, "prism describe: %s (--no-check writes it all the same)\n",
			err.msg);
		return EXIT_USAGE;
	}
	/* A layout no run can have (synth_check: divisibility, the model's
	 * rules, the profile's precisions) is no description, checked or not. */
	if ((rc = synth_check(&in, &err))) {
		graph_free(g);
		free(ev);
		prism_err_prefix(&err, "the description");
		return cli_fail(&err);
	}
	synth_mem_layout(&in, &l);
	desc_write(&in.m, &l, hw_ref, desc, sizeof(desc));
	for (int i = 0; i < n && !rc; i++) {
		char rp[CLI_PATH_MAX];
		ev[i].name = desc;
		if ((rc = out_path(g, paths, i, n, out, rp, sizeof(rp), &err)))
			break;
		rc = copy_with(paths[i], rp, &ev[i], &err);
		if (!rc && !cli_is_stdout(out))
			printf("%s: %s\n", rp, desc + strlen(DESC_PREFIX));
	}
	graph_free(g);
	free(ev);
	return rc ? cli_fail(&err) : 0;
}
