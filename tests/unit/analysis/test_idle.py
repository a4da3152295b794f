"""Idle time: every GPU gap classified host-wait / kernel-wait / other, per step and per stream."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.idle import IdleKind, compute_idle
from tests.builders import TraceBuilder

US = 1000


def one_step(tmp_path: Path) -> TraceBuilder:
    """Step [0, 100] µs. DataLoader [0, 30]. Kernels [40,60] [65,75] [95,100], all launched early (31, 33, 36).

    Gaps: [0,40] next launch 31 > 0 → host-wait 40 (30 of it inside the DataLoader);
    [60,65] launch 33 < 60, 5 µs < 10 µs → kernel-wait 5; [75,95] launch 36 < 75, 20 µs → other 20.
    """
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", ts=0, dur=30)
    b.launch_kernel("k1", launch_ts=31, launch_dur=2, ts=40, dur=20)
    b.launch_kernel("k2", launch_ts=33, launch_dur=2, ts=65, dur=10)
    b.launch_kernel("k3", launch_ts=36, launch_dur=2, ts=95, dur=5)
    return b


def test_gaps_are_classified_by_the_work_that_ends_them(tmp_path: Path) -> None:
    r = compute_idle(one_step(tmp_path).load(tmp_path), 0)
    assert r.step.tolist() == [1]
    assert r.step_ns.tolist() == [100 * US]
    assert r.host_wait_ns.tolist() == [40 * US]
    assert r.kernel_wait_ns.tolist() == [5 * US]
    assert r.other_ns.tolist() == [20 * US]
    assert r.host_wait_in_dataloader_ns.tolist() == [30 * US]
    assert r.gap_start_ns.tolist() == [0, 60 * US, 75 * US]
    assert r.gap_kind.tolist() == [IdleKind.HOST_WAIT, IdleKind.KERNEL_WAIT, IdleKind.OTHER]


def test_per_stream_gaps_are_between_its_own_activities(tmp_path: Path) -> None:
    r = compute_idle(one_step(tmp_path).load(tmp_path), 0)
    assert r.stream.tolist() == [7]
    assert r.stream_gap_count.tolist() == [2]  # the leading gap is not between two activities
    assert (r.stream_host_wait_ns[0], r.stream_kernel_wait_ns[0], r.stream_other_ns[0]) == (0, 5 * US, 20 * US)


def test_the_threshold_moves_gaps_between_kernel_wait_and_other(tmp_path: Path) -> None:
    r = compute_idle(one_step(tmp_path).load(tmp_path), 0, kernel_wait_max_ns=30 * US)
    assert r.kernel_wait_ns.tolist() == [25 * US]
    assert r.other_ns.tolist() == [0]


def test_a_second_stream_fills_the_device_level_gap(tmp_path: Path) -> None:
    """Stream 8 runs [80, 90] (launched at 37): device gaps become [75,80] and [90,95], 5 µs each, queued."""
    b = one_step(tmp_path)
    b.launch_kernel("k4", launch_ts=37, launch_dur=1, ts=80, dur=10, stream=8)
    r = compute_idle(b.load(tmp_path), 0)
    assert r.kernel_wait_ns.tolist() == [15 * US]
    assert r.other_ns.tolist() == [0]
    assert sorted(r.stream.tolist()) == [7, 8]


def test_gaps_are_cut_at_step_boundaries(tmp_path: Path) -> None:
    """Steps [0,50] and [50,100]; kernels [5,20] (launched at 1) and [75,90] (launched at 70).

    Step 1: [0,5] host-wait + [20,50] host-wait (next launch 70 > 20) = 35.
    Step 2: [50,75] host-wait 25; [90,100] nothing follows → other 10.
    """
    b = TraceBuilder()
    b.step(1, ts=0, dur=50)
    b.step(2, ts=50, dur=50)
    b.launch_kernel("a", launch_ts=1, launch_dur=1, ts=5, dur=15)
    b.launch_kernel("b", launch_ts=70, launch_dur=1, ts=75, dur=15)
    r = compute_idle(b.load(tmp_path), 0)
    assert r.step.tolist() == [1, 2]
    assert r.host_wait_ns.tolist() == [35 * US, 25 * US]
    assert r.other_ns.tolist() == [0, 10 * US]
    assert r.kernel_wait_ns.tolist() == [0, 0]
    assert np.array_equal(r.idle_ns, [35 * US, 35 * US])


def test_cpu_only_rank_is_not_applicable(tmp_path: Path) -> None:
    b = TraceBuilder(device=None)
    b.step(1, ts=0, dur=10)
    b.op("aten::add", ts=1, dur=2)
    with pytest.raises(NotApplicable):
        compute_idle(b.load(tmp_path), 0)
