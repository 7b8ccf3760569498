/* hw.c - hardware profiles from libconfig files. */
#include "hw.h"

#include <libconfig.h>
#include <string.h>

static const char *const dtype_names[HW_NDTYPES] = {"fp32", "tf32", "bf16", "fp16", "fp8"};

int hw_dtype_parse(const char *s)
{
	for (int i = 0; i < HW_NDTYPES; i++)
		if (strcmp(s, dtype_names[i]) == 0)
			return i;
	return -1;
}

const char *hw_dtype_name(int dtype)
{
	return dtype >= 0 && dtype < HW_NDTYPES ? dtype_names[dtype] : "?";
}

double hw_net_Bps_per_gpu(const struct hw_profile *hw)
{
	return hw->gpus_per_node > 0 ? hw->nics_per_node * hw->nic_Bps / hw->gpus_per_node : 0;
}

/* A positive number at path in group g (or the root): *out = value * scale. */
static int number(const char *file, const config_t *cf, config_setting_t *g,
		  const char *path, double scale, int allow_zero, double *out,
		  struct prism_err *err)
{
	const config_setting_t *s = g ? config_setting_lookup(g, path) : config_lookup(cf, path);
	const char *full = path;
	char buf[128];
	double v;

	if (g && config_setting_name(g)) {
		snprintf(buf, sizeof(buf), "%s.%s", config_setting_name(g), path);
		full = buf;
	}
	if (!s)
		return prism_err_set(err, PRISM_EFORMAT, "%s:%d: missing setting '%s'", file,
				     g ? config_setting_source_line(g) : 1, full);
	if (config_setting_type(s) == CONFIG_TYPE_INT)
		v = config_setting_get_int(s);
	else if (config_setting_type(s) == CONFIG_TYPE_INT64)
		v = (double)config_setting_get_int64(s);
	else if (config_setting_type(s) == CONFIG_TYPE_FLOAT)
		v = config_setting_get_float(s);
	else
		return prism_err_set(err, PRISM_EFORMAT, "%s:%d: '%s' must be a number", file,
				     config_setting_source_line(s), full);
	if (v < 0 || (!allow_zero && v == 0))
		return prism_err_set(err, PRISM_EFORMAT, "%s:%d: '%s' must be %s, not %g", file,
				     config_setting_source_line(s), full,
				     allow_zero ? "zero or positive" : "positive", v);
	*out = v * scale;
	return 0;
}

static int text(const char *file, const config_t *cf, config_setting_t *g,
		const char *path, char *out, size_t n, struct prism_err *err)
{
	const config_setting_t *s = g ? config_setting_lookup(g, path) : config_lookup(cf, path);
	const char *v;
	if (!s)
		return prism_err_set(err, PRISM_EFORMAT, "%s:%d: missing setting '%s'", file,
				     g ? config_setting_source_line(g) : 1, path);
	if (!(v = config_setting_get_string(s)))
		return prism_err_set(err, PRISM_EFORMAT, "%s:%d: '%s' must be a string", file,
				     config_setting_source_line(s), path);
	snprintf(out, n, "%s", v);
	return 0;
}

int hw_load(const char *path, struct hw_profile *hw, struct prism_err *err)
{
	config_t cf;
	config_setting_t *gpu, *node, *tf;
	double v;
	int rc = 0;

	memset(hw, 0, sizeof(*hw));
	config_init(&cf);
	if (!config_read_file(&cf, path)) {
		if (config_error_type(&cf) == CONFIG_ERR_FILE_IO)
			rc = prism_err_set(err, PRISM_EIO, "%s: cannot read the file", path);
		else
			rc = prism_err_set(err, PRISM_EFORMAT, "%s:%d: %s", path,
					   config_error_line(&cf), config_error_text(&cf));
		config_destroy(&cf);
		return rc;
	}
	gpu = config_lookup(&cf, "gpu");
	node = config_lookup(&cf, "node");
	if (!gpu || !node) {
		rc = prism_err_set(err, PRISM_EFORMAT, "%s:1: missing group '%s'", path,
				   gpu ? "node" : "gpu");
		goto out;
	}
	tf = config_setting_lookup(gpu, "peak_tflops");
	if (!tf) {
		rc = prism_err_set(err, PRISM_EFORMAT, "%s:%d: missing setting 'gpu.peak_tflops'",
				   path, config_setting_source_line(gpu));
		goto out;
	}
	if ((rc = text(path, &cf, NULL, "name", hw->name, sizeof(hw->name), err)) ||
	    (rc = text(path, &cf, gpu, "model", hw->gpu, sizeof(hw->gpu), err)))
		goto out;
	for (int d = 0; d < HW_NDTYPES; d++)
		if ((rc = number(path, &cf, tf, dtype_names[d], 1e12, 1, &hw->peak_flops[d], err)))
			goto out;
	if ((rc = number(path, &cf, gpu, "hbm_bandwidth_GBps", 1e9, 0, &hw->hbm_Bps, err)) ||
	    (rc = number(path, &cf, gpu, "hbm_capacity_GB", 1e9, 0, &hw->hbm_bytes, err)) ||
	    (rc = number(path, &cf, gpu, "nvlink_bandwidth_GBps", 1e9, 0, &hw->nvlink_Bps, err)) ||
	    (rc = number(path, &cf, node, "gpus", 1, 0, &v, err)))
		goto out;
	hw->gpus_per_node = (int)v;
	if ((rc = number(path, &cf, node, "nics", 1, 0, &v, err)))
		goto out;
	hw->nics_per_node = (int)v;
	if ((rc = number(path, &cf, node, "nic_bandwidth_Gbps", 1e9 / 8, 0, &hw->nic_Bps, err)) ||
	    (rc = number(path, &cf, node, "nvlink_latency_us", 1e-6, 1, &hw->nvlink_lat_s, err)) ||
	    (rc = number(path, &cf, node, "network_latency_us", 1e-6, 1, &hw->net_lat_s, err)) ||
	    (rc = number(path, &cf, gpu, "memory_reserve_GB", 1e9, 1, &hw->mem_reserve_bytes, err)))
		goto out;
out:
	config_destroy(&cf);
	return rc;
}
