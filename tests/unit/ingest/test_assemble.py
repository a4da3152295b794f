"""``finish_file``: a file's chunk tables become one table per kind, events in (track, ts, longer
first) order, every (pid, tid) one track, GPU tracks with the device and stream their rows name."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.ingest.assemble import (
    FileTables,
    finish_file,
    remap_strings,
    split_chunk,
    track_summary,
)
from stepscope.ingest.readers.kineto_columns import events_to_columns
from stepscope.ingest.readers.kineto_decode import FAST_DECODER
from stepscope.ingest.transfer import narrow_for_transfer
from stepscope.model.diagnostics import DiagnosticsBuilder
from stepscope.model.schema import EVENT_COLUMNS, MEMORY_COLUMNS, EventKind, MemcpyKind, TrackKind
from stepscope.model.strings import StringPool


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


def _split(events: list[dict[str, Any]]) -> tuple[FileTables, StringPool]:
    cols = events_to_columns(FAST_DECODER.decode(json.dumps(events).encode()), [])
    pool = StringPool(cols.strings)
    return split_chunk(cols.cols, pool, DiagnosticsBuilder()), pool


def test_a_chunk_of_complete_events_keeps_every_row_with_no_copy_columns() -> None:
    evs = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 2, "ts": 10 * i, "dur": 5}
           for i in range(4)]
    ft, pool = _split(evs)
    assert [pool[i] for i in ft.events["name"].tolist()] == ["op0", "op1", "op2", "op3"]
    assert ft.events["ts_ns"].tolist() == [0, 10_000, 20_000, 30_000]
    assert ft.events["copy_kind"].tolist() == [0] * 4 and ft.events["pageable"].tolist() == [-1] * 4


def test_a_mixed_chunk_keeps_only_events_and_classifies_its_copies() -> None:
    evs = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}},
           {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7,
            "ts": 5, "dur": 2, "args": {"device": 0, "stream": 7}},
           {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 9, "dur": 1,
            "args": {"device": 0, "stream": 7}}]
    ft, pool = _split(evs)
    assert [pool[i] for i in ft.events["name"].tolist()] == ["Memcpy HtoD (Pageable -> Device)", "k"]
    assert ft.events["copy_kind"].tolist() == [int(MemcpyKind.H2D), 0]
    assert ft.events["pageable"].tolist() == [1, -1]
    assert "_stream" not in ft.events  # summed up per thread in the chunk's track summary
    gpu_key = ft.events["_key"][0]
    assert ft.tracks["_key"].tolist() == [gpu_key]  # the metadata event names no track of its own
    assert ft.tracks["_gpu"].tolist() == [True] and ft.tracks["_host"].tolist() == [False]
    assert ft.tracks["_device"].tolist() == [0] and ft.tracks["_stream"].tolist() == [7]


def test_chunk_summaries_and_row_helpers_give_the_same_tracks() -> None:
    host, gpu = _key(1, 1), _key(0, 7)
    rows = _part([host, gpu, gpu, host], [0, 1, 2, 3], [9, 1, 1, 1], [CPU, GPU, GPU, CPU], [-1, 0, 2, -1],
                 [-1, 7, 7, -1], [0, 1, 1, 0])
    summed = _part([host, gpu, gpu, host], [0, 1, 2, 3], [9, 1, 1, 1], [CPU, GPU, GPU, CPU], [-1, 0, 2, -1],
                   [-1, 7, 7, -1], [0, 1, 1, 0])
    summed.tracks = track_summary(summed)
    for h in ("_device", "_stream"):
        summed.events.pop(h)
    a, b = finish_file([rows]).tracks, finish_file([summed]).tracks
    assert {k: v.tolist() for k, v in a.items()} == {k: v.tolist() for k, v in b.items()}
    assert a["kind"].tolist() == [int(TrackKind.GPU_STREAM), int(TrackKind.CPU_THREAD)]
    assert a["device"].tolist() == [2, -1] and a["stream"].tolist() == [7, -1]
