"""Launch overhead: CPU launch time, launch delay, kernel time, short kernels, queue length."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.analysis.launch import compute_launch
from tests.builders import TraceBuilder

US = 1000


def test_per_launch_numbers_and_queue_length(tmp_path: Path) -> None:
    """Launch [0,5] → kernel [10,13] (short: 3 < 5); launch [6,8] → kernel [13,23].

    Queue: 1 from 0, 2 from 6, 1 from 13, 0 from 23; max 2; mean over the step [0,30]
    = (6·1 + 7·2 + 10·1 + 7·0) / 30 = 1.
    """
    b = TraceBuilder()
    b.step(1, ts=0, dur=30)
    b.launch_kernel("a", launch_ts=0, launch_dur=5, ts=10, dur=3)
    b.launch_kernel("b", launch_ts=6, launch_dur=2, ts=13, dur=10)
    r = compute_launch(b.load(tmp_path), 0)
    assert r.cpu_launch_ns.tolist() == [5 * US, 2 * US]
    assert r.launch_delay_ns.tolist() == [5 * US, 5 * US]
    assert r.kernel_ns.tolist() == [3 * US, 10 * US]
    assert r.step.tolist() == [1, 1]
    assert (r.short_kernel_count, r.short_kernel_pct) == (1, 50.0)
    q = r.queue
    assert q.stream.tolist() == [7]
    ts, length = q.series(0)
    assert ts.tolist() == [0, 6 * US, 13 * US, 23 * US]
    assert length.tolist() == [1, 2, 1, 0]
    assert q.max_length.tolist() == [2]
    assert q.mean_length[0] == pytest.approx(1.0)


def test_step_of_negative_duration_gives_no_crash(tmp_path: Path) -> None:
    """The only step has dur -100 (clamped to 0, counted): its window is empty, so the queue length is
    averaged over the queue's own span [10, 35]: (2·1 + 13·2 + 10·1) / 25 = 1.52 (issue 21: IndexError)."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=-100)
    b.launch_kernel("a", launch_ts=10, launch_dur=2, ts=20, dur=5)
    b.launch_kernel("b", launch_ts=12, launch_dur=2, ts=30, dur=5)
    trace = b.load(tmp_path)
    assert "event-negative-duration" in {d.name for d in trace.diagnostics}
    r = compute_launch(trace, 0)
    assert r.queue.max_length.tolist() == [2]
    assert r.queue.mean_length[0] == pytest.approx(1.52)
