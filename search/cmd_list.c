/* cmd_list.c - `prism list`: the models, hardware profiles and sweeps that ship. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "cli.h"
#include "configs.h"
#include "hw.h"
#include "llm.h"
#include "usage.h"

static const char help[] =
    "usage: prism list [models|hw|sweeps] [--paths] [--json]\n"
    "\n"
    "The configurations prism finds by name, one line each: models (for\n"
    "synth, whatif and sweeps), hardware profiles (--hw) and sweeps (prism\n"
    "search NAME).  Names are looked up in $PRISM_CONFIG_DIR, ./configs, the\n"
    "installed share/prism/ and the source tree's configs/, the first folder\n"
    "that has a name winning.  Without a kind, all three.\n"
    "\n"
    "options:\n"
    "      --paths     each name's file too\n"
    "      --json      one JSON object on stdout: each kind a list of objects\n"
    "                  (name, path and the figures of the line; null where a\n"
    "                  figure is not known, such as a profile's price)\n"
    "  -h, --help      this help\n";

static const char *const kinds[] = {"models", "hw", "sweeps"};

/* One line about the model in path. */
static void describe_model(const char *path, char *buf, size_t n)
{
	struct llm m;
	struct prism_err err;
	double p;

	prism_err_clear(&err);
	if (llm_load(path, &m, &err)) {
		snprintf(buf, n, "(unreadable: %.300s)", err.msg);
		return;
	}
	p = llm_params(&m);
	snprintf(buf, n, "%.*f%s parameters: %d layers, hidden %d, %d heads%s%s, ffn %d, seq %d",
		 p < 1e10 ? 1 : 0, p >= 1e9 ? p / 1e9 : p / 1e6, p >= 1e9 ? "B" : "M", m.layers,
		 m.hidden, m.heads, llm_kv_heads(&m) != m.heads ? " (grouped KV)" : "",
		 m.gated ? ", SwiGLU" : "", m.ffn, m.seq);
	if (m.experts > 0) {
		size_t k = strlen(buf);
		snprintf(buf + k, k < n ? n - k : 0, "; %d experts, top %d, %.1fB active",
			 m.experts, m.top_k, llm_active_params(&m) / 1e9);
	}
}

static void describe_hw(const char *path, char *buf, size_t n)
{
	struct hw_profile hw;
	struct prism_err err;
	int half;

	prism_err_clear(&err);
	if (hw_load(path, &hw, &err)) {
		snprintf(buf, n, "(unreadable: %.300s)", err.msg);
		return;
	}
	/* Half precision: bf16, or fp16 on GPUs without bf16 (V100). */
	half = hw.peak_flops[HW_BF16] > 0 ? HW_BF16 : HW_FP16;
	snprintf(buf, n,
		 "%s: %d x %s, %.0f GB at %.2f TB/s, %.0f TFLOP/s %s, NVLink %.0f GB/s, "
		 "%d x %.0f Gb/s network",
		 hw.name, hw.gpus_per_node, hw.gpu, hw.hbm_bytes / 1e9, hw.hbm_Bps / 1e12,
		 hw.peak_flops[half] / 1e12, hw_dtype_name(half), hw.nvlink_Bps / 1e9,
		 hw.nics_per_node, hw.nic_Bps * 8 / 1e9);
	/* The NVLink domain where it is not the node (NVL72), the mesh where
	 * the fabric is one (xGMI). */
	if (hw_domain(&hw) != hw.gpus_per_node || hw.mesh) {
		size_t l = strlen(buf);
		if (hw_domain(&hw) != hw.gpus_per_node)
			l += (size_t)snprintf(buf + l, l < n ? n - l : 0, ", NVLink domain %d GPUs",
					      hw_domain(&hw));
		if (hw.mesh && l < n)
			snprintf(buf + l, n - l, ", full mesh");
	}
}

/* A string setting of cf, or "?" (a sweep is described, not loaded: its
 * base may be a large trace). */
static const char *text_of(const config_t *cf, const char *name)
{
	const char *s = NULL;
	return config_lookup_string(cf, name, &s) == CONFIG_TRUE ? s : "?";
}

/* A sweep's 'hw': one name, or a list's joined by ", " into buf. */
static const char *hw_of(const config_t *cf, char *buf, size_t n)
{
	config_setting_t *h = config_lookup(cf, "hw");
	size_t o = 0;
	if (!h || !config_setting_is_aggregate(h))
		return text_of(cf, "hw");
	buf[0] = '\0';
	for (int i = 0; i < config_setting_length(h) && o < n; i++) {
		const char *v = config_setting_get_string_elem(h, i);
		o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? ", " : "", v ? v : "?");
	}
	return buf;
}

static void describe_sweep(const char *path, char *buf, size_t n)
{
	struct prism_err err;
	config_t cf;
	config_setting_t *g;
	int lo = 0, hi = 0, batch = 0;

	prism_err_clear(&err);
	if (cfg_read(&cf, path, &err)) {
		snprintf(buf, n, "(unreadable: %.300s)", err.msg);
		return;
	}
	if ((g = config_lookup(&cf, "gpus")) && config_setting_is_aggregate(g) &&
	    config_setting_length(g) > 0) {
		lo = config_setting_get_int_elem(g, 0);
		hi = config_setting_get_int_elem(g, config_setting_length(g) - 1);
	} else if (g) {
		lo = hi = config_setting_get_int(g);
	} else if (config_lookup_int(&cf, "gpu_budget", &hi) == CONFIG_TRUE) {
		lo = 1;
	}
	config_lookup_int(&cf, "global_batch", &batch);
	{
		char hws[256];
		snprintf(buf, n, "%s on %s, %d-%d GPUs, global batch %d",
			 config_lookup(&cf, "model") ? text_of(&cf, "model") : "a trace",
			 hw_of(&cf, hws, sizeof(hws)), lo, hi, batch);
	}
	config_destroy(&cf);
}

/* A number, or null where not known (v <= 0). */
static void json_num(const char *key, double v)
{
	if (v > 0)
		printf(",\"%s\":%.9g", key, v);
	else
		printf(",\"%s\":null", key);
}

/* The figures of one configuration as JSON members (after "name" and
 * "path"); an unreadable file has "error". */
static void json_entry(int kind, const char *path)
{
	struct prism_err err;
	prism_err_clear(&err);
	if (kind == 0) {
		struct llm m;
		if (llm_load(path, &m, &err))
			goto bad;
		printf(",\"parameters\":%.9g", llm_params(&m));
		json_num("active_parameters", m.experts > 0 ? llm_active_params(&m) : 0);
		printf(",\"layers\":%d,\"hidden\":%d,\"heads\":%d,\"kv_heads\":%d,"
		       "\"ffn\":%d,\"seq\":%d,\"vocab\":%d,\"experts\":%d,\"swiglu\":%s",
		       m.layers, m.hidden, m.heads, llm_kv_heads(&m), m.ffn, m.seq, m.vocab,
		       m.experts, m.gated ? "true" : "false");
	} else if (kind == 1) {
		struct hw_profile hw;
		if (hw_load(path, &hw, &err))
			goto bad;
		printf(",\"system\":");
		prism_fput_json_str(stdout, hw.name);
		printf(",\"gpu\":");
		prism_fput_json_str(stdout, hw.gpu);
		printf(",\"gpus_per_node\":%d,\"nvlink_domain\":%d,\"hbm_gb\":%.9g,"
		       "\"hbm_tbps\":%.9g,\"nvlink_gbps\":%.9g,\"nics\":%d,\"nic_gbps\":%.9g,"
		       "\"peak_tflops\":{",
		       hw.gpus_per_node, hw_domain(&hw), hw.hbm_bytes / 1e9, hw.hbm_Bps / 1e12,
		       hw.nvlink_Bps / 1e9, hw.nics_per_node, hw.nic_Bps * 8 / 1e9);
		/* A dtype without a tensor path: null. */
		for (int d = 0; d < HW_NDTYPES; d++)
			if (hw.peak_flops[d] > 0)
				printf("%s\"%s\":%.9g", d ? "," : "", hw_dtype_name(d),
				       hw.peak_flops[d] / 1e12);
			else
				printf("%s\"%s\":null", d ? "," : "", hw_dtype_name(d));
		printf("}");
		json_num("price_per_gpu_hour", hw.price_per_gpu_hour);
	} else {
		config_t cf;
		config_setting_t *h;
		int batch = 0;
		if (cfg_read(&cf, path, &err))
			goto bad;
		printf(",\"model\":");
		if (config_lookup(&cf, "model"))
			prism_fput_json_str(stdout, text_of(&cf, "model"));
		else
			printf("null");
		printf(",\"hw\":[");
		h = config_lookup(&cf, "hw");
		for (int i = 0;
		     h && i < (config_setting_is_aggregate(h) ? config_setting_length(h) : 1);
		     i++) {
			const char *v = config_setting_is_aggregate(h)
					    ? config_setting_get_string_elem(h, i)
					    : config_setting_get_string(h);
			printf("%s", i ? "," : "");
			if (v)
				prism_fput_json_str(stdout, v);
			else
				printf("null");
		}
		printf("]");
		json_num("global_batch",
			 config_lookup_int(&cf, "global_batch", &batch) == CONFIG_TRUE ? batch : 0);
		config_destroy(&cf);
	}
	return;
bad:
	printf(",\"error\":");
	prism_fput_json_str(stdout, err.msg);
}

/* Kinds k (mask: bit k) as one JSON object. */
static int list_json(const struct configs_dirs *d, int mask)
{
	const char *sep = "";
	printf("{");
	for (int k = 0; k < 3; k++) {
		struct configs_entry *e;
		long n;
		if (!(mask & (1 << k)))
			continue;
		if ((n = configs_list(d, kinds[k], &e)) < 0) {
			fprintf(stderr, "prism list: out of memory\n");
			return 1;
		}
		printf("%s\"%s\":[", sep, kinds[k]);
		for (long i = 0; i < n; i++) {
			printf("%s\n{\"name\":", i ? "," : "");
			prism_fput_json_str(stdout, e[i].name);
			printf(",\"path\":");
			prism_fput_json_str(stdout, e[i].path);
			json_entry(k, e[i].path);
			printf("}");
		}
		printf("]");
		sep = ",";
		free(e);
	}
	printf("}\n");
	return 0;
}

static int list_kind(const struct configs_dirs *d, int kind, int paths, int heading)
{
	struct configs_entry *e;
	long n = configs_list(d, kinds[kind], &e);

	if (n < 0) {
		fprintf(stderr, "prism list: out of memory\n");
		return 1;
	}
	if (heading)
		printf("%s%s:\n", kind ? "\n" : "", kinds[kind]);
	if (n == 0)
		printf("  (none found)\n");
	for (long i = 0; i < n; i++) {
		char line[512];
		if (kind == 0)
			describe_model(e[i].path, line, sizeof(line));
		else if (kind == 1)
			describe_hw(e[i].path, line, sizeof(line));
		else
			describe_sweep(e[i].path, line, sizeof(line));
		printf("%-16s %s\n", e[i].name, line);
		if (paths)
			printf("%-16s   %s\n", "", e[i].path);
	}
	free(e);
	return 0;
}

int cmd_list(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"paths", no_argument, NULL, 'p'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct configs_dirs d;
	struct cli_parse args;
	struct prism_err err;
	int c, paths = 0, rc = 0, json = 0;

	prism_err_clear(&err);
	cli_parse_init(&args, "list", help, "h", longopts, NULL, NULL, NULL);
	while ((c = cli_next_option(&args, argc, argv, &err)) >= 0) {
		switch (c) {
		case 'p':
			paths = 1;
			break;
		case 'j':
			json = 1;
			break;
		}
	}
	if (c == CLI_PARSE_EXIT)
		return args.status;
	if (argc - optind > 1) {
		fprintf(stderr, "prism list: give one of models, hw, sweeps, or none (prism list "
				"--help)\n");
		return EXIT_USAGE;
	}
	configs_dirs_init(&d);
	if (optind == argc && json)
		return list_json(&d, 7);
	if (optind == argc) {
		for (int k = 0; k < 3 && !rc; k++)
			rc = list_kind(&d, k, paths, 1);
		return rc;
	}
	{
		/* The kinds, and the singular names people type for them. */
		static const char *const also[] = {"models", "hw",	 "sweeps",
						   "model",  "hardware", "sweep"};
		int k;
		for (k = 0; k < 6; k++)
			if (strcmp(argv[optind], also[k]) == 0)
				return json ? list_json(&d, 1 << (k % 3))
					    : list_kind(&d, k % 3, paths, 0);
		k = usage_closest(argv[optind], also, 6);
		fprintf(stderr, "prism list: unknown kind '%s'", argv[optind]);
		if (k >= 0)
			fprintf(stderr, "; did you mean %s?", kinds[k % 3]);
		fprintf(stderr, " (models, hw or sweeps)\n");
	}
	return EXIT_USAGE;
}
