"""Memoisation within one bundle build (``analysis._memo``): no global cache, one result per
(function, trace, rank) while a memo is active, nothing kept once its bundle is gone."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

from stepscope.analysis._memo import Memo, per_rank, per_trace
from stepscope.analysis.breakdown import tb_step_windows
from stepscope.analysis.bundle import Bundle, analyze, with_bundle_memo
from stepscope.analysis.comm import classify
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder


def _trace(tmp_path: Path) -> Trace:
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.launch_kernel("k", launch_ts=2, launch_dur=1, ts=10, dur=10)
    return b.load(tmp_path)


def test_one_result_per_trace_and_function_while_a_memo_is_active(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    calls: list[str] = []

    @per_trace
    def first(t: Trace) -> list[str]:
        calls.append("first")
        return ["first"]

    @per_rank
    def second(t: Trace, rank: int) -> list[int]:
        calls.append("second")
        return [rank]

    with Memo().active() as memo:
        assert first(trace) is first(trace) and first(trace) == ["first"]
        assert second(trace, 0) is second(trace, 0) and second(trace, 1) == [1]
        assert classify(trace) is classify(trace)
        assert len(memo) == 4
    assert calls == ["first", "second", "second"]
    assert first(trace) is not first(trace)  # no memo active: computed each time, nothing kept
    with Memo().active():
        assert first(trace) == ["first"]  # another memo: its own entries
    assert calls == ["first", "second", "second", "first", "first", "first"]


def test_a_bundle_owns_its_memo_and_later_work_reuses_it(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    bundle = analyze(trace)
    assert len(bundle.memo) > 0

    @with_bundle_memo
    def windows_of(b: Bundle, rank: int) -> object:
        return tb_step_windows(trace, rank)

    assert windows_of(bundle, 0) is windows_of(bundle, 0) is bundle.memo.get(
        f"{tb_step_windows.__module__}.{tb_step_windows.__qualname__}", trace, 0, lambda: None)
    assert analyze(trace).memo is not bundle.memo


def test_nothing_outlives_the_bundle(tmp_path: Path) -> None:
    bundle = analyze(_trace(tmp_path))
    ref = weakref.ref(bundle.trace)
    del bundle
    gc.collect()
    assert ref() is None
