"""A ROCm trace whose device has no name (some ROCm builds of Kineto leave it empty) is still an AMD
GPU on the ROCm platform, so advice speaks of HIP graphs and CUs, never of CUDA."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.builders import TraceBuilder

MI300X_NO_NAME: dict[str, Any] = {"id": 0, "name": "", "totalGlobalMem": 206141652992, "computeMajor": 9,
                                  "computeMinor": 4, "warpSize": 64, "numSms": 304}


@pytest.mark.parametrize("meta", [{"roctracer_version": 4.1, "hip_runtime_version": 70051831}, {}])
def test_nameless_amd_device_is_rocm(tmp_path: Path, meta: dict[str, Any]) -> None:
    # with ROCm's metadata, or without it from the 64-lane wavefront alone
    b = TraceBuilder(device=MI300X_NO_NAME)
    b.meta.update(meta)
    b.step(1, ts=0, dur=100)
    b.launch_kernel("Cijk_gemm", launch_ts=10, launch_dur=5, ts=20, dur=50, runtime="hipLaunchKernel")
    info = b.load(tmp_path).rank_info(0)
    assert info.platform == "rocm"
    assert info.devices[0].vendor == "amd"
    assert info.devices[0].name == "AMD GPU (gfx9.4, 304 CUs)"


def test_nvidia_device_stays_cuda(tmp_path: Path) -> None:
    b = TraceBuilder()  # a V100, warp size 32
    b.step(1, ts=0, dur=100)
    b.launch_kernel("sgemm", launch_ts=10, launch_dur=5, ts=20, dur=50)
    info = b.load(tmp_path).rank_info(0)
    assert (info.platform, info.devices[0].vendor) == ("cuda", "nvidia")
