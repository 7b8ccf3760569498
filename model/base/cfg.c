/* cfg.c - libconfig helpers with precise errors. */
#include "cfg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <math.h>
#include <stdio.h>

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
	config_init(cf);
	rc = config_read_string(cf, text);
	free(text);
	if (rc)
		return 0;
	rc = prism_err_set(err, PRISM_EFORMAT, "%s:%d: %s", path, config_error_line(cf),
			   config_error_text(cf));
	config_destroy(cf);
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
