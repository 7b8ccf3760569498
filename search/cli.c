/* cli.c - helpers shared by the subcommands. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build.h"
#include "calib.h"
#include "configs.h"
#include "desc.h"
#include "frame.h"
#include "hw.h"
#include "kdb.h"
#include "kdbstore.h"
#include "kineto.h"
#include "llm.h"
#include "prism_git.h" /* PRISM_GIT: the build's commit (scripts/git_version.cmake) */
#include "sim.h"
#include "synth.h"
#include "timeline.h"
#include "usage.h"
#include "kbench.h"

int cli_fail(const struct prism_err *err)
{
	fprintf(stderr, "prism: %s\n", err->msg[0] ? err->msg : prism_status_msg(err->code));
	/* Out of memory is the input's doing as a limit is (a run too
	 * large for this machine): exit 2 as well; 1 is left to what went
	 * wrong on the way out (a write error) and to internal failures. */
	return err->code == PRISM_EFORMAT || err->code == PRISM_EVERSION ||
		       err->code == PRISM_EARG || err->code == PRISM_EIO ||
		       err->code == PRISM_ELIMIT || err->code == PRISM_ENOMEM
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

/* The run description of trace tr (its first "prism::model#..." range's
 * string id in st), or 0 when it has none. */
static uint32_t run_desc(const struct kineto_trace *tr, const struct strtab *st)
{
	for (size_t i = 0; i < tr->events.n; i++) {
		const struct kt_event *e = &tr->events.v[i];
		if ((e->kind == KT_USER_ANN || e->kind == KT_CPU_OP) &&
		    strncmp(strtab_get(st, e->name), DESC_PREFIX, strlen(DESC_PREFIX)) == 0)
			return e->name;
	}
	return 0;
}

/* Files of one job describe one run: every trace the same description,
 * or none.  A set mixing two runs (rank files of an earlier synth -o left
 * beside a later one's) is refused: PRISM_EFORMAT naming two files. */
static int one_run(char **paths, const struct kineto_trace *tr, int n, const struct strtab *st,
		   struct prism_err *err)
{
	uint32_t first = n ? run_desc(&tr[0], st) : 0;
	for (int i = 1; i < n; i++) {
		uint32_t d = run_desc(&tr[i], st);
		if (d == first)
			continue;
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s: %s %s's: the files are not one run (give the ranks of "
				     "one)",
				     paths[i],
				     !d	      ? "has no run description (prism::model#), unlike"
				     : !first ? "has a run description (prism::model#), unlike"
					      : "describes another run (prism::model#) than",
				     paths[0]);
	}
	return 0;
}

/* Every rank of a trace did GPU work: a file without (recorded with CPU
 * activities only, or by a range profiler, which keeps no per-kernel
 * events) has nothing prism can replay or edit. */
static int gpu_work(const struct graph *g, struct prism_err *err)
{
	for (uint32_t r = 0; r < g->n_ranks; r++) {
		uint64_t n = 0;
		for (uint32_t p = 0; p < g->n_procs; p++)
			if (g->procs[p].rank == r && g->procs[p].gpu)
				n += g->procs[p].n;
		if (!n)
			return prism_err_set(
			    err, PRISM_EFORMAT,
			    "%s: no GPU events (kernels, copies, collectives): the trace was "
			    "recorded without CUDA activities (torch.profiler's "
			    "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]; a CUPTI "
			    "range "
			    "profiler keeps none), so there is no GPU work to replay",
			    strtab_get(&g->st, g->ranks[r].path));
	}
	return 0;
}

int cli_load_graph(char **paths, int n, const char *ranks, const struct build_opts *o,
		   struct graph **out, struct prism_err *err)
{
	struct kineto_trace *tr;
	struct strtab st;
	int rc = 0, nread = 0;

	*out = NULL;
	/* '-': standard input, copied into a file. */
	for (int i = 0; i < n; i++)
		if (strcmp(paths[i], "-") == 0) {
			const char *in = cli_stdin_file(err);
			if (!in)
				return err->code;
			if (n > 1)
				return prism_err_set(err, PRISM_EARG,
						     "-: standard input is one trace; give the "
						     "ranks' files by name");
			paths[i] = (char *)in;
		}
	/* Nothing is opened that could block: a FIFO waits for a writer. */
	for (int i = 0; i < n; i++)
		if ((rc = cli_not_special(paths[i], err)))
			return rc;
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
	if (rc == 0)
		rc = one_run(paths, tr, n, &st, err);
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
	if (rc == 0 && (rc = gpu_work(*out, err))) {
		graph_free(*out);
		*out = NULL;
	}
	for (int i = 0; i < nread; i++)
		kineto_release(&tr[i]);
	free(tr);
	strtab_release(&st);
	return rc;
}

int cli_not_special(const char *path, struct prism_err *err)
{
	const char *special = prism_special_file(path);
	return special
		   ? prism_err_set(err, PRISM_EARG, "%s: not a regular file (%s)", path, special)
		   : 0;
}

int cli_path_long(const char *what, const char *path, size_t max, struct prism_err *err)
{
	return prism_err_set(err, PRISM_EARG,
			     "%s %.32s...: too long a path (%zu bytes; at most %zu)", what, path,
			     strlen(path), max);
}

/* Whether path, a name probed for a configuration, is the file: 0 when it
 * is a regular file; 1 when it is absent or a folder; PRISM_EARG when it is
 * a FIFO, device or socket (err set). */
static int probe(const char *path, struct prism_err *err)
{
	struct stat sb;
	int rc = cli_not_special(path, err);
	return rc ? rc : stat(path, &sb) == 0 && S_ISREG(sb.st_mode) ? 0 : 1;
}

int cli_find_config(const char *kind, const char *name, char *out, size_t n, struct prism_err *err)
{
	struct configs_dirs d;
	int rc;

	if (strcmp(name, "-") == 0) { /* standard input */
		const char *in = cli_stdin_file(err);
		if (!in)
			return err->code;
		snprintf(out, n, "%s", in);
		return 0;
	}
	if (strchr(name, '/')) {
		/* A path: its loader reports what is wrong with it, unless
		 * opening it could block. */
		if ((size_t)snprintf(out, n, "%s", name) >= n)
			return cli_path_long(kind, name, n - 1, err);
		return (rc = probe(name, err)) < 0 ? rc : 0;
	}
	configs_dirs_init(&d);
	for (int i = 0; i < d.n; i++) {
		for (int ext = 0; ext < 2; ext++) {
			/* A path too long to name is no file prism can open. */
			if ((size_t)snprintf(out, n, "%s/%s/%s%s", d.dir[i], kind, name,
					     ext ? ".cfg" : "") < n &&
			    (rc = probe(out, err)) <= 0)
				return rc;
		}
	}
	/* Not a known name: maybe a file in the working directory. */
	if ((size_t)snprintf(out, n, "%s", name) < n && (rc = probe(name, err)) <= 0)
		return rc;
	return 1;
}

int cli_config_path(const char *kind, const char *name, char *path, size_t n, struct prism_err *err)
{
	char near[128];
	int rc = cli_find_config(kind, name, path, n, err);
	if (rc <= 0)
		return rc;
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
	int rc = 0;

	if (!gpu[0])
		return prism_err_set(
		    err, PRISM_EARG,
		    "%s%sthe trace names no GPU (deviceProperties), so no hardware "
		    "profile%s",
		    src ? src : "", src ? ": " : "", hint ? hint : "");
	if (name && (rc = cli_find_config("hw", name, path, n, err)) < 0)
		return rc;
	if (!name || rc)
		return prism_err_set(
		    err, PRISM_EARG,
		    "%s%sno hardware profile for the trace's GPU '%s' (configs/hw)%s",
		    src ? src : "", src ? ": " : "", gpu, hint ? hint : "");
	return 0;
}

int cli_is_stdout(const char *path)
{
	return path && strcmp(path, "-") == 0;
}

static char stdin_copy[4096];

static void stdin_copy_remove(void)
{
	if (stdin_copy[0])
		unlink(stdin_copy);
}

const char *cli_stdin_file(struct prism_err *err)
{
	const char *tmp = getenv("TMPDIR");
	char buf[1 << 16];
	ssize_t r;
	int fd;

	if (stdin_copy[0])
		return stdin_copy;
	if (isatty(STDIN_FILENO)) {
		prism_err_set(err, PRISM_EARG,
			      "-: standard input is a terminal (pipe or redirect a file into it)");
		return NULL;
	}
	if (!tmp || !tmp[0])
		tmp = "/tmp";
	if ((size_t)snprintf(stdin_copy, sizeof(stdin_copy), "%s/prism-stdin-XXXXXX", tmp) >=
	    sizeof(stdin_copy)) {
		stdin_copy[0] = '\0';
		cli_path_long("TMPDIR", tmp, sizeof(stdin_copy) - 32, err);
		return NULL;
	}
	if ((fd = mkstemp(stdin_copy)) < 0) {
		prism_err_set(err, PRISM_EIO, "-: cannot copy standard input into %s: %s",
			      stdin_copy, strerror(errno));
		stdin_copy[0] = '\0';
		return NULL;
	}
	atexit(stdin_copy_remove);
	while ((r = read(STDIN_FILENO, buf, sizeof(buf))) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || write(fd, buf, (size_t)r) != r) {
			prism_err_set(err, PRISM_EIO, "-: cannot copy standard input into %s: %s",
				      stdin_copy, strerror(errno));
			close(fd);
			return NULL; /* removed at exit */
		}
	}
	if (close(fd)) {
		prism_err_set(err, PRISM_EIO, "-: cannot copy standard input into %s: %s",
			      stdin_copy, strerror(errno));
		return NULL;
	}
	return stdin_copy;
}

void cli_stdout_taken(void)
{
	fflush(stdout);
	dup2(STDERR_FILENO, STDOUT_FILENO);
}

const char *cli_version(void)
{
	return PRISM_GIT[0] ? PRISM_VERSION " (git " PRISM_GIT ")"
			    : PRISM_VERSION " (no git: built outside a git checkout)";
}

int cli_load_hw(const char *name, struct hw_profile *hw, struct prism_err *err)
{
	char path[1024];
	int rc = cli_config_path("hw", name, path, sizeof(path), err);
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
	struct frame_extra x;
	int rc = cli_config_path("models", name, path, sizeof(path), err);
	if (rc || (rc = frame_load_model(path, m, &x, err)))
		return rc;
	/* a config.json's fields that would change the model, not modelled */
	if (x.warn[0])
		fprintf(stderr, "prism: %s: warning: %s\n", path, x.warn);
	return 0;
}

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

void cli_longopts(const struct option *own, struct option *out, size_t cap)
{
	size_t n = 0;
	while (own[n].name && n + 1 < cap) {
		out[n] = own[n];
		n++;
	}
	for (int k = 0; k < LK_N && n + 1 < cap; k++)
		if (layout_knobs[k].opt)
			out[n++] = (struct option){
			    layout_knobs[k].opt,
			    layout_knobs[k].kind == LK_BOOL ? no_argument : required_argument, NULL,
			    CLI_OPT_KNOB + k};
	if (n + 1 < cap)
		out[n++] = (struct option){"gbs", required_argument, NULL, CLI_OPT_GBS};
	if (n + 1 < cap)
		out[n++] = (struct option){"steps", required_argument, NULL, CLI_OPT_STEPS};
	if (n + 1 < cap)
		out[n++] =
		    (struct option){"megatron-args", required_argument, NULL, CLI_OPT_MEGATRON};
	out[n] = (struct option){NULL, 0, NULL, 0};
}

void cli_layout_init(struct cli_layout *o)
{
	memset(o, 0, sizeof(*o));
	synth_in_default(&o->in);
}

/* --megatron-args FILE: its knobs into o as if given one by one; its
 * global batch as --gbs; dp from a launcher line's world size. */
static int megatron_args(const char *path, struct cli_layout *o, struct prism_err *err)
{
	struct frame_extra x;
	struct llm m;
	struct layout l;
	layout_mask given;
	char *buf;
	size_t len;
	int rc;

	if ((rc = cli_not_special(path, err)) || (rc = frame_read(path, &buf, &len, err)))
		return rc;
	rc = frame_import(FRAME_MEGATRON, path, buf, len, NULL, &m, &l, &given, &x, err);
	free(buf);
	if (rc || (rc = frame_resolve(&l, &given, x.gpus, 0, x.instances, err))) {
		if (rc == PRISM_EARG)
			prism_err_prefix(err, "--megatron-args %s", path);
		return rc;
	}
	if (x.warn[0])
		fprintf(stderr, "prism: %s: warning: %s\n", path, x.warn);
	for (int k = 0; k < LK_N; k++)
		if (given & LK_BIT(k))
			layout_set(&o->in.m, &o->in.lay, k, layout_get(&m, &l, k, 0));
	if (given & LK_BIT(LK_partition)) /* the list, where it is one */
		memcpy(o->in.lay.part, l.part, sizeof(l.part));
	o->given |= given;
	if (x.gbs)
		o->gbs = x.gbs;
	return 0;
}

int cli_layout_option(int c, const char *arg, struct cli_layout *o, struct prism_err *err)
{
	int k = c - CLI_OPT_KNOB;
	char what[48];
	double v;

	if (c == CLI_OPT_MEGATRON) {
		if (megatron_args(arg, o, err))
			return -1;
	} else if (c == CLI_OPT_GBS || c == CLI_OPT_STEPS) {
		int *out = c == CLI_OPT_GBS ? &o->gbs : &o->steps;
		if (cli_count(arg, c == CLI_OPT_GBS ? "gbs" : "steps", 1,
			      c == CLI_OPT_GBS ? 1 << 24 : SYNTH_MAX_STEPS, out, err))
			return -1;
	} else if (k >= 0 && k < LK_N && layout_knobs[k].opt) {
		const struct layout_knob *K = &layout_knobs[k];
		snprintf(what, sizeof(what), "--%s", K->opt);
		if (K->kind == LK_BOOL)
			v = !K->def; /* a flag: the other value than the default */
		else if (K->kind == LK_PART ? layout_partition_parse(arg, &o->in.lay, err)
					    : layout_parse(k, arg, what, &v, &o->in.lay, err))
			return -1;
		if (K->kind != LK_PART)
			layout_set(&o->in.m, &o->in.lay, k, v);
		o->given |= LK_BIT(k);
	} else {
		return 0;
	}
	/* --gbs sets the microbatches: one or the other. */
	if (o->gbs && (o->given & LK_BIT(LK_microbatches))) {
		prism_err_set(err, PRISM_EARG, "give --gbs or --microbatches, not both");
		return -1;
	}
	return 1;
}

int cli_layout_apply(const struct cli_layout *o, struct synth_in *dst, struct prism_err *err)
{
	for (int k = 0; k < LK_N; k++)
		if (o->given & LK_BIT(k))
			layout_set(&dst->m, &dst->lay, k, layout_get(&o->in.m, &o->in.lay, k, 0));
	if (o->given & LK_BIT(LK_partition)) {
		memcpy(dst->lay.part, o->in.lay.part, sizeof(dst->lay.part));
		dst->lay.part_chunks = o->in.lay.part_chunks;
		dst->lay.part_first = o->in.lay.part_first;
		dst->lay.part_last = o->in.lay.part_last;
		dst->lay.part_mtp = o->in.lay.part_mtp;
	}
	if (o->steps)
		dst->steps = o->steps;
	if (o->gbs) {
		long per = (long)dst->lay.mbs * dst->lay.dp;
		if (o->gbs % per)
			return prism_err_set(err, PRISM_EARG,
					     "--gbs %d is not a multiple of mbs %d x dp %d", o->gbs,
					     dst->lay.mbs, dst->lay.dp);
		dst->lay.microbatches = (int)(o->gbs / per);
	}
	return 0;
}

void cli_wrap(FILE *f, const char *text, int at, int col)
{
	const char *p = text;
	while (*p) {
		const char *end = p, *brk = NULL;
		while (*end && at + (end - p) < 80) {
			if (*end == ' ')
				brk = end;
			end++;
		}
		if (*end && brk)
			end = brk;
		fprintf(f, "%.*s\n", (int)(end - p), p);
		p = *end == ' ' ? end + 1 : end;
		if (*p)
			fprintf(f, "%*s", col, "");
		at = col;
	}
}

static void help_line(FILE *f, const char *opt, const char *arg, const char *text)
{
	char left[48];
	snprintf(left, sizeof(left), "      --%s%s%s", opt, arg ? " " : "", arg ? arg : "");
	if (strlen(left) > 30)
		fprintf(f, "%s\n%31s", left, "");
	else
		fprintf(f, "%-31s", left);
	cli_wrap(f, text, 31, 31);
}

/* The help's sections: the layout, mixture-of-experts, the model's shape. */
static int help_section(int k)
{
	if (layout_knobs[k].home == LK_M)
		return 2;
	return layout_knobs[k].flags & LK_MOE ? 1 : 0;
}

void cli_layout_help(FILE *f)
{
	static const char *const heads[] = {
	    "layout (defaults: the base's, or as below):\n",
	    "mixture-of-experts models (experts in the model file):\n",
	    "model shape (defaults: the model's):\n"};
	for (int sec = 0; sec < 3; sec++) {
		fputs(heads[sec], f);
		for (int k = 0; k < LK_N; k++) {
			const struct layout_knob *K = &layout_knobs[k];
			char text[1024], def[80] = "";
			if (!K->opt || help_section(k) != sec)
				continue;
			if (K->home == LK_L && K->kind != LK_BOOL && K->kind != LK_PART) {
				char v[64];
				struct layout l;
				layout_default(&l);
				layout_format(NULL, &l, k, 0, v, sizeof(v));
				snprintf(def, sizeof(def), " (default %s)", v);
			}
			snprintf(text, sizeof(text), "%s%s", K->help, def);
			help_line(f, K->opt, K->arg, text);
			if (k == LK_microbatches)
				help_line(f, "gbs", "N",
					  "or the global batch in sequences: microbatches = N / "
					  "(mbs x dp)");
		}
	}
	help_line(f, "steps", "N",
		  "iterations to simulate (default 2; the first, from idle streams, is left "
		  "out)");
	help_line(f, "megatron-args", "FILE",
		  "the layout of a Megatron-LM argument list (--tensor-model-parallel-size, "
		  "--pipeline-model-parallel-size, --num-layers-per-virtual-pipeline-stage, "
		  "--context-parallel-size, --micro-batch-size, --global-batch-size, "
		  "--sequence-parallel, --use-distributed-optimizer, --recompute-granularity, "
		  "...; docs/FORMATS.md), as if each were given; dp from a torchrun line's "
		  "--nnodes x --nproc-per-node, else --dp");
}

void cli_parse_init(struct cli_parse *p, const char *cmd, const char *help, const char *shortopts,
		    const struct option *longopts, struct build_opts *bo, const char **ranks,
		    const char *none)
{
	*p = (struct cli_parse){cmd, help, NULL, shortopts, longopts, bo, ranks, NULL, none, 0};
	optind = 1;
}

int cli_next_option(struct cli_parse *p, int argc, char **argv, struct prism_err *err)
{
	int c;
	while ((c = getopt_long(argc, argv, p->shortopts, p->longopts, NULL)) != -1) {
		int used = p->lay ? cli_layout_option(c, optarg, p->lay, err) : 0;
		if (used == 0 && p->bo)
			used = cli_build_option(c, optarg, p->bo, p->ranks, err);
		if (used < 0) {
			p->status = cli_fail(err);
			return CLI_PARSE_EXIT;
		}
		if (used)
			continue;
		if (c == 'h') {
			fputs(p->help, stdout);
			if (p->help_more)
				fputs(p->help_more, stdout);
			if (p->lay)
				cli_layout_help(stdout);
			p->status = 0;
			return CLI_PARSE_EXIT;
		}
		if (c == '?' || c == ':') {
			p->status = usage_bad_option(p->cmd, p->shortopts, p->longopts, argv);
			return CLI_PARSE_EXIT;
		}
		return c;
	}
	if (p->none && optind >= argc) {
		fprintf(stderr, "prism %s: %s\n%s%s", p->cmd, p->none, p->help,
			p->help_more ? p->help_more : "");
		p->status = EXIT_USAGE;
		return CLI_PARSE_EXIT;
	}
	return -1;
}

int cli_stdout_shared(const char *path, const char *opt, const char *other)
{
	const char *sep = opt[0] && opt[strlen(opt) - 1] == '=' ? "" : " ";
	if (!other || !cli_is_stdout(path))
		return 0;
	fprintf(stderr, "prism: %s%s- and %s would share standard output: give %s%sFILE\n", opt,
		sep, other, opt, sep);
	return 1;
}

int cli_rank_path(const char *path, const char *opt, int rank, int ranks, char *out, size_t n,
		  struct prism_err *err)
{
	size_t len = strlen(path), k;
	int gz = len > 3 && strcmp(path + len - 3, ".gz") == 0;
	if (ranks <= 1) {
		k = (size_t)snprintf(out, n, "%s", path);
	} else {
		if (gz)
			len -= 3;
		if (len > 5 && strncmp(path + len - 5, ".json", 5) == 0)
			len -= 5;
		k = (size_t)snprintf(out, n, "%.*s.rank%d.json%s", (int)len, path, rank,
				     gz ? ".gz" : "");
	}
	/* A path cut short names another file (rank files over each other). */
	return k < n ? 0 : cli_path_long(opt, path, n - 1 - (k - strlen(path)), err);
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

/* A new empty file beside final to write it into first: hidden, keeping
 * final's ".gz" (the writer compresses by the name), "DIR/.NAME.partPID.K
 * [.gz]", created O_EXCL (a name another holds, a planted link, is passed
 * over).  0, or -1 with errno set. */
static int reserve(const char *final, char *tmp, size_t n)
{
	const char *slash = strrchr(final, '/');
	int dl = slash ? (int)(slash - final + 1) : 0;
	size_t len = strlen(final);
	int gz = len > 3 && strcmp(final + len - 3, ".gz") == 0;
	for (int k = 0; k < 100; k++) {
		int fd;
		if ((size_t)snprintf(tmp, n, "%.*s.%s.part%ld.%d%s", dl, final, final + dl,
				     (long)getpid(), k, gz ? ".gz" : "") >= n) {
			errno = ENAMETOOLONG;
			return -1;
		}
		if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666)) >= 0)
			return close(fd);
		if (errno != EEXIST)
			return -1;
	}
	return -1;
}

int cli_write_trace(const struct graph *g, const struct synth_out *so, const char *path,
		    const char *opt, char *const *in, int n_in, struct prism_err *err)
{
	uint32_t n = g->n_ranks ? g->n_ranks : 1, made = 0;
	char(*final)[CLI_PATH_MAX], (*tmp)[CLI_PATH_MAX + 64];
	struct sim *s = NULL;
	struct sim_opts o;
	int rc = 0;

	final = prism_malloc(n * sizeof(*final));
	tmp = prism_malloc(n * sizeof(*tmp));
	if (!final || !tmp) {
		rc = prism_err_set(err, PRISM_ENOMEM, "out of memory");
		goto out;
	}
	/* Standard output holds one trace. */
	if (cli_is_stdout(path) && g->n_ranks > 1) {
		rc = prism_err_set(err, PRISM_EARG,
				   "%s -: one trace goes to standard output, and this run has %u "
				   "ranks (one file each): give a file name",
				   opt, g->n_ranks);
		goto out;
	}
	/* Every rank's file is checked before the first is written. */
	for (uint32_t r = 0; rc == 0 && r < g->n_ranks; r++) {
		struct stat sb;
		if ((rc = cli_rank_path(path, opt, (int)r, (int)g->n_ranks, final[r],
					sizeof(*final), err)) ||
		    (rc = cli_not_input(final[r], "the output", in, n_in, err)))
			break;
		if (g->n_ranks > 1 && lstat(final[r], &sb) == 0 && S_ISDIR(sb.st_mode))
			rc = prism_err_set(err, PRISM_EARG, "%s %s: %s is a folder", opt, path,
					   final[r]);
	}
	if (rc == 0 && !(s = sim_new(g)))
		rc = prism_err_set(err, PRISM_ENOMEM, "out of memory");
	if (rc == 0) {
		sim_opts_default(&o);
		rc = sim_run(s, &o, err);
	}
	/* One file: written whole or not at all (timeline_write).  Several
	 * (the ranks of one run): each into a new file first, renamed over
	 * its name once all are written, so that a run killed or failing
	 * midway leaves the previous set whole, never a mix of two runs. */
	for (uint32_t r = 0; rc == 0 && r < g->n_ranks; r++) {
		struct timeline_opts to = {(int)r, so->waits, so->n_waits};
		if (g->n_ranks == 1) {
			rc = timeline_write(s, final[r], &to, err);
			continue;
		}
		if (reserve(final[r], tmp[r], sizeof(*tmp))) {
			rc = prism_err_set(err, PRISM_EIO, "%s: %s", final[r], strerror(errno));
			break;
		}
		made++;
		/* Its errors name the file asked for. */
		if ((rc = timeline_write(s, tmp[r], &to, err)) && err &&
		    strncmp(err->msg, tmp[r], strlen(tmp[r])) == 0) {
			char rest[PRISM_ERR_MSG_MAX];
			snprintf(rest, sizeof(rest), "%s", err->msg + strlen(tmp[r]));
			snprintf(err->msg, sizeof(err->msg), "%s%s", final[r], rest);
		}
	}
	for (uint32_t r = 0; rc == 0 && r < made; r++)
		if (rename(tmp[r], final[r]))
			rc = prism_err_set(err, PRISM_EIO, "%s: %s", final[r], strerror(errno));
	for (uint32_t r = 0; r < made; r++)
		unlink(tmp[r]); /* those not renamed */
	for (uint32_t r = 0; rc == 0 && r < g->n_ranks; r++)
		fprintf(stderr, "prism synth: wrote %s\n", final[r]);
out:
	sim_free(s);
	free(final);
	free(tmp);
	return rc;
}

void cli_put_skips_json(FILE *f, size_t placed, const struct kbench_skips *s)
{
	fprintf(f, "\"rows_placed\":%zu,\"left_out\":%zu,\"left_out_why\":{", placed, s->skipped);
	for (int i = 0; i < s->n_why; i++) {
		fprintf(f, "%s", i ? "," : "");
		prism_fput_json_str(f, s->why[i]);
		fprintf(f, ":%zu", s->n[i]);
	}
	fputc('}', f);
}
