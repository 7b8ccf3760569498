/* test_kclass.c - kernel classes of names taken from the shared traces. */
#include <string.h>

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "calib.h"
#include "comm.h"
#include "cost.h"
#include "kbench.h"
#include "kdb.h"
#include "kdbstore.h"
#include "gwrite.h"
#include "testutil.h"

static void test_real_names(void **state)
{
	static const struct {
		const char *name;
		int cls;
	} t[] = {
	    {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", KC_COLLECTIVE},
	    {"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", KC_COLLECTIVE},
	    {"void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>"
	     "(c10::BFloat16*, unsigned long)",
	     KC_COLLECTIVE},
	    {"void dpsk::ep::internode::dispatch<false, 8, false, 8>(int4*, float*)",
	     KC_COLLECTIVE},
	    {"volta_sgemm_128x64_nn", KC_GEMM},
	    {"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align1>"
	     "(cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align1::Params)",
	     KC_GEMM},
	    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", KC_GEMM},
	    {"nvjet_tst_192x192_64x3_2x1_v_bz_coopA_TNT", KC_GEMM},
	    {"void splitKreduce_kernel<32, 16, int, float, float, float, float, true>"
	     "(cublasSplitKParams<float>)",
	     KC_REDUCTION}, /* not the GEMM's FLOPs */
	    {"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4> >"
	     "(Flash_fwd_params)",
	     KC_ATTENTION},
	    {"void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int)",
	     KC_CONV},
	    {"void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1>(int)", KC_CONV},
	    {"void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float)",
	     KC_NORM},
	    {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, "
	     "float>(int, float)",
	     KC_NORM},
	    {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float>"
	     "(float*)",
	     KC_SOFTMAX},
	    {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float> >(int)",
	     KC_REDUCTION},
	    {"void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, "
	     "at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>)",
	     KC_ELEMENTWISE},
	    {"void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, "
	     "2, 128, 1>(float*)",
	     KC_ELEMENTWISE},
	    {"void cuda::per_token_cast_to_fp8_with_channels<__nv_bfloat16, 128>(int)",
	     KC_ELEMENTWISE},
	    {"void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel<float>"
	     "(int)",
	     KC_EMBEDDING},
	    {"void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float>"
	     "(int)",
	     KC_OPTIMIZER},
	    {"void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, "
	     "unsigned int, 1, 4, bool>(float*)",
	     KC_ELEMENTWISE},
	    {"void at::native::(anonymous namespace)::masked_scale_kernel<bool, float, float>"
	     "(float*)",
	     KC_ELEMENTWISE},
	    {"void scaled_masked_softmax_warp_forward<__half, __half, float, 11>(__half*)",
	     KC_SOFTMAX},
	    {"triton__0d1d2d3d", KC_OTHER}, /* old Triton names say nothing */
	    /* ROCm: Tensile (rocBLAS, hipBLASLt) GEMMs, whose tile options spell
	     * "fill"-like words of other rules; Composable Kernel; RCCL. */
	    {"Cijk_Alik_Bljk_BBS_BH_MT256x256x64_MI16x16x16x1_SN_1LDSB1_AFC1_ISA942_IU1_K1_"
	     "LBSPPA2048_LPA16_LRVW16_MIAV1_MO40_NTA0_PGR2_PLR1_SIA3_SS1_SVW1_TLDS1_VSn1_"
	     "WG32_8_1_WGM4",
	     KC_GEMM},
	    {"Cijk_Ailk_Bljk_SB_MT64x64x8_SN_APM1_AF0EM1_AF1EM1_AMAS3_ASE_ASGT_ASLT_ASAE01_"
	     "ASCE01_ASEM1_AAC0_BL1_BS1_DTL0_DTVA0_DTVB0_DVO0_ETSP_EPS1_FL0_GRPM1_GRVW4_GSU1_"
	     "ELFLR0",
	     KC_GEMM},
	    {"void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<ck::"
	     "tensor_layout::gemm::RowMajor>, true, 2>(ck::GridwiseGemm_xdl_cshuffle_v3::Argument)",
	     KC_GEMM},
	    {"ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", KC_COLLECTIVE},
	    /* Mamba-2's kernels as synth names them (layer.c mamba_fwd): the
	     * depthwise causal convolution memory-bound, not a cuDNN conv;
	     * the SSD scan's products GEMMs, its sums and state passing
	     * memory-bound. */
	    {"causal_conv1d_fwd_kernel", KC_ELEMENTWISE},
	    {"causal_conv1d_bwd_kernel", KC_ELEMENTWISE},
	    {"ssd_chunk_cumsum_fwd_kernel", KC_ELEMENTWISE},
	    {"ssd_state_passing_bwd_kernel", KC_ELEMENTWISE},
	    {"ssd_chunk_state_fwd_kernel", KC_GEMM},
	    {"ssd_chunk_scan_chunk_state_bwd_dx_kernel", KC_GEMM},
	    {"rmsnorm_gated_fwd_kernel", KC_NORM},
	    {"mamba_in_proj_transpose_copy", KC_ELEMENTWISE},
	    /* Transformer Engine's current scaling (common/recipe/
	     * current_scaling.cu), and synth's names for it: the amax a
	     * reduction, its scale pointwise; torch.compile's split amax
	     * (synth's Inductor casts) stays elementwise. */
	    {"void transformer_engine::(anonymous namespace)::amax_kernel<8, true, __nv_bfloat16>"
	     "(__nv_bfloat16 const*, float*, float*, unsigned long, unsigned long)",
	     KC_REDUCTION},
	    {"void transformer_engine::(anonymous namespace)::compute_scale_from_amax_kernel"
	     "(float const*, float*, float*, float, float, bool, float)",
	     KC_ELEMENTWISE},
	    {"te_compute_amax_input", KC_REDUCTION},
	    {"te_compute_amax_wgrad", KC_REDUCTION},
	    {"te_compute_scale_from_amax_input", KC_ELEMENTWISE},
	    {"inductor_fp8_quant_amax_partial_input", KC_ELEMENTWISE},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int got = cost_classify(t[i].name);
		if (got != t[i].cls) {
			print_error("%s: %s, want %s\n", t[i].name, cost_class_name(got),
				    cost_class_name(t[i].cls));
			fail();
		}
	}
}

/* The profile of a trace's GPU by its deviceProperties name: ROCm's
 * names too (a virtual function's under SR-IOV ends " VF"). */
static void test_profile_names(void **state)
{
	(void)state;
	assert_string_equal(calib_profile_for("AMD Instinct MI300X", 0), "mi300x");
	assert_string_equal(calib_profile_for("AMD Instinct MI300X VF", 205822885888.0), "mi300x");
	assert_string_equal(calib_profile_for("AMD Instinct MI325X", 0), "mi325x");
	assert_string_equal(calib_profile_for("AMD Instinct MI355X", 0), "mi355x");
	assert_null(calib_profile_for("AMD Instinct MI250X", 0)); /* no profile */
	assert_string_equal(calib_profile_for("NVIDIA H100 80GB HBM3", 0), "h100-dgx");
	/* The measurement rows' mapping keeps AMD out (no AMD row is fitted). */
	assert_null(kbench_profile("MI300X"));
}

/* A row on stream 0 as a hand-made graph had them: every column 0 but
 * these. */
static void zero_row(struct gw_node *x, uint8_t kind)
{
	memset(x, 0, sizeof(*x));
	x->kind = kind;
	x->coll = UINT32_MAX;
	x->iter = -1;
}

/* A writer with one rank and its one stream. */
static void one_stream(struct gw *w)
{
	struct graph_proc q;
	struct graph_rank r;
	memset(&q, 0, sizeof(q));
	memset(&r, 0, sizeof(r));
	q.gpu = 1;
	assert_int_equal(gw_init(w), 0);
	assert_int_equal(gw_proc(w, &q, NULL), 0);
	assert_int_equal(gw_rank(w, &r), 0);
}

static struct graph *finish(struct gw *w)
{
	struct graph *g = NULL;
	assert_int_equal(gw_finish(w, NULL, 0, &g), 0);
	gw_release(w);
	return g;
}

/* A graph of n GPU kernels (one stream) named name, op op, shapes dims[i]. */
static struct graph *kernels(int n, const char *name, const char *op, const char *const *dims,
			     const char *types, const int64_t *dur_ns)
{
	struct gw w;
	one_stream(&w);
	for (int i = 0; i < n; i++) {
		struct gw_node x;
		zero_row(&x, GN_KERNEL);
		x.dur_ns = dur_ns[i];
		x.name = gw_intern(&w, name);
		x.op = gw_intern(&w, op);
		x.op_dims = gw_intern(&w, dims[i]);
		x.op_types = gw_intern(&w, types);
		assert_int_equal(gw_node(&w, &x, NULL), 0);
	}
	return finish(&w);
}

static void test_gemm_work(void **state)
{
	static const char *const dims[] = {
	    "[[4096, 1024], [1024, 512]]",	     /* mm: 2 M N K */
	    "[[512], [4096, 1024], [1024, 512]]",    /* addmm: bias first */
	    "[[8, 128, 64], [8, 64, 256]]",	     /* bmm: batch 8 */
	    "[[2, 4096, 1024], [512, 1024], [512]]", /* linear: M = 2 x 4096 */
	};
	static const char *const ops[] = {"aten::mm", "aten::addmm", "aten::bmm", "aten::linear"};
	static const double want[] = {2.0 * 4096 * 512 * 1024, 2.0 * 4096 * 512 * 1024,
				      2.0 * 8 * 128 * 256 * 64, 2.0 * 8192 * 512 * 1024};
	/* Bytes of a bf16 GEMM: A + B + C elements x 2. */
	static const double want_bytes[] = {(4096.0 * 1024 + 1024 * 512 + 4096 * 512) * 2,
					    (4096.0 * 1024 + 1024 * 512 + 4096 * 512) * 2,
					    (8.0 * 128 * 64 + 8 * 64 * 256 + 8 * 128 * 256) * 2,
					    (8192.0 * 1024 + 512 * 1024 + 8192 * 512) * 2};
	int64_t dur[] = {1000};
	(void)state;
	for (int i = 0; i < 4; i++) {
		struct graph *g = kernels(1, "sm80_xmma_gemm_bf16bf16", ops[i], &dims[i],
					  "[\"c10::BFloat16\", \"c10::BFloat16\"]", dur);
		double f, b;
		assert_int_equal(cost_work(g, 0, &f, &b), 1);
		assert_rel_close(f, want[i], 1e-15);
		assert_rel_close(b, want_bytes[i], 1e-15);
		assert_int_equal(cost_dtype(g, 0), HW_BF16);
		graph_free(g);
	}
	{
		/* The B200 trace's GEMMs: BF16 ops, FP8 x FP4 kernels. */
		struct graph *g =
		    kernels(1, "void gemm::kernel<bmm_MxE4m3_MxE2m1_t128x256>(int)", ops[0],
			    &dims[0], "[\"c10::BFloat16\", \"c10::BFloat16\"]", dur);
		assert_int_equal(cost_dtype(g, 0), HW_FP8);
		graph_free(g);
	}
	{
		/* fp32 inputs on tensor cores (issue 19: a float32 trace whose
		 * GEMMs ran TF32 showed 488 % of the fp32 peak): the kernel's
		 * name says TF32. */
		static const char *const tf32[] = {
		    "ampere_tf32_s1688gemm_tf32_128x128_16x4_tn",
		    "cutlass_80_tensorop_s1688gemm_256x128_16x3_nn",
		    "sm80_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32"};
		struct graph *g;
		for (int i = 0; i < 3; i++) {
			g = kernels(1, tf32[i], ops[0], &dims[0], "[\"float\", \"float\"]", dur);
			assert_int_equal(cost_dtype(g, 0), HW_TF32);
			graph_free(g);
		}
		g = kernels(1, "volta_sgemm_128x64_nn", ops[0], &dims[0], "[\"float\", \"float\"]",
			    dur);
		assert_int_equal(cost_dtype(g, 0), HW_FP32);
		graph_free(g);
	}
}

/* A GPU with round numbers, named so that rows can tell it apart. */
static void test_gpu(struct hw_profile *hw)
{
	memset(hw, 0, sizeof(*hw));
	snprintf(hw->gpu, sizeof(hw->gpu), "TestGPU");
	hw->peak_flops[HW_BF16] = 100e12;
	hw->hbm_Bps = 1e12;
}

static void test_calib_exact_line(void **state)
{
	/* Five GEMMs whose times lie exactly on 5 us + FLOPs / (100 TFLOP/s x
	 * 40%): the fit must give back 40% and 5 us, and leaving any one out
	 * must predict it exactly. */
	static const char *const dims[] = {
	    "[[1024, 1024], [1024, 1024]]", "[[2048, 1024], [1024, 1024]]",
	    "[[4096, 1024], [1024, 1024]]", "[[4096, 2048], [2048, 1024]]",
	    "[[8192, 4096], [4096, 1024]]"};
	int64_t dur[5];
	struct hw_profile hw;
	struct calib_class cc[KC_NCLASSES];
	struct graph *g;
	(void)state;
	for (int i = 0; i < 5; i++) {
		double m = i == 0 ? 1024 : i == 1 ? 2048 : i < 4 ? 4096 : 8192;
		double k = i < 3 ? 1024 : i == 3 ? 2048 : 4096;
		dur[i] = (int64_t)(5000 + 2 * m * 1024 * k / (100e12 * 0.4) * 1e9 + 0.5);
	}
	g = kernels(5, "sm80_xmma_gemm_bf16bf16", "aten::mm", dims,
		    "[\"c10::BFloat16\", \"c10::BFloat16\"]", dur);
	test_gpu(&hw);
	assert_int_equal(calib_fit(g, &hw, cc), 0);
	assert_int_equal(cc[KC_GEMM].n, 5);
	assert_rel_close(cc[KC_GEMM].eff, 0.4, 1e-6);
	assert_rel_close(cc[KC_GEMM].overhead_s, 5e-6, 1e-4);
	assert_true(cc[KC_GEMM].loo_mean < 1e-4); /* only ns rounding is left */
	graph_free(g);
}

/* Fits that are no cost model are flagged, naming the class and why:
 * GEMMs on 5 us + FLOPs / (100 TFLOP/s x 150%), then on -2 us + FLOPs /
 * (100 TFLOP/s x 40%); 40% and 5 us are a cost model. */
static void test_calib_flag(void **state)
{
	static const char *const dims[] = {
	    "[[1024, 1024], [1024, 1024]]", "[[2048, 1024], [1024, 1024]]",
	    "[[4096, 1024], [1024, 1024]]", "[[4096, 2048], [2048, 1024]]",
	    "[[8192, 4096], [4096, 1024]]"};
	static const struct {
		double eff, over_us;
		const char *want;
	} t[] = {
	    {1.5, 5,
	     "gemm: 150% of the bf16 peak: faster than the profile's peak allows, so not a "
	     "cost model (the shapes count more work than the kernels do, or the GPU is "
	     "faster than its profile)"},
	    {0.4, -2,
	     "gemm: a negative overhead (-2.00 us): small kernels run faster than the "
	     "large ones' rate allows (more than one kind of kernel in the class, or a "
	     "rate that grows with size), so not a cost model"},
	    {0.4, 5, NULL},
	};
	(void)state;
	for (size_t c = 0; c < sizeof(t) / sizeof(t[0]); c++) {
		int64_t dur[5];
		struct hw_profile hw;
		struct calib_class cc[KC_NCLASSES];
		struct graph *g;
		char why[320];
		const char *got;
		for (int i = 0; i < 5; i++) {
			double m = i == 0 ? 1024 : i == 1 ? 2048 : i < 4 ? 4096 : 8192;
			double k = i < 3 ? 1024 : i == 3 ? 2048 : 4096;
			dur[i] = (int64_t)(t[c].over_us * 1e3 +
					   2 * m * 1024 * k / (100e12 * t[c].eff) * 1e9 + 0.5);
		}
		g = kernels(5, "sm80_xmma_gemm_bf16bf16", "aten::mm", dims,
			    "[\"c10::BFloat16\", \"c10::BFloat16\"]", dur);
		test_gpu(&hw);
		assert_int_equal(calib_fit(g, &hw, cc), 0);
		assert_rel_close(cc[KC_GEMM].eff, t[c].eff, 1e-4);
		got = calib_flag(g, &hw, KC_GEMM, &cc[KC_GEMM], why, sizeof(why));
		if (t[c].want)
			assert_string_equal(got, t[c].want);
		else
			assert_null(got);
		graph_free(g);
	}
}

/* Weighted (w = 1/y^2) least squares of y = a + b x, by the normal
 * equations: the test's own, independent of GSL and of the hat values. */
static void wfit(const double *x, const double *y, int n, int skip, double *a, double *b)
{
	double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
	for (int i = 0; i < n; i++) {
		double w = 1 / (y[i] * y[i]);
		if (i == skip)
			continue;
		sw += w, sx += w * x[i], sy += w * y[i];
		sxx += w * x[i] * x[i], sxy += w * x[i] * y[i];
	}
	*b = (sw * sxy - sx * sy) / (sw * sxx - sx * sx);
	*a = (sy - *b * sx) / sw;
}

static void test_calib_leave_one_out(void **state)
{
	/* Noisy points: the leave-one-out error calib_fit reports from hat
	 * values must equal refitting without each point in turn. */
	static const char *const dims[] = {
	    "[[1024, 1024], [1024, 1024]]", "[[2048, 1024], [1024, 1024]]",
	    "[[4096, 1024], [1024, 1024]]", "[[4096, 2048], [2048, 1024]]",
	    "[[8192, 4096], [4096, 1024]]", "[[8192, 8192], [8192, 1024]]"};
	static const double noise[] = {1.30, 0.85, 1.10, 0.95, 1.20, 0.90};
	double x[6], y[6], loo = 0;
	int64_t dur[6];
	struct hw_profile hw;
	struct calib_class cc[KC_NCLASSES];
	struct graph *g;
	(void)state;
	for (int i = 0; i < 6; i++) {
		double m = i == 0 ? 1024 : i == 1 ? 2048 : i < 4 ? 4096 : 8192;
		double k = i < 3 ? 1024 : i == 3 ? 2048 : i == 4 ? 4096 : 8192;
		x[i] = 2 * m * 1024 * k / 100e12;
		dur[i] = (int64_t)((5e-6 + x[i] / 0.4) * noise[i] * 1e9);
		y[i] = dur[i] / 1e9;
	}
	for (int i = 0; i < 6; i++) {
		double a, b, pred;
		wfit(x, y, 6, i, &a, &b);
		pred = a + b * x[i];
		loo += fabs(pred - y[i]) / y[i] / 6;
	}
	g = kernels(6, "sm80_xmma_gemm_bf16bf16", "aten::mm", dims,
		    "[\"c10::BFloat16\", \"c10::BFloat16\"]", dur);
	test_gpu(&hw);
	assert_int_equal(calib_fit(g, &hw, cc), 0);
	assert_rel_close(cc[KC_GEMM].loo_mean, loo, 1e-9);
	assert_true(loo > 0.05); /* the noise shows: the test can fail */
	{
		double a, b;
		wfit(x, y, 6, -1, &a, &b);
		assert_rel_close(cc[KC_GEMM].eff, 1 / b, 1e-9);
		assert_rel_close(cc[KC_GEMM].overhead_s, a, 1e-9);
	}
	graph_free(g);
}

static void test_bus_efficiency(void **state)
{
	/* Three all-reduces over 8 GPUs of one node whose times the model gives
	 * at 70% bus efficiency, and one at 35%: the median is 70%, the best
	 * 70%, and the 35% one shows as the minimum of the sorted values. */
	static const double bytes[] = {64e6, 256e6, 1024e6, 256e6};
	static const double eff[] = {0.7, 0.7, 0.7, 0.35};
	struct hw_profile hw;
	struct calib_comm cm[GC_NKINDS];
	struct graph *g;
	struct gw w;
	(void)state;
	memset(&hw, 0, sizeof(hw));
	hw.gpus_per_node = 8;
	hw.nics_per_node = 8;
	hw.nvlink_Bps = 300e9;
	hw.nic_Bps = 25e9;
	hw.nvlink_lat_s = 1e-6;
	hw.net_lat_s = 5e-6;
	hw.nvl_eff = hw.net_eff = 1; /* efficiencies relative to the links */
	one_stream(&w);
	for (uint32_t u = 0; u < 4; u++) {
		struct comm_est e;
		struct gw_node x;
		struct graph_coll c;
		uint32_t id;
		assert_int_equal(comm_time(&hw, GC_ALL_REDUCE, bytes[u], (struct comm_group){8, 8},
					   eff[u], COMM_AUTO, &e),
				 0);
		zero_row(&x, GN_COLL);
		x.dur_ns = (int64_t)(e.time_s * 1e9 + 0.5);
		memset(&c, 0, sizeof(c));
		c.kind = GC_ALL_REDUCE;
		c.bytes = (int64_t)bytes[u];
		c.group_size = 8;
		assert_int_equal(gw_node(&w, &x, &id), 0);
		assert_int_equal(gw_coll(&w, id, &c), 0);
	}
	g = finish(&w);
	assert_int_equal(calib_comm_fit(g, &hw, cm), 0);
	assert_int_equal(cm[GC_ALL_REDUCE].n, 4);
	assert_rel_close(cm[GC_ALL_REDUCE].median_eff, 0.7, 1e-5);
	assert_rel_close(cm[GC_ALL_REDUCE].best_eff, 0.7, 1e-5);
	graph_free(g);
}

/*
 * The kernel database.  GEMMs of 2^31, 2^32 and 2^33 FLOPs (bf16) taking
 * 10 us (the median of 8, 10 and 30), 20 and 40 us lie on t = c x work:
 * interpolation in log-log reproduces the line, 30 us at 1.5 x 2^32.  Two
 * elementwise kernels, 10 us for 1e6 bytes (125,000 floats read, as many
 * written) and 20 us for 4e6: between two rows the interpolation is a
 * power law, 10 x 2^0.5 = 14.142 us at 2e6 bytes.
 */
static struct kdb *sample_db(const struct hw_profile *hw, int64_t b_ns)
{
	static const char *const gdims[] = {
	    "[[1024, 1024], [1024, 1024]]", "[[1024, 1024], [1024, 1024]]",
	    "[[1024, 1024], [1024, 1024]]", "[[2048, 1024], [1024, 1024]]",
	    "[[4096, 1024], [1024, 1024]]"};
	static const char *const edims[] = {"[[125000]]", "[[500000]]"};
	int64_t gdur[] = {8000, 30000, 10000, b_ns, 40000}, edur[] = {10000, 20000};
	struct graph *g = kernels(5, "sm80_xmma_gemm_bf16bf16", "aten::mm", gdims,
				  "[\"c10::BFloat16\", \"c10::BFloat16\"]", gdur);
	struct graph *e =
	    kernels(2, "vectorized_elementwise_kernel", "aten::relu", edims, "[\"float\"]", edur);
	struct kdb *db = kdb_new();
	size_t added;
	assert_non_null(db);
	assert_int_equal(kdb_add_graph(db, g, hw, &added), 0);
	assert_int_equal(added, 5);
	assert_int_equal(kdb_add_graph(db, e, hw, &added), 0);
	assert_int_equal(added, 2);
	graph_free(g);
	graph_free(e);
	return db;
}

static void check_lookups(const struct kdb *db)
{
	double t = 0, w = 2147483648.0; /* 2^31 */
	int gpu = kdb_gpu(db, "TestGPU");
	assert_true(gpu >= 0);
	assert_int_equal(kdb_gpu(db, "OtherGPU"), -1);
	assert_int_equal(kdb_rows(db), 5);
	assert_int_equal(kdb_time(db, gpu, KC_GEMM, HW_BF16, w, &t), KDB_EXACT);
	assert_rel_close(t, 10e-6, 1e-12);
	assert_int_equal(kdb_time(db, gpu, KC_GEMM, HW_BF16, 2 * w, &t), KDB_EXACT);
	assert_rel_close(t, 20e-6, 1e-12);
	assert_int_equal(kdb_time(db, gpu, KC_GEMM, HW_BF16, 3 * w, &t), KDB_INTERPOLATED);
	assert_rel_close(t, 30e-6, 1e-12);
	assert_int_equal(kdb_time(db, gpu, KC_ELEMENTWISE, HW_BF16, 2e6, &t), KDB_INTERPOLATED);
	assert_rel_close(t, 10e-6 * sqrt(2.0), 1e-12);
	/* Outside the measured sizes, another dtype, another GPU: none. */
	assert_int_equal(kdb_time(db, gpu, KC_GEMM, HW_BF16, 8 * w, &t), KDB_NONE);
	assert_int_equal(kdb_time(db, gpu, KC_GEMM, HW_BF16, w / 2, &t), KDB_NONE);
	assert_int_equal(kdb_time(db, gpu, KC_GEMM, HW_FP32, 2 * w, &t), KDB_NONE);
	assert_int_equal(kdb_time(db, kdb_gpu(db, "OtherGPU"), KC_GEMM, HW_BF16, 2 * w, &t),
			 KDB_NONE);
	assert_int_equal(kdb_time(db, gpu, KC_NORM, -1, 2e6, &t), KDB_NONE);
}

static void test_kdb(void **state)
{
	char path[] = "/tmp/prism_kdbXXXXXX";
	struct hw_profile hw;
	struct prism_err err;
	struct kdb *db, *back;
	size_t n;
	double mean, median, t;
	int fd;
	sqlite3 *h;
	(void)state;
	test_gpu(&hw);
	db = sample_db(&hw, 20000);
	check_lookups(db);
	/* The interior GEMM row, left out, is on the line of the other two. */
	kdb_loo(db, "TestGPU", KC_GEMM, &n, &mean, &median);
	assert_int_equal(n, 1);
	assert_true(mean < 1e-12);

	/* Saved and loaded: the same rows. */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	prism_err_clear(&err);
	assert_int_equal(kdbstore_save(db, path, &err), 0);
	back = kdb_new();
	assert_int_equal(kdbstore_load(back, path, &err), 0);
	check_lookups(back);
	kdb_free(db);

	/* A second calibration measuring the 2^32 GEMM at 40 us: one row, the
	 * mean of the two medians weighed by their counts (1 and 1). */
	db = sample_db(&hw, 40000);
	{
		struct graph *g;
		static const char *const dims[] = {"[[2048, 1024], [1024, 1024]]"};
		int64_t d[] = {40000};
		size_t added;
		g = kernels(1, "sm80_xmma_gemm_bf16bf16", "aten::mm", dims,
			    "[\"c10::BFloat16\", \"c10::BFloat16\"]", d);
		assert_int_equal(kdb_add_graph(back, g, &hw, &added), 0);
		graph_free(g);
	}
	assert_int_equal(kdb_rows(back), 5);
	assert_int_equal(
	    kdb_time(back, kdb_gpu(back, "TestGPU"), KC_GEMM, HW_BF16, 4294967296.0, &t),
	    KDB_EXACT);
	assert_rel_close(t, 30e-6, 1e-12);
	kdb_free(back);
	kdb_free(db);

	/* Files that are not kernel databases, and bad rows. */
	back = kdb_new();
	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	assert_int_equal(
	    sqlite3_exec(h, "DROP TABLE kernel; CREATE TABLE other (x)", NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(h);
	prism_err_clear(&err);
	assert_int_equal(kdbstore_load(back, path, &err), PRISM_EFORMAT);
	{
		char want[256];
		snprintf(want, sizeof(want),
			 "%s: not a prism kernel database (it holds table other)", path);
		assert_string_equal(err.msg, want);
	}
	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	assert_int_equal(
	    sqlite3_exec(h,
			 "DROP TABLE other; CREATE TABLE kernel (gpu, class, dtype, work, time_s,"
			 " samples,"
			 " shape); INSERT INTO kernel VALUES ('G', 'gemm', 'bf16', 1e9,"
			 " 1e-5, 1, ''), ('G', 'bogus', 'any', 1e6, 1e-5, 1, '')",
			 NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(h);
	prism_err_clear(&err);
	assert_int_equal(kdbstore_load(back, path, &err), PRISM_EFORMAT);
	{
		char want[256];
		snprintf(want, sizeof(want), "%s: row 2: class: unknown 'bogus'", path);
		assert_string_equal(err.msg, want);
	}
	kdb_free(back);
	unlink(path);
	back = kdb_new();
	prism_err_clear(&err);
	assert_int_equal(kdbstore_load(back, path, &err), PRISM_EIO);
	kdb_free(back);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_real_names),		cmocka_unit_test(test_profile_names),
	    cmocka_unit_test(test_gemm_work),		cmocka_unit_test(test_calib_exact_line),
	    cmocka_unit_test(test_calib_leave_one_out), cmocka_unit_test(test_calib_flag),
	    cmocka_unit_test(test_bus_efficiency),	cmocka_unit_test(test_kdb),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
