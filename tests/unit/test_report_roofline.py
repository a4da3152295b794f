"""The roofline card of the HTML report and the Markdown section, from a hand-made document."""

from __future__ import annotations

import re

import pytest

from stepscope.report.html.roofline import roofline_html, roofline_svg
from stepscope.report.markdown import render_markdown

PEAK = {"name": "H100 SXM", "tflops": {"fp32": 67.0, "bf16": 989.5, "fp8": 1979.0}, "bandwidth_tbps": 3.35,
        "source": "https://example.invalid/datasheet"}
OPS = [{"name": "aten::mm", "dtype": "bf16", "calls": 3, "time_ms": 2.0, "tflops": 500.0, "intensity": 400.0,
        "bound": "compute"},
       {"name": "aten::bmm", "dtype": "fp32", "calls": 1, "time_ms": 1.0, "tflops": 20.0, "intensity": 5.0,
        "bound": "memory"},
       {"name": "aten::linear", "dtype": "bf16", "calls": 1, "time_ms": 1.0, "tflops": 1.0, "intensity": None}]


def test_one_dot_per_op_shape_and_one_roof_per_type_used() -> None:
    s = roofline_svg("c", OPS, PEAK)
    assert s.count('class="dot"') == 2  # the op without bytes has no intensity: no dot
    ridges = dict(re.findall(r'data-dtype="(\w+)" data-peak="[^"]+" data-ridge="([^"]+)"', s))
    assert set(ridges) == {"bf16", "fp32"}  # fp8 is unused
    assert float(ridges["bf16"]) == pytest.approx(989.5 / 3.35, rel=1e-6)  # 295.4 FLOP/B
    assert float(ridges["fp32"]) == pytest.approx(67.0 / 3.35, rel=1e-6)  # 20 FLOP/B
    assert 'data-intensity="400.0"' in s and 'data-tflops="500.0"' in s


def test_unknown_device_has_dots_and_no_roofs() -> None:
    s = roofline_svg("c", OPS, None)
    assert s.count('class="dot"') == 2 and 'class="roof"' not in s
    html = roofline_html({"roofline": {"device": "Mystery", "peak": None, "ops": OPS}}, 0)
    assert "Mystery is not in the peak table" in html


def test_markdown_roofline_section() -> None:
    doc = {"ranks": [{"rank": 0, "roofline": {"device": "NVIDIA H100 80GB HBM3", "peak": PEAK, "mfu_pct": 12.5,
                                              "covered_pct": 80.0, "ops": OPS}}]}
    md = render_markdown(doc)
    assert "**Roofline** (rank 0: NVIDIA H100 80GB HBM3 → H100 SXM, MFU 12.5 %" in md
    assert "| aten::mm | bf16 | 3 |" in md
