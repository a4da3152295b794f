"""GPU idle time of one rank, every gap classified (HTA idle-time breakdown, SPEC §5).

A *gap* is a stretch of a step in which the device runs no kernel, copy or memset (gaps of the
union over all streams; per stream, the gaps between that stream's consecutive activities). The
activity that ends the gap decides its category:

* ``host-wait``: its launch call (runtime start) began after the gap began: the CPU had not yet
  asked for the work, so the GPU waited on the host (HTA: runtime ts > previous kernel end);
* ``kernel-wait``: not host-wait and the whole gap is shorter than ``kernel_wait_max_ns``: the
  ordinary delay between back-to-back queued kernels;
* ``other``: the work was already queued yet did not run (waiting on an event, a sync, another
  stream), or nothing follows, or the launch is unknown.

Gaps are cut at step boundaries and each piece belongs to the step it lies in. Host-wait pieces are
also intersected with the rank's DataLoader events (``host_wait_in_dataloader_ns``) and, outside
them, with its host-side collectives (``host_wait_in_comm_ns``: a GPU job's gloo all-reduce runs on
the CPU, and the device waits for the host to finish communicating, not for its launches) and,
outside both, with ``torch.compile``'s compilation ranges (``host_wait_in_compile_ns``: the device
waits for the compiler, :mod:`.compilation`).

Differs from HTA on purpose: HTA's default threshold is 30 ns, which makes kernel-wait almost
never happen; ours defaults to 10 µs, the scale of launch gaps between queued kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.comm import host_collective_mask
from stepscope.analysis.common import (
    I32,
    I64,
    Windows,
    interval_set,
    rank_rows,
    step_windows,
    tracks_by_stream,
    window_of,
)
from stepscope.analysis.compilation import rank_compile_rows
from stepscope.model.schema import GPU_KINDS, HOST_KINDS
from stepscope.model.trace import Trace

KERNEL_WAIT_MAX_NS = 10_000


class IdleKind(IntEnum):
    HOST_WAIT = 0
    KERNEL_WAIT = 1
    OTHER = 2


def is_dataloader_name(name: str) -> bool:
    return "dataloader" in name.lower()


@dataclass(frozen=True)
class IdleResult:
    """Idle time of one rank. Per-step arrays align with ``step``; per-gap with ``gap_start_ns``.

    ``gap_next_row`` is the event row of the activity that ended the gap (-1 none): the evidence.
    """

    rank: int
    kernel_wait_max_ns: int
    step: I32
    step_ns: I64
    host_wait_ns: I64
    kernel_wait_ns: I64
    other_ns: I64
    host_wait_in_dataloader_ns: I64
    host_wait_in_comm_ns: I64
    host_wait_in_compile_ns: I64
    gap_start_ns: I64
    gap_end_ns: I64
    gap_kind: npt.NDArray[np.int8]  # IdleKind
    gap_step: I32
    gap_next_row: I64
    stream: I64  # per GPU stream (track rows): stream id
    stream_host_wait_ns: I64
    stream_kernel_wait_ns: I64
    stream_other_ns: I64
    stream_gap_count: I64

    @property
    def idle_ns(self) -> I64:
        return self.host_wait_ns + self.kernel_wait_ns + self.other_ns

    def avg_ns(self, field: str) -> float:
        arr = getattr(self, field)
        return float(np.mean(arr)) if len(arr) else 0.0


@dataclass(frozen=True)
class _Gaps:
    start: I64
    end: I64
    kind: npt.NDArray[np.int8]
    win: I64
    next_row: I64


def compute_idle(trace: Trace, rank: int, kernel_wait_max_ns: int = KERNEL_WAIT_MAX_NS) -> IdleResult:
    """Classify every GPU gap of a rank, per step and per stream."""
    gpu = rank_rows(trace, rank, tuple(int(k) for k in GPU_KINDS))
    if len(gpu) == 0:
        raise NotApplicable("no GPU activity on this rank")
    wins = step_windows(trace, rank)
    gpu = gpu[np.lexsort((trace.events["ts_ns"][gpu],))]
    busy = interval_set(trace, gpu)
    outer = intervals.union(wins.start_ns, wins.end_ns)
    g = _classify(trace, gpu, intervals.subtract(outer, busy), wins, kernel_wait_max_ns)
    per = [np.bincount(g.win, weights=np.where(g.kind == k, g.end - g.start, 0), minlength=len(wins))
           for k in IdleKind]
    loader = _dataloader_set(trace, rank)
    hw = g.kind == IdleKind.HOST_WAIT
    dl = np.bincount(g.win[hw], weights=_covered(loader, g.start[hw], g.end[hw]), minlength=len(wins))
    comm = intervals.subtract(_host_comm_set(trace, rank), loader)
    in_comm = np.bincount(g.win[hw], weights=_covered(comm, g.start[hw], g.end[hw]), minlength=len(wins))
    comp = intervals.subtract(intervals.subtract(interval_set(trace, rank_compile_rows(trace, rank)), loader), comm)
    in_comp = np.bincount(g.win[hw], weights=_covered(comp, g.start[hw], g.end[hw]), minlength=len(wins))
    streams = _per_stream(trace, gpu, wins, kernel_wait_max_ns)
    return IdleResult(
        rank=rank, kernel_wait_max_ns=kernel_wait_max_ns, step=wins.step, step_ns=wins.dur_ns,
        host_wait_ns=per[0].astype(np.int64), kernel_wait_ns=per[1].astype(np.int64),
        other_ns=per[2].astype(np.int64), host_wait_in_dataloader_ns=dl.astype(np.int64),
        host_wait_in_comm_ns=in_comm.astype(np.int64), host_wait_in_compile_ns=in_comp.astype(np.int64),
        gap_start_ns=g.start, gap_end_ns=g.end, gap_kind=g.kind, gap_step=wins.step[g.win].astype(np.int32),
        gap_next_row=g.next_row, **streams)


def _classify(trace: Trace, gpu: I64, gaps: intervals.Intervals, wins: Windows, max_ns: int) -> _Gaps:
    """Cut gaps at step boundaries and classify each piece by the activity that ends its gap."""
    ev = trace.events
    starts = ev["ts_ns"][gpu]
    ps, pe, src = intervals.split_at(gaps, np.concatenate([wins.start_ns, wins.end_ns]))
    win = window_of(wins, ps)
    keep = win >= 0
    ps, pe, src, win = ps[keep], pe[keep], src[keep], win[keep]
    gap_len = (gaps[1] - gaps[0])[src]
    nxt = intervals.sorted_searchsorted(starts, gaps[1][src], "left")  # both in time order
    has_next = nxt < len(gpu)
    next_row = np.where(has_next, gpu[np.minimum(nxt, len(gpu) - 1)], -1)
    kind = _kinds(trace, next_row, ps, gap_len, max_ns)
    return _Gaps(ps, pe, kind, win, next_row.astype(np.int64))


def _kinds(trace: Trace, next_row: I64, piece_start: I64, gap_len: I64, max_ns: int) -> npt.NDArray[np.int8]:
    ev = trace.events
    launch = np.where(next_row >= 0, ev["launch"][np.maximum(next_row, 0)], -1)
    launch_ts = ev["ts_ns"][np.maximum(launch, 0)]
    host = (launch >= 0) & (launch_ts > piece_start)
    kernel = ~host & (launch >= 0) & (gap_len < max_ns)
    return np.where(host, IdleKind.HOST_WAIT, np.where(kernel, IdleKind.KERNEL_WAIT, IdleKind.OTHER)).astype(
        np.int8)


def _covered(iv: intervals.Intervals, start: I64, end: I64) -> I64:
    """Per piece [start, end): its time inside the set."""
    return intervals.covered_in_windows(iv, start, end) if len(iv[0]) else np.zeros(len(start), np.int64)


def _host_comm_set(trace: Trace, rank: int) -> intervals.Intervals:
    host = rank_rows(trace, rank, tuple(int(k) for k in HOST_KINDS))
    return interval_set(trace, host[host_collective_mask(trace)[host]])


def _dataloader_set(trace: Trace, rank: int) -> intervals.Intervals:
    host = rank_rows(trace, rank, tuple(int(k) for k in HOST_KINDS))
    dl = host[trace.strings.mask(is_dataloader_name)[trace.events["name"][host]]]
    return interval_set(trace, dl)


def _per_stream(trace: Trace, gpu: I64, wins: Windows, max_ns: int) -> dict[str, I64]:
    """HTA's per-stream breakdown: gaps between consecutive activities of each stream, in steps."""
    track = trace.events["track"][gpu]
    ids = tracks_by_stream(trace, track)
    out = {k: np.zeros(len(ids), np.int64) for k in (
        "stream_host_wait_ns", "stream_kernel_wait_ns", "stream_other_ns", "stream_gap_count")}
    for i, t in enumerate(ids.tolist()):  # per stream
        rows = gpu[track == t]
        g = _classify(trace, rows, intervals.gaps(interval_set(trace, rows)), wins, max_ns)
        dur = g.end - g.start
        out["stream_host_wait_ns"][i] = dur[g.kind == IdleKind.HOST_WAIT].sum()
        out["stream_kernel_wait_ns"][i] = dur[g.kind == IdleKind.KERNEL_WAIT].sum()
        out["stream_other_ns"][i] = dur[g.kind == IdleKind.OTHER].sum()
        out["stream_gap_count"][i] = len(dur)
    return {"stream": trace.tracks["stream"][ids].astype(np.int64), **out}
