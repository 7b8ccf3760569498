/* cfg.c - libconfig helpers with precise errors, and libconfig's allocator. */
#include "cfg.h"

#include <errno.h>
#include <locale.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <math.h>
#include <stdio.h>

/* ---- libconfig's allocations ------------------------------------------------ */

/*
 * libconfig has no allocator hook, and it uses what malloc returns
 * unchecked: a setting whose calloc failed is written through (SIGSEGV); a
 * setting whose name's strdup failed is kept nameless, found by no lookup,
 * so that its default is read instead (a search that exits 0 with a
 * profile's value replaced).  So prism links libconfig's static archive
 * with its malloc, calloc, realloc, strdup and free renamed to the cfg_lib_
 * functions below (CMakeLists.txt, objcopy --redefine-sym).  They allocate
 * through prism_malloc (failure injection reaches them), a block's header
 * keeping it on its parse's list; libconfig never sees NULL: an allocation
 * that fails inside a parse (cfg_parse) jumps back out of libconfig, every
 * block it took during the parse is freed, and the parse ends in "out of
 * memory".  The parse's state is the thread's: libconfig passes no
 * context, and threads parse apart.  Where the archive is not found (the
 * shared library is linked, libconfig's allocations are its own)
 * cfg_parse still refuses a parse that dropped a name or a string.
 */
union cfg_block { /* before each block libconfig takes */
	struct {
		union cfg_block *prev, *next; /* on the parse's list; NULL after it */
	} link;
	max_align_t align;
};

struct cfg_parse_state {
	jmp_buf jump;		/* back into cfg_parse */
	union cfg_block blocks; /* the list's head: what libconfig holds */
	int active;		/* inside cfg_parse */
};

static _Thread_local struct cfg_parse_state parse_state;

void *cfg_lib_malloc(size_t n);
void *cfg_lib_calloc(size_t n, size_t size);
void *cfg_lib_realloc(void *p, size_t n);
char *cfg_lib_strdup(const char *s);
char *cfg_lib_strdup_glibc(const char *s);
void cfg_lib_free(void *p);

/* The block b (prism_malloc's, or NULL) handed to libconfig. */
static void *lib_block(union cfg_block *b)
{
	struct cfg_parse_state *s = &parse_state;

	if (!b) {
		if (s->active)
			longjmp(s->jump, 1);
		return NULL;
	}
	if (s->active) {
		b->link.prev = &s->blocks;
		b->link.next = s->blocks.link.next;
		b->link.next->link.prev = b;
		s->blocks.link.next = b;
	} else {
		b->link.prev = b->link.next = NULL;
	}
	return b + 1;
}

void *cfg_lib_malloc(size_t n)
{
	return lib_block(n > SIZE_MAX - sizeof(union cfg_block)
			     ? NULL
			     : prism_malloc(sizeof(union cfg_block) + n));
}

void *cfg_lib_calloc(size_t n, size_t size)
{
	return lib_block(size && n > (SIZE_MAX - sizeof(union cfg_block)) / size
			     ? NULL
			     : prism_calloc(1, sizeof(union cfg_block) + n * size));
}

void *cfg_lib_realloc(void *p, size_t n)
{
	union cfg_block *b = p ? (union cfg_block *)p - 1 : NULL, *nb;

	if (!p)
		return cfg_lib_malloc(n);
	nb = n > SIZE_MAX - sizeof(*b) ? NULL : prism_realloc(b, sizeof(*b) + n);
	if (!nb) /* b stays, on its list */
		return lib_block(NULL);
	if (nb->link.next) { /* moved: its neighbours point to it again */
		nb->link.prev->link.next = nb;
		nb->link.next->link.prev = nb;
	}
	return nb + 1;
}

char *cfg_lib_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = cfg_lib_malloc(n);
	return d ? memcpy(d, s, n) : NULL;
}

char *cfg_lib_strdup_glibc(const char *s)
{
	return cfg_lib_strdup(s);
}

void cfg_lib_free(void *p)
{
	union cfg_block *b = p ? (union cfg_block *)p - 1 : NULL;

	if (!b)
		return;
	if (b->link.next) {
		b->link.prev->link.next = b->link.next;
		b->link.next->link.prev = b->link.prev;
	}
	free(b);
}

/* Ends the parse's list: its blocks freed (free_them), or kept by their
 * config, off any list. */
static void parse_end(struct cfg_parse_state *s, int free_them)
{
	union cfg_block *b = s->blocks.link.next, *next;

	for (; b != &s->blocks; b = next) {
		next = b->link.next;
		if (free_them) {
			free(b);
		} else {
			b->link.prev = b->link.next = NULL;
		}
	}
	s->blocks.link.prev = s->blocks.link.next = &s->blocks;
	s->active = 0;
}

/* 1 when every setting under s has its name (in a group) and every string
 * its text: what libconfig drops when one of its own allocations fails. */
static int whole(const config_setting_t *s)
{
	int n = config_setting_is_aggregate(s) ? config_setting_length(s) : 0;

	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
		if (!e || (config_setting_is_group(s) && !config_setting_name(e)) ||
		    (config_setting_type(e) == CONFIG_TYPE_STRING &&
		     !config_setting_get_string(e)) ||
		    !whole(e))
			return 0;
	}
	return 1;
}

int cfg_parse(config_t *cf, const char *text, const char *path, struct prism_err *err)
{
	struct cfg_parse_state *s = &parse_state;
	locale_t loc = uselocale((locale_t)0);
	int rc;

	s->blocks.link.prev = s->blocks.link.next = &s->blocks;
	s->active = 1;
	if (setjmp(s->jump)) {
		/* An allocation failed inside libconfig: what it took is freed,
		 * the locale it set for the parse put back (its "C", which
		 * libconfig frees on the way out). */
		locale_t now = uselocale(loc);
		if (now != loc && now != LC_GLOBAL_LOCALE && now != (locale_t)0)
			freelocale(now);
		parse_end(s, 1);
		memset(cf, 0, sizeof(*cf));
		return prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
	}
	config_init(cf);
	if (config_read_string(cf, text) != CONFIG_TRUE) {
		rc = prism_err_set(err, PRISM_EFORMAT, "%s:%d: %s", path, config_error_line(cf),
				   config_error_text(cf));
		config_destroy(cf);
		parse_end(s, 1); /* what libconfig 1.5 leaves of a failed parse */
		return rc;
	}
	parse_end(s, 0);
	if (!whole(config_root_setting(cf))) {
		config_destroy(cf);
		return prism_err_set(err, PRISM_ENOMEM,
				     "%s: out of memory (libconfig dropped a setting)", path);
	}
	return 0;
}

/* The file's text, NUL-terminated, read by us rather than libconfig: a
 * regular file of at most CFG_MAX_BYTES.  NULL with err set otherwise. */
static char *cfg_text_of(const char *path, struct prism_err *err)
{
	struct stat sb;
	char *buf = NULL;
	size_t n = 0;
	FILE *f;

	if (stat(path, &sb) != 0) {
		prism_err_set(err, PRISM_EIO, "%s: cannot read the file (%s)", path,
			      strerror(errno));
		return NULL;
	}
	/* A FIFO or a device would block (even opening it) or never end. */
	if (!S_ISREG(sb.st_mode)) {
		prism_err_set(err, PRISM_EIO, "%s: not a regular file", path);
		return NULL;
	}
	if (!(f = fopen(path, "rb"))) {
		if (errno == ENOMEM) /* the C library's FILE */
			prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
		else
			prism_err_set(err, PRISM_EIO, "%s: cannot read the file (%s)", path,
				      strerror(errno));
		return NULL;
	}
	if ((uint64_t)sb.st_size > CFG_MAX_BYTES || !(buf = prism_malloc((size_t)sb.st_size + 1)) ||
	    (n = fread(buf, 1, (size_t)sb.st_size, f)) != (size_t)sb.st_size) {
		if ((uint64_t)sb.st_size > CFG_MAX_BYTES)
			prism_err_set(err, PRISM_EFORMAT,
				      "%s: %lld bytes, more than a "
				      "configuration file may have (%u)",
				      path, (long long)sb.st_size, CFG_MAX_BYTES);
		else if (!buf)
			prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
		else
			prism_err_set(err, PRISM_EIO, "%s: cannot read the file", path);
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	buf[n] = '\0';
	if (strlen(buf) != n) {
		prism_err_set(err, PRISM_EFORMAT, "%s: byte %zu: a NUL byte in a text file", path,
			      strlen(buf));
		free(buf);
		return NULL;
	}
	/* libconfig would read any file an @include line names (a FIFO for
	 * ever); prism's files are whole in themselves. */
	for (size_t i = 0, line = 1; i < n; i++) {
		size_t j = i;
		while (j < n && (buf[j] == ' ' || buf[j] == '\t'))
			j++;
		if (strncmp(buf + j, "@include", 8) == 0) {
			prism_err_set(err, PRISM_EFORMAT,
				      "%s:%zu: @include is not supported (prism's configuration "
				      "files are whole in themselves)",
				      path, line);
			free(buf);
			return NULL;
		}
		while (i < n && buf[i] != '\n')
			i++;
		line++;
	}
	return buf;
}

int cfg_read(config_t *cf, const char *path, struct prism_err *err)
{
	char *text = cfg_text_of(path, err);
	int rc;

	if (!text)
		return err ? err->code : PRISM_EIO;
	rc = cfg_parse(cf, text, path, err);
	free(text);
	return rc;
}

void cfg_full_name(config_setting_t *g, const char *path, char *buf, size_t n)
{
	if (g && config_setting_name(g))
		snprintf(buf, n, "%s.%s", config_setting_name(g), path);
	else
		snprintf(buf, n, "%s", path);
}

static const config_setting_t *lookup(const config_t *cf, config_setting_t *g, const char *path)
{
	return g ? config_setting_lookup(g, path) : config_lookup(cf, path);
}

static int value(const char *file, const config_setting_t *s, const char *full, double *v,
		 struct prism_err *err)
{
	if (config_setting_type(s) == CONFIG_TYPE_INT)
		*v = config_setting_get_int(s);
	else if (config_setting_type(s) == CONFIG_TYPE_INT64)
		*v = (double)config_setting_get_int64(s);
	else if (config_setting_type(s) == CONFIG_TYPE_FLOAT)
		*v = config_setting_get_float(s);
	else
		return prism_err_set(err, PRISM_EFORMAT, "%s:%d: '%s' must be a number", file,
				     config_setting_source_line(s), full);
	return 0;
}

/* "lo..hi" as a message shows it: whole numbers without exponents. */
static void range_text(double lo, double hi, int whole, char *buf, size_t n)
{
	if (whole)
		snprintf(buf, n, "%.0f..%.0f", lo, hi);
	else
		snprintf(buf, n, "%g..%g", lo, hi);
}

int cfg_range(const char *file, const config_t *cf, config_setting_t *g, const char *path,
	      double lo, double hi, int whole, double scale, double *out, struct prism_err *err)
{
	const config_setting_t *s = lookup(cf, g, path);
	char full[128], range[64];
	double v = 0;
	int rc;

	cfg_full_name(g, path, full, sizeof(full));
	if (!s)
		return prism_err_set(err, PRISM_EFORMAT, "%s:%d: missing setting '%s'", file,
				     g ? config_setting_source_line(g) : 1, full);
	if ((rc = value(file, s, full, &v, err)))
		return rc;
	/* Written so that NaN and the infinities fail too. */
	if (!(v >= lo && v <= hi) || (whole && v != floor(v))) {
		range_text(lo, hi, whole, range, sizeof(range));
		return prism_err_set(err, PRISM_EFORMAT, "%s:%d: '%s' must be %s in %s, not %.*g",
				     file, config_setting_source_line(s), full,
				     whole ? "a whole number" : "a number", range,
				     v == floor(v) && fabs(v) < 1e15 ? 15 : 6, v);
	}
	*out = v * scale;
	return 0;
}

int cfg_int_opt(const char *file, const config_t *cf, config_setting_t *g, const char *path,
		int def, int min, int max, int *out, struct prism_err *err)
{
	double v = 0;
	int rc;

	*out = def;
	if (!lookup(cf, g, path))
		return 0;
	if ((rc = cfg_range(file, cf, g, path, min, max, 1, 1, &v, err)))
		return rc;
	*out = (int)v;
	return 0;
}

int cfg_text(const char *file, const config_t *cf, config_setting_t *g, const char *path, char *out,
	     size_t n, struct prism_err *err)
{
	const config_setting_t *s = lookup(cf, g, path);
	const char *v;
	char full[128];

	cfg_full_name(g, path, full, sizeof(full));
	if (!s)
		return prism_err_set(err, PRISM_EFORMAT, "%s:%d: missing setting '%s'", file,
				     g ? config_setting_source_line(g) : 1, full);
	if (!(v = config_setting_get_string(s)))
		return prism_err_set(err, PRISM_EFORMAT, "%s:%d: '%s' must be a string", file,
				     config_setting_source_line(s), full);
	snprintf(out, n, "%s", v);
	return 0;
}
