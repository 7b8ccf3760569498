/* sweep.c - search spaces from libconfig files, and their candidates. */
#include "sweep.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "build.h"
#include "cfg.h"
#include "cli.h"
#include "hash.h"
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

/* A sweep's partition "auto" (its default where it lists none): each
 * candidate's the first of even, embed-loss, embed, loss and first/last
 * counts that Megatron-Core accepts for its layers, pp and vp
 * (part_auto). */
#define SWEEP_PART_AUTO 0x7ffe /* beyond enum layout_partition */

/* A partition's name in a sweep: auto, even, balanced, embed-loss, embed
 * or loss (lists of layers per stage or chunk and first/last counts belong
 * to one pp: synth and whatif take them). */
static int part_parse(const char *s)
{
	struct layout l;
	if (strcmp(s, "auto") == 0)
		return SWEEP_PART_AUTO;
	if (layout_partition_parse(s, &l, NULL) || layout_part_placed(&l) ||
	    l.partition == LAYOUT_PART_FIRST_LAST)
		return -1;
	return l.partition;
}

/* The value of a list element of knob k (or of 'gpus', k < 0): a whole
 * number in its range, or a name it knows. */
static int element(const char *file, const config_setting_t *e, const char *what, int k, int *out,
		   struct prism_err *err)
{
	const struct layout_knob *K = k >= 0 ? &layout_knobs[k] : NULL;
	int min = K ? (int)K->lo : 1, max = K ? (int)K->hi : LAYOUT_MAX_GPUS;
	int (*parse)(const char *) = !K ? NULL : K->kind == LK_PART ? part_parse : K->parse;

	if (parse) {
		const char *s = config_setting_get_string(e);
		if (!s)
			return prism_err_set(err, PRISM_EFORMAT,
					     "%s:%d: '%s' must list names in quotes", file,
					     config_setting_source_line(e), what);
		if ((*out = parse(s)) >= 0)
			return 0;
		return prism_err_set(err, PRISM_EFORMAT, "%s:%d: '%s': unknown value '%s'", file,
				     config_setting_source_line(e), what, s);
	}
	if (config_setting_type(e) != CONFIG_TYPE_INT)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: '%s' must list whole numbers in %d..%d", file,
				     config_setting_source_line(e), what, min, max);
	*out = config_setting_get_int(e);
	if (*out < min || *out > max)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: '%s' must list whole numbers in %d..%d, not %d", file,
				     config_setting_source_line(e), what, min, max, *out);
	return 0;
}

/* space.ID (or 'gpus' at the root, k < 0): a list (or one value) of knob
 * k's values; absent: its sweep default (SWEEP_BASE: the base's). */
static int knob(const char *file, config_setting_t *space, const char *name, int k,
		struct sweep_list *out, struct prism_err *err)
{
	config_setting_t *e = space ? config_setting_lookup(space, name) : NULL;
	char full[64];
	int rc;

	snprintf(full, sizeof(full), "%s%s", space && config_setting_is_root(space) ? "" : "space.",
		 name);
	out->n = 0;
	if (!e) {
		const struct layout_knob *K = &layout_knobs[k];
		out->v[out->n++] = K->flags & LK_BASE	? SWEEP_BASE
				   : K->flags & LK_SDEF ? (int)K->sdef
				   : k == LK_partition	? SWEEP_PART_AUTO
							: (int)K->def;
		return 0;
	}
	if (config_setting_is_aggregate(e)) {
		int n = config_setting_length(e);
		if (n < 1)
			return prism_err_set(err, PRISM_EFORMAT, "%s:%d: '%s' is an empty list",
					     file, config_setting_source_line(e), full);
		if (n > SWEEP_MAX_LIST)
			return prism_err_set(
			    err, PRISM_EFORMAT, "%s:%d: '%s' lists %d values, at most %d", file,
			    config_setting_source_line(e), full, n, SWEEP_MAX_LIST);
		for (int i = 0; i < n; i++)
			if ((rc = element(file, config_setting_get_elem(e, (unsigned)i), full, k,
					  &out->v[out->n++], err)))
				return rc;
		return 0;
	}
	return element(file, e, full, k, &out->v[out->n++], err);
}

int sweep_canon(const char *text, char **out)
{
	config_t cf;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int rc;

	*out = NULL;
	if ((rc = cfg_parse(&cf, text, "sweep", NULL)))
		return rc == PRISM_ENOMEM ? rc : PRISM_EFORMAT;
	if (!(f = open_memstream(&buf, &len))) {
		config_destroy(&cf);
		return PRISM_ENOMEM;
	}
	config_write(&cf, f);
	config_destroy(&cf);
	/* The stream's own growth is what fails here: an error on it, or no
	 * buffer at all. */
	rc = ferror(f);
	if ((fclose(f) != 0) || rc || !buf) {
		free(buf);
		return PRISM_ENOMEM;
	}
	*out = buf;
	return 0;
}

/* The error of a file that could not be read: out of memory where the C
 * library had none for it (fopen's FILE), else why. */
static int unreadable(const char *path, int e, struct prism_err *err)
{
	if (e == ENOMEM)
		return prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
	return prism_err_set(err, PRISM_EIO, "%s: cannot read the file (%s)", path,
			     strerror(e ? e : EIO));
}

/* The whole of the file at path into *out (to free): 0, or the error. */
static int slurp(const char *path, char **out, struct prism_err *err)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n = -1;
	int e;

	*out = NULL;
	if (!f)
		return unreadable(path, errno, err);
	errno = 0;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = prism_malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
		fclose(f);
		buf[n] = '\0';
		*out = buf;
		return 0;
	}
	e = buf || n < 0 ? errno : ENOMEM;
	fclose(f);
	free(buf);
	return unreadable(path, e, err);
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

/* Every setting of space must be a sweep knob (layout.h, LK_SWEEP). */
static int known_knobs(const char *file, config_setting_t *space, struct prism_err *err)
{
	for (int i = 0; space && i < config_setting_length(space); i++) {
		config_setting_t *e = config_setting_get_elem(space, (unsigned)i);
		const char *nm = config_setting_name(e);
		int k = nm ? layout_knob_find(nm) : -1;
		if (k < 0 || !(layout_knobs[k].flags & LK_SWEEP))
			return prism_err_set(err, PRISM_EFORMAT,
					     "%s:%d: unknown setting 'space.%s'", file,
					     config_setting_source_line(e), nm ? nm : "?");
	}
	return 0;
}

/* A file named by setting `what` of the sweep file: relative paths are
 * tried from the working directory, then from the sweep file's.  0, or
 * PRISM_EARG when the path does not fit in buf (n bytes): cut short, it
 * would name another file. */
static int resolve(const char *file, const char *what, const char *p, char *buf, size_t n,
		   struct prism_err *err)
{
	const char *slash = strrchr(file, '/');
	char opt[64];
	size_t k;
	int rc;
	if (p[0] != '/' && slash && access(p, R_OK) != 0)
		k = (size_t)snprintf(buf, n, "%.*s/%s", (int)(slash - file), file, p);
	else
		k = (size_t)snprintf(buf, n, "%s", p);
	if (k < n)
		return 0;
	snprintf(opt, sizeof(opt), "'%s'", what);
	rc = cli_path_long(opt, p, n - 1, err);
	prism_err_prefix(err, "%s", file);
	return rc;
}

/* 'base': a trace file or saved graph, or a list of trace files (the
 * ranks of one job).  Not both 'base' and 'model'. */
static int base_setting(const char *file, config_t *cf, struct sweep *s, struct prism_err *err)
{
	config_setting_t *b = config_lookup(cf, "base");
	int n, rc;

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
		if ((rc = resolve(file, "base", p, buf, sizeof(buf), err)))
			return rc;
		if (!(s->base[s->n_base] = prism_strdup(buf)))
			return prism_err_set(err, PRISM_ENOMEM, "out of memory");
		s->n_base++;
	}
	return 0;
}

/* FNV-1a (64 bits) over the bytes of the files into *h. */
static int bytes_hash(char *const *paths, int n, uint64_t *h, struct prism_err *err)
{
	unsigned char buf[65536];
	*h = HASH_SEED;
	for (int i = 0; i < n; i++) {
		FILE *f = fopen(paths[i], "rb");
		size_t k;
		int bad;
		if (!f)
			return unreadable(paths[i], errno, err);
		while ((k = fread(buf, 1, sizeof(buf), f)) > 0)
			*h = hash_bytes(*h, buf, k);
		/* A read error is no fingerprint: resuming on it would mix runs. */
		bad = ferror(f);
		fclose(f);
		if (bad)
			return unreadable(paths[i], EIO, err);
	}
	return 0;
}

/* FNV-1a (64 bits) over the bytes of the files. */
static int fingerprint(char *const *paths, int n, char *out, size_t size, struct prism_err *err)
{
	uint64_t h;
	int rc = bytes_hash(paths, n, &h, err);
	if (rc == 0)
		snprintf(out, size, "fnv1a64:%016" PRIx64, h);
	return rc;
}

/* The settings of the libconfig file at path, as libconfig writes them
 * back (comments and layout aside), hashed into *h: all but the top-level
 * group `skip`, or that group alone (only).  A file that is no libconfig
 * file (a JSON model) is hashed byte for byte. */
static int settings_hash(const char *path, const char *group, int only, uint64_t *h,
			 struct prism_err *err)
{
	struct prism_err e;
	config_t cf;
	config_setting_t *root;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int rc;

	prism_err_clear(&e);
	if ((rc = cfg_read(&cf, path, &e)) == PRISM_EFORMAT) {
		char *p[1] = {(char *)path};
		return bytes_hash(p, 1, h, err);
	}
	if (rc)
		return prism_err_set(err, rc, "%s", e.msg);
	root = config_root_setting(&cf);
	for (int i = config_setting_length(root) - 1; i >= 0; i--) {
		const char *nm = config_setting_name(config_setting_get_elem(root, (unsigned)i));
		if (!nm || (strcmp(nm, group) == 0) != only)
			config_setting_remove_elem(root, (unsigned)i);
	}
	if (!(f = open_memstream(&buf, &len))) {
		config_destroy(&cf);
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	}
	config_write(&cf, f);
	config_destroy(&cf);
	rc = ferror(f);
	if (fclose(f) != 0 || rc || !buf) {
		free(buf);
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	}
	*h = hash_bytes(HASH_SEED, buf, len);
	free(buf);
	return 0;
}

/* The rows of a kernel database (what its lookups read, whatever file they
 * came from) hashed. */
static uint64_t kdb_hash(const struct kdb *db)
{
	uint64_t h = HASH_SEED;
	struct kdb_row r;
	for (size_t i = 0; db && kdb_row(db, i, &r); i++) {
		char nums[160];
		int k = snprintf(nums, sizeof(nums), "\t%d\t%d\t%.17g\t%.17g\t%.17g\n", r.cls,
				 r.dtype, r.work, r.time_s, r.samples);
		h = hash_bytes(h, r.gpu, strlen(r.gpu) + 1);
		h = hash_bytes(h, r.shape, strlen(r.shape) + 1);
		h = hash_bytes(h, nums, (size_t)k);
	}
	return h;
}

/* One line "WHAT\tVALUE\n" of sweep.inputs (control characters of what
 * shown as '?'). */
static void input_line(struct sweep *s, const char *what, const char *fmt, ...) PRISM_PRINTF(3, 4);
static void input_line(struct sweep *s, const char *what, const char *fmt, ...)
{
	size_t o = strlen(s->inputs);
	va_list ap;
	for (; *what && o + 2 < sizeof(s->inputs); what++)
		s->inputs[o++] = (unsigned char)*what < 0x20 ? '?' : *what;
	s->inputs[o++] = '\t';
	s->inputs[o] = '\0';
	va_start(ap, fmt);
	vsnprintf(s->inputs + o, sizeof(s->inputs) - o, fmt, ap);
	va_end(ap);
	o = strlen(s->inputs);
	if (o + 1 < sizeof(s->inputs))
		snprintf(s->inputs + o, sizeof(s->inputs) - o, "\n");
}

/* sweep.inputs: prism's version, the model's settings (model_path) or the
 * traces' bytes, the hardware profile's settings and its kernel model
 * apart, the kernel database's rows. */
static int record_inputs(struct sweep *s, const char *model_path, struct prism_err *err)
{
	char hw_path[1024], what[160];
	uint64_t h;
	int rc;

	s->inputs[0] = '\0';
	input_line(s, "prism", "%s", cli_version());
	if (s->n_base)
		rc = bytes_hash(s->base, s->n_base, &h, err);
	else
		rc = model_path ? settings_hash(model_path, "", 0, &h, err) : 0;
	if (rc)
		return rc;
	if (s->n_base || model_path)
		input_line(s, s->n_base ? "base" : "model", "fnv1a64:%016" PRIx64, h);
	for (int i = 0; i < s->n_hw; i++) {
		if ((rc = cli_config_path("hw", s->hw_name[i], hw_path, sizeof(hw_path), err)) ||
		    (rc = settings_hash(hw_path, "kernels", 0, &h, err)))
			return rc;
		snprintf(what, sizeof(what), "hw:%s", s->hw[i].id);
		input_line(s, what, "fnv1a64:%016" PRIx64, h);
		if ((rc = settings_hash(hw_path, "kernels", 1, &h, err)))
			return rc;
		snprintf(what, sizeof(what), "kernels:%s", s->hw[i].id);
		input_line(s, what, "fnv1a64:%016" PRIx64, h);
	}
	/* A trace base's hardware, named (base_hw): its whole profile. */
	if (s->n_base && s->base_hw[0]) {
		if ((rc = cli_config_path("hw", s->base_hw, hw_path, sizeof(hw_path), err)) ||
		    (rc = settings_hash(hw_path, "", 0, &h, err)))
			return rc;
		input_line(s, "base_hw", "fnv1a64:%016" PRIx64, h);
	}
	if (s->kdb)
		input_line(s, "kernel_db", "fnv1a64:%016" PRIx64, kdb_hash(s->kdb));
	return 0;
}

/* The value of line `what` (wn bytes) in inputs text t, *vn bytes; NULL
 * when t has no such line. */
static const char *input_find(const char *t, const char *what, size_t wn, size_t *vn)
{
	while (t && *t) {
		const char *eol = strchr(t, '\n'), *tab = strchr(t, '\t');
		if (!eol)
			eol = t + strlen(t);
		if (tab && tab < eol && (size_t)(tab - t) == wn && memcmp(t, what, wn) == 0) {
			*vn = (size_t)(eol - tab - 1);
			return tab + 1;
		}
		t = *eol ? eol + 1 : eol;
	}
	return NULL;
}

/* What an input of sweep.inputs is, for people. */
static void input_name(char *buf, size_t n, const char *what, size_t wn)
{
	if (wn > 3 && memcmp(what, "hw:", 3) == 0)
		snprintf(buf, n, "the hardware profile %.*s", (int)wn - 3, what + 3);
	else if (wn > 8 && memcmp(what, "kernels:", 8) == 0)
		snprintf(buf, n, "the kernel model ('kernels') of the hardware profile %.*s",
			 (int)wn - 8, what + 8);
	else if (wn == 5 && memcmp(what, "model", 5) == 0)
		snprintf(buf, n, "the model");
	else if (wn == 4 && memcmp(what, "base", 4) == 0)
		snprintf(buf, n, "the base's traces");
	else if (wn == 9 && memcmp(what, "kernel_db", 9) == 0)
		snprintf(buf, n, "the kernel database");
	else if (wn == 7 && memcmp(what, "base_hw", 7) == 0)
		snprintf(buf, n, "the base's hardware profile (base_hw)");
	else
		snprintf(buf, n, "%.*s", (int)wn, what);
}

int sweep_inputs_diff(const char *was, const char *now, char *buf, size_t n)
{
	size_t o = 0;
	int k = 0;

	buf[0] = '\0';
	/* Each of now's lines against was's; then was's that now lacks. */
	for (int pass = 0; pass < 2; pass++) {
		const char *a = pass ? was : now, *b = pass ? now : was;
		while (a && *a) {
			const char *eol = strchr(a, '\n'), *tab = strchr(a, '\t'), *v;
			size_t vn = 0;
			if (!eol)
				eol = a + strlen(a);
			if (tab && tab < eol) {
				size_t wn = (size_t)(tab - a);
				v = input_find(b, a, wn, &vn);
				if (!v || (!pass && (vn != (size_t)(eol - tab - 1) ||
						     memcmp(v, tab + 1, vn) != 0))) {
					char name[160];
					input_name(name, sizeof(name), a, wn);
					if (o < n && wn == 5 && memcmp(a, "prism", 5) == 0 && v)
						o += (size_t)snprintf(
						    buf + o, n - o,
						    "%sprism's version (%.*s then, %.*s now)",
						    k ? "; " : "", (int)vn, v, (int)(eol - tab - 1),
						    tab + 1);
					else if (o < n)
						o += (size_t)snprintf(
						    buf + o, n - o, "%s%s%s", k ? "; " : "", name,
						    !v ? (pass ? " (not an input now)"
							       : " (not recorded then)")
						       : "");
					k++;
				}
			}
			a = *eol ? eol + 1 : eol;
		}
	}
	return k;
}

/* The base (base.h): the model with default costs, or the trace --
 * described, with costs fitted on it, or plain; kernel times from the
 * kernel database where one is named.  Every candidate starts from its
 * configuration.  The fingerprint covers the base's bytes and the
 * database's. */
static int load_base(struct sweep *s, struct prism_err *err)
{
	char mpath[1024];
	char *files[SWEEP_MAX_BASE + 3], hwpath[1024];
	struct base_opts o;
	struct build_opts bo;
	const char *model_path = NULL;
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
	o.hw = s->hw_name[0]; /* the base's; candidates take their own */
	o.base_hw = s->base_hw[0] ? s->base_hw : NULL;
	o.base_dp = s->base_dp;
	o.base_step_s = s->base_step_s;
	o.step_name = "base_step_ms";
	o.bo = &bo;
	o.kdb = s->kdb;
	if (!s->n_base) {
		char *model[1] = {s->model_name};
		if ((rc = base_load(&s->bl, model, 1, &o, err)))
			return rc;
		if (cli_find_config("models", s->model_name, mpath, sizeof(mpath), NULL) == 0) {
			files[nf++] = mpath;
			model_path = mpath;
		}
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
	/* The base's hardware named, by its profile's bytes: another is
	 * another base (none named: the fingerprint as before). */
	if (s->base_hw[0] && cli_config_path("hw", s->base_hw, hwpath, sizeof(hwpath), err) == 0)
		files[nf++] = hwpath;
	if (nf && (rc = fingerprint(files, nf, s->fingerprint, sizeof(s->fingerprint), err)))
		return rc;
	if ((rc = record_inputs(s, model_path, err)))
		return rc;
	s->tmpl.hw = &s->hw[0];
	s->tmpl.lay.imbalance = s->imbalance;
	return 0;
}

/* 'gpus': a list (or one value) of GPU counts. */
static int gpus_list(const char *file, config_setting_t *root, struct sweep_list *out,
		     struct prism_err *err)
{
	config_setting_t *e = config_setting_lookup(root, "gpus");
	int n = config_setting_is_aggregate(e) ? config_setting_length(e) : 1, rc;
	out->n = 0;
	if (n < 1)
		return prism_err_set(err, PRISM_EFORMAT, "%s:%d: 'gpus' is an empty list", file,
				     config_setting_source_line(e));
	if (n > SWEEP_MAX_LIST)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: 'gpus' lists %d values, at most %d", file,
				     config_setting_source_line(e), n, SWEEP_MAX_LIST);
	for (int i = 0; i < n; i++)
		if ((rc = element(file,
				  config_setting_is_aggregate(e)
				      ? config_setting_get_elem(e, (unsigned)i)
				      : e,
				  "gpus", -1, &out->v[out->n++], err)))
			return rc;
	return 0;
}

/* The knobs a candidate's index varies, by their digits (slowest first;
 * ties in the list's order); vp rides with the schedule. */
static void digits(struct sweep *s)
{
	s->n_order = 0;
	for (int k = 0; k < LK_N; k++) {
		int i = s->n_order;
		if (!(layout_knobs[k].flags & LK_SWEEP) || k == LK_vp)
			continue;
		for (; i > 0 && layout_knobs[s->order[i - 1]].digit > layout_knobs[k].digit; i--)
			s->order[i] = s->order[i - 1];
		s->order[i] = k;
		s->n_order++;
	}
}

/* 'hw': a profile (a file, or a name in configs/hw/), or a list of 1 to
 * SWEEP_MAX_HW of them (hw_list: each is an axis of the sweep). */
static int hw_setting(const char *file, const config_t *cf, struct sweep *s, struct prism_err *err)
{
	config_setting_t *e = config_lookup(cf, "hw");
	int n;

	if (!e || !config_setting_is_aggregate(e)) {
		s->n_hw = 1;
		return cfg_text(file, cf, NULL, "hw", s->hw_name[0], sizeof(s->hw_name[0]), err);
	}
	n = config_setting_length(e);
	if (n < 1 || n > SWEEP_MAX_HW)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: 'hw' must name 1 to %d hardware profiles", file,
				     config_setting_source_line(e), SWEEP_MAX_HW);
	for (int i = 0; i < n; i++) {
		const config_setting_t *x = config_setting_get_elem(e, (unsigned)i);
		const char *v = config_setting_get_string(x);
		if (!v || !v[0] || strlen(v) >= sizeof(s->hw_name[0]))
			return prism_err_set(err, PRISM_EFORMAT,
					     "%s:%d: 'hw' must list profiles' names in quotes",
					     file, config_setting_source_line(x));
		snprintf(s->hw_name[i], sizeof(s->hw_name[i]), "%s", v);
	}
	s->n_hw = n;
	s->hw_list = 1;
	return 0;
}

/* 'price_per_gpu_hour': one price for every profile, or (with a list of
 * profiles) a list of one per profile; absent: each profile's own. */
static int price_setting(const char *file, const config_t *cf, struct sweep *s,
			 struct prism_err *err)
{
	config_setting_t *e = config_lookup(cf, "price_per_gpu_hour");
	int rc;

	if (!e)
		return 0;
	if (!config_setting_is_aggregate(e)) {
		if ((rc = cfg_range(file, cf, NULL, "price_per_gpu_hour", 0, 1e6, 0, 1,
				    &s->price_per_gpu_hour, err)))
			return rc;
		for (int i = 0; i < s->n_hw; i++)
			s->hw_price[i] = s->price_per_gpu_hour;
		return 0;
	}
	if (config_setting_length(e) != s->n_hw)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: 'price_per_gpu_hour' lists %d prices for %d profiles "
				     "in 'hw' (one for each, or one number for all)",
				     file, config_setting_source_line(e), config_setting_length(e),
				     s->n_hw);
	for (int i = 0; i < s->n_hw; i++) {
		const config_setting_t *x = config_setting_get_elem(e, (unsigned)i);
		int t = config_setting_type(x);
		double v = t == CONFIG_TYPE_INT	    ? config_setting_get_int(x)
			   : t == CONFIG_TYPE_FLOAT ? config_setting_get_float(x)
						    : -1;
		if (!(v >= 0 && v <= 1e6))
			return prism_err_set(err, PRISM_EFORMAT,
					     "%s:%d: 'price_per_gpu_hour' must list numbers in "
					     "0..1e+06",
					     file, config_setting_source_line(x));
		s->hw_price[i] = v;
	}
	return 0;
}

/*
 * The global batch counts sequences.  A plain trace (no run description)
 * does not say how many sequences a microbatch holds, so a global batch
 * given in sequences cannot be turned into microbatches: refused, saying
 * so.  Left out there, each candidate keeps the trace's own global batch
 * (its mbs x microbatches x dp, whatever a microbatch holds), or that times
 * global_batch_scale; left out over any other base, the setting is
 * missing, and global_batch_scale is refused there (global_batch says it).
 */
static int batch_check(const char *path, const struct sweep *s, struct prism_err *err)
{
	const struct synth_in *b = &s->bl.pb.in;
	if (s->bl.pb.kind == PB_TRACE && s->global_batch > 0)
		return prism_err_set(
		    err, PRISM_EARG,
		    "%s:%d: global_batch: base %s has no run description (prism::model#): "
		    "global_batch counts sequences, and the trace does not say how many a "
		    "microbatch holds: leave global_batch out (each candidate keeps the "
		    "trace's own, its %d microbatches x dp %d, or global_batch_scale times "
		    "it) or describe the trace (prism describe)",
		    path, s->global_batch_line, s->base[0], b->lay.microbatches, b->lay.dp);
	if (s->bl.pb.kind != PB_TRACE && s->batch_scale > 0)
		return prism_err_set(err, PRISM_EARG,
				     "%s:%d: global_batch_scale is for a base without a run "
				     "description (a plain trace); give global_batch in sequences",
				     path, s->batch_scale_line);
	if (s->bl.pb.kind != PB_TRACE && s->global_batch <= 0)
		return prism_err_set(err, PRISM_EFORMAT, "%s:1: missing setting 'global_batch'",
				     path);
	return 0;
}

int sweep_load(const char *path, struct sweep *s, struct prism_err *err)
{
	return sweep_load_hw(path, NULL, s, err);
}

int sweep_load_hw(const char *path, const char *base_hw, struct sweep *s, struct prism_err *err)
{
	static const char *const top[] = {"name",
					  "model",
					  "base",
					  "hw",
					  "gpus",
					  "gpu_budget",
					  "global_batch",
					  "global_batch_scale",
					  "screen_margin",
					  "kernel_db",
					  "space",
					  "tokens",
					  "price_per_gpu_hour",
					  "base_dp",
					  "moe_imbalance",
					  "base_step_ms",
					  "base_hw"};
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
	    (rc = known_knobs(path, space, err)))
		goto out;
	if ((rc = name_setting(path, &cf, s, err)) || (rc = base_setting(path, &cf, s, err)) ||
	    (!s->n_base && (rc = cfg_text(path, &cf, NULL, "model", s->model_name,
					  sizeof(s->model_name), err))) ||
	    (rc = hw_setting(path, &cf, s, err)))
		goto out;
	/* The global batch, in sequences: required but over a trace base,
	 * which may leave it out (load_base decides). */
	v = 0;
	s->global_batch_line = 1;
	if ((config_lookup(&cf, "global_batch") || !s->n_base) &&
	    (rc = cfg_range(path, &cf, NULL, "global_batch", 1, SWEEP_MAX_BATCH, 1, 1, &v, err)))
		goto out;
	if (config_lookup(&cf, "global_batch"))
		s->global_batch_line =
		    config_setting_source_line(config_lookup(&cf, "global_batch"));
	s->global_batch = (int)v;
	if (config_lookup(&cf, "global_batch_scale")) {
		if ((rc = cfg_range(path, &cf, NULL, "global_batch_scale", 1, SWEEP_MAX_BATCH_SCALE,
				    1, 1, &v, err)))
			goto out;
		s->batch_scale = (int)v;
		s->batch_scale_line =
		    config_setting_source_line(config_lookup(&cf, "global_batch_scale"));
	}
	if (config_lookup(&cf, "kernel_db")) {
		char p[512];
		if ((rc = cfg_text(path, &cf, NULL, "kernel_db", p, sizeof(p), err)))
			goto out;
		if ((rc = resolve(path, "kernel_db", p, s->kdb_path, sizeof(s->kdb_path), err)))
			goto out;
	}
	/* What a training run needs, for the report's days and cost: both
	 * optional.  1e16 tokens is 30x today's largest runs. */
	if (config_lookup(&cf, "tokens") &&
	    (rc = cfg_range(path, &cf, NULL, "tokens", 1, 1e16, 0, 1, &s->tokens, err)))
		goto out;
	if ((rc = price_setting(path, &cf, s, err)))
		goto out;
	if (config_lookup(&cf, "base_dp")) {
		if ((rc = cfg_range(path, &cf, NULL, "base_dp", 1, LAYOUT_MAX_DP, 1, 1, &v, err)))
			goto out;
		s->base_dp = (int)v;
	}
	/* The base's hardware where its trace names no GPU prism has a
	 * profile for (base.h); the command line's, if given, must agree. */
	if (config_lookup(&cf, "base_hw") &&
	    (rc = cfg_text(path, &cf, NULL, "base_hw", s->base_hw, sizeof(s->base_hw), err)))
		goto out;
	if (base_hw && s->base_hw[0] && strcmp(base_hw, s->base_hw) != 0) {
		rc = prism_err_set(
		    err, PRISM_EARG, "%s:%d: --base-hw %s, but the sweep's base_hw is '%s'", path,
		    config_setting_source_line(config_lookup(&cf, "base_hw")), base_hw, s->base_hw);
		goto out;
	}
	if (base_hw &&
	    (size_t)snprintf(s->base_hw, sizeof(s->base_hw), "%s", base_hw) >= sizeof(s->base_hw)) {
		rc = prism_err_set(err, PRISM_EARG, "--base-hw: over %zu bytes",
				   sizeof(s->base_hw) - 1);
		goto out;
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
		if ((rc = gpus_list(path, config_root_setting(&cf), &s->gpus, err)))
			goto out;
	} else {
		double budget;
		if ((rc = cfg_range(path, &cf, NULL, "gpu_budget", 1, LAYOUT_MAX_GPUS, 1, 1,
				    &budget, err)))
			goto out;
		for (long g = 1; g <= budget && s->gpus.n < SWEEP_MAX_LIST; g *= 2)
			s->gpus.v[s->gpus.n++] = (int)g;
	}
	for (int k = 0; k < LK_N; k++)
		if ((layout_knobs[k].flags & LK_SWEEP) &&
		    (rc = knob(path, space, layout_knobs[k].id, k, &s->knob[k], err)))
			goto out;
	digits(s);
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
	/* The base and the hardware named in it (each profile once). */
	for (int i = 0; i < s->n_hw && !rc; i++) {
		rc = cli_load_hw(s->hw_name[i], &s->hw[i], err);
		if (s->hw_price[i] == 0)
			s->hw_price[i] = s->hw[i].price_per_gpu_hour;
		for (int j = 0; j < i && !rc; j++)
			if (strcmp(s->hw[i].id, s->hw[j].id) == 0)
				rc = prism_err_set(err, PRISM_EFORMAT,
						   "'hw' lists the profile %s twice", s->hw[i].id);
	}
	if (!s->hw_list && s->price_per_gpu_hour == 0)
		s->price_per_gpu_hour = s->hw_price[0]; /* the profile's */
	if (rc || (rc = load_base(s, err))) {
		prism_err_prefix(err, "%s", path);
		sweep_release(s);
		return rc;
	}
	if ((rc = batch_check(path, s, err))) {
		sweep_release(s);
		return rc;
	}
	if ((rc = slurp(path, &s->text, err))) {
		sweep_release(s);
		return rc;
	}
	if ((rc = sweep_canon(s->text, &s->canon))) {
		sweep_release(s);
		return rc == PRISM_ENOMEM ? prism_err_set(err, rc, "%s: out of memory", path)
					  : prism_err_set(err, rc, "%s: does not parse", path);
	}
	return 0;
out:
	/* libconfig and cfg_* errors name the file and line already. */
	config_destroy(&cf);
	sweep_release(s);
	return rc;
}

void sweep_release(struct sweep *s)
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

/* The key: "hw=ID;" first where the sweep lists profiles, then the GPU
 * count and layout_key's; then each knob keyed only where swept
 * (LK_KEY_SWEPT: seq) that the sweep lists. */
static void make_key(const struct sweep *s, struct cand *c)
{
	size_t n = 0;
	if (s->hw_list)
		n = (size_t)snprintf(c->key, sizeof(c->key), "hw=%s;", s->hw[c->hw].id);
	n += (size_t)snprintf(c->key + n, sizeof(c->key) - n, "gpus=%d;", c->gpus);
	layout_key(&c->in.m, &c->in.lay, c->key + n, sizeof(c->key) - n);
	for (int k = 0; k < LK_N; k++) {
		char v[32];
		if (layout_knobs[k].key_group != LK_KEY_SWEPT ||
		    !(layout_knobs[k].flags & LK_SWEEP) || s->knob[k].v[0] == SWEEP_BASE)
			continue;
		n = strlen(c->key);
		layout_format(&c->in.m, &c->in.lay, k, 0, v, sizeof(v));
		snprintf(c->key + n, sizeof(c->key) - n, ";%s=%s", layout_knobs[k].id, v);
	}
}

/* c's memory (synth_mem's two steps), its layout placed once and the
 * placement kept for its row (store_put): a balanced placement is a dry
 * run of a layer, the embedding and the head. */
static void cand_mem(struct cand *c)
{
	synth_mem_layout(&c->in, &c->placed);
	mem_estimate(&c->in.m, &c->placed, c->in.hw, &c->p.mem);
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
	cand_mem(c);
	me = c->p.mem; /* stored whatever the verdict */
	if (!me.fits) {
		c->status = CS_OOM;
		snprintf(c->reason, sizeof(c->reason),
			 "needs %.1f GB of %.1f GB usable (more than the model's "
			 "uncertainty, +/-%.1f GB)",
			 me.total / 1e9, me.capacity / 1e9, me.band / 1e9);
		return;
	}
	/* The step's own clock from the same estimate (analytic_step_clock):
	 * its build and bound take it. */
	c->analytic_s = predict_analytic_clock(&c->in, &c->in.clock);
	/* The bound holds for synthesised graphs; an edited trace keeps its
	 * own kernels, which may beat it. */
	c->bound_s = predict_method(&s->bl.pb, &c->in, &err) == PM_EDIT ||
			     predict_method(&s->bl.pb, &c->in, &err) == PM_REPLAY
			 ? 0
			 : synth_lower_bound(&c->in);
}

static int decode(const struct sweep *s, uint64_t index, struct cand *c, int keyed);

/* Schedule and virtual stages, one axis: vp varies only with interleaved. */
static int sched_axis(const struct sweep *s)
{
	int n = 0;
	for (int is = 0; is < s->knob[LK_schedule].n; is++)
		n += s->knob[LK_schedule].v[is] == LAYOUT_INTERLEAVED ? s->knob[LK_vp].n : 1;
	return n;
}

/* How many values knob k's digit takes. */
static int radix(const struct sweep *s, int k)
{
	return k == LK_schedule ? sched_axis(s) : s->knob[k].n;
}

uint64_t sweep_count(const struct sweep *s)
{
	/* Up to 32^25 would overflow: the product saturates. */
	uint64_t c = (uint64_t)s->gpus.n * (uint64_t)s->n_hw;
	for (int i = 0; i < s->n_order; i++) {
		uint64_t n = (uint64_t)radix(s, s->order[i]);
		if (n && c > UINT64_MAX / n)
			return UINT64_MAX;
		c *= n;
	}
	return c;
}

int sweep_candidate(const struct sweep *s, uint64_t index, struct cand *c)
{
	if (decode(s, index, c, 1))
		return 1;
	judge(s, c);
	return 0;
}

int sweep_verdict(const struct sweep *s, uint64_t index, struct cand *c)
{
	if (decode(s, index, c, 0))
		return 1;
	judge(s, c);
	return 0;
}

/* What judge leaves on a pending candidate besides its memory. */
static void judged(struct cand *c, const struct sweep_judged *j)
{
	c->analytic_s = j->analytic_s;
	c->bound_s = j->bound_s;
	c->in.clock = j->clock;
}

int sweep_candidate_pending(const struct sweep *s, uint64_t index, const struct sweep_judged *j,
			    struct cand *c)
{
	if (decode(s, index, c, 1))
		return 1;
	/* What judge leaves on a pending candidate: its memory (the row keeps
	 * it; a plain trace has none), its estimate, its bound and its
	 * clock. */
	if (s->bl.pb.kind != PB_TRACE)
		cand_mem(c);
	judged(c, j);
	return 0;
}

/* A placement's own fields, from onto to (synth_mem_layout sets no
 * other: synth_partition, layout_partition_place). */
static void place_fields(struct layout *to, const struct layout *from)
{
	memcpy(to->part, from->part, sizeof(to->part));
	to->part_chunks = from->part_chunks;
	to->part_first = from->part_first;
	to->part_last = from->part_last;
	to->part_mtp = from->part_mtp;
	to->partition = from->partition;
}

int sweep_placement(const struct cand *c, struct layout *p)
{
	struct layout x;
	if (c->placed.pp <= 0)
		return 0;
	memcpy(&x, &c->in.lay, sizeof(x));
	place_fields(&x, &c->placed);
	if (memcmp(&x, &c->placed, sizeof(x)) != 0)
		return 0;
	memset(p, 0, sizeof(*p));
	place_fields(p, &c->placed);
	return 1;
}

int sweep_memory(const struct cand *c, struct mem_est *m)
{
	if (c->placed.pp <= 0)
		return 0;
	*m = c->p.mem;
	return 1;
}

int sweep_candidate_placed(const struct sweep *s, uint64_t index, const struct sweep_judged *j,
			   const struct layout *p, const struct mem_est *mem, struct cand *c)
{
	if (s->bl.pb.kind == PB_TRACE)
		return sweep_candidate_pending(s, index, j, c);
	if (decode(s, index, c, 1))
		return 1;
	memcpy(&c->placed, &c->in.lay, sizeof(c->placed));
	place_fields(&c->placed, p);
	if (mem)
		c->p.mem = *mem;
	else
		mem_estimate(&c->in.m, &c->placed, c->in.hw, &c->p.mem);
	judged(c, j);
	return 0;
}

/* 1 where the sweep lists more than one value of knob k. */
static int swept(const struct sweep *s, int k)
{
	for (int i = 0; i < s->n_order; i++)
		if (s->order[i] == k)
			return radix(s, k) > 1;
	return 0;
}

/* c's canonical input as twins compare it: without its clock (the twins'
 * own rule, sweep_twin_clock). */
static layout_mask canon_of(const struct cand *c, struct synth_in *x)
{
	layout_mask set = synth_canonical(&c->in, x);
	x->clock = 0;
	return set;
}

uint64_t sweep_canon_key(const struct sweep *s, const struct cand *c)
{
	struct synth_in x;
	struct prism_err e;
	layout_mask set;
	uint64_t h;
	int m, any = 0;

	if (c->status != CS_PENDING || s->bl.pb.kind == PB_TRACE)
		return 0;
	set = canon_of(c, &x);
	for (int k = 0; k < LK_N && !any; k++)
		any = (set & LK_BIT(k)) && swept(s, k);
	if (!any)
		return 0;
	/* Only a prediction that builds the candidate (a base's replay or
	 * edit reads more than the graph synth would build). */
	if (s->bl.pb.kind != PB_MODEL) {
		prism_err_clear(&e);
		m = predict_method(&s->bl.pb, &c->in, &e);
		if (m != PM_SYNTH && m != PM_REBUILD)
			return 0;
	}
	h = hash_bytes(HASH_SEED, &x, sizeof(x));
	return h ? h : 1;
}

int sweep_same_graph(const struct cand *a, const struct cand *b)
{
	struct synth_in x, y;
	canon_of(a, &x);
	canon_of(b, &y);
	return memcmp(&x, &y, sizeof(x)) == 0;
}

double sweep_twin_clock(const struct cand *c)
{
	struct synth_in x;
	canon_of(c, &x);
	x.clock = c->in.clock;
	if (memcmp(&x, &c->in, sizeof(x)) == 0)
		return c->in.clock; /* (its own estimate is the canonical input's) */
	x.clock = 0;
	return analytic_step_clock(&x);
}

int sweep_same_graph_at(const struct sweep *s, const struct cand *c, uint64_t index)
{
	struct cand t;
	return decode(s, index, &t, 0) == 0 && t.status == CS_PENDING && sweep_same_graph(c, &t);
}

int sweep_key(const struct sweep *s, uint64_t index, char *key, size_t n)
{
	struct cand c;
	if (decode(s, index, &c, 1))
		return 1;
	snprintf(key, n, "%s", c.key);
	return 0;
}

/* The model's width in a sweep: hidden, the FFN keeping its ratio to it
 * (a plain trace's, whose width is unknown, takes it as it is). */
static void set_hidden(const struct sweep *s, struct cand *c, int hidden, int64_t *ffn)
{
	if (s->tmpl.m.hidden <= 0) {
		c->in.m.hidden = hidden; /* judged: a plain trace's is unknown */
		return;
	}
	*ffn = (int64_t)s->tmpl.m.ffn * hidden / s->tmpl.m.hidden;
	c->in.m.ffn = *ffn > LLM_MAX_FFN ? LLM_MAX_FFN : (int)*ffn;
	c->in.m.hidden = hidden;
}

/* The partition "auto" resolved for l (m's layers, l's pp and vp): even
 * where the layers divide by pp x vp (a sweep's candidates before "auto"
 * keep theirs); else Megatron-Core's embedding and loss slots
 * (account_for_embedding/loss_in_pipeline_split: both, then either), as
 * Llama 3.1 405B's recipes take (126 + 2 layers on pp 8); else the first
 * and last stages' counts (num_layers_in_first/last_pipeline_stage), the
 * middle stages full (ceil(layers / pp) rounded up to vp's multiple, then
 * one vp fewer until the rest fits) and the rest split between the two,
 * the last (the head and the loss) the smaller half.  Where none is
 * accepted, even stays and the check says why. */
static void part_auto(const struct llm *m, struct layout *l)
{
	static const int slots[] = {LAYOUT_PART_EMBED_LOSS, LAYOUT_PART_EMBED, LAYOUT_PART_LOSS};
	int p = l->pp, v = l->vp > 0 ? l->vp : 1, L = m->layers;

	l->partition = LAYOUT_PART_GIVEN;
	if (p < 2 || layout_check_partition(m, l, NULL) == 0)
		return;
	for (size_t i = 0; i < sizeof(slots) / sizeof(*slots); i++) {
		l->partition = slots[i];
		if (layout_check_partition(m, l, NULL) == 0)
			return;
	}
	l->partition = LAYOUT_PART_FIRST_LAST;
	for (long q = ((long)L + (long)p * v - 1) / ((long)p * v) * v; q >= v; q -= v) {
		long rest = L - (long)(p - 2) * q, K = rest / 2 / v * v;
		if (rest < 2L * v || K > 65535 || rest - K > 65535)
			continue;
		l->part_first = (uint16_t)(rest - K);
		l->part_last = (uint16_t)K;
		if (layout_check_partition(m, l, NULL) == 0)
			return;
	}
	l->partition = LAYOUT_PART_GIVEN;
	l->part_first = l->part_last = 0;
}

/* Candidate index of s, keyed (where keyed is 1; else key "") and checked
 * against the sweep's own rules (not judged): 0, or 1 when index is no candidate: past the last, or a
 * knob that does not apply to it past its first value (partition with pp
 * 1, shard without ZeRO, ...: layout.h's `applies`), or sp without tp
 * (LK_FORCE: the same candidate as no sp). */
_Static_assert(offsetof(struct cand, in) == 0, "decode zeroes what follows the template");

static int decode(const struct sweep *s, uint64_t index, struct cand *c, int keyed)
{
	uint64_t x = index;
	int ix[LK_N] = {0};
	int gpus, dp;
	int64_t tpp, per, gbs, ffn = 0;
	struct layout *l = &c->in.lay;

	/* Mixed radix, the fastest digit last. */
	for (int i = s->n_order - 1; i >= 0; i--) {
		int k = s->order[i];
		ix[k] = (int)(x % (uint64_t)radix(s, k));
		x /= (uint64_t)radix(s, k);
	}
	if (x >= (uint64_t)s->gpus.n * (uint64_t)s->n_hw)
		return 1; /* past the last */
	/* The schedule axis: each schedule, interleaved once per vp. */
	for (int is = 0;; is++) {
		int il = s->knob[LK_schedule].v[is] == LAYOUT_INTERLEAVED;
		int nv = il ? s->knob[LK_vp].n : 1;
		if (ix[LK_schedule] < nv) {
			ix[LK_vp] = il ? ix[LK_schedule] : -1;
			ix[LK_schedule] = is;
			break;
		}
		ix[LK_schedule] -= nv;
	}
	/* The template, then the rest zeroed (not the whole struct first:
	 * every candidate of a sweep is decoded once or twice). */
	c->in = s->tmpl;
	memset((char *)c + sizeof(c->in), 0, sizeof(*c) - sizeof(c->in));
	c->hw = (int)(x / (uint64_t)s->gpus.n);
	c->in.hw = &s->hw[c->hw];
	c->price = s->hw_price[c->hw];
	c->gpus = gpus = s->gpus.v[x % (uint64_t)s->gpus.n];
	for (int i = 0; i < s->n_order; i++) {
		int k = s->order[i], v = s->knob[k].v[ix[k]];
		if (v == SWEEP_BASE)
			continue;
		if (k == LK_partition && v == SWEEP_PART_AUTO)
			layout_set(&c->in.m, l, k, LAYOUT_PART_GIVEN); /* part_auto's below */
		else if (k == LK_hidden)
			set_hidden(s, c, v, &ffn);
		else
			layout_set(&c->in.m, l, k, v);
	}
	l->vp = ix[LK_vp] >= 0 ? s->knob[LK_vp].v[ix[LK_vp]] : 1;
	memset(l->part, 0, sizeof(l->part));
	l->part_chunks = l->part_first = l->part_last = l->part_mtp = 0;
	/* A knob that does not apply: its first value only (the same
	 * candidate again); LK_FORCE: its default. */
	for (int i = 0; i < s->n_order; i++) {
		int k = s->order[i];
		const struct layout_knob *K = &layout_knobs[k];
		if (layout_applies(&c->in.m, l, k))
			continue;
		if (K->flags & LK_FORCE) {
			if (layout_get(&c->in.m, l, k, 0) != K->def && s->knob[k].n > 1)
				return 1;
			layout_set(&c->in.m, l, k, K->def);
		} else if (ix[k] > 0) {
			return 1;
		}
	}
	if (s->knob[LK_partition].v[ix[LK_partition]] == SWEEP_PART_AUTO)
		part_auto(&c->in.m, l);
	/* The data-parallel ranks are what the other degrees leave: dp = gpus
	 * / (tp x pp x cp); the microbatches what the global batch asks of
	 * them. */
	tpp = (int64_t)l->tp * l->pp * layout_cp(l);
	dp = (int)(gpus / tpp);
	l->dp = dp > 0 ? dp : 1;
	per = (int64_t)dp * l->mbs;
	/* No global batch (a plain trace base): the trace's own, in its
	 * microbatches (batch_check). */
	gbs = s->global_batch > 0 ? s->global_batch
				  : (int64_t)s->tmpl.lay.mbs * s->tmpl.lay.microbatches *
					s->tmpl.lay.dp * (s->batch_scale > 0 ? s->batch_scale : 1);
	l->microbatches = per > 0 ? (int)(gbs / per < INT_MAX ? gbs / per : INT_MAX) : 0;
	if (l->microbatches < 1)
		l->microbatches = 1;
	if (gpus % tpp) {
		c->status = CS_INVALID;
		snprintf(c->reason, sizeof(c->reason), "%d GPUs do not divide by tp %d x pp %d%s",
			 gpus, l->tp, l->pp, layout_cp(l) > 1 ? " x cp" : "");
	} else if (gbs % per && s->global_batch > 0) {
		c->status = CS_INVALID;
		snprintf(c->reason, sizeof(c->reason),
			 "global batch %d does not divide by dp %d x mbs %d", s->global_batch, dp,
			 l->mbs);
	} else if (gbs % per) {
		c->status = CS_INVALID;
		snprintf(c->reason, sizeof(c->reason),
			 "the trace's global batch (%d microbatches x dp %d%s) does not divide by "
			 "dp %d x mbs %d",
			 s->tmpl.lay.microbatches, s->tmpl.lay.dp,
			 s->batch_scale > 1 ? " x global_batch_scale" : "", dp, l->mbs);
	} else if (ffn > LLM_MAX_FFN) {
		c->status = CS_INVALID;
		snprintf(c->reason, sizeof(c->reason),
			 "ffn %" PRId64 " (scaled with hidden %d) is beyond %d", ffn,
			 c->in.m.hidden, LLM_MAX_FFN);
	}
	if (keyed)
		make_key(s, c);
	return 0;
}
