"""The standalone report's timeline snapshot and the memory series on tiny hand-made traces (numbers
checkable by eye)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import TraceBuilder

from stepscope.report.series import downsample_minmax, memory_from_trace
from stepscope.server import standalone
from stepscope.server.results import rank_info
from stepscope.server.standalone import OVERVIEW_ITEMS, STEP_ITEMS, timeline_snapshot


def _trace(tmp_path: Path) -> TraceBuilder:
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", ts=1, dur=40)
    b.op("aten::mm", ts=45, dur=20)
    b.launch_kernel("void gemm<float, 128>", launch_ts=46, launch_dur=3, ts=50, dur=30)
    b.op("aten::item", ts=70, dur=25)
    b.add(ph="X", cat="cuda_runtime", name="cudaStreamSynchronize", pid=b.pid, tid=b.tid, ts=72, dur=20,
          args={})
    for i in range(200):  # 200 back-to-back 0.01 µs kernels: far below one pixel, merged
        b.gpu("tiny", ts=81 + i * 0.05, dur=0.01)
    b.step(2, ts=100, dur=300)
    b.step(3, ts=400, dur=50)
    return b


def _snapshot(tmp_path: Path, step: int | None = None) -> dict[str, Any]:
    trace = _trace(tmp_path).load(tmp_path)
    return timeline_snapshot(trace, rank_info(trace, 0), step)


def test_the_median_step_is_chosen() -> None:
    info = {"steps": [{"step": 7, "start_ns": 0, "end_ns": 100}, {"step": 8, "start_ns": 100, "end_ns": 400},
                      {"step": 9, "start_ns": 400, "end_ns": 450}]}
    assert standalone._median_step(info, None)["step"] == 7  # lengths 100, 300, 50: the median is 100
    assert standalone._median_step(info, 9)["step"] == 9
    assert standalone._median_step(info, 3) is None and standalone._median_step({"steps": []}, None) is None


def _texts(column: dict[str, list[Any]]) -> list[str | None]:
    """An interned text column back as a list (what static/data.js does)."""
    return [None if k < 0 else column["strings"][k] for k in column["index"]]


def test_a_small_rank_is_carried_whole(tmp_path: Path) -> None:
    """205 events, fewer than OVERVIEW_ITEMS: one window, every event listed, no step window needed."""
    snap = _snapshot(tmp_path)
    assert snap["step"] == 1 and len(snap["windows"]) == 1
    whole = snap["windows"][0]
    assert (whole["start_ns"], whole["end_ns"], whole["mode"]) == (0, 450_000, "events")
    assert len(_texts(whole["events"]["name"])) == whole["event_count"] <= OVERVIEW_ITEMS


def test_snapshot_of_a_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the whole rank aggregated: the breakdown's step windows of this trace are step 1 only (steps
    2 and 3 hold no work); its window is exactly [0, 100 µs), listed event by event."""
    monkeypatch.setattr(standalone, "OVERVIEW_ITEMS", 10)
    snap = _snapshot(tmp_path)
    assert snap["step"] == 1
    whole, step = snap["windows"]
    assert (whole["start_ns"], whole["end_ns"], whole["mode"]) == (0, 450_000, "aggregate")
    assert (step["start_ns"], step["end_ns"]) == (0, 100_000) and step["mode"] == "events"
    names = _texts(step["events"]["name"])
    assert len(names) == step["event_count"] <= STEP_ITEMS
    assert "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__" in names and "cudaStreamSynchronize" in names
    assert names.count("tiny") == 200  # every one of the 200 short kernels, none merged
    gpu = {t["id"] for t in step["tracks"] if t["kind"] == "gpu_stream"}
    gemm = names.index("void gemm<float, 128>")
    assert step["events"]["track"][gemm] in gpu and step["events"]["dur_ns"][gemm] == 30_000
    assert _texts(step["events"]["kind"])[gemm] == "kernel"


def test_snapshot_of_a_chosen_step_and_a_crowded_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(standalone, "OVERVIEW_ITEMS", 10)
    assert len(_snapshot(tmp_path, step=2)["windows"]) == 1  # no such step window: the whole rank only
    monkeypatch.setattr(standalone, "STEP_ITEMS", 50)  # step 1 has > 200 events: aggregated, plus an exact head
    snap = _snapshot(tmp_path)
    assert [w["mode"] for w in snap["windows"]] == ["aggregate", "aggregate", "events"]
    head = snap["windows"][2]
    assert head["start_ns"] == 0 and head["end_ns"] < 100_000 and head["event_count"] <= 50
    agg = snap["windows"][0]["aggregate"]
    assert all(len(_texts(g["name"])) == len(g["busy_frac"]) for g in agg)  # nulls kept as -1


def test_memory_from_trace(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    for i in range(10):
        b.memory(ts=i * 10, nbytes=1 << 20, total_allocated=(i + 1) << 20, total_reserved=16 << 20, addr=i)
    curves = memory_from_trace(b.load(tmp_path), 0)
    assert len(curves) == 1 and curves[0].device == "GPU0"
    assert curves[0].peak_allocated_mb == 10.0 and curves[0].reserved_mb == (16.0,) * 10
    assert curves[0].ts_ms[-1] == 0.09


def test_downsample_keeps_peaks() -> None:
    x = np.arange(100_000, dtype=np.float64)
    y = np.sin(x / 1000.0)
    y[54_321] = 5.0
    keep = downsample_minmax(x, y, 2000)
    assert len(keep) <= 2000 and 54_321 in keep and np.all(np.diff(keep) > 0)


def test_memory_curves_of_a_rank_share_one_time_axis(tmp_path: Path) -> None:
    """The CPU's first memory event 50 µs before the GPU's: each curve was timed from its own first
    event, so the two charts' peaks did not line up (nw0: 0.0–962.9 ms against 0.1–1049.2 ms)."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=200)
    for i in range(5):
        b.memory(ts=10 + i * 10, nbytes=1 << 20, total_allocated=(i + 1) << 20, total_reserved=-1, addr=i,
                 device_type=0)
        b.memory(ts=60 + i * 10, nbytes=1 << 20, total_allocated=(i + 1) << 20, total_reserved=8 << 20, addr=100 + i)
    gpu, cpu = memory_from_trace(b.load(tmp_path), 0)
    assert (gpu.device, cpu.device) == ("GPU0", "CPU")
    assert cpu.ts_ms[0] == 0.0 and gpu.ts_ms[0] == 0.05 and gpu.ts_ms[-1] == 0.09
