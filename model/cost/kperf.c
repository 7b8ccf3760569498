/* kperf.c - kernel times from shape, precision and GPU (see kperf.h). */
#include "kperf.h"

#include "layout.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

double kperf_elem_bytes(int dtype)
{
	switch (dtype) {
	case HW_FP32:
	case HW_TF32:
		return 4;
	case HW_FP8:
		return 1;
	case HW_FP4:
		return 0.5;
	default:
		return 2;
	}
}

double kperf_act_bytes(int dtype)
{
	return dtype == HW_FP32 || dtype == HW_TF32 ? 4 : 2;
}

double kperf_resid_bytes(int dtype, int fp32_residual)
{
	return fp32_residual ? 4 : kperf_act_bytes(dtype);
}

/* SMs of a profile that does not say (an A100's). */
#define KPERF_SMS 108

static int sms(const struct hw_profile *hw)
{
	return hw->k.sms > 0 ? hw->k.sms : KPERF_SMS;
}

/*
 * The tiles, tm x tn as indices into tile_dims, and the class of their
 * throughput by the operands' reuse r = tm tn / (tm + tn) (FLOPs per
 * element loaded, over 2): -1 the reference's (128x256, 85.3) and above,
 * else the tile_eff class whose tile's reuse it reaches: 0 from 128x128's
 * 64, 1 from 64x128's 42.7, 2 below.  The first 8 every GPU's (on 5 of
 * the dims), the rest Hopper's (kperf.h).
 */
static const double tile_dims[] = {128, 256, 64, 32, 320, 192, 160, 144, 48, 24};
#define KPERF_SM80_DIMS	 4
#define KPERF_SM80_TILES 8
struct tile {
	unsigned char m, n; /* tile_dims indices */
	signed char e;
};
static const struct tile tiles[] = {{0, 1, -1}, {1, 0, -1}, {0, 0, 0}, {2, 0, 1},  {0, 2, 1},
				    {2, 2, 2},	{3, 2, 2},  {2, 3, 2}, {4, 0, -1}, {0, 4, -1},
				    {5, 5, -1}, {6, 0, 0},  {0, 6, 0}, {7, 0, 0},  {0, 7, 0},
				    {2, 8, 2},	{8, 2, 2},  {2, 9, 2}, {9, 2, 2}};
#define NDIMS (sizeof(tile_dims) / sizeof(tile_dims[0]))

/*
 * AMD's (gemm_tiles "cdna"): the macro tiles of hipBLASLt's and Composable
 * Kernel's CDNA 3/4 GEMMs, 256x256 the reference (AMD's gfx950 GEMM
 * instances: 256x256x128, 256x128x128 and 128x128x128, Primus-Turbo
 * csrc/kernels/gemm/instantiations/ck_gemm_kernel_*_gfx950.cu; HipKittens'
 * MI350X bf16 GEMM, 256x256x64), and the class of each by the same reuse
 * steps one size up: tile_eff[0] from 128x256's (85.3), [1] from
 * 128x128's (64), [2] below (64x128, 64x64, 32x64).
 */
static const struct tile cdna_tiles[] = {{1, 1, -1}, {0, 1, 0}, {1, 0, 0}, {0, 0, 1}, {2, 0, 2},
					 {0, 2, 2},  {2, 2, 2}, {3, 2, 2}, {2, 3, 2}};

double kperf_gemm_plan_sched(const struct hw_profile *hw, int dtype, double b, double m, double n,
			     double k, int sched, struct kperf_gemm_plan *plan)
{
	static const double splits[] = {1, 2, 4};
	int sm90 = hw->k.tiles == HW_TILES_SM90, cdna = hw->k.tiles == HW_TILES_CDNA,
	    sk = sched == HW_SCHED_STREAMK;
	const struct tile *ts = cdna ? cdna_tiles : tiles;
	size_t nt = cdna   ? sizeof(cdna_tiles) / sizeof(cdna_tiles[0])
		    : sm90 ? sizeof(tiles) / sizeof(tiles[0])
			   : KPERF_SM80_TILES,
	       nd = sm90 ? NDIMS : KPERF_SM80_DIMS;
	const struct hw_gemm *g;
	double S, inv_s, per_flop[4], floor_s[4], cm[NDIMS], cn[NDIMS],
	    best = HUGE_VAL, es, out_b, mem, rate, tile_s, clock, passes;
	struct kperf_gemm_plan pl = {0, 0, 0, 0, 0, 0, 0};

	if (plan)
		*plan = pl;
	if (dtype < 0 || dtype >= HW_GEMM_NKEYS || hw->peak_flops[hw_gemm_dtype(dtype)] <= 0)
		return 0;
	g = hw_gemm_of(hw, dtype);
	if (!(g->flops > 0) || !(m > 0) || !(n > 0) || !(k > 0) || !(b > 0))
		return 0;
	S = sms(hw);
	inv_s = 1 / S;
	/* The split-K partials' passes at HBM: written, and on a GPU of
	 * several L2s (hw.h) written back and read back past them. */
	passes = hw->k.l2s > 1 ? 2 : 1;
	/* The SMs run a tile, its MMAs and its fixed cost, at the profile's
	 * clock (hw_clock: burst 1, or the sustained clock under the power
	 * limit); the HBM terms keep the memory's own clock. */
	clock = hw_clock(hw);
	rate = g->flops * clock;
	tile_s = g->tile_s / clock;
	/* Seconds per FLOP of one SM by class (0: none, the tile skipped), and
	 * what no tile of the class beats: every FLOP on full waves, one
	 * tile's fixed cost. */
	per_flop[0] = S / rate;
	for (int e = 0; e < 3; e++)
		per_flop[e + 1] = g->tile_eff[e] > 0 ? S / (rate * g->tile_eff[e]) : 0;
	for (int e = 0; e < 4; e++)
		floor_s[e] = 2 * b * m * n * k / S * per_flop[e] + tile_s;
	for (size_t d = 0; d < nd; d++) {
		cm[d] = ceil(m / tile_dims[d]);
		cn[d] = ceil(n / tile_dims[d]);
	}
	for (size_t i = 0; i < nt; i++) {
		int e = ts[i].e + 1;
		double tm = tile_dims[ts[i].m], tn = tile_dims[ts[i].n], pf = per_flop[e];
		double count = b * cm[ts[i].m] * cn[ts[i].n];
		if (!(pf > 0) || floor_s[e] >= best)
			continue;
		for (size_t j = 0; j < sizeof(splits) / sizeof(splits[0]); j++) {
			double s = splits[j], w = 2 * tm * tn * (k / s) * pf, waves, t;
			if (s > 1 && (count * s > 2 * S || k / s < 256))
				break;		     /* larger splits fail the same test */
			waves = ceil(count * s / S); /* exact at whole waves */
			t = waves * (w + tile_s);
			if (s > 1)
				t += s * b * m * n * 4 * passes / hw->hbm_Bps;
			if (t < best) {
				best = t;
				pl = (struct kperf_gemm_plan){tm, tn, s, count * s, waves, 0, 0};
			}
			/* Stream-K: the tiles' work in equal shares of the
			 * SMs, a share's tile fragments each costing a tile's
			 * fixed cost (one more than whole tiles a share: the
			 * fragment an SM shares with the next); no floor is
			 * beaten (count tm tn >= b m n).  Fewer tiles than
			 * SMs: each tile's K is shared by S / count SMs, and
			 * the S - count shares that do not finish a tile
			 * write their partial sums (fp32) to a workspace that
			 * the tile's last share reads back (CUTLASS's
			 * stream-K fixup), at HBM as split-K's. */
			if (s == 1 && sk) {
				t = count * inv_s * w + (waves + 1) * tile_s;
				if (count < S)
					t += (S - count) * tm * tn * 4 * 2 / hw->hbm_Bps;
				if (t < best) {
					best = t;
					pl = (struct kperf_gemm_plan){
					    tm, tn, 1, count, count * inv_s, 1, 0};
				}
			}
		}
	}
	es = kperf_elem_bytes(hw_gemm_dtype(dtype));
	out_b = kperf_act_bytes(dtype);
	/* The epilogues' output write after the main loops (kperf.h): the
	 * same bytes whatever the plan, so added to the fastest. */
	if (g->out_eff > 0)
		best += b * m * n * out_b / (hw->hbm_Bps * g->out_eff);
	mem = b * (es * (m * k + k * n) + out_b * m * n) /
	      (hw->hbm_Bps * (g->mem_eff > 0 ? g->mem_eff : 1));
	pl.mem_bound = mem > best;
	if (plan)
		*plan = pl;
	return g->overhead_s + (mem > best ? mem : best);
}

double kperf_gemm_plan(const struct hw_profile *hw, int dtype, double b, double m, double n,
		       double k, struct kperf_gemm_plan *plan)
{
	return kperf_gemm_plan_sched(hw, dtype, b, m, n, k, hw->k.sched, plan);
}

/*
 * kperf_gemm_s remembered per thread: a sweep times the same few hundred
 * shapes for each of its tens of thousands of candidates (the screen's
 * layer times, every unit's GEMMs), and the tile search was 13 % of the
 * default sweep.  The memo is exact: an entry's key is every input
 * kperf_gemm_plan_sched reads -- the shape, and the machine: dtype,
 * schedule, tiles, SMs, clock, HBM bandwidth, whether the dtype has a peak
 * and the dtype's GEMM parameters, compared bit for bit -- so a hit returns
 * what the call would compute.  Profiles are compared by value, never by
 * address (a power-capped profile is a copy on the caller's stack,
 * hw_at_power).  Per thread (no locks; C11 _Thread_local, as cfg.c's
 * parse state): a thread's results do not depend on what other threads
 * timed.  Fixed size, no allocation: KPERF_MEMO_MACHINES machines (a call
 * on another machine is computed, not remembered) and a direct-mapped table
 * of KPERF_MEMO_SLOTS shapes (a collision replaces the entry).
 */
#define KPERF_MEMO_MACHINES 32
#define KPERF_MEMO_SLOTS    4096 /* a power of two */

struct memo_machine {
	struct hw_gemm g;
	double clock, hbm_Bps;
	int dtype, sched, tiles, sms, l2s, peak; /* peak: peak_flops[dtype] > 0 */
};

struct memo_slot {
	double b, m, n, k, t;
	int machine; /* its index + 1; 0: empty */
};

struct memo {
	struct memo_machine machine[KPERF_MEMO_MACHINES];
	int nmachines, last;
	struct memo_slot slot[KPERF_MEMO_SLOTS];
};

static _Thread_local struct memo memo;

/* Whether memo machine a is hw's for dtype and sched, bit for bit. */
static int same_machine(const struct memo_machine *a, const struct hw_profile *hw, int dtype,
			int sched)
{
	return a->dtype == dtype && a->sched == sched && a->tiles == hw->k.tiles &&
	       a->sms == hw->k.sms && a->l2s == hw->k.l2s &&
	       a->peak == (hw->peak_flops[hw_gemm_dtype(dtype)] > 0) &&
	       memcmp(&a->clock, &hw->clock, sizeof(a->clock)) == 0 &&
	       memcmp(&a->hbm_Bps, &hw->hbm_Bps, sizeof(a->hbm_Bps)) == 0 &&
	       memcmp(&a->g, hw_gemm_of(hw, dtype), sizeof(a->g)) == 0;
}

/* The index of hw's machine for dtype and sched in the memo (added where
 * new), or -1 when the memo holds no more machines.  The last one found
 * is tried first, its fields compared where they are (no key built). */
static int memo_machine(const struct hw_profile *hw, int dtype, int sched)
{
	struct memo_machine *x;
	if (memo.nmachines && same_machine(&memo.machine[memo.last], hw, dtype, sched))
		return memo.last;
	for (int i = 0; i < memo.nmachines; i++)
		if (same_machine(&memo.machine[i], hw, dtype, sched))
			return memo.last = i;
	if (memo.nmachines == KPERF_MEMO_MACHINES)
		return -1;
	x = &memo.machine[memo.nmachines];
	x->g = *hw_gemm_of(hw, dtype);
	x->clock = hw->clock;
	x->hbm_Bps = hw->hbm_Bps;
	x->dtype = dtype;
	x->sched = sched;
	x->tiles = hw->k.tiles;
	x->sms = hw->k.sms;
	x->l2s = hw->k.l2s;
	x->peak = hw->peak_flops[hw_gemm_dtype(dtype)] > 0;
	return memo.last = memo.nmachines++;
}

/* h with v's bits mixed in.  A shape's doubles differ in their exponent
 * and top mantissa bits (round numbers), which a multiply carries only
 * upwards: each word goes through MurmurHash3's 64-bit finaliser (fmix64),
 * whose shifts bring every bit down to the slot's low bits. */
static uint64_t memo_mix(uint64_t h, double v)
{
	uint64_t u;
	memcpy(&u, &v, sizeof(u));
	h ^= u;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

double kperf_gemm_s(const struct hw_profile *hw, int dtype, double b, double m, double n, double k)
{
	int sched = hw->k.sched, mi;
	uint64_t h;
	struct memo_slot *s;

	if (dtype < 0 || dtype >= HW_GEMM_NKEYS || (mi = memo_machine(hw, dtype, sched)) < 0)
		return kperf_gemm_plan_sched(hw, dtype, b, m, n, k, sched, NULL);
	h = memo_mix(memo_mix(memo_mix(memo_mix((uint64_t)mi, b), m), n), k);
	s = &memo.slot[h & (KPERF_MEMO_SLOTS - 1)];
	/* Bit for bit: equal doubles that differ in their bits (0 and -0)
	 * only miss. */
	if (s->machine == mi + 1 && memcmp(&s->b, &b, sizeof(b)) == 0 &&
	    memcmp(&s->m, &m, sizeof(m)) == 0 && memcmp(&s->n, &n, sizeof(n)) == 0 &&
	    memcmp(&s->k, &k, sizeof(k)) == 0)
		return s->t;
	*s = (struct memo_slot){
	    b, m, n, k, kperf_gemm_plan_sched(hw, dtype, b, m, n, k, sched, NULL), mi + 1};
	return s->t;
}

double kperf_grouped_s(const struct hw_profile *hw, int dtype, double groups, double m, double n,
		       double k)
{
	double s = KPERF_GROUPED_STREAMS, full, rest, t = 0;
	if (!(groups >= 1))
		return 0;
	full = floor(groups / s);
	rest = groups - full * s;
	if (full > 0)
		t = full * kperf_gemm_s(hw, dtype, s, m, n, k);
	if (rest > 0)
		t += kperf_gemm_s(hw, dtype, rest, m, n, k);
	return t;
}

double kperf_gemm_min_s(const struct hw_profile *hw, int dtype, double flops)
{
	double p;
	if (dtype < 0 || dtype >= HW_GEMM_NKEYS || hw->peak_flops[hw_gemm_dtype(dtype)] <= 0 ||
	    !((p = hw_gemm_of(hw, dtype)->flops) > 0))
		return 0;
	/* fp8: the faster of its libraries' peaks, a bound whatever the
	 * recipe (kperf_gemm_key). */
	if (dtype == HW_FP8 && hw_gemm_of(hw, HW_GEMM_FP8_BLOCK)->flops > p)
		p = hw_gemm_of(hw, HW_GEMM_FP8_BLOCK)->flops;
	return flops / (p * hw_clock(hw));
}

int kperf_gemm_key(int dtype, int recipe)
{
	return dtype == HW_FP8 && recipe == LAYOUT_FP8_BLOCKWISE ? HW_GEMM_FP8_BLOCK : dtype;
}

double kperf_attn_flops(int pass, double b, double heads, double sq, double skv, double d,
			int causal)
{
	double f = 4 * b * heads * sq * skv * d / (causal ? 2 : 1);
	return pass ? 2.5 * f : f;
}

double kperf_attn_win_flops(int pass, double b, double heads, double sq, double skv, double d,
			    int causal, double window)
{
	double a, n1, pairs, f;
	if (!causal || !(window > 0))
		return kperf_attn_flops(pass, b, heads, sq, skv, d, causal);
	/* Query i (the last aligned with the last key) sees min(a + i, w)
	 * keys, a = skv - sq + 1: the first n1 (a + i < w) a + i each, the
	 * rest w. */
	a = skv - sq + 1;
	n1 = window - a;
	n1 = n1 < 0 ? 0 : n1 > sq ? sq : n1;
	pairs = n1 * a + n1 * (n1 - 1) / 2 + (sq - n1) * window;
	if (a < 1) /* more queries than keys: those before the first see none */
		pairs = 0;
	f = 4 * b * heads * pairs * d;
	return pass ? 2.5 * f : f;
}

/* Throughput at head dimension d relative to 128. */
static double head_factor(const struct hw_attn *a, double d)
{
	double x = log2(d > 1 ? d : 1);
	if (x <= 6)
		return a->d64;
	if (x >= 8)
		return a->d256;
	if (x <= 7)
		return a->d64 + (1 - a->d64) * (x - 6);
	return 1 + (a->d256 - 1) * (x - 7);
}

/* Blocks of 128 queries and the mean keys a block attends to: all, or up
 * to its diagonal (the last block of queries aligned with the last key);
 * with a sliding window of w keys (w > 0, causal: a query sees itself and
 * the w - 1 keys before it), a block's band of whole 128-key blocks,
 * 128 (1 + ceil((w - 1) / 128)) keys, as FlashAttention's local attention
 * runs it: forward, query block m the key blocks from (128 m - (w - 1)) /
 * 128 to m (hopper/block.h get_n_block_min_max); backward, key block n the
 * query blocks from n to ceil((128 (n + 1) + w - 1) / 128)
 * (get_m_block_min_max): the same band, so one count times both passes. */
static void attn_blocks(double sq, double skv, int causal, double window, double *blocks,
			double *keys)
{
	*blocks = ceil(sq / 128);
	*keys = skv;
	if (causal) {
		double off = skv - sq, full = floor(sq / 128), sum;
		/* sum over blocks i of min(skv, off + (i+1) 128) */
		if (full > *blocks)
			full = *blocks;
		sum = full * off + 128 * full * (full + 1) / 2 + (*blocks - full) * skv;
		if (window > 0 && 128 * (1 + ceil((window - 1) / 128)) < skv) {
			/* min(that, the band): the blocks whose diagonal reaches
			 * past the band hold the band alone. */
			double band = 128 * (1 + ceil((window - 1) / 128));
			sum = 0;
			for (double i = 0; i < *blocks; i++) {
				double k = i < full ? off + 128 * (i + 1) : skv;
				sum += k < band ? k : band;
			}
		}
		*keys = sum / *blocks;
		if (*keys < 1)
			*keys = 1;
	}
}

/* The mean keys of a causal backward's blocks (attn_blocks' *keys, no
 * window) where the kernel skips at most `skip` (> 0) of each key block's
 * fully masked 128-query blocks and runs the rest as unmasked ones: key
 * block j (of ceil(skv / 128)) has m_j = j - (skv - sq) / 128 of them
 * (0 .. blocks), and its max(0, m_j - skip) run, each 128 more keys over
 * the blocks' mean.  cuDNN 9.19.1's fp8 backward on H200 (cudnn-frontend's
 * Llama 3.1 rows, causal against non-causal at 2K-32K tokens, docs/MODEL.md
 * "Causal fp8 backward on Hopper"): its causal time grows towards the non-causal one with the
 * sequence (0.64 of it at 4K, 0.91 at 32K) where a kernel that skips every
 * masked block stays near half (its bf16: 0.59, 0.49). */
static double capped_skip_keys(double sq, double skv, double blocks, double keys, double skip)
{
	double nk = ceil(skv / 128), off = (skv - sq) / 128, run = 0;
	for (double j = 0; j < nk; j++) {
		double m = j - off;
		m = m < 0 ? 0 : m > blocks ? blocks : m;
		run += m > skip ? m - skip : 0;
	}
	return keys + 128 * run / blocks;
}

/* attn_blocks for the pass as the library runs it: a causal backward
 * whose kernel skips at most bwd_skip masked blocks (hw_attn) runs the
 * rest (capped_skip_keys). */
static void attn_pass_blocks(const struct hw_attn *a, int pass, double sq, double skv, int causal,
			     double window, double *blocks, double *keys)
{
	attn_blocks(sq, skv, causal, window, blocks, keys);
	if (pass && causal && !(window > 0) && a->bwd_skip > 0)
		*keys = capped_skip_keys(sq, skv, *blocks, *keys, a->bwd_skip);
}

double kperf_attn_win_s(const struct hw_profile *hw, int dtype, int pass, double b, double heads,
			double sq, double skv, double d, int causal, double window)
{
	const struct hw_attn *a;
	double blocks, keys, S, rate, waves, per, clock, fixed;

	pass = pass ? 1 : 0;
	if (dtype < 0 || dtype >= HW_NDTYPES || hw->peak_flops[dtype] <= 0)
		return 0;
	a = &hw->k.attn[dtype];
	if (!(a->flops[pass] > 0) || !(b > 0) || !(heads > 0) || !(sq > 0) || !(skv > 0) ||
	    !(d > 0))
		return 0;
	S = sms(hw);
	attn_pass_blocks(a, pass, sq, skv, causal, window, &blocks, &keys);
	per = 4 * 128 * keys * d * (pass ? 2.5 : 1);
	/* A block's work and its fixed cost at the SMs' clock (hw_clock). */
	clock = hw_clock(hw);
	rate = a->flops[pass] * clock / S * head_factor(a, d);
	if (!(rate > 0))
		return 0;
	waves = ceil(b * heads * blocks / S);
	/* The backward's fixed cost a block is its rows' d-wide tiles: the
	 * kernels before and after the main one (FlashAttention's
	 * flash_bwd_dot_do_o_kernel, rowsum(dO o O) and dQaccum cleared;
	 * flash_bwd_convert_dq_kernel, fp32 dQaccum to dQ) and the key
	 * block's dK and dV out: tile_s[1] at head dim 128, in proportion to
	 * d (docs/MODEL.md, "Attention"). */
	fixed = a->tile_s[pass] * (pass ? d / 128 : 1);
	return a->overhead_s + waves * (per / rate + fixed / clock);
}

double kperf_attn_s(const struct hw_profile *hw, int dtype, int pass, double b, double heads,
		    double sq, double skv, double d, int causal)
{
	return kperf_attn_win_s(hw, dtype, pass, b, heads, sq, skv, d, causal, 0);
}

double kperf_attn_win_min_s(const struct hw_profile *hw, int dtype, int pass, double b,
			    double heads, double sq, double skv, double d, int causal,
			    double window)
{
	const struct hw_attn *a;
	double f = 1, blocks, keys;

	pass = pass ? 1 : 0;
	if (dtype < 0 || dtype >= HW_NDTYPES || hw->peak_flops[dtype] <= 0)
		return 0;
	a = &hw->k.attn[dtype];
	if (!(a->flops[pass] > 0))
		return 0;
	/* ceil(x / S) S >= x: every wave's blocks at the best rate. */
	if (a->d64 > f)
		f = a->d64;
	if (a->d256 > f)
		f = a->d256;
	attn_pass_blocks(a, pass, sq, skv, causal, window, &blocks, &keys);
	return b * heads * blocks * 4 * 128 * keys * d * (pass ? 2.5 : 1) /
	       (a->flops[pass] * hw_clock(hw) * f);
}

double kperf_attn_min_s(const struct hw_profile *hw, int dtype, int pass, double b, double heads,
			double sq, double skv, double d, int causal)
{
	return kperf_attn_win_min_s(hw, dtype, pass, b, heads, sq, skv, d, causal, 0);
}

/* torchao's Float8Linear under torch.compile: its tensorwise casts as
 * Inductor's Triton kernels (kperf.h). */
static int compiled_tensorwise(int dtype, int recipe, int exec)
{
	return dtype == HW_FP8 && recipe == LAYOUT_FP8_CURRENT && exec == LAYOUT_EXEC_COMPILED;
}

int kperf_lowp_weight_kept(int dtype, int recipe, int exec)
{
	return !compiled_tensorwise(dtype, recipe, exec);
}

/* Transformer Engine's norm writes the fp8 copy itself (kperf.h). */
static int norm_writes_fp8(int dtype, int recipe, int exec)
{
	return dtype == HW_FP8 && recipe == LAYOUT_FP8_DELAYED &&
	       !compiled_tensorwise(dtype, recipe, exec);
}

double kperf_lowp_norm_out_bytes(int dtype, int recipe, int exec)
{
	return norm_writes_fp8(dtype, recipe, exec) ? 1 : kperf_act_bytes(dtype);
}

double kperf_lowp_copy_bytes(int dtype, int recipe)
{
	if (dtype == HW_FP4)
		return 0.5 + 1.0 / 16;
	if (dtype != HW_FP8)
		return 2;
	switch (recipe) {
	case LAYOUT_FP8_BLOCKWISE:
		return 1 + 4.0 / 128;
	case LAYOUT_FP8_MXFP8:
		return 1 + 1.0 / 32;
	default:
		return 1;
	}
}

double kperf_lowp_gather_bytes(int dtype, int recipe, int exec, int usage)
{
	int per_tensor = recipe == LAYOUT_FP8_DELAYED || recipe == LAYOUT_FP8_CURRENT;
	if (usage == KPERF_GATHER_BF16 || (dtype != HW_FP8 && dtype != HW_FP4) ||
	    compiled_tensorwise(dtype, recipe, exec))
		return kperf_act_bytes(dtype);
	if (dtype == HW_FP8 && per_tensor)
		return 1;
	return (usage == KPERF_GATHER_BOTH ? 2 : 1) * kperf_lowp_copy_bytes(dtype, recipe);
}

double kperf_cp_kv_bytes(int dtype, int recipe, int fp8_attention, int grad)
{
	if (!fp8_attention)
		return kperf_act_bytes(dtype);
	if (grad)
		return 1;
	return dtype == HW_FP8 && recipe == LAYOUT_FP8_MXFP8 ? kperf_act_bytes(dtype) : 1;
}

/* Transformer Engine's per-tensor fp8 cast of n values: with its
 * transposed copy (2 bytes read, 1 + 1 written), or alone where the GPU's
 * fp8 GEMMs take either layout (any_layout: 2 + 1). */
static struct kperf_cast te_cast(int any_layout, double n)
{
	return any_layout
		   ? (struct kperf_cast){"te_cast_fp8", 1, HW_MEM_ELEMENTWISE, 3 * n}
		   : (struct kperf_cast){"te_cast_transpose_fp8", 1, HW_MEM_ELEMENTWISE, 4 * n};
}

int kperf_lowp_casts(int dtype, int recipe, int exec, int of, int any_layout, double n,
		     struct kperf_cast out[KPERF_CASTS_MAX])
{
	int k = 0, weight = of == KPERF_CAST_WEIGHT;
	if (compiled_tensorwise(dtype, recipe, exec)) {
		out[k++] = (struct kperf_cast){"inductor_fp8_quant_amax_partial", 1,
					       HW_MEM_ELEMENTWISE, 2 * n};
		out[k++] =
		    (struct kperf_cast){"inductor_fp8_quant_amax_final", 1, HW_MEM_ELEMENTWISE, 0};
		if (!weight) {
			out[k++] = (struct kperf_cast){"inductor_fp8_cast_both", 1,
						       HW_MEM_ELEMENTWISE, 4 * n};
			return k;
		}
		out[k++] =
		    (struct kperf_cast){"inductor_fp8_cast_fwd", 1, HW_MEM_ELEMENTWISE, 3 * n};
		out[k++] =
		    (struct kperf_cast){"inductor_fp8_cast_bwd", 1, HW_MEM_ELEMENTWISE, 3 * n};
		return k;
	}
	if (dtype == HW_FP4) {
		out[k++] = (struct kperf_cast){"te_compute_amax", 1, HW_MEM_REDUCTION, 2 * n};
		out[k++] = (struct kperf_cast){"te_quantize_nvfp4", 1, HW_MEM_ELEMENTWISE,
					       (3 + 2.0 / 16) * n};
		return k;
	}
	if (dtype != HW_FP8)
		return 0;
	if (of == KPERF_CAST_PARAM) {
		if (recipe == LAYOUT_FP8_BLOCKWISE)
			out[k++] =
			    (struct kperf_cast){"te_create_columnwise_fp8_blockwise", 1,
						HW_MEM_ELEMENTWISE, (2 + 8.0 / (128 * 128)) * n};
		else if (!any_layout &&
			 (recipe == LAYOUT_FP8_DELAYED || recipe == LAYOUT_FP8_CURRENT))
			out[k++] =
			    (struct kperf_cast){"te_transpose_fp8", 1, HW_MEM_ELEMENTWISE, 2 * n};
		return k;
	}
	switch (recipe) {
	case LAYOUT_FP8_CURRENT:
		/* A norm's output: its amax from the norm kernel. */
		if (of != KPERF_CAST_NORMED)
			out[k++] =
			    (struct kperf_cast){"te_compute_amax", 1, HW_MEM_REDUCTION, 2 * n};
		out[k++] =
		    (struct kperf_cast){"te_compute_scale_from_amax", 0, HW_MEM_ELEMENTWISE, 12};
		out[k++] = te_cast(any_layout, n);
		break;
	case LAYOUT_FP8_BLOCKWISE:
		out[k++] = (struct kperf_cast){"te_quantize_fp8_blockwise", 1, HW_MEM_ELEMENTWISE,
					       (4 + 8.0 / (weight ? 128 * 128 : 128)) * n};
		break;
	case LAYOUT_FP8_MXFP8:
		out[k++] = (struct kperf_cast){"te_quantize_mxfp8", 1, HW_MEM_ELEMENTWISE,
					       (4 + 2.0 / 32) * n};
		break;
	default:
		/* A norm's output: the norm wrote the row-wise copy, the
		 * column-wise one its transpose (none where the GPU's fp8
		 * GEMMs read the row-wise copy either way). */
		if (of != KPERF_CAST_NORMED)
			out[k++] = te_cast(any_layout, n);
		else if (!any_layout)
			out[k++] =
			    (struct kperf_cast){"te_transpose_fp8", 1, HW_MEM_ELEMENTWISE, 2 * n};
	}
	return k;
}

double kperf_lowp_cast_s(const struct hw_profile *hw, int dtype, int recipe, int exec, int of,
			 double n)
{
	struct kperf_cast c[KPERF_CASTS_MAX];
	double t = 0;
	for (int i = 0, k = kperf_lowp_casts(dtype, recipe, exec, of, hw->fp8_any_layout, n, c);
	     i < k; i++)
		t += kperf_mem_s(hw, c[i].kind, c[i].bytes);
	return t;
}

double kperf_mem_impl_s(const struct hw_profile *hw, int kind, int impl, double bytes)
{
	return kperf_mem_kernels_s(hw, kind, impl, bytes, 1);
}

double kperf_mem_kernels_s(const struct hw_profile *hw, int kind, int impl, double bytes,
			   double kernels)
{
	double e;
	if (kind < 0 || kind >= HW_MEM_NKINDS)
		kind = HW_MEM_ELEMENTWISE;
	e = impl > HW_MEM_IMPL_ANY && impl < HW_MEM_NIMPLS && hw->k.mem_impl_eff[kind][impl] > 0
		? hw->k.mem_impl_eff[kind][impl]
		: hw->k.mem_eff[kind];
	if (!(e > 0))
		e = 1;
	return (kernels > 1 ? kernels : 1) * hw->k.mem_overhead_s[kind] +
	       (bytes > 0 ? bytes : 0) / (hw->hbm_Bps * e);
}

double kperf_mem_grid_s(const struct hw_profile *hw, int kind, int impl, double bytes, double rows,
			int warps)
{
	double e, share, prog, sms = hw->k.sms;
	if (kind < 0 || kind >= HW_MEM_NKINDS)
		kind = HW_MEM_ELEMENTWISE;
	if (!(hw->k.mem_warp_Bps[kind] > 0) || !(rows >= 1) || warps <= 0 || !(sms > 0) ||
	    !(bytes > 0))
		return kperf_mem_impl_s(hw, kind, impl, bytes);
	e = impl > HW_MEM_IMPL_ANY && impl < HW_MEM_NIMPLS && hw->k.mem_impl_eff[kind][impl] > 0
		? hw->k.mem_impl_eff[kind][impl]
		: hw->k.mem_eff[kind];
	if (!(e > 0))
		e = 1;
	share = hw->hbm_Bps * e / sms;
	prog = warps * hw->k.mem_warp_Bps[kind];
	return hw->k.mem_overhead_s[kind] +
	       ceil(rows / sms) * (bytes / rows) / (prog < share ? prog : share);
}

double kperf_mem_s(const struct hw_profile *hw, int kind, double bytes)
{
	return kperf_mem_impl_s(hw, kind, HW_MEM_IMPL_ANY, bytes);
}
