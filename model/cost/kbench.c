/* kbench.c - kernel measurements against the kernel model (see kbench.h). */
#include "kbench.h"

#include <ctype.h>
#include <dirent.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_multimin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kperf.h"
#include "layout.h"
#include "vec.h"

const char *kbench_class_name(int cls)
{
	static const char *const n[KB_NCLASSES] = {
	    "gemm",	    "attention fwd",	    "attention bwd",	  "attention fwd+bwd",
	    "memory-bound", "memory-bound (eager)", "fp8 linear speed-up"};
	return cls >= 0 && cls < KB_NCLASSES ? n[cls] : "?";
}

const char *kbench_profile(const char *g)
{
	/* Order matters: "H100 PCIe" before "H100", "A100 PCIe" before "A100",
	 * the NVL72 racks' GB200 and GB300 before B200 and B300. */
	if (strstr(g, "PCIe") || strstr(g, "GH200") || strstr(g, "MI3") || strstr(g, "Gaudi") ||
	    strstr(g, "gfx") || strstr(g, "RTX"))
		return NULL;
	if (strstr(g, "GB200"))
		return "gb200-nvl72";
	if (strstr(g, "GB300"))
		return "gb300-nvl72";
	if (strstr(g, "B300"))
		return "b300-hgx";
	if (strstr(g, "H800"))
		return "h800-hgx";
	if (strstr(g, "H200"))
		return "h200-dgx";
	if (strstr(g, "H100"))
		return "h100-dgx";
	if (strstr(g, "A100"))
		return strstr(g, "40GB") ? "a100-40gb-dgx" : "a100-80gb-dgx";
	if (strstr(g, "B200") || strstr(g, "SM100"))
		return "b200-dgx";
	if (strstr(g, "V100"))
		return "v100-dgx1";
	return NULL;
}

const char *kbench_sibling(const char *p, double *clock)
{
	/* Own clock over the sibling's: the datasheets' dense bf16 peak per
	 * SM (same architecture, so the same FLOPs a clock an SM), or for AMD
	 * the peak engine clocks (MI300X and MI325X 2,100 MHz, MI355X 2,400:
	 * AMD's data sheets). */
	static const struct {
		const char *p, *sib;
		double clock;
	} t[] = {
	    {"gb200-nvl72", "b200-dgx", (2500.0 / 148) / (2250.0 / 148)},
	    {"b300-hgx", "b200-dgx", (2250.0 / 160) / (2250.0 / 148)},
	    {"gb300-nvl72", "b300-hgx", (2500.0 / 160) / (2250.0 / 160)},
	    {"mi300x", "mi355x", 2100.0 / 2400},
	    {"mi325x", "mi355x", 2100.0 / 2400},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(p, t[i].p)) {
			if (clock)
				*clock = t[i].clock;
			return t[i].sib;
		}
	return NULL;
}

const char *kbench_family(const char *p)
{
	if (!strcmp(p, "h100-dgx") || !strcmp(p, "h800-hgx") || !strcmp(p, "h200-dgx"))
		return "gh100";
	if (!strncmp(p, "a100", 4))
		return "ga100";
	return p;
}

/* ---- CSV ------------------------------------------------------------------ */

/* Split the next record of *p into fields (in place: quotes removed,
 * doubled quotes kept once; a quote left open ends at the text's end);
 * *p moves past it.  Returns the field count, or -1 at the end. */
int kbench_record(char **p, char **f, int max)
{
	char *s = *p, *w;
	int n = 0;
	if (!*s)
		return -1;
	for (;;) {
		int q = *s == '"';
		if (q)
			s++;
		w = s;
		if (n < max)
			f[n] = w;
		n++;
		for (;;) {
			if (q && *s == '"' && s[1] == '"') {
				*w++ = '"';
				s += 2;
			} else if (q && *s == '"') {
				q = 0;
				s++;
			} else if (!*s || (!q && (*s == ',' || *s == '\n' || *s == '\r'))) {
				break;
			} else {
				*w++ = *s++;
			}
		}
		if (*s == ',') {
			*w = '\0';
			s++;
			continue;
		}
		if (*s == '\r')
			*s++ = '\0';
		if (*s == '\n')
			*s++ = '\0';
		*w = '\0';
		break;
	}
	*p = s;
	return n < max ? n : max;
}

const char *kbench_col(const struct kbench_cols *h, char **f, int nf, const char *name)
{
	for (int i = 0; i < h->n && i < nf; i++)
		if (!strcmp(h->name[i], name))
			return f[i];
	return "";
}

static int has_col(const struct kbench_cols *h, const char *name)
{
	for (int i = 0; i < h->n; i++)
		if (!strcmp(h->name[i], name))
			return 1;
	return 0;
}

double kbench_num(const char *s)
{
	char *e;
	double v;
	while (*s == ' ')
		s++;
	v = strtod(s, &e);
	return e != s && isfinite(v) && v > 0 ? v : 0;
}

/* The integral from 0 to tau of the clock's fall (0 up to
 * HW_SUSTAINED_AFTER_S, 1 from HW_THROTTLED_AFTER_S, linear between). */
static double fall_int(double tau)
{
	const double t0 = HW_SUSTAINED_AFTER_S, t1 = HW_THROTTLED_AFTER_S;
	if (tau <= t0)
		return 0;
	if (tau < t1)
		return (tau - t0) * (tau - t0) / (2 * (t1 - t0));
	return (t1 - t0) / 2 + (tau - t1);
}

/* The calls a row's text states it was timed over, "N back-to-back
 * calls" or "wall clock around N calls" (SimuMax's dense and grouped
 * rows), 0 where none; into *warm the warm-up calls before them, "after W
 * warmup" (0 where not stated). */
static double stated_calls(const char *txt, double *warm)
{
	const char *p = strstr(txt, " back-to-back calls"), *q, *w;
	char *e;
	double v;

	*warm = 0;
	if (p) {
		for (q = p; q > txt && isdigit((unsigned char)q[-1]); q--)
			;
	} else if ((q = strstr(txt, "wall clock around ")) != NULL) {
		q += 18;
		for (p = q; isdigit((unsigned char)*p); p++)
			;
		if (strncmp(p, " calls", 6))
			return 0;
	} else {
		return 0;
	}
	if (q == p)
		return 0;
	if ((w = strstr(p, " after ")) && isdigit((unsigned char)w[7]) &&
	    (v = strtod(w + 7, &e)) > 0 && !strncmp(e, " warmup", 7))
		*warm = v;
	return kbench_num(q);
}

/* A row timed over stated calls (stated_calls, in its notes or
 * implementation) of time_s each: the mean fall of its clock over its
 * timed calls, W t to (W + N) t (kbench.h, KB_STREAM), into *throttle;
 * KB_STREAM where the calls outlast HW_SUSTAINED_AFTER_S, else KB_BURST. */
static int back_to_back(const char *txt, double time_s, double *throttle)
{
	double warm, n = stated_calls(txt, &warm), a = warm * time_s, b = (warm + n) * time_s;

	*throttle = 0;
	if (!(n > 0) || !(b > HW_SUSTAINED_AFTER_S))
		return KB_BURST;
	*throttle = (fall_int(b) - fall_int(a)) / (b - a);
	return KB_STREAM;
}

int kbench_count(const char *s, double max, double *out)
{
	double v = kbench_num(s);

	*out = 0;
	if (v == 0)
		return 0;
	if (v > max || v != floor(v))
		return -1;
	*out = v;
	return 1;
}

static int dtype_of(const char *s)
{
	/* NVFP4 / MXFP4 (e2m1 elements, block scales): the fp4 peak. */
	if (strstr(s, "fp4") || strstr(s, "e2m1"))
		return HW_FP4;
	if (strstr(s, "fp8") || strstr(s, "e4m3") || strstr(s, "e5m2"))
		return HW_FP8;
	if (strstr(s, "TF32"))
		return HW_TF32;
	if (strstr(s, "fp32"))
		return HW_FP32;
	if (strstr(s, "fp16"))
		return HW_FP16;
	if (strstr(s, "bf16") || strstr(s, "16-bit"))
		return HW_BF16;
	return -1;
}

void kbench_skip(struct kbench_skips *s, const char *why)
{
	s->skipped++;
	for (int i = 0; i < s->n_why; i++)
		if (!strcmp(s->why[i], why)) {
			s->n[i]++;
			return;
		}
	if (s->n_why < KBENCH_SKIP_WHYS) {
		snprintf(s->why[s->n_why], sizeof(s->why[0]), "%s", why);
		s->n[s->n_why++] = 1;
	}
}

static void skip(struct kbench *kb, const char *why)
{
	kbench_skip(&kb->skips, why);
}

/* 1 when every count of r is in range (kbench.h): 0 (not stated) up to
 * KBENCH_MAX_DIM, bytes up to KBENCH_MAX_BYTES; NaN is not. */
static int in_range(const struct kbench_row *r)
{
	const double dim[] = {r->b, r->m, r->n, r->k, r->heads, r->sq, r->skv, r->d, r->sq_max};
	for (size_t i = 0; i < sizeof(dim) / sizeof(dim[0]); i++)
		if (!(dim[i] >= 0 && dim[i] <= KBENCH_MAX_DIM))
			return 0;
	for (int i = 0; i < r->n_sq; i++)
		if (!(r->sq_set[i] >= 0 && r->sq_set[i] <= KBENCH_MAX_DIM))
			return 0;
	return r->bytes >= 0 && r->bytes <= KBENCH_MAX_BYTES && isfinite(r->time_s);
}

int kbench_add(struct kbench *kb, const struct kbench_row *r)
{
	if (!in_range(r)) {
		skip(kb, "a dimension over 2^32, or bytes over 2^50");
		return 0;
	}
	if (vec_reserve_((void **)&kb->rows, &kb->cap, kb->n + 1, sizeof(*kb->rows)))
		return PRISM_ENOMEM;
	kb->rows[kb->n++] = *r;
	return 0;
}

/* The profile of a kernel row's GPU: kbench_profile's, and AMD's
 * Instinct parts, whose kernel rows (ml-engineering's MAMF, XLA's gfx950
 * table) place them; XLA's "MI350-series (gfx950)" is MI355X's die (CDNA 4,
 * 256 CUs; the table does not say which of MI350X and MI355X, whose
 * clocks are 2.2 and 2.4 GHz).  Collectives and traces keep
 * kbench_profile's (no AMD profile is fitted on their rows). */
static const char *row_profile(const char *g)
{
	if (strstr(g, "MI300X"))
		return "mi300x";
	if (strstr(g, "MI325X"))
		return "mi325x";
	if (strstr(g, "MI355X") || strstr(g, "gfx950"))
		return "mi355x";
	return kbench_profile(g);
}

/* The GPU and its profile; 0 when it has none (the row is skipped). */
static int place(struct kbench *kb, struct kbench_row *r, const char *gpu)
{
	const char *p = row_profile(gpu);
	snprintf(r->gpu, sizeof(r->gpu), "%s", gpu);
	if (!p) {
		skip(kb, "GPU without a hardware profile");
		return 0;
	}
	snprintf(r->profile, sizeof(r->profile), "%s", p);
	return 1;
}

/* The square sizes a device summary's best was taken over, as its
 * implementation or notes state them: "n in {128,512,2048,8192}", "up to
 * 6888", "2^8..2^12.75"; else 256..8192. */
static void square_sizes(struct kbench_row *r, const char *impl, const char *notes)
{
	const char *txt[2] = {impl, notes}, *p;
	r->sq_max = 8192;
	for (int i = 0; i < 2; i++) {
		if ((p = strstr(txt[i], "n in {"))) {
			char *e;
			for (p += 6; r->n_sq < 8; p = e + 1) {
				double v = strtod(p, &e);
				if (e == p || v <= 0)
					break;
				r->sq_set[r->n_sq++] = v;
				if (*e != ',')
					break;
			}
			return;
		}
	}
	for (int i = 0; i < 2; i++) {
		double v;
		if ((p = strstr(txt[i], "up to ")) && (v = strtod(p + 6, NULL)) >= 256) {
			r->sq_max = v;
			return;
		}
		if ((p = strstr(txt[i], "..2^")) && (v = strtod(p + 4, NULL)) >= 8) {
			r->sq_max = floor(pow(2, v) + 0.5);
			return;
		}
	}
}

static int gemm_row(struct kbench *kb, const struct kbench_cols *h, char **f, int nf)
{
	struct kbench_row r;
	double tf = kbench_num(kbench_col(h, f, nf, "tflops")),
	       tm = kbench_num(kbench_col(h, f, nf, "time_ms"));
	memset(&r, 0, sizeof(r));
	r.cls = KB_GEMM;
	snprintf(r.source, sizeof(r.source), "%s", kbench_col(h, f, nf, "source"));
	snprintf(r.impl, sizeof(r.impl), "%s", kbench_col(h, f, nf, "implementation"));
	if ((r.dtype = dtype_of(kbench_col(h, f, nf, "dtype"))) < 0) {
		skip(kb, "dtype not stated");
		return 0;
	}
	if (!place(kb, &r, kbench_col(h, f, nf, "gpu")))
		return 0;
	/* TransformerEngine's grouped GEMM (SimuMax's rows): one cuBLAS GEMM
	 * an expert over 4 streams, as synth times an MoE layer's experts. */
	r.grouped = strstr(kbench_col(h, f, nf, "implementation"), "general_grouped_gemm") != NULL;
	r.waves = strstr(kbench_col(h, f, nf, "implementation"), "XLA") ||
		  strstr(kbench_col(h, f, nf, "implementation"), "DeepGEMM");
	r.blockwise = strstr(kbench_col(h, f, nf, "implementation"), "DeepGEMM") != NULL;
	/* C += A B, as the row states it (SimuMax's TransformerEngine keys
	 * accumulate=True into the main gradient), or a DeepGEMM
	 * weight-gradient kernel: "Results will be accumulated into the
	 * output tensor" (deepseek-ai/DeepGEMM@c4a7116:deep_gemm/jit_kernels/
	 * wgrad_gemm.py; its k-grouped form launches one such GEMM a group,
	 * in turn). */
	r.accum = strstr(kbench_col(h, f, nf, "implementation"), "accumulate=True") ||
		  strstr(kbench_col(h, f, nf, "out_dtype"), "accumulate=True") ||
		  (strstr(kbench_col(h, f, nf, "implementation"), "DeepGEMM") &&
		   strstr(kbench_col(h, f, nf, "implementation"), "wgrad"));
	/* A module's forward under fp8 autocast (TransformerEngine's
	 * te.Linear, TE issue #1747): the quantisation of its input and
	 * weight as well as the GEMM -- TE's GEMM guide (NVIDIA/
	 * TransformerEngine PR #2863, docs/features/low_precision_training/
	 * speedups.rst) tells "autocast", per-step quantisation included,
	 * from "pre-quantized", the GEMM kernel alone. */
	r.module = r.dtype == HW_FP8 &&
		   strstr(kbench_col(h, f, nf, "implementation"), "te.Linear") != NULL;
	r.b = kbench_num(kbench_col(h, f, nf, "batch"));
	r.m = kbench_num(kbench_col(h, f, nf, "M"));
	r.n = kbench_num(kbench_col(h, f, nf, "N"));
	r.k = kbench_num(kbench_col(h, f, nf, "K"));
	if (r.b <= 0)
		r.b = 1;
	if (r.m <= 0 || r.n <= 0 || r.k <= 0) {
		/* A device summary: the best square GEMM.  Not a grouped
		 * GEMM's best over a set of problems it does not state
		 * (FBGEMM PR #4821's MXFP8 "peak tflops of 1963"): neither its
		 * groups nor their shapes are a square's. */
		if (strstr(kbench_col(h, f, nf, "op"), "grouped")) {
			skip(kb, "grouped GEMM without a shape");
			return 0;
		}
		if (tf <= 0) {
			skip(kb, "no shape and no TFLOP/s");
			return 0;
		}
		r.best_square = 1;
		square_sizes(&r, kbench_col(h, f, nf, "implementation"),
			     kbench_col(h, f, nf, "notes"));
		r.m = r.n = r.k = 4096;
		r.time_s = 2 * 4096.0 * 4096 * 4096 / (tf * 1e12);
		return kbench_add(kb, &r);
	}
	r.time_s = tm > 0 ? tm / 1e3 : tf > 0 ? 2 * r.b * r.m * r.n * r.k / (tf * 1e12) : 0;
	if (r.time_s <= 0) {
		skip(kb, "no time");
		return 0;
	}
	r.sustained = back_to_back(kbench_col(h, f, nf, "notes"), r.time_s, &r.throttle);
	if (r.sustained == KB_BURST)
		r.sustained =
		    back_to_back(kbench_col(h, f, nf, "implementation"), r.time_s, &r.throttle);
	/* XLA's table: xla/tools/matmul_perf_table_gen runs each dot alone,
	 * its inputs copied in afresh before each run, and keeps CUPTI's
	 * median kernel duration (MatmulPerfTableGen::Profile): a kernel on
	 * an idle GPU, cold, where a step's kernels follow one another. */
	if (strstr(kbench_col(h, f, nf, "notes"), "matmul_perf_table_gen"))
		r.timing = KB_TIME_ISOLATED;
	return kbench_add(kb, &r);
}

static int attn_row(struct kbench *kb, const struct kbench_cols *h, char **f, int nf)
{
	struct kbench_row r;
	const char *pass = kbench_col(h, f, nf, "pass"), *kern = kbench_col(h, f, nf, "kernel");
	const char *cz = kbench_col(h, f, nf, "causal"),
		   *conv = kbench_col(h, f, nf, "flop_convention");
	double tf = kbench_num(kbench_col(h, f, nf, "tflops")),
	       tm = kbench_num(kbench_col(h, f, nf, "time_ms")), dv;

	memset(&r, 0, sizeof(r));
	snprintf(r.source, sizeof(r.source), "%s", kbench_col(h, f, nf, "source"));
	snprintf(r.impl, sizeof(r.impl), "%s", kbench_col(h, f, nf, "kernel"));
	if (strstr(kern, "math")) {
		skip(kb, "unfused attention (math backend)");
		return 0;
	}
	/* An attention bias added to the scores (Transformer Engine's
	 * post_scale_bias: its benchmark_attention.py test_2, test_1's shape
	 * with a [1, h, s, s] bias read forward and its gradient written
	 * backward, 2.5x test_1's time on H100): a kernel the model does not
	 * time; the row's section says so. */
	if (strstr(kbench_col(h, f, nf, "section"), "bias") ||
	    strstr(kbench_col(h, f, nf, "notes"), "post_scale_bias")) {
		skip(kb, "attention with a bias (not modelled)");
		return 0;
	}
	if (!strcmp(pass, "fwd"))
		r.cls = KB_ATTN_FWD;
	else if (!strcmp(pass, "bwd"))
		r.cls = KB_ATTN_BWD;
	else if (!strcmp(pass, "fwd+bwd"))
		r.cls = KB_ATTN_BOTH;
	else {
		skip(kb, "attention pass not stated");
		return 0;
	}
	if ((r.dtype = dtype_of(kbench_col(h, f, nf, "dtype"))) < 0) {
		skip(kb, "dtype not stated");
		return 0;
	}
	r.b = kbench_num(kbench_col(h, f, nf, "batch"));
	r.sq = kbench_num(kbench_col(h, f, nf, "seqlen_q"));
	r.skv = kbench_num(kbench_col(h, f, nf, "seqlen_kv"));
	r.heads = kbench_num(kbench_col(h, f, nf, "num_q_heads"));
	r.d = kbench_num(kbench_col(h, f, nf, "head_dim_qk"));
	dv = kbench_num(kbench_col(h, f, nf, "head_dim_v"));
	if (!strcmp(cz, "True"))
		r.causal = 1;
	else if (strcmp(cz, "False")) {
		skip(kb, "causal mask not stated");
		return 0;
	}
	if (r.b <= 0 || r.sq <= 0 || r.skv <= 0 || r.heads <= 0 || r.d <= 0) {
		skip(kb, "attention shape not stated");
		return 0;
	}
	{
		/* "sliding window N" in the notes: the keys each query sees. */
		const char *w = strstr(kbench_col(h, f, nf, "notes"), "sliding window");
		if (w) {
			r.window = kbench_num(w + strlen("sliding window"));
			if (!(r.window >= 1 && r.window <= 1e7) || !r.causal) {
				skip(kb, "sliding-window attention of no stated window");
				return 0;
			}
		} else if (strstr(kern, "sliding")) {
			skip(kb, "sliding-window attention of no stated window");
			return 0;
		}
	}
	r.fa2 =
	    strstr(kern, "FA2") || strstr(kern, "FlashAttention-2") || strstr(kern, "flash-attn 2");
	if (dv > 0 && dv != r.d) /* MLA-style: count the mean head dim */
		r.d = (r.d + dv) / 2;
	if (!place(kb, &r, kbench_col(h, f, nf, "gpu")))
		return 0;
	if (tm > 0) {
		r.time_s = tm / 1e3;
	} else if (tf > 0 && !strncmp(conv, "FA-style", 8)) {
		double fl =
		    kperf_attn_win_flops(0, r.b, r.heads, r.sq, r.skv, r.d, r.causal, r.window);
		fl *= r.cls == KB_ATTN_FWD ? 1 : r.cls == KB_ATTN_BWD ? 2.5 : 3.5;
		r.time_s = fl / (tf * 1e12);
	} else {
		skip(kb, "no time (TFLOP/s under an unstated convention)");
		return 0;
	}
	r.sustained = back_to_back(kbench_col(h, f, nf, "notes"), r.time_s, &r.throttle);
	return kbench_add(kb, &r);
}

/* The elements of a memory-bound row's shape: "rows M=4096 x N=1024",
 * "[S=4096, B=1, H=1024]", "logits [B*T=16384, V=4096] (B=8, T=2048)",
 * "input [S=2048, B=4, 2*ffn_local], ffn_local=1024", "N=16384 rows x
 * C=4096": the product of the numbers inside the first brackets (or of the
 * whole text), a factor "2*name" taking name's value from elsewhere. */
static double elements(const char *shape)
{
	const char *a = strchr(shape, '['), *z = a ? strchr(a, ']') : NULL;
	const char *p = a ? a + 1 : shape, *end = z ? z : shape + strlen(shape);
	double prod = 1;
	int found = 0;

	while (p < end) {
		const char *tok_end = p;
		while (tok_end < end && *tok_end != ',' && *tok_end != 'x' && *tok_end != ' ')
			tok_end++;
		{
			const char *eq = memchr(p, '=', (size_t)(tok_end - p));
			const char *star = memchr(p, '*', (size_t)(tok_end - p));
			if (eq) {
				prod *= kbench_num(eq + 1);
				found = 1;
			} else if (star && isdigit((unsigned char)*p)) {
				char name[32], key[40];
				const char *v;
				size_t ln = (size_t)(tok_end - star - 1);
				if (ln < sizeof(name)) {
					memcpy(name, star + 1, ln);
					name[ln] = '\0';
					snprintf(key, sizeof(key), "%s=", name);
					if ((v = strstr(end, key))) {
						prod *= kbench_num(p) * kbench_num(v + strlen(key));
						found = 1;
					}
				}
			}
		}
		p = tok_end + 1;
	}
	return found ? prod : 0;
}

/* The Liger version a row's notes name ("liger_version 0.2.1") as
 * major * 10000 + minor * 100 + patch; 0 where none is named. */
static int liger_version(const char *notes)
{
	const char *p = strstr(notes, "liger_version ");
	int v[3] = {0, 0, 0};
	if (!p)
		return 0;
	p += strlen("liger_version ");
	for (int i = 0; i < 3 && isdigit((unsigned char)*p); i++) {
		char *e;
		v[i] = (int)strtol(p, &e, 10);
		p = *e == '.' ? e + 1 : e;
	}
	return v[0] * 10000 + v[1] * 100 + v[2];
}

/* Passes (of the row's element size es) that Liger's own norm backwards
 * move beyond reading dy and x and writing dx, from the code of the
 * version the row ran:
 * - RMSNorm before v0.4.0 (Liger-Kernel@e1e9d2e3, "RMSNorm aggregation",
 *   2024-10-03, made it persistent): `rms_norm_backward` writes each row's
 *   weight gradient into a [rows, cols] buffer of the weight's dtype
 *   (`torch.empty_like(X, dtype=W.dtype)`; the benchmark's LigerRMSNorm
 *   keeps its weight fp32) and `torch.sum(dW, dim=0)` reads it back: 2 x 4
 *   bytes an element (Liger-Kernel@b5672a15, the commit that wrote the
 *   A100 rows: src/liger_kernel/ops/rms_norm.py);
 * - the Megatron wrapper (LigerMegatronRMSNorm, src/liger_kernel/megatron/
 *   rms_norm.py@27fe47e2) calls the function with in_place=False, for
 *   which `rms_norm_backward` allocates dX with `torch.zeros_like(dY)`: a
 *   memset writing one pass before the kernel writes it again. */
static double liger_norm_bwd_passes(const char *kern, const char *notes, double es)
{
	if (!strncmp(kern, "rms_norm", 8)) {
		int v = liger_version(notes);
		return v && v < 400 ? 2 * 4 / es : 0;
	}
	if (!strncmp(kern, "megatron_rms_norm", 17))
		return 1;
	/* the fused add's backward gives both inputs one gradient tensor,
	 * which the first accumulation clones (liger_norm_launches): read and
	 * written once more */
	if (!strncmp(kern, "fused_add_rms_norm", 18))
		return 2;
	return 0;
}

/* The kernels a Liger norm's timed call launches, from the code of the
 * version the row ran (docs/MODEL.md, "Kernel efficiency"); 0 where not
 * counted.  Forward: its Triton kernel.  Backward (the autograd Function's
 * backward and the gradients' accumulation; do_bench sets the input's
 * .grad to None each call, so the input's gradient is taken as is, while
 * the weight's accumulates, an add):
 * - LayerNorm (benchmark_layer_norm.py@v0.6.0, y.backward(dy)): the
 *   kernel, _DW.sum and _DB.sum over the per-SM partials, the weight's and
 *   the bias' accumulation: 5;
 * - RMSNorm before v0.4.0 (b5672a15): the kernel, torch.sum(dW), the
 *   weight's accumulation: 3;
 * - fused add + RMSNorm (v0.7.0, both outputs' backward): the kernel,
 *   _dW.sum, the weight's accumulation, and a copy: the backward returns
 *   one tensor as both inputs' gradient, and the first AccumulateGrad to
 *   take it finds it still referenced by the other's buffer and clones it
 *   (torch/csrc/autograd/functions/accumulate_grad.h): 4;
 * - LigerMegatronRMSNorm (27fe47e2; forward, out.sum() and backward in
 *   one call): the forward, the sum, the copy that makes the sum's
 *   broadcast gradient contiguous (@ensure_contiguous on
 *   LigerRMSNormFunction.backward, src/liger_kernel/ops/rms_norm.py),
 *   dX's zeros_like, the kernel, _dW.sum, its cast to the bf16 weight, the
 *   weight's accumulation: 8;
 * - LigerMegatronSwiGLU (benchmark_megatron_swiglu.py, liger 0.8.1; the
 *   same call): the forward kernel, the sum, the copy that makes the
 *   sum's broadcast gradient contiguous (@ensure_contiguous on
 *   LigerFusedGateUpSiLUMulFunction.backward), the backward kernel: 4
 *   (the input's gradient is set to None before each call: no
 *   accumulation). */
static double liger_norm_launches(const char *kern, const char *notes, int fwd)
{
	int v = liger_version(notes);
	if (!strncmp(kern, "megatron_swiglu", 15))
		return fwd ? 1 : 4;
	if (!strstr(kern, "norm"))
		return 0;
	if (fwd)
		return 1;
	if (!strncmp(kern, "layer_norm", 10))
		return 5;
	if (!strncmp(kern, "rms_norm", 8))
		return v && v < 400 ? 3 : 0;
	if (!strncmp(kern, "fused_add_rms_norm", 18))
		return 4;
	if (!strncmp(kern, "megatron_rms_norm", 17))
		return 8;
	return 0;
}

/*
 * cudnn-frontend's norm benchmark (benchmark/norms/benchmark_single_norm.py
 * at the rows' commit): the bytes its GB/s counts (compute_bandwidth_bytes)
 * for a row of shape "N=<rows> rows x C=<cols>[ + bias]" and element size
 * es -- forward: X, the scale (and bias) read, Y and the fp32 inverse
 * variance (and mean, LayerNorm) written; backward: dY and X, the scale
 * and the fp32 statistics read, dX and the scale's (and bias')
 * gradient written -- and the kernels the timed pass sums (the profiler's
 * device time of every kernel in it):
 * - cuDNN's backward two: a norm backward that leaves a partial weight
 *   gradient a CTA and a finalize kernel summing them, as Transformer
 *   Engine's (kperf_mem_kernels_s; cuDNN's engines are closed, the rows'
 *   intercepts -- H200 1.9 us forward, 7.2 us backward -- say at least
 *   two);
 * - torch.compile's backward three: Inductor's input gradient (a row
 *   reduction) and the weight's, a column reduction over N rows that it
 *   splits into two kernels (partial sums, then their sum);
 * - every forward one.
 * 0 where the shape does not parse.
 */
static double cudnn_norm_bytes(const char *kern, const char *impl, const char *shape, int fwd,
			       double es, double *kernels)
{
	const char *pn = strstr(shape, "N="), *pc = strstr(shape, "C=");
	double n = pn ? kbench_num(pn + 2) : 0, c = pc ? kbench_num(pc + 2) : 0;
	int ln = !strncmp(kern, "layer_norm", 10), bias = strstr(shape, "bias") != NULL;
	if (!(n > 0) || !(c > 0))
		return 0;
	*kernels = fwd ? 1 : strstr(impl, "cuDNN") ? 2 : strstr(impl, "torch.compile") ? 3 : 1;
	if (fwd)
		return (n * c + c + (ln && bias ? c : 0)) * es + n * c * es + (ln ? 8 : 4) * n;
	return (2 * n * c + c) * es + (ln ? 8 : 4) * n + (n * c + c + (ln || bias ? c : 0)) * es;
}

/*
 * 1 for a row of Liger's benchmark_megatron_swiglu.py (liger 0.8.1, the
 * rows' commit) whose "megatron" provider ran code that dynamo compiled
 * for a symbolic width, which no training step runs (docs/MODEL.md,
 * "Kernel efficiency": kernels a call runs):
 * - the provider is Megatron's bias_swiglu_impl, whose swiglu and
 *   swiglu_back are jit_fuser functions, torch.compile on PyTorch >= 2.2
 *   (megatron/core/jit.py, fusions/fused_bias_swiglu.py);
 * - the script runs every row in one process, the loops pass, provider,
 *   width (utils.run_benchmarks; x_values = 2^10 .. 2^15, ffn_local 1024
 *   first): the forward at ffn_local 1024 compiles swiglu for its shape,
 *   the one at 2048 recompiles it, and dynamo's automatic dynamic shapes
 *   (the default) make the width symbolic; every later call takes that
 *   graph, the backward pass's too (its forward finds the dynamic entry
 *   first: dynamo moves the entry a call hits to the front of the code's
 *   cache, torch/csrc/dynamo/extra_state.cpp), and its swiglu_back goes
 *   the same way from its second width;
 * - the compilation itself is outside the timing (do_bench's first call
 *   is untimed, the row a median), but the kernel compiled for a symbolic
 *   width is not the static one: Inductor cannot prove the sizes
 *   divisible by 16, emits no tt.divisibility hint, and Triton loads 2
 *   bytes at a time instead of 16 (pytorch/pytorch PR #176653: 1.5-3.4x
 *   slower) -- the rows: the forward at 1024 runs as Liger's (23.2 us
 *   against 23.3), from 2048 on 1.53-1.63x slower, the backward 2.4-2.7x.
 * The forward at the first width, the static kernel, is kept.
 */
static int megatron_swiglu_recompiled(const char *kern, const char *shape, int fwd)
{
	const char *p = strstr(shape, "ffn_local=");
	if (strncmp(kern, "megatron_swiglu", 15))
		return 0;
	return !fwd || !p || kbench_num(p + strlen("ffn_local=")) != 1024;
}

static int membound_row(struct kbench *kb, const struct kbench_cols *h, char **f, int nf)
{
	struct kbench_row r;
	const char *kern = kbench_col(h, f, nf, "kernel"),
		   *impl = kbench_col(h, f, nf, "implementation");
	const char *pass = kbench_col(h, f, nf, "pass"), *dt = kbench_col(h, f, nf, "dtype");
	const char *om = kbench_col(h, f, nf, "other_metric"),
		   *ou = kbench_col(h, f, nf, "other_units");
	double tm = kbench_num(kbench_col(h, f, nf, "time_ms")),
	       gb = kbench_num(kbench_col(h, f, nf, "GBps"));
	double es = strstr(dt, "fp32") ? 4 : 2, mult, el;
	int eager, fwd = !strcmp(pass, "fwd"), both = !strcmp(pass, "fwd+bwd");

	memset(&r, 0, sizeof(r));
	snprintf(r.source, sizeof(r.source), "%s", kbench_col(h, f, nf, "source"));
	snprintf(r.impl, sizeof(r.impl), "%s", kbench_col(h, f, nf, "implementation"));
	r.dtype = dtype_of(dt);
	r.cls = KB_MEM;
	if (strstr(kern, "norm"))
		r.mem_kind = HW_MEM_NORM;
	else if (strstr(kern, "entropy") || strstr(kern, "reduction"))
		r.mem_kind = HW_MEM_REDUCTION;
	else
		r.mem_kind = HW_MEM_ELEMENTWISE;
	/* Several kernels where one fused one could do: eager compositions
	 * (the model times one pass; they are reported apart). */
	eager = (strstr(impl, "eager") && !strstr(impl, "PyTorch eager")) ||
		strstr(impl, "HF Llama") || strstr(impl, "unfused") ||
		strstr(impl, "CrossEntropyLoss") ||
		(strstr(impl, "PyTorch eager") && strstr(kern, "norm")) ||
		/* Megatron's "fused" vocab-parallel cross-entropy is a chain of
		 * fp32 passes (cast, max, subtract, exp, sum, divide): several
		 * kernels too */
		(strstr(impl, "Megatron") && strstr(kern, "entropy"));
	if (eager)
		r.cls = KB_MEM_EAGER;
	/* Who wrote the kernel (docs/MODEL.md, "Kernel efficiency":
	 * implementations): Liger's kernels are Triton written by hand;
	 * torch.nn's norms ATen's own (layer_norm_kernel.cu); Megatron's
	 * bias_swiglu a jit_fuser function, torch.compile on PyTorch >= 2.2
	 * (megatron/core/jit.py), as are the rows that say torch.compile. */
	if (strstr(impl, "Liger"))
		r.mem_impl = HW_MEM_IMPL_TRITON;
	else if (!strncmp(impl, "torch.nn.", 9) && r.mem_kind == HW_MEM_NORM)
		r.mem_impl = HW_MEM_IMPL_ATEN;
	else if (strstr(impl, "bias_swiglu") || strstr(impl, "torch.compile"))
		r.mem_impl = HW_MEM_IMPL_COMPILED;
	/* Liger's benchmark scripts time each call with
	 * triton.testing.do_bench: CUDA events around it, the L2 flushed
	 * before (the README's "median of the benchmark's quantiles"). */
	if (strstr(r.source, "Liger-Kernel"))
		r.timing = KB_TIME_EVENTS;
	if (r.timing == KB_TIME_EVENTS && strstr(impl, "bias_swiglu") &&
	    megatron_swiglu_recompiled(kern, kbench_col(h, f, nf, "shape"), fwd)) {
		skip(kb, "Megatron bias_swiglu timed after dynamo's dynamic-shape recompile");
		return 0;
	}
	if (!place(kb, &r, kbench_col(h, f, nf, "gpu")))
		return 0;
	if (!gb && strstr(om, "bandwidth") && kbench_num(kbench_col(h, f, nf, "other_value")) > 0)
		gb = kbench_num(kbench_col(h, f, nf, "other_value")) *
		     (strstr(ou, "GiB") ? 1.073741824 : 1);
	if (gb > 0 && tm > 0) {
		r.bytes = gb * 1e9 * tm / 1e3;
		r.time_s = tm / 1e3;
		/* cudnn-frontend prints the time rounded to 1 us (`%.3f` ms)
		 * and the GB/s (`%.1f`) from the unrounded median: its bytes
		 * over the GB/s give the time to five digits, where the printed
		 * one is off by up to 17 % on a 3 us row (docs/VALIDATION.md,
		 * "Kernel-efficiency model") */
		if (strstr(r.source, "cudnn-frontend") &&
		    (!strcmp(pass, "fwd") || !strcmp(pass, "bwd"))) {
			double k = 1, by = cudnn_norm_bytes(
					  kern, impl, kbench_col(h, f, nf, "shape"), fwd, es, &k);
			if (by > 0) {
				r.bytes = by;
				r.time_s = by / (gb * 1e9);
				r.kernels = k;
			}
		}
		/* torch.compile's norm backward (Inductor, from the
		 * native_layer_norm_backward / rms_norm decompositions): dx
		 * reduces along each row, the weight's gradient along the rows
		 * (sum of dy * x_hat over them), two reductions over different
		 * axes that one generated kernel does not share: the weight's
		 * reads dy and x again, two passes beyond the three a fused
		 * backward moves (as ATen's, below); the file's bytes are the
		 * three (cudnn-frontend's script). */
		if (r.mem_impl == HW_MEM_IMPL_COMPILED && r.mem_kind == HW_MEM_NORM && !fwd &&
		    !both && (el = elements(kbench_col(h, f, nf, "shape"))) > 0)
			r.bytes += 2 * el * es;
		return kbench_add(kb, &r);
	}
	if (gb > 0) {
		/* A bandwidth summary: the time of 1 GiB at it. */
		if (strstr(ou, "Gbps") || strstr(ou, "TFLOPS")) {
			skip(kb, "not a memory bandwidth");
			return 0;
		}
		r.bytes = 1073741824.0;
		r.time_s = r.bytes / (gb * 1e9);
		return kbench_add(kb, &r);
	}
	if (tm <= 0 || (el = elements(kbench_col(h, f, nf, "shape"))) <= 0) {
		skip(kb, "memory-bound row without bytes or time");
		return 0;
	}
	/* Bytes per element counted, by kernel and pass: a pass reads and
	 * writes each tensor once. */
	if (strstr(kern, "swiglu")) /* elements = the 2 ffn input */
		mult = fwd ? 1.5 : both ? 4 : 2.5;
	else if (strstr(kern, "fused_add"))
		mult = fwd ? 4 : both ? 8 : 4;
	else if (strstr(kern, "entropy"))
		mult = fwd ? (strstr(impl, "Liger") ? 2 : 1) : both ? 3 : 2;
	else /* norms, activations: read x, write y; backward dy, x -> dx */
		mult = fwd ? 2 : both ? 5 : 3;
	/* PyTorch's own norms' backward (torch.nn.LayerNorm, torch.nn.RMSNorm:
	 * ATen's layer_norm_kernel.cu) is two kernels, dx from dy and x, then
	 * the weight's (and bias') gradient reading dy and x again: five
	 * passes, not three. */
	if (!fwd && !both && strstr(kern, "norm") && !strncmp(impl, "torch.nn.", 9))
		mult += 2;
	/* Liger's Megatron benchmarks (benchmark_megatron_rms_norm.py,
	 * _swiglu.py, _cross_entropy.py) time "backward" as the forward, a
	 * sum of its output and the backward in one call ("backward includes
	 * forward"): the forward's bytes and the sum's read of the output
	 * too (the sum's gradient is a broadcast view: no bytes). */
	if (!fwd && !both && strstr(r.source, "Liger-Kernel") && !strncmp(kern, "megatron_", 9))
		mult += strstr(kern, "swiglu")	  ? 1.5 + 0.5
			: strstr(kern, "entropy") ? (strstr(impl, "Liger") ? 2 : 1)
						  : 2 + 1;
	if (!fwd && !both && strstr(r.source, "Liger-Kernel") && strstr(impl, "Liger"))
		mult += liger_norm_bwd_passes(kern, kbench_col(h, f, nf, "notes"), es);
	/* Liger's Megatron SwiGLU backward (LigerFusedGateUpSiLUMulFunction
	 * .backward under @ensure_contiguous, src/liger_kernel/ops/swiglu.py)
	 * makes its output gradient contiguous, and the sum's gradient is a
	 * broadcast (stride-0) view: .contiguous() writes it out, one
	 * ffn_local-wide tensor, half an element of the 2 ffn input
	 * (liger_norm_launches counts its launch). */
	if (!fwd && !both && strstr(r.source, "Liger-Kernel") && strstr(impl, "Liger") &&
	    !strncmp(kern, "megatron_swiglu", 15))
		mult += 0.5;
	/* The same in Liger's Megatron RMSNorm benchmark: the sum's broadcast
	 * gradient reaches the norm's backward, which writes it out whole --
	 * Liger's under @ensure_contiguous (LigerRMSNormFunction.backward,
	 * src/liger_kernel/ops/rms_norm.py@27fe47e2), ATen's torch.nn.RMSNorm
	 * by dY.contiguous() before its kernels (layer_norm_kernel.cu,
	 * LayerNormBackwardKernelImpl, whose file holds the fused RMSNorm since
	 * pytorch/pytorch PR #153666): one pass more. */
	if (!fwd && !both && strstr(r.source, "Liger-Kernel") &&
	    !strncmp(kern, "megatron_rms_norm", 17))
		mult += 1;
	if (!both && r.timing == KB_TIME_EVENTS && strstr(impl, "Liger"))
		r.launches = liger_norm_launches(kern, kbench_col(h, f, nf, "notes"), fwd);
	/* Liger's LayerNorm backward (layer_norm_backward, the v0.6.0 the
	 * rows ran: src/liger_kernel/ops/layer_norm.py) launches a persistent
	 * grid, grid = (sm_count,), each program walking ceil(n_rows /
	 * sm_count) rows one after another, and passes no num_warps: Triton's
	 * default, 4 (docs/MODEL.md, "Kernel efficiency": persistent grids). */
	if (!fwd && !both && strstr(impl, "Liger") && !strncmp(kern, "layer_norm", 10)) {
		const char *m = strstr(kbench_col(h, f, nf, "shape"), "M=");
		r.grid_rows = m ? kbench_num(m + 2) : 0;
		r.grid_warps = r.grid_rows > 0 ? 4 : 0;
	}
	r.bytes = el * es * mult;
	r.time_s = tm / 1e3;
	return kbench_add(kb, &r);
}

/* other.csv: the FP8 linear speed-ups (torchao), "M,K,N = 1024, 2048, 1024". */
static int other_row(struct kbench *kb, const struct kbench_cols *h, char **f, int nf)
{
	struct kbench_row r;
	const char *cfg = kbench_col(h, f, nf, "config"), *eq;
	double v[3];
	char *e;

	if (!strstr(kbench_col(h, f, nf, "category"), "fp8 training overhead"))
		return 0; /* not a kernel measurement: not counted */
	memset(&r, 0, sizeof(r));
	r.cls = KB_FP8_LINEAR;
	r.dtype = HW_FP8;
	snprintf(r.source, sizeof(r.source), "%s", kbench_col(h, f, nf, "source"));
	snprintf(r.impl, sizeof(r.impl), "%s", kbench_col(h, f, nf, "item"));
	if (!(eq = strchr(cfg, '='))) {
		skip(kb, "fp8 speed-up without a shape");
		return 0;
	}
	for (int i = 0; i < 3; i++) {
		v[i] = strtod(eq + 1, &e);
		eq = e;
		while (*eq == ',' || *eq == ' ')
			eq++;
		eq--;
	}
	r.b = 1;
	r.m = v[0];
	r.k = v[1];
	r.n = v[2];
	r.time_s = kbench_num(kbench_col(h, f, nf, "value"));
	if (r.m <= 0 || r.k <= 0 || r.n <= 0 || r.time_s <= 0) {
		skip(kb, "fp8 speed-up without a shape");
		return 0;
	}
	if (!place(kb, &r, kbench_col(h, f, nf, "gpu")))
		return 0;
	return kbench_add(kb, &r);
}

/* Our sweep's CUDA-graph timing (scripts/kernel_sweep.py, graph_time):
 * one call, three to size the run and one on a side stream before the
 * graph of `calls` calls is captured, then four replays of it, the first
 * discarded: the timed calls are the last 3 n of 5 + 4 n back to back. */
#define KB_SWEEP_CALLS_BEFORE  5
#define KB_SWEEP_TIMED_REPLAYS 3

/* The clock a GEMM row of our sweep ran at, whatever its dtype: the mean
 * of the clock's fall over its timed replays by their busy time, as rows
 * that state their calls (back_to_back: burst up to HW_SUSTAINED_AFTER_S,
 * the stream clock from HW_THROTTLED_AFTER_S).  Each dtype's stream clock
 * is a settled stream's against the card's true burst (gpu.stream:
 * probe-h100's last 5 s over the same kernel's first chunk at 1,980 MHz;
 * bf16 0.856, fp8 0.851), and no burst table holds GH100's GEMMs where the
 * sweep's rows set them (its fp8 group, its bf16 fixed cost), so its rows
 * take the clock they ran at: the fp8 8192^3 row, 818.1 us, at 0.915 by
 * the rule, 0.928 against the same kernel's burst on the same card (759.4
 * us, probe-h100-mixed's first chunk); bf16's, 1452.6 us, at 0.905, 0.956
 * against its burst (1389.0 us; docs/MODEL.md, "Sustained rates"). */
static void sweep_clock(struct kbench_row *r, double calls)
{
	double t = r->time_s, a = (KB_SWEEP_CALLS_BEFORE + calls) * t,
	       b = a + KB_SWEEP_TIMED_REPLAYS * calls * t;

	r->throttle = 0;
	r->sustained = KB_BURST;
	if (b > HW_SUSTAINED_AFTER_S) {
		r->throttle = (fall_int(b) - fall_int(a)) / (b - a);
		r->sustained = KB_STREAM;
	}
}

/* tests/data/gpu/kernels.csv (scripts/kernel_sweep.py). */
static int ours_row(struct kbench *kb, const struct kbench_cols *h, char **f, int nf,
		    const char *path)
{
	struct kbench_row r;
	const char *cls = kbench_col(h, f, nf, "class"), *op = kbench_col(h, f, nf, "op");
	const char *be = kbench_col(h, f, nf, "backend"), *pass = kbench_col(h, f, nf, "pass");
	double t = kbench_num(kbench_col(h, f, nf, "time_us")) / 1e6;

	memset(&r, 0, sizeof(r));
	snprintf(r.source, sizeof(r.source), "%s", path);
	snprintf(r.impl, sizeof(r.impl), "%s", be);
	place(kb, &r, "H100 SXM");
	r.dtype = dtype_of(kbench_col(h, f, nf, "dtype"));
	r.time_s = t;
	if (t <= 0 || r.dtype < 0) {
		skip(kb, "no time");
		return 0;
	}
	/* A steady stream of one kernel (a CUDA graph's replays, or
	 * back-to-back calls between two events, each row after the last):
	 * settled where the kernel itself runs 1 ms or more (hw.h). */
	r.sustained = t >= HW_SETTLED_KERNEL_S ? KB_STREAM : KB_BURST;
	r.throttle = r.sustained == KB_STREAM;
	if (!strcmp(cls, "gemm")) {
		r.cls = KB_GEMM;
		r.b = 1;
		r.m = kbench_num(kbench_col(h, f, nf, "M"));
		r.n = kbench_num(kbench_col(h, f, nf, "N"));
		r.k = kbench_num(kbench_col(h, f, nf, "K"));
		/* CUDA-graph replays of back-to-back calls: the kernel alone
		 * on the device, as in a step */
		if (!strcmp(kbench_col(h, f, nf, "timing"), "graph")) {
			double calls = kbench_num(kbench_col(h, f, nf, "calls"));
			r.timing = KB_TIME_DEVICE;
			if (calls > 0)
				sweep_clock(&r, calls);
		}
	} else if (!strcmp(cls, "attention")) {
		if (!strcmp(be, "efficient") || !strcmp(be, "math")) {
			skip(kb, "not FlashAttention-style (memory-efficient or math backend)");
			return 0;
		}
		r.cls = !strcmp(pass, "bwd") ? KB_ATTN_BWD : KB_ATTN_FWD;
		r.b = kbench_num(kbench_col(h, f, nf, "batch"));
		r.heads = kbench_num(kbench_col(h, f, nf, "heads"));
		r.sq = r.skv = kbench_num(kbench_col(h, f, nf, "seq"));
		r.d = kbench_num(kbench_col(h, f, nf, "head_dim"));
		r.causal = !strcmp(kbench_col(h, f, nf, "causal"), "1");
		r.fa2 = !strcmp(be, "flash"); /* PyTorch's flash backend is FA2 */
		snprintf(r.source + strlen(r.source), sizeof(r.source) - strlen(r.source), " (%s)",
			 be);
	} else if (!strcmp(cls, "memory")) {
		r.cls = KB_MEM;
		r.dtype = HW_BF16;
		r.bytes = kbench_num(kbench_col(h, f, nf, "bytes"));
		/* each the median of CUDA-graph replays of back-to-back calls:
		 * the kernels alone on the device */
		if (!strcmp(kbench_col(h, f, nf, "timing"), "graph"))
			r.timing = KB_TIME_DEVICE;
		r.mem_kind = !strcmp(op, "layernorm_fwd")    ? HW_MEM_NORM
			     : !strcmp(op, "fp8_amax_eager") ? HW_MEM_REDUCTION
							     : HW_MEM_ELEMENTWISE;
		if (!strcmp(op, "fp8_amax_eager"))
			r.cls = KB_MEM_EAGER; /* |x| then amax: two kernels */
		/* torch.nn.LayerNorm's forward (scripts/kernel_sweep.py): ATen's
		 * layer_norm_kernel.cu, as the public torch.nn norm rows are
		 * (membound_row) */
		if (r.mem_kind == HW_MEM_NORM)
			r.mem_impl = HW_MEM_IMPL_ATEN;
	} else {
		skip(kb, "unknown class");
		return 0;
	}
	return kbench_add(kb, &r);
}

int kbench_slurp(const char *path, char **out, struct prism_err *err)
{
	FILE *fp;
	char *buf = NULL;
	struct stat sb;
	long n = -1;
	int rc;

	*out = NULL;
	/* A FIFO or a device would block (even opening it) or never end. */
	if (stat(path, &sb) || !S_ISREG(sb.st_mode))
		return prism_err_set(err, PRISM_EIO, "%s: not a regular file", path);
	if (!(fp = fopen(path, "rb")))
		return prism_err_set(err, PRISM_EIO, "%s: cannot open", path);
	if (fseek(fp, 0, SEEK_END) || (n = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) ||
	    !(buf = prism_malloc((size_t)n + 1)) || fread(buf, 1, (size_t)n, fp) != (size_t)n) {
		fclose(fp);
		free(buf);
		return n >= 0 && !buf ? prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path)
				      : prism_err_set(err, PRISM_EIO, "%s: cannot read", path);
	}
	fclose(fp);
	buf[n] = '\0';
	if (strlen(buf) != (size_t)n) {
		rc = prism_err_set(err, PRISM_EFORMAT, "%s: byte %zu: a NUL byte in a text file",
				   path, strlen(buf));
		free(buf);
		return rc;
	}
	*out = buf;
	return 0;
}

/* One measurement file into kb (a struct kbench: kbench_files' reader). */
static int read_file(void *ctx, const char *path, struct prism_err *err)
{
	struct kbench *kb = ctx;
	char *buf = NULL, *p, *f[KBENCH_MAX_FIELDS];
	struct kbench_cols h;
	int rc = 0, nf, kind, line = 1;

	if ((rc = kbench_slurp(path, &buf, err)))
		return rc;
	p = buf;
	h.n = kbench_record(&p, h.name, KBENCH_MAX_FIELDS);
	if (h.n < 3) {
		free(buf);
		return prism_err_set(err, PRISM_EFORMAT, "%s:1: not a CSV with a header", path);
	}
	if (has_col(&h, "time_us") && has_col(&h, "class"))
		kind = 3;
	else if (has_col(&h, "seqlen_q"))
		kind = 1;
	else if (has_col(&h, "M") && has_col(&h, "tflops"))
		kind = 0;
	else if (has_col(&h, "GBps") && has_col(&h, "kernel"))
		kind = 2;
	else if (has_col(&h, "category") && has_col(&h, "config"))
		kind = 4;
	else
		kind = -1; /* collectives, other.csv: not kernel times */
	while (kind >= 0 && !rc && (nf = kbench_record(&p, f, KBENCH_MAX_FIELDS)) >= 0) {
		line++;
		if (nf < h.n) {
			if (nf <= 1)
				continue; /* a blank line */
			rc =
			    prism_err_set(err, PRISM_EFORMAT, "%s:%d: %d fields, the header has %d",
					  path, line, nf, h.n);
			break;
		}
		rc = kind == 0	 ? gemm_row(kb, &h, f, nf)
		     : kind == 1 ? attn_row(kb, &h, f, nf)
		     : kind == 2 ? membound_row(kb, &h, f, nf)
		     : kind == 4 ? other_row(kb, &h, f, nf)
				 : ours_row(kb, &h, f, nf, path);
		if (rc)
			rc = prism_err_set(err, PRISM_ENOMEM, "out of memory");
	}
	free(buf);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int kbench_files(const char *path, const char *prefix,
		 int (*read)(void *ctx, const char *file, struct prism_err *err), void *ctx,
		 struct prism_err *err)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	char *names[KBENCH_MAX_FILES];
	int n = 0, rc = 0;

	if (stat(path, &st))
		return prism_err_set(err, PRISM_EIO, "%s: no such file or directory", path);
	if (!S_ISDIR(st.st_mode))
		return read(ctx, path, err);
	if (!(d = opendir(path)))
		return prism_err_set(err, PRISM_EIO, "%s: cannot open the directory", path);
	while ((e = readdir(d)) && n < KBENCH_MAX_FILES && !rc) {
		size_t l = strlen(e->d_name);
		if (l > 4 && !strcmp(e->d_name + l - 4, ".csv") &&
		    !strncmp(e->d_name, prefix, strlen(prefix)) &&
		    !(names[n++] = prism_strdup(e->d_name))) {
			n--;
			rc = prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
		}
	}
	closedir(d);
	/* In name order, so that the rows (and every report) are the same
	 * whatever order the directory lists them in. */
	if (n)
		qsort(names, (size_t)n, sizeof(*names), cmp_str);
	for (int i = 0; i < n; i++) {
		char full[1024];
		snprintf(full, sizeof(full), "%s/%s", path, names[i]);
		if (!rc)
			rc = read(ctx, full, err);
		free(names[i]);
	}
	return rc;
}

int kbench_read(struct kbench *kb, const char *path, struct prism_err *err)
{
	return kbench_files(path, "", read_file, kb, err);
}

void kbench_release(struct kbench *kb)
{
	free(kb->rows);
	memset(kb, 0, sizeof(*kb));
}

/* ---- the model on a row --------------------------------------------------- */

double kbench_rate(const struct kbench_row *r)
{
	double f;
	if (r->cls != KB_GEMM || !(r->time_s > 0))
		return 0;
	f = r->best_square ? 2 * 4096.0 * 4096 * 4096 : 2 * r->b * r->m * r->n * r->k;
	return f / r->time_s;
}

static double flat(const struct hw_profile *hw, const struct kbench_row *r)
{
	int dt = r->dtype == HW_FP16 ? HW_BF16 : r->dtype;
	double pk = dt >= 0 ? hw->peak_flops[dt] : 0;
	if (r->cls == KB_GEMM)
		return pk > 0 ? 3e-6 + 2 * r->b * r->m * r->n * r->k / (pk * 0.7) : 0;
	if (r->cls == KB_MEM || r->cls == KB_MEM_EAGER)
		return 3e-6 + r->bytes / (hw->hbm_Bps * 0.7);
	{
		double fl = kperf_attn_flops(0, r->b, r->heads, r->sq, r->skv, r->d, r->causal);
		/* synth's flash kernels: 4 b s^2 h forward (no causal halving),
		 * twice that backward */
		if (r->causal)
			fl *= 2;
		fl *= r->cls == KB_ATTN_FWD ? 1 : r->cls == KB_ATTN_BWD ? 2 : 3;
		return pk > 0 ? 3e-6 * (r->cls == KB_ATTN_BOTH ? 2 : 1) + fl / (pk * 0.5) : 0;
	}
}

int kbench_gemm_key(const struct kbench_row *r)
{
	if (r->dtype == HW_FP8 && r->blockwise)
		return HW_GEMM_FP8_BLOCK;
	return r->dtype == HW_FP16 ? HW_BF16 : r->dtype;
}

static double gemm_time(const struct hw_profile *hw, const struct kbench_row *r)
{
	int sched = r->waves ? HW_SCHED_WAVES : hw->k.sched, key = kbench_gemm_key(r);
	if (r->best_square) {
		/* The best TFLOP/s over the source's square sizes, as a time
		 * of 4096^3. */
		double best = 0, x = 256;
		for (int i = 0; r->n_sq ? i < r->n_sq : x <= r->sq_max * 1.001; i++) {
			double s = r->n_sq ? r->sq_set[i] : floor(x / 8) * 8;
			double t = kperf_gemm_plan_sched(hw, key, 1, s, s, s, sched, NULL);
			double tf = t > 0 ? 2 * s * s * s / t : 0;
			if (tf > best)
				best = tf;
			x *= 1.189207115; /* 2^(1/4) */
		}
		return best > 0 ? 2 * 4096.0 * 4096 * 4096 / best : 0;
	}
	if (r->grouped)
		return kperf_grouped_s(hw, key, r->b, r->m, r->n, r->k);
	return kperf_gemm_plan_sched(hw, key, r->b, r->m, r->n, r->k, sched, NULL);
}

/*
 * A linear layer's speed-up in fp8 as torchao's rows measure it
 * (benchmarks/float8/float8_roofline.py at the rows' commit: the summed
 * device time of the kernels of a compiled LNLinearSigmoid's forward and
 * backward, its input requiring a gradient): a layer norm without affine
 * parameters (M x K), the linear (K -> N, no bias), a sigmoid, in bf16
 * against the same with a Float8Linear.  Both sides: the norm's forward
 * (2 bytes a value read, 2 written) and backward (dy and x read, dx
 * written: 6), the sigmoid's forward (4) and backward (dy and y read, dx
 * written: 6), Inductor's Triton kernels, timed at the device floors;
 * the three GEMMs (forward, input and weight gradients) in bf16 or fp8;
 * the fp8 side adds the casts of the input, the weight and the output
 * gradient as the current recipe runs under torch.compile
 * (kperf_lowp_casts: tensorwise dynamic scaling).  The flat model: the
 * GEMMs at 70 % of each dtype's peak + 3 us, nothing else.
 */
static double fp8_speedup(const struct hw_profile *hw, const struct kbench_row *r, int flat_model)
{
	double m = r->m, n = r->n, k = r->k, b16 = 0, f8 = 0, rest;
	const double shp[3][3] = {{m, n, k}, {m, k, n}, {k, n, m}};
	if (hw->peak_flops[HW_FP8] <= 0)
		return 0;
	for (int i = 0; i < 3; i++) {
		if (flat_model) {
			double fl = 2 * shp[i][0] * shp[i][1] * shp[i][2];
			b16 += 3e-6 + fl / (0.7 * hw->peak_flops[HW_BF16]);
			f8 += 3e-6 + fl / (0.7 * hw->peak_flops[HW_FP8]);
		} else {
			b16 += kperf_gemm_s(hw, HW_BF16, 1, shp[i][0], shp[i][1], shp[i][2]);
			f8 += kperf_gemm_s(hw, HW_FP8, 1, shp[i][0], shp[i][1], shp[i][2]);
		}
	}
	if (!flat_model) {
		rest = kperf_mem_s(hw, HW_MEM_NORM, 4 * m * k) +
		       kperf_mem_s(hw, HW_MEM_NORM, 6 * m * k) +
		       kperf_mem_s(hw, HW_MEM_ELEMENTWISE, 4 * m * n) +
		       kperf_mem_s(hw, HW_MEM_ELEMENTWISE, 6 * m * n);
		b16 += rest;
		f8 += rest +
		      kperf_lowp_cast_s(hw, HW_FP8, LAYOUT_FP8_CURRENT, LAYOUT_EXEC_COMPILED, 0,
					m * k) +
		      kperf_lowp_cast_s(hw, HW_FP8, LAYOUT_FP8_CURRENT, LAYOUT_EXEC_COMPILED, 1,
					k * n) +
		      kperf_lowp_cast_s(hw, HW_FP8, LAYOUT_FP8_CURRENT, LAYOUT_EXEC_COMPILED, 0,
					m * n);
	}
	return f8 > 0 ? b16 / f8 : 0;
}

/* The parameters a row's dtype is timed with: fp16 runs at bf16's
 * tensor-core rate. */
static int key_dtype(int d)
{
	return d == HW_FP16 ? HW_BF16 : d;
}

/* The L2 flush triton.testing.do_bench runs before each call's start
 * event: a 256 MiB tensor zeroed (`cache.zero_()`), an elementwise write. */
#define KBENCH_FLUSH_BYTES 268435456.0

/* A memory-bound row's time on the device, with what timing it between
 * CUDA events adds (events_us). */
static double mem_device_s(const struct hw_profile *hw, const struct kbench_row *r)
{
	return (r->grid_rows > 0
		    ? kperf_mem_grid_s(hw, r->mem_kind, r->mem_impl, r->bytes, r->grid_rows,
				       r->grid_warps)
		    : kperf_mem_kernels_s(hw, r->mem_kind, r->mem_impl, r->bytes, r->kernels)) +
	       (r->timing == KB_TIME_EVENTS ? hw->k.mem_events_s[r->mem_kind] : 0);
}

/* The host's floor under a Python-level call timed by do_bench: its
 * launches at the kind's host_us, less the flush the GPU runs while the
 * host works (do_bench launches the flush, records the start event behind
 * it and calls the function; a host slower than the GPU finds it idle, so
 * the flush hides as much of the call's host time).  0 where the row's
 * launches are not counted. */
static double mem_host_floor_s(const struct hw_profile *hw, const struct kbench_row *r)
{
	if (r->timing != KB_TIME_EVENTS || !(r->launches > 0))
		return 0;
	return r->launches * hw->k.mem_host_s[r->mem_kind] -
	       kperf_mem_s(hw, HW_MEM_ELEMENTWISE, KBENCH_FLUSH_BYTES);
}

static double mem_time(const struct hw_profile *hw, const struct kbench_row *r)
{
	double d = mem_device_s(hw, r), f = mem_host_floor_s(hw, r);
	return f > d ? f : d;
}

double kbench_predict(const struct hw_profile *hw, const struct kbench_row *row, int flat_model)
{
	struct kbench_row q = *row;
	const struct kbench_row *r = &q;
	double clock = row->sustained == KB_STEP ? hw_step_clock(hw, row->step_dtype)
		       : row->sustained == KB_STREAM
			   ? 1 - row->throttle * (1 - hw_stream(hw, row->dtype))
			   : 1;
	if (!flat_model && hw_clock(hw) != clock) {
		/* The row's clock: a copy (1 KB on the stack, no allocation). */
		struct hw_profile at = *hw;
		at.clock = clock;
		return kbench_predict(&at, row, 0);
	}
	if (r->cls == KB_FP8_LINEAR)
		return fp8_speedup(hw, r, flat_model);
	if (flat_model)
		return flat(hw, r);
	q.dtype = key_dtype(q.dtype);
	switch (r->cls) {
	case KB_GEMM:
		return gemm_time(hw, r) + (r->timing == KB_TIME_ISOLATED
					       ? hw->k.gemm_isolated_s[kbench_gemm_key(r)]
					       : 0);
	case KB_ATTN_FWD:
	case KB_ATTN_BWD:
		return kperf_attn_win_s(hw, r->dtype, r->cls == KB_ATTN_BWD, r->b, r->heads, r->sq,
					r->skv, r->d, r->causal, r->window);
	case KB_ATTN_BOTH:
		return kperf_attn_win_s(hw, r->dtype, 0, r->b, r->heads, r->sq, r->skv, r->d,
					r->causal, r->window) +
		       kperf_attn_win_s(hw, r->dtype, 1, r->b, r->heads, r->sq, r->skv, r->d,
					r->causal, r->window);
	default:
		return mem_time(hw, r);
	}
}

/* ---- fitting --------------------------------------------------------------- */

struct fitctx {
	struct hw_profile *const *hws;
	const struct kbench_row *rows;
	const size_t *idx;
	size_t n;
	int cls, dtype, full;
	int floor;	/* GEMM: the kernel's fixed cost alone (x[0], its log) */
	int out;	/* GEMM: the group states out_eff (x[7], kperf.h) */
	double cap;	/* GEMM: the best rate the rows measured (FLOP/s) */
	double acap[2]; /* attention: forward's and backward's, FlashAttention's
			 * count (0: no row of the pass) */
};

static double sigm(double x)
{
	return 1 / (1 + exp(-x));
}

/* logit of part / whole, 0 / 0 being 0: a tile factor at the 0.05 floor
 * (a fit that pushed the 64x128 class there) makes the next one's ratio
 * 0 / 0, which would start the simplex from NaN. */
static double ratio(double part, double whole)
{
	return whole > 0 ? part / whole : 0;
}

static double logit(double p)
{
	if (!(p >= 1e-6)) /* NaN too */
		p = 1e-6;
	if (p > 1 - 1e-6)
		p = 1 - 1e-6;
	return log(p / (1 - p));
}

/* Parameters x (unconstrained) into every profile of the fit. */
static void apply(const struct fitctx *c, const double *x)
{
	for (size_t i = 0; i < c->n; i++) {
		struct hw_profile *hw = c->hws[i];
		double pk = hw->peak_flops[c->cls == KB_GEMM ? hw_gemm_dtype(c->dtype) : c->dtype];
		if (c->cls == KB_GEMM) {
			struct hw_gemm *g = &hw->k.gemm[c->dtype];
			if (c->floor) {
				g->overhead_s = exp(x[0]);
				continue;
			}
			g->flops = (c->cap < pk ? c->cap : pk) * sigm(x[0]);
			if (c->full) {
				g->tile_s = exp(x[1]);
				g->overhead_s = exp(x[2]);
				/* 1 >= 128x128 >= 64x128 >= 64x64 >= 0.05 */
				g->tile_eff[0] = 0.05 + 0.95 * sigm(x[3]);
				g->tile_eff[1] = 0.05 + (g->tile_eff[0] - 0.05) * sigm(x[4]);
				g->tile_eff[2] = 0.05 + (g->tile_eff[1] - 0.05) * sigm(x[5]);
				g->mem_eff = sigm(x[6]);
				if (c->out)
					g->out_eff = 0.01 + 0.99 * sigm(x[7]);
			}
		} else {
			struct hw_attn *a = &hw->k.attn[c->dtype];
			double f = 1;
			if (c->full) {
				a->tile_s[0] = exp(x[2]);
				a->tile_s[1] = exp(x[3]);
				a->overhead_s = exp(x[4]);
				a->d64 = 0.05 + 1.95 * sigm(x[5]);
				a->d256 = 0.05 + 1.95 * sigm(x[6]);
			}
			/* A pass's best rate over any shape is its peak times the
			 * best head-dim factor (kperf_attn_min_s): at most the best
			 * the pass's rows measured. */
			f = a->d64 > f ? a->d64 : f;
			f = a->d256 > f ? a->d256 : f;
			for (int q = 0; q < 2; q++) {
				double lim =
				    c->acap[q] > 0 && c->acap[q] / f < pk ? c->acap[q] / f : pk;
				a->flops[q] = lim * sigm(x[q]);
			}
		}
	}
}

static double loss(const gsl_vector *v, void *p)
{
	const struct fitctx *c = p;
	double s = 0;
	apply(c, v->data);
	for (size_t i = 0; i < c->n; i++) {
		const struct kbench_row *r = &c->rows[c->idx[i]];
		double t = kbench_predict(c->hws[i], r, 0);
		if (!(t > 0))
			return 1e30;
		s += log(t / r->time_s) * log(t / r->time_s);
	}
	return s / (double)c->n;
}

/* A head-dim factor no row of an attention fit measures (d64: no head
 * dim below 128; d256: none above) does not move the loss, so the simplex
 * leaves it wherever it drifted (H100's fp8 rows, all at 128, had taken
 * both to 2.0, their bound): it takes its prior instead. */
static void head_dim_priors(const struct fitctx *c)
{
	int lo = 0, hi = 0;
	for (size_t i = 0; i < c->n; i++) {
		double d = c->rows[c->idx[i]].d;
		lo |= d < 128;
		hi |= d > 128;
	}
	for (size_t i = 0; i < c->n; i++) {
		struct hw_attn *a = &c->hws[i]->k.attn[c->dtype];
		if (!lo)
			a->d64 = HW_ATTN_D64_PRIOR;
		if (!hi)
			a->d256 = HW_ATTN_D256_PRIOR;
	}
}

static void minimise(struct fitctx *c, double *x, size_t np)
{
	const gsl_multimin_fminimizer_type *T = gsl_multimin_fminimizer_nmsimplex2;
	gsl_multimin_fminimizer *m = gsl_multimin_fminimizer_alloc(T, np);
	gsl_multimin_function fn = {loss, np, c};
	gsl_vector *v = gsl_vector_alloc(np), *step = gsl_vector_alloc(np);

	if (!m || !v || !step)
		goto out;
	for (size_t i = 0; i < np; i++) {
		gsl_vector_set(v, i, x[i]);
		gsl_vector_set(step, i, 0.5);
	}
	gsl_multimin_fminimizer_set(m, &fn, v, step);
	/* Restarted once: the simplex can collapse on the kinks of the
	 * tile choice. */
	for (int round = 0; round < 2; round++) {
		for (int it = 0; it < 3000; it++) {
			if (gsl_multimin_fminimizer_iterate(m))
				break;
			if (gsl_multimin_test_size(gsl_multimin_fminimizer_size(m), 1e-5) !=
			    GSL_CONTINUE)
				break;
		}
		gsl_multimin_fminimizer_set(m, &fn, gsl_multimin_fminimizer_x(m), step);
	}
	for (size_t i = 0; i < np; i++)
		x[i] = gsl_vector_get(gsl_multimin_fminimizer_x(m), i);
out:
	apply(c, x);
	gsl_vector_free(v);
	gsl_vector_free(step);
	gsl_multimin_fminimizer_free(m);
}

#define KBENCH_MEM_MAX_OVERHEAD_S 10e-6

/* A memory-bound kind's line t = c0 + x / e, weighted least squares
 * (w = 1/t^2) over m points; an overhead outside 0..10 us is the line
 * bending to rows the one-pass byte count does not describe (several
 * passes, caches): the slope refitted with it held there.  0, or -1
 * with fewer than 3 points or no positive slope. */
static int mem_line(const double *bx, const double *by, const double *bw, size_t m, double *c0,
		    double *e)
{
	double c1, v00, v01, v11, ss;
	if (m < 3 || gsl_fit_wlinear(bx, 1, bw, 1, by, 1, m, c0, &c1, &v00, &v01, &v11, &ss) ||
	    !(c1 > 0))
		return -1;
	*e = 1 / c1;
	if (*c0 < 0 || *c0 > KBENCH_MEM_MAX_OVERHEAD_S) {
		double num_ = 0, den = 0;
		*c0 = *c0 < 0 ? 0 : KBENCH_MEM_MAX_OVERHEAD_S;
		for (size_t i = 0; i < m; i++) {
			num_ += bw[i] * bx[i] * (by[i] - *c0);
			den += bw[i] * bx[i] * bx[i];
		}
		*e = num_ > 0 ? den / num_ : *e;
	}
	return 0;
}

/*
 * A GEMM dtype's rows timed two ways (docs/MODEL.md, "Kernel efficiency":
 * GEMMs' fixed cost): every parameter from the rows not timed on the
 * device alone, holding the isolated rows' extra (gemm_isolated_s), so
 * that their intercept is overhead + extra as before; then the kernel's
 * fixed cost on the device (overhead_s) alone from the nd device-timed
 * rows (a stream of calls, as in a step; the mean squared log error, the
 * other parameters held), and the extra the rest of that intercept (0
 * where the device's fixed cost reaches it, which is then held there).
 * Either way the rows that are not device-timed are predicted as before:
 * the shipped parameters stay a fixed point of a fit on the shared rows
 * alone.  The rows used.
 */
static size_t gemm_floor_fit(struct hw_profile *const *hws, const struct kbench_row *rows,
			     const size_t *idx, size_t n, size_t nd, int dtype)
{
	size_t *pi = prism_malloc(n * sizeof(*pi)), np = 0, md = 0;
	struct hw_profile **ph = prism_malloc(n * sizeof(*ph));
	struct fitctx c = {NULL, rows, NULL, nd, KB_GEMM, dtype, 0, 1, 0, 0, {0, 0}};
	double total, x[1];

	if (!pi || !ph) {
		free(pi);
		free(ph);
		return 0;
	}
	/* the device-timed rows after the rest, in the same arrays */
	for (size_t i = 0; i < n; i++)
		if (rows[idx[i]].timing != KB_TIME_DEVICE) {
			pi[np] = idx[i];
			ph[np++] = hws[i];
		}
	for (size_t i = 0; i < n; i++)
		if (rows[idx[i]].timing == KB_TIME_DEVICE) {
			pi[np + md] = idx[i];
			ph[np + md++] = hws[i];
		}
	(void)kbench_fit(ph, rows, pi, np, KB_GEMM, dtype);
	total = ph[0]->k.gemm[dtype].overhead_s + ph[0]->k.gemm_isolated_s[dtype];
	/* The family's parameters (a device-timed row's profile may have no
	 * other row) before its fixed cost is fitted on its own rows. */
	for (size_t i = np; i < n; i++) {
		ph[i]->k.gemm[dtype] = ph[0]->k.gemm[dtype];
		ph[i]->k.gemm_isolated_s[dtype] = ph[0]->k.gemm_isolated_s[dtype];
	}
	c.hws = ph + np;
	c.idx = pi + np;
	x[0] = log(total > 0 ? total : 1e-6);
	minimise(&c, x, 1);
	{
		double floor_s = ph[np]->k.gemm[dtype].overhead_s;
		if (floor_s > total)
			floor_s = total;
		for (size_t i = 0; i < n; i++) {
			ph[i]->k.gemm[dtype].overhead_s = floor_s;
			ph[i]->k.gemm_isolated_s[dtype] = total - floor_s;
		}
	}
	free(pi);
	free(ph);
	return n;
}

/* A row the host's floor sets (mem_time): it measures the host, not the
 * bandwidth, and stays out of the line. */
static int host_bound(const struct hw_profile *hw, const struct kbench_row *r)
{
	return mem_host_floor_s(hw, r) > mem_device_s(hw, r);
}

/* host_bound with a persistent grid's row timed as any kernel of its
 * implementation (kperf_mem_impl_s): the kind's line (mem_fit_line), the
 * bandwidth of every step's kernel of the kind, is fitted on the rows it
 * was fitted on before the grid's rule (a measurement's only), so that
 * the rule moves no step (docs/MODEL.md, "Kernel efficiency": persistent
 * grids). */
static int host_bound_flat(const struct hw_profile *hw, const struct kbench_row *r)
{
	struct kbench_row q = *r;
	q.grid_rows = 0;
	return host_bound(hw, &q);
}

/* A persistent grid's row whose warps, not the bandwidth, set its time
 * (kperf_mem_grid_s): it measures the warps' rate and stays out of the
 * line and the implementations' bandwidths. */
static int grid_bound(const struct hw_profile *hw, const struct kbench_row *r)
{
	int k = r->mem_kind;
	double e;
	if (!(r->grid_rows > 0) || !(hw->k.mem_warp_Bps[k] > 0) || !(hw->k.sms > 0))
		return 0;
	e = r->mem_impl > HW_MEM_IMPL_ANY && hw->k.mem_impl_eff[k][r->mem_impl] > 0
		? hw->k.mem_impl_eff[k][r->mem_impl]
		: hw->k.mem_eff[k];
	return r->grid_warps * hw->k.mem_warp_Bps[k] < hw->hbm_Bps * e / hw->k.sms;
}

/* A memory-bound kind's bandwidth, floor and events (kbench_fit) on the
 * rows the host's floor does not set; the rows it used. */
static size_t mem_fit_line(struct hw_profile *const *hws, const struct kbench_row *rows,
			   const size_t *idx, size_t n, int dtype)
{
	/* t = k a + bytes / (HBM e), k the kernels a row's call runs
	 * (kbench_row.kernels): a weighted line (relative error) over
	 * the rows of one HBM bandwidth (the first row's) that are not
	 * timed on the device alone; a, the kernel's floor on the
	 * device, from the device-timed rows' own line where there are
	 * three or more; what the event-timed rows' intercept holds
	 * beyond it is the events' cost (mem_events_s), or, without
	 * device-timed rows, the profile's events' cost is held and the
	 * floor is the rest (a fixed point of the fit either way). */
	double bx[4096] = {0}, by[4096] = {0}, bw[4096] = {0}, dx[4096], dy[4096], dw[4096], c0, e,
	       hbm = hws[0]->hbm_Bps, ev_s = hws[0]->k.mem_events_s[dtype];
	size_t m = 0, md = 0, mev = 0;
	for (size_t i = 0; i < n; i++) {
		const struct kbench_row *r = &rows[idx[i]];
		int dev = r->timing == KB_TIME_DEVICE;
		double k = r->kernels > 1 ? r->kernels : 1;
		if (hws[i]->hbm_Bps != hbm || (dev ? md : m) >= 4096 || host_bound_flat(hws[i], r))
			continue;
		/* a call of k kernels, t = k a + x / e: the line of t / k
		 * against x / k, weighted k^2 / t^2, is the same least
		 * squares (one kernel: the row as it is) */
		(dev ? dx : bx)[dev ? md : m] = r->bytes / hbm / k;
		(dev ? dy : by)[dev ? md : m] = r->time_s / k;
		(dev ? dw : bw)[dev ? md : m] = k * k / (r->time_s * r->time_s);
		if (dev) {
			md++;
		} else {
			mev += r->timing == KB_TIME_EVENTS;
			m++;
		}
	}
	if (!m && md) {
		/* device-timed rows alone: their line is the kind's */
		memcpy(bx, dx, md * sizeof(*bx));
		memcpy(by, dy, md * sizeof(*by));
		memcpy(bw, dw, md * sizeof(*bw));
		m = md, md = 0;
	}
	if (mem_line(bx, by, bw, m, &c0, &e) == 0) {
		double floor_s = mev ? c0 - ev_s : c0, de;
		if (md >= 3 && mem_line(dx, dy, dw, md, &floor_s, &de) == 0)
			ev_s = mev && c0 > floor_s ? c0 - floor_s : 0;
		for (size_t i = 0; i < n; i++) {
			hws[i]->k.mem_eff[dtype] = e > 1 ? 1 : e;
			hws[i]->k.mem_overhead_s[dtype] = floor_s > 0 ? floor_s : 0;
			hws[i]->k.mem_events_s[dtype] = mev ? ev_s : 0;
		}
	} else if (m >= 1) {
		/* Large-size points only: the bandwidth they reach. */
		double s = 0;
		for (size_t i = 0; i < m; i++)
			s += bx[i] / by[i];
		for (size_t i = 0; i < n; i++) {
			double be = s / (double)m;
			hws[i]->k.mem_eff[dtype] = be > 1 ? 1 : be;
		}
	}
	return m + md;
}

/* Each implementation's own bandwidth of the kind (mem_impl_eff), on
 * its rows the host's floor does not set, with the kind's floor and
 * events held: the slope 1 / e of t = c + x / e (x = bytes / HBM) by
 * least squares in relative error, 1 / e = sum(x (t - c) / t^2) /
 * sum(x^2 / t^2).
 * An implementation with fewer than 3 such rows keeps the kind's (0). */
static void mem_fit_impl(struct hw_profile *const *hws, const struct kbench_row *rows,
			 const size_t *idx, size_t n, int dtype)
{
	/* (multi_tensor's is measured on traces' optimizer kernels, no
	 * kernel row: the profile's kept) */
	for (int j = HW_MEM_IMPL_ANY + 1; j < HW_MEM_IMPL_MULTI_TENSOR; j++) {
		double sxy = 0, sxx = 0, e = 0;
		size_t m = 0;
		for (size_t i = 0; i < n; i++) {
			const struct kbench_row *r = &rows[idx[i]];
			double c, x, t = r->time_s;
			if (r->mem_impl != j || !(t > 0) || host_bound(hws[i], r) ||
			    grid_bound(hws[i], r))
				continue;
			x = r->bytes / hws[i]->hbm_Bps;
			c = kperf_mem_kernels_s(hws[i], dtype, j, 0, r->kernels) +
			    (r->timing == KB_TIME_EVENTS ? hws[i]->k.mem_events_s[dtype] : 0);
			sxy += x * (t - c) / (t * t);
			sxx += x * x / (t * t);
			m++;
		}
		if (m >= 3 && sxy > 0 && sxx > 0) {
			e = sxx / sxy;
			e = e > 1 ? 1 : e;
		}
		for (size_t i = 0; i < n; i++)
			hws[i]->k.mem_impl_eff[dtype][j] = e;
	}
}

/* The kind's warp rate in a persistent grid (mem_warp_Bps): least
 * squares in relative error of the grid's rows, each timed as mem_time
 * (the host's floor with it), over 0.01..50 GB/s (0.01, then 0.0001
 * about the best), or none (0) where that fits them as well; the kind's
 * line and floor held.  Fewer than 3 such rows: none.  The number of
 * rows. */
static size_t mem_fit_warp(struct hw_profile *const *hws, const struct kbench_row *rows,
			   const size_t *idx, size_t n, int dtype)
{
	size_t k = 0;
	double best = -1, bw = 0;
	for (size_t i = 0; i < n; i++)
		k += rows[idx[i]].grid_rows > 0 && rows[idx[i]].time_s > 0;
	if (k < 3) {
		for (size_t i = 0; i < n; i++)
			hws[i]->k.mem_warp_Bps[dtype] = 0;
		return 0;
	}
	for (int pass = 0; pass < 3; pass++) {
		double lo = pass == 1 ? bw - 0.01e9 : 0.01e9, step = pass == 1 ? 0.0001e9 : 0.01e9;
		int steps = pass == 0 ? 4999 : pass == 1 ? 200 : 0;
		for (int j = 0; j <= steps; j++) {
			/* the last pass: none (no warp bound) */
			double w = pass == 2 ? 0 : lo + j * step, ss = 0;
			if (pass < 2 && w <= 0)
				continue;
			for (size_t i = 0; i < n; i++) {
				const struct kbench_row *r = &rows[idx[i]];
				double e;
				if (!(r->grid_rows > 0) || !(r->time_s > 0))
					continue;
				hws[i]->k.mem_warp_Bps[dtype] = w;
				e = mem_time(hws[i], r) / r->time_s - 1;
				ss += e * e;
			}
			if (best < 0 || ss < best - 1e-12 || (pass == 2 && ss <= best + 1e-12))
				best = ss, bw = w;
		}
	}
	for (size_t i = 0; i < n; i++)
		hws[i]->k.mem_warp_Bps[dtype] = bw;
	return k;
}

/* The kind's host_us: least squares in the log of the rows whose
 * launches are counted, each timed as mem_time, over 0..500 us (0.1 us,
 * then 0.001 us about the best; the least of equal sums, so rows the
 * floor never reaches leave it 0).  The number of such rows. */
static size_t mem_fit_host(struct hw_profile *const *hws, const struct kbench_row *rows,
			   const size_t *idx, size_t n, int dtype)
{
	size_t k = 0;
	double best = -1, bh = 0;
	for (size_t i = 0; i < n; i++)
		k += rows[idx[i]].timing == KB_TIME_EVENTS && rows[idx[i]].launches > 0;
	if (!k)
		return 0;
	for (int pass = 0; pass < 2; pass++) {
		double lo = pass ? bh - 0.1e-6 : 0, step = pass ? 0.001e-6 : 0.1e-6;
		int steps = pass ? 200 : 5000;
		for (int j = 0; j <= steps; j++) {
			double h = lo + j * step, ss = 0;
			if (h < 0)
				continue;
			for (size_t i = 0; i < n; i++) {
				const struct kbench_row *r = &rows[idx[i]];
				double d, f, e;
				if (r->timing != KB_TIME_EVENTS || !(r->launches > 0))
					continue;
				d = mem_device_s(hws[i], r);
				f = r->launches * h -
				    kperf_mem_s(hws[i], HW_MEM_ELEMENTWISE, KBENCH_FLUSH_BYTES);
				e = log((f > d ? f : d) / r->time_s);
				ss += e * e;
			}
			if (best < 0 || ss < best - 1e-12)
				best = ss, bh = h;
		}
	}
	for (size_t i = 0; i < n; i++)
		hws[i]->k.mem_host_s[dtype] = bh;
	return k;
}

size_t kbench_fit(struct hw_profile *const *hws, const struct kbench_row *rows, const size_t *idx,
		  size_t n, int cls, int dtype)
{
	struct fitctx c = {hws, rows, idx, n, cls, dtype, n >= KBENCH_FULL_FIT, 0, 0, 0, {0, 0}};
	double x[8];

	if (!n)
		return 0;
	gsl_set_error_handler_off();
	/* fp8's blockwise group from fp8's where a profile states none */
	for (size_t i = 0; cls == KB_GEMM && i < n; i++)
		if (!(hws[i]->k.gemm[dtype].flops > 0))
			hws[i]->k.gemm[dtype] = *hw_gemm_of(hws[i], dtype);
	if (cls == KB_GEMM) {
		size_t nd = 0, niso = 0;
		for (size_t i = 0; i < n; i++) {
			nd += rows[idx[i]].timing == KB_TIME_DEVICE;
			niso += rows[idx[i]].timing == KB_TIME_ISOLATED;
		}
		if (nd >= 3 && niso)
			return gemm_floor_fit(hws, rows, idx, n, nd, dtype);
	}
	if (cls == KB_MEM) {
		/* The line on the rows the host does not set, then the host's
		 * cost per launch on the rows whose launches are counted, in
		 * turn until the rows the host sets no longer change (from the
		 * profile's host_us: the shipped values are a fixed point). */
		size_t got = 0, was = (size_t)-1;
		for (int it = 0; it < 8; it++) {
			size_t nb = 0;
			for (size_t i = 0; i < n; i++)
				nb += (host_bound(hws[i], &rows[idx[i]]) ? 1 : 0) * (i + 1) +
				      (grid_bound(hws[i], &rows[idx[i]]) ? 1 : 0) * (n + i + 1);
			if (nb == was)
				break;
			was = nb;
			got = mem_fit_line(hws, rows, idx, n, dtype);
			mem_fit_impl(hws, rows, idx, n, dtype);
			mem_fit_warp(hws, rows, idx, n, dtype);
			if (!mem_fit_host(hws, rows, idx, n, dtype))
				break;
		}
		return got;
	}
	if (cls == KB_GEMM) {
		const struct hw_gemm *g = &hws[0]->k.gemm[dtype];
		double pk = hws[0]->peak_flops[hw_gemm_dtype(dtype)];
		if (!(pk > 0))
			return 0;
		/* The achievable peak is at most the best rate measured
		 * (docs/MODEL.md, "Never above the measured maxima"): the model's
		 * best shape reaches it (kperf.h), so no shape is modelled
		 * faster than one of the GPU's was measured. */
		c.cap = 0;
		for (size_t i = 0; i < n; i++) {
			double r = kbench_rate(&rows[idx[i]]);
			if (r > c.cap)
				c.cap = r;
		}
		if (!(c.cap > 0))
			c.cap = pk;
		/* From at most 0.98 of it: a start at the cap (a profile fitted
		 * before it) would sit where the logistic is flat. */
		{
			double f = g->flops / (c.cap < pk ? c.cap : pk);
			x[0] = logit(f < 0.98 ? f : 0.98);
		}
		x[1] = log(g->tile_s > 0 ? g->tile_s : 1e-6);
		x[2] = log(g->overhead_s > 0 ? g->overhead_s : 1e-6);
		x[3] = logit(ratio(g->tile_eff[0] - 0.05, 0.95));
		x[4] = logit(ratio(g->tile_eff[1] - 0.05, g->tile_eff[0] - 0.05));
		x[5] = logit(ratio(g->tile_eff[2] - 0.05, g->tile_eff[1] - 0.05));
		x[6] = logit(g->mem_eff);
		/* The epilogue's write bandwidth where the profile states one
		 * (AMD's: kperf.h); the others keep none. */
		c.out = g->out_eff > 0;
		x[7] = logit(ratio(g->out_eff - 0.01, 0.99));
	} else {
		const struct hw_attn *a = &hws[0]->k.attn[dtype];
		double pk = hws[0]->peak_flops[dtype];
		if (!(pk > 0))
			return 0;
		c.cls = KB_ATTN_FWD;
		for (size_t i = 0; i < n; i++) {
			const struct kbench_row *r = &rows[idx[i]];
			int q = r->cls == KB_ATTN_FWD ? 0 : r->cls == KB_ATTN_BWD ? 1 : -1;
			double rt = q >= 0 && r->time_s > 0
					? kperf_attn_win_flops(q, r->b, r->heads, r->sq, r->skv,
							       r->d, r->causal, r->window) /
					      r->time_s
					: 0;
			if (q >= 0 && rt > c.acap[q])
				c.acap[q] = rt;
		}
		for (int q = 0; q < 2; q++) {
			/* From at most 0.98 of the cap (as the GEMM's). */
			double f = 1, lim;
			f = a->d64 > f ? a->d64 : f;
			f = a->d256 > f ? a->d256 : f;
			lim = c.acap[q] > 0 && c.acap[q] / f < pk ? c.acap[q] / f : pk;
			x[q] = logit(a->flops[q] / lim < 0.98 ? a->flops[q] / lim : 0.98);
		}
		x[2] = log(a->tile_s[0] > 0 ? a->tile_s[0] : 1e-6);
		x[3] = log(a->tile_s[1] > 0 ? a->tile_s[1] : 1e-6);
		x[4] = log(a->overhead_s > 0 ? a->overhead_s : 1e-6);
		x[5] = logit((a->d64 - 0.05) / 1.95);
		x[6] = logit((a->d256 - 0.05) / 1.95);
	}
	minimise(&c, x, c.full ? (c.out ? 8 : 7) : (cls == KB_GEMM ? 1 : 2));
	if (cls != KB_GEMM && c.full)
		head_dim_priors(&c);
	return n;
}
