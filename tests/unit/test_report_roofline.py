"""The Markdown roofline section, from a hand-made document (the HTML report is the web UI's app:
its roofline view is tested in the browser)."""

from __future__ import annotations

from stepscope.report.markdown import render_markdown

PEAK = {"name": "H100 SXM", "tflops": {"fp32": 67.0, "bf16": 989.5, "fp8": 1979.0}, "bandwidth_tbps": 3.35,
        "source": "https://example.invalid/datasheet"}
OPS = [{"name": "aten::mm", "dtype": "bf16", "calls": 3, "time_ms": 2.0, "tflops": 500.0, "intensity": 400.0,
        "bound": "compute"},
       {"name": "aten::bmm", "dtype": "fp32", "calls": 1, "time_ms": 1.0, "tflops": 20.0, "intensity": 5.0,
        "bound": "memory"},
       {"name": "aten::linear", "dtype": "bf16", "calls": 1, "time_ms": 1.0, "tflops": 1.0, "intensity": None}]


def test_markdown_roofline_section() -> None:
    doc = {"ranks": [{"rank": 0, "roofline": {"device": "NVIDIA H100 80GB HBM3", "peak": PEAK, "mfu_pct": 12.5,
                                              "covered_pct": 80.0, "ops": OPS}}]}
    md = render_markdown(doc)
    assert "**Roofline** (rank 0: NVIDIA H100 80GB HBM3 → H100 SXM, MFU 12.5 %" in md
    assert "| aten::mm | bf16 | 3 |" in md
