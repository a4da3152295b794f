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
from tests.unit.advisor.scenes import tensor_cores

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
