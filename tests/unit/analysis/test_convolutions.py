"""Convolutions on ROCm: MIOpen's layout-transform kernels are layout transforms (they were not: an
SD3.5 trace on an MI300X said 'layout transforms 0.000 ms per step' while its conv-kernel table listed
MIOpen's batched_transpose_32x32_half at 9.08 ms per step)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.analysis.convolutions import ConvolutionResult, compute_convolutions
from tests.builders import TraceBuilder

MI300X = {"id": 0, "name": "AMD Instinct MI300X", "totalGlobalMem": 206141652992, "computeMajor": 9,
          "computeMinor": 4, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "warpSize": 64,
          "regsPerBlock": 65536, "sharedMemPerBlock": 65536, "numSms": 304}

# the names as in tracelens/xdit_sd3.5_torch_compile_mi300x and MIOpen's sources
TRANSFORMS = ["batched_transpose_32x32_half", "batched_transpose_16x32_half", "batched_transpose_256x4_half",
              "batched_transpose_32x32_pack_2x2_ediv_2x2_half", "general_4d_reorder_1x256_dwordx2_r0231",
              "transpose_NCHW2CNHW_opt", "transpose_CNHW2NCHW_V1_1D_WG_float",
              "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true>(cudnn::ops::nchw2nhwc_params_t)"]
NOT_TRANSFORMS = [
    "igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x256x32_wt32x32x8_ws1x2_wr2x2_ta1x8x2x1_1x4x1x64_tb1x8x4x1_1x4x1x64",
    "triton_poi_fused__unsafe_view_clone_slice_transpose_11",  # Inductor: a view's copy, not a conv's layout
    "triton_per_fused__to_copy_add_addmm_mean_mul_pow_rsqrt_transpose_view_8",
    "_ZN7ck_tile6kentryILi1ENS_22BatchedTransposeKernelINS_24BatchedTransposePipelineIDF16bEEEEJNS_24Batched",
    "void at::native::batched_transpose_kernel<float>(float*, float const*)",
]


def _conv(tmp_path: Path, kernels: list[str]) -> ConvolutionResult:
    b = TraceBuilder(device=MI300X)
    b.step(1, ts=0, dur=1000)
    b.op("aten::miopen_convolution", ts=1, dur=100)
    for i, name in enumerate(kernels):
        b.launch_kernel(name, launch_ts=2 + i, launch_dur=1, ts=200 + 20 * i, dur=10, runtime="hipLaunchKernel")
    return compute_convolutions(b.load(tmp_path), 0)


@pytest.mark.parametrize("name", TRANSFORMS)
def test_miopen_and_cudnn_layout_transforms(tmp_path: Path, name: str) -> None:
    r = _conv(tmp_path, [name, NOT_TRANSFORMS[0]])
    assert [n for n, _, _ in r.transforms.top()] == [name]


def test_other_transposes_are_not_layout_transforms(tmp_path: Path) -> None:
    r = _conv(tmp_path, NOT_TRANSFORMS)
    assert len(r.transforms) == 0
