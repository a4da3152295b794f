"""A CPU-only step bound by its ops names the op holding most of it (µs, hand-computed): three 10 ms steps
of ``aten::sort`` 0-8000 (its child ``aten::empty`` 100 µs: 7900 self) and ``aten::mm`` 8000-10000."""

from __future__ import annotations

from pathlib import Path

from stepscope.advisor.engine import run_advisor
from stepscope.analysis.bundle import analyze
from stepscope.report.texts import unaddressed_text, verdict_text
from tests.builders import TraceBuilder


def sort_trace(sort_us: int) -> TraceBuilder:
    b = TraceBuilder(device=None)
    for i in range(3):
        t = i * 10_000
        b.step(i + 1, t, 10_000)
        b.op("aten::sort", t, sort_us)
        b.op("aten::empty", t + 10, 100)
        b.op("aten::mm", t + sort_us, 10_000 - sort_us)
    return b


def test_the_op_with_most_self_time_is_named(tmp_path: Path) -> None:
    """aten::sort's self time: 3 × 7900 of 30,000 µs = 79 %."""
    v = run_advisor(analyze(sort_trace(8_000).load(tmp_path))).verdicts[0]
    assert (v.top_op, round(v.top_op_pct, 2)) == ("aten::sort", 79.0)
    assert "(100% of the 10.0 ms step; 79% of it in aten::sort)" in verdict_text(v)
    assert "start with aten::sort (79% of the step in its own time" in unaddressed_text(v, any_findings=False)


def test_no_op_holding_a_quarter_is_no_name(tmp_path: Path) -> None:
    """Sort 2000 µs (1900 self: 19 %), mm 8000 (80 %): the mm is named; five ops of 2000 µs each (20 %):
    none holds a quarter, none is named."""
    v = run_advisor(analyze(sort_trace(2_000).load(tmp_path))).verdicts[0]
    assert v.top_op == "aten::mm" and round(v.top_op_pct) == 80
    b = TraceBuilder(device=None)
    for i in range(3):
        b.step(i + 1, i * 10_000, 10_000)
        for k in range(5):
            b.op(f"aten::op{k}", i * 10_000 + 2_000 * k, 2_000)
    v = run_advisor(analyze(b.load(tmp_path, "even.json"))).verdicts[0]
    assert v.top_op == "" and "% of it in" not in verdict_text(v)  # five ops of 20 % each: none named
