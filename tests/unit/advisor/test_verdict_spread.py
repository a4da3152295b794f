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
    assert "of the 20.0 ms step; the median 10.0 ms: step 4 took 50.0 ms; 100% of it in aten::mm)" in verdict_text(v)
    d = v.to_dict()
    assert (d["median_step_ms"], d["slowest_step"], d["slowest_step_ms"]) == (10.0, 4, 50.0)


def test_even_steps_say_only_the_mean(tmp_path: Path) -> None:
    v = steps_trace(tmp_path, [10_000, 11_000, 12_000])  # mean 11 ms, median 11 ms
    assert "median" not in verdict_text(v) and v.median_step_ns == 11_000_000


def annotated(tmp_path: Path, marker: str | None) -> object:
    """Three 10 ms CPU steps; in each a 6 ms ``record_function('logging')`` range full of ops and a 4 ms op;
    steps from ProfilerStep markers, or (``marker``) from an iteration range of that name."""
    b = TraceBuilder(device=None)
    for i in range(3):
        t = i * 10_000
        if marker is None:
            b.step(i + 1, t, 10_000)
        else:
            b.op(marker, ts=t, dur=10_000, cat="user_annotation")
        b.op("aten::mm", ts=t, dur=4_000)
        b.op("logging", ts=t + 4_000, dur=6_000, cat="user_annotation")
        b.op("aten::item", ts=t + 4_010, dur=5_980)
    return run_advisor(analyze(b.load(tmp_path))).verdicts[0]


def test_a_host_bound_verdict_names_the_users_range_that_holds_most_of_it(tmp_path: Path) -> None:
    from stepscope.report.texts import unaddressed_text
    v = annotated(tmp_path, None)
    assert (v.top_annotation, round(v.top_annotation_pct)) == ("logging", 60)
    assert "(100% of the 10.0 ms step; 60% of it inside record_function 'logging')" in verdict_text(v)
    assert "start with record_function 'logging' (60% of the step" in unaddressed_text(v, any_findings=False)


def test_the_range_the_steps_are_read_from_is_not_named(tmp_path: Path) -> None:
    v = annotated(tmp_path, "train_step")  # the repeated train_step range is the steps (100% of them)
    assert v.step_count == 3 and v.top_annotation == "logging"
