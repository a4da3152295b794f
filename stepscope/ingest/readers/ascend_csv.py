"""Read an Ascend PyTorch profiler text export that has no ``trace_view.json``: its summaries only.

Many real exports ship only ``ASCEND_PROFILER_OUTPUT/kernel_details.csv`` and the other summaries
(``op_statistic.csv``, ``step_trace_time.csv``, ``communication(_matrix).json``, memory CSVs ...).
``kernel_details.csv`` is the device timeline: one row per compute task (start, duration, stream,
task id, op name and type, accelerator core) and one per collective (``Accelerator Core`` HCCL,
``hcom_*``). The rows become the same events the ``trace_view.json`` path makes of the same tasks
(:mod:`.ascend`): compute tasks are kernels on "Ascend Hardware" "Stream N" tracks, collectives are
kernels on an "HCCL" "Group <group> Communication" track (the group from ``communication.json``), so
that :func:`.ascend.normalize` treats both alike. Each row's ``Step Id`` gives the steps: a step is
the span of its device work (the profiler's "Stage"), as there is no ProfilerStep#N host range to
find it by. The rest is in :mod:`.ascend_summaries` (the matrix, the profiler's step summary, memory).

What is *not* there: the host timeline (ops, Python frames, runtime calls, DataLoader), copies and
stream control tasks. The batch says so in a ``summary-only`` diagnostic and in the rank's metadata
(``summary_only``), so that host-side analyses and rules report why they did not run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.ingest.assemble import FileTables
from stepscope.ingest.readers import ascend_summaries as side
from stepscope.ingest.readers.ascend_files import Cells, Text, read_csv
from stepscope.ingest.readers.batch import FileBatch, Repair
from stepscope.ingest.readers.sqlite_tables import event_columns, track_key
from stepscope.model.diagnostics import DiagnosticsBuilder
from stepscope.model.schema import EventKind
from stepscope.model.strings import StringPool

Cols = dict[str, npt.NDArray[Any]]
KERNEL_FILE = "kernel_details.csv"
REQUIRED = ("Name", "Start Time(us)", "Duration(us)")
HARDWARE, HCCL = "Ascend Hardware", "HCCL"
NO_HOST = "summary-only trace (Ascend CSV/JSON summaries, no trace_view.json): no host timeline"
SUMMARY_ONLY = ("summaries only (kernel_details.csv ..., no trace_view.json): no host timeline. Device tasks, "
                "collectives, steps (each step's device span) and memory are read; host ops, runtime calls, "
                "copies and stream control are not, so host-side analyses and rules do not run")


def sniff(path: str) -> bool:
    return Path(path).name == KERNEL_FILE


def read(path: str, pool: StringPool, diags: DiagnosticsBuilder) -> FileBatch:
    return read_summaries(path, pool)


def inputs(path: str) -> list[str]:
    """Every file a read of ``path`` depends on (the cache key hashes them all)."""
    return [path, *map(str, side.side_files(Path(path).parent))]


def read_summaries(path: str, pool: StringPool) -> FileBatch:
    """``kernel_details.csv`` and the summaries beside it → a FileBatch with one, already split part."""
    p = Path(path)
    out_dir = p.parent
    cells = Cells(p)
    cols = read_csv(p, REQUIRED)
    repairs: list[Repair] = [("summary-only", "warning", SUMMARY_ONLY, 1)]
    groups, comm = side.optional(lambda: side.comm_ops(out_dir), repairs) or ({}, {})
    kernels, step, dropped = _kernels(cols, cells, groups, pool)
    if not (kernels["cat"] == pool.intern(HCCL)).any() and len(comm.get("name", ())):
        extra, extra_step = _collectives(comm, groups, pool)
        kernels = {k: np.concatenate([kernels[k], extra[k]]) for k in kernels}
        step = np.concatenate([step, extra_step])
    mem_cells, rec_cells = Cells(out_dir / side.OP_MEMORY_FILE), Cells(out_dir / side.MEMORY_RECORD_FILE)
    memory = side.optional(lambda: side.op_memory(out_dir, mem_cells), repairs) or {}
    if memory:
        n = len(memory["ts_ns"])
        memory["_key"] = track_key(pool, np.full(n, "NPU MEM"), np.full(n, "Memory"))
    counters = side.optional(lambda: side.memory_counters(out_dir, rec_cells), repairs) or {}
    if counters:
        counters["name"] = _ids(pool, counters["name"])
    meta = {"format": "ascend-csv", "summary_only": NO_HOST, **side.side_meta(out_dir, repairs)}
    batch = FileBatch(path, p.stat().st_size, meta=meta)
    names = _thread_names([kernels["_key"], memory.get("_key", np.zeros(0, np.int64))])
    batch.parts = [FileTables(kernels, {}, memory, counters, {}, names)]
    batch.n_events = len(kernels["ts_ns"])
    batch.device_steps = device_steps(step, kernels["ts_ns"], kernels["ts_ns"] + kernels["dur_ns"])
    batch.repairs = [*repairs, *cells.repairs, *mem_cells.repairs, *rec_cells.repairs,
                     *_dropped(p, dropped, len(cols["Name"]))]
    return batch


def _ids(pool: StringPool, text: npt.NDArray[Any]) -> npt.NDArray[np.int32]:
    """String ids of a text column (each distinct value interned once)."""
    uniq, inv = np.unique(text, return_inverse=True)
    return pool.intern_many(uniq.tolist())[inv].astype(np.int32)


def _kernels(cols: dict[str, Text], cells: Cells, groups: dict[str, str],
             pool: StringPool) -> tuple[Cols, npt.NDArray[np.int64], int]:
    """kernel_details.csv rows → kernel events on their tracks, each row's step id (-1 none), and
    how many rows had no usable start or duration (dropped)."""
    ts, ok = cells.us_to_ns(cols, "Start Time(us)")
    dur, dur_ok = cells.us_to_ns(cols, "Duration(us)")
    ok &= dur_ok & (dur >= 0)
    name = cols["Name"][ok]
    core = _first_column(cols, ("Accelerator Core", "Task Type"), len(ok))[ok]
    op_type = _first_column(cols, ("Type", "OP Type"), len(ok))[ok]
    comm = (core == HCCL) | np.char.startswith(op_type, "hcom_") | np.char.startswith(name, "hcom_")
    stream = cells.ints(cols, "Stream ID")[ok]
    track = np.char.add("Stream ", stream.astype(str))
    if comm.any():
        names = np.unique(name[comm])
        group = np.array([groups.get(n, "0") for n in names.tolist()], dtype=str)  # per distinct collective
        label = np.char.add(np.char.add("Group ", group), " Communication")
        track = np.where(comm, label[np.minimum(np.searchsorted(names, name), len(names) - 1)], track)
    c = _events(ts[ok], dur[ok], np.where(comm, HCCL, HARDWARE), track, pool)
    c["name"] = _ids(pool, name)
    c["cat"] = _ids(pool, np.where(np.char.str_len(core) > 0, core, np.where(comm, HCCL, "")))
    c["_stream"] = np.where(comm, -1, stream)
    step = cells.ints(cols, "Step Id")[ok] if "Step Id" in cols else np.full(len(name), -1, np.int64)
    return c, step, int((~ok).sum())


def _first_column(cols: dict[str, Text], names: tuple[str, ...], n: int) -> Text:
    """The first of ``names`` the file has (column names changed across CANN versions), else empty text."""
    return next((cols[c] for c in names if c in cols), np.full(n, "", dtype=str))


def _events(ts: npt.NDArray[np.int64], dur: npt.NDArray[np.int64], process: Text, thread: Text,
            pool: StringPool) -> Cols:
    c = event_columns(len(ts), EventKind.KERNEL, HARDWARE, pool)
    c["ts_ns"], c["dur_ns"] = ts, dur
    c["_key"] = track_key(pool, process, thread)
    c["_device"] = np.zeros(len(ts), np.int64)
    return c


def _collectives(comm: Cols, groups: dict[str, str], pool: StringPool) -> tuple[Cols, npt.NDArray[np.int64]]:
    """communication.json's collectives, for a kernel_details.csv without HCCL rows (its times are
    coarser: start to 0.1 µs, elapse as float ms)."""
    ok = np.isfinite(comm["start_us"]) & np.isfinite(comm["elapse_ms"]) & (comm["elapse_ms"] >= 0)
    name = comm["name"][ok]
    track = np.array([f"Group {groups.get(n, '0')} Communication" for n in name.tolist()] or [""], dtype=str)
    us = comm["start_us"][ok]
    whole = np.floor(us)  # µs and ns apart: 1.7e18 ns is beyond float64's exact integers
    ts = whole.astype(np.int64) * 1000 + np.round((us - whole) * 1000).astype(np.int64)
    c = _events(ts, np.round(comm["elapse_ms"][ok] * 1e6).astype(np.int64), np.full(len(name), HCCL),
                track[: len(name)], pool)
    c["name"] = _ids(pool, name)
    c["cat"] = np.full(len(name), pool.intern(HCCL), np.int32)
    return c, comm["step"][ok]


def _thread_names(keys: list[npt.NDArray[np.int64]]) -> dict[tuple[int, int], int]:
    """(pid id, tid id) → thread name id and (pid id, -1) → process name id: the processes are
    named "Ascend Hardware" / "HCCL" and the threads "Stream N" / "Group G Communication", as in trace_view."""
    tracks = np.unique(np.concatenate(keys)).tolist()  # a few tracks
    out: dict[tuple[int, int], int] = {}
    for k in tracks:
        pid, tid = k >> 32, k & 0xFFFFFFFF
        out[(pid, -1)] = pid
        out[(pid, tid)] = tid
    return out


def device_steps(step: npt.NDArray[np.int64], start: npt.NDArray[np.int64],
                 end: npt.NDArray[np.int64]) -> list[tuple[int, int, int]]:
    """(step, first start, last end) of each step's rows, in time order; a step that would begin
    before the previous one ended begins at that end, so the windows never overlap."""
    sel = step >= 0
    if not sel.any():
        return []
    ids, inv = np.unique(step[sel], return_inverse=True)
    lo = np.full(len(ids), np.iinfo(np.int64).max)
    hi = np.full(len(ids), np.iinfo(np.int64).min)
    np.minimum.at(lo, inv, start[sel])
    np.maximum.at(hi, inv, end[sel])
    order = np.argsort(lo, kind="stable")
    ids, lo, hi = ids[order], lo[order], hi[order]
    prev_end = np.maximum.accumulate(hi)
    lo[1:] = np.maximum(lo[1:], prev_end[:-1])
    hi = np.maximum(hi, lo)
    return list(zip(ids.tolist(), lo.tolist(), hi.tolist()))


def _dropped(path: Path, n: int, total: int) -> list[Repair]:
    if not n:
        return []
    return [("ascend-csv-row-dropped", "error",
             f"{path.name}: {n} of {total} rows without a usable start time or duration were dropped", n)]
