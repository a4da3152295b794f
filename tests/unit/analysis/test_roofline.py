"""Roofline and MFU on hand-made traces: FLOPs, bytes, intensity, bound, % of the roof and MFU
computed by hand; an unknown device gives no bound; the peak table's matching."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console

from stepscope.analysis.bundle import analyze
from stepscope.analysis.peaks import match_device
from stepscope.analysis.roofline import compute_roofline
from stepscope.report.json_out import to_json
from stepscope.report.views.roofline import render_roofline
from tests.builders import TraceBuilder, kargs

H100 = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045870592, "computeMajor": 9,
        "computeMinor": 0, "numSms": 132}
BF16 = ["c10::BFloat16", "c10::BFloat16"]
H100_BF16 = 989.5e12  # dense bf16 FLOP/s, NVIDIA H100 SXM datasheet (1,979 TFLOPS with sparsity / 2)
H100_BW = 3.35e12  # bytes / s


def _op_with_kernel(b: TraceBuilder, name: str, ts: float, kernel_us: float, args: dict[str, Any],
                    kernel: str = "sm90_gemm") -> None:
    b.op(name, ts, 5, **kargs(args))
    b.launch_kernel(kernel, launch_ts=ts + 1, launch_dur=2, ts=ts + 10, dur=kernel_us)


def gemm_trace(tmp_path: Path, device: dict[str, Any] | None) -> Any:
    """Step 1 (0-1000 µs): a square bf16 mm (10 µs kernel), a skinny one (100 µs), a relu (40 µs)."""
    b = TraceBuilder(device=device)
    b.step(1, 0, 1000)
    _op_with_kernel(b, "aten::mm", 10, 10, {"Input Dims": [[1024, 1024], [1024, 1024]], "Input type": BF16})
    _op_with_kernel(b, "aten::mm", 100, 100, {"Input Dims": [[8192, 16], [16, 8192]], "Input type": BF16})
    _op_with_kernel(b, "aten::relu", 300, 40, {"Input Dims": [[8192, 8192]], "Input type": ["c10::BFloat16"]},
                    kernel="relu_kernel")
    return b.load(tmp_path)


def test_gemm_rows_by_hand(tmp_path: Path) -> None:
    v = compute_roofline(gemm_trace(tmp_path, H100), 0)
    assert v.peak is not None and v.peak.name == "H100 SXM"
    o = v.ops
    assert list(o.time_ns) == [100_000, 10_000]  # most time first: the skinny mm, then the square one
    # skinny: 2·8192·8192·16 FLOPs; (8192·16 + 16·8192 + 8192·8192) elements of 2 bytes
    f, by = 2 * 8192 * 8192 * 16, (8192 * 16 * 2 + 8192 * 8192) * 2
    assert o.gflops[0] * 1e9 == pytest.approx(f) and o.mbytes[0] * 1e6 == pytest.approx(by)
    assert o.intensity[0] == pytest.approx(f / by)  # 15.9 FLOP/B, under the ridge 989.5 / 3.35 = 295.4
    assert o.bound[0] == "memory"
    assert o.tflops[0] * 1e12 == pytest.approx(f / 100e-6) and o.tbps[0] * 1e12 == pytest.approx(by / 100e-6)
    assert o.roof_pct[0] == pytest.approx(100 * (f / 100e-6) / (f / by * H100_BW))
    # square: 2·1024³ FLOPs over 3·1024² elements: 341.3 FLOP/B, over the ridge
    f2, by2 = 2 * 1024**3, 3 * 1024**2 * 2
    assert o.intensity[1] == pytest.approx(f2 / by2) and o.bound[1] == "compute"
    assert o.roof_pct[1] == pytest.approx(100 * (f2 / 10e-6) / H100_BF16)
    assert o.peak_pct[1] == pytest.approx(o.roof_pct[1])
    assert o.ridge[1] == pytest.approx(H100_BF16 / H100_BW)
    # MFU: both GEMMs at peak would take (f + f2) / peak of the 1 ms step; they cover 110 of 150 µs busy
    assert v.steps.mfu_pct[0] == pytest.approx(100 * (f + f2) / H100_BF16 / 1e-3)
    assert v.mfu_pct == pytest.approx(v.steps.mfu_pct[0])
    assert v.steps.covered_pct[0] == pytest.approx(100 * 110 / 150)
    assert v.steps.tflop[0] == pytest.approx((f + f2) / 1e12)


def test_unknown_device_gives_no_bound(tmp_path: Path) -> None:
    mystery = {**H100, "name": "Mystery Accelerator 9000"}
    trace = gemm_trace(tmp_path, mystery)
    v = compute_roofline(trace, 0)
    assert v.peak is None and v.device == "Mystery Accelerator 9000"
    assert list(v.ops.bound) == ["", ""] and np.isnan(v.ops.roof_pct).all() and math.isnan(v.mfu_pct)
    assert v.ops.gflops[1] * 1e9 == pytest.approx(2 * 1024**3)  # FLOPs and rates are still there
    doc = to_json(analyze(trace))["ranks"][0]["roofline"]
    assert doc["unknown_device"] is True and doc["peak"] is None and doc["mfu_pct"] is None
    assert [r["bound"] for r in doc["ops"]] == [None, None]
    console = Console(record=True, width=80)
    render_roofline(v, console, 10)
    assert "is not in the peak table: no bound and no MFU" in " ".join(console.export_text().split())


def test_no_device_name_gives_no_bound(tmp_path: Path) -> None:
    v = compute_roofline(gemm_trace(tmp_path, None), 0)
    assert v.peak is None and v.device == "" and math.isnan(v.mfu_pct)


def test_outermost_costed_op_owns_the_kernels(tmp_path: Path) -> None:
    """aten::linear around aten::addmm: one row, linear's FLOPs (with the bias), the addmm's kernel time."""
    b = TraceBuilder(device=H100)
    b.step(1, 0, 1000)
    b.op("aten::linear", 10, 50, **kargs({"Input Dims": [[64, 32], [16, 32], [16]], "Input type": [*BF16, BF16[0]]}))
    b.op("aten::addmm", 20, 20, **kargs({"Input Dims": [[16], [64, 32], [32, 16], [], []],
                                         "Input type": [BF16[0], *BF16, "Scalar", "Scalar"]}))
    b.launch_kernel("sm90_gemm", launch_ts=25, launch_dur=2, ts=100, dur=8)
    o = compute_roofline(b.load(tmp_path), 0).ops
    assert list(o.name) == ["aten::linear"] and list(o.calls) == [1] and list(o.time_ns) == [8000]
    assert o.gflops[0] * 1e9 == pytest.approx(2 * 64 * 16 * 32 + 64 * 16)  # 2·M·N·K + M·N bias
    assert o.mbytes[0] * 1e6 == pytest.approx((64 * 32 + 16 * 32 + 64 * 16 + 16) * 2)


@pytest.mark.parametrize(("name", "memory_gib", "row"), [
    ("Tesla V100-SXM2-32GB", 32, "V100 SXM2"), ("Tesla V100-DGXS-32GB", 32, "V100 SXM2"),
    ("Tesla V100-PCIE-16GB", 16, "V100 PCIe"), ("Tesla V100S-PCIE-32GB", 32, "V100S PCIe"),
    ("NVIDIA A100-PG509-200", 40, "A100 SXM4 40GB"), ("NVIDIA A100-SXM4-80GB", 80, "A100 SXM4 80GB"),
    ("NVIDIA A100 80GB PCIe", 80, "A100 PCIe 80GB"), ("NVIDIA H100 80GB HBM3", 80, "H100 SXM"),
    ("NVIDIA H100 PCIe", 80, "H100 PCIe"), ("NVIDIA H100 NVL", 94, "H100 NVL"), ("NVIDIA H200", 141, "H200 SXM"),
    ("NVIDIA B200", 180, "B200 (HGX, 1000 W)"), ("NVIDIA L4", 22, "L4"), ("NVIDIA L40S", 45, "L40S"),
    ("AMD Instinct MI250X", 64, "MI250X"), ("AMD Instinct MI250", 64, "MI250"),
    ("AMD Instinct MI300X", 192, "MI300X"), ("AMD Instinct MI300X VF", 192, "MI300X"),
    ("AMD Instinct MI325X", 256, "MI325X"), ("AMD Instinct MI355X", 288, "MI355X"),
    ("Ascend910B3", 64, "Ascend 910B"),
])
def test_device_names_match_their_rows(name: str, memory_gib: int, row: str) -> None:
    p = match_device(name, memory_gib * 2**30)
    assert p is not None and p.name == row and p.source.startswith("https://")


@pytest.mark.parametrize(("name", "memory"), [
    ("AMD Radeon Graphics", 64 * 2**30),  # the MI250 minitoy's name: no part number
    ("AMD Instinct MI250X/MI250", 64 * 2**30),  # either part: no guess
    ("NVIDIA A100-SXM4", None),  # 40 or 80 GB: the memory decides, and none is recorded
    ("NVIDIA GeForce RTX 4090", 24 * 2**30), ("NVIDIA L40", 45 * 2**30), ("", None),
])
def test_unknown_devices_match_nothing(name: str, memory: int | None) -> None:
    assert match_device(name, memory) is None


def test_peaks_per_dtype() -> None:
    h100 = match_device("NVIDIA H100 80GB HBM3")
    assert h100 is not None
    assert [h100.peak_tflops(t) for t in ("fp32", "tf32", "bf16", "fp8")] == [67.0, 494.5, 989.5, 1979.0]
    v100 = match_device("Tesla V100-SXM2-32GB")
    assert v100 is not None and v100.peak_tflops("bf16") is None and v100.peak_tflops("fp16") == 125.0


def _fp32_trace(tmp_path: Path, device: dict[str, Any]) -> Any:
    """fp32 work: a convolution (cuDNN kernel), a GEMM whose kernel says tf32, a GEMM whose kernel does not."""
    b = TraceBuilder(device=device)
    b.step(1, 0, 1000)
    conv = {"Input Dims": [[8, 64, 32, 32], [64, 64, 3, 3], [], [], [], [], []], "Input type": ["float"] * 2,
            "Concrete Inputs": ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "1"]}
    _op_with_kernel(b, "aten::conv2d", 10, 50, conv, kernel="void cudnn::engines_precompiled::nchwToNhwcKernel")
    mm = {"Input Dims": [[512, 512], [512, 512]], "Input type": ["float", "float"]}
    _op_with_kernel(b, "aten::mm", 100, 20, mm, kernel="sm80_xmma_gemm_tf32f32_tf32f32_f32_nn_n")
    _op_with_kernel(b, "aten::mm", 200, 30, mm, kernel="volta_sgemm_128x64_nn")
    return b.load(tmp_path)


def test_fp32_work_on_tf32_cores_is_judged_by_the_tf32_peak(tmp_path: Path) -> None:
    o = compute_roofline(_fp32_trace(tmp_path, H100), 0).ops
    by_time = dict(zip(o.time_ns.tolist(), zip(o.dtype.tolist(), o.peak_tflops.tolist())))
    assert by_time[50_000] == ("tf32", 494.5)  # convolution: cuDNN's default allow_tf32
    assert by_time[20_000] == ("tf32", 494.5)  # its kernel says tf32
    assert by_time[30_000] == ("fp32", 67.0)  # an sgemm: fp32 CUDA cores


def test_fp32_convolution_on_a_part_without_tf32(tmp_path: Path) -> None:
    from tests.builders import V100
    o = compute_roofline(_fp32_trace(tmp_path, V100), 0).ops
    assert dict(zip(o.time_ns.tolist(), o.dtype.tolist()))[50_000] == "fp32"
    assert o.peak_tflops[o.time_ns == 50_000][0] == 15.7


def test_unknown_device_and_no_costed_call_inside_a_step(tmp_path: Path) -> None:
    """The costed op runs before the only step: the step has no FLOPs; no peak: no MFU, no error."""
    b = TraceBuilder(device={**H100, "name": "AMD Radeon Graphics"})
    _op_with_kernel(b, "aten::mm", 10, 10, {"Input Dims": [[64, 64], [64, 64]], "Input type": BF16})
    b.step(1, 500, 100)
    b.launch_kernel("relu_kernel", launch_ts=510, launch_dur=2, ts=520, dur=30)
    v = compute_roofline(b.load(tmp_path), 0)
    assert v.peak is None and list(v.steps.tflop) == [0.0] and math.isnan(v.steps.mfu_pct[0])
    assert list(v.steps.covered_pct) == [0.0] and v.ops.gflops[0] * 1e9 == 2 * 64**3
