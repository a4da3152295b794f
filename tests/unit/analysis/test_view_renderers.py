"""The view renderers print the analysis numbers and say plainly what a trace lacks."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from stepscope.analysis.bundle import analyze
from stepscope.report import terminal
from tests.builders import TraceBuilder
from tests.unit.analysis.test_breakdown import two_steps

VIEWS = ["overview", "breakdown", "operators", "kernels", "memory", "modules", "annotations"]


def render(tmp_path: Path, top: int = 10) -> str:
    trace = two_steps(TraceBuilder()).load(tmp_path)
    out = io.StringIO()
    terminal.render(analyze(trace, names=VIEWS), Console(file=out, width=200), VIEWS, top)
    return out.getvalue()


def test_views_show_their_numbers(tmp_path: Path) -> None:
    text = render(tmp_path)
    assert "average step time" in text and "0.100 ms" in text  # overview: (110 + 90) / 2 µs
    assert "0.054" in text  # step 2 "Other" = 54 µs (ms column)
    assert "GPU utilization" in text and "30.00 %" in text  # (50 + 10) µs of kernels in a 200 µs span
    assert "ncclKernel_AllReduce_RING_LL_Sum_float" in text  # kernel view + collective table
    assert "aten::mm" in text  # operator view


def test_missing_data_is_said_plainly(tmp_path: Path) -> None:
    text = render(tmp_path)
    assert "no memory events: profile with profile_memory=True" in text
    assert "no nn.Module events" in text
    assert "no input shapes recorded (profile with record_shapes=True)" in text


def test_top_limits_rows(tmp_path: Path) -> None:
    text = render(tmp_path, top=1)
    assert "top 1 of 2 kernels" in text  # sgemm and the NCCL kernel (copies and sets are not kernels)
    assert "showing the 1 longest of 2 steps" in text
