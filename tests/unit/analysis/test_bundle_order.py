"""A rank's analyses start longest first (``RankAnalysis.cost``) and their results keep the
registry's order, on threads or not."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from stepscope.analysis import bundle as bundle_mod
from stepscope.analysis.registry import RankAnalysis
from stepscope.model.trace import Trace
from stepscope.runtime import tasks
from tests.builders import TraceBuilder


def _trace(tmp_path: Path) -> Trace:
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.launch_kernel("k", launch_ts=2, launch_dur=1, ts=10, dur=10)
    return b.load(tmp_path)


def test_longest_started_first_results_in_registry_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []
    lock = threading.Lock()

    def analysis(name: str, cost: int) -> RankAnalysis[str]:
        def compute(trace: Trace, rank: int) -> str:
            with lock:
                started.append(name)
            return name
        return RankAnalysis(name, compute, str, (name,), cost=cost)

    registry = [analysis("summary", 0), analysis("short", 0), analysis("longer", 1), analysis("longest", 3)]
    monkeypatch.setattr(bundle_mod, "RANK_ANALYSES", registry)
    monkeypatch.setattr(bundle_mod, "PARALLEL_ABOVE_EVENTS", 0)
    monkeypatch.setattr(tasks, "usable_cores", lambda: 1)  # one thread: the start order is exact
    rr = bundle_mod.rank_results(_trace(tmp_path), 0)
    assert started == ["longest", "longer", "summary", "short"]
    assert list(rr.results) == ["summary", "short", "longer", "longest"]


@pytest.mark.parametrize("spare", [True, False])
def test_side_by_side_only_with_memory_to_spare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spare: bool) -> None:
    threads: set[str] = set()

    def compute(trace: Trace, rank: int) -> str:
        threads.add(threading.current_thread().name)
        return "x"

    registry = [RankAnalysis(name, compute, str, (name,)) for name in ("summary", "a", "b", "c")]
    monkeypatch.setattr(bundle_mod, "RANK_ANALYSES", registry)
    monkeypatch.setattr(bundle_mod, "PARALLEL_ABOVE_EVENTS", 0)
    monkeypatch.setattr(bundle_mod, "memory_to_spare", lambda _bytes: spare)
    monkeypatch.setattr(tasks, "usable_cores", lambda: 2)
    bundle_mod.rank_results(_trace(tmp_path), 0)
    on_threads = all(t.startswith("stepscope-analysis") for t in threads)
    assert on_threads == spare and (spare or threads == {threading.current_thread().name})


def test_a_map_worker_runs_its_analyses_one_by_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``side_by_side=False`` (a map-reduce worker, given one core): no thread, memory or not."""
    threads: set[str] = set()

    def compute(trace: Trace, rank: int) -> str:
        threads.add(threading.current_thread().name)
        return "x"

    monkeypatch.setattr(bundle_mod, "RANK_ANALYSES", [RankAnalysis(n, compute, str, (n,)) for n in ("summary", "a")])
    monkeypatch.setattr(bundle_mod, "PARALLEL_ABOVE_EVENTS", 0)
    monkeypatch.setattr(bundle_mod, "memory_to_spare", lambda _bytes: True)
    monkeypatch.setattr(tasks, "usable_cores", lambda: 2)
    bundle_mod.rank_results(_trace(tmp_path), 0, side_by_side=False)
    assert threads == {threading.current_thread().name}
