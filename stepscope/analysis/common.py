"""Small helpers shared by the deep analyses: a rank's rows, its step windows, GPU interval sets,
and a per-trace memo for whole-trace passes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis._memo import per_rank, shared
from stepscope.analysis.breakdown import tb_step_windows
from stepscope.model.schema import GPU_KINDS, HOST_KINDS, EventKind
from stepscope.model.trace import Trace
from stepscope.model.tree import nearest_marked_ancestor

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]
R = TypeVar("R")


@dataclass(frozen=True)
class Windows:
    """The analysis windows of one rank: its profiled steps, or one window over all its GPU work.

    ``step`` is the ProfilerStep number (-1 for the whole-trace window); ``start_ns`` / ``end_ns``
    the step breakdown's windows: the step span stretched to the end of the GPU work it launched,
    starting where the previous step ended (SPEC §3, §4).
    """

    step: I32
    start_ns: I64
    end_ns: I64

    @property
    def dur_ns(self) -> I64:
        return self.end_ns - self.start_ns

    @property
    def has_steps(self) -> bool:
        return bool(len(self.step)) and bool(self.step[0] >= 0)

    def __len__(self) -> int:
        return len(self.step)


def step_windows(trace: Trace, rank: int) -> Windows:
    """The rank's step windows: exactly the step breakdown's (``breakdown.tb_step_windows``), so every
    view shows one length per step; without steps, one window over the rank's device work."""
    tb = tb_step_windows(trace, rank)
    return Windows(tb.step.astype(np.int32), tb.start_ns.astype(np.int64), tb.end_ns.astype(np.int64))


def rank_rows(trace: Trace, rank: int, kinds: tuple[int, ...] | None = None) -> I64:
    """Row indices of a rank's events, optionally of some kinds only (a rank's rows are contiguous);
    made once per build and shared (read-only)."""
    key = None if kinds is None else tuple(sorted({int(k) for k in kinds}))
    return shared(f"{__name__}.rank_rows{key}", trace, rank, lambda: _rank_rows(trace, rank, key))


def _rank_rows(trace: Trace, rank: int, kinds: tuple[int, ...] | None) -> I64:
    sl = trace.rank_slice(rank)
    if kinds is None:
        rows = np.arange(sl.start, sl.stop, dtype=np.int64)
    else:
        wanted = np.zeros(256, bool)  # one lookup per row, not one comparison per kind
        wanted[np.array(kinds, np.int64) & 0xFF] = True
        rows = np.flatnonzero(wanted[trace.events["kind"][sl].view(np.uint8)]).astype(np.int64) + sl.start
    rows.flags.writeable = False  # shared by every analysis of the build
    return rows


def kept_steps(trace: Trace, rank: int) -> I32:
    """The step numbers of the rank's windows (what per-step numbers average over); empty without steps."""
    step = step_windows(trace, rank).step
    out: I32 = step[step >= 0]
    return out


def in_step_rows(trace: Trace, rank: int, kinds: tuple[int, ...] | None = None) -> I64:
    """A rank's rows (of some kinds only) inside its kept steps; all of them when it has no steps."""
    rows = rank_rows(trace, rank, kinds)
    steps = kept_steps(trace, rank)
    if len(steps):
        rows = rows[np.isin(trace.events["step"][rows], steps)]
    return rows


@per_rank
def step_kernels(trace: Trace, rank: int) -> I64:
    """The rank's kernels inside its kept steps (all of them without steps); shared, never mutate."""
    return in_step_rows(trace, rank, (int(EventKind.KERNEL),))


def ancestor_with(trace: Trace, rows: I64, marked_names: B) -> I64:
    """For each row, the nearest host ancestor (itself included) whose name is marked (a mask per
    string id), else -1; rows of -1 stay -1."""
    ev = trace.events
    marked = marked_names[ev["name"]]
    ok = rows >= 0
    out = np.full(len(rows), -1, np.int64)
    if ok.any():
        out[ok] = nearest_marked_ancestor(ev["parent"], rows[ok], marked, include_self=True)
    return out


def interval_set(trace: Trace, rows: I64) -> intervals.Intervals:
    """Normalised union of the given events' [ts, ts + dur) intervals."""
    ts = trace.events["ts_ns"][rows]
    return intervals.union(ts, ts + trace.events["dur_ns"][rows])


def is_optimizer_step(name: str) -> bool:
    """An ``Optimizer.step#<Class>.step`` annotation (PyTorch's, around every optimizer step)."""
    return name.startswith("Optimizer.step#")


def optimizer_steps(trace: Trace, rank: int) -> I64:
    """The rank's ``Optimizer.step`` annotations (host rows)."""
    host = rank_rows(trace, rank, tuple(int(k) for k in HOST_KINDS))
    return host[trace.strings.mask(is_optimizer_step)[trace.events["name"][host]]]


def launched_by(trace: Trace, rank: int, ops: I64) -> I64:
    """The rank's device rows whose launching op (``op``: the innermost op around the launch) is one of ``ops``."""
    dev = rank_rows(trace, rank, tuple(int(k) for k in GPU_KINDS))
    out: I64 = dev[np.isin(trace.events["op"][dev], ops)]
    return out


def launched_inside(trace: Trace, rows: I64, host_rows: I64) -> B:
    """Per device row: was it launched by a call that starts inside one of these host events (an
    ``Optimizer.step`` annotation, say)? Rows without a launch call: False."""
    ev = trace.events
    lo, hi = interval_set(trace, host_rows)
    launch = ev["launch"][rows].astype(np.int64)
    if len(lo) == 0:
        return np.zeros(len(rows), bool)
    lts = ev["ts_ns"][np.maximum(launch, 0)]
    pos = np.searchsorted(lo, lts, side="right") - 1
    inside: B = (launch >= 0) & (pos >= 0) & (lts < hi[np.maximum(pos, 0)])
    return inside


def tracks_by_stream(trace: Trace, track_ids: I64) -> I64:
    """The distinct tracks of ``track_ids`` by (device, stream): the order a person reads, and the
    same however the file ordered its events (track ids are numbered in order of appearance)."""
    ids = np.unique(track_ids)
    t = trace.tracks
    return ids[np.lexsort((ids, t["stream"][ids], t["device"][ids]))].astype(np.int64)


def window_of(wins: Windows, ts_ns: I64) -> I64:
    """Index of the window containing each time, -1 outside every window."""
    if len(wins) == 0:
        return np.full(len(ts_ns), -1, np.int64)
    pos = np.searchsorted(wins.start_ns, ts_ns, side="right") - 1
    ok = (pos >= 0) & (ts_ns < wins.end_ns[np.maximum(pos, 0)])
    return np.where(ok, pos, -1).astype(np.int64)


def pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0


def recorded_peer(trace: Trace, rows: I64, op: npt.NDArray[np.integer[Any]]) -> I64:
    """Per point-to-point kernel, the rank on the other end: its (else its launching op's, ``op``)
    ``Dst Rank``, else ``Src Rank`` (PyTorch ≥ 2.4 records them); -1 where none is recorded."""
    ev = trace.events
    peer = np.full(len(rows), -1, np.int64)
    for col in ("dst_rank", "src_rank"):
        own = ev[col][rows].astype(np.int64)
        of_op = np.where(op >= 0, ev[col][np.maximum(op, 0)], -1)
        peer = np.where(peer >= 0, peer, np.where(own >= 0, own, of_op))
    return peer
