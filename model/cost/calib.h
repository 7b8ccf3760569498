/*
 * calib.h - kernel efficiency fitted on a trace's own kernels.
 *
 * For each kernel class, every GPU task whose work is known from its op's
 * shapes gives a point (x, y): x its ideal time (FLOPs at the GPU's peak
 * for its dtype for GEMMs and attention; bytes at HBM bandwidth for the
 * rest), y its measured time.  A least-squares line (GSL) y = a + x / e
 * gives the class's fixed overhead a and the fraction e of peak it reaches
 * on large work; equivalently efficiency(x) = e x / (x + a e), a roofline
 * that saturates.  Points are weighed by 1/y^2, so the fit minimises
 * relative error.  Leave-one-out errors come from the fit's hat values,
 * without refitting: the prediction of point i by the other n-1 points is
 * y_i - r_i / (1 - h_i).
 */
#ifndef PRISM_CALIB_H
#define PRISM_CALIB_H

#include <stddef.h>

#include "cost.h"
#include "graph.h"
#include "hw.h"
#include "kperf.h"

struct calib_class {
	size_t n;	   /* tasks with known work */
	int by_flops;	   /* 1: FLOPs at peak FLOP/s; 0: bytes at HBM bandwidth */
	double overhead_s; /* a */
	double eff;	   /* e, the fraction of peak on large work */
	double loo_mean;   /* leave-one-out |predicted - measured| / measured */
	double loo_median;
	double measured_s; /* their measured time in all */
};

/* 1 for the classes whose time is predicted from op shapes: not
 * collectives, copies, sets, embeddings or `other`. */
int calib_fitted_class(int cls);

/*
 * GPU task u of g as a point of class cls (its class): 1 with *ideal its
 * ideal time on hw (FLOPs at the peak of its dtype for the FLOP-bound
 * classes, fp32 GEMMs on tensor cores at TF32's; bytes at HBM bandwidth for
 * the rest), *work those FLOPs or bytes and *dtype the enum hw_dtype (-1
 * for the bandwidth-bound classes); 0 where its work or time is unknown.
 */
int calib_point(const struct graph *g, const struct hw_profile *hw, uint32_t u, int cls,
		double *ideal, double *work, int *dtype);

/*
 * Whether class cls's fit c (of calib_fit on g and hw, c->n >= 3) is a
 * cost model: NULL, or why not into buf (size n): an efficiency above the
 * peak (the kernels ran faster than their work at the profile's peak --
 * fp32 ops on tensor cores timed against the fp32 peak, work the shapes
 * overcount, a GPU faster than its profile), none at all (time does not
 * grow with the work), or a negative overhead (the line's intercept below
 * zero: small kernels faster than the large ones' rate allows).  The
 * reason names the class and the dtype that most of its time ran in.
 */
const char *calib_flag(const struct graph *g, const struct hw_profile *hw, int cls,
		       const struct calib_class *c, char *buf, size_t n);

/* Fit every class of g's GPU tasks on hw.  Classes with fewer than 3
 * points are left with n < 3 and zeros.  0, or PRISM_ENOMEM (out
 * cleared). */
int calib_fit(const struct graph *g, const struct hw_profile *hw,
	      struct calib_class out[KC_NCLASSES]);

/* The kernel model (kperf.h) on a trace's GEMMs whose shapes its ops
 * record: each predicted from (batch, M, N, K), its dtype and hw, against
 * its measured time; and the flat model before it (3 us + FLOPs at 70 % of
 * the datasheet peak). */
struct calib_kmodel {
	size_t n;
	double mean, median, worst; /* |predicted - measured| / measured */
	double signed_mean;	    /* (predicted - measured) / measured */
	double flat_mean, flat_median;
};
int calib_kernel_model(const struct graph *g, const struct hw_profile *hw,
		       struct calib_kmodel *out); /* 0, or PRISM_ENOMEM */

/* The same GEMMs shape by shape: one entry per batch, M, N, K and dtype,
 * with its kernels' count, their median time and the kernel model's,
 * the most measured time (count x median) first.  *out is allocated
 * (free() it; NULL with *n 0 where the trace has none). */
struct calib_gshape {
	double b, m, n, k;
	int dtype; /* enum hw_dtype the model times it in */
	size_t count;
	double measured_s; /* median */
	double model_s;
	struct kperf_gemm_plan plan; /* the model's tile, split-K and waves */
};
int calib_gemm_shapes(const struct graph *g, const struct hw_profile *hw, struct calib_gshape **out,
		      size_t *n, struct prism_err *err);

/* A trace's fused attention ops shape by shape: one entry per pass, op,
 * batch, heads, query and key lengths, head dim and dtype, with how many
 * times the op ran (the most kernels of one name under it: a backward's
 * helper kernels run once an op, as its main one does) and its mean time
 * -- every kernel the op launched, the main one (cost_attn_shape) and its
 * helpers (cuDNN's dO.O and dQ conversion) alike, as a measured pass of
 * SDPA counts them.  The mask is not recorded: causal, as language models
 * train (edit.c does the same).  fa2: PyTorch's flash backend
 * (FlashAttention-2); memory-efficient attention is left out.  *out is
 * allocated (free() it; NULL with *n 0 where the trace has none). */
struct calib_ashape {
	double b, heads, sq, skv, d;
	int pass;  /* 0 forward, 1 backward */
	int dtype; /* enum hw_dtype */
	int fa2;
	double measured_s; /* mean per op */
};
int calib_attn_shapes(const struct graph *g, struct calib_ashape **out, size_t *n,
		      struct prism_err *err);

/* Bus efficiency of a collective kind, from its kernels with a known size
 * and group: the e for which comm_time() gives the measured time. */
struct calib_comm {
	size_t n;
	double median_eff;
	double best_eff; /* the least waiting: single-rank traces include waits */
};

/* One entry per enum graph_coll_kind; groups within one node when they
 * fit in hw's node, else spread over full nodes. */
int calib_comm_fit(const struct graph *g, const struct hw_profile *hw,
		   struct calib_comm out[GC_NKINDS]); /* 0, or PRISM_ENOMEM */

/*
 * Contention (sim.h): how much slower a compute kernel runs while a
 * collective or transfer runs beside it on its GPU.  Kernels are grouped
 * by name and work (from their ops' shapes); a group with CALIB_CONT_MIN
 * instances or more run wholly beside communication (90 % of their span)
 * and as many run clear of it, whose clear ones last CALIB_CONT_MIN_NS or
 * more and agree within 10 % (one size), gives the ratio of the two
 * medians, less 1.  The median over groups is the slowdown.
 */
#define CALIB_CONT_MIN	  3
#define CALIB_CONT_MIN_NS 20000
#define CALIB_CONT_GROUPS 256
struct calib_contention {
	double compute;			 /* the median slowdown over groups */
	size_t keys;			 /* groups */
	size_t pairs;			 /* instances compared (the smaller side of each group) */
	double group[CALIB_CONT_GROUPS]; /* each group's slowdown, sorted (the
					  * first CALIB_CONT_GROUPS) */
};
int calib_contention(const struct graph *g, struct calib_contention *out);

/* The configs/hw profile's name for a GPU named like "NVIDIA
 * A100-SXM4-80GB" (kbench_profile's; memory in bytes, 0 if unknown, tells
 * apart the A100s whose name does not), or NULL: none fits it. */
const char *calib_profile_for(const char *gpu_name, double mem_bytes);

#endif
