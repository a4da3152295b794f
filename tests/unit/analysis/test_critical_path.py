"""Simplified critical path: each instant of a step charged to exactly one category."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.analysis.critical_path import CATEGORIES, compute_critical_path
from tests.builders import TraceBuilder

US = 1000


def test_every_instant_is_charged_once(tmp_path: Path) -> None:
    """Step [0,100]. DataLoader [0,20]; launch [20,25] → sgemm [30,60]; aten::foo [25,70] holds a launch
    [65,70] → NCCL all-reduce [80,90] (nothing else runs then).

    GPU: compute 30, communication 10. Device idle [0,30] [60,80] [90,100]: data loading [0,20] = 20;
    launch calls [20,25] + [65,70] = 10; other host work (aten::foo) [25,30] + [60,65] = 10;
    nothing traced [70,80] + [90,100] = 20.
    """
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", ts=0, dur=20)
    b.launch_kernel("sgemm", launch_ts=20, launch_dur=5, ts=30, dur=30)
    b.op("aten::foo", ts=25, dur=45)
    b.launch_kernel("ncclKernel_AllReduce_RING_LL_Sum_float", launch_ts=65, launch_dur=5, ts=80, dur=10,
                    stream=20)
    r = compute_critical_path(b.load(tmp_path), 0)
    parts = dict(zip(CATEGORIES, (r.parts_ns[0] // US).tolist()))
    assert parts == {"gpu_compute": 30, "communication": 10, "data_loading": 20, "launch_overhead": 10,
                     "cpu": 10, "other": 20}
    assert r.parts_ns.sum() == r.step_ns.sum() == 100 * US
    assert r.share_pct()["gpu_compute"] == pytest.approx(30.0)
    assert r.bound_by == "gpu_compute"
    assert r.idle_start_ns.tolist() == [0, 20 * US, 25 * US, 60 * US, 65 * US, 70 * US, 90 * US]
    assert [CATEGORIES[c] for c in r.idle_category] == [
        "data_loading", "launch_overhead", "cpu", "cpu", "launch_overhead", "other", "other"]


def test_communication_overlapped_by_compute_is_not_on_the_path(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.step(1, ts=0, dur=50)
    b.launch_kernel("sgemm", launch_ts=0, launch_dur=1, ts=1, dur=49)
    b.launch_kernel("ncclKernel_AllReduce_RING_LL_Sum_float", launch_ts=0.5, launch_dur=0.5, ts=10, dur=20,
                    stream=20)
    r = compute_critical_path(b.load(tmp_path), 0)
    parts = dict(zip(CATEGORIES, (r.parts_ns[0] // US).tolist()))
    assert (parts["gpu_compute"], parts["communication"], parts["launch_overhead"]) == (49, 0, 1)
