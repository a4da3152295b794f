"""Op categories: the name families, one category per device row and per launching op, and the
TraceLens grouping (launchers, busy time, first-kernel fallback, NCCL left out)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope.analysis import intervals
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.categories import compute_categories
from stepscope.analysis.categories_tracelens import kernel_label, op_label
from stepscope.analysis.category_rules import CATEGORY_NAMES, Category, kernel_family, op_family
from stepscope.analysis.gemm_shapes import gemm_shape
from tests.builders import TraceBuilder

C = Category


@pytest.mark.parametrize(("name", "cat"), [
    ("aten::addmm", C.GEMM), ("aten::mm", C.GEMM), ("AddmmBackward0", C.GEMM), ("aten::linear", C.GEMM),
    ("trtllm::cublas_scaled_mm", C.GEMM), ("primus_turbo::grouped_gemm", C.GEMM),
    ("aten::_flash_attention_forward", C.ATTENTION), ("aten::_scaled_dot_product_efficient_attention", C.ATTENTION),
    ("flash_attn::_flash_attn_forward", C.ATTENTION), ("_C_cache_ops::reshape_and_cache_flash", C.ATTENTION),
    ("aten::cudnn_convolution_backward_input", C.CONVOLUTION), ("aten::conv2d", C.CONVOLUTION),
    ("ConvolutionBackward0", C.CONVOLUTION), ("aten::native_layer_norm", C.NORMALISATION),
    ("aten::cudnn_batch_norm_backward", C.NORMALISATION), ("aiter::rms_norm", C.NORMALISATION),
    ("aten::norm", C.REDUCTION), ("aten::sum", C.REDUCTION), ("aten::_softmax", C.REDUCTION),
    ("aten::gelu", C.ELEMENTWISE), ("aten::add_", C.ELEMENTWISE), ("aten::_foreach_mul_", C.ELEMENTWISE),
    ("triton_poi_fused_add_cos_sin_0", C.ELEMENTWISE), ("triton_red_fused_sum_1", C.REDUCTION),
    # Ascend CANN operator APIs
    ("aclnnMuls", C.ELEMENTWISE), ("aclnnInplaceRelu", C.ELEMENTWISE), ("aclnnForeachAddListV2", C.ELEMENTWISE),
    ("aclnnThresholdBackward", C.ELEMENTWISE), ("aclnnReduceSum", C.REDUCTION), ("aclnnSoftmax", C.REDUCTION),
    ("aclnnConvolution", C.CONVOLUTION), ("aclnnMatmul", C.GEMM), ("aclnnBatchNorm", C.NORMALISATION),
])
def test_op_families(name: str, cat: Category) -> None:
    assert op_family(name) == cat


@pytest.mark.parametrize("name", ["aten::copy_", "aten::to", "aten::cat", "aten::max_pool2d_with_indices",
                                  "aten::_local_scalar_dense", "aten::index_select", "record_param_comms",
                                  "aten::_convert_indices_from_coo_to_csr", "aclnnInplaceCopy",
                                  "aclnnMaxPool2dWithMask", "aclnnExpand", "aclnnNLLLoss"])
def test_ops_the_table_leaves_to_their_rows(name: str) -> None:
    assert op_family(name) == -1


@pytest.mark.parametrize(("name", "cat"), [
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas", C.GEMM),
    ("Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1", C.GEMM), ("nvjet_hsh_128x256_64x4_2x1_v_bz_coopB_TNN", C.GEMM),
    ("volta_sgemm_128x32_nt", C.GEMM), ("void splitKreduce_kernel<float, float, float, float>(...)", C.GEMM),
    ("void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, true>(...)", C.CONVOLUTION),
    ("sm80_xmma_dgrad_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc", C.CONVOLUTION),
    ("volta_scudnn_128x64_relu_medium_nn_v1", C.CONVOLUTION),
    ("void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(...)", C.CONVOLUTION),
    ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, 1>(...)", C.NORMALISATION),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(...)", C.NORMALISATION),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float> > >(...)",
     C.REDUCTION),
    ("void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true>(...)", C.REDUCTION),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float> >(...)", C.ELEMENTWISE),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4> >(...)", C.ATTENTION),
    ("attn_fwd", C.ATTENTION), ("triton_poi_fused_add_0", C.ELEMENTWISE), ("triton_per_fused_mean_2", C.REDUCTION),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(...)", C.OTHER),  # communication is the activity class's call
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 2>(...)", C.OTHER),
])
def test_kernel_families(name: str, cat: Category) -> None:
    assert kernel_family(name) == cat


def test_tracelens_labels() -> None:
    assert [op_label(n) for n in ("aten::addmm", "aten::native_layer_norm", "aten::native_layer_norm_backward",
                                  "aten::_scaled_dot_product_flash_attention", "triton_poi_fused_0",
                                  "aten::_flash_attention_forward")] == [0, 3, 4, 5, 10, -1]
    assert kernel_label("void at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>(...)") == 8
    assert kernel_label("void at::native::reduce_kernel<512, 1>(...)") == 9
    assert kernel_label("void (anonymous namespace)::elementwise_kernel_with_index<int>(...)") == -1


def test_union_length_by_group() -> None:
    group = np.array([0, 0, 0, 1, 1, 2])
    starts = np.array([0, 5, 20, 100, 100, 7])
    ends = np.array([10, 12, 25, 150, 120, 7])
    assert intervals.union_length_by_group(group, starts, ends, 4).tolist() == [17, 50, 0, 0]


def _trace(tmp_path: Path) -> TraceBuilder:
    """Step 1 (0-1000 µs). ``aten::addmm`` launches a GEMM (100 µs) and a memset (5 µs);
    ``my::fused`` (unknown) launches an elementwise (10 µs) and a reduce kernel (30 µs) on two streams,
    overlapping by 5 µs; ``record_param_comms`` an NCCL kernel (50 µs); ``aten::copy_`` an H2D copy
    (20 µs); one kernel (8 µs) has no launch call in the trace."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=1000)
    b.op("aten::addmm", ts=10, dur=20)
    b.launch_kernel("volta_sgemm_128x64_nn", 11, 2, ts=100, dur=100)
    b.launch_kernel("Memset (Device)", 14, 2, ts=205, dur=5, cat="gpu_memset", runtime="cudaMemsetAsync")
    b.op("my::fused", ts=40, dur=20)
    b.launch_kernel("void at::native::vectorized_elementwise_kernel<4, AddFunctor>(...)", 41, 2, ts=300, dur=10)
    b.launch_kernel("void at::native::reduce_kernel<512, 1>(...)", 44, 2, ts=305, dur=30, stream=8)
    b.op("record_param_comms", ts=70, dur=10)
    b.launch_kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 71, 2, ts=400, dur=50, stream=20)
    b.op("aten::copy_", ts=90, dur=10)
    b.launch_kernel("Memcpy HtoD (Pageable -> Device)", 91, 2, ts=500, dur=20, cat="gpu_memcpy",
                    runtime="cudaMemcpyAsync")
    b.gpu("void at::native::vectorized_elementwise_kernel<4, FillFunctor>(...)", ts=600, dur=8)
    return b


def test_every_row_and_op_in_one_category(tmp_path: Path) -> None:
    v = compute_categories(_trace(tmp_path).load(tmp_path), 0)
    t = {c: (int(o), int(a), int(ns)) for c, o, a, ns in zip(v.table.category, v.table.ops, v.table.activities,
                                                             v.table.time_ns)}
    assert t["GEMM"] == (1, 1, 100_000)  # the memset under addmm is memory
    assert t["memory"] == (1, 2, 25_000)  # memset + copy rows; the copy_ op
    assert t["reduction"] == (1, 1, 30_000)  # my::fused: its largest part
    assert t["elementwise"] == (0, 2, 18_000)  # its elementwise row + the launch-less fill kernel
    assert t["communication"] == (1, 1, 50_000)
    assert v.total_ns == 223_000 and v.unattributed_ns == 8_000
    assert list(v.table.category) == ["GEMM", "communication", "reduction", "memory", "elementwise", "attention",
                                      "convolution", "normalisation", "other"]
    assert v.table.share_pct.sum() == pytest.approx(100.0)
    assert v.step.tolist() == [1] and v.step_time_ns.shape == (1, len(CATEGORY_NAMES))
    assert v.step_time_ns[0, C.GEMM] == 100_000


def test_tracelens_grouping(tmp_path: Path) -> None:
    tl = compute_categories(_trace(tmp_path).load(tmp_path), 0).tracelens
    got = {c: (int(n), int(ns)) for c, n, ns in zip(tl.category, tl.ops, tl.time_ns)}
    # addmm: GEMM + memset busy 105 µs; my::fused: first kernel is ATen elementwise, busy 35 µs (union);
    # copy_: elementwise by the table; NCCL left out; the launch-less kernel belongs to no launcher
    assert got == {"GEMM": (1, 105_000), "elementwise": (2, 55_000)}


def test_without_device_work_it_is_not_applicable(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("aten::add", ts=0, dur=10)
    with pytest.raises(NotApplicable):
        compute_categories(b.load(tmp_path), 0)


def test_gemm_shape_from_input_dims() -> None:
    bf16 = '["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"]'
    assert gemm_shape("aten::addmm", "[[512], [141, 512], [512, 512], [], []]", bf16) == (
        1, 141, 512, 512, True, "c10::BFloat16", 2)
    assert gemm_shape("aten::bmm", "[[4, 32, 8], [4, 8, 16]]", '["float", "float"]') == (
        4, 32, 16, 8, False, "float", 4)
    assert gemm_shape("aten::mm", "[[4, 8]]", '["float"]') is None  # one operand only
    assert gemm_shape("aten::add", "[[4, 8], [8, 4]]", '["float", "float"]') is None


def test_gemm_rows_per_shape(tmp_path: Path) -> None:
    """Two mm calls of one shape (40 and 60 µs: the second with a 10 µs memset beside its kernel) and
    one addmm; FLOPs 2·M·N·K (+ M·N bias), bytes (M·K + K·N + M·N (+ N)) × 4."""
    b = TraceBuilder()
    mm = {"Input Dims": [[64, 128], [128, 256]], "Input type": ["float", "float"]}
    b.op("aten::mm", ts=0, dur=10, **mm)
    b.launch_kernel("volta_sgemm_128x64_nn", 1, 2, ts=100, dur=40)
    b.op("aten::mm", ts=20, dur=10, **mm)
    b.launch_kernel("volta_sgemm_128x64_nn", 21, 2, ts=200, dur=50)
    b.launch_kernel("Memset (Device)", 24, 2, ts=250, dur=10, cat="gpu_memset", runtime="cudaMemsetAsync")
    b.op("aten::addmm", ts=40, dur=10, **{"Input Dims": [[256], [64, 128], [128, 256], [], []],
                                           "Input type": ["float", "float", "float", "Scalar", "Scalar"]})
    b.launch_kernel("volta_sgemm_128x64_nn", 41, 2, ts=300, dur=20)
    g = compute_categories(b.load(tmp_path), 0).gemm
    assert g.name.tolist() == ["aten::mm", "aten::addmm"] and g.calls.tolist() == [2, 1]
    assert g.gflops.tolist() == pytest.approx([2 * 64 * 256 * 128 / 1e9, (2 * 64 * 256 * 128 + 64 * 256) / 1e9])
    assert g.data_moved_mb[0] * 2**20 == (64 * 128 + 128 * 256 + 64 * 256) * 4
    assert g.time_ns.tolist() == [100_000, 20_000] and g.median_time_ns[0] == 50_000
    assert g.tflops_median[0] == pytest.approx((2 * 64 * 256 * 128 / 40e-6 + 2 * 64 * 256 * 128 / 60e-6) / 2 / 1e12)
