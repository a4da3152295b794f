"""The timeline snapshot of one step: lanes of CPU threads and GPU streams, small enough to draw inline.

:func:`compute_timeline` is pure and vectorised: it selects the events of one rank that overlap one
step (the step of median duration unless told), classifies them once by string id (DataLoader
periods, synchronisation calls, communication kernels), merges runs of sub-pixel events on a lane
into one block ("37 kernels"), and keeps at most ``max_events`` blocks (the longest, plus every
DataLoader / sync period), so even a multi-GB trace yields a snapshot of a few hundred kB.

Output columns (one row per drawn block, times relative to the window start):

==============  ======  ==========================================================
lane            int32   index into ``lanes`` (a CPU thread or a GPU stream)
depth           int16   nesting depth on a CPU thread (0 = top level); 0 on GPU
start_ns        int64   block start − window start, ns (clipped to the window)
dur_ns          int64   block duration, ns (clipped to the window)
kind            int8    index into :data:`KINDS`
count           int32   events merged into the block (1 = a single event)
names           str     the event name, or "N short kernels" for a merged block
==============  ======  ==========================================================
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.activity import is_comm_row
from stepscope.analysis.breakdown import tb_step_windows
from stepscope.model.schema import EventKind, TrackKind
from stepscope.model.trace import Trace
from stepscope.model.uniq import unique

#: Drawn kinds, in the order of ``TimelineData.kind`` codes.
KINDS = ("other", "cpu_op", "annotation", "python", "runtime", "kernel", "memcpy", "memset",
         "communication", "dataloader", "sync")
_K = {name: i for i, name in enumerate(KINDS)}
#: kinds that are highlighted and never merged or dropped by the cap
HIGHLIGHT = ("dataloader", "sync")
_BASE_KIND = {EventKind.CPU_OP: "cpu_op", EventKind.USER_ANNOTATION: "annotation",
              EventKind.PYTHON_FUNCTION: "python", EventKind.RUNTIME: "runtime",
              EventKind.DRIVER: "runtime", EventKind.KERNEL: "kernel", EventKind.MEMCPY: "memcpy",
              EventKind.MEMSET: "memset", EventKind.COMMUNICATION: "communication"}
_SYNC_NAMES = {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy",
               "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize", "hipMemcpy",
               "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize"}


@dataclass(frozen=True)
class TimelineData:
    """Blocks to draw for one step of one rank (see the module docstring for the columns)."""

    rank: int
    step: int | None
    start_ns: int
    end_ns: int
    lanes: tuple[str, ...]
    lane_is_gpu: tuple[bool, ...]
    lane_depths: tuple[int, ...]
    lane: npt.NDArray[np.int32]
    depth: npt.NDArray[np.int16]
    rel_start_ns: npt.NDArray[np.int64]
    dur_ns: npt.NDArray[np.int64]
    kind: npt.NDArray[np.int8]
    count: npt.NDArray[np.int32]
    names: tuple[str, ...]
    source_events: int  # events of the window before merging and capping

    def __len__(self) -> int:
        return len(self.names)

    def rows(self) -> Iterator[tuple[str, int, int, str, str]]:
        """(track label, absolute start_ns, dur_ns, kind, name) per block."""
        for i in range(len(self.names)):
            yield (self.lanes[int(self.lane[i])], self.start_ns + int(self.rel_start_ns[i]),
                   int(self.dur_ns[i]), KINDS[int(self.kind[i])], self.names[i])


def _pick_step(trace: Trace, rank: int, step: int | None) -> tuple[int | None, int, int]:
    """(step, start_ns, end_ns) of the wanted step, the median-duration one by default."""
    w = tb_step_windows(trace, rank)  # the breakdown's windows: one length per step in every view
    rows = np.flatnonzero(w.step >= 0)
    if step is not None:
        rows = rows[w.step[rows] == step]
    if len(rows) == 0:
        ev = trace.events
        mask = (ev["rank"] == rank) & (ev["dur_ns"] > 0)
        if not mask.any():
            return None, 0, 0
        return None, int(ev["ts_ns"][mask].min()), int((ev["ts_ns"][mask] + ev["dur_ns"][mask]).max())
    dur = w.end_ns[rows] - w.start_ns[rows]
    r = int(rows[np.argsort(dur, kind="stable")[len(rows) // 2]])
    return int(w.step[r]), int(w.start_ns[r]), int(w.end_ns[r])


def _kind_codes(trace: Trace, sel: npt.NDArray[np.intp]) -> npt.NDArray[np.int8]:
    """Drawn kind per selected event: base kind, then DataLoader / sync / communication by name."""
    ev = trace.events
    base = np.zeros(len(EventKind), dtype=np.int8)
    for ek, name in _BASE_KIND.items():
        base[int(ek)] = _K[name]
    kinds = base[ev["kind"][sel]]
    name_ids = ev["name"][sel]
    pool = trace.strings
    is_loader = pool.mask(lambda s: "DataLoader" in s)[name_ids]
    is_sync = pool.mask(lambda s: s in _SYNC_NAMES)[name_ids]
    is_comm = is_comm_row(trace)[sel]
    is_step = pool.mask(lambda s: s.startswith("ProfilerStep#"))[name_ids]
    host = np.isin(kinds, [_K["cpu_op"], _K["annotation"], _K["python"]])
    kinds[host & is_step] = _K["annotation"]
    kinds[host & is_loader] = _K["dataloader"]
    kinds[(kinds == _K["runtime"]) & is_sync] = _K["sync"]
    kinds[is_comm] = _K["communication"]
    return kinds


def _lanes(trace: Trace, track_ids: npt.NDArray[np.int32]) -> tuple[npt.NDArray[np.int32], list[str], list[bool]]:
    """Lane index per event (CPU threads first, then GPU streams) and each lane's label."""
    tr = trace.tracks
    uniq = unique(track_ids)  # sorted
    gpu = tr["kind"][uniq] == int(TrackKind.GPU_STREAM)
    order = np.lexsort((tr["stream"][uniq], tr["tid"][uniq], gpu))
    lane_of_uniq = np.empty(len(uniq), dtype=np.int32)
    lane_of_uniq[order] = np.arange(len(uniq), dtype=np.int32)
    labels, is_gpu = [], []
    for t in uniq[order].tolist():
        if tr["kind"][t] == int(TrackKind.GPU_STREAM):
            labels.append(f"GPU {int(tr['device'][t])} · stream {int(tr['stream'][t])}")
            is_gpu.append(True)
        else:
            name = trace.strings[int(tr["name"][t])]
            labels.append(name or f"thread {trace.strings[int(tr['tid'][t])]}")
            is_gpu.append(False)
    lane = lane_of_uniq[np.searchsorted(uniq, track_ids)]
    return lane, labels, is_gpu


def _merge_small(row: npt.NDArray[np.int64], start: npt.NDArray[np.int64], end: npt.NDArray[np.int64],
                 keep: npt.NDArray[np.bool_], tol: int) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int64],
                                                                 npt.NDArray[np.int32]]:
    """Merge runs of sub-``tol`` events on one row: (first index, block end, count) per block.

    Inputs are sorted by (row, start). An event starts a new block unless it and its predecessor are
    both short, on the same row, and separated by less than ``tol``.
    """
    n = len(start)
    small = ((end - start) < tol) & ~keep
    brk = np.ones(n, dtype=bool)
    if n > 1:
        gap = start[1:] - end[:-1]
        brk[1:] = (row[1:] != row[:-1]) | ~small[1:] | ~small[:-1] | (gap >= tol)
    first = np.flatnonzero(brk)
    block_end = np.maximum.reduceat(end, first) if n else end[:0]
    count = np.diff(np.append(first, n)).astype(np.int32)
    return first, block_end, count


def compute_timeline(trace: Trace, *, rank: int | None = None, step: int | None = None,
                     max_events: int = 4000, max_depth: int = 4, pixels: int = 2000) -> TimelineData:
    """The snapshot of one step (see the module docstring); ``pixels`` sets the merge resolution."""
    rank = trace.rank_ids[0] if rank is None and trace.ranks else (rank or 0)
    step, w0, w1 = _pick_step(trace, rank, step)
    ev, tr = trace.events, trace.tracks
    track_ok = np.isin(tr["kind"], [int(TrackKind.CPU_THREAD), int(TrackKind.GPU_STREAM)])
    end_all = ev["ts_ns"] + ev["dur_ns"]
    mask = ((ev["rank"] == rank) & (ev["dur_ns"] > 0) & (ev["ts_ns"] < w1) & (end_all > w0)
            & (ev["depth"] <= max_depth) & (ev["track"] >= 0))
    sel = np.flatnonzero(mask)
    sel = sel[track_ok[ev["track"][sel]]]
    kinds = _kind_codes(trace, sel)
    drawn = kinds != _K["other"]
    sel, kinds = sel[drawn], kinds[drawn]
    lane, labels, is_gpu = _lanes(trace, ev["track"][sel])
    depth = np.where(np.asarray(is_gpu, dtype=bool)[lane], 0, ev["depth"][sel]).astype(np.int16) \
        if len(sel) else np.zeros(0, np.int16)
    start: npt.NDArray[np.int64] = np.maximum(ev["ts_ns"][sel], w0).astype(np.int64)
    end: npt.NDArray[np.int64] = np.minimum(end_all[sel], w1).astype(np.int64)
    row: npt.NDArray[np.int64] = lane.astype(np.int64) * (max_depth + 1) + depth
    order = np.lexsort((start, row))
    row, start, end = row[order], start[order], end[order]
    kinds, lane, depth, sel = kinds[order], lane[order], depth[order], sel[order]
    keep = np.isin(kinds, [_K[k] for k in HIGHLIGHT])
    tol = max((w1 - w0) // max(pixels, 1), 1)
    first, block_end, count = _merge_small(row, start, end, keep, tol)
    chosen = _cap(block_end - start[first], keep[first], max_events)
    first, block_end, count = first[chosen], block_end[chosen], count[chosen]
    names = _block_names(trace, ev["name"][sel[first]], kinds[first], count)
    depths = [int(depth[lane == i].max()) + 1 if (lane == i).any() else 1 for i in range(len(labels))]
    return TimelineData(rank=rank, step=step, start_ns=w0, end_ns=w1, lanes=tuple(labels),
                        lane_is_gpu=tuple(is_gpu), lane_depths=tuple(depths), lane=lane[first],
                        depth=depth[first], rel_start_ns=(start[first] - w0).astype(np.int64),
                        dur_ns=(block_end - start[first]).astype(np.int64), kind=kinds[first],
                        count=count, names=tuple(names), source_events=len(sel))


def _cap(dur: npt.NDArray[np.int64], keep: npt.NDArray[np.bool_], max_events: int) -> npt.NDArray[np.intp]:
    """Indices of the blocks to draw, in input order: all highlighted ones, then the longest."""
    n = len(dur)
    if n <= max_events:
        return np.arange(n)
    room = max(max_events - int(keep.sum()), 0)
    others = np.flatnonzero(~keep)
    longest = others[np.argsort(-dur[others], kind="stable")[:room]]
    return np.sort(np.concatenate([np.flatnonzero(keep), longest]))


def _block_names(trace: Trace, name_ids: npt.NDArray[np.int32], kinds: npt.NDArray[np.int8],
                 count: npt.NDArray[np.int32]) -> list[str]:
    """Event name for single blocks, "N short <kind>s" for merged ones (bounded by max_events)."""
    decoded = trace.strings.decode(name_ids).tolist()
    return [str(nm) if c == 1 else f"{c} short {KINDS[k].replace('_', ' ')} events"
            for nm, k, c in zip(decoded, kinds.tolist(), count.tolist())]
