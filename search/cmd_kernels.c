/* cmd_kernels.c - `prism kernels`: the kernel model against measurements,
 * and fitting its parameters on them (kbench.h, kperf.h). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "calib.h"
#include "cli.h"
#include "graph.h"
#include "hw.h"
#include "kbench.h"
#include "kperf.h"
#include "predict.h"

static const char help[] =
    "usage: prism kernels [options] FILE|DIR|TRACE...\n"
    "\n"
    "Predict every GEMM, attention and memory-bound row of kernel measurement\n"
    "files (../shared/kernels/*.csv, tests/data/gpu/kernels.csv; a directory\n"
    "means its *.csv) and every GEMM and fused-attention shape of profiler\n"
    "traces (*.json, *.json.gz, or a saved graph *.prism: a GEMM shape's median\n"
    "kernel time, as prism calibrate --gemms lists them, an attention op's mean\n"
    "time over all its kernels, taken as causal; the trace is the rows' source,\n"
    "its GPU names the profile) with the kernel model (tile and wave\n"
    "quantisation over the SMs, stream-K on Hopper, achievable peak, attention\n"
    "by sequence and head dim, bandwidth curves) and the parameters of the\n"
    "hardware profiles, and print per GPU, class and\n"
    "dtype the rows, their sources and the mean and worst |predicted - measured|\n"
    "/ measured.  other.csv's FP8 linear speed-ups (torchao) are checked as\n"
    "ratios: the layer's three GEMMs in bf16 against fp8 with the casts of its\n"
    "recipe, dynamic per-tensor scaling (--fp8-recipe current: an amax pass,\n"
    "the scale, a cast-transpose a tensor).  GEMMs\n"
    "that accumulate into their output (C += A B: accumulate=True, DeepGEMM's\n"
    "weight-gradient kernels), fp8 GEMMs timed as a module under autocast\n"
    "(TransformerEngine's te.Linear: its quantisation too) and FlashAttention-2\n"
    "rows are reported apart and fit nothing.  The profiles' parameters are\n"
    "burst rates: a trace's rows (a training step) are timed at the\n"
    "profile's sustained clock\n"
    "(gpu.sustained); our sweep's attention rows whose kernel runs 1 ms or\n"
    "more (a steady stream of one kernel) at its dtype's stream clock\n"
    "(gpu.stream);\n"
    "rows whose notes state their calls (\"N back-to-back calls\", \"wall clock\n"
    "around N calls\", after \"W warmup\") at their clock's mean over the\n"
    "timed calls: burst up to 5 ms of busy time, the stream clock from 25 ms,\n"
    "linear between, and so our sweep's GEMM rows (after 5 + n calls, 3 n\n"
    "timed: its CUDA-graph replays of n calls); the rest at the burst clock.\n"
    "Grouped GEMMs that\n"
    "TransformerEngine runs (general_grouped_gemm) are timed as it runs them:\n"
    "a GEMM an expert over 4 streams.  fp8 GEMMs are timed and fitted by\n"
    "library: DeepGEMM's block-scaled rows with the profile's fp8_blockwise\n"
    "group (the blockwise recipe's), the others (cuBLASLt's) with fp8's.\n"
    "A memory-bound row that times several kernels' sum pays each kernel's\n"
    "floor (cudnn-frontend's norm backwards: cuDNN's 2, torch.compile's 3);\n"
    "cudnn-frontend's rows are timed from their script's bytes over their\n"
    "GB/s, which it prints from the unrounded median, not the 1 us-rounded\n"
    "time.\n"
    "\n";
/* The options apart: one literal would pass C99's 4,095 characters. */
static const char help_opts[] =
    "options:\n"
    "      --fit        fit the parameters on the rows given (GSL: Nelder-Mead on\n"
    "                   the mean squared log error; memory-bound: a weighted line,\n"
    "                   its floor the device's from rows timed on the device alone\n"
    "                   -- CUDA-graph replays -- where given, and what rows timed\n"
    "                   between CUDA events add, events_us, apart; a GEMM dtype's\n"
    "                   fixed cost likewise where it has CUDA-graph rows and XLA's\n"
    "                   table's, whose single calls on an idle GPU add\n"
    "                   isolated_us; the host's cost per kernel a Python-level\n"
    "                   call launches, host_us, where its rows are host-bound;\n"
    "                   each implementation a row names -- triton_eff (Liger's\n"
    "                   Triton), aten_eff (torch.nn's norms), compiled_eff\n"
    "                   (torch.compile) -- its own bandwidth, the kind's floor\n"
    "                   held; a step's kernels keep the kind's line),\n"
    "                   per GPU family, class and dtype (a GEMM dtype with fewer\n"
    "                   than 20 rows: its peak alone, the shape parameters of the\n"
    "                   family's dtype with the most rows, or where none has 20,\n"
    "                   of the GPU's nearest measured sibling: GB200 and B300\n"
    "                   B200's, MI300X and MI325X MI355X's; an attention dtype\n"
    "                   likewise: its two peaks alone, the fixed costs and\n"
    "                   head-dim factors of the family's dtype with the most\n"
    "                   rows); a GEMM's achievable\n"
    "                   peak at most the best rate its rows measured; evaluate\n"
    "                   with them and print them as the profiles' `kernels` groups\n"
    "      --loso       leave one source out: each source's rows predicted with\n"
    "                   parameters fitted on the other sources only (where none\n"
    "                   is left, a GEMM its sibling GPU's by the datasheets'\n"
    "                   ratios, as shipped for a GPU without rows; else the\n"
    "                   datasheet defaults)\n"
    "      --flat       also the flat model prism had before (GEMM 70 % of peak\n"
    "                   + 3 us, attention 50 %, memory-bound 70 % of HBM + 3 us)\n"
    "      --markdown   the table in Markdown\n"
    "      --json       the table as one JSON object on stdout (groups: profile,\n"
    "                   class, dtype -- null for memory-bound -- rows, sources,\n"
    "                   mean and worst; loso_* and flat_* with those options,\n"
    "                   null where no source was left; rows_placed, left_out)\n"
    "      --rows       every row as CSV: measured and predicted times (us); with\n"
    "                   --loso, the prediction with the row's source left out too;\n"
    "                   shape is BxMxNxK|HEADSxSEQ_QxSEQ_KVxHEAD_DIM|BYTES (GEMM,\n"
    "                   attention, memory-bound; 0 where it does not apply); the\n"
    "                   last column the row's implementation as its file states\n"
    "                   it (`implementation`, attention.csv's `kernel`,\n"
    "                   other.csv's `item`, our sweep's `backend`; empty for a\n"
    "                   trace's rows)\n"
    "  -h, --help       this help\n";

#define MAX_PROF 16

struct prof {
	char name[32];
	struct hw_profile shipped, fitted, work;
};

struct group {
	char profile[32];
	int cls, dtype, fa2, accum, module, win;
	size_t n;
	double sum, worst, fsum, fworst, lsum, lworst;
	size_t ln;
	char sources[8][64];
	int n_src;
};

/* A trace (or saved graph) rather than a CSV file or directory. */
static int is_trace(const char *path)
{
	static const char *const ext[] = {".json", ".json.gz", ".prism"};
	size_t l = strlen(path);
	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		size_t e = strlen(ext[i]);
		if (l > e && !strcmp(path + l - e, ext[i]))
			return 1;
	}
	return 0;
}

/* The GEMM and attention shapes of a trace as rows of kb
 * (calib_gemm_shapes: one per shape and dtype, its kernels' median time;
 * calib_attn_shapes: one per pass and shape, an op's kernels' mean time,
 * causal), the trace their source, the profile its GPU's.  A trace without
 * any is an error: nothing to fit or check. */
static int read_trace(struct kbench *kb, char *path, struct prism_err *err)
{
	struct build_opts bo;
	struct graph *g = NULL;
	struct hw_profile hw;
	struct calib_gshape *gs = NULL;
	struct calib_ashape *as = NULL;
	char hw_path[1024];
	size_t n = 0, na = 0;
	int rc, step_dt = HW_BF16;

	build_opts_default(&bo);
	rc = cli_load_graph(&path, 1, NULL, &bo, &g, err);
	if (rc == 0)
		rc = cli_trace_hw_path(g, hw_path, sizeof(hw_path), path, NULL, err);
	if (rc == 0)
		rc = hw_load(hw_path, &hw, err);
	/* The step's clock is its GEMMs' dtype's (hw_step_clock): the
	 * precision its compute-bound kernels spent the most time in; bf16's
	 * where none says. */
	if (rc == 0 && (step_dt = predict_trace_dtype(g)) == -2)
		rc = prism_err_set(err, PRISM_ENOMEM, "out of memory");
	if (rc == 0 && step_dt < 0)
		step_dt = HW_BF16;
	if (rc == 0)
		rc = calib_gemm_shapes(g, &hw, &gs, &n, err);
	if (rc == 0)
		rc = calib_attn_shapes(g, &as, &na, err);
	if (rc == 0 && n + na == 0)
		rc = prism_err_set(err, PRISM_EARG,
				   "%s: no GEMM or attention with shapes (profile with "
				   "torch.profiler's record_shapes=True)",
				   path);
	/* One row per shape: GEMMs first (i < n), then attention. */
	for (size_t i = 0; rc == 0 && i < n + na; i++) {
		struct kbench_row r;
		if (i < n) {
			r = (struct kbench_row){.cls = KB_GEMM,
						.dtype = gs[i].dtype,
						.b = gs[i].b,
						.m = gs[i].m,
						.n = gs[i].n,
						.k = gs[i].k,
						.time_s = gs[i].measured_s};
		} else {
			const struct calib_ashape *a = &as[i - n];
			r = (struct kbench_row){.cls = a->pass ? KB_ATTN_BWD : KB_ATTN_FWD,
						.dtype = a->dtype,
						.b = a->b,
						.heads = a->heads,
						.sq = a->sq,
						.skv = a->skv,
						.d = a->d,
						.causal = 1,
						.fa2 = a->fa2,
						.time_s = a->measured_s};
		}
		r.sustained = KB_STEP; /* a training step's kernels: its sustained clock */
		r.step_dtype = step_dt;
		snprintf(r.gpu, sizeof(r.gpu), "%s", strtab_get(&g->st, g->ranks[0].device));
		snprintf(r.profile, sizeof(r.profile), "%.31s", hw.id);
		snprintf(r.source, sizeof(r.source), "%s", path);
		if (kbench_add(kb, &r))
			rc = prism_err_set(err, PRISM_ENOMEM, "out of memory");
	}
	free(as);
	free(gs);
	graph_free(g);
	return rc;
}

static struct prof *find_prof(struct prof *p, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(p[i].name, name))
			return &p[i];
	return NULL;
}

/* The parameters a row's fit sets: its dtype's (fp16 rows are timed with
 * bf16's parameters but fit none: no profile's fp16 rows are of a stated
 * SKU; a GEMM's by library: blockwise fp8 rows fp8_blockwise's,
 * kbench_gemm_key), or its memory-bound kind's. */
static int fit_dtype(const struct kbench_row *r)
{
	if (r->cls == KB_MEM || r->cls == KB_MEM_EAGER)
		return r->mem_kind;
	if (r->cls == KB_GEMM && r->dtype == HW_FP8 && r->blockwise)
		return HW_GEMM_FP8_BLOCK;
	return r->dtype;
}

/* Rows reported together: memory-bound ones whatever their dtype. */
static int group_dtype(const struct kbench_row *r)
{
	return r->cls == KB_MEM || r->cls == KB_MEM_EAGER ? -1 : r->dtype;
}

static int fit_cls(const struct kbench_row *r)
{
	/* Checked, never fitted: eager memory-bound kernels, FP8 speed-ups,
	 * FA2, accumulating GEMMs and modules' fp8 GEMMs.  Attention with a
	 * sliding window is fitted with full attention: the same kernels
	 * over their band (kperf.h), and the only backward rows at head dim
	 * 64. */
	if (r->cls == KB_MEM_EAGER || r->cls == KB_FP8_LINEAR || r->fa2 || r->accum || r->module)
		return -1;
	return r->cls == KB_GEMM ? KB_GEMM : r->cls == KB_MEM ? KB_MEM : KB_ATTN_FWD;
}

/* Rows of one fit group: same family (compute) or profile (memory),
 * class and dtype as row r; those whose source is `not_src` left out. */
static size_t select_rows(const struct kbench *kb, const struct kbench_row *r, const char *not_src,
			  const char *only_src, size_t *idx)
{
	size_t n = 0;
	int c = fit_cls(r), d = fit_dtype(r);
	for (size_t i = 0; i < kb->n; i++) {
		const struct kbench_row *q = &kb->rows[i];
		int same = c == KB_MEM
			       ? !strcmp(q->profile, r->profile)
			       : !strcmp(kbench_family(q->profile), kbench_family(r->profile));
		if (!same || fit_cls(q) != c || fit_dtype(q) != d)
			continue;
		if (not_src && !strcmp(q->source, not_src))
			continue;
		if (only_src && strcmp(q->source, only_src))
			continue;
		idx[n++] = i;
	}
	return n;
}

/* Row r as a row of GEMM key d (a dtype, or fp8's blockwise group). */
static struct kbench_row as_key(const struct kbench_row *r, int d)
{
	struct kbench_row q = *r;
	q.dtype = hw_gemm_dtype(d);
	q.blockwise = d == HW_GEMM_FP8_BLOCK;
	return q;
}

/* The GEMM key (a dtype, or fp8's blockwise group) whose shape parameters
 * a GEMM group of row r too small to fit its own takes: the family's
 * group with the most rows, at least KBENCH_FULL_FIT, source not_src left
 * out (fp16 fits none); -1 if r's group is big enough or none is. */
static int shape_donor(const struct kbench *kb, const struct kbench_row *r, const char *not_src,
		       size_t *idx)
{
	size_t best = KBENCH_FULL_FIT - 1;
	int donor = -1;
	if (fit_cls(r) != KB_GEMM || select_rows(kb, r, not_src, NULL, idx) >= KBENCH_FULL_FIT)
		return -1;
	for (int d = 0; d < HW_GEMM_NKEYS; d++) {
		struct kbench_row q = as_key(r, d);
		size_t n;
		if (d == fit_dtype(r) || d == HW_FP16)
			continue;
		if ((n = select_rows(kb, &q, not_src, NULL, idx)) > best) {
			best = n;
			donor = d;
		}
	}
	return donor;
}

/* The dtype whose attention fixed costs and head-dim factors (tile_s,
 * overhead, d64, d256) an attention group of row r too small to fit its
 * own takes, as a GEMM group takes its shape parameters (shape_donor):
 * its family's attention group with the most rows, at least
 * KBENCH_FULL_FIT, source not_src left out (fp16 fits none); -1 if r's
 * group is big enough or none is.  The same kernels' prologue, epilogue
 * and pre/post-processing kernels (cuDNN's fp8 graphs are its bf16 ones
 * with the scaling added); without it a small group kept the datasheet
 * priors' 2 / 2 / 5 us (B200 fp8: 18 rows, backward 42 % off). */
static int attn_donor(const struct kbench *kb, const struct kbench_row *r, const char *not_src,
		      size_t *idx)
{
	size_t best = KBENCH_FULL_FIT - 1;
	int donor = -1;
	if (fit_cls(r) != KB_ATTN_FWD || select_rows(kb, r, not_src, NULL, idx) >= KBENCH_FULL_FIT)
		return -1;
	for (int d = 0; d < HW_NDTYPES; d++) {
		struct kbench_row q = *r;
		size_t n;
		if (d == r->dtype || d == HW_FP16)
			continue;
		q.dtype = d;
		if ((n = select_rows(kb, &q, not_src, NULL, idx)) > best) {
			best = n;
			donor = d;
		}
	}
	return donor;
}

/* The profile whose GEMM shape parameters a GEMM group of row r too small
 * to fit its own, and without a donor dtype in its family, takes: its
 * sibling (kbench_sibling) where that has rows here; NULL if none. */
static struct prof *shape_sibling(const struct kbench *kb, const struct kbench_row *r,
				  struct prof *p, int np, const char *not_src, size_t *idx,
				  double *clock)
{
	const char *sib;
	if (fit_cls(r) != KB_GEMM || select_rows(kb, r, not_src, NULL, idx) >= KBENCH_FULL_FIT ||
	    shape_donor(kb, r, not_src, idx) >= 0 || !(sib = kbench_sibling(r->profile, clock)))
		return NULL;
	return find_prof(p, np, sib);
}

static void fit_group(const struct kbench *kb, const struct kbench_row *r, struct prof *p, int np,
		      int which, const char *not_src, int fit_donor, size_t *idx,
		      struct hw_profile **hws);

/* Leaving a GEMM group's only source out (which 2, the work parameters):
 * what the profile would ship without rows of its own (docs/MODEL.md,
 * "Siblings"), its sibling's group fitted here without that source, the
 * peak times the ratio of the datasheets' peaks of the dtype and a tile's
 * fixed cost at this GPU's clock.  0 (the datasheet defaults kept) where
 * the GPU has no sibling or the sibling no row left. */
static int sibling_rule(const struct kbench *kb, const struct kbench_row *r, struct prof *p, int np,
			const char *not_src, size_t *idx, struct hw_profile **hws)
{
	double clock = 1;
	const char *sn = kbench_sibling(r->profile, &clock);
	struct prof *sib = sn ? find_prof(p, np, sn) : NULL, *own = find_prof(p, np, r->profile);
	int d = fit_dtype(r), pd = hw_gemm_dtype(d);
	if (!sib || !own || !(sib->work.peak_flops[pd] > 0))
		return 0;
	for (size_t i = 0; i < kb->n; i++) {
		const struct kbench_row *q = &kb->rows[i];
		struct hw_gemm *g = &own->work.k.gemm[d];
		if (strcmp(q->profile, sn) || fit_cls(q) != KB_GEMM || fit_dtype(q) != d ||
		    !strcmp(q->source, not_src))
			continue;
		fit_group(kb, q, p, np, 2, not_src, 1, idx, hws);
		*g = *hw_gemm_of(&sib->work, d);
		g->flops *= own->work.peak_flops[pd] / sib->work.peak_flops[pd];
		g->tile_s /= clock;
		return 1;
	}
	return 0;
}

/* Fit the group of row r into each profile's field `which` (0 fitted, 2
 * work), leaving out source not_src.  A GEMM group too small for its
 * shape parameters (tile and kernel costs, smaller tiles' throughput,
 * memory-bound efficiency) takes those of its family's best-measured
 * dtype, fitted first on the same rows (the die's tiling, docs/MODEL.md),
 * and fits its achievable peak alone; a GEMM group whose rows are all
 * not_src's takes its sibling's (sibling_rule). */
static void fit_group(const struct kbench *kb, const struct kbench_row *r, struct prof *p, int np,
		      int which, const char *not_src, int fit_donor, size_t *idx,
		      struct hw_profile **hws)
{
	int c = fit_cls(r), donor = shape_donor(kb, r, not_src, idx);
	int adonor = attn_donor(kb, r, not_src, idx);
	double clock = 1;
	struct prof *sib = shape_sibling(kb, r, p, np, not_src, idx, &clock);
	size_t n;
	if (donor >= 0 && fit_donor) {
		struct kbench_row q = as_key(r, donor);
		fit_group(kb, &q, p, np, which, not_src, 1, idx, hws);
	}
	if (adonor >= 0 && fit_donor) {
		struct kbench_row q = *r;
		q.dtype = adonor;
		fit_group(kb, &q, p, np, which, not_src, 1, idx, hws);
	}
	n = select_rows(kb, r, not_src, NULL, idx);
	if (!n && which == 2 && c == KB_GEMM && not_src) {
		sibling_rule(kb, r, p, np, not_src, idx, hws);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct prof *q = find_prof(p, np, kb->rows[idx[i]].profile);
		hws[i] = which == 0 ? &q->fitted : &q->work;
		if (adonor >= 0) {
			/* the donor's as fitted; the peaks this group's own */
			struct hw_attn *a = &hws[i]->k.attn[r->dtype];
			const struct hw_attn *s = &hws[i]->k.attn[adonor];
			a->tile_s[0] = s->tile_s[0];
			a->tile_s[1] = s->tile_s[1];
			a->overhead_s = s->overhead_s;
			a->d64 = s->d64;
			a->d256 = s->d256;
		}
		if (donor >= 0 || sib) {
			/* The sibling's as fitted (its rows come first), a
			 * tile's fixed cost at this GPU's clock. */
			struct hw_gemm *g = &hws[i]->k.gemm[fit_dtype(r)];
			const struct hw_gemm *s = donor >= 0
						      ? &hws[i]->k.gemm[donor]
						      : hw_gemm_of(&sib->fitted, fit_dtype(r));
			if (!(g->flops > 0)) /* a blockwise group not stated */
				*g = *hw_gemm_of(hws[i], fit_dtype(r));
			*g = (struct hw_gemm){
			    g->flops,	   s->tile_s / clock,
			    s->overhead_s, {s->tile_eff[0], s->tile_eff[1], s->tile_eff[2]},
			    s->mem_eff,	   s->out_eff};
		}
	}
	if (n)
		kbench_fit(hws, kb->rows, idx, n, c, fit_dtype(r));
	/* Profiles of the family without rows of their own get the result
	 * too (compute parameters are the silicon's). */
	if (c != KB_MEM && n) {
		for (int i = 0; i < np; i++) {
			struct hw_profile *dst = which == 0 ? &p[i].fitted : &p[i].work;
			if (strcmp(kbench_family(p[i].name), kbench_family(r->profile)) ||
			    dst == hws[0])
				continue;
			if (c == KB_GEMM) {
				dst->k.gemm[fit_dtype(r)] = hws[0]->k.gemm[fit_dtype(r)];
				dst->k.gemm_isolated_s[fit_dtype(r)] =
				    hws[0]->k.gemm_isolated_s[fit_dtype(r)];
			} else
				dst->k.attn[fit_dtype(r)] = hws[0]->k.attn[fit_dtype(r)];
		}
	}
}

static void print_kernels(const struct hw_profile *hw)
{
	printf("# %s\nkernels = {\n  sms = %d;\n", hw->id, hw->k.sms);
	if (hw->k.tiles != HW_TILES_SM80)
		printf("  gemm_tiles = \"%s\";\n", hw->k.tiles == HW_TILES_SM90 ? "sm90" : "cdna");
	if (hw->k.sched == HW_SCHED_STREAMK)
		printf("  gemm_schedule = \"stream-k\";\n");
	if (hw->k.l2s > 1)
		printf("  l2_caches = %d;\n", hw->k.l2s);
	printf("  gemm = {\n");
	for (int d = 0; d < HW_NDTYPES; d++) {
		const struct hw_gemm *g = &hw->k.gemm[d];
		if (hw->peak_flops[d] <= 0 || d == HW_FP16 || d == HW_FP32)
			continue;
		printf("    %s = { tflops = %.1f; tile_us = %.3f; overhead_us = %.3f; "
		       "tile_eff = [%.3f, %.3f, %.3f]; mem_eff = %.3f; ",
		       hw_dtype_name(d), g->flops / 1e12, g->tile_s * 1e6, g->overhead_s * 1e6,
		       g->tile_eff[0], g->tile_eff[1], g->tile_eff[2], g->mem_eff);
		if (g->out_eff > 0)
			printf("out_eff = %.3f; ", g->out_eff);
		if (hw->k.gemm_isolated_s[d] > 0)
			printf("isolated_us = %.3f; ", hw->k.gemm_isolated_s[d] * 1e6);
		printf("};\n");
	}
	if (hw->k.gemm[HW_GEMM_FP8_BLOCK].flops > 0) {
		const struct hw_gemm *g = &hw->k.gemm[HW_GEMM_FP8_BLOCK];
		printf("    fp8_blockwise = { tflops = %.1f; tile_us = %.3f; overhead_us = %.3f; "
		       "tile_eff = [%.3f, %.3f, %.3f]; mem_eff = %.3f; };\n",
		       g->flops / 1e12, g->tile_s * 1e6, g->overhead_s * 1e6, g->tile_eff[0],
		       g->tile_eff[1], g->tile_eff[2], g->mem_eff);
	}
	printf("  };\n  attention = {\n");
	for (int d = 0; d < HW_NDTYPES; d++) {
		const struct hw_attn *a = &hw->k.attn[d];
		if (hw->peak_flops[d] <= 0 || (d != HW_BF16 && d != HW_FP8))
			continue;
		printf("    %s = { fwd_tflops = %.1f; bwd_tflops = %.1f; fwd_tile_us = %.3f; "
		       "bwd_tile_us = %.3f; overhead_us = %.3f; d64 = %.3f; d256 = %.3f; ",
		       hw_dtype_name(d), a->flops[0] / 1e12, a->flops[1] / 1e12, a->tile_s[0] * 1e6,
		       a->tile_s[1] * 1e6, a->overhead_s * 1e6, a->d64, a->d256);
		if (a->bwd_skip > 0) /* the library's, not fitted (hw.h) */
			printf("bwd_skip_blocks = %.0f; ", a->bwd_skip);
		printf("};\n");
	}
	printf("  };\n  memory = {\n");
	{
		static const char *const mk[HW_MEM_NKINDS] = {"elementwise", "norm", "reduction"};
		for (int m = 0; m < HW_MEM_NKINDS; m++) {
			printf("    %s = { eff = %.3f; overhead_us = %.3f; ", mk[m],
			       hw->k.mem_eff[m], hw->k.mem_overhead_s[m] * 1e6);
			if (hw->k.mem_events_s[m] > 0)
				printf("events_us = %.3f; ", hw->k.mem_events_s[m] * 1e6);
			if (hw->k.mem_host_s[m] > 0)
				printf("host_us = %.3f; ", hw->k.mem_host_s[m] * 1e6);
			for (int j = HW_MEM_IMPL_ANY + 1; j < HW_MEM_NIMPLS; j++)
				if (hw->k.mem_impl_eff[m][j] > 0)
					printf("%s_eff = %.3f; ", hw_mem_impl_name(j),
					       hw->k.mem_impl_eff[m][j]);
			if (hw->k.mem_warp_Bps[m] > 0)
				printf("warp_GBps = %.3f; ", hw->k.mem_warp_Bps[m] / 1e9);
			printf("};\n");
		}
	}
	printf("  };\n};\n\n");
}

static double rel(double p, double m)
{
	return p > 0 && m > 0 ? fabs(p - m) / m : 1;
}

/* One run of `prism kernels`: the rows, the profiles they name, the groups
 * of the table and the scratch the fits share. */
struct kx {
	struct kbench kb;
	struct prof *p;
	int np;
	struct group *gr;
	size_t ng;
	size_t *idx, *grp;
	char *done;    /* per row: its group fitted (scratch) */
	double *lpred; /* per row, its leave-one-source-out prediction */
	struct hw_profile **hws;
	int fit, loso, flat, md, rows, json;
};

static void kx_release(struct kx *x)
{
	free(x->p);
	free(x->idx);
	free(x->hws);
	free(x->gr);
	free(x->lpred);
	free(x->done);
	free(x->grp);
	kbench_release(&x->kb);
}

/* The files' rows, a profile for each GPU they name (at the burst clock:
 * most rows are bursts, kbench.h; a step's or a stream's rows take its
 * sustained or stream clock in kbench_predict) and the scratch. */
static int kx_load(struct kx *x, int argc, char **argv, struct prism_err *err)
{
	int rc = 0;
	size_t n;
	for (int i = optind; i < argc && !rc; i++)
		rc = is_trace(argv[i]) ? read_trace(&x->kb, argv[i], err)
				       : kbench_read(&x->kb, argv[i], err);
	if (rc)
		return rc;
	if (!(x->p = prism_calloc(MAX_PROF, sizeof(*x->p))))
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	for (size_t i = 0; i < x->kb.n; i++) {
		struct prof *q = &x->p[x->np];
		if (find_prof(x->p, x->np, x->kb.rows[i].profile))
			continue;
		if (x->np == MAX_PROF)
			return prism_err_set(err, PRISM_ELIMIT, "more than %d profiles", MAX_PROF);
		snprintf(q->name, sizeof(q->name), "%s", x->kb.rows[i].profile);
		if ((rc = cli_load_hw(q->name, &q->shipped, err)))
			return rc;
		q->shipped.clock = 1;
		q->fitted = q->shipped;
		x->np++;
	}
	n = x->kb.n + 1;
	if (!(x->idx = prism_malloc(n * sizeof(*x->idx))) ||
	    !(x->hws = prism_malloc(n * sizeof(*x->hws))) || !(x->done = prism_malloc(n)) ||
	    (x->loso && !(x->grp = prism_malloc(n * sizeof(*x->grp)))) ||
	    !(x->gr = prism_calloc(n, sizeof(*x->gr))) ||
	    (x->loso && !(x->lpred = prism_malloc(n * sizeof(*x->lpred)))))
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	return 0;
}

/* Fit: each group once, in row order (deterministic); those taking another
 * dtype's shape parameters after it, those taking a sibling GPU's last. */
static void kx_fit(struct kx *x)
{
	struct kbench *kb = &x->kb;
	memset(x->done, 0, kb->n + 1);
	for (int pass = 0; pass < 3; pass++)
		for (size_t i = 0; i < kb->n; i++) {
			size_t n;
			int pi;
			if (x->done[i] || fit_cls(&kb->rows[i]) < 0)
				continue;
			pi = shape_donor(kb, &kb->rows[i], NULL, x->idx) >= 0			? 1
			     : shape_sibling(kb, &kb->rows[i], x->p, x->np, NULL, x->idx, NULL) ? 2
												: 0;
			if (pi != pass)
				continue;
			n = select_rows(kb, &kb->rows[i], NULL, NULL, x->idx);
			for (size_t j = 0; j < n; j++)
				x->done[x->idx[j]] = 1;
			fit_group(kb, &kb->rows[i], x->p, x->np, 0, NULL, 0, x->idx, x->hws);
		}
}

/* Where a held-out fit starts: the datasheet defaults, with the shipped
 * model's structure -- a GEMM group that states an epilogue (out_eff,
 * AMD's: kperf.h) has one, as the shipped fit does, from the defaults'
 * memory efficiency (the prior of every GEMM's HBM traffic) -- and none of
 * its values. */
static void held_out_start(struct prof *q)
{
	q->work = q->shipped;
	hw_kernels_default(&q->work);
	for (int d = 0; d < HW_GEMM_NKEYS; d++)
		if (q->shipped.k.gemm[d].out_eff > 0)
			q->work.k.gemm[d].out_eff = q->work.k.gemm[d].mem_eff;
}

/* Leave one source out: per fit group and source, parameters from the
 * datasheet defaults fitted on the group's other sources (none left: a GEMM
 * group its sibling's, sibling_rule); each row's
 * prediction so made in lpred (NAN: a row no fit takes). */
static void kx_loso(struct kx *x)
{
	struct kbench *kb = &x->kb;
	memset(x->done, 0, kb->n + 1);
	for (size_t i = 0; i < kb->n; i++)
		x->lpred[i] = NAN;
	for (size_t i = 0; i < kb->n; i++) {
		const struct kbench_row *r = &kb->rows[i];
		size_t ns;
		if (x->done[i])
			continue;
		if (fit_cls(r) < 0 || r->dtype == HW_FP16) { /* not fitted */
			x->done[i] = 1;
			continue;
		}
		ns = select_rows(kb, r, NULL, NULL, x->grp);
		for (size_t j = 0; j < ns; j++) {
			const struct kbench_row *s = &kb->rows[x->grp[j]];
			int first = 1;
			for (size_t k = 0; k < j && first; k++)
				first = strcmp(kb->rows[x->grp[k]].source, s->source) != 0;
			x->done[x->grp[j]] = 1;
			if (!first)
				continue;
			for (int q = 0; q < x->np; q++)
				held_out_start(&x->p[q]);
			fit_group(kb, s, x->p, x->np, 2, s->source, 1, x->idx, x->hws);
			for (size_t k = 0; k < ns; k++) {
				const struct kbench_row *t = &kb->rows[x->grp[k]];
				if (!strcmp(t->source, s->source))
					x->lpred[x->grp[k]] = kbench_predict(
					    &find_prof(x->p, x->np, t->profile)->work, t, 0);
			}
		}
	}
}

/* Row r's group of the table (profile, class, dtype, FA2, accumulate,
 * module, windowed), made where new. */
static struct group *kx_group(struct kx *x, const struct kbench_row *r)
{
	struct group *g;
	for (size_t j = 0; j < x->ng; j++) {
		g = &x->gr[j];
		if (!strcmp(g->profile, r->profile) && g->cls == r->cls &&
		    g->dtype == group_dtype(r) && g->fa2 == r->fa2 && g->accum == r->accum &&
		    g->module == r->module && g->win == (r->window > 0))
			return g;
	}
	g = &x->gr[x->ng++];
	snprintf(g->profile, sizeof(g->profile), "%s", r->profile);
	g->cls = r->cls;
	g->dtype = group_dtype(r);
	g->fa2 = r->fa2;
	g->accum = r->accum;
	g->module = r->module;
	g->win = r->window > 0;
	return g;
}

/* Each row's errors into its group, and with --rows the row as CSV (times
 * in us; the fp8 speed-ups as ratios). */
static void kx_score(struct kx *x)
{
	if (x->rows)
		printf("profile,class,dtype,source,shape,measured_us,predicted_us,error%s,"
		       "implementation\n",
		       x->lpred ? ",loso_us,loso_error" : "");
	for (size_t i = 0; i < x->kb.n; i++) {
		const struct kbench_row *r = &x->kb.rows[i];
		struct prof *q = find_prof(x->p, x->np, r->profile);
		struct group *g = kx_group(x, r);
		double meas = r->time_s, pred = kbench_predict(&q->fitted, r, 0),
		       e = rel(pred, meas), lp = x->lpred ? x->lpred[i] : NAN;
		int known = 0;
		g->n++;
		g->sum += e;
		if (e > g->worst)
			g->worst = e;
		if (!isnan(lp)) {
			double l = rel(lp, meas);
			g->lsum += l;
			g->ln++;
			if (l > g->lworst)
				g->lworst = l;
		}
		if (x->flat) {
			double f = rel(kbench_predict(&q->shipped, r, 1), meas);
			g->fsum += f;
			if (f > g->fworst)
				g->fworst = f;
		}
		for (int s = 0; s < g->n_src && !known; s++)
			known = !strncmp(g->sources[s], r->source, sizeof(g->sources[s]) - 1);
		if (!known && g->n_src < 8)
			snprintf(g->sources[g->n_src++], sizeof(g->sources[0]), "%.63s", r->source);
		if (x->rows) {
			double u = r->cls == KB_FP8_LINEAR ? 1 : 1e6;
			printf("%s,%s,%s,\"", r->profile, kbench_class_name(r->cls),
			       hw_dtype_name(r->dtype));
			for (const char *c = r->source; *c; c++) { /* quotes doubled */
				if (*c == '"')
					putchar('"');
				putchar(*c);
			}
			printf("\",%gx%gx%gx%g|%gx%gx%gx%g|%g,%.3f,%.3f,%+.1f%%", r->b, r->m, r->n,
			       r->k, r->heads, r->sq, r->skv, r->d, r->bytes, meas * u, pred * u,
			       100 * (pred / meas - 1));
			if (!isnan(lp))
				printf(",%.3f,%+.1f%%", lp * u, 100 * (lp / meas - 1));
			else
				printf("%s", x->lpred ? ",," : "");
			putchar(',');
			prism_fput_csv_str(stdout, r->impl);
			putchar('\n');
		}
	}
	if (x->rows) /* the table after a blank line */
		printf("\n");
}

/* One group of the table as JSON, Markdown or text. */
static void kx_put_group(const struct kx *x, const struct group *g, int first)
{
	char cname[40];
	const char *dn = g->cls == KB_MEM || g->cls == KB_MEM_EAGER ? "-" : hw_dtype_name(g->dtype);
	snprintf(cname, sizeof(cname), "%s%s", kbench_class_name(g->cls),
		 g->fa2	     ? " (FA2)"
		 : g->accum  ? " (accumulate)"
		 : g->module ? " (module)"
		 : g->win    ? " (window)"
			     : "");
	if (x->json) {
		printf("%s\n{\"profile\":", first ? "" : ",");
		prism_fput_json_str(stdout, g->profile);
		printf(",\"class\":");
		prism_fput_json_str(stdout, cname);
		printf(",\"dtype\":");
		if (strcmp(dn, "-") == 0)
			printf("null");
		else
			prism_fput_json_str(stdout, dn);
		printf(",\"rows\":%zu,\"sources\":%d,\"mean\":%.6g,\"worst\":%.6g", g->n, g->n_src,
		       g->sum / g->n, g->worst);
		if (x->loso && g->ln)
			printf(",\"loso_mean\":%.6g,\"loso_worst\":%.6g", g->lsum / g->ln,
			       g->lworst);
		else if (x->loso)
			printf(",\"loso_mean\":null,\"loso_worst\":null");
		if (x->flat)
			printf(",\"flat_mean\":%.6g,\"flat_worst\":%.6g", g->fsum / g->n,
			       g->fworst);
		printf("}");
	} else if (x->md) {
		printf("| %s | %s | %s | %zu | %d | %.1f %% / %.1f %% |", g->profile, cname, dn,
		       g->n, g->n_src, 100 * g->sum / g->n, 100 * g->worst);
		if (x->loso && g->ln)
			printf(" %.1f %% / %.1f %% |", 100 * g->lsum / g->ln, 100 * g->lworst);
		else if (x->loso)
			printf(" - |");
		if (x->flat)
			printf(" %.1f %% / %.1f %% |", 100 * g->fsum / g->n, 100 * g->fworst);
		printf("\n");
	} else {
		printf("%-14s %-24s %-5s %6zu %4d %9.1f%% / %6.1f%%", g->profile, cname, dn, g->n,
		       g->n_src, 100 * g->sum / g->n, 100 * g->worst);
		if (x->loso && g->ln)
			printf(" %9.1f%% / %6.1f%%", 100 * g->lsum / g->ln, 100 * g->lworst);
		else if (x->loso)
			printf(" %20s", "-");
		if (x->flat)
			printf(" %9.1f%% / %6.1f%%", 100 * g->fsum / g->n, 100 * g->fworst);
		printf("\n");
	}
}

/* The table: its header, a line a group, the rows left out; with --fit the
 * fitted profiles' `kernels` groups. */
static void kx_table(const struct kx *x)
{
	if (x->json) {
		printf("{\"groups\":[");
	} else if (x->md) {
		printf(
		    "| GPU (profile) | class | dtype | rows | sources | %s: mean / worst |%s%s\n",
		    x->fit ? "fitted here" : "shipped", x->loso ? " leave one source out |" : "",
		    x->flat ? " flat model (before) |" : "");
		printf("|---|---|---|---:|---:|---:|%s%s\n", x->loso ? "---:|" : "",
		       x->flat ? "---:|" : "");
	} else {
		printf("%-14s %-24s %-5s %6s %4s %20s%s%s\n", "profile", "class", "dtype", "rows",
		       "src", x->fit ? "fitted: mean/worst" : "shipped: mean/worst",
		       x->loso ? "      LOSO: mean/worst" : "",
		       x->flat ? "      flat: mean/worst" : "");
	}
	for (size_t j = 0; j < x->ng; j++)
		kx_put_group(x, &x->gr[j], j == 0);
	if (x->json) {
		printf("],");
		cli_put_skips_json(stdout, x->kb.n, &x->kb.skips);
		printf("}\n");
	} else {
		printf("\n%zu rows placed, %zu left out", x->kb.n, x->kb.skips.skipped);
		for (int i = 0; i < x->kb.skips.n_why; i++)
			printf("%s %zu %s", i ? "," : ":", x->kb.skips.n[i], x->kb.skips.why[i]);
		printf("\n");
	}
	if (x->fit) {
		printf("\n");
		for (int i = 0; i < x->np; i++)
			print_kernels(&x->p[i].fitted);
	}
}

int cmd_kernels(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"fit", no_argument, NULL, 'f'},  {"loso", no_argument, NULL, 'l'},
	    {"flat", no_argument, NULL, 'F'}, {"markdown", no_argument, NULL, 'm'},
	    {"rows", no_argument, NULL, 'R'}, {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
	};
	struct kx x;
	struct prism_err err;
	struct cli_parse args;
	int c, rc;

	memset(&x, 0, sizeof(x));
	prism_err_clear(&err);
	cli_parse_init(&args, "kernels", help, "h", longopts, NULL, NULL,
		       "no measurement file given");
	args.help_more = help_opts;
	while ((c = cli_next_option(&args, argc, argv, &err)) >= 0) {
		switch (c) {
		case 'f':
			x.fit = 1;
			break;
		case 'l':
			x.loso = 1;
			break;
		case 'F':
			x.flat = 1;
			break;
		case 'm':
			x.md = 1;
			break;
		case 'R':
			x.rows = 1;
			break;
		case 'j':
			x.json = 1;
			break;
		}
	}
	if (c == CLI_PARSE_EXIT)
		return args.status;
	/* --json is the table alone: not beside the rows' CSV, Markdown or
	 * the fitted profiles' text. */
	if (x.json && (x.rows || x.md || x.fit)) {
		fprintf(stderr, "prism kernels: --json prints the table alone: not with %s\n",
			x.rows ? "--rows"
			: x.md ? "--markdown"
			       : "--fit");
		return EXIT_USAGE;
	}
	if ((rc = kx_load(&x, argc, argv, &err))) {
		kx_release(&x);
		return cli_fail(&err);
	}
	if (x.fit)
		kx_fit(&x);
	if (x.loso)
		kx_loso(&x);
	kx_score(&x);
	kx_table(&x);
	kx_release(&x);
	return 0;
}
