"""Export the canonical model as a chrome-trace / Perfetto JSON file (``stepscope export``).

What is written (one ``traceEvents`` array, ``.gz`` compressed when the name ends in ``.gz``):

================  ==============================================================================
events            every event of the selected ranks / steps, ``ph: X`` (``i`` for instants), with
                  its raw category (or the canonical one for its kind) and the args stepscope reads
memory            every allocator event (the memory table) as Kineto ``[memory]`` instants with
                  ``Device Type`` / ``Device Id`` / ``Addr`` / ``Bytes`` / ``Total Allocated`` /
                  ``Total Reserved``, on its host thread
pid / tid         ``pid = rank × 1000`` for host threads, ``rank × 1000 + 1 + device`` for GPU
                  streams, ``rank × 1000 + 999`` for steps; ``tid`` = the model's track id;
                  named with ``process_name`` / ``thread_name`` metadata
flows             launch call → GPU activity from the model's ``launch`` link (``ph: s`` / ``f``,
                  ``bp: e``, ``cat: ac2g``, id = the GPU event's row)
steps             each ProfilerStep span stretched to its GPU work, as async slices
                  (``ph: b`` / ``e``, ``cat: stepscope_step``) on the rank's "steps" process
counters          ``ph: C`` on each GPU process: "GPU <d> utilization %" (union of kernel time per
                  bucket of ``util_bucket_ns``) and "queue length · stream <s>" (launched, not
                  finished GPU activities; every change)
================  ==============================================================================

Timestamps are µs with every ns digit (``12.345``), so ``stepscope.load`` of the output gives back
the same events (kinds, names, times, args). The text is built per chunk of rows by
:mod:`stepscope.report._chrome_text` (Arrow kernels, no per-event Python), written to a temporary
file next to the output and renamed: the input is only read, and a failed export leaves nothing.
"""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import msgspec
import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis.timeline_index import RankIndex, rank_index
from stepscope.errors import UsageError
from stepscope.model.schema import TrackKind
from stepscope.model.trace import Trace
from stepscope.model.uniq import unique
from stepscope.report import _chrome_events as ce

I64 = npt.NDArray[np.int64]
CHUNK_ROWS = 100_000


@dataclass(frozen=True)
class ExportStats:
    """What an export wrote."""

    path: str
    ranks: tuple[int, ...]
    events: int
    flows: int
    steps: int
    counter_samples: int
    bytes_written: int
    memory_events: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__, ranks=list(self.ranks))


def export_chrome_trace(trace: Trace, out: str | Path, *, ranks: list[int] | None = None,
                        steps: tuple[int, int] | None = None, util_buckets: int = 5000) -> ExportStats:
    """Write ``trace`` (optionally some ranks, optionally the span of steps ``a..b``) to ``out``."""
    out = Path(out)
    _refuse_input(trace, out)
    chosen = _choose_ranks(trace, ranks)
    rows, windows = _select(trace, chosen, steps)
    mem_rows = _memory_rows(trace, chosen, windows if steps is not None else None)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        with _open(tmp, out.name.endswith(".gz")) as fh:
            counts = _write(fh, trace, chosen, rows, windows, util_buckets, mem_rows)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return ExportStats(str(out), tuple(chosen), len(rows), counts[0], counts[1], counts[2], out.stat().st_size,
                       len(mem_rows))


def _memory_rows(trace: Trace, ranks: list[int], windows: dict[int, tuple[int, int]] | None) -> I64:
    """Rows of the memory table to write: the chosen ranks', inside their step span when one is chosen."""
    mem = trace.memory
    keep = np.isin(mem["rank"], np.array(ranks, np.int32))
    if windows is not None and ranks:
        order = sorted(ranks)
        lo = np.array([windows[r][0] for r in order], np.int64)
        hi = np.array([windows[r][1] for r in order], np.int64)
        i = np.minimum(np.searchsorted(np.array(order), mem["rank"]), len(order) - 1)
        keep &= (mem["ts_ns"] >= lo[i]) & (mem["ts_ns"] <= hi[i])
    return np.flatnonzero(keep).astype(np.int64)


def _refuse_input(trace: Trace, out: Path) -> None:
    sources = {Path(r.source).resolve() for r in trace.ranks if r.source}
    if out.resolve() in sources:
        raise UsageError(f"refusing to overwrite the input trace {out}")


def _choose_ranks(trace: Trace, ranks: list[int] | None) -> list[int]:
    have = trace.rank_ids
    if not ranks:
        return have
    missing = sorted(set(ranks) - set(have))
    if missing:
        raise UsageError(f"no rank {missing[0]} in this trace (ranks: {', '.join(map(str, have))})")
    return [r for r in have if r in set(ranks)]


def _select(trace: Trace, ranks: list[int], steps: tuple[int, int] | None) -> tuple[I64, dict[int, tuple[int, int]]]:
    """Rows to write (in model order) and each rank's time window."""
    ev = trace.events
    parts, windows = [], {}
    for r in ranks:  # per rank
        sl = trace.rank_slice(r)
        rows = np.arange(sl.start, sl.stop, dtype=np.int64)
        rows = rows[ev["track"][rows] >= 0]
        ts, end = ev["ts_ns"][rows], ev["ts_ns"][rows] + ev["dur_ns"][rows]
        lo, hi = (int(ts.min()), int(np.maximum(end, ts + 1).max())) if len(rows) else (0, 0)
        if steps is not None:
            lo, hi = _step_span(trace, r, steps)
            rows = rows[(ts < hi) & (np.maximum(end, ts + 1) > lo)]
        parts.append(rows)
        windows[r] = (lo, hi)
    return (np.concatenate(parts) if parts else np.zeros(0, np.int64)), windows


def _step_span(trace: Trace, rank: int, steps: tuple[int, int]) -> tuple[int, int]:
    st = trace.steps
    m = (st["rank"] == rank) & (st["step"] >= steps[0]) & (st["step"] <= steps[1])
    if not m.any():
        have = sorted(set(st["step"][st["rank"] == rank].tolist()))
        raise UsageError(f"rank {rank} has no step in {steps[0]}-{steps[1]} (steps: {have[:20]})")
    return int(st["start_ns"][m].min()), int(np.maximum(st["end_ns"][m], st["host_end_ns"][m]).max())


def _open(path: Path, gz: bool) -> IO[bytes]:
    """The output stream (gzip level 1: trace JSON still shrinks ~15×, at a fraction of level 9's time)."""
    if gz:
        return gzip.open(path, "wb", compresslevel=1)  # type: ignore[return-value]
    return open(path, "wb")


def _write(fh: IO[bytes], trace: Trace, ranks: list[int], rows: I64, windows: dict[int, tuple[int, int]],
           util_buckets: int, mem_rows: I64) -> tuple[int, int, int]:
    """Header, metadata, events, memory events, flows, steps, counters; returns (flows, steps, counter samples)."""
    fh.write(_header(trace, ranks))
    fh.write(_metadata(trace, ranks, rows))
    text = ce.EventText(trace)
    for i in range(0, len(rows), CHUNK_ROWS):  # per chunk of rows
        fh.write(text.events(rows[i: i + CHUNK_ROWS]))
    for i in range(0, len(mem_rows), CHUNK_ROWS):  # per chunk of memory rows
        fh.write(text.memory(mem_rows[i: i + CHUNK_ROWS]))
    selected = np.zeros(len(trace.events), bool)
    selected[rows] = True
    gpu = rows[(trace.events["launch"][rows] >= 0)]
    gpu = gpu[selected[trace.events["launch"][gpu]]]
    for i in range(0, len(gpu), CHUNK_ROWS):  # per chunk of flows
        fh.write(text.flows(gpu[i: i + CHUNK_ROWS]))
    n_steps = n_counters = 0
    for r in ranks:  # per rank
        lo, hi = windows[r]
        n_steps += _write_steps(fh, trace, text, r, lo, hi)
        n_counters += _write_counters(fh, trace, text, rank_index(trace, r), lo, hi, util_buckets)
    fh.write(b"\n]}\n")
    return len(gpu), n_steps, n_counters


def _header(trace: Trace, ranks: list[int]) -> bytes:
    """Top-level keys before the events: device properties, distributed info and time base of a rank."""
    info = trace.rank_info(ranks[0]) if ranks else None
    doc: dict[str, Any] = {"schemaVersion": 1, "displayTimeUnit": "ns"}
    if info is not None:
        doc["deviceProperties"] = [_device_props(d) for d in info.devices]
        if len(ranks) == 1:
            doc["distributedInfo"] = {**info.distributed, "rank": info.rank}
            if info.time_base_ns:
                doc["baseTimeNanoseconds"] = info.time_base_ns
    doc["stepscope_export"] = {"source": trace.source, "ranks": ranks}
    text = msgspec.json.encode(doc)
    return text[:-1] + b',"traceEvents":[\n'


def _device_props(d: Any) -> dict[str, Any]:
    keys = {"id": d.index, "name": d.name, "totalGlobalMem": d.total_memory_bytes, "computeMajor": d.compute_major,
            "computeMinor": d.compute_minor, "numSms": d.sm_count, "maxThreadsPerBlock": d.max_threads_per_block,
            "maxThreadsPerMultiprocessor": d.max_threads_per_sm, "regsPerBlock": d.regs_per_block,
            "regsPerMultiprocessor": d.regs_per_sm, "warpSize": d.warp_size,
            "sharedMemPerBlock": d.shared_mem_per_block, "sharedMemPerMultiprocessor": d.shared_mem_per_sm,
            "sharedMemPerBlockOptin": d.shared_mem_per_block_optin}
    return {k: v for k, v in keys.items() if v is not None}


def _metadata(trace: Trace, ranks: list[int], rows: I64) -> bytes:
    """process_name / thread_name (and sort indices) of every pid and track written; the first event."""
    tr = trace.tracks
    used = unique(trace.events["track"][rows])
    meta: list[dict[str, Any]] = []
    for r in ranks:  # per rank
        meta.append(_meta("process_name", ce.STEPS_PID_OFFSET + r * ce.PID_PER_RANK, 0, f"rank {r} · steps"))
    pids = ce.track_pids(trace)
    for t in used.tolist():  # per track written
        gpu = int(tr["kind"][t]) == TrackKind.GPU_STREAM
        rank, dev, pid = int(tr["rank"][t]), int(tr["device"][t]), int(pids[t])
        meta.append(_meta("process_name", pid, 0, f"rank {rank} · GPU {dev}" if gpu else f"rank {rank} · host"))
        meta.append(_meta("thread_name", pid, t, ce.track_label(trace, t)))
        meta.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": t, "args": {"sort_index": t}})
    seen: set[tuple[str, int, int]] = set()
    distinct = []
    for m in meta:  # metadata: a few per track
        key = (m["name"], m["pid"], m["tid"])
        if key not in seen:
            seen.add(key)
            distinct.append(msgspec.json.encode(m))
    return b",\n".join(distinct)


def _meta(name: str, pid: int, tid: int, label: str) -> dict[str, Any]:
    return {"ph": "M", "name": name, "pid": pid, "tid": tid, "ts": 0, "args": {"name": label}}


def _write_steps(fh: IO[bytes], trace: Trace, text: ce.EventText, rank: int, lo: int, hi: int) -> int:
    st = trace.steps
    m = np.flatnonzero((st["rank"] == rank) & (st["start_ns"] < hi) & (st["end_ns"] > lo))
    fh.write(text.steps(rank, st["step"][m], st["start_ns"][m], np.maximum(st["end_ns"][m], st["host_end_ns"][m])))
    return len(m)


def _write_counters(fh: IO[bytes], trace: Trace, text: ce.EventText, ix: RankIndex, lo: int, hi: int,
                    util_buckets: int) -> int:
    """GPU utilization per device (bucketed) and queue length per stream (every change)."""
    n = 0
    if hi <= lo:
        return 0
    width = max(1000, (hi - lo) // max(util_buckets, 1))
    edges = np.arange(lo, hi + width, width, dtype=np.int64)
    for d, iv in zip(ix.devices.tolist(), ix.kernels):  # per device
        pct = 100.0 * intervals.covered_in_windows(iv, edges[:-1], edges[1:]) / width
        ts, val = _changes(edges, np.append(pct, 0.0))
        pid = ce.PID_PER_RANK * ix.rank + 1 + d
        fh.write(text.counter(pid, f"GPU {d} utilization %", ts, np.round(val, 2)))
        n += len(ts)
    streams = trace.tracks["stream"][ix.queue_tracks]
    pids = ce.track_pids(trace)[ix.queue_tracks]
    for s, pid, series in zip(streams.tolist(), pids.tolist(), ix.queue):  # per stream
        keep = (series.ts_ns >= lo) & (series.ts_ns <= hi)
        ts, val = _changes(series.ts_ns[keep], series.value[keep].astype(np.float64))
        fh.write(text.counter(int(pid), f"queue length · stream {s}", ts, val))
        n += len(ts)
    return n


def _changes(ts: I64, val: npt.NDArray[np.float64]) -> tuple[I64, npt.NDArray[np.float64]]:
    """Keep only the points where the value changes (and the first)."""
    keep = np.ones(len(val), bool)
    keep[1:] = val[1:] != val[:-1]
    return ts[keep], val[keep]

