"""The per-trace memo of whole-trace passes (``_common.per_trace``): cached per trace object, per function."""

from __future__ import annotations

from pathlib import Path

from stepscope.analysis._memo import per_trace
from stepscope.analysis.comm import classify
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder


def test_one_result_per_trace_and_per_function(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.launch_kernel("k", launch_ts=2, launch_dur=1, ts=10, dur=10)
    trace = b.load(tmp_path)
    calls: list[str] = []

    @per_trace
    def first(t: Trace) -> list[str]:
        calls.append("first")
        return ["first"]

    @per_trace
    def second(t: Trace) -> list[str]:
        calls.append("second")
        return ["second"]

    assert first(trace) is first(trace) and first(trace) == ["first"]
    assert second(trace) == ["second"]  # same trace, other function: its own entry
    assert calls == ["first", "second"]
    assert classify(trace) is classify(trace)
    (tmp_path / "again").mkdir()
    other = b.load(tmp_path / "again")
    assert first(other) is not first(trace)
