/* test_kclass.c - kernel classes of names taken from the shared traces. */
#include "cost.h"
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
		 "(c10::BFloat16*, unsigned long)", KC_COLLECTIVE},
		{"void dpsk::ep::internode::dispatch<false, 8, false, 8>(int4*, float*)",
		 KC_COLLECTIVE},
		{"volta_sgemm_128x64_nn", KC_GEMM},
		{"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align1>"
		 "(cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align1::Params)", KC_GEMM},
		{"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", KC_GEMM},
		{"nvjet_tst_192x192_64x3_2x1_v_bz_coopA_TNT", KC_GEMM},
		{"void splitKreduce_kernel<32, 16, int, float, float, float, float, true>"
		 "(cublasSplitKParams<float>)", KC_GEMM},
		{"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4> >"
		 "(Flash_fwd_params)", KC_ATTENTION},
		{"void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int)",
		 KC_CONV},
		{"void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1>(int)", KC_CONV},
		{"void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float)",
		 KC_NORM},
		{"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, "
		 "float>(int, float)", KC_NORM},
		{"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float>"
		 "(float*)", KC_SOFTMAX},
		{"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float> >(int)",
		 KC_REDUCTION},
		{"void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, "
		 "at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>)", KC_ELEMENTWISE},
		{"void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, "
		 "2, 128, 1>(float*)", KC_ELEMENTWISE},
		{"void cuda::per_token_cast_to_fp8_with_channels<__nv_bfloat16, 128>(int)",
		 KC_ELEMENTWISE},
		{"void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel<float>"
		 "(int)", KC_EMBEDDING},
		{"void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float>"
		 "(int)", KC_OPTIMIZER},
		{"triton__0d1d2d3d", KC_OTHER}, /* old Triton names say nothing */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
