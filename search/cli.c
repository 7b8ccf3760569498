/* cli.c - helpers shared by the subcommands. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "calib.h"
#include "configs.h"
#include "hw.h"
#include "kdb.h"
#include "kdbstore.h"
#include "kineto.h"
#include "llm.h"
#include "sim.h"
#include "synth.h"
#include "timeline.h"

int cli_fail(const struct prism_err *err)
{
	fprintf(stderr, "prism: %s\n", err->msg[0] ? err->msg : prism_status_msg(err->code));
	return err->code == PRISM_EFORMAT || err->code == PRISM_EVERSION ||
		       err->code == PRISM_EARG || err->code == PRISM_EIO ||
		       err->code == PRISM_ELIMIT
		   ? EXIT_USAGE
		   : 1;
}

int cli_parse_us(const char *s, const char *opt, int64_t *ns, struct prism_err *err)
{
	char *end;
	double v;
	errno = 0;
	v = strtod(s, &end);
	/* Written so that NaN fails too. */
	if (end == s || *end || errno || !(v >= 0 && v <= 9e12))
		return prism_err_set(err, PRISM_EARG,
				     "%s '%s': expected a number of microseconds >= 0", opt, s);
	*ns = (int64_t)(v * 1000.0 + 0.5);
	return 0;
}

int cli_build_option(int c, const char *arg, struct build_opts *o, const char **ranks,
		     struct prism_err *err)
{
	switch (c) {
	case 'r':
		*ranks = arg;
		return 1;
	case 'd':
		o->allow_dangling = 1;
		return 1;
	case 'E':
		o->infer_events = 0;
		return 1;
	case 'S':
		o->infer_sync = 0;
		return 1;
	case 'T':
		o->infer_threads = 0;
		return 1;
	case 'G':
		o->infer_share = 0;
		return 1;
	case 'Y':
		o->infer_layers = 0;
		return 1;
	case 'L':
		return cli_parse_us(arg, "--lag-cap", &o->lag_cap_ns, err) ? PRISM_EARG : 1;
	}
	return 0;
}

static int parse_ranks(const char *s, int n, struct kineto_trace *tr, struct prism_err *err)
{
	const char *p = s;
	for (int i = 0; i < n; i++) {
		char *end;
		long long r;
		errno = 0;
		r = strtoll(p, &end, 10);
		if (end == p || errno || r < 0 || (*end != ',' && *end != '\0'))
			return prism_err_set(err, PRISM_EARG,
					     "--rank '%s': expected %d comma-separated ranks, one "
					     "per trace file",
					     s, n);
		tr[i].has_rank = 1;
		tr[i].rank = r;
		p = *end ? end + 1 : end;
		if (i + 1 < n && *end == '\0')
			return prism_err_set(err, PRISM_EARG, "--rank '%s': %d ranks for %d files",
					     s, i + 1, n);
	}
	if (*p)
		return prism_err_set(err, PRISM_EARG, "--rank '%s': more ranks than the %d files",
				     s, n);
	return 0;
}

int cli_load_graph(char **paths, int n, const char *ranks, const struct build_opts *o,
		   struct graph **out, struct prism_err *err)
{
	struct kineto_trace *tr;
	struct strtab st;
	int rc = 0, nread = 0;

	*out = NULL;
	if (n == 1 && graph_file_is(paths[0]))
		return graph_load(paths[0], out, err);
	for (int i = 0; i < n; i++)
		if (graph_file_is(paths[i]))
			return prism_err_set(err, PRISM_EARG,
					     "%s: a saved graph cannot be mixed with other inputs",
					     paths[i]);
	tr = prism_calloc((size_t)n, sizeof(*tr));
	if (!tr || strtab_init(&st)) {
		free(tr);
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	}
	for (; nread < n && rc == 0; nread++)
		rc = kineto_read(paths[nread], &st, &tr[nread], err);
	if (rc == 0 && ranks)
		rc = parse_ranks(ranks, n, tr, err);
	if (rc == 0 && n == 1 && !ranks) {
		/* A prism timeline of several ranks: each rank its own again. */
		struct kineto_trace *parts = NULL;
		size_t np = 0;
		if (kineto_split(&tr[0], &parts, &np))
			rc = prism_err_set(err, PRISM_ENOMEM, "out of memory");
		else if (np) {
			kineto_release(&tr[0]);
			free(tr);
			tr = parts;
			n = nread = (int)np;
		}
	}
	if (rc == 0)
		rc = build_graph(tr, (size_t)n, &st, o, out, err);
	for (int i = 0; i < nread; i++)
		kineto_release(&tr[i]);
	free(tr);
	strtab_release(&st);
	return rc;
}

int cli_find_config(const char *kind, const char *name, char *out, size_t n)
{
	struct configs_dirs d;
	FILE *f;

	if (strchr(name, '/')) {
		snprintf(out, n, "%s", name);
		return 0; /* a path: its loader reports what is wrong with it */
	}
	configs_dirs_init(&d);
	for (int i = 0; i < d.n; i++) {
		for (int ext = 0; ext < 2; ext++) {
			snprintf(out, n, "%s/%s/%s%s", d.dir[i], kind, name, ext ? ".cfg" : "");
			if ((f = fopen(out, "r"))) {
				fclose(f);
				return 0;
			}
		}
	}
	/* Not a known name: maybe a file in the working directory. */
	if ((f = fopen(name, "r"))) {
		fclose(f);
		snprintf(out, n, "%s", name);
		return 0;
	}
	return -1;
}

static int load_named(const char *kind, const char *name, char *path, size_t n,
		      struct prism_err *err)
{
	char near[128];
	if (cli_find_config(kind, name, path, n) == 0)
		return 0;
	if (!strchr(name, '/') && configs_suggest(kind, name, near, sizeof(near)) == 0)
		return prism_err_set(err, PRISM_EIO,
				     "%s: no such file, nor configs/%s/%s.cfg; did you mean %s? "
				     "(prism list %s)",
				     name, kind, name, near, kind);
	return prism_err_set(err, PRISM_EIO,
			     "%s: no such file, nor configs/%s/%s.cfg (prism list %s)", name, kind,
			     name, kind);
}

int cli_trace_hw_path(const struct graph *g, char *path, size_t n, const char *src,
		      const char *hint, struct prism_err *err)
{
	const char *gpu = g->n_ranks ? strtab_get(&g->st, g->ranks[0].device) : "";
	const char *name = calib_profile_for(gpu, g->n_ranks ? (double)g->ranks[0].device_mem : 0);

	if (!gpu[0])
		return prism_err_set(
		    err, PRISM_EARG,
		    "%s%sthe trace names no GPU (deviceProperties), so no hardware "
		    "profile%s",
		    src ? src : "", src ? ": " : "", hint ? hint : "");
	if (!name || cli_find_config("hw", name, path, n))
		return prism_err_set(
		    err, PRISM_EARG,
		    "%s%sno hardware profile for the trace's GPU '%s' (configs/hw)%s",
		    src ? src : "", src ? ": " : "", gpu, hint ? hint : "");
	return 0;
}

int cli_load_hw(const char *name, struct hw_profile *hw, struct prism_err *err)
{
	char path[1024];
	int rc = load_named("hw", name, path, sizeof(path), err);
	return rc ? rc : hw_load(path, hw, err);
}

int cli_load_kdb(const char *path, struct kdb **out, struct prism_err *err)
{
	*out = kdb_new();
	if (!*out)
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	if (kdbstore_load(*out, path, err)) {
		kdb_free(*out);
		*out = NULL;
		return err->code;
	}
	return 0;
}

int cli_load_model(const char *name, struct llm *m, struct prism_err *err)
{
	char path[1024];
	int rc = load_named("models", name, path, sizeof(path), err);
	return rc ? rc : llm_load(path, m, err);
}

const char cli_layout_help[] =
    "layout (defaults: the base's, or 1 and 1f1b):\n"
    "      --tp N, --pp N, --dp N   tensor, pipeline and data parallel degrees\n"
    "      --vp N                   virtual stages per GPU (interleaved schedule)\n"
    "      --mbs N                  microbatch size (sequences)\n"
    "      --microbatches N         microbatches per iteration and pipeline\n"
    "      --gbs N                  or the global batch in sequences: microbatches\n"
    "                               = N / (mbs x dp)\n"
    "      --schedule S             gpipe, 1f1b or interleaved\n"
    "      --recompute R            none, selective or full\n"
    "      --sp                     sequence parallelism (with --tp)\n"
    "      --zero N                 ZeRO stage 0..3 over the data-parallel group\n"
    "      --dtype T                precision of the linear layers' GEMMs: fp32,\n"
    "                               tf32, bf16, fp16, fp8, fp4.  fp8 (fp4) as\n"
    "                               Transformer Engine runs it: attention, softmax,\n"
    "                               norms, logits and optimizer stay bf16/fp32;\n"
    "                               cast-transpose kernels, amax/scale updates and\n"
    "                               fp8 weight copies are added.  fp16 adds the\n"
    "                               loss-scaling unscale pass\n"
    "      --fp8-attention          the attention core in fp8 too (cuDNN/FA3 fp8)\n"
    "      --no-flash               attention without flash attention: scores\n"
    "                               materialised, softmax and dropout passes\n"
    "      --partition P            layers on the pipeline stages: even (layers /\n"
    "                               pp), balanced (stage times balanced, the\n"
    "                               embedding and the head counted), embed-loss\n"
    "                               (Megatron's account_for_embedding/loss: the\n"
    "                               first and last stages hold one layer fewer),\n"
    "                               or N0,N1,... layers per stage\n"
    "      --shard N                ZeRO/FSDP sharding group of N data-parallel\n"
    "                               ranks (hybrid sharding, replicas all-reduce;\n"
    "                               default: the whole data-parallel group)\n"
    "      --prefetch N             ZeRO-3: layers all-gathered ahead (default 1)\n"
    "      --bucket-mb N            gradient buckets of N MB (default: Megatron's\n"
    "                               max(40M, 1M x dp) parameters)\n"
    "      --no-overlap-grad        reduce gradients after the backward, not\n"
    "                               during it\n"
    "      --overlap-param          ZeRO-1/2: parameter all-gather overlapped with\n"
    "                               the next forward\n"
    "      --tp-overlap             tensor-parallel collectives overlapped with\n"
    "                               their GEMMs (needs --sp)\n"
    "      --no-pp-overlap          the compute waits for each pipeline send\n"
    "      --cp N                   context parallelism: each sequence split over N\n"
    "                               ranks, ring attention (key-value blocks passed\n"
    "                               around, overlapped with the attention steps);\n"
    "                               GPUs = tp x pp x dp x cp\n"
    "      --cp-allgather           --cp as Llama 3 ran it: K, V all-gathered\n"
    "mixture-of-experts models (experts in the model file):\n"
    "      --ep N                   expert parallel degree: the experts split over\n"
    "                               N ranks, tokens sent to them by all-to-all\n"
    "      --etp N                  expert tensor parallel degree (default 1); ep x\n"
    "                               etp must divide tp x dp (Megatron-LM's MoE\n"
    "                               parallel folding)\n"
    "      --moe-imbalance X        tokens on the busiest expert over the mean\n"
    "                               (default 1: balanced; capped by the model's\n"
    "                               capacity factor)\n"
    "model shape (defaults: the model's):\n"
    "      --layers N, --hidden N, --heads N, --ffn N, --seq N\n"
    "      --steps N                iterations to simulate (default 2; the first,\n"
    "                               from idle streams, is left out)\n";

int cli_count(const char *arg, const char *opt, int min, int max, int *out, struct prism_err *err)
{
	char *end;
	long v;
	errno = 0;
	v = strtol(arg, &end, 10);
	if (end == arg || *end || errno || v < min || v > max)
		return prism_err_set(err, PRISM_EARG,
				     "--%s '%s': expected a whole number in %d..%d", opt, arg, min,
				     max);
	*out = (int)v;
	return 0;
}

int cli_number(const char *arg, const char *opt, double min, double max, double *out,
	       struct prism_err *err)
{
	char *end;
	double v;
	errno = 0;
	v = strtod(arg, &end);
	/* Written so that NaN fails too. */
	if (end == arg || *end || errno || !(v >= min && v <= max))
		return prism_err_set(err, PRISM_EARG, "--%s '%s': expected a number in %g..%g", opt,
				     arg, min, max);
	*out = v;
	return 0;
}

int cli_layout_option(int c, const char *arg, struct synth_in *in, uint64_t *given,
		      struct prism_err *err)
{
	int rc = 0;
	if (c < CLI_OPT_TP || c >= CLI_OPT_NOPT)
		return 0;
	switch (c) {
	case CLI_OPT_TP:
		rc = cli_count(arg, "tp", 1, LAYOUT_MAX_TP, &in->lay.tp, err);
		break;
	case CLI_OPT_PP:
		rc = cli_count(arg, "pp", 1, LAYOUT_MAX_STAGES, &in->lay.pp, err);
		break;
	case CLI_OPT_DP:
		rc = cli_count(arg, "dp", 1, LAYOUT_MAX_DP, &in->lay.dp, err);
		break;
	case CLI_OPT_VP:
		rc = cli_count(arg, "vp", 1, LAYOUT_MAX_VP, &in->lay.vp, err);
		break;
	case CLI_OPT_MBS:
		rc = cli_count(arg, "mbs", 1, LAYOUT_MAX_MBS, &in->lay.mbs, err);
		break;
	case CLI_OPT_MICRO:
		rc =
		    cli_count(arg, "microbatches", 1, LAYOUT_MAX_MICRO, &in->lay.microbatches, err);
		break;
	case CLI_OPT_ZERO:
		rc = cli_count(arg, "zero", 0, 3, &in->lay.zero, err);
		break;
	case CLI_OPT_LAYERS:
		rc = cli_count(arg, "layers", 1, LLM_MAX_LAYERS, &in->m.layers, err);
		break;
	case CLI_OPT_HIDDEN:
		rc = cli_count(arg, "hidden", 1, LLM_MAX_HIDDEN, &in->m.hidden, err);
		break;
	case CLI_OPT_HEADS:
		rc = cli_count(arg, "heads", 1, LLM_MAX_HEADS, &in->m.heads, err);
		break;
	case CLI_OPT_FFN:
		rc = cli_count(arg, "ffn", 1, LLM_MAX_FFN, &in->m.ffn, err);
		break;
	case CLI_OPT_SEQ:
		rc = cli_count(arg, "seq", 1, LLM_MAX_SEQ, &in->m.seq, err);
		break;
	case CLI_OPT_STEPS:
		rc = cli_count(arg, "steps", 1, SYNTH_MAX_STEPS, &in->steps, err);
		break;
	case CLI_OPT_SP:
		in->lay.sp = 1;
		break;
	case CLI_OPT_NOFLASH:
		in->lay.flash = 0;
		break;
	case CLI_OPT_FP8ATTN:
		in->lay.fp8_attention = 1;
		break;
	case CLI_OPT_PARTITION:
		rc = layout_partition_parse(arg, &in->lay, err);
		break;
	case CLI_OPT_SHARD:
		rc = cli_count(arg, "shard", 1, LAYOUT_MAX_DP, &in->lay.shard, err);
		break;
	case CLI_OPT_PREFETCH:
		rc = cli_count(arg, "prefetch", 0, LAYOUT_MAX_PREFETCH, &in->lay.prefetch, err);
		break;
	case CLI_OPT_BUCKET:
		rc = cli_count(arg, "bucket-mb", 1, LAYOUT_MAX_BUCKET_MB, &in->lay.bucket_mb, err);
		break;
	case CLI_OPT_NO_OVERLAP_GRAD:
		in->lay.overlap_grad = 0;
		break;
	case CLI_OPT_OVERLAP_PARAM:
		in->lay.overlap_param = 1;
		break;
	case CLI_OPT_TP_OVERLAP:
		in->lay.tp_overlap = 1;
		break;
	case CLI_OPT_NO_PP_OVERLAP:
		in->lay.pp_overlap = 0;
		break;
	case CLI_OPT_EP:
		rc = cli_count(arg, "ep", 1, LAYOUT_MAX_EP, &in->lay.ep, err);
		break;
	case CLI_OPT_CP:
		rc = cli_count(arg, "cp", 1, LAYOUT_MAX_CP, &in->lay.cp, err);
		break;
	case CLI_OPT_CP_ALLGATHER:
		in->lay.cp_allgather = 1;
		break;
	case CLI_OPT_ETP:
		rc = cli_count(arg, "etp", 1, LAYOUT_MAX_TP, &in->lay.etp, err);
		break;
	case CLI_OPT_IMBALANCE:
		rc = cli_number(arg, "moe-imbalance", 1, LAYOUT_MAX_IMBALANCE, &in->lay.imbalance,
				err);
		break;
	case CLI_OPT_GBS: /* kept in microbatches until cli_layout_apply */
		rc = cli_count(arg, "gbs", 1, 1 << 24, &in->lay.microbatches, err);
		break;
	case CLI_OPT_SCHED:
		if ((in->lay.schedule = layout_schedule_parse(arg)) < 0)
			rc = prism_err_set(err, PRISM_EARG,
					   "--schedule '%s': expected gpipe, 1f1b or interleaved",
					   arg);
		break;
	case CLI_OPT_RECOMP:
		if ((in->lay.recompute = layout_recompute_parse(arg)) < 0)
			rc = prism_err_set(err, PRISM_EARG,
					   "--recompute '%s': expected none, selective or full",
					   arg);
		break;
	case CLI_OPT_DTYPE:
		if ((in->lay.dtype = hw_dtype_parse(arg)) < 0)
			rc = prism_err_set(
			    err, PRISM_EARG,
			    "--dtype '%s': expected fp32, tf32, bf16, fp16, fp8 or fp4", arg);
		break;
	default:
		return 0;
	}
	/* --gbs and --microbatches share a field: one or the other. */
	if (!rc && (c == CLI_OPT_GBS || c == CLI_OPT_MICRO) &&
	    (*given & CLI_SET(c == CLI_OPT_GBS ? CLI_OPT_MICRO : CLI_OPT_GBS)))
		rc = prism_err_set(err, PRISM_EARG, "give --gbs or --microbatches, not both");
	if (rc)
		return -1;
	*given |= CLI_SET(c);
	return 1;
}

int cli_layout_apply(const struct synth_in *src, uint64_t given, struct synth_in *dst,
		     struct prism_err *err)
{
#define A(opt, field)                                                                              \
	if (given & CLI_SET(opt))                                                                  \
	dst->field = src->field
	A(CLI_OPT_TP, lay.tp);
	A(CLI_OPT_PP, lay.pp);
	A(CLI_OPT_DP, lay.dp);
	A(CLI_OPT_VP, lay.vp);
	A(CLI_OPT_MBS, lay.mbs);
	A(CLI_OPT_MICRO, lay.microbatches);
	A(CLI_OPT_SCHED, lay.schedule);
	A(CLI_OPT_RECOMP, lay.recompute);
	A(CLI_OPT_SP, lay.sp);
	A(CLI_OPT_ZERO, lay.zero);
	A(CLI_OPT_DTYPE, lay.dtype);
	A(CLI_OPT_LAYERS, m.layers);
	A(CLI_OPT_HIDDEN, m.hidden);
	A(CLI_OPT_HEADS, m.heads);
	A(CLI_OPT_FFN, m.ffn);
	A(CLI_OPT_SEQ, m.seq);
	A(CLI_OPT_STEPS, steps);
	A(CLI_OPT_NOFLASH, lay.flash);
	A(CLI_OPT_FP8ATTN, lay.fp8_attention);
	A(CLI_OPT_PARTITION, lay.partition);
	A(CLI_OPT_SHARD, lay.shard);
	A(CLI_OPT_PREFETCH, lay.prefetch);
	A(CLI_OPT_BUCKET, lay.bucket_mb);
	A(CLI_OPT_NO_OVERLAP_GRAD, lay.overlap_grad);
	A(CLI_OPT_OVERLAP_PARAM, lay.overlap_param);
	A(CLI_OPT_TP_OVERLAP, lay.tp_overlap);
	A(CLI_OPT_NO_PP_OVERLAP, lay.pp_overlap);
	A(CLI_OPT_EP, lay.ep);
	A(CLI_OPT_ETP, lay.etp);
	A(CLI_OPT_IMBALANCE, lay.imbalance);
	A(CLI_OPT_CP, lay.cp);
	A(CLI_OPT_CP_ALLGATHER, lay.cp_allgather);
#undef A
	if (given & CLI_SET(CLI_OPT_PARTITION))
		memcpy(dst->lay.part, src->lay.part, sizeof(dst->lay.part));
	if (given & CLI_SET(CLI_OPT_GBS)) {
		long per = (long)dst->lay.mbs * dst->lay.dp, gbs = src->lay.microbatches;
		if (gbs % per)
			return prism_err_set(err, PRISM_EARG,
					     "--gbs %ld is not a multiple of mbs %d x dp %d", gbs,
					     dst->lay.mbs, dst->lay.dp);
		dst->lay.microbatches = (int)(gbs / per);
	}
	return 0;
}

/* TRACE.json -> TRACE.rankR.json when there are several ranks (and
 * TRACE.json.gz -> TRACE.rankR.json.gz). */
void cli_rank_path(const char *path, int rank, int ranks, char *out, size_t n)
{
	size_t len = strlen(path);
	int gz = len > 3 && strcmp(path + len - 3, ".gz") == 0;
	if (ranks <= 1) {
		snprintf(out, n, "%s", path);
		return;
	}
	if (gz)
		len -= 3;
	if (len > 5 && strncmp(path + len - 5, ".json", 5) == 0)
		len -= 5;
	snprintf(out, n, "%.*s.rank%d.json%s", (int)len, path, rank, gz ? ".gz" : "");
}

int cli_not_input(const char *out, const char *opt, char *const *in, int n, struct prism_err *err)
{
	for (int i = 0; out && i < n; i++)
		if (in[i] && prism_same_file(out, in[i]))
			return prism_err_set(
			    err, PRISM_EARG,
			    "%s %s would overwrite the input %s: give another file", opt, out,
			    in[i]);
	return 0;
}

int cli_write_trace(const struct graph *g, const struct synth_out *so, const char *path,
		    char *const *in, int n_in, struct prism_err *err)
{
	struct sim *s;
	struct sim_opts o;
	int rc;

	/* Every rank's file is checked before the first is written. */
	for (uint32_t r = 0; r < g->n_ranks; r++) {
		char p[1024];
		cli_rank_path(path, (int)r, (int)g->n_ranks, p, sizeof(p));
		if ((rc = cli_not_input(p, "the output", in, n_in, err)))
			return rc;
	}
	if (!(s = sim_new(g)))
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	sim_opts_default(&o);
	rc = sim_run(s, &o, err);
	for (uint32_t r = 0; rc == 0 && r < g->n_ranks; r++) {
		struct timeline_opts to = {(int)r, so->waits, so->n_waits};
		char p[1024];
		cli_rank_path(path, (int)r, (int)g->n_ranks, p, sizeof(p));
		rc = timeline_write(s, p, &to, err);
		if (rc == 0)
			fprintf(stderr, "prism synth: wrote %s\n", p);
	}
	sim_free(s);
	return rc;
}
