"""The terminal views say an AMD GPU's parts and libraries by their names, with the findings' ROCm
words (audit: "compute 9.4, 304 SMs" under a header of "304 CUs", "Tensor Cores" on an MI300X,
"CUDA runtime unknown" and "cuDNN fallback algorithms" on ROCm); an NVIDIA GPU's views keep theirs."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from stepscope.analysis.bundle import analyze
from stepscope.report import terminal
from tests.builders import TraceBuilder
from tests.unit.analysis.test_convolutions import MI300X

VIEWS = ["overview", "launch_config", "tensor_cores", "convolutions", "software"]


def _views(tmp_path: Path, device: dict[str, object]) -> str:
    b = TraceBuilder(device=device)
    b.step(1, ts=0, dur=1000)
    b.op("aten::miopen_convolution", ts=1, dur=100)
    b.launch_kernel("batched_transpose_32x32_half", 2, 1, 200, 10, grid=[8, 1, 1], block=[256, 1, 1])
    b.launch_kernel("implicit_convolve_sgemm", 3, 1, 220, 100, grid=[400, 1, 1], block=[256, 1, 1])
    b.op("aten::mm", ts=400, dur=50)
    b.launch_kernel("Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI32x32x8x1_SN", 401, 1, 500, 100, grid=[400, 1, 1],
                    block=[256, 1, 1])
    out = io.StringIO()
    terminal.render(analyze(b.load(tmp_path), names=VIEWS), Console(file=out, width=400), VIEWS, 10)
    return out.getvalue()


def test_amd_views_say_cus_matrix_cores_miopen_and_hip(tmp_path: Path) -> None:
    text = _views(tmp_path, MI300X)
    assert "AMD Instinct MI300X, 192.0 GiB, gfx9.4, 304 CUs" in text  # was "compute 9.4, 304 SMs"
    assert "est. CU efficiency" in text and "kernel time on Matrix Cores" in text
    assert "launch configuration (304 CUs)" in text and "time-weighted CU fill" in text
    assert "rank 0: Matrix Cores:" in text and "launched by Matrix-Core eligible ops" in text
    assert "on Matrix Cores" in text and "MIOpen fallback algorithms" in text
    assert "HIP runtime unknown" in text
    for nvidia in ("SMs", "Tensor Core", "Tensor-Core", "cuDNN", "CUDA runtime", "compute 9.4"):
        assert nvidia not in text, nvidia


def test_nvidia_views_keep_their_words(tmp_path: Path) -> None:
    text = _views(tmp_path, {**MI300X, "name": "NVIDIA H100 80GB HBM3", "warpSize": 32, "numSms": 132,
                             "computeMajor": 9, "computeMinor": 0})
    assert "NVIDIA H100 80GB HBM3, 192.0 GiB, compute 9.0, 132 SMs" in text
    assert "est. SM efficiency" in text and "kernel time on Tensor Cores" in text
    assert "launch configuration (132 SMs)" in text and "cuDNN fallback algorithms" in text
    assert "CUDA runtime unknown" in text and "Matrix" not in text and "CUs" not in text
