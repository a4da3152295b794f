"""``dataloader-bound``'s change follows how the waits lie: a multi-process loader whose waits come in
bursts (an epoch's first batch: its workers started again) is told to keep its workers; waits spread over
every step, to speed the pipeline up (micro traces, µs, hand-computed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.advisor.engine import run_advisor
from stepscope.analysis.bundle import analyze
from tests.builders import TraceBuilder

NEXT = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


def loader_trace(waits_us: list[int]) -> TraceBuilder:
    """One 10 ms CPU step per wait: the DataLoader's __next__ for that long, then an op to the step's end."""
    b = TraceBuilder(device=None)
    for i, w in enumerate(waits_us):
        t = i * 10_000
        b.step(i + 1, t, 10_000)
        b.op(NEXT, ts=t, dur=w, cat="user_annotation")
        b.op("aten::mm", ts=t + w, dur=10_000 - w)
    return b


def change_of(tmp_path: Path, waits_us: list[int]):  # type: ignore[no-untyped-def]
    adv = run_advisor(analyze(loader_trace(waits_us).load(tmp_path)))
    (f,) = [f for f in adv.findings if f.rule == "dataloader-bound"]
    return f.change


def test_waits_at_each_epochs_start_call_for_persistent_workers(tmp_path: Path) -> None:
    c = change_of(tmp_path, [6_000, 100, 100, 100] * 2)  # 2 of 8 steps hold 12 of the 12.6 ms
    assert c.key == "keep-workers"
    assert c.params["steps_waiting"] == 2 and c.params["steps"] == 8
    assert c.params["share_pct"] == pytest.approx(100 * 12_000 / 12_600, abs=0.1)


def test_waits_in_every_step_call_for_a_faster_pipeline(tmp_path: Path) -> None:
    assert change_of(tmp_path, [3_000, 2_500, 3_500, 3_000] * 2).key == "speed-up-input-pipeline"


def test_the_burst_gain_is_the_epoch_starts_waits_above_the_steady_ones(tmp_path: Path) -> None:
    """Waits 6, 0.1, 0.1, 0.1 ms twice: keeping the workers brings the two 6 ms waits down to the others'
    median, 0.1 ms: 2 × 5.9 ms over 8 steps = 1.475 ms a step — not every wait (1.575), and not the halved
    period the loader-workers remedy replays (a faster loader would not stop the restarts)."""
    adv = run_advisor(analyze(loader_trace([6_000, 100, 100, 100] * 2).load(tmp_path)))
    (f,) = [f for f in adv.findings if f.rule == "dataloader-bound"]
    assert f.basis == "burst-waits" and f.est_gain_ms == pytest.approx(1.475, abs=1e-3)
    assert f.evidence["burst_excess_ms"] == pytest.approx(1.475, abs=1e-3)
