"""no-tensor-cores offers TF32 only where the device has it (audit: a Tesla V100, compute capability
7.0, was told "One-line alternative on Ampere+: torch.backends.cuda.matmul.allow_tf32 = True ..." and
linked PyTorch's TF32 page)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from stepscope.advisor.engine import run_advisor
from stepscope.advisor.finding import Finding
from stepscope.analysis.bundle import analyze
from stepscope.report import texts
from stepscope.report.findings_view import render_findings
from tests.builders import V100, TraceBuilder
from tests.unit.advisor.scenes import device_sync, gemm, tensor_cores

TF32_PAGE = "https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices"
A100 = {**V100, "name": "NVIDIA A100-SXM4-80GB", "computeMajor": 8, "numSms": 108}
NO_CC = {k: v for k, v in V100.items() if k not in ("computeMajor", "computeMinor")}


def _finding(tmp_path: Path, device: dict[str, Any]) -> tuple[Finding, str]:
    b = TraceBuilder(device=device)
    tensor_cores(b, True)  # FP32 convolutions without Tensor Cores
    advice = run_advisor(analyze(b.load(tmp_path)))
    (f,) = [f for f in advice.findings if f.rule == "no-tensor-cores"]
    out = io.StringIO()
    render_findings([f], Console(file=out, width=1000))
    return f, out.getvalue()


def test_a_v100_gets_no_tf32_line_nor_page(tmp_path: Path) -> None:
    f, shown = _finding(tmp_path, V100)
    assert f.change.params["tf32"] is False and f.change.params["dtype"] == "float16"
    assert texts.change_text(f) == ("Run the model under mixed precision: with torch.autocast('cuda', "
                                    "dtype=torch.float16): ... (fp16 needs torch.cuda.amp.GradScaler; on Ampere+ "
                                    "bf16 does not).")
    assert "tf32" not in shown.lower() and "https://pytorch.org/docs/stable/amp.html" in shown


@pytest.mark.parametrize(("device", "where"), [(A100, "on this GPU (TF32)"), (NO_CC, "on Ampere or newer (TF32)")])
def test_tf32_where_the_device_has_it_or_may(tmp_path: Path, device: dict[str, Any], where: str) -> None:
    f, shown = _finding(tmp_path, device)
    assert texts.change_text(f).endswith(f"One-line alternative {where}: torch.backends.cuda.matmul.allow_tf32 = "
                                         "True; torch.backends.cudnn.allow_tf32 = True.")
    assert TF32_PAGE in shown


H200 = {**V100, "name": "NVIDIA H200", "computeMajor": 9, "numSms": 132}


@pytest.mark.parametrize("attention_ms", [2, 0])
def test_fp32_gemms_on_cuda_cores_beside_attention_on_tensor_cores(tmp_path: Path, attention_ms: int) -> None:
    """Hugging Face GPT-2 in FP32 on an H200: every GEMM runs FFMA while SDPA's memory-efficient attention
    runs on Tensor Cores, so 10.1 % of the eligible time was on Tensor Cores and the rule (at most 10 %)
    said nothing about 61 % of the kernel time. Here 6 ms of FP32 GEMMs and 2 ms of attention a step:
    25 % of the eligible time on Tensor Cores; the FP32 GEMMs are 75 % of all kernel time."""
    b = TraceBuilder(device=H200)
    for i in range(3):
        t = i * 10_000
        b.step(i + 1, t, 10_000)
        gemm(b, t + 10, dur=6_000, name="sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_ffma",
             **{"Input type": ["float", "float"]})
        if attention_ms:  # launched right after the GEMM; runs when the GEMM ends (t + 6,030)
            b.op("aten::_efficient_attention_forward", ts=t + 60, dur=30, **{"Input type": ["float"] * 3})
            b.launch_kernel("fmha_cutlassF_f32_aligned_64x64_rf_sm80", launch_ts=t + 65, launch_dur=10,
                            ts=t + 6_030, dur=attention_ms * 1000, grid=[160, 1, 1], block=[256, 1, 1])
        device_sync(b, t + 100, t + 6_040 + attention_ms * 1000)  # the host waits for the kernels
    advice = run_advisor(analyze(b.load(tmp_path)))
    (f,) = [f for f in advice.findings if f.rule == "no-tensor-cores"]
    assert f.evidence["fp32_cuda_core_pct"] == pytest.approx(600 / (6 + attention_ms))
    # the gain: the 6 ms of FFMA GEMMs at an H200's bf16-over-FP32 peak ratio, all on the critical path
    # (replayed: the host waits for the kernels, so the step shortens by what they lose)
    speedup = f.evidence["amp_speedup"]
    assert speedup == pytest.approx(14.8, abs=0.1)
    assert f.est_gain_ns == pytest.approx(6e6 * (1 - 1 / speedup), rel=1e-3)


def test_bf16_casts_under_an_fp32_linear_are_not_fp32_math(tmp_path: Path) -> None:
    """Under autocast a ``linear`` takes FP32 tensors and casts them (a ``copy_`` of mixed types launches
    the cast kernels) before its bf16 GEMM on Tensor Cores: the casts are no FP32 matrix math."""
    b = TraceBuilder(device=H200)
    for i in range(3):
        t = i * 10_000
        b.step(i + 1, t, 10_000)
        b.op("aten::linear", ts=t + 10, dur=8_000, **{"Input type": ["float", "float"]})
        gemm(b, t + 20, dur=3_000, name="void at::native::vectorized_elementwise_kernel<4, bfloat16_copy_kernel_cuda>",
             op="aten::copy_", **{"Input type": ["c10::BFloat16", "float", ""]})
        gemm(b, t + 3_100, dur=4_000, name="sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_gmma",
             op="aten::addmm", **{"Input type": ["c10::BFloat16", "c10::BFloat16"]})
    advice = run_advisor(analyze(b.load(tmp_path)))
    assert "no-tensor-cores" not in [f.rule for f in advice.findings]
