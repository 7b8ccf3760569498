/* sweep.c - search spaces from libconfig files, and their candidates. */
#include "sweep.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "build.h"
#include "cfg.h"
#include "cli.h"
#include "kdb.h"
#include "vec.h"

static const char *const status_names[] = {"pending",  "invalid",   "oom",
					   "screened", "simulated", "failed"};

const char *cand_status_name(int s)
{
	return s >= 0 && s <= CS_FAILED ? status_names[s] : "?";
}

int sweep_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n < 1 || n > SWEEP_NAME_MAX || name[0] == '.')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (name[i] == '/' || (unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return 0;
	return 1;
}

/* 'name' names the database and the report folder: it must be one file
 * name (sweep_name_ok), or "../../x" would write outside results/. */
static int name_setting(const char *file, const config_t *cf, struct sweep *s,
			struct prism_err *err)
{
	const config_setting_t *e = config_lookup(cf, "name");
	const char *v = e ? config_setting_get_string(e) : NULL;
	int rc;

	if ((rc = cfg_text(file, cf, NULL, "name", s->name, sizeof(s->name), err)))
		return rc;
	if (v && sweep_name_ok(v))
		return 0;
	return prism_err_set(err, PRISM_EFORMAT,
			     "%s:%d: 'name' must be one file name: 1 to %d bytes, no '/', no "
			     "leading '.', no control characters",
			     file, config_setting_source_line(e), SWEEP_NAME_MAX);
}

/* The value of a list element: a whole number in min..max, or a name
 * parse() knows. */
static int element(const char *file, const config_setting_t *e, const char *knob, int min, int max,
		   int (*parse)(const char *), int *out, struct prism_err *err)
{
	if (parse) {
		const char *s = config_setting_get_string(e);
		if (!s)
			return prism_err_set(err, PRISM_EFORMAT,
					     "%s:%d: '%s' must list names in quotes", file,
					     config_setting_source_line(e), knob);
		if ((*out = parse(s)) >= 0)
			return 0;
		return prism_err_set(err, PRISM_EFORMAT, "%s:%d: '%s': unknown value '%s'", file,
				     config_setting_source_line(e), knob, s);
	}
	if (config_setting_type(e) != CONFIG_TYPE_INT)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: '%s' must list whole numbers in %d..%d", file,
				     config_setting_source_line(e), knob, min, max);
	*out = config_setting_get_int(e);
	if (*out < min || *out > max)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: '%s' must list whole numbers in %d..%d, not %d", file,
				     config_setting_source_line(e), knob, min, max, *out);
	return 0;
}

/* A partition's name in a sweep: even, balanced or embed-loss (lists of
 * layers per stage belong to one pp: synth and whatif take them). */
static int part_parse(const char *s)
{
	if (strcmp(s, "even") == 0)
		return LAYOUT_PART_GIVEN;
	if (strcmp(s, "balanced") == 0)
		return LAYOUT_PART_BALANCED;
	if (strcmp(s, "embed-loss") == 0)
		return LAYOUT_PART_EMBED_LOSS;
	return -1;
}

/* space.KNOB: a list (or one value) of whole numbers in min..max or of
 * names parse() knows; absent: the default. */
static int knob(const char *file, config_setting_t *space, const char *name, int def, int min,
		int max, int (*parse)(const char *), struct sweep_list *out, struct prism_err *err)
{
	config_setting_t *k = space ? config_setting_lookup(space, name) : NULL;
	char full[64];
	int rc;

	snprintf(full, sizeof(full), "%s%s", space && config_setting_is_root(space) ? "" : "space.",
		 name);
	out->n = 0;
	if (!k) {
		out->v[out->n++] = def;
		return 0;
	}
	if (config_setting_is_aggregate(k)) {
		int n = config_setting_length(k);
		if (n < 1)
			return prism_err_set(err, PRISM_EFORMAT, "%s:%d: '%s' is an empty list",
					     file, config_setting_source_line(k), full);
		if (n > SWEEP_MAX_LIST)
			return prism_err_set(
			    err, PRISM_EFORMAT, "%s:%d: '%s' lists %d values, at most %d", file,
			    config_setting_source_line(k), full, n, SWEEP_MAX_LIST);
		for (int i = 0; i < n; i++)
			if ((rc = element(file, config_setting_get_elem(k, (unsigned)i), full, min,
					  max, parse, &out->v[out->n++], err)))
				return rc;
		return 0;
	}
	return element(file, k, full, min, max, parse, &out->v[out->n++], err);
}

char *sweep_canon(const char *text)
{
	config_t cf;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	config_init(&cf);
	if (config_read_string(&cf, text) != CONFIG_TRUE || !(f = open_memstream(&buf, &len))) {
		config_destroy(&cf);
		return NULL;
	}
	config_write(&cf, f);
	config_destroy(&cf);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = prism_malloc((size_t)n + 1))) {
		if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		} else {
			buf[n] = '\0';
		}
	}
	fclose(f);
	return buf;
}

/* Every setting of group g must be one of names (a typo is an error, not
 * a silently ignored knob). */
static int known(const char *file, config_setting_t *g, const char *const *names, int n,
		 const char *where, struct prism_err *err)
{
	for (int i = 0; g && i < config_setting_length(g); i++) {
		config_setting_t *e = config_setting_get_elem(g, (unsigned)i);
		const char *nm = config_setting_name(e);
		int ok = 0;
		for (int k = 0; nm && k < n && !ok; k++)
			ok = strcmp(nm, names[k]) == 0;
		if (!ok)
			return prism_err_set(err, PRISM_EFORMAT, "%s:%d: unknown setting '%s%s'",
					     file, config_setting_source_line(e), where,
					     nm ? nm : "?");
	}
	return 0;
}

/* A file named in the sweep file: relative paths are tried from the
 * working directory, then from the sweep file's. */
static void resolve(const char *file, const char *p, char *buf, size_t n)
{
	const char *slash = strrchr(file, '/');
	if (p[0] != '/' && slash && access(p, R_OK) != 0)
		snprintf(buf, n, "%.*s/%s", (int)(slash - file), file, p);
	else
		snprintf(buf, n, "%s", p);
}

/* 'base': a trace file or saved graph, or a list of trace files (the
 * ranks of one job).  Not both 'base' and 'model'. */
static int base_files(const char *file, config_t *cf, struct sweep *s, struct prism_err *err)
{
	config_setting_t *b = config_lookup(cf, "base");
	int n;

	if (!b)
		return 0;
	if (config_lookup(cf, "model"))
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: give 'model' or 'base' (a trace), not both", file,
				     config_setting_source_line(b));
	n = config_setting_is_aggregate(b) ? config_setting_length(b) : 1;
	if (n < 1 || n > SWEEP_MAX_BASE)
		return prism_err_set(err, PRISM_EFORMAT, "%s:%d: 'base' must name 1 to %d files",
				     file, config_setting_source_line(b), SWEEP_MAX_BASE);
	for (int i = 0; i < n; i++) {
		const config_setting_t *e =
		    config_setting_is_aggregate(b) ? config_setting_get_elem(b, (unsigned)i) : b;
		const char *p = config_setting_get_string(e);
		char buf[1024];
		if (!p)
			return prism_err_set(
			    err, PRISM_EFORMAT,
			    "%s:%d: 'base' must be a file name in quotes (or a list)", file,
			    config_setting_source_line(e));
		resolve(file, p, buf, sizeof(buf));
		if (!(s->base[s->n_base] = prism_strdup(buf)))
			return prism_err_set(err, PRISM_ENOMEM, "out of memory");
		s->n_base++;
	}
	return 0;
}

/* FNV-1a (64 bits) over the bytes of the files. */
static int fingerprint(char *const *paths, int n, char *out, size_t size)
{
	uint64_t h = 0xcbf29ce484222325u;
	unsigned char buf[65536];
	for (int i = 0; i < n; i++) {
		FILE *f = fopen(paths[i], "rb");
		size_t k;
		if (!f)
			return -1;
		while ((k = fread(buf, 1, sizeof(buf), f)) > 0)
			for (size_t j = 0; j < k; j++)
				h = (h ^ buf[j]) * 0x100000001b3u;
		fclose(f);
	}
	snprintf(out, size, "fnv1a64:%016" PRIx64, h);
	return 0;
}

/* The base (base.h): the model with default costs, or the trace --
 * described, with costs fitted on it, or plain; kernel times from the
 * kernel database where one is named.  Every candidate starts from its
 * configuration.  The fingerprint covers the base's bytes and the
 * database's. */
static int load_base(struct sweep *s, struct prism_err *err)
{
	char mpath[1024];
	char *files[SWEEP_MAX_BASE + 2];
	struct base_opts o;
	struct build_opts bo;
	int nf = 0, rc;

	if (s->kdb_path[0]) {
		rc = cli_load_kdb(s->kdb_path, &s->kdb, err);
		if (rc) {
			prism_err_prefix(err, "kernel_db");
			return rc;
		}
	}
	build_opts_default(&bo);
	memset(&o, 0, sizeof(o));
	o.hw = s->hw_name;
	o.base_dp = s->base_dp;
	o.base_step_s = s->base_step_s;
	o.step_name = "base_step_ms";
	o.bo = &bo;
	o.kdb = s->kdb;
	if (!s->n_base) {
		char *model[1] = {s->model_name};
		if ((rc = base_load(&s->bl, model, 1, &o, err)))
			return rc;
		if (cli_find_config("models", s->model_name, mpath, sizeof(mpath)) == 0)
			files[nf++] = mpath;
	} else {
		if ((rc = base_load(&s->bl, s->base, s->n_base, &o, err))) {
			prism_err_prefix(err, "base %s", s->base[0]);
			return rc;
		}
		snprintf(s->model_name, sizeof(s->model_name), "%s", s->base[0]);
		for (int i = 0; i < s->n_base; i++)
			files[nf++] = s->base[i];
	}
	s->tmpl = s->bl.pb.in;
	s->tmpl.kdb = s->kdb;
	s->m = s->tmpl.m;
	if (!s->m.name[0])
		snprintf(s->m.name, sizeof(s->m.name), "%.63s", s->model_name);
	if (s->kdb_path[0])
		files[nf++] = s->kdb_path;
	if (nf && fingerprint(files, nf, s->fingerprint, sizeof(s->fingerprint)))
		return prism_err_set(err, PRISM_EIO, "%s: cannot read it", files[0]);
	s->tmpl.hw = &s->hw;
	s->tmpl.lay.imbalance = s->imbalance;
	return 0;
}

int sweep_load(const char *path, struct sweep *s, struct prism_err *err)
{
	static const char *const top[] = {
	    "name",	    "model",	     "base",	    "hw",    "gpus",   "gpu_budget",
	    "global_batch", "screen_margin", "kernel_db",   "space", "tokens", "price_per_gpu_hour",
	    "base_dp",	    "moe_imbalance", "base_step_ms"};
	static const char *const knobs[] = {
	    "tp",	  "pp",		  "mbs",	   "schedule",
	    "vp",	  "recompute",	  "zero",	   "sp",
	    "layers",	  "hidden",	  "dtype",	   "fp8_attention",
	    "flash",	  "partition",	  "shard",	   "prefetch",
	    "bucket_mb",  "overlap_grad", "overlap_param", "tp_overlap",
	    "pp_overlap", "ep",		  "etp",	   "cp"};
	config_t cf;
	config_setting_t *space, *gpus;
	double v;
	int rc;

	memset(s, 0, sizeof(*s));
	snprintf(s->path, sizeof(s->path), "%s", path);
	if ((rc = cfg_read(&cf, path, err)))
		return rc;
	space = config_lookup(&cf, "space");
	if ((rc = known(path, config_root_setting(&cf), top, sizeof(top) / sizeof(top[0]), "",
			err)) ||
	    (rc = known(path, space, knobs, sizeof(knobs) / sizeof(knobs[0]), "space.", err)))
		goto out;
	if ((rc = name_setting(path, &cf, s, err)) || (rc = base_files(path, &cf, s, err)) ||
	    (!s->n_base && (rc = cfg_text(path, &cf, NULL, "model", s->model_name,
					  sizeof(s->model_name), err))) ||
	    (rc = cfg_text(path, &cf, NULL, "hw", s->hw_name, sizeof(s->hw_name), err)) ||
	    (rc = cfg_range(path, &cf, NULL, "global_batch", 1, SWEEP_MAX_BATCH, 1, 1, &v, err)))
		goto out;
	s->global_batch = (int)v;
	if (config_lookup(&cf, "kernel_db")) {
		char p[512];
		if ((rc = cfg_text(path, &cf, NULL, "kernel_db", p, sizeof(p), err)))
			goto out;
		resolve(path, p, s->kdb_path, sizeof(s->kdb_path));
	}
	/* What a training run needs, for the report's days and cost: both
	 * optional.  1e16 tokens is 30x today's largest runs. */
	if (config_lookup(&cf, "tokens") &&
	    (rc = cfg_range(path, &cf, NULL, "tokens", 1, 1e16, 0, 1, &s->tokens, err)))
		goto out;
	if (config_lookup(&cf, "price_per_gpu_hour") &&
	    (rc = cfg_range(path, &cf, NULL, "price_per_gpu_hour", 0, 1e6, 0, 1,
			    &s->price_per_gpu_hour, err)))
		goto out;
	if (config_lookup(&cf, "base_dp")) {
		if ((rc = cfg_range(path, &cf, NULL, "base_dp", 1, LAYOUT_MAX_DP, 1, 1, &v, err)))
			goto out;
		s->base_dp = (int)v;
	}
	/* A trace base's step timed without the profiler (base.h). */
	if (config_lookup(&cf, "base_step_ms") &&
	    (rc = cfg_range(path, &cf, NULL, "base_step_ms", 1e-3, 1e9, 0, 1e-3, &s->base_step_s,
			    err)))
		goto out;
	/* Mixture-of-experts: the busiest expert's tokens over the mean, for
	 * every candidate (a property of the router and data, not a layout). */
	s->imbalance = 1;
	if (config_lookup(&cf, "moe_imbalance") &&
	    (rc = cfg_range(path, &cf, NULL, "moe_imbalance", 1, LAYOUT_MAX_IMBALANCE, 0, 1,
			    &s->imbalance, err)))
		goto out;
	s->margin = 0.3;
	if (config_lookup(&cf, "screen_margin") &&
	    (rc = cfg_range(path, &cf, NULL, "screen_margin", 0, 1000, 0, 1, &s->margin, err)))
		goto out;
	gpus = config_lookup(&cf, "gpus");
	if (!gpus)
		gpus = config_lookup(&cf, "gpu_budget");
	s->gpus_line = gpus ? config_setting_source_line(gpus) : 1;
	if (!gpus) {
		rc = prism_err_set(err, PRISM_EFORMAT, "%s:1: give 'gpus' (a list) or 'gpu_budget'",
				   path);
		goto out;
	}
	if (strcmp(config_setting_name(gpus), "gpus") == 0) {
		if ((rc = knob(path, config_root_setting(&cf), "gpus", 0, 1, LAYOUT_MAX_GPUS, NULL,
			       &s->gpus, err)))
			goto out;
	} else {
		double budget;
		if ((rc = cfg_range(path, &cf, NULL, "gpu_budget", 1, LAYOUT_MAX_GPUS, 1, 1,
				    &budget, err)))
			goto out;
		for (long g = 1; g <= budget && s->gpus.n < SWEEP_MAX_LIST; g *= 2)
			s->gpus.v[s->gpus.n++] = (int)g;
	}
	if ((rc = knob(path, space, "tp", 1, 1, LAYOUT_MAX_TP, NULL, &s->tp, err)) ||
	    (rc = knob(path, space, "pp", 1, 1, LAYOUT_MAX_STAGES, NULL, &s->pp, err)) ||
	    (rc = knob(path, space, "mbs", 1, 1, LAYOUT_MAX_MBS, NULL, &s->mbs, err)) ||
	    (rc = knob(path, space, "schedule", LAYOUT_1F1B, 0, 0, layout_schedule_parse,
		       &s->schedule, err)) ||
	    (rc = knob(path, space, "vp", 2, 1, LAYOUT_MAX_VP, NULL, &s->vp, err)) ||
	    (rc = knob(path, space, "recompute", 0, 0, 0, layout_recompute_parse, &s->recompute,
		       err)) ||
	    (rc = knob(path, space, "zero", 0, 0, 3, NULL, &s->zero, err)) ||
	    (rc = knob(path, space, "sp", 0, 0, 1, NULL, &s->sp, err)) ||
	    (rc = knob(path, space, "layers", 0, 1, LLM_MAX_LAYERS, NULL, &s->layers, err)) ||
	    (rc = knob(path, space, "hidden", 0, 1, LLM_MAX_HIDDEN, NULL, &s->hidden, err)) ||
	    /* absent: the base's (-1) */
	    (rc = knob(path, space, "dtype", -1, 0, 0, hw_dtype_parse, &s->dtype, err)) ||
	    (rc = knob(path, space, "fp8_attention", -1, 0, 1, NULL, &s->fp8_attention, err)) ||
	    (rc = knob(path, space, "flash", -1, 0, 1, NULL, &s->flash, err)) ||
	    (rc = knob(path, space, "partition", LAYOUT_PART_GIVEN, 0, 0, part_parse, &s->partition,
		       err)) ||
	    (rc = knob(path, space, "shard", 0, 0, LAYOUT_MAX_DP, NULL, &s->shard, err)) ||
	    (rc = knob(path, space, "prefetch", 1, 0, LAYOUT_MAX_PREFETCH, NULL, &s->prefetch,
		       err)) ||
	    (rc = knob(path, space, "bucket_mb", 0, 0, LAYOUT_MAX_BUCKET_MB, NULL, &s->bucket_mb,
		       err)) ||
	    (rc = knob(path, space, "overlap_grad", 1, 0, 1, NULL, &s->overlap_grad, err)) ||
	    (rc = knob(path, space, "overlap_param", 0, 0, 1, NULL, &s->overlap_param, err)) ||
	    (rc = knob(path, space, "tp_overlap", 0, 0, 1, NULL, &s->tp_overlap, err)) ||
	    (rc = knob(path, space, "pp_overlap", 1, 0, 1, NULL, &s->pp_overlap, err)) ||
	    (rc = knob(path, space, "ep", 1, 1, LAYOUT_MAX_EP, NULL, &s->ep, err)) ||
	    (rc = knob(path, space, "etp", 1, 1, LAYOUT_MAX_TP, NULL, &s->etp, err)) ||
	    (rc = knob(path, space, "cp", 1, 1, LAYOUT_MAX_CP, NULL, &s->cp, err)))
		goto out;
	if (sweep_count(s) > SWEEP_MAX_CANDIDATES) {
		char n[32];
		if (sweep_count(s) == UINT64_MAX)
			snprintf(n, sizeof(n), "over 2^64");
		else
			snprintf(n, sizeof(n), "%" PRIu64, sweep_count(s));
		rc = prism_err_set(err, PRISM_EFORMAT,
				   "%s:%d: the sweep has %s candidates (the product of its lists), "
				   "more than %u",
				   path,
				   space ? (int)config_setting_source_line(space) : s->gpus_line, n,
				   SWEEP_MAX_CANDIDATES);
		goto out;
	}
	config_destroy(&cf);
	/* The base and the hardware named in it. */
	if ((rc = cli_load_hw(s->hw_name, &s->hw, err)) || (rc = load_base(s, err))) {
		prism_err_prefix(err, "%s", path);
		sweep_free(s);
		return rc;
	}
	if (!(s->text = slurp(path))) {
		sweep_free(s);
		return prism_err_set(err, PRISM_EIO, "%s: cannot read the file", path);
	}
	if (!(s->canon = sweep_canon(s->text))) {
		sweep_free(s);
		return prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
	}
	return 0;
out:
	/* libconfig and cfg_* errors name the file and line already. */
	config_destroy(&cf);
	sweep_free(s);
	return rc;
}

void sweep_free(struct sweep *s)
{
	free(s->text);
	s->text = NULL;
	free(s->canon);
	s->canon = NULL;
	for (int i = 0; i < s->n_base; i++)
		free(s->base[i]);
	s->n_base = 0;
	kdb_free(s->kdb);
	s->kdb = NULL;
	base_release(&s->bl);
}

static void make_key(struct cand *c)
{
	const struct layout *l = &c->in.lay;
	snprintf(c->key, sizeof(c->key),
		 "gpus=%d;tp=%d;pp=%d;dp=%d;vp=%d;mbs=%d;mb=%d;sched=%s;rc=%s;zero=%d;sp=%d;"
		 "layers=%d;hidden=%d",
		 c->gpus, l->tp, l->pp, l->dp, l->vp, l->mbs, l->microbatches,
		 layout_schedule_name(l->schedule), layout_recompute_name(l->recompute), l->zero,
		 l->sp, c->in.m.layers, c->in.m.hidden);
	/* The precision and attention knobs only where they differ from what
	 * every candidate ran before they were knobs (bf16, flash): keys of
	 * stored sweeps stay valid. */
	if (c->in.lay.dtype != HW_BF16 || c->in.lay.fp8_attention || !l->flash) {
		size_t n = strlen(c->key);
		snprintf(c->key + n, sizeof(c->key) - n, ";dtype=%s;fp8attn=%d;flash=%d",
			 hw_dtype_name(c->in.lay.dtype), c->in.lay.fp8_attention, l->flash);
	}
	/* Placement, sharding and overlap, likewise where they differ from
	 * what candidates ran before they were knobs. */
	if (c->in.lay.partition != LAYOUT_PART_GIVEN || l->shard || l->prefetch != 1 ||
	    l->bucket_mb || !l->overlap_grad || l->overlap_param || l->tp_overlap ||
	    !l->pp_overlap) {
		size_t n = strlen(c->key);
		char part[32];
		layout_partition_name(&c->in.lay, part, sizeof(part));
		snprintf(c->key + n, sizeof(c->key) - n,
			 ";part=%s;shard=%d;prefetch=%d;bucket=%d;ovg=%d;ovp=%d;tpo=%d;ppo=%d",
			 part, l->shard, l->prefetch, l->bucket_mb, l->overlap_grad,
			 l->overlap_param, l->tp_overlap, l->pp_overlap);
	}
	/* Expert parallelism, likewise. */
	if (layout_ep(l) > 1 || layout_etp(l) > 1) {
		size_t n = strlen(c->key);
		snprintf(c->key + n, sizeof(c->key) - n, ";ep=%d;etp=%d", layout_ep(l),
			 layout_etp(l));
	}
	if (layout_cp(l) > 1) {
		size_t n = strlen(c->key);
		snprintf(c->key + n, sizeof(c->key) - n, ";cp=%d", layout_cp(l));
	}
}

/* Verdicts before simulation: the layout rules, then memory, then the
 * analytic estimate. */
static void judge(const struct sweep *s, struct cand *c)
{
	struct prism_err err;
	struct mem_est me;

	prism_err_clear(&err);
	if (c->status == CS_INVALID)
		return;
	if (s->bl.pb.kind == PB_TRACE) {
		/* A plain trace: what it can be edited into (predict.h); no
		 * model for rules, memory or estimates. */
		if (predict_method(&s->bl.pb, &c->in, &err) < 0) {
			c->status = CS_INVALID;
			snprintf(c->reason, sizeof(c->reason), "%.159s", err.msg);
		}
		return;
	}
	if (synth_check(&c->in, &err)) {
		c->status = CS_INVALID;
		snprintf(c->reason, sizeof(c->reason), "%.159s", err.msg);
		return;
	}
	{
		struct synth_in x = c->in;
		x.hw = &s->hw;
		synth_mem(&x, &me);
		c->p.mem = me; /* stored whatever the verdict */
	}
	if (!me.fits) {
		c->status = CS_OOM;
		snprintf(c->reason, sizeof(c->reason), "needs %.1f GB of %.1f GB usable",
			 me.total / 1e9, me.capacity / 1e9);
		return;
	}
	c->analytic_s = predict_analytic(&c->in);
	/* The bound holds for synthesised graphs; an edited trace keeps its
	 * own kernels, which may beat it. */
	c->bound_s = predict_method(&s->bl.pb, &c->in, &err) == PM_EDIT ||
			     predict_method(&s->bl.pb, &c->in, &err) == PM_REPLAY
			 ? 0
			 : synth_lower_bound(&c->in);
}

/* The placement, sharding and overlap knobs, enumerated as one mixed-radix
 * index over their lists. */
static const struct sweep_list *extra_list(const struct sweep *s, int k)
{
	const struct sweep_list *l[] = {
	    &s->partition,    &s->shard,	 &s->prefetch,	 &s->bucket_mb,
	    &s->overlap_grad, &s->overlap_param, &s->tp_overlap, &s->pp_overlap,
	    &s->ep,	      &s->etp,		 &s->cp};
	return l[k];
}

/* The knobs extra_list holds: the last ones vary slowest, so that a sweep
 * without ep and etp (one value each) numbers its candidates as before. */
#define EXTRA_N 11

static long extra_n(const struct sweep *s)
{
	long n = 1;
	for (int k = 0; k < EXTRA_N; k++)
		n *= extra_list(s, k)->n;
	return n;
}

/* Candidate in takes index ix of the knobs; 1 when a knob that does not
 * apply to it (partition with pp 1, shard without ZeRO, prefetch below
 * ZeRO-3, the parameter gather's overlap outside ZeRO-1/2, TP overlap
 * without tp and sp) is past its first value: the same candidate again. */
static int extra_apply(const struct sweep *s, long ix, struct synth_in *in)
{
	int i[EXTRA_N];
	struct layout *l = &in->lay;
	for (int k = 0; k < EXTRA_N; k++) {
		i[k] = (int)(ix % extra_list(s, k)->n);
		ix /= extra_list(s, k)->n;
	}
	in->lay.partition = s->partition.v[i[0]];
	memset(l->part, 0, sizeof(l->part));
	l->shard = s->shard.v[i[1]];
	l->prefetch = s->prefetch.v[i[2]];
	l->bucket_mb = s->bucket_mb.v[i[3]];
	l->overlap_grad = s->overlap_grad.v[i[4]];
	l->overlap_param = s->overlap_param.v[i[5]];
	l->tp_overlap = s->tp_overlap.v[i[6]];
	l->pp_overlap = s->pp_overlap.v[i[7]];
	l->ep = s->ep.v[i[8]];
	l->etp = s->etp.v[i[9]];
	l->cp = s->cp.v[i[10]];
	/* ep and etp apply to mixture-of-experts models only. */
	return (i[0] && l->pp == 1) || (i[1] && l->zero == 0) || (i[2] && l->zero < 3) ||
	       (i[5] && (l->zero < 1 || l->zero > 2)) || (i[6] && (l->tp == 1 || !l->sp)) ||
	       (i[7] && l->pp == 1) || ((i[8] || i[9]) && in->m.experts == 0);
}

static int decode(const struct sweep *s, uint64_t index, struct cand *c);

/* Schedule and virtual stages, one axis: vp varies only with interleaved. */
static int sched_axis(const struct sweep *s)
{
	int n = 0;
	for (int is = 0; is < s->schedule.n; is++)
		n += s->schedule.v[is] == LAYOUT_INTERLEAVED ? s->vp.n : 1;
	return n;
}

uint64_t sweep_count(const struct sweep *s)
{
	/* Up to 32^12 x 32 x 32 would overflow: the product saturates. */
	const uint64_t n[] = {
	    (uint64_t)s->gpus.n,   (uint64_t)s->tp.n,	    (uint64_t)s->pp.n,
	    (uint64_t)s->mbs.n,	   (uint64_t)sched_axis(s), (uint64_t)s->recompute.n,
	    (uint64_t)s->zero.n,   (uint64_t)s->sp.n,	    (uint64_t)s->layers.n,
	    (uint64_t)s->hidden.n, (uint64_t)s->dtype.n,    (uint64_t)s->fp8_attention.n,
	    (uint64_t)s->flash.n,  (uint64_t)extra_n(s)};
	uint64_t c = 1;
	for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++) {
		if (n[i] && c > UINT64_MAX / n[i])
			return UINT64_MAX;
		c *= n[i];
	}
	return c;
}

int sweep_candidate(const struct sweep *s, uint64_t index, struct cand *c)
{
	if (decode(s, index, c))
		return 1;
	judge(s, c);
	return 0;
}

int sweep_key(const struct sweep *s, uint64_t index, char *key, size_t n)
{
	struct cand c;
	if (decode(s, index, &c))
		return 1;
	snprintf(key, n, "%s", c.key);
	return 0;
}

/* Candidate index of s, keyed and checked against the sweep's own rules
 * (not judged): 0, or 1 when index is no candidate. */
static int decode(const struct sweep *s, uint64_t index, struct cand *c)
{
	/* Mixed radix, the last knob fastest: the order of nested loops
	 * over gpus, tp, pp, mbs, schedule (and vp), recompute, zero, sp,
	 * layers, hidden, dtype, fp8_attention, flash, and the placement,
	 * sharding and overlap knobs (extra_apply's index). */
	uint64_t x = index;
	long ix = (long)(x % (uint64_t)extra_n(s));
	int ifl, ifa, idt, ih, il, iq, iz, ir, isv, ib, ip, it, ig, is = 0, iv = 0;
	x /= (uint64_t)extra_n(s);
	ifl = (int)(x % (uint64_t)s->flash.n);
	x /= (uint64_t)s->flash.n;
	ifa = (int)(x % (uint64_t)s->fp8_attention.n);
	x /= (uint64_t)s->fp8_attention.n;
	idt = (int)(x % (uint64_t)s->dtype.n);
	x /= (uint64_t)s->dtype.n;
	ih = (int)(x % (uint64_t)s->hidden.n);
	x /= (uint64_t)s->hidden.n;
	il = (int)(x % (uint64_t)s->layers.n);
	x /= (uint64_t)s->layers.n;
	iq = (int)(x % (uint64_t)s->sp.n);
	x /= (uint64_t)s->sp.n;
	iz = (int)(x % (uint64_t)s->zero.n);
	x /= (uint64_t)s->zero.n;
	ir = (int)(x % (uint64_t)s->recompute.n);
	x /= (uint64_t)s->recompute.n;
	isv = (int)(x % (uint64_t)sched_axis(s));
	x /= (uint64_t)sched_axis(s);
	ib = (int)(x % (uint64_t)s->mbs.n);
	x /= (uint64_t)s->mbs.n;
	ip = (int)(x % (uint64_t)s->pp.n);
	x /= (uint64_t)s->pp.n;
	it = (int)(x % (uint64_t)s->tp.n);
	x /= (uint64_t)s->tp.n;
	if (x >= (uint64_t)s->gpus.n)
		return 1; /* past the last */
	ig = (int)x;
	for (;; is++) {
		int nv = s->schedule.v[is] == LAYOUT_INTERLEAVED ? s->vp.n : 1;
		if (isv < nv) {
			iv = isv;
			break;
		}
		isv -= nv;
	}
	{
		/* The ranges of sweep_load keep every product below in 64 bits,
		 * and the quotients stored in ints below their limits. */
		int gpus = s->gpus.v[ig], tp = s->tp.v[it], pp = s->pp.v[ip], mbs = s->mbs.v[ib];
		int64_t tpp = (int64_t)tp * pp;
		int dp = (int)(gpus / tpp);
		int64_t per = (int64_t)dp * mbs, ffn = 0;
		if (s->sp.v[iq] && tp == 1 && s->sp.n > 1)
			return 1; /* sp without tp is the same candidate as no sp */
		memset(c, 0, sizeof(*c));
		c->in = s->tmpl;
		c->in.hw = &s->hw;
		if (s->layers.v[il] > 0)
			c->in.m.layers = s->layers.v[il];
		if (s->hidden.v[ih] > 0 && s->tmpl.m.hidden <= 0) {
			c->in.m.hidden = s->hidden.v[ih]; /* judged: a plain trace's is unknown */
		} else if (s->hidden.v[ih] > 0) {
			/* The FFN keeps its ratio to the width. */
			ffn = (int64_t)s->tmpl.m.ffn * s->hidden.v[ih] / s->tmpl.m.hidden;
			c->in.m.ffn = ffn > LLM_MAX_FFN ? LLM_MAX_FFN : (int)ffn;
			c->in.m.hidden = s->hidden.v[ih];
		}
		c->gpus = gpus;
		c->in.lay.tp = tp;
		c->in.lay.pp = pp;
		c->in.lay.dp = dp > 0 ? dp : 1;
		c->in.lay.mbs = mbs;
		c->in.lay.schedule = s->schedule.v[is];
		c->in.lay.vp = s->schedule.v[is] == LAYOUT_INTERLEAVED ? s->vp.v[iv] : 1;
		c->in.lay.recompute = s->recompute.v[ir];
		c->in.lay.zero = s->zero.v[iz];
		c->in.lay.sp = s->sp.v[iq] && tp > 1;
		if (s->dtype.v[idt] >= 0)
			c->in.lay.dtype = s->dtype.v[idt];
		if (s->fp8_attention.v[ifa] >= 0)
			c->in.lay.fp8_attention = s->fp8_attention.v[ifa];
		if (s->flash.v[ifl] >= 0)
			c->in.lay.flash = s->flash.v[ifl];
		if (extra_apply(s, ix, &c->in))
			return 1; /* a knob that does not apply: its first value only */
		if (layout_cp(&c->in.lay) > 1) {
			/* Context parallelism takes its ranks from the data-parallel
			 * ones: dp = gpus / (tp x pp x cp). */
			tpp *= layout_cp(&c->in.lay);
			dp = (int)(gpus / tpp);
			per = (int64_t)dp * mbs;
			c->in.lay.dp = dp > 0 ? dp : 1;
		}
		c->in.lay.microbatches = per > 0 ? (int)(s->global_batch / per) : 0;
		if (c->in.lay.microbatches < 1)
			c->in.lay.microbatches = 1;
		if (gpus % tpp) {
			c->status = CS_INVALID;
			snprintf(c->reason, sizeof(c->reason),
				 "%d GPUs do not divide by tp %d x pp %d%s", gpus, tp, pp,
				 layout_cp(&c->in.lay) > 1 ? " x cp" : "");
		} else if (s->global_batch % per) {
			c->status = CS_INVALID;
			snprintf(c->reason, sizeof(c->reason),
				 "global batch %d does not divide by dp %d x mbs %d",
				 s->global_batch, dp, mbs);
		} else if (ffn > LLM_MAX_FFN) {
			c->status = CS_INVALID;
			snprintf(c->reason, sizeof(c->reason),
				 "ffn %" PRId64 " (scaled with hidden %d) is beyond %d", ffn,
				 c->in.m.hidden, LLM_MAX_FFN);
		}
		make_key(c);
	}
	return 0;
}
