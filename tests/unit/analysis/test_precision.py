"""The mixed-precision what-if (``whatif/precision.py``): the eligible ops' FP32 kernels without Tensor
Cores at the device's peak ratio; not the kernels of ops that already take bf16 tensors.

Each 10 ms step: a ``cudnn_convolution`` launching an 8 ms kernel without Tensor Cores, the host then
waiting for it in ``cudaDeviceSynchronize``. On a V100 (FP32 15.7, FP16 Tensor-Core 125 TFLOP/s: ×7.96)
in FP32 the kernel takes 8 / 7.96 ms under autocast, and the step is 8 × (1 − 1 / 7.96) = 6.995 ms
shorter. The same kernel under an op on bf16 tensors is what autocast already runs (a layout transform
or a cast around a Tensor-Core convolution): nothing to change.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope import load
from stepscope.analysis.whatif.precision import MixedPrecision
from stepscope.analysis.whatif.simulate import simulate
from tests.builders import TraceBuilder
from tests.unit.advisor.scenes import device_sync


def conv_step(tmp_path: Path, input_type: str) -> Path:
    b = TraceBuilder()
    for i in range(3):
        t = i * 10_000
        b.step(i + 1, t, 10_000)
        b.op("aten::cudnn_convolution", ts=t + 10, dur=30, **{"Input type": [input_type, input_type]})
        b.launch_kernel("void cudnn::engines_precompiled::nchwToNhwcKernel<float>", launch_ts=t + 15, launch_dur=10,
                        ts=t + 40, dur=8_000, grid=[160, 1, 1], block=[256, 1, 1])
        device_sync(b, t + 100, t + 8_050)
    return b.write(tmp_path / f"{input_type}.json")


def test_fp32_kernels_take_the_peak_ratio(tmp_path: Path) -> None:
    trace = load(conv_step(tmp_path, "float"), use_cache=False)
    measured = simulate(trace, []).mean_ns(True)
    saved_ms = (measured - simulate(trace, [MixedPrecision()]).mean_ns(True)) / 1e6
    assert saved_ms == pytest.approx(8.0 * (1 - 15.7 / 125.0), abs=0.01)


def test_kernels_of_bf16_ops_are_left_as_they_are(tmp_path: Path) -> None:
    trace = load(conv_step(tmp_path, "c10::BFloat16"), use_cache=False)
    assert simulate(trace, [MixedPrecision()]).mean_ns(True) == simulate(trace, []).mean_ns(True)


def test_tf32_kernels_take_the_bf16_over_tf32_ratio(tmp_path: Path) -> None:
    """An A100's 8 ms TF32 GEMM (Tensor Cores on FP32 tensors) under bf16 autocast: 2 x faster (312 over
    156 TFLOP/s), the host waiting for it: the step 4 ms shorter. Its bf16 twin is left as it is."""
    from stepscope.analysis.whatif.precision import Bf16OverTf32
    from tests.builders import V100

    a100 = {**V100, "name": "NVIDIA A100-SXM4-80GB", "computeMajor": 8, "numSms": 108}
    saved = []
    for kind, types in (("f32f32_tf32f32_f32", "float"), ("bf16bf16_bf16f32_f32", "c10::BFloat16")):
        b = TraceBuilder(device=a100)
        for i in range(3):
            t = i * 10_000
            b.step(i + 1, t, 10_000)
            b.op("aten::mm", ts=t + 10, dur=30, **{"Input type": [types, types]})
            b.launch_kernel(f"sm80_xmma_gemm_{kind}_nn_n_tilesize128x128x32_stage3_warpsize2x2x1_tensor16x8x8_kernel",
                            launch_ts=t + 15, launch_dur=10, ts=t + 40, dur=8_000, grid=[160, 1, 1], block=[256, 1, 1])
            device_sync(b, t + 100, t + 8_050)
        trace = load(b.write(tmp_path / f"{kind}.json"), use_cache=False)
        saved.append((simulate(trace, []).mean_ns(True) - simulate(trace, [Bf16OverTf32()]).mean_ns(True)) / 1e6)
    assert saved[0] == pytest.approx(4.0, abs=0.01) and saved[1] == 0.0
