/*
 * kbench.h - kernel measurements (CSV) against the kernel model (kperf.h):
 * reading them, predicting them, fitting the model's parameters on them.
 *
 * Files read (the kind is told by the header): ../shared/kernels/gemm.csv
 * and gemm_xla_table.csv, attention.csv, memory_bound.csv (their README
 * gives the columns), and tests/data/gpu/kernels.csv (scripts/kernel_sweep.py
 * documents its columns).  Each row becomes a measurement of one class --
 * GEMM, attention forward, backward or both, memory-bound -- on a GPU as
 * the file names it, with its dtype, shape, time and source.  Rows the
 * model cannot place (a shape or pass not stated, a GPU without a
 * profile, unfused attention) are counted with the reason and left out.
 *
 * Burst, stream or step: the profiles' kernel parameters are burst rates
 * (a microbenchmark's short run).  A steady stream of one kernel settles
 * at the GPU's power-limited clock for that work (hw_stream) once its
 * kernel runs HW_SETTLED_KERNEL_S (1 ms) or more: our sweep's attention
 * rows; rows
 * whose notes state "N back-to-back calls" (SimuMax's 75) fall towards it
 * by their busy time, from HW_SUSTAINED_AFTER_S (5 ms) to
 * HW_THROTTLED_AFTER_S (25 ms), and so do our sweep's GEMM rows, bf16
 * and fp8, by their CUDA-graph replays' calls (kbench.c, sweep_clock).  A trace's kernels (a training step) run at the
 * step's sustained clock, that of the dtype its GEMMs ran in (hw_step_clock).  The public maxima (MAMF:
 * iterations separated by L2 flushes, XLA's table, DeepGEMM, cuDNN,
 * FlashAttention) state no such window and are bursts.
 *
 * GPUs of one silicon share compute parameters when fitted: H100 SXM,
 * H800 and H200 (the same GH100 die, 132 SMs and clocks; they differ in
 * memory and NVLink); A100 40 and 80 GB.  fp16 rows fit bf16's
 * parameters (the same tensor-core rate).
 */
#ifndef PRISM_KBENCH_H
#define PRISM_KBENCH_H

#include <stddef.h>

#include "hw.h"
#include "prism.h"

/* KB_FP8_LINEAR: a linear layer's FP8 speed-up over bf16 (forward and
 * both gradients, casts included); its "time" is the speed-up, for
 * checking only (other.csv's torchao rows). */
enum kbench_class {
	KB_GEMM,
	KB_ATTN_FWD,
	KB_ATTN_BWD,
	KB_ATTN_BOTH,
	KB_MEM,
	KB_MEM_EAGER,
	KB_FP8_LINEAR,
	KB_NCLASSES
};

struct kbench_row {
	int cls;		  /* enum kbench_class */
	int dtype;		  /* enum hw_dtype (fp16 kept as such) */
	int mem_kind;		  /* enum hw_mem_kind (memory-bound) */
	int mem_impl;		  /* enum hw_mem_impl: who wrote the kernel, where
				   * the row says (memory-bound) */
	char gpu[48];		  /* as the file names it */
	char profile[32];	  /* configs/hw/ name, "" if none */
	char source[200];	  /* repo@commit:path, URL, or the file */
	char impl[128];		  /* the implementation as the file states it:
				   * gemm*.csv's and memory_bound.csv's
				   * `implementation`, attention.csv's `kernel`,
				   * other.csv's `item`, our sweep's `backend`;
				   * "" for a trace's rows */
	double b, m, n, k;	  /* GEMM */
	int waves;		  /* GEMM timed by a library that runs its tiles
				   * in waves, whatever the profile's schedule
				   * (XLA's choice of kernel, DeepGEMM) */
	int blockwise;		  /* an fp8 GEMM with DeepGEMM's 128 x 128 block
				   * scaling: timed and fitted with the
				   * profile's fp8_blockwise group (hw.h), the
				   * other fp8 rows (cuBLASLt's per-tensor
				   * kernels: torch._scaled_mm, Transformer
				   * Engine) with fp8's */
	int grouped;		  /* a grouped GEMM as TransformerEngine runs it
				   * (general_grouped_gemm: b GEMMs over 4
				   * streams), timed by kperf_grouped_s */
	int accum;		  /* GEMM accumulating into its output, C += A B
				   * (TransformerEngine's accumulate=True, DeepGEMM's
				   * weight-gradient kernels): it reads the output
				   * and writes it back, which the model's GEMM
				   * (one write) does not time; reported apart,
				   * fits nothing */
	int module;		  /* an fp8 GEMM timed as a module's forward under
				   * autocast (TransformerEngine's te.Linear): its
				   * input's and weight's quantisation with the
				   * GEMM, which the model's GEMM does not time;
				   * reported apart, fits nothing */
	double heads, sq, skv, d; /* attention */
	int causal;
	double window;	  /* attention with a sliding window of so many keys, 0 none */
	int fa2;	  /* attention by FlashAttention-2 (flash-attn 2, PyTorch
			    * SDPA's flash backend): reported apart, fits
			    * nothing; the model's attention is the kernels
			    * frameworks pick on Hopper and Blackwell (cuDNN,
			    * FlashAttention-3/4) */
	double bytes;	  /* memory-bound */
	int timing;	  /* memory-bound and GEMM: enum kbench_timing */
	double launches;  /* memory-bound, KB_TIME_EVENTS: the kernels the
			   * timed Python-level call launches, counted from
			   * its code (Liger's rows; 0: not counted, no host
			   * floor; kbench_predict) */
	double kernels;	  /* memory-bound: the kernels the timed call runs
			   * on the device one after another, each with the
			   * kind's floor, where the source times their sum
			   * (kperf_mem_kernels_s; 0: one) */
	double grid_rows; /* memory-bound: a persistent grid's kernel (one
			   * program an SM walking its rows in turn,
			   * kperf_mem_grid_s): the tensor's rows; 0 not one */
	int grid_warps;	  /* and the warps a program runs */
	double time_s;	  /* measured */
	int sustained;	  /* the clock the row ran at (KB_BURST, KB_STEP,
			   * KB_STREAM; kbench_predict) */
	int step_dtype;	  /* KB_STEP: the dtype its step's GEMMs ran in
			   * (the trace's, predict_trace_dtype), whose step
			   * clock every kernel of the step ran at
			   * (hw_step_clock); 0 (fp32), like any dtype
			   * without a clock of its own, reads bf16's */
	double throttle;  /* KB_STREAM: how far its clock had fallen from the
			   * burst clock towards the stream one, 0..1 (1: settled) */
	int best_square;  /* a GEMM summary: the best TFLOP/s over square
			    * sizes (time_s: 4096^3 at that rate) ... */
	double sq_set[8]; /* ... over the n_sq sizes the source lists, */
	int n_sq;
	double sq_max; /* or, n_sq 0, from 256 up to sq_max, 2^(1/4) apart */
};

/* How a memory-bound or GEMM row was timed: KB_TIME_OTHER (a bandwidth
 * summary, or a method that adds nothing the model tells apart: its
 * intercept is taken as the kernel's floor, as before), KB_TIME_EVENTS
 * (memory-bound: CUDA events around each call after an L2 flush,
 * triton.testing.do_bench: the floor plus the profile's mem_events_s),
 * KB_TIME_ISOLATED (GEMM: CUPTI's duration of single calls on an idle
 * GPU, inputs copied in afresh before each, XLA's matmul_perf_table_gen:
 * the kernel plus the profile's gemm_isolated_s), KB_TIME_DEVICE (the
 * kernel alone on the device, in a stream of them: our sweep's CUDA-graph
 * replays).  kbench_fit takes a memory kind's floor, and a GEMM dtype's
 * fixed cost where it also has isolated rows, from the device-timed rows
 * where there are some. */
enum kbench_timing { KB_TIME_OTHER, KB_TIME_EVENTS, KB_TIME_DEVICE, KB_TIME_ISOLATED };

/* The clock a row ran at (docs/MODEL.md, "Sustained rates"):
 *  KB_BURST   a microbenchmark's short run: the profile's burst rates;
 *  KB_STEP    a training step's kernel (a trace's rows): the step clock
 *             of the dtype its step's GEMMs ran in, hw_step_clock(hw,
 *             step_dtype) (bf16's: hw_sustained);
 *  KB_STREAM  a steady stream of one kernel: our sweep's rows whose
 *             kernel runs HW_SETTLED_KERNEL_S (1 ms) or more, settled
 *             (throttle 1: hw_stream for the row's dtype), its GEMM rows
 *             aside (their replays' calls, as below); and rows whose
 *             notes state "N back-to-back calls" (after "W warmup") where
 *             the stream outlasts HW_SUSTAINED_AFTER_S (5 ms): the clock
 *             over the timed calls, W t to (W + N) t for calls of t, taken
 *             as 1 up to 5 ms of busy time, the stream clock from
 *             HW_THROTTLED_AFTER_S (25 ms), linear between; throttle its
 *             mean fall, clock = 1 - throttle (1 - hw_stream). */
enum { KB_BURST, KB_STEP, KB_STREAM };

/* Rows a reader left out, and the first reasons, for the report. */
#define KBENCH_SKIP_WHYS 12
struct kbench_skips {
	size_t skipped;			/* rows left out */
	char why[KBENCH_SKIP_WHYS][96]; /* the first KBENCH_SKIP_WHYS reasons */
	size_t n[KBENCH_SKIP_WHYS];	/* rows left out for each */
	int n_why;
};

/* The whole of the regular file at path, NUL-terminated (*out, to free):
 * 0, or PRISM_EIO (not a regular file: a FIFO would block), PRISM_ENOMEM,
 * PRISM_EFORMAT (a NUL byte in it). */
int kbench_slurp(const char *path, char **out, struct prism_err *err);

/* The measurement files path names: itself, or where it is a directory
 * its *.csv files whose names start with prefix ("": all), at most
 * KBENCH_MAX_FILES, in name order (so that rows and reports are the same
 * whatever order the directory lists them in); read(ctx, file, err) on
 * each until one fails.  0, or its error, or PRISM_EIO naming path. */
#define KBENCH_MAX_FILES 256
int kbench_files(const char *path, const char *prefix,
		 int (*read)(void *ctx, const char *file, struct prism_err *err), void *ctx,
		 struct prism_err *err);

/* One more row left out for reason why. */
void kbench_skip(struct kbench_skips *s, const char *why);

struct kbench {
	struct kbench_row *rows;
	size_t n, cap;
	struct kbench_skips skips;
};

/* Read a CSV file (any of the kinds above) or every *.csv of a
 * directory, appending to kb.  0, or PRISM_EIO / PRISM_EFORMAT naming
 * the file and line, or PRISM_ENOMEM. */
int kbench_read(struct kbench *kb, const char *path, struct prism_err *err);
void kbench_release(struct kbench *kb);

/* Append one row (a measurement from elsewhere: a trace's GEMMs): 0, or
 * PRISM_ENOMEM.  A row with a count out of range (KBENCH_MAX_DIM,
 * KBENCH_MAX_BYTES) is left out, counted in kb->skips with the reason. */
int kbench_add(struct kbench *kb, const struct kbench_row *r);

/* The profile (configs/hw name) of a GPU as the files name it, or NULL. */
const char *kbench_profile(const char *gpu);

/* The family whose compute parameters a profile shares ("gh100",
 * "ga100", or the profile's own name). */
const char *kbench_family(const char *profile);

/* The nearest measured sibling of a profile whose own kernel rows are
 * too few to fit its GEMM shape parameters (tile and kernel costs,
 * smaller tiles' throughput, memory efficiency): GB200 and B300 take
 * B200's (the Blackwell die, 148 or 160 SMs), GB300 B300's, MI300X and
 * MI325X MI355X's (the only AMD part with a GEMM table); *clock (if not
 * NULL) is the profile's clock over the sibling's, by which a tile's
 * fixed cost is divided.  NULL: none (docs/MODEL.md, "Never above the
 * measured maxima"). */
const char *kbench_sibling(const char *profile, double *clock);

/* The model's time of row r on hw (kperf.h), at the clock r ran at: a
 * step's row at its step's clock (hw_step_clock(hw, r->step_dtype)),
 * whatever the row's own dtype, a stream's at
 * its dtype's stream clock (hw_stream), any other at the burst clock
 * (1), whatever clock hw holds (a copy of hw is timed
 * where it holds another: a profile set to burst, hw->clock = 1, times
 * burst rows without one).  flat = 1: the model before shapes mattered
 * (GEMM 70 % of the datasheet peak + 3 us, attention 50 %, memory-bound
 * 70 % of HBM + 3 us, no clock), for comparison. */
double kbench_predict(const struct hw_profile *hw, const struct kbench_row *r, int flat);

/* The GEMM key (hw.h) a GEMM row is timed and fitted with: its dtype's
 * (fp16: bf16's), or HW_GEMM_FP8_BLOCK for a blockwise row. */
int kbench_gemm_key(const struct kbench_row *r);

/* A GEMM row's measured rate, FLOP/s (2 b m n k / time; a best-square
 * summary's best), at whatever clock it ran; 0 for other classes. */
double kbench_rate(const struct kbench_row *r);

/* Rows a group needs to fit every parameter of its class (fewer: the
 * achievable peak, or bandwidth, alone). */
#define KBENCH_FULL_FIT 20

/* Fit hw's parameters for the rows rows[idx[0..n)] (all of one family):
 * GEMM parameters of GEMM key `dtype` (cls KB_GEMM: a dtype, or
 * HW_GEMM_FP8_BLOCK, which starts from fp8's where the profile states
 * none), attention parameters of
 * dtype (cls KB_ATTN_FWD: forward, backward and both rows), or the
 * memory-bound kind `dtype` (cls KB_MEM).  Minimises the mean squared log
 * error (GSL Nelder-Mead; memory-bound: a weighted least-squares line).
 * With few rows only the achievable peak (or bandwidth) is fitted, the
 * rest kept.  A GEMM's achievable peak is at most the best rate its rows
 * measured (kbench_rate) and the datasheet's.  hws[i] is the profile of rows[idx[i]] (HBM bandwidths
 * differ within a family); the fitted parameters are written into every
 * hws[i].  Returns the rows used. */
size_t kbench_fit(struct hw_profile *const *hws, const struct kbench_row *rows, const size_t *idx,
		  size_t n, int cls, int dtype);

const char *kbench_class_name(int cls);

/* The largest count a measurement row may state: a GEMM's or an
 * attention's dimension, batch or heads, a square size (no kernel has a
 * dimension of 2^32), and bytes (a PiB).  Beyond them a row is left out
 * with the reason, before a product or a loop over sizes meets them. */
#define KBENCH_MAX_DIM	 4294967296.0
#define KBENCH_MAX_BYTES 1125899906842624.0

/* A positive finite number at the start of s ("32768 (topk, sparse)" is
 * 32768), or 0 (empty, "not stated", not positive, NaN, infinite). */
double kbench_num(const char *s);

/* The count at the start of s: 0 when none is stated (kbench_num 0); 1
 * with *out a whole number in 1..max; -1 when the number stated is not
 * one (a fraction, or more than max: the row is left out). */
int kbench_count(const char *s, double max, double *out);

/* The next record of a CSV text at *p split into at most max fields, in
 * place (quotes removed, doubled quotes kept once); *p moves past it.  The
 * field count, or -1 at the end.  (cbench.h reads collectives with it.) */
int kbench_record(char **p, char **f, int max);

/* The most fields kbench_record is asked for in a measurement file's row. */
#define KBENCH_MAX_FIELDS 40

/* A CSV file's header: its column names (kbench_record's fields). */
struct kbench_cols {
	char *name[KBENCH_MAX_FIELDS];
	int n;
};

/* The field of a row f (nf fields) under the column called name, or ""
 * where the header has none or the row is short of it. */
const char *kbench_col(const struct kbench_cols *h, char **f, int nf, const char *name);

#endif
