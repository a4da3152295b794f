"""``finish_file``: a file's chunk tables become one table per kind, events in (track, ts, longer
first) order, every (pid, tid) one track, GPU tracks with the device and stream their rows name."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.ingest.assemble import FileTables, finish_file, narrow_for_transfer, remap_strings
from stepscope.model.schema import EVENT_COLUMNS, MEMORY_COLUMNS, EventKind, TrackKind


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


def test_tables_travel_narrow_and_come_back_in_the_schema_types() -> None:
    host = _key(1, 2)
    part = _part([host, host], [10, 20], [5, 3_000_000_000], [CPU, CPU], [-1, -1], [-1, -1], [0, 1])
    part.events["corr"] = np.array([-1, 70_000], np.int64)
    part.memory = {"_key": np.array([host], np.int64), "ts_ns": np.array([15], np.int64),
                   "bytes": np.array([-512], np.int64), "addr": np.array([2**40], np.int64)}
    narrow_for_transfer(part)
    assert part.events["corr"].dtype == np.int32 and part.events["dur_ns"].dtype == np.int64  # 3e9 needs 64 bits
    assert part.events["ts_ns"].dtype == np.int64 and part.events["_key"].dtype == np.int64  # never narrowed
    assert part.memory["bytes"].dtype == np.int16 and part.memory["addr"].dtype == np.int64
    other = _part([host], [30], [1], [CPU], [-1], [-1], [2])  # a chunk that lacks "corr": filled
    ft = finish_file([part, other])
    assert ft.events["corr"].dtype == EVENT_COLUMNS["corr"][0]
    assert ft.events["corr"].tolist() == [-1, 70_000, -1]
    assert ft.events["dur_ns"].tolist() == [5, 3_000_000_000, 1]
    assert ft.memory["bytes"].dtype == MEMORY_COLUMNS["bytes"][0] and ft.memory["bytes"].tolist() == [-512]


def test_string_ids_are_remapped_in_place_with_absent_kept() -> None:
    ft = _part([_key(0, 1)], [1], [1], [CPU], [-1], [-1], [2])
    ft.events["call_stack"] = np.array([-1], np.int32)
    name = ft.events["name"]
    ids = np.array([7, 8, 9, 5, 6, -1], np.int32)  # local id i → ids[i]; the trailing -1 keeps -1
    out = remap_strings(ft, ids)
    assert out.events["name"].tolist() == [9] and out.events["name"] is name  # rewritten in place
    assert out.events["call_stack"].tolist() == [-1]
    assert out.events["_key"].tolist() == [_key(7, 8)]
    frozen = np.array([1], np.int32)
    frozen.flags.writeable = False  # e.g. arrays in Ray's object store
    ft2 = _part([_key(0, 1)], [1], [1], [CPU], [-1], [-1], [0])
    ft2.events["name"] = frozen
    assert remap_strings(ft2, ids).events["name"].tolist() == [8] and frozen.tolist() == [1]
