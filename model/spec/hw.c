/* hw.c - hardware profiles from libconfig files. */
#include "hw.h"

#include <stdio.h>
#include <string.h>

#include "cfg.h"

static const char *const dtype_names[HW_NDTYPES] = {"fp32", "tf32", "bf16", "fp16", "fp8", "fp4"};

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

int hw_gemm_dtype(int key)
{
	return key == HW_GEMM_FP8_BLOCK ? HW_FP8 : key;
}

const struct hw_gemm *hw_gemm_of(const struct hw_profile *hw, int key)
{
	if (key == HW_GEMM_FP8_BLOCK && !(hw->k.gemm[key].flops > 0))
		key = HW_FP8;
	return &hw->k.gemm[key];
}

double hw_net_Bps_per_gpu(const struct hw_profile *hw)
{
	return hw->gpus_per_node > 0 ? hw->nics_per_node * hw->nic_Bps / hw->gpus_per_node : 0;
}

static const char *const host_names[HW_HOST_NKINDS] = {"none",	"pcie3", "pcie4",
						       "pcie5", "pcie6", "nvlink-c2c"};

const char *hw_host_link_name(int kind)
{
	return kind >= 0 && kind < HW_HOST_NKINDS ? host_names[kind] : "?";
}

int hw_host_link_parse(const char *s)
{
	for (int k = 1; k < HW_HOST_NKINDS; k++)
		if (strcmp(s, host_names[k]) == 0)
			return k;
	return -1;
}

int hw_domain(const struct hw_profile *hw)
{
	return hw->nvlink_domain > 0 ? hw->nvlink_domain : hw->gpus_per_node;
}

int hw_group_fits_domain(const struct hw_profile *hw, int n)
{
	int d = hw_domain(hw);
	return n >= 1 && n <= d &&
	       (d % n == 0 ||
		(d > hw->gpus_per_node && hw->gpus_per_node > 0 && n % hw->gpus_per_node == 0));
}

double hw_clock(const struct hw_profile *hw)
{
	return hw->clock > 0 ? hw->clock : 1;
}

double hw_sustained(const struct hw_profile *hw)
{
	return hw->sustained > 0 ? hw->sustained : 1;
}

/* The dtype whose balance terms a step of dtype takes: its own where
 * stated, else bf16's. */
static int power_dtype(const struct hw_profile *hw, int dtype)
{
	if (dtype < 0 || dtype >= HW_NDTYPES || !(hw->power.gemm_w[dtype] > 0))
		return HW_BF16;
	return dtype;
}

/* The pieces of hw's power balance for a step whose GEMMs run in dtype,
 * the board held at limit_w (0: rated_w), both solvers read: the compute
 * kernels' burst draw P and its slope k (dtype's terms, power_dtype), the
 * limit L, the cap's fraction f of the rating (memory-bound and waiting
 * kernels draw mem_w f and wait_w f), a stream's rate at the rating r_s.
 * (mem_w and wait_w as stated: each solver scales them by f.) */
struct balance {
	double P, k, L, f, rs, mem_w, wait_w, rated_w;
};

/* 0 where hw states no balance for a step of dtype (the solvers' 1). */
static int balance_of(const struct hw_profile *hw, int dtype, double limit_w, struct balance *b)
{
	const struct hw_power *p = &hw->power;
	int d = power_dtype(hw, dtype);

	b->P = p->gemm_w[d], b->k = p->gemm_k_w[d], b->rated_w = hw->rated_w;
	if (!hw_has_balance(hw) || !(b->P > 0) || !(b->k > 0) || !(b->rated_w > 0))
		return 0;
	b->L = limit_w > 0 ? limit_w : b->rated_w;
	b->f = b->L < b->rated_w ? b->L / b->rated_w : 1;
	b->mem_w = p->mem_w, b->wait_w = p->wait_w;
	b->rs = 1 - (b->P - b->rated_w) / b->k;
	return 1;
}

/* r, never under HW_MIN_POWER_FRAC of a stream's rate (a balance that
 * leaves the compute kernels nothing: the least rate a cap may set). */
static double balance_floor(const struct balance *b, double r)
{
	return r > b->rs * HW_MIN_POWER_FRAC ? r : b->rs * HW_MIN_POWER_FRAC;
}

double hw_power_rate(const struct hw_profile *hw, int dtype, double phi_c, double phi_w,
		     double limit_w)
{
	struct balance b;
	double g;

	if (!(phi_c > 0) || !balance_of(hw, dtype, limit_w, &b))
		return 1;
	if (phi_c > 1)
		phi_c = 1;
	if (phi_w > 1 - phi_c)
		phi_w = 1 - phi_c;
	g = (b.L - (1 - phi_c - phi_w) * b.mem_w * b.f - phi_w * b.wait_w * b.f) / phi_c;
	if (g >= b.P)
		return 1;
	return balance_floor(&b, g >= b.rated_w ? 1 - (b.P - g) / b.k : b.rs * g / b.rated_w);
}

double hw_mix_rate(const struct hw_profile *hw, int dtype, double t_c, double t_m, double t_w,
		   double limit_w)
{
	struct balance b;
	double A, r, d;

	if (!(t_c > 0) || !balance_of(hw, dtype, limit_w, &b))
		return 1;
	A = (t_m > 0 ? t_m : 0) * (b.L - b.mem_w * b.f) +
	    (t_w > 0 ? t_w : 0) * (b.L - b.wait_w * b.f);
	if (t_c * (b.P - b.L) <= A) /* F(1) <= 0: the burst within the limit */
		return 1;
	if (!(b.rs > 0)) /* (compute that draws the rating at no rate: nothing to solve) */
		return 1;
	if (t_c * (b.rated_w - b.L) / b.rs <= A) { /* F(r_s) <= 0: the root above r_s */
		d = t_c * b.k - A;
		r = d > 0 ? t_c * (b.k + b.L - b.P) / d : 1;
		return r < 1 ? r : 1;
	}
	/* below a stream's rate: the rate in proportion to the power */
	d = t_c * b.rated_w / b.rs - A;
	return balance_floor(&b, d > 0 ? t_c * b.L / d : 0);
}

double hw_mix_clock(const struct hw_profile *hw, int dtype, double power_w, double t_c, double t_m,
		    double t_w)
{
	double c0 = hw_run_clock(hw, dtype, power_w), ref, r, c;
	if (!hw_has_balance(hw) || !(t_c > 0))
		return c0;
	/* (a cap at or above the rating is none, as hw_run_clock takes it) */
	if (!(power_w > 0 && power_w < hw->rated_w))
		power_w = 0;
	ref = hw_power_rate(hw, dtype, HW_STEP_COMPUTE_SHARE, 0, power_w);
	r = hw_mix_rate(hw, dtype, t_c * ref, t_m, t_w, power_w);
	if (r == ref)
		return c0;
	c = c0 * r / ref;
	return c < 1 ? c : 1;
}

double hw_stream(const struct hw_profile *hw, int dtype)
{
	if (dtype == HW_FP16)
		dtype = HW_BF16;
	if (dtype >= 0 && dtype < HW_NDTYPES && hw->stream[dtype] > 0)
		return hw->stream[dtype];
	if (hw_has_balance(hw) && dtype >= 0 && dtype < HW_NDTYPES && hw->power.gemm_w[dtype] > 0)
		return hw_power_rate(hw, dtype, 1, 0, 0);
	return hw_sustained(hw);
}

double hw_step_clock(const struct hw_profile *hw, int dtype)
{
	if (dtype == HW_FP16)
		dtype = HW_BF16;
	if (dtype < 0 || dtype >= HW_NDTYPES)
		return hw_sustained(hw);
	if (hw->sustained_dt[dtype] > 0)
		return hw->sustained_dt[dtype];
	if (dtype != HW_BF16 && hw_has_balance(hw) && hw->power.gemm_w[dtype] > 0)
		return hw_power_rate(hw, dtype, HW_STEP_COMPUTE_SHARE, 0, 0);
	if (dtype != HW_BF16 && hw->stream[dtype] > 0)
		return 1 - (1 - hw->stream[dtype]) * HW_STEP_COMPUTE_SHARE;
	return hw_sustained(hw);
}

/* Clock c of a step whose GEMMs run in dtype under a cap of power_w watts
 * (0, or a profile without a rating: c): by the balance at the reference
 * step where the profile states one, else in proportion to the power. */
static double capped(const struct hw_profile *hw, int dtype, double c, double power_w)
{
	if (!(power_w > 0 && hw->rated_w > 0 && power_w < hw->rated_w))
		return c;
	if (hw_has_balance(hw))
		return c * hw_power_rate(hw, dtype, HW_STEP_COMPUTE_SHARE, 0, power_w) /
		       hw_power_rate(hw, dtype, HW_STEP_COMPUTE_SHARE, 0, 0);
	return c * power_w / hw->rated_w;
}

/* hw itself where its clock is c, else *buf, a copy of hw at c. */
static const struct hw_profile *at_clock(const struct hw_profile *hw, double c,
					 struct hw_profile *buf)
{
	if (hw_clock(hw) == c)
		return hw;
	*buf = *hw;
	buf->clock = c;
	return buf;
}

double hw_run_clock(const struct hw_profile *hw, int dtype, double power_w)
{
	double s = hw_sustained(hw), d = hw_step_clock(hw, dtype), c = hw_clock(hw);
	if (d != s) {
		c = c / s * d;
		if (c > 1)
			c = 1;
	}
	return capped(hw, dtype, c, power_w);
}

const struct hw_profile *hw_at_clock(const struct hw_profile *hw, double c, struct hw_profile *buf)
{
	return at_clock(hw, c, buf);
}

const struct hw_profile *hw_at_run(const struct hw_profile *hw, int dtype, double power_w,
				   struct hw_profile *buf)
{
	return at_clock(hw, hw_run_clock(hw, dtype, power_w), buf);
}

double hw_capped_clock(const struct hw_profile *hw, double power_w)
{
	return capped(hw, HW_BF16, hw_clock(hw), power_w);
}

const struct hw_profile *hw_at_power(const struct hw_profile *hw, double power_w,
				     struct hw_profile *buf)
{
	return at_clock(hw, hw_capped_clock(hw, power_w), buf);
}

static const char *const mem_names[HW_MEM_NKINDS] = {"elementwise", "norm", "reduction"};
static const char *const mem_impl_names[HW_MEM_NIMPLS] = {
    "any", "triton", "aten", "compiled", "multi_tensor", "multi_tensor_fp32"};

const char *hw_mem_impl_name(int impl)
{
	return impl >= 0 && impl < HW_MEM_NIMPLS ? mem_impl_names[impl] : "?";
}

/* An optional number at sub.name under group k (absent: *out unchanged);
 * errors name it in full ('kernels.gemm.bf16.tflops'). */
static int opt(const char *path, const config_t *cf, config_setting_t *k, const char *sub,
	       const char *name, double lo, double hi, double scale, double *out,
	       struct prism_err *err)
{
	char full[96];
	snprintf(full, sizeof(full), "%s.%s", sub, name);
	if (!config_setting_lookup(k, full))
		return 0;
	return cfg_range(path, cf, k, full, lo, hi, 0, scale, out, err);
}

/* An optional setting of the kernels group k that names one of the n
 * choices c: *out its index (the enum's order), untouched where absent. */
static int kernels_choice(const char *path, const config_t *cf, config_setting_t *k,
			  const char *name, const char *const *c, int n, int *out,
			  struct prism_err *err)
{
	char t[16], list[64] = "";
	int rc;

	if (!config_setting_lookup(k, name))
		return 0;
	if ((rc = cfg_text(path, cf, k, name, t, sizeof(t), err)))
		return rc;
	for (int i = 0; i < n; i++)
		if (!strcmp(t, c[i])) {
			*out = i;
			return 0;
		}
	for (int i = 0; i < n; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s\"%s\"",
			 i == 0	      ? ""
			 : i == n - 1 ? " or "
				      : ", ",
			 c[i]);
	return prism_err_set(err, PRISM_EFORMAT, "%s:%d: 'kernels.%s' must be %s, not \"%s\"", path,
			     config_setting_source_line(config_setting_lookup(k, name)), name, list,
			     t);
}

/*
 * Defaults where a profile sets nothing, each derived, not fitted to the
 * GPU it is used for (docs/MODEL.md, "Kernel efficiency"):
 * - GEMM achievable peak 0.80 of the datasheet: the median of the MAMF
 *   rows of ../shared/kernels/gemm.csv for NVIDIA GPUs in BF16 (A100 SXM
 *   86.9 %, A100 PCIe 81.1 %, H100 SXM 80.3 %, GH200 83.8 %, B200 77.6 %,
 *   B300 78.6 %, GB200 72.9 %); priors, fitted to nothing: 1 us per tile
 *   (a prologue and an epilogue of a few hundred cycles at 1.4-2 GHz), 3 us
 *   per kernel (the flat model's), smaller tiles at 0.85, 0.70 and 0.50 of
 *   the 128x256 tile's throughput (a 128x128 tile reloads each operand
 *   twice as often per FLOP, 64x64 four times), 0.9 of HBM bandwidth;
 * - attention: forward at 0.60 and backward at 0.45 of the datasheet peak,
 *   the middle of the FlashAttention-2/3 and cuDNN rows of attention.csv;
 * - memory-bound: 0.85 of HBM bandwidth for elementwise kernels and
 *   copies, 0.70 for normalisations, 0.60 for reductions and softmax
 *   (the large-size ends of memory_bound.csv's curves), 2 us each.
 */
#define HW_K_GEMM_PEAK_FRAC  0.80
#define HW_K_GEMM_TILE_S     1e-6
#define HW_K_GEMM_OVERHEAD_S 3e-6
#define HW_K_GEMM_MEM_EFF    0.9
#define HW_K_ATTN_FWD_FRAC   0.60
#define HW_K_ATTN_BWD_FRAC   0.45
#define HW_K_ATTN_TILE_S     2e-6
#define HW_K_ATTN_OVERHEAD_S 5e-6

static const double tile_eff_default[3] = {0.85, 0.70, 0.50};

void hw_kernels_default(struct hw_profile *hw)
{
	struct hw_kernels *k = &hw->k;
	static const double mem_eff[HW_MEM_NKINDS] = {0.85, 0.70, 0.60};

	for (int d = 0; d < HW_NDTYPES; d++) {
		struct hw_gemm *g = &k->gemm[d];
		struct hw_attn *a = &k->attn[d];
		g->flops = HW_K_GEMM_PEAK_FRAC * hw->peak_flops[d];
		g->tile_s = HW_K_GEMM_TILE_S;
		g->overhead_s = HW_K_GEMM_OVERHEAD_S;
		memcpy(g->tile_eff, tile_eff_default, sizeof(g->tile_eff));
		g->mem_eff = HW_K_GEMM_MEM_EFF;
		g->out_eff = 0;
		k->gemm_isolated_s[d] = 0;
		a->flops[0] = HW_K_ATTN_FWD_FRAC * hw->peak_flops[d];
		a->flops[1] = HW_K_ATTN_BWD_FRAC * hw->peak_flops[d];
		a->tile_s[0] = a->tile_s[1] = HW_K_ATTN_TILE_S;
		a->overhead_s = HW_K_ATTN_OVERHEAD_S;
		a->d64 = HW_ATTN_D64_PRIOR;
		a->d256 = HW_ATTN_D256_PRIOR;
		a->bwd_skip = 0;
	}
	/* fp8's blockwise group: not stated (hw_gemm_of reads fp8's) */
	memset(&k->gemm[HW_GEMM_FP8_BLOCK], 0, sizeof(k->gemm[HW_GEMM_FP8_BLOCK]));
	k->gemm_isolated_s[HW_GEMM_FP8_BLOCK] = 0;
	for (int m = 0; m < HW_MEM_NKINDS; m++) {
		k->mem_eff[m] = mem_eff[m];
		k->mem_overhead_s[m] = 2e-6;
		k->mem_events_s[m] = 0;
		k->mem_host_s[m] = 0;
		k->mem_warp_Bps[m] = 0;
		for (int i = 0; i < HW_MEM_NIMPLS; i++)
			k->mem_impl_eff[m][i] = 0;
	}
}

void hw_kernels_complete(struct hw_profile *hw, const int gemm_given[HW_NDTYPES],
			 const int attn_given[HW_NDTYPES])
{
	struct hw_kernels *k = &hw->k;
	double bf = hw->peak_flops[HW_BF16];

	for (int d = 0; d < HW_NDTYPES; d++) {
		double r = bf > 0 ? hw->peak_flops[d] / bf : 0;
		if (d == HW_BF16)
			continue;
		if (!gemm_given[d] && gemm_given[HW_BF16]) {
			k->gemm[d] = k->gemm[HW_BF16];
			k->gemm[d].flops = k->gemm[HW_BF16].flops * r;
			k->gemm_isolated_s[d] = k->gemm_isolated_s[HW_BF16];
		}
		if (!attn_given[d] && attn_given[HW_BF16]) {
			k->attn[d] = k->attn[HW_BF16];
			k->attn[d].flops[0] = k->attn[HW_BF16].flops[0] * r;
			k->attn[d].flops[1] = k->attn[HW_BF16].flops[1] * r;
		}
	}
}

/* One GEMM group of kernels.gemm (x, named `name`: a dtype, or
 * fp8_blockwise) into *ge and its isolated_us into *iso, each setting
 * where stated; peaks up to pk TFLOP/s (the datasheet's). */
static int load_gemm(const char *path, const config_t *cf, config_setting_t *k, config_setting_t *x,
		     const char *name, double pk, struct hw_gemm *ge, double *iso,
		     struct prism_err *err)
{
	config_setting_t *te = config_setting_lookup(x, "tile_eff");
	char sub[48];
	int rc;
	snprintf(sub, sizeof(sub), "gemm.%s", name);
	if ((rc = opt(path, cf, k, sub, "tflops", 0.001, pk > 0 ? pk : 1e6, 1e12, &ge->flops,
		      err)) ||
	    (rc = opt(path, cf, k, sub, "tile_us", 0, 1000, 1e-6, &ge->tile_s, err)) ||
	    (rc = opt(path, cf, k, sub, "overhead_us", 0, 1000, 1e-6, &ge->overhead_s, err)) ||
	    (rc = opt(path, cf, k, sub, "isolated_us", 0, 1000, 1e-6, iso, err)) ||
	    (rc = opt(path, cf, k, sub, "mem_eff", 0.01, 1, 1, &ge->mem_eff, err)) ||
	    (rc = opt(path, cf, k, sub, "out_eff", 0.01, 1, 1, &ge->out_eff, err)))
		return rc;
	if (te && (config_setting_length(te) != 3 || !config_setting_is_aggregate(te)))
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: 'kernels.gemm.%s.tile_eff' must list 3 "
				     "numbers in 0.01..1",
				     path, config_setting_source_line(te), name);
	for (int i = 0; te && i < 3; i++) {
		config_setting_t *e = config_setting_get_elem(te, (unsigned)i);
		double f = config_setting_type(e) == CONFIG_TYPE_INT ? config_setting_get_int(e)
								     : config_setting_get_float(e);
		if (!(f >= 0.01 && f <= 1))
			return prism_err_set(
			    err, PRISM_EFORMAT,
			    "%s:%d: 'kernels.gemm.%s.tile_eff' must list 3 numbers "
			    "in 0.01..1",
			    path, config_setting_source_line(te), name);
		ge->tile_eff[i] = f;
	}
	return 0;
}

/* The optional `kernels` group (kperf.h): per-GPU kernel efficiency.
 * Ranges: peaks up to the datasheet's (a fitted achievable peak above it
 * is an error in the fit), fractions 0..1 (head-dim factors up to 2),
 * times up to 1 ms. */
static int load_kernels(const char *path, const config_t *cf, struct hw_profile *hw,
			struct prism_err *err)
{
	config_setting_t *k = config_lookup(cf, "kernels"), *g, *a, *m;
	int gemm_given[HW_NDTYPES] = {0}, attn_given[HW_NDTYPES] = {0}, rc = 0;
	double v;

	if (!k) {
		hw_kernels_complete(hw, gemm_given, attn_given);
		return 0;
	}
	if (config_setting_lookup(k, "sms")) {
		if ((rc = cfg_range(path, cf, k, "sms", 1, 4096, 1, 1, &v, err)))
			return rc;
		hw->k.sms = (int)v;
	}
	if (config_setting_lookup(k, "l2_caches")) {
		if ((rc = cfg_range(path, cf, k, "l2_caches", 1, 64, 1, 1, &v, err)))
			return rc;
		hw->k.l2s = (int)v;
	}
	static const char *const tiles[] = {"sm80", "sm90", "cdna"}; /* enum hw_tiles */
	static const char *const scheds[] = {"waves", "stream-k"};   /* enum hw_sched */
	if ((rc = kernels_choice(path, cf, k, "gemm_tiles", tiles, 3, &hw->k.tiles, err)) ||
	    (rc = kernels_choice(path, cf, k, "gemm_schedule", scheds, 2, &hw->k.sched, err)))
		return rc;
	g = config_setting_lookup(k, "gemm");
	a = config_setting_lookup(k, "attention");
	m = config_setting_lookup(k, "memory");
	for (int d = 0; d < HW_NDTYPES; d++) {
		config_setting_t *x = g ? config_setting_lookup(g, dtype_names[d]) : NULL;
		config_setting_t *y = a ? config_setting_lookup(a, dtype_names[d]) : NULL;
		struct hw_gemm *ge = &hw->k.gemm[d];
		struct hw_attn *at = &hw->k.attn[d];
		double pk = hw->peak_flops[d] / 1e12;
		char sub[48], full[96];
		if (x) {
			gemm_given[d] = 1;
			if ((rc = load_gemm(path, cf, k, x, dtype_names[d], pk, ge,
					    &hw->k.gemm_isolated_s[d], err)))
				return rc;
		}
		if (y) {
			attn_given[d] = 1;
			snprintf(sub, sizeof(sub), "attention.%s", dtype_names[d]);
			if ((rc = opt(path, cf, k, sub, "fwd_tflops", 0.001, pk > 0 ? pk : 1e6,
				      1e12, &at->flops[0], err)) ||
			    (rc = opt(path, cf, k, sub, "bwd_tflops", 0.001, pk > 0 ? pk : 1e6,
				      1e12, &at->flops[1], err)) ||
			    (rc = opt(path, cf, k, sub, "fwd_tile_us", 0, 1000, 1e-6,
				      &at->tile_s[0], err)) ||
			    (rc = opt(path, cf, k, sub, "bwd_tile_us", 0, 1000, 1e-6,
				      &at->tile_s[1], err)) ||
			    (rc = opt(path, cf, k, sub, "overhead_us", 0, 1000, 1e-6,
				      &at->overhead_s, err)) ||
			    (rc = opt(path, cf, k, sub, "d64", 0.01, 2, 1, &at->d64, err)) ||
			    (rc = opt(path, cf, k, sub, "d256", 0.01, 2, 1, &at->d256, err)))
				return rc;
			/* a whole number of blocks (hw.h) */
			snprintf(full, sizeof(full), "%s.bwd_skip_blocks", sub);
			if (config_setting_lookup(k, full) &&
			    (rc = cfg_range(path, cf, k, full, 1, 1e6, 1, 1, &at->bwd_skip, err)))
				return rc;
		}
	}
	for (int i = 0; m && i < HW_MEM_NKINDS; i++) {
		char sub[48];
		snprintf(sub, sizeof(sub), "memory.%s", mem_names[i]);
		if ((rc = opt(path, cf, k, sub, "eff", 0.01, 1, 1, &hw->k.mem_eff[i], err)) ||
		    (rc = opt(path, cf, k, sub, "overhead_us", 0, 1000, 1e-6,
			      &hw->k.mem_overhead_s[i], err)) ||
		    (rc = opt(path, cf, k, sub, "events_us", 0, 1000, 1e-6, &hw->k.mem_events_s[i],
			      err)) ||
		    (rc = opt(path, cf, k, sub, "host_us", 0, 1000, 1e-6, &hw->k.mem_host_s[i],
			      err)) ||
		    (rc = opt(path, cf, k, sub, "warp_GBps", 0, 1000, 1e9, &hw->k.mem_warp_Bps[i],
			      err)))
			return rc;
		/* an implementation's own bandwidth: triton_eff, aten_eff, ... */
		for (int j = 1; j < HW_MEM_NIMPLS; j++) {
			char key[32];
			snprintf(key, sizeof(key), "%s_eff", mem_impl_names[j]);
			if ((rc = opt(path, cf, k, sub, key, 0.01, 1, 1, &hw->k.mem_impl_eff[i][j],
				      err)))
				return rc;
		}
	}
	hw_kernels_complete(hw, gemm_given, attn_given);
	/* fp8's blockwise group (hw.h): fp8's, with what it states. */
	{
		config_setting_t *x = g ? config_setting_lookup(g, "fp8_blockwise") : NULL;
		if (x && !(hw->peak_flops[HW_FP8] > 0))
			return prism_err_set(err, PRISM_EFORMAT,
					     "%s:%d: 'kernels.gemm.fp8_blockwise' on a GPU "
					     "without an fp8 peak",
					     path, config_setting_source_line(x));
		if (x) {
			hw->k.gemm[HW_GEMM_FP8_BLOCK] = hw->k.gemm[HW_FP8];
			hw->k.gemm_isolated_s[HW_GEMM_FP8_BLOCK] = hw->k.gemm_isolated_s[HW_FP8];
			if ((rc = load_gemm(path, cf, k, x, "fp8_blockwise",
					    hw->peak_flops[HW_FP8] / 1e12,
					    &hw->k.gemm[HW_GEMM_FP8_BLOCK],
					    &hw->k.gemm_isolated_s[HW_GEMM_FP8_BLOCK], err)))
				return rc;
		}
	}
	return 0;
}

/* gpu.stream = { bf16 = 0.87; fp8 = 0.92; } (and gpu.sustained's group
 * form): optional, each entry a dtype and a fraction in 0.25..1 (hw.h),
 * into by[dtype]. */
static int read_by_dtype(const char *path, const config_t *cf, config_setting_t *gpu,
			 const char *key, double by[HW_NDTYPES], struct prism_err *err)
{
	config_setting_t *st = config_setting_lookup(gpu, key);
	int rc;

	if (!st)
		return 0;
	if (!config_setting_is_group(st))
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: 'gpu.%s' must be a group of dtype = fraction "
				     "(e.g. { bf16 = 0.87; })",
				     path, config_setting_source_line(st), key);
	for (int i = 0; i < config_setting_length(st); i++) {
		config_setting_t *e = config_setting_get_elem(st, (unsigned)i);
		int d = hw_dtype_parse(config_setting_name(e));
		if (d < 0)
			return prism_err_set(err, PRISM_EFORMAT,
					     "%s:%d: 'gpu.%s.%s' is not a dtype (fp32, tf32, "
					     "bf16, fp16, fp8, fp4)",
					     path, config_setting_source_line(e), key,
					     config_setting_name(e));
		if ((rc = cfg_range(path, cf, st, config_setting_name(e), 0.25, 1, 0, 1, &by[d],
				    err)))
			return rc;
	}
	return 0;
}

/* gpu.sustained: a number, bf16's step clock (and every dtype's without
 * one of its own), or a group of dtype = fraction; fp16's entry is
 * refused, fp16 reading bf16's (hw_step_clock). */
static int read_sustained(const char *path, const config_t *cf, config_setting_t *gpu,
			  struct hw_profile *hw, struct prism_err *err)
{
	config_setting_t *st = config_setting_lookup(gpu, "sustained");
	int rc;

	hw->sustained = 1;
	if (!st)
		return 0;
	if (!config_setting_is_group(st))
		return cfg_range(path, cf, gpu, "sustained", 0.25, 1, 0, 1, &hw->sustained, err);
	if ((rc = read_by_dtype(path, cf, gpu, "sustained", hw->sustained_dt, err)))
		return rc;
	if (hw->sustained_dt[HW_FP16] > 0)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: 'gpu.sustained.fp16': fp16's step clock is bf16's "
				     "(the same tensor-core rate); state bf16",
				     path,
				     config_setting_source_line(config_setting_lookup(st, "fp16")));
	if (hw->sustained_dt[HW_BF16] > 0)
		hw->sustained = hw->sustained_dt[HW_BF16];
	return 0;
}

/* gpu.power (hw.h struct hw_power): optional; where stated, memory_w,
 * wait_w and gemm = { dtype = { w = ..; k_w = ..; }; } with bf16's among
 * them (fp16 refused: bf16's), and a rating to balance. */
static int read_power(const char *path, const config_t *cf, config_setting_t *gpu,
		      struct hw_profile *hw, struct prism_err *err)
{
	config_setting_t *pw = config_setting_lookup(gpu, "power"), *g;
	int rc;

	if (!pw)
		return 0;
	if (!config_setting_is_group(pw) || !(g = config_setting_lookup(pw, "gemm")) ||
	    !config_setting_is_group(g))
		return prism_err_set(
		    err, PRISM_EFORMAT,
		    "%s:%d: 'gpu.power' must be a group: gemm = { bf16 = { w = ..; "
		    "k_w = ..; }; }, memory_w, wait_w",
		    path, config_setting_source_line(pw));
	if (!(hw->rated_w > 0))
		return prism_err_set(
		    err, PRISM_EFORMAT,
		    "%s:%d: 'gpu.power' needs 'gpu.rated_w', the limit it balances", path,
		    config_setting_source_line(pw));
	if ((rc =
		 cfg_range(path, cf, gpu, "power.memory_w", 1, 1e5, 0, 1, &hw->power.mem_w, err)) ||
	    (rc = cfg_range(path, cf, gpu, "power.wait_w", 0, 1e5, 0, 1, &hw->power.wait_w, err)))
		return rc;
	for (int i = 0; i < config_setting_length(g); i++) {
		config_setting_t *e = config_setting_get_elem(g, (unsigned)i);
		int d = hw_dtype_parse(config_setting_name(e));
		if (d < 0 || d == HW_FP16)
			return prism_err_set(
			    err, PRISM_EFORMAT,
			    "%s:%d: 'gpu.power.gemm.%s' is not a dtype with terms of "
			    "its own (fp32, tf32, bf16, fp8, fp4; fp16 reads bf16's)",
			    path, config_setting_source_line(e), config_setting_name(e));
		char w[64], k[64];
		snprintf(w, sizeof(w), "power.gemm.%s.w", hw_dtype_name(d));
		snprintf(k, sizeof(k), "power.gemm.%s.k_w", hw_dtype_name(d));
		if ((rc = cfg_range(path, cf, gpu, w, 1, 1e5, 0, 1, &hw->power.gemm_w[d], err)) ||
		    (rc = cfg_range(path, cf, gpu, k, 1, 1e6, 0, 1, &hw->power.gemm_k_w[d], err)))
			return rc;
	}
	if (!(hw->power.gemm_w[HW_BF16] > 0))
		return prism_err_set(
		    err, PRISM_EFORMAT,
		    "%s:%d: 'gpu.power.gemm' must state bf16 (a dtype without terms "
		    "of its own reads bf16's)",
		    path, config_setting_source_line(g));
	return 0;
}

/* gpu.peak_tflops (tf): each dtype's peak.  Ranges in the file's units:
 * wide enough for any GPU built or announced (B200: 4,500 TFLOP/s fp8,
 * 8,000 GB/s), narrow enough that no time computed from them is absurd (a
 * peak of 1e-300 FLOP/s, a latency of 1e308 s) or divides by zero. */
static int read_peaks(const char *path, config_t *cf, config_setting_t *tf, struct hw_profile *hw,
		      struct prism_err *err)
{
	int rc;
	for (int d = 0; d < HW_NDTYPES; d++) {
		/* FP4 is optional: only Blackwell profiles have it. */
		if (d == HW_FP4 && !config_setting_lookup(tf, dtype_names[d]))
			continue;
		if ((rc = cfg_range(path, cf, tf, dtype_names[d], 0, 1e6, 0, 1e12,
				    &hw->peak_flops[d], err)))
			return rc;
		if (hw->peak_flops[d] > 0 && hw->peak_flops[d] < 1e-3 * 1e12) {
			rc = prism_err_set(
			    err, PRISM_EFORMAT,
			    "%s:%d: 'peak_tflops.%s' must be 0 (no tensor path) or in 0.001..1e+06, "
			    "not %g",
			    path,
			    config_setting_source_line(config_setting_lookup(tf, dtype_names[d])),
			    dtype_names[d], hw->peak_flops[d] / 1e12);
			return rc;
		}
	}
	return 0;
}

/* The memory, the links and the node: HBM, NVLink, GPUs and NICs a node,
 * the NVLink domain, the latencies, the memory reserve, the fabric. */
static int read_node(const char *path, config_t *cf, config_setting_t *gpu, config_setting_t *node,
		     struct hw_profile *hw, struct prism_err *err)
{
	double v;
	int rc;
	if ((rc = cfg_range(path, cf, gpu, "hbm_bandwidth_GBps", 1, 1e6, 0, 1e9, &hw->hbm_Bps,
			    err)) ||
	    (rc = cfg_range(path, cf, gpu, "hbm_capacity_GB", 0.1, 1e5, 0, 1e9, &hw->hbm_bytes,
			    err)) ||
	    (rc = cfg_range(path, cf, gpu, "nvlink_bandwidth_GBps", 0.1, 1e6, 0, 1e9,
			    &hw->nvlink_Bps, err)) ||
	    (rc = cfg_range(path, cf, node, "gpus", 1, HW_MAX_NODE_GPUS, 1, 1, &v, err)))
		return rc;
	hw->gpus_per_node = (int)v;
	if ((rc = cfg_range(path, cf, node, "nics", 1, HW_MAX_NODE_GPUS, 1, 1, &v, err)))
		return rc;
	hw->nics_per_node = (int)v;
	/* Optional: the NVLink domain, whole nodes of it (an NVL72 rack is 18
	 * trays of 4); absent, one node. */
	hw->nvlink_domain = hw->gpus_per_node;
	if (config_setting_lookup(node, "nvlink_domain")) {
		if ((rc = cfg_range(path, cf, node, "nvlink_domain", hw->gpus_per_node,
				    HW_MAX_NODE_GPUS, 1, 1, &v, err)))
			return rc;
		hw->nvlink_domain = (int)v;
		if (hw->nvlink_domain % hw->gpus_per_node) {
			rc = prism_err_set(
			    err, PRISM_EFORMAT,
			    "%s:%d: 'node.nvlink_domain' (%d) must be a multiple of 'node.gpus' "
			    "(%d)",
			    path,
			    config_setting_source_line(
				config_setting_lookup(node, "nvlink_domain")),
			    hw->nvlink_domain, hw->gpus_per_node);
			return rc;
		}
	}
	if ((rc = cfg_range(path, cf, node, "nic_bandwidth_Gbps", 0.1, 1e6, 0, 1e9 / 8,
			    &hw->nic_Bps, err)) ||
	    (rc = cfg_range(path, cf, node, "nvlink_latency_us", 0, 1e6, 0, 1e-6, &hw->nvlink_lat_s,
			    err)) ||
	    (rc = cfg_range(path, cf, node, "network_latency_us", 0, 1e6, 0, 1e-6, &hw->net_lat_s,
			    err)) ||
	    (rc = cfg_range(path, cf, gpu, "memory_reserve_GB", 0, 1e5, 0, 1e9,
			    &hw->mem_reserve_bytes, err)))
		return rc;
	if (hw->mem_reserve_bytes >= hw->hbm_bytes) {
		rc = prism_err_set(
		    err, PRISM_EFORMAT,
		    "%s:%d: 'gpu.memory_reserve_GB' (%g) must be below "
		    "'gpu.hbm_capacity_GB' (%g)",
		    path,
		    config_setting_source_line(config_setting_lookup(gpu, "memory_reserve_GB")),
		    hw->mem_reserve_bytes / 1e9, hw->hbm_bytes / 1e9);
		return rc;
	}
	/* Optional: the scale-up fabric, "switch" (NVSwitch: any group at the
	 * full per-GPU bandwidth) or "mesh" (xGMI: a link to each peer). */
	if (config_setting_lookup(node, "fabric")) {
		char fab[16];
		if ((rc = cfg_text(path, cf, node, "fabric", fab, sizeof(fab), err)))
			return rc;
		if (strcmp(fab, "switch") && strcmp(fab, "mesh")) {
			rc = prism_err_set(
			    err, PRISM_EFORMAT,
			    "%s:%d: 'node.fabric' must be \"switch\" or \"mesh\", not "
			    "'%s'",
			    path, config_setting_source_line(config_setting_lookup(node, "fabric")),
			    fab);
			return rc;
		}
		hw->mesh = !strcmp(fab, "mesh");
	}
	return 0;
}

/* Optional: the layouts the GPU's per-tensor fp8 GEMMs take (hw.h
 * fp8_any_layout): "tn" (the default) or "any". */
static int read_fp8_layouts(const char *path, config_t *cf, config_setting_t *gpu,
			    struct hw_profile *hw, struct prism_err *err)
{
	char t[8];
	int rc;
	if (!config_setting_lookup(gpu, "fp8_layouts"))
		return 0;
	if ((rc = cfg_text(path, cf, gpu, "fp8_layouts", t, sizeof(t), err)))
		return rc;
	if (strcmp(t, "tn") && strcmp(t, "any"))
		return prism_err_set(
		    err, PRISM_EFORMAT,
		    "%s:%d: 'gpu.fp8_layouts' must be \"tn\" or \"any\", not '%s'", path,
		    config_setting_source_line(config_setting_lookup(gpu, "fp8_layouts")), t);
	hw->fp8_any_layout = !strcmp(t, "any");
	return 0;
}

/* Optional: the host link (activation offloading), and the refusal of the
 * flat allocator share it replaced. */
static int read_host(const char *path, config_t *cf, config_setting_t *gpu, struct hw_profile *hw,
		     struct prism_err *err)
{
	int rc = 0;
	/* Optional: the host link (activation offloading): its kind and
	 * each direction's bandwidth, all three or none. */
	if (config_setting_lookup(gpu, "host_link")) {
		char kind[16];
		if ((rc = cfg_text(path, cf, gpu, "host_link", kind, sizeof(kind), err)))
			return rc;
		if ((hw->host_link = hw_host_link_parse(kind)) < 0) {
			rc = prism_err_set(
			    err, PRISM_EFORMAT,
			    "%s:%d: 'gpu.host_link' must be \"pcie3\", \"pcie4\", \"pcie5\", "
			    "\"pcie6\" or \"nvlink-c2c\", not '%s'",
			    path,
			    config_setting_source_line(config_setting_lookup(gpu, "host_link")),
			    kind);
			return rc;
		}
		if ((rc = cfg_range(path, cf, gpu, "host_d2h_GBps", 0.1, 1e5, 0, 1e9,
				    &hw->host_d2h_Bps, err)) ||
		    (rc = cfg_range(path, cf, gpu, "host_h2d_GBps", 0.1, 1e5, 0, 1e9,
				    &hw->host_h2d_Bps, err)))
			return rc;
	} else if (config_setting_lookup(gpu, "host_d2h_GBps") ||
		   config_setting_lookup(gpu, "host_h2d_GBps")) {
		config_setting_t *x = config_setting_lookup(gpu, "host_d2h_GBps");
		rc = prism_err_set(err, PRISM_EFORMAT,
				   "%s:%d: 'gpu.host_link' is missing: a host link's bandwidth "
				   "needs its kind",
				   path,
				   config_setting_source_line(
				       x ? x : config_setting_lookup(gpu, "host_h2d_GBps")));
		return rc;
	}
	/* The allocator's reserve is modelled (mem_alloc_reserved): a flat
	 * share of it in the profile is refused, naming what replaced it. */
	if (config_setting_lookup(gpu, "allocator_fragmentation")) {
		rc = prism_err_set(
		    err, PRISM_EFORMAT,
		    "%s:%d: 'gpu.allocator_fragmentation' is no longer read: the caching "
		    "allocator's reserve is modelled from the tensors a step holds "
		    "(docs/MODEL.md, \"Memory\"; --expandable-segments); remove it",
		    path,
		    config_setting_source_line(
			config_setting_lookup(gpu, "allocator_fragmentation")));
		return rc;
	}
	return 0;
}

/* Optional: the power rating and sustained clocks, the collectives' fitted
 * settings and contention (absent: their defaults). */
static int read_rates(const char *path, config_t *cf, config_setting_t *gpu, config_setting_t *node,
		      struct hw_profile *hw, struct prism_err *err)
{
	int rc = 0;
	/* Optional: the power limit and the sustained clock under it
	 * (docs/MODEL.md, "Sustained rates"); absent: no rating, and the
	 * burst rates sustained. */
	if ((config_setting_lookup(gpu, "rated_w") &&
	     (rc = cfg_range(path, cf, gpu, "rated_w", 1, 1e5, 0, 1, &hw->rated_w, err))) ||
	    (rc = read_sustained(path, cf, gpu, hw, err)))
		return rc;
	/* Optional: the clock a steady stream of one dtype's kernels settles
	 * at, by dtype (docs/MODEL.md, "Sustained rates"), and the power
	 * balance; a bf16 step's clock not stated, the balance's at the
	 * reference step. */
	if ((rc = read_by_dtype(path, cf, gpu, "stream", hw->stream, err)) ||
	    (rc = read_power(path, cf, gpu, hw, err)))
		return rc;
	if (hw_has_balance(hw) && !(hw->sustained_dt[HW_BF16] > 0) &&
	    !(config_setting_lookup(gpu, "sustained") &&
	      !config_setting_is_group(config_setting_lookup(gpu, "sustained"))))
		hw->sustained = hw_power_rate(hw, HW_BF16, HW_STEP_COMPUTE_SHARE, 0, 0);
	hw->clock = hw->sustained;
	/* Optional: collectives as measured (comm.h). */
	hw->nvl_eff = hw->net_eff = HW_BUS_EFF_DEFAULT;
	if ((config_setting_lookup(node, "nvlink_bus_eff") &&
	     (rc =
		  cfg_range(path, cf, node, "nvlink_bus_eff", 0.01, 1, 0, 1, &hw->nvl_eff, err))) ||
	    (config_setting_lookup(node, "network_bus_eff") &&
	     (rc = cfg_range(path, cf, node, "network_bus_eff", 0.01, 1, 0, 1, &hw->net_eff,
			     err))) ||
	    (config_setting_lookup(node, "nvls_bus_eff") &&
	     (rc = cfg_range(path, cf, node, "nvls_bus_eff", 0, 1, 0, 1, &hw->nvls_eff, err))) ||
	    (config_setting_lookup(node, "collective_base_us") &&
	     (rc = cfg_range(path, cf, node, "collective_base_us", 0, 1e4, 0, 1e-6,
			     &hw->coll_base_s, err))))
		return rc;
	/* Optional: contention (sim.h); absent, the fitted defaults. */
	hw->slow_compute = HW_CONT_COMPUTE_DEFAULT;
	hw->slow_comm = HW_CONT_COMM_DEFAULT;
	if (config_lookup(cf, "contention")) {
		config_setting_t *ct = config_lookup(cf, "contention");
		if ((config_setting_lookup(ct, "compute") &&
		     (rc = cfg_range(path, cf, ct, "compute", 0, 10, 0, 1, &hw->slow_compute,
				     err))) ||
		    (config_setting_lookup(ct, "comm") &&
		     (rc = cfg_range(path, cf, ct, "comm", 0, 10, 0, 1, &hw->slow_comm, err))))
			return rc;
	}
	return 0;
}

int hw_load(const char *path, struct hw_profile *hw, struct prism_err *err)
{
	config_t cf;
	config_setting_t *gpu, *node, *tf;
	int rc = 0;

	memset(hw, 0, sizeof(*hw));
	if ((rc = cfg_read(&cf, path, err)))
		return rc;
	{
		const char *base = strrchr(path, '/');
		size_t n;
		base = base ? base + 1 : path;
		n = strlen(base);
		if (n > 4 && strcmp(base + n - 4, ".cfg") == 0)
			n -= 4;
		snprintf(hw->id, sizeof(hw->id), "%.*s", (int)n, base);
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
	if ((rc = cfg_text(path, &cf, NULL, "name", hw->name, sizeof(hw->name), err)) ||
	    (rc = cfg_text(path, &cf, gpu, "model", hw->gpu, sizeof(hw->gpu), err)))
		goto out;
	/* What one GPU-hour costs, for a sweep's cost to train (optional; a
	 * sweep's own price_per_gpu_hour wins). */
	if (config_lookup(&cf, "price_per_gpu_hour") &&
	    (rc = cfg_range(path, &cf, NULL, "price_per_gpu_hour", 0, 1e6, 0, 1,
			    &hw->price_per_gpu_hour, err)))
		goto out;
	if ((rc = read_peaks(path, &cf, tf, hw, err)) ||
	    (rc = read_node(path, &cf, gpu, node, hw, err)) ||
	    (rc = read_host(path, &cf, gpu, hw, err)) ||
	    (rc = read_fp8_layouts(path, &cf, gpu, hw, err)) ||
	    (rc = read_rates(path, &cf, gpu, node, hw, err)))
		goto out;
	hw_kernels_default(hw);
	rc = load_kernels(path, &cf, hw, err);
out:
	config_destroy(&cf);
	return rc;
}
