"""``finish_file``: a file's chunk tables become one table per kind, events in (track, ts, longer
first) order, every (pid, tid) one track, GPU tracks with the device and stream their rows name."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.ingest.assemble import FileTables, finish_file
from stepscope.model.schema import EventKind, TrackKind


def _key(pid: int, tid: int) -> int:
    return (pid << 32) | tid


def _part(keys: list[int], ts: list[int], dur: list[int], kind: list[int], device: list[int],
          stream: list[int], name: list[int]) -> FileTables:
    ev: dict[str, npt.NDArray[Any]] = {
        "_key": np.array(keys, np.int64), "ts_ns": np.array(ts, np.int64), "dur_ns": np.array(dur, np.int64),
        "kind": np.array(kind, np.int8), "_device": np.array(device, np.int64), "_stream": np.array(stream, np.int64),
        "name": np.array(name, np.int32)}
    return FileTables(ev, {"_key": np.unique(ev["_key"])}, {}, {}, {}, {})


CPU, GPU = int(EventKind.CPU_OP), int(EventKind.KERNEL)


def test_events_come_out_in_track_time_order_across_chunks() -> None:
    host, stream7 = _key(1, 2), _key(1, 7)
    first = _part([stream7, host, host], [50, 30, 10], [5, 1, 40], [GPU, CPU, CPU],
                  [0, -1, -1], [7, -1, -1], [0, 1, 2])
    second = _part([host, stream7, host], [10, 20, 35], [90, 5, 2], [CPU, GPU, CPU],
                   [-1, 0, -1], [-1, 7, -1], [3, 4, 5])
    ft = finish_file([first, second])
    # tracks: (1, 2) → 0, (1, 7) → 1; the two events at ts 10 on track 0: the longer (dur 90) first
    got = list(zip(ft.events["track"].tolist(), ft.events["ts_ns"].tolist(), ft.events["dur_ns"].tolist(),
                   ft.events["name"].tolist()))
    assert got == [(0, 10, 90, 3), (0, 10, 40, 2), (0, 30, 1, 1), (0, 35, 2, 5), (1, 20, 5, 4), (1, 50, 5, 0)]
    assert ft.events["kind"].tolist() == [CPU, CPU, CPU, CPU, GPU, GPU]


def test_track_helpers_decide_tracks_and_are_dropped() -> None:
    host, stream7 = _key(1, 2), _key(1, 7)
    ft = finish_file([_part([stream7, host], [5, 1], [1, 1], [GPU, CPU], [3, -1], [7, -1], [0, 1])])
    assert "_device" not in ft.events and "_stream" not in ft.events and "_key" not in ft.events
    assert ft.tracks["kind"].tolist() == [int(TrackKind.CPU_THREAD), int(TrackKind.GPU_STREAM)]
    assert ft.tracks["device"].tolist() == [-1, 3] and ft.tracks["stream"].tolist() == [-1, 7]
    assert ft.tracks["pid"].tolist() == [1, 1] and ft.tracks["tid"].tolist() == [2, 7]
