"""Tensor-Core kernel table (Volta → Blackwell, AMD MFMA) and TC-eligible operators."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.analysis.tensor_cores import is_tc_eligible_op, is_tc_kernel, tc_architecture

# Kernel names as they appear in the real traces under ../shared/traces (and vendor libraries).
TC_KERNELS = [
    ("volta_h884gemm_64x64_ldg8_nn", "volta"),
    ("volta_fp16_s884cudnn_fp16_128x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1", "volta"),
    ("turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn", "turing"),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>(...)", "turing"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8>(...)", "ampere"),
    ("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4", "ampere"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute", "ampere"),
    ("void cutlass::device_kernel<cutlass3x_sm90_tensorop_gemm_f16_f16_f32_void_f16_128x256x64_warpspecialized>",
     "ampere"),
    ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN", "hopper"),
    ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4>>", "hopper"),
    ("cutlass3x_sm100_tensorop_s64x256x16gemm_tcgen05_bf16", "ampere"),
    ("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT128x144x64_MI16x16x1_SN_LDSB1_AFC1", "amd"),
    ("ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3>", "amd"),
    # FP8 / FP4 / MX-format GEMMs (issue 14)
    ("gemm_Bfloat16_E4m3E4m3_Fp32_t128x8x128u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b_TN_transOut_schedS_sm100a",
     "low-precision"),
    ("bmm_MxE2m1_MxE4m3_Fp32_t128x128x256u2_s4_et128x128_m256x128x64_cga2x1x1_16dp256b_TN_schedS_sm100a",
     "low-precision"),
    ("void deep_gemm::fp8_gemm_kernel<128u, 128u, 128u, 4u, 2u, 128u, 1u, (deep_gemm::GemmType)1>(float*)",
     "low-precision"),
    ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<"
     "cute::tuple<int, int, int>>, cutlass::float_e4m3_t>>", "low-precision"),
    ("_w8a8_block_fp8_matmul", "low-precision"),
    ("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu", "low-precision"),
    ("nvjet_sm100_ootst_128x128_128x6_2x1_2cta_h_bz_TNN", "hopper"),
    ("igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x256x32_wt32x32x8_ws1x2_wr2x2_ta1x8x2x1_1x4x1x64", "amd"),
    # Triton flash attention (audit: xdit_sd3.5 on an MI300X listed attn_fwd, 208.7 ms per step, among the
    # eligible ops without Tensor Cores): ROCm flash-attention / AOTriton, the Triton tutorial's
    ("attn_fwd", "triton"), ("_attn_fwd", "triton"), ("_attn_bwd_dkdv", "triton"), ("bwd_kernel_dk_dv", "triton"),
    ("bwd_kernel_dq", "triton"), ("_attn_fwd_0d1d2d3d4d5d6c7d8d9c10d", "triton"),
]
NON_TC_KERNELS = [
    "volta_sgemm_128x64_nn", "volta_scudnn_128x128_stridedB_splitK_small_nn_v1",
    "void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, true>(int)",
    "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int)",
    "void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int)",
    "void cutlass::Kernel<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(...)", "ampere_sgemm_32x128_nt",
    "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int)",
    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "dummy_summary_kernel",
    # converting to FP8 is not a GEMM
    "void vllm::dynamic_scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*)",
    "void vllm::reshape_and_cache_flash_kernel<__hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0>",
    # not flash-attention kernels: an Inductor pointwise kernel fusing the views around SDPA, a softmax, other
    # names containing attn_fwd / bwd_kernel
    "triton_poi_fused__scaled_dot_product_flash_attention_cat_transpose_view_10",
    "void (anonymous namespace)::softmax_warp_forward<float, float, float, 8, false, false>(float*)",
    "triton_poi_fused_attn_fwd_add_0", "paged_attn_fwd_decode_copy", "attn_fwdx", "layer_norm_bwd_kernel_dq",
    # cuBLAS xmma GEMMs whose math is a CUDA-core FMA: FP32 without TF32 (tests/data/h200_bounds/fp32,
    # an H200), FP64, paired FP16
    "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize256x64x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_"
    "kernel__5x_cublas",
    "sm90_xmma_gemm_f64f64_f64f64_f64_nn_n_tilesize128x64x8_stage3_warpsize2x2x1_dfma_execute_kernel",
    "sm80_xmma_gemm_f16f16_f16f16_f16_nn_n_tilesize128x128x16_hfma2_execute_kernel",
]


@pytest.mark.parametrize(("name", "arch"), TC_KERNELS)
def test_tensor_core_kernels(name: str, arch: str) -> None:
    assert is_tc_kernel(name)
    assert tc_architecture(name) == arch


@pytest.mark.parametrize("name", NON_TC_KERNELS)
def test_simt_kernels_are_not_tensor_core(name: str) -> None:
    assert not is_tc_kernel(name)


def test_tc_eligible_ops() -> None:
    for op in ("aten::mm", "aten::cudnn_convolution", "aten::_scaled_dot_product_flash_attention",
               "CudnnConvolutionBackward", "autograd::engine::evaluate_function: ConvolutionBackward0",
               "AddmmBackward0"):
        assert is_tc_eligible_op(op), op
    for op in ("aten::add", "aten::cudnn_batch_norm", "aten::relu", "ReluBackward0"):
        assert not is_tc_eligible_op(op), op


def test_graph_replayed_kernels_are_said_to_be_left_out(tmp_path: Path) -> None:
    """Audit: a HIP-graph decode step read 'kernel time on Tensor Cores 77.43 %' in the overview and
    '2.6 % of kernel time ... eligible; 100 % of that ran on Tensor Cores' in this view: a graph
    replay's kernels are linked to no op, so they cannot be eligible. Each figure now says what it
    counts. One step: aten::mm launches a 10 µs h884 GEMM; a graph launch runs a 30 µs h884 GEMM."""
    import io

    from rich.console import Console

    from stepscope.analysis.bundle import analyze
    from stepscope.analysis.tensor_cores import compute_tensor_cores
    from stepscope.report import terminal
    from tests.builders import TraceBuilder

    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.op("aten::mm", ts=1, dur=5)
    b.launch_kernel("volta_h884gemm_64x64_nn", launch_ts=2, launch_dur=1, ts=10, dur=10)
    b.launch_kernel("volta_h884gemm_128x64_nn", launch_ts=20, launch_dur=1, ts=30, dur=30, runtime="cudaGraphLaunch")
    bundle = analyze(b.load(tmp_path), names=["overview", "tensor_cores"])
    r = compute_tensor_cores(bundle.trace, 0)
    assert (r.eligible_ns, r.unlinked_ns, r.kernel_ns) == (10_000.0, 30_000.0, 40_000.0)
    out = io.StringIO()
    terminal.render(bundle, Console(file=out, width=400), ["overview", "tensor_cores"], 10)
    text = out.getvalue()
    assert "100.00 % (every kernel, by its name)" in text
    assert "25.0 % of kernel time (0.040 ms per step) is launched by Tensor-Core eligible ops" in text
    assert ("eligible counts only kernels linked to the op that launched them (a graph replay's are not): 0.030 ms "
            "per step (75.0 % of kernel time) is linked to none and counted as not eligible") in text
