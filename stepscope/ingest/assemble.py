"""Split one file's decoded columns by phase into the model's tables (events, tracks, memory ...).

Everything here is vectorised over the file; per-string decisions come from lookup tables built
once per unique string (:class:`~stepscope.ingest.normalize.Lut`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.ingest.normalize import COPY_KIND, KIND, PAGEABLE
from stepscope.ingest.readers.kineto_columns import arg_column, arg_rows
from stepscope.model.derive import time_order
from stepscope.model.diagnostics import DiagnosticsBuilder
from stepscope.model.masks import any_of
from stepscope.model.schema import (
    EVENT_COLUMNS,
    GPU_KINDS,
    HOST_KINDS,
    STRING_ID_COLUMNS,
    TABLE_SCHEMAS,
    EventKind,
    TrackKind,
)
from stepscope.model.strings import StringPool
from stepscope.model.table import Schema
from stepscope.model.uniq import unique
from stepscope.runtime.parallel import concat_columns

MAX_DUR_NS = 24 * 3600 * 10**9
EVENT_ARG_KEYS = ("ts_ns", "dur_ns", "name", "cat", "corr", "ext_id", "grid_x", "grid_y", "grid_z", "block_x",
                  "block_y", "block_z", "regs", "shmem_bytes", "blocks_per_sm", "occupancy_pct", "bytes",
                  "input_dims", "input_types", "concrete_inputs", "call_stack", "seq", "fwd_tid", "flops", "coll_name",
                  "in_nelems", "out_nelems", "coll_dtype", "group_size", "pg_name", "pg_desc", "pg_ranks",
                  "src_rank", "dst_rank")
Cols = dict[str, npt.NDArray[Any]]
TRACK_HELPERS = ("_device", "_stream")  # per-row values that only decide each track's device and stream


@dataclass
class FileTables:
    events: Cols
    tracks: Cols
    memory: Cols
    counters: Cols
    flows: Cols
    thread_names: dict[tuple[int, int], int]


def _ph(cols: Cols) -> npt.NDArray[np.int32]:
    """The phase letter's code of each row (decoded as such, see ``kineto_columns.phase_codes``)."""
    return cols["ph"].astype(np.int32, copy=False)


def split_chunk(cols: Cols, pool: StringPool, diags: DiagnosticsBuilder) -> FileTables:
    """One decoded chunk → compact tables; rows carry ``_key`` (pid, tid) until the file's tracks exist."""
    ph = _ph(cols)
    ok = cols["ts_ok"]
    _count(diags, ~ok & (ph != ord("M")), "event-missing-ts", "error", "an event without a usable ts was dropped")
    mem_name = pool.find("[memory]")
    instant = any_of(ph, [ord("i"), ord("I"), ord("n")])
    is_mem = instant & (cols["name"] == mem_name) & ok
    is_event = ((ph == ord("X")) | (instant & ~is_mem)) & ok
    _count(diags, any_of(ph, [ord("B"), ord("E")]), "phase-b-e-unsupported", "warning",
           "begin/end ('B'/'E') events are not paired yet and were skipped")
    known = is_event | is_mem | any_of(ph, [ord("M"), ord("C"), ord("s"), ord("f"), ord("t"), ord("B"), ord("E")])
    _count(diags, ~known & ok, "phase-unknown", "info", "events of an unknown phase were skipped")
    key = (cols["pid"].astype(np.int64) << 32) | (cols["tid"].astype(np.int64) & 0xFFFFFFFF)
    events = _events(cols, is_event, key, pool, diags)
    flows = any_of(ph, [ord("s"), ord("f"), ord("t")]) & ok
    ft = FileTables(events, {}, _memory(cols, is_mem, key), _counters(cols, ph == ord("C"), ok, pool),
                    _flows(cols, flows, key, ph), _thread_names(cols, ph, pool))
    ft.tracks = track_summary(ft)  # the file's tracks are the union of its chunks' summaries
    for helper in TRACK_HELPERS:  # summed up per thread: the rows need them no more
        events.pop(helper, None)
    return ft


def track_summary(ft: FileTables) -> Cols:
    """A part's distinct (pid, tid) keys (``_key``), whether host events (``_host``) or GPU activity
    (``_gpu``) ran on each, and the largest device and stream (``_device``, ``_stream``) its GPU rows
    name: all that a file's tracks need from the part, a few rows instead of one per event."""
    keys = [t["_key"] for t in (ft.events, ft.memory, ft.flows) if t]
    uniq = unique(np.concatenate(keys)) if keys else np.zeros(0, np.int64)
    n = len(uniq)
    out: Cols = {"_key": uniq, "_host": np.zeros(n, bool), "_gpu": np.zeros(n, bool),
                 "_device": np.full(n, -1, np.int64), "_stream": np.full(n, -1, np.int64)}
    ev = ft.events
    if ev and len(ev["_key"]):
        pos = np.searchsorted(uniq, ev["_key"])
        out["_host"][pos[any_of(ev["kind"], [int(k) for k in HOST_KINDS])]] = True
        gpu = np.flatnonzero(any_of(ev["kind"], [int(k) for k in GPU_KINDS]))
        out["_gpu"][pos[gpu]] = True
        for helper in TRACK_HELPERS:
            if helper in ev:
                np.maximum.at(out[helper], pos[gpu], ev[helper][gpu])
    return out


def _summary(ft: FileTables) -> Cols:
    """The part's :func:`track_summary` (made by :func:`split_chunk` in the worker, or here)."""
    return ft.tracks if "_host" in ft.tracks else track_summary(ft)


def finish_file(parts: list[FileTables]) -> FileTables:
    """Concatenate a file's chunk tables, give every (pid, tid) of the file a track id, and put the
    events in time order per track (gathered that way at once, so the trace never re-sorts them)."""
    names: dict[tuple[int, int], int] = {}
    for p in parts:
        names.update(p.thread_names)
    summaries = [_summary(p) for p in parts]
    uniq = unique(np.concatenate([t["_key"] for t in summaries])) if parts else np.zeros(0, np.int64)
    for p in parts:
        for t in (p.events, p.memory, p.flows):
            if "_key" in t:
                t["track"] = np.searchsorted(uniq, t.pop("_key")).astype(np.int32)
    tracks = _tracks(uniq, summaries)
    events = _cat([p.events for p in parts if p.events], EVENT_COLUMNS, in_time_order=True)
    memory, counters, flows = (_cat([getattr(p, t) for p in parts], TABLE_SCHEMAS[t])
                               for t in ("memory", "counters", "flows"))
    if not any((events, memory, flows)):
        return FileTables(events, {}, memory, counters, flows, names)
    return FileTables(events, tracks, memory, counters, flows, names)


def _cat(tables: list[Cols], schema: Schema, in_time_order: bool = False) -> Cols:
    """Concatenate chunk tables in the schema's types (chunks travel narrowed, see
    :func:`~stepscope.ingest.transfer.narrow_for_transfer`); a column some chunks lack is filled with
    its absent value. Events come out in :func:`derive.time_order`, without the per-chunk track helpers."""
    tables = [t for t in tables if t and len(next(iter(t.values())))]
    if not tables:
        return {}
    keys = [k for k in dict.fromkeys(k for t in tables for k in t) if k not in TRACK_HELPERS]
    dtypes = {k: np.dtype(schema[k][0]) if k in schema else next(t[k] for t in tables if k in t).dtype for k in keys}
    order = None
    ordered: Cols = {}  # the columns that decide the order: concatenated once, then reused
    if in_time_order:
        ordered = {k: np.concatenate([t[k] for t in tables], dtype=dtypes[k]) for k in ("track", "ts_ns", "dur_ns")}
        order = time_order(ordered["track"], ordered["ts_ns"], ordered["dur_ns"])
    if order is None and len(tables) == 1:
        return {k: tables[0][k].astype(dtypes[k], copy=False) for k in keys}

    def fill(k: str, n: int) -> npt.NDArray[Any]:
        return np.full(n, schema[k][1] if k in schema else -1, dtypes[k])

    out = concat_columns(tables, [k for k in keys if k not in ordered], fill, order, dtypes)
    out.update({k: v if order is None else np.take(v, order) for k, v in ordered.items()})
    return {k: out[k] for k in keys}


def _count(diags: DiagnosticsBuilder, mask: npt.NDArray[np.bool_], name: str, sev: str, example: str) -> None:
    n = int(mask.sum())
    if n:
        diags.add(name, sev, example, n)


def _events(cols: Cols, sel: npt.NDArray[np.bool_], key: npt.NDArray[np.int64], pool: StringPool,
            diags: DiagnosticsBuilder) -> Cols:
    every = bool(sel.all())  # a chunk of complete events only: its columns as they are, no copy
    rows = np.flatnonzero(sel)  # rows taken by index: ~3x cheaper than a mask once per column

    def pick(col: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return col if every else np.take(col, rows)

    out: Cols = {k: _narrow(k, pick(cols[k]), diags) for k in EVENT_ARG_KEYS if k in cols}  # absent: filled later
    out["_key"] = pick(key)
    kind = KIND.table(pool.strings)[out["cat"]]
    ph = pick(_ph(cols))
    kind = np.where((ph != ord("X")) & (kind == 0), np.int8(EventKind.INSTANT), kind)
    out["kind"] = kind
    dur = out["dur_ns"]
    missing = (ph == ord("X")) & (dur == -1000)
    _count(diags, missing, "event-missing-dur", "warning", "complete event without dur: taken as 0")
    _count(diags, (dur < 0) & ~missing & (ph == ord("X")), "event-negative-duration", "warning",
           "negative dur clamped to 0")
    dur = np.where((dur < 0) | (ph != ord("X")), 0, dur)
    huge = dur > MAX_DUR_NS
    _count(diags, huge, "event-absurd-duration", "error", "event longer than 24 h dropped")
    out["dur_ns"] = dur
    out["copy_kind"], out["pageable"] = _copy_columns(kind, out["name"], pool)
    n = len(cols["ph"])
    out["_device"], out["_stream"] = (arg_column(cols, k, n) if every else arg_rows(cols, k, rows)
                                      for k in ("device", "stream"))
    if huge.any():
        out = {k: v[~huge] for k, v in out.items()}
    return out


def _copy_columns(kind: npt.NDArray[Any], name: npt.NDArray[np.int32],
                  pool: StringPool) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.int8]]:
    """Each event's copy direction and pageable flag (memcpy only; 0 and -1 elsewhere)."""
    is_copy = kind == EventKind.MEMCPY
    if not is_copy.any():
        return np.zeros(len(kind), np.int8), np.full(len(kind), -1, np.int8)
    return (np.where(is_copy, COPY_KIND.table(pool.strings)[name], 0).astype(np.int8),
            np.where(is_copy, PAGEABLE.table(pool.strings)[name], -1).astype(np.int8))


_INT32_MAX = np.iinfo(np.int32).max
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _narrow(name: str, col: npt.NDArray[Any], diags: DiagnosticsBuilder) -> npt.NDArray[Any]:
    """Cast a column to the schema's dtype; values that do not fit become "unknown" and are counted."""
    dtype, fill = EVENT_COLUMNS[name]
    if col.dtype == dtype:
        return col
    if np.dtype(dtype) == np.int32 and col.dtype.kind in "iu":
        bad = (col > _INT32_MAX) | (col < -_INT32_MAX)
    elif np.dtype(dtype) == np.float32 and col.dtype.kind == "f":
        bad = np.abs(col) > _FLOAT32_MAX
    else:
        return col.astype(dtype, copy=False)
    if bad.any():
        diags.add("arg-out-of-range", "warning",
                  f"{name}: {int(bad.sum())} values beyond the column's range read as unknown", int(bad.sum()))
        col = np.where(bad, fill, col)
    return col.astype(dtype, copy=False)


def _tracks(uniq: npt.NDArray[np.int64], summaries: list[Cols]) -> Cols:
    """One row per (pid, tid): GPU stream where GPU activity ran, CPU thread where host events ran."""
    n = len(uniq)
    kind = np.full(n, int(TrackKind.OTHER), np.int8)
    device = np.full(n, -1, np.int64)
    stream = np.full(n, -1, np.int64)
    if summaries:
        part = {k: np.concatenate([s[k] for s in summaries]) for k in ("_key", "_host", "_gpu", "_device", "_stream")}
        pos = np.searchsorted(uniq, part["_key"])
        kind[pos[part["_host"]]] = int(TrackKind.CPU_THREAD)
        kind[pos[part["_gpu"]]] = int(TrackKind.GPU_STREAM)
        np.maximum.at(device, pos, part["_device"])
        np.maximum.at(stream, pos, part["_stream"])
    return {"kind": kind, "pid": (uniq >> 32).astype(np.int32), "tid": (uniq & 0xFFFFFFFF).astype(np.int32),
            "device": device.astype(np.int32), "stream": stream, "name": np.full(n, -1, np.int32)}


def _memory(cols: Cols, sel: npt.NDArray[np.bool_], key: npt.NDArray[np.int64]) -> Cols:
    rows = np.flatnonzero(sel)

    def a(name: str) -> npt.NDArray[Any]:
        return arg_rows(cols, name, rows)
    return {"ts_ns": np.take(cols["ts_ns"], rows), "_key": np.take(key, rows), "device_type": a("device_type"),
            "device": a("mem_device"), "addr": a("addr"), "bytes": a("mem_bytes"),
            "total_allocated": a("total_allocated"), "total_reserved": a("total_reserved")}


def _counters(cols: Cols, sel: npt.NDArray[np.bool_], ok: npt.NDArray[np.bool_], pool: StringPool) -> Cols:
    if "ctr_ts_ns" in cols:  # series read by the generic pass (args other than "value")
        return {"ts_ns": cols["ctr_ts_ns"], "name": cols["ctr_name"], "value": cols["ctr_value"]}
    rows = np.flatnonzero(sel & ok)
    return {"ts_ns": np.take(cols["ts_ns"], rows), "name": np.take(cols["name"], rows),
            "value": arg_rows(cols, "value", rows)}


def _flows(cols: Cols, sel: npt.NDArray[np.bool_], key: npt.NDArray[np.int64], ph: npt.NDArray[np.int32]) -> Cols:
    rows = np.flatnonzero(sel)
    return {"ts_ns": np.take(cols["ts_ns"], rows), "_key": np.take(key, rows), "cat": np.take(cols["cat"], rows),
            "flow_id": np.take(cols["flow_id"], rows), "phase": np.take(ph, rows).astype(np.int8)}


def _thread_names(cols: Cols, ph: npt.NDArray[np.int32], pool: StringPool) -> dict[tuple[int, int], int]:
    """(pid id, tid id) → name id from ``thread_name`` metadata; (pid id, -1) from ``process_name``."""
    out: dict[tuple[int, int], int] = {}
    meta = np.flatnonzero(ph == ord("M"))
    labels = arg_column(cols, "label", len(ph))
    tn, pn = pool.find("thread_name"), pool.find("process_name")
    for i in meta.tolist():  # metadata events: a handful per thread, not per event
        name, label = int(cols["name"][i]), int(labels[i])
        if label < 0:
            continue
        if name == tn:
            out[(int(cols["pid"][i]), int(cols["tid"][i]))] = label
        elif name == pn:
            out[(int(cols["pid"][i]), -1)] = label
    return out


# The string-id columns of the compact tables that ``split_chunk`` / ``read_nsys`` make (besides ``_key``,
# which packs the pid and tid ids): the model's (schema.STRING_ID_COLUMNS); the engine-equality tests catch
# a column missing there.
FILE_TABLES = ("events", "tracks", "memory", "counters", "flows")


def remap_strings(ft: FileTables, ids: npt.NDArray[np.int32]) -> FileTables:
    """The same tables with every string id ``i`` read as ``ids[i]`` (``ids`` from :meth:`StringPool.id_map`).

    Columns that belong to this chunk alone are rewritten in place: no fresh memory per chunk."""
    out: dict[str, Cols] = {}
    for table in FILE_TABLES:
        names = STRING_ID_COLUMNS[table]
        cols = dict(getattr(ft, table))
        for name in names:
            if name in cols:
                cols[name] = _mapped(ids, cols[name])
        if "_key" in cols:
            key = cols["_key"]
            pid = ids[(key >> 32).astype(np.int32)].astype(np.int64)
            tid = ids[(key & 0xFFFFFFFF).astype(np.int32)].astype(np.int64)
            np.left_shift(pid, 32, out=pid)
            np.bitwise_and(tid, 0xFFFFFFFF, out=tid)
            cols["_key"] = np.bitwise_or(pid, tid, out=key if key.flags.writeable else None)
        out[table] = cols
    thread_names = {(int(ids[p]), int(ids[t])): int(ids[n]) for (p, t), n in ft.thread_names.items()}
    return FileTables(out["events"], out["tracks"], out["memory"], out["counters"], out["flows"], thread_names)


def _mapped(ids: npt.NDArray[np.int32], col: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``ids[col]``, written over ``col`` when it may be (-1 wraps to the trailing -1 of ``ids``)."""
    if col.flags.writeable and col.dtype == ids.dtype:
        np.take(ids, col, out=col, mode="wrap")
        return col
    out: npt.NDArray[Any] = ids[col]
    return out
