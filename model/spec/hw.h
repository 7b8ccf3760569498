/*
 * hw.h - hardware profiles: a GPU, its node, and the network between nodes.
 *
 * Profiles are libconfig files in configs/hw/ (each number commented with
 * its unit and source there).  All values here are SI: FLOP/s, bytes/s,
 * bytes, seconds.  Peak FLOP/s are dense (no 2:4 sparsity); a dtype the
 * GPU has no tensor path for is 0.
 */
#ifndef PRISM_HW_H
#define PRISM_HW_H

#include "prism.h"

/* GPUs (and NICs) of a node at most: an NVLink domain of 72 and beyond. */
#define HW_MAX_NODE_GPUS 1024

/* FP4 (Blackwell's e2m1 with block scales) has its place: a peak in the
 * profiles that have one, and kernel parameters. */
enum hw_dtype { HW_FP32, HW_TF32, HW_BF16, HW_FP16, HW_FP8, HW_FP4, HW_NDTYPES };

/*
 * Kernel efficiency by shape (kperf.h), per GPU; the profile's `kernels`
 * group sets them, each with its source, and what it leaves out comes from
 * hw_kernels_default().  Times in seconds, rates in FLOP/s and fractions.
 */
/* Host links: PCIe by generation (x16), NVLink-C2C (Grace with Hopper or
 * Blackwell).  "pcie3" .. "pcie6", "nvlink-c2c" in a profile. */
enum hw_host_link {
	HW_HOST_NONE,
	HW_HOST_PCIE3,
	HW_HOST_PCIE4,
	HW_HOST_PCIE5,
	HW_HOST_PCIE6,
	HW_HOST_C2C,
	HW_HOST_NKINDS
};

/* The host link's name as a profile writes it ("none" for HW_HOST_NONE,
 * "?" beyond), and back: -1 if unknown. */
const char *hw_host_link_name(int kind);
int hw_host_link_parse(const char *s);

enum hw_mem_kind { HW_MEM_ELEMENTWISE, HW_MEM_NORM, HW_MEM_REDUCTION, HW_MEM_NKINDS };

/*
 * A GEMM's parameter group (hw_kernels.gemm) is its dtype's, or for fp8 the
 * library's that the precision recipe runs (kperf_gemm_key, docs/MODEL.md
 * "Kernel efficiency": fp8 GEMMs by library): `gemm.fp8` is cuBLASLt's
 * per-tensor-scaled kernels (Transformer Engine's delayed and current
 * recipes, torch._scaled_mm, torchao; on Blackwell also the MXFP8 and
 * NVFP4 block-scaled ones), `gemm.fp8_blockwise` the 128 x 128
 * block-scaled kernels of the blockwise recipe on Hopper, fitted on
 * DeepGEMM's rows.  A profile that states no fp8_blockwise group (flops 0
 * here) times those GEMMs with fp8's (hw_gemm_of).
 */
enum { HW_GEMM_FP8_BLOCK = HW_NDTYPES, HW_GEMM_NKEYS };

/* Who wrote a memory-bound kernel, where a measurement or a step's kernel
 * says so (docs/MODEL.md, "Kernel efficiency": implementations): the
 * kind's line (any: the implementation unknown or unmeasured, e.g.
 * Transformer Engine's and Apex's norms), Triton kernels written by hand
 * (Liger's), PyTorch's own native norm kernels (ATen's layer_norm_kernel.cu,
 * torch.nn.LayerNorm / RMSNorm), torch.compile's generated kernels
 * (Inductor: Megatron's jit_fuser functions).  The profile's names:
 * hw_mem_impl_name. */
enum hw_mem_impl {
	HW_MEM_IMPL_ANY,
	HW_MEM_IMPL_TRITON,
	HW_MEM_IMPL_ATEN,
	HW_MEM_IMPL_COMPILED,
	HW_MEM_IMPL_MULTI_TENSOR,
	/* the same over 4-byte values (fp32 gradients and states): the
	 * kernels load kILP values of a tensor a thread (PyTorch's
	 * fused_adam_utils.cuh, Transformer Engine's multi_tensor/adam.cu),
	 * twice the bytes in flight of 2-byte ones (cost_mem_impl) */
	HW_MEM_IMPL_MULTI_TENSOR_FP32,
	HW_MEM_NIMPLS
};

/* "triton", "aten", "compiled", "multi_tensor", "multi_tensor_fp32" ("any" for HW_MEM_IMPL_ANY,
 * "?" beyond). */
const char *hw_mem_impl_name(int impl);

struct hw_gemm {
	double flops;	    /* the achievable peak (MAMF-like): what the largest
			     * tile reaches on a full wave */
	double tile_s;	    /* fixed time of one output tile (prologue, epilogue) */
	double overhead_s;  /* per kernel */
	double tile_eff[3]; /* throughput of 128x128, 64x128 and 64x64 tiles
			     * relative to 128x256 */
	double mem_eff;	    /* fraction of HBM bandwidth when memory-bound */
	double out_eff;	    /* fraction of HBM bandwidth at which the tiles'
			     * epilogues write the output after their main
			     * loops, not overlapped with them (kperf.h); 0:
			     * overlapped, no term (Hopper's and Blackwell's
			     * asynchronous stores) */
};

struct hw_attn {
	double flops[2];  /* achievable, forward and backward */
	double tile_s[2]; /* fixed time of one 128-query block */
	double overhead_s;
	double d64, d256; /* throughput at head dim 64 and 256 relative to 128 */
	double bwd_skip;  /* a causal backward's key block skips at most so
			   * many of its fully masked 128-query blocks and
			   * runs the rest as unmasked ones (kperf.h); 0: it
			   * skips them all (FlashAttention's
			   * get_m_block_min_max, cuDNN's bf16) */
};

/* The GEMM tiles a GPU's libraries run (kperf.h): CUTLASS/cuBLAS's for
 * every GPU, those plus the ones cuBLAS runs on Hopper, or AMD's
 * (hipBLASLt/Composable Kernel on CDNA 3/4: 256x256 macro tiles the
 * reference). */
enum hw_tiles { HW_TILES_SM80, HW_TILES_SM90, HW_TILES_CDNA };

/* How a GPU's GEMM library schedules the tiles (kperf.h): one thread
 * block a tile, in waves over the SMs; or also stream-K, the tiles' work
 * spread evenly over persistent blocks, one an SM, so that a last wave's
 * idle SMs take a share (cuBLAS on Hopper). */
enum hw_sched { HW_SCHED_WAVES, HW_SCHED_STREAMK };

struct hw_kernels {
	int sms;   /* streaming multiprocessors */
	int tiles; /* enum hw_tiles: the profile's kernels.gemm_tiles */
	int sched; /* enum hw_sched: kernels.gemm_schedule */
	/* L2 caches the SMs are split over (kernels.l2_caches; 1 unless
	 * stated): more than one (CDNA 3/4: one L2 an XCD) and a split-K
	 * GEMM's fp32 partial sums are written back past the L2 at the
	 * kernel's end and read back from there by the reduction, each
	 * pass at HBM (kperf.h); one L2 holds them for the reduction. */
	int l2s;
	struct hw_gemm gemm[HW_GEMM_NKEYS]; /* by GEMM key (HW_GEMM_FP8_BLOCK) */
	struct hw_attn attn[HW_NDTYPES];
	double mem_eff[HW_MEM_NKINDS];	      /* fraction of HBM bandwidth */
	double mem_overhead_s[HW_MEM_NKINDS]; /* the kernel's floor on the device */
	/* What timing each call between two CUDA events after an L2 flush
	 * (triton.testing.do_bench: Liger's rows) adds to a memory-bound
	 * kernel's device time: the events, the cold start.  Not a cost of
	 * the kernel in a step (kperf leaves it out); kbench predicts such
	 * rows with it.  0 unless fitted (docs/MODEL.md, "Kernel
	 * efficiency": memory-bound floors). */
	double mem_events_s[HW_MEM_NKINDS];
	/* What timing a GEMM alone adds to its device time in a stream of
	 * kernels, by dtype: XLA's table (matmul_perf_table_gen: CUPTI's
	 * duration of single calls on an otherwise idle GPU, the inputs
	 * copied in afresh before each).  As mem_events_s: kperf leaves it
	 * out, kbench predicts such rows with it; 0 unless fitted
	 * (docs/MODEL.md, "Kernel efficiency": GEMMs' fixed cost). */
	double gemm_isolated_s[HW_GEMM_NKEYS];
	/* The host's cost per kernel that a Python-level call timed that way
	 * launches (Liger's autograd Functions: its Triton kernels, the
	 * partial-gradient sums, the gradients' accumulation): the row is
	 * host-bound when so many launches outlast the L2 flush do_bench runs
	 * before its start event (docs/MODEL.md, "Kernel efficiency").  Also
	 * a measurement's cost only (kperf leaves it out); 0 unless fitted. */
	double mem_host_s[HW_MEM_NKINDS];
	/* The fraction of HBM bandwidth an implementation's kernels of the
	 * kind reach (enum hw_mem_impl; [kind][HW_MEM_IMPL_ANY] unused): 0
	 * where no row measures it, and the kind's mem_eff serves.  The
	 * kind's floor (mem_overhead_s) serves every implementation. */
	double mem_impl_eff[HW_MEM_NKINDS][HW_MEM_NIMPLS];
	/* What one warp of a persistent grid streams, bytes/s: a kernel
	 * launched as one program an SM, each walking its rows one after
	 * another (Liger's LayerNorm backward), moves a row at most at
	 * warps x this where that is under its share of the bandwidth
	 * (kperf_mem_grid_s).  0 where no row measures it (no such
	 * bound).  A measurement's (kbench) only: no step runs such a
	 * kernel. */
	double mem_warp_Bps[HW_MEM_NKINDS];
};

/*
 * The power balance that sets a busy GPU's clock (gpu.power; docs/MODEL.md,
 * "Sustained rates"): the driver holds the board's average power at its
 * limit, so a step whose kernels of each class fill a share of its span
 * settles where phi_c P_gemm(r) + phi_m mem_w + phi_w wait_w = limit, r
 * the compute kernels' rate (of their burst), at most 1.  Watts at the
 * scale of rated_w (the limit as the driver holds it).
 */
struct hw_power {
	double gemm_w[HW_NDTYPES];   /* P: compute kernels (GEMMs, attention) of a
				      * step whose GEMMs run in this dtype at their
				      * burst rate; 0: not stated (bf16's) */
	double gemm_k_w[HW_NDTYPES]; /* k: what each unit of rate below the burst
				      * saves, P_gemm(r) = P - k (1 - r) down to
				      * the rate that draws rated_w (a stream of
				      * them at the rating), in proportion to r
				      * below it */
	double mem_w;		     /* memory-bound kernels (a copy at full
				      * bandwidth); 0: no balance stated */
	double wait_w;		     /* a resident kernel that waits (a
				      * collective's wait, idle) */
};

struct hw_profile {
	char id[64];   /* the file's name without directory and .cfg */
	char name[64]; /* the system, e.g. "DGX H100" */
	char gpu[64];  /* the GPU model */
	double peak_flops[HW_NDTYPES];
	double hbm_Bps;	   /* memory bandwidth */
	double hbm_bytes;  /* memory capacity */
	double nvlink_Bps; /* per GPU, one direction */
	/* The link from a GPU to its host's memory (activation offloading,
	 * docs/MODEL.md "Activation offloading"): its kind (enum
	 * hw_host_link; HW_HOST_NONE: the profile states none) and what one
	 * GPU's copies reach over it, pinned host memory, each direction. */
	int host_link;
	double host_d2h_Bps, host_h2d_Bps;
	/* Whether the GPU's per-tensor-scaled fp8 GEMMs take either operand
	 * layout (gpu.fp8_layouts "any": cuBLASLt's non-TN fp8 GEMMs, compute
	 * capability 10.x and from 13 -- B200, GB200, B300, GB300), so that
	 * Transformer Engine's casts write no transposed copy (kperf.h
	 * kperf_lowp_casts); 0 ("tn", the default): Hopper's TN-only fp8 GEMMs,
	 * a transposed copy for the other GEMM. */
	int fp8_any_layout;
	int gpus_per_node; /* of a physical node (a server, a compute tray):
			    * the GPUs its NICs serve */
	int nics_per_node;
	int nvlink_domain;   /* GPUs on one scale-up fabric (NVLink/NVSwitch,
			    * xGMI): a multiple of gpus_per_node, 72 in a
			    * GB200 NVL72 rack; 0 (a profile built by hand):
			    * gpus_per_node.  Read through hw_domain(). */
	int mesh;	     /* 1: the domain is a full mesh of point-to-point
			    * links (AMD Infinity Fabric / xGMI), not a switch:
			    * nvlink_Bps is the sum over a GPU's domain - 1
			    * links, and a group of g of the domain's GPUs
			    * reaches (g - 1) / (domain - 1) of it (comm.h) */
	double nic_Bps;	     /* per NIC, one direction */
	double nvlink_lat_s; /* per step of a collective inside a node */
	double net_lat_s;    /* per step across nodes */
	/* Collectives as measured (comm.h; fitted by prism collectives --fit):
	 * the fraction of a link's bandwidth a ring reaches in the node and
	 * across nodes, NVLink SHARP's all-reduce (0: no NVLS), and a fixed
	 * cost per collective. */
	double nvl_eff, net_eff, nvls_eff;
	double coll_base_s;
	double mem_reserve_bytes; /* kept free: CUDA context, library workspaces,
				   * NCCL buffers */
	double slow_compute;	  /* contention (sim.h): a compute kernel beside
				   * a collective runs 1 / (1 + slow_compute) */
	double slow_comm;	  /* and a collective beside compute 1 / (1 +
				   * slow_comm) */
	/* Clocks and power (docs/MODEL.md, "Sustained rates"): the kernel
	 * parameters (k) are burst rates, what a microbenchmark's short run
	 * reaches; a GPU kept busy for longer settles at its power-limited
	 * clock. */
	double rated_w;			 /* the board's power limit (TDP), watts; 0: not
			   * stated (no cap can be modelled) */
	double sustained;		 /* the fraction of the burst compute rate a fully
			   * busy GPU settles at under rated_w (GEMMs,
			   * attention; memory-bound kernels keep their
			   * bandwidth) in a step whose GEMMs run in bf16,
			   * and in any dtype without a clock of its own;
			   * 0 reads as 1 */
	double sustained_dt[HW_NDTYPES]; /* the same for a step whose GEMMs run
					  * in this dtype, as the profile states
					  * it (gpu.sustained's group form); 0:
					  * not stated.  Read through
					  * hw_step_clock() */
	double stream[HW_NDTYPES];	 /* the fraction of the burst compute rate a
				    * steady stream of one kernel of this dtype
				    * (no memory-bound work or idle between its
				    * calls) settles at under rated_w: a
				    * microbenchmark run long enough, not a
				    * training step (kbench.h); 0: sustained.
				    * Read through hw_stream() */
	struct hw_power power;		 /* gpu.power (power.mem_w 0: not stated,
					  * the clocks as stated and the cap
					  * proportional) */
	double clock;			 /* the clock the kernel model times this profile
			   * at, as a fraction of the burst one: kperf.h
			   * scales every compute rate by it.  hw_load sets
			   * sustained (a training step at rated power);
			   * 1: burst (a microbenchmark); hw_at_power caps
			   * it; 0 reads as 1.  Read through hw_clock() */
	struct hw_kernels k;		 /* kernel efficiency by shape (kperf.h) */
	double price_per_gpu_hour;	 /* 'price_per_gpu_hour': one GPU-hour, any
				    * currency, for a sweep's cost (0: not
				    * stated) */
};

/* The dtype of a GEMM key (HW_GEMM_FP8_BLOCK: fp8; a dtype: itself), and
 * the parameters a key's GEMMs are timed with: its group, or fp8's where
 * the profile states no fp8_blockwise group. */
int hw_gemm_dtype(int key);
const struct hw_gemm *hw_gemm_of(const struct hw_profile *hw, int key);

/* A measurement that kept the GPU busy this long without a gap starts to
 * lose its burst clock (kbench.h): flashinfer PR #2899 found B200's clock
 * falling after about 5 ms of back-to-back kernels (its
 * GPU_POWER_THROTTLE_THRESHOLD_MS).  Read for rows that state their calls
 * in their notes (SimuMax's 75 after 25 warm-up). */
#define HW_SUSTAINED_AFTER_S 5e-3

/* ... and a stream of GEMMs has settled at its stream clock after this
 * long, the clock taken linear in the busy time between the two; a row
 * that states its calls is timed at the mean of that clock over its timed
 * calls (kbench.h).  SimuMax's B200 GEMMs (gemm_simumax_table.csv, 75
 * calls after 25 warm-up, grouped 40 after 10) against the burst model
 * fitted on the burst rows alone: those whose whole stream lasts under
 * 10 ms at 1.02 of it, those whose timed calls start after 25 ms at 0.67
 * (dense) and 0.69 (grouped), those between at 0.70-0.75: most of the fall
 * is done by 25 ms (docs/MODEL.md, "Sustained rates").  FA4's stream on
 * B200 falls more slowly and less far (flashinfer PR #2899: -15 % by ~110
 * ms at FlashAttention's count; 1,965 -> ~1,580 MHz). */
#define HW_THROTTLED_AFTER_S 25e-3

/* An attention row of our H100 sweep (tests/data/gpu/kernels.csv; its
 * GEMM rows are timed by their replays' calls instead, kbench.c
 * sweep_clock) whose kernel runs this long or longer is timed at the
 * stream clock, a shorter one at the burst clock: in that sweep the GEMMs'
 * rate falls with the kernel's own length
 * at equal windows (bf16, windows of 3.5-5 ms: kernels of 80-200 us at
 * 0.993 of the burst model, of 1.4-1.7 ms at 0.891; those of 3-13 ms, in
 * windows of 9-39 ms, 0.848: scripts/sustained_fit.py, docs/MODEL.md,
 * "Sustained rates"). */
#define HW_SETTLED_KERNEL_S 1e-3

/* A power cap below this fraction of the rating is refused (layout_check):
 * the proportional rule (hw_capped_clock; the balance's segment below a
 * stream's rate, hw_power_rate) has one point of evidence, GB300's 500 of
 * 1,400 W (36 %); a quarter leaves room below it, and beyond that the rule
 * would be extrapolated into clocks nothing has measured. */
#define HW_MIN_POWER_FRAC 0.25

/* The clock hw's kernels are timed at (hw->clock, 0 read as 1), and the
 * one a fully busy GPU settles at under its rating (hw->sustained, 0 read
 * as 1). */
double hw_clock(const struct hw_profile *hw);
double hw_sustained(const struct hw_profile *hw);
/* The clock a steady stream of dtype's kernels settles at (hw->stream,
 * fp16 reading bf16's; where not stated, the power balance's for a stream
 * of compute kernels, hw_power_rate(hw, dtype, 1, 0, 0), where the profile
 * states the dtype's terms; else hw_sustained). */
double hw_stream(const struct hw_profile *hw, int dtype);

/* The compute share phi of a GPU-bound training step: its GEMMs' and
 * attention's share of the busy time, the rest memory-bound kernels.  Our
 * H100's l16-h4096-m4 (tests/data/gpu; GPU busy 98 % of the step):
 * 73 %.  It relates a stream's clock to a step's, step = 1 - (1 - stream)
 * x phi: H100's bf16 stream 0.872 (stated until session 27; 0.856 since,
 * against the true burst) gave 0.907 against the step's measured 0.913
 * (docs/MODEL.md, "Sustained rates"). */
#define HW_STEP_COMPUTE_SHARE 0.73

/* The clock a training step whose GEMMs run in dtype settles at under
 * the rating (one GPU, one clock: every kernel of the step runs at it):
 * the profile's stated one (gpu.sustained's group form); else, for a
 * dtype other than bf16, the power balance's at the reference step
 * (hw_power_rate at HW_STEP_COMPUTE_SHARE, the rest memory-bound: H100's
 * fp8 0.89614) where the profile states the dtype's terms, or where it
 * states the
 * dtype's stream clock, the relation above, 1 - (1 - hw_stream) x
 * HW_STEP_COMPUTE_SHARE; else bf16's, hw_sustained (fp16 always bf16's;
 * as loaded, the balance's bf16 step where the profile states a balance
 * and no bf16 step clock: H200's 0.88174). */
double hw_step_clock(const struct hw_profile *hw, int dtype);

/* Whether hw states a power balance (gpu.power): its step clock follows
 * a step's own mix (hw_mix_clock), a cap the balance (hw_capped_clock). */
static inline int hw_has_balance(const struct hw_profile *hw)
{
	return hw->power.mem_w > 0;
}

/* The compute rate (a fraction of the burst, in (0, 1]) a step settles at
 * by hw's power balance (struct hw_power): its GEMMs in dtype (fp16 and
 * a dtype the profile does not state read bf16's), its compute kernels
 * filling phi_c of its span at that rate, waiting kernels phi_w, memory-
 * bound ones the rest, the board held at limit_w (0: rated_w).
 * Memory-bound and waiting kernels draw mem_w and wait_w x min(1, limit_w
 * / rated_w) (below the rating a memory-bound kernel draws in proportion
 * to the cap: not measured, a stated choice); the compute kernels draw
 * what the rest leaves them, P_g = (limit - phi_m mem - phi_w wait) /
 * phi_c, and run at r = 1 - (P - P_g) / k where P_g is at least rated_w,
 * at r_s P_g / rated_w below it (r_s = 1 - (P - rated_w) / k, a stream's
 * rate at the rating: the clock in proportion to the power, as GB300's
 * GEMMs at 500 of 1,400 W).  1 where the profile states no balance, or
 * phi_c <= 0. */
double hw_power_rate(const struct hw_profile *hw, int dtype, double phi_c, double phi_w,
		     double limit_w);

/* The compute rate (of the burst, in (0, 1]) hw's power balance gives a
 * step whose busiest GPU spends t_c seconds in compute kernels at their
 * burst rate (t_c / r at rate r), t_m in memory-bound kernels and t_w
 * waiting (exposed communication, bubbles, host gaps; both at any clock),
 * its GEMMs in dtype, the board held at limit_w (0: rated_w): the rate at
 * which hw_power_rate, given the shares of the span at that rate, gives
 * that rate back.  Closed form (docs/MODEL.md, "Sustained rates"; the
 * balance times the span, F(r) = t_c (P_gemm(r) - L) / r - t_m (L -
 * mem_w) - t_w (L - wait_w), increasing in r): 1 where F(1) <= 0; r =
 * t_c (k + L - P) / (t_c k - A) down to a stream's rate r_s, A = t_m (L -
 * mem_w) + t_w (L - wait_w); below it t_c L / (t_c rated_w / r_s - A),
 * never under HW_MIN_POWER_FRAC of r_s.  1 where the profile states no
 * balance, or t_c <= 0. */
double hw_mix_rate(const struct hw_profile *hw, int dtype, double t_c, double t_m, double t_w,
		   double limit_w);

/* The clock of a step whose GEMMs run in dtype, capped at power_w (0: the
 * rating), by its own mix (issue 33): its busiest GPU spends t_c seconds
 * in compute-heavy kernels (GEMMs, attention) timed at hw_run_clock(hw,
 * dtype, power_w), t_m in memory-bound kernels and t_w waiting.  That
 * clock x hw_mix_rate(own mix) / hw_power_rate(the reference mix,
 * HW_STEP_COMPUTE_SHARE and the rest memory-bound), at most 1: a profile's
 * stated step clock (H100's 0.91) moves by the balance's ratio, an
 * unstated one (H200's, the balance's own at the reference mix) becomes
 * the balance's at the step's mix.  The compute time's burst amount is t_c
 * at the reference mix's rate.  hw_run_clock exactly where the profile
 * states no balance. */
double hw_mix_clock(const struct hw_profile *hw, int dtype, double power_w, double t_c, double t_m,
		    double t_w);

/* hw's clock under a power cap of power_w watts: hw_clock(hw) x the
 * balance's ratio at the reference step (a bf16 step, compute share
 * HW_STEP_COMPUTE_SHARE, the rest memory-bound), hw_power_rate at power_w
 * over it at rated_w, where the profile states a balance; else x min(1,
 * power_w / rated_w) -- the clock in proportion to the power, as GB300's
 * GEMMs at 500 of 1,400 W (facebookexperimental/triton PR #2023).
 * power_w 0 or at least the rating, or a profile without a rating:
 * hw_clock(hw). */
double hw_capped_clock(const struct hw_profile *hw, double power_w);

/* hw as a run capped at power_w watts (0: the rating) drives it: hw itself
 * where the cap leaves its clock as it is, else *buf, a copy of hw at
 * hw_capped_clock (buf's lifetime is the caller's).  No allocation. */
const struct hw_profile *hw_at_power(const struct hw_profile *hw, double power_w,
				     struct hw_profile *buf);

/* The clock a training step whose GEMMs run in dtype is timed at on hw
 * capped at power_w watts: hw's clock with bf16's step clock exchanged
 * for dtype's (hw_step_clock: as loaded, hw_clock is bf16's, so an fp8
 * step on H100 runs at its power balance's 0.89614 where a bf16 one runs
 * at 0.91; a clock a caller set, e.g. burst 1, moves by the same ratio,
 * and never above 1),
 * then capped as hw_capped_clock.  A dtype whose step clock is bf16's
 * gives hw_capped_clock(hw, power_w) exactly. */
double hw_run_clock(const struct hw_profile *hw, int dtype, double power_w);

/* hw as a run of a step whose GEMMs run in dtype, capped at power_w (0:
 * the rating), drives it: hw itself where hw_run_clock is its clock, else
 * *buf, a copy at hw_run_clock (buf's lifetime is the caller's).  No
 * allocation.  synth's kernels (sl_run_hw) and a graph edit's two sides
 * take it. */
const struct hw_profile *hw_at_run(const struct hw_profile *hw, int dtype, double power_w,
				   struct hw_profile *buf);

/* hw at clock c (a fraction of the burst): hw itself where that is its
 * clock, else *buf, a copy at c.  No allocation. */
const struct hw_profile *hw_at_clock(const struct hw_profile *hw, double c, struct hw_profile *buf);

/* Bus efficiency of collectives where a profile states none: prism's
 * comm_eff default before the profiles carried a fit. */
#define HW_BUS_EFF_DEFAULT 0.8

/* Contention where a profile states none (`contention.compute`,
 * `contention.comm`; scripts/contention_fit.py): compute kernels timed both
 * beside communication and clear of it in the shared traces, 28 groups of
 * one name and size (ResNet DDP and DLRM on A100), median +4.9 %; a
 * collective on fewer SMs, DeepEP V2's all-to-all on SM100 with 24 SMs
 * against 64 (collectives.csv), +11.3 %. */
#define HW_CONT_COMPUTE_DEFAULT 0.049
#define HW_CONT_COMM_DEFAULT	0.113

/* Read a profile.  0, or PRISM_EIO/PRISM_EFORMAT with err naming the file,
 * the line and the setting at fault.  Every number has a range (hw.c, and
 * docs/FORMATS.md): peaks 0 or 0.001..1e6 TFLOP/s, bandwidths up to 1e6
 * GB/s, 1..1024 GPUs and NICs a node, latencies 0..1e6 us, a memory
 * reserve below the capacity, gpu.rated_w (optional) 1..1e5 W,
 * gpu.sustained (optional, default 1) 0.25..1 -- a number (bf16's) or a
 * group of dtype = fraction (bf16's absent: 1) --, gpu.stream (optional: a
 * group of dtype = fraction, each 0.25..1), gpu.power (optional, with a
 * rating: memory_w 1..1e5 W, wait_w 0..1e5, gemm = { dtype = { w 1..1e5;
 * k_w 1..1e6; }; } with bf16's, fp16 refused; struct hw_power).  The
 * optional `kernels` group (kperf.h) overrides hw_kernels_default()
 * setting by setting.  The profile is read at its sustained clock
 * (hw->clock = sustained; with a balance and no bf16 step clock stated,
 * the balance's at the reference step). */
int hw_load(const char *path, struct hw_profile *hw, struct prism_err *err);

/* The dtype named s ("bf16", "fp8", ...), or -1. */
int hw_dtype_parse(const char *s);
const char *hw_dtype_name(int dtype);

/* Bandwidth of the network per GPU, one direction (NICs shared by the
 * node's GPUs). */
double hw_net_Bps_per_gpu(const struct hw_profile *hw);

/* The GPUs of one NVLink domain: communication groups are placed in it
 * (comm.h's comm_group counts its members per domain) and reach each other
 * at NVLink speed; beyond it, over the NICs.  nvlink_domain, or
 * gpus_per_node where the profile states none. */
int hw_domain(const struct hw_profile *hw);

/* Whether a group of n consecutive ranks (tensor parallel) can be placed
 * inside one NVLink domain, each domain holding whole groups: n at most
 * the domain, and either n divides it, or the domain is larger than a
 * node and n is made of whole nodes (TP = 16 on an NVL72 of 4-GPU trays:
 * 4 groups a rack, 2 trays left over, as the jobs that keep spares do).
 * With a domain of one node this is "n divides the node". */
int hw_group_fits_domain(const struct hw_profile *hw, int n);

/* Attention's head-dim factors where nothing measured them (priors,
 * fitted to nothing: docs/MODEL.md): head dim 64 at 0.75 and 256 at 0.9 of
 * 128's throughput. */
#define HW_ATTN_D64_PRIOR  0.75
#define HW_ATTN_D256_PRIOR 0.9

/* Fill hw->k from hw's datasheet figures alone (peaks, bandwidth); sms
 * is left as it is (0: 108).  hw_load calls it before reading
 * the profile's `kernels` group. */
void hw_kernels_default(struct hw_profile *hw);

/* After a profile's `kernels` group is read: dtypes it did not set take
 * bf16's parameters with the achievable peak scaled by the datasheet
 * ratio of peaks.  given[d] says which it set (gemm, attention). */
void hw_kernels_complete(struct hw_profile *hw, const int gemm_given[HW_NDTYPES],
			 const int attn_given[HW_NDTYPES]);

#endif
