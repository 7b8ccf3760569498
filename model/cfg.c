/* cfg.c - libconfig helpers with precise errors. */
#include "cfg.h"

#include <math.h>
#include <stdio.h>

int cfg_read(config_t *cf, const char *path, struct prism_err *err)
{
	int rc;
	config_init(cf);
	if (config_read_file(cf, path))
		return 0;
	if (config_error_type(cf) == CONFIG_ERR_FILE_IO)
		rc = prism_err_set(err, PRISM_EIO, "%s: cannot read the file", path);
	else
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

int cfg_number(const char *file, const config_t *cf, config_setting_t *g, const char *path,
	       double scale, int allow_zero, double *out, struct prism_err *err)
{
	const config_setting_t *s = lookup(cf, g, path);
	char full[128];
	double v;
	int rc;

	cfg_full_name(g, path, full, sizeof(full));
	if (!s)
		return prism_err_set(err, PRISM_EFORMAT, "%s:%d: missing setting '%s'", file,
				     g ? config_setting_source_line(g) : 1, full);
	if ((rc = value(file, s, full, &v, err)))
		return rc;
	if (v < 0 || (!allow_zero && v == 0))
		return prism_err_set(err, PRISM_EFORMAT, "%s:%d: '%s' must be %s, not %g", file,
				     config_setting_source_line(s), full,
				     allow_zero ? "zero or positive" : "positive", v);
	*out = v * scale;
	return 0;
}

int cfg_int_opt(const char *file, const config_t *cf, config_setting_t *g, const char *path,
		int def, int min, int *out, struct prism_err *err)
{
	const config_setting_t *s = lookup(cf, g, path);
	char full[128];
	double v;
	int rc;

	*out = def;
	if (!s)
		return 0;
	cfg_full_name(g, path, full, sizeof(full));
	if ((rc = value(file, s, full, &v, err)))
		return rc;
	if (v != floor(v) || v < min || v > 1e9)
		return prism_err_set(err, PRISM_EFORMAT, "%s:%d: '%s' must be a whole number >= %d, "
							 "not %g",
				     file, config_setting_source_line(s), full, min, v);
	*out = (int)v;
	return 0;
}

int cfg_text(const char *file, const config_t *cf, config_setting_t *g, const char *path,
	     char *out, size_t n, struct prism_err *err)
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
