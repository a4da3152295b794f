"""The timeline snapshot and memory series on tiny hand-made traces (numbers checkable by eye)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from builders import TraceBuilder

from stepscope.report.html import compute_timeline, memory_from_trace, render_html
from stepscope.report.html.series import downsample_minmax
from stepscope.report.html.timeline_data import KINDS


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


def test_timeline_of_one_step(tmp_path: Path) -> None:
    trace = _trace(tmp_path).load(tmp_path)
    tl = compute_timeline(trace, step=1)
    assert tl.step == 1 and tl.end_ns - tl.start_ns >= 100_000
    rows = list(tl.rows())
    by_kind = {k: [r for r in rows if r[3] == k] for k in KINDS}
    assert [r[4] for r in by_kind["dataloader"]] == ["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"]
    assert by_kind["dataloader"][0][2] == 40_000
    assert [r[4] for r in by_kind["sync"]] == ["cudaStreamSynchronize"]
    gemm = [r for r in by_kind["kernel"] if r[4] == "void gemm<float, 128>"]
    assert gemm and gemm[0][0].startswith("GPU 0")
    merged = [r for r in by_kind["kernel"] if "short kernel events" in r[4]]
    assert merged and sum(int(tl.count[i]) for i in range(len(tl)) if "short" in tl.names[i]) == 200
    assert tl.lanes[-1].startswith("GPU") and not tl.lane_is_gpu[0]


def test_timeline_cap_keeps_highlights(tmp_path: Path) -> None:
    trace = _trace(tmp_path).load(tmp_path)
    tl = compute_timeline(trace, step=1, max_events=3, pixels=10**9)  # no merging, hard cap
    kinds = [KINDS[k] for k in tl.kind.tolist()]
    assert len(tl) == 3 and "dataloader" in kinds and "sync" in kinds
    assert compute_timeline(trace).step == 1  # durations 100, 300, 50 µs: the median step is #1


def test_timeline_drawn_and_escaped(tmp_path: Path) -> None:
    trace = _trace(tmp_path).load(tmp_path)
    tl = compute_timeline(trace, step=1)
    page = render_html({"ranks": [{"rank": 0}]}, title="t", timeline=tl)
    assert 'id="timeline-chart-r0"' in page and "void gemm&lt;float, 128&gt;" in page
    assert "void gemm<float" not in page
    assert page.count('class="band band-dataloader"') == 1


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
