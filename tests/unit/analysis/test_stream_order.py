"""Per-stream tables list streams by device and stream number, not by the order their first event
came in the file (track ids are numbered by appearance)."""

from __future__ import annotations

from pathlib import Path

from stepscope.analysis.idle import compute_idle
from stepscope.analysis.launch import compute_launch
from tests.builders import TraceBuilder


def test_streams_in_number_order_whatever_came_first(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.step(1, ts=0, dur=200)
    b.launch_kernel("late_stream_first", launch_ts=10, launch_dur=2, ts=20, dur=10, stream=22)
    b.launch_kernel("on_7", launch_ts=40, launch_dur=2, ts=50, dur=10, stream=7)
    b.launch_kernel("on_13", launch_ts=70, launch_dur=2, ts=80, dur=10, stream=13)
    b.launch_kernel("again_22", launch_ts=100, launch_dur=2, ts=110, dur=10, stream=22)
    trace = b.load(tmp_path)
    assert compute_idle(trace, 0).stream.tolist() == [7, 13, 22]
    assert compute_launch(trace, 0).queue.stream.tolist() == [7, 13, 22]
