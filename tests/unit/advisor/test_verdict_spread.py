"""The verdict's step is the mean over steps; where one slow step (an evaluation, a warm-up) drags the mean far
above the median, the verdict says the median and names that step (micro traces, hand-computed)."""

from __future__ import annotations

from pathlib import Path

from stepscope.advisor.engine import run_advisor
from stepscope.analysis.bundle import analyze
from stepscope.report.texts import verdict_text
from tests.builders import TraceBuilder


def steps_trace(tmp_path: Path, lengths_us: list[int]):  # type: ignore[no-untyped-def]
    b = TraceBuilder(device=None)
    t = 0
    for i, n in enumerate(lengths_us):
        b.step(i + 1, t, n)
        b.op("aten::mm", ts=t, dur=n)
        t += n
    return run_advisor(analyze(b.load(tmp_path))).verdicts[0]


def test_one_slow_step_is_named_beside_the_mean(tmp_path: Path) -> None:
    v = steps_trace(tmp_path, [10_000, 10_000, 10_000, 50_000])  # mean 20 ms, median 10 ms
    assert (v.step_ns, v.median_step_ns, v.slowest_step, v.slowest_step_ns) == (20_000_000, 10_000_000, 4, 50_000_000)
    assert "of the 20.0 ms step; the median 10.0 ms: step 4 took 50.0 ms)" in verdict_text(v)
    d = v.to_dict()
    assert (d["median_step_ms"], d["slowest_step"], d["slowest_step_ms"]) == (10.0, 4, 50.0)


def test_even_steps_say_only_the_mean(tmp_path: Path) -> None:
    v = steps_trace(tmp_path, [10_000, 11_000, 12_000])  # mean 11 ms, median 11 ms
    assert "median" not in verdict_text(v) and v.median_step_ns == 11_000_000
