"""Memory copies of one rank (Nsight Systems' memcpy analyses, SPEC §5).

Per copy: direction (H2D, D2H, D2D, H2H, P2P), pageable vs pinned host memory (from the copy's
name), sync vs async (the launching call: ``*MemcpyAsync`` is async, any other memcpy call blocks the
host), size, GPU duration and achieved bandwidth = bytes / duration (GB/s = bytes/ns). Copies are
grouped by (direction, pageable, sync); *small* copies are those under ``small_bytes`` (64 KiB by
default), whose time is dominated by fixed latency: many of them suggest batching.

Note: ``cudaMemcpyAsync`` from *pageable* memory is staged through a pinned buffer and does not
overlap with the host; the ``pageable`` column, not ``sync``, is the thing to fix there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import F64, I32, I64, kept_steps, pct, rank_rows, step_windows, window_of
from stepscope.analysis.named import NamedRows, named_rows
from stepscope.model.masks import any_of
from stepscope.model.schema import EventKind, MemcpyKind
from stepscope.model.trace import Trace
from stepscope.model.uniq import unique

SMALL_BYTES = 64 * 1024
ASYNC_PATTERN = re.compile(r"Async", re.IGNORECASE)


@dataclass(frozen=True)
class CopyGroups:
    """Copies grouped by (direction, pageable, sync); most time first."""

    direction: list[str]  # h2d | d2h | d2d | h2h | p2p | unknown
    pageable: list[str]  # pageable | pinned | device (D2D / P2P) | unknown
    sync: list[str]  # sync | async | unknown
    count: I64
    bytes_total: I64
    time_ns: I64
    bandwidth_gbps: F64  # Σ bytes / Σ time over copies with a known size
    small_count: I64


@dataclass(frozen=True)
class CopySet:
    """Host<->device copies of one kind inside the steps (the whole trace without steps): the evidence
    of the pageable-memcpy and small-memcpy findings. Totals over the steps; ``names`` per copy."""

    count: int
    time_ns: int
    bytes_total: int  # Σ of the known, non-zero sizes
    mean_bytes: int  # mean size (unknown sizes count as -1, as recorded); 0 without copies
    bandwidth_gbps: float | None  # Σ bytes / Σ time over the copies of known size (the groups' GB/s)
    median_bandwidth_gbps: float | None  # the median copy's; None when no copy has a known bandwidth
    names: NamedRows


@dataclass(frozen=True)
class HostDeviceTotals:
    """The H2D / D2H copies of known size inside the steps, summed: what ``copy-bound`` weighs."""

    bytes_total: float
    dur_ns: float
    pinned_bytes: float  # from pinned memory
    ordered_bytes: float  # copied on a stream that also runs the rank's kernels
    all_copies_ns: float  # every copy inside the steps, device-to-device ones included


@dataclass(frozen=True)
class MemcpyResult:
    """Every copy of one rank (arrays aligned with ``rows``) and the grouped view."""

    rank: int
    small_bytes: int
    rows: I64
    step: I32  # step of each copy, -1 outside steps
    direction: npt.NDArray[np.int8]  # MemcpyKind
    pageable: npt.NDArray[np.int8]  # 1 pageable, 0 pinned/device, -1 unknown
    is_sync: npt.NDArray[np.int8]  # 1 blocking call, 0 async, -1 unknown launch
    bytes: I64
    dur_ns: I64
    bandwidth_gbps: F64
    groups: CopyGroups
    step_count: int  # steps the per-step numbers average over (0 without steps)
    pageable_copies: CopySet  # H2D / D2H copies from pageable memory, inside the steps
    small_copies: CopySet  # H2D / D2H copies of a known size under small_bytes, inside the steps
    compute_stream: npt.NDArray[np.bool_]  # per copy: its stream also runs the rank's kernels (ordered with them)

    @property
    def host_device(self) -> HostDeviceTotals:
        in_steps = self.step >= 0 if self.step_count else np.ones(len(self.step), bool)  # no steps: the whole trace
        host = in_steps & any_of(self.direction, [int(MemcpyKind.H2D), int(MemcpyKind.D2H)]) & (self.bytes > 0)
        b = self.bytes.astype(np.float64)
        return HostDeviceTotals(float(b[host].sum()), float(self.dur_ns[host].sum()),
                                float(b[host & (self.pageable == 0)].sum()),
                                float(b[host & self.compute_stream].sum()), float(self.dur_ns[in_steps].sum()))

    @property
    def small_count(self) -> int:
        return int(((self.bytes >= 0) & (self.bytes < self.small_bytes)).sum())

    @property
    def small_time_pct(self) -> float:
        small = (self.bytes >= 0) & (self.bytes < self.small_bytes)
        return pct(float(self.dur_ns[small].sum()), float(self.dur_ns.sum()))


def compute_memcpy(trace: Trace, rank: int, small_bytes: int = SMALL_BYTES) -> MemcpyResult:
    """Direction, pageable/pinned, sync/async, size and bandwidth of every copy of a rank."""
    ev = trace.events
    rows = rank_rows(trace, rank, (int(EventKind.MEMCPY),))
    if len(rows) == 0:
        raise NotApplicable("no memory copies on this rank")
    wins = step_windows(trace, rank)
    win = window_of(wins, ev["ts_ns"][rows])
    step = np.where(win >= 0, wins.step[np.maximum(win, 0)], -1).astype(np.int32)
    launch = ev["launch"][rows]
    is_async = trace.strings.mask(lambda s: bool(ASYNC_PATTERN.search(s)))[ev["name"][np.maximum(launch, 0)]]
    is_sync = np.where(launch >= 0, (~is_async).astype(np.int8), -1).astype(np.int8)
    nbytes, dur = ev["bytes"][rows], ev["dur_ns"][rows]
    bw = np.where((nbytes >= 0) & (dur > 0), nbytes / np.maximum(dur, 1), np.nan)
    direction = ev["copy_kind"][rows]
    pageable = ev["pageable"][rows]
    groups = _group(direction, pageable, is_sync, nbytes, dur, small_bytes)
    n_steps = len(kept_steps(trace, rank))
    names = named_rows(trace, rows)
    host = any_of(direction, [int(MemcpyKind.H2D), int(MemcpyKind.D2H)]) & (step >= 0 if n_steps else True)
    kernel_streams = unique(ev["track"][rank_rows(trace, rank, (int(EventKind.KERNEL),))])
    return MemcpyResult(rank, small_bytes, rows, step, direction, pageable, is_sync, nbytes, dur, bw, groups,
                        n_steps, _copy_set(host & (pageable == 1), names, nbytes, bw),
                        _copy_set(host & (nbytes >= 0) & (nbytes < small_bytes), names, nbytes, bw),
                        np.isin(ev["track"][rows], kernel_streams))


def _copy_set(sel: npt.NDArray[np.bool_], names: NamedRows, nbytes: I64, bw: F64) -> CopySet:
    b, rate = nbytes[sel], bw[sel]
    known_ns = int(names.dur_ns[sel & (nbytes >= 0)].sum())
    return CopySet(count=int(sel.sum()), time_ns=int(names.dur_ns[sel].sum()), bytes_total=int(b[b > 0].sum()),
                   mean_bytes=int(b.mean()) if len(b) else 0,
                   bandwidth_gbps=float(b[b > 0].sum()) / known_ns if known_ns > 0 else None,
                   median_bandwidth_gbps=float(np.nanmedian(rate)) if np.isfinite(rate).any() else None,
                   names=names.subset(sel))


def _group(direction: npt.NDArray[np.int8], pageable: npt.NDArray[np.int8], is_sync: npt.NDArray[np.int8],
           nbytes: I64, dur: I64, small_bytes: int) -> CopyGroups:
    key = np.stack([direction.astype(np.int64), pageable.astype(np.int64), is_sync.astype(np.int64)])
    uniq, inv = np.unique(key, axis=1, return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    known = nbytes >= 0
    count = np.bincount(inv)
    total_b = np.bincount(inv, weights=np.where(known, nbytes, 0))
    time = np.bincount(inv, weights=dur)
    t_known = np.bincount(inv, weights=np.where(known, dur, 0))
    small = np.bincount(inv, weights=(known & (nbytes < small_bytes)).astype(np.float64))
    order = np.argsort(-time, kind="stable")
    return CopyGroups(
        direction=[MemcpyKind(int(d)).name.lower() if d else "unknown" for d in uniq[0][order]],
        pageable=[_memory_label(int(d), int(p)) for d, p in zip(uniq[0][order], uniq[1][order])],
        sync=[{1: "sync", 0: "async"}.get(int(s), "unknown") for s in uniq[2][order]],
        count=count[order].astype(np.int64), bytes_total=total_b[order].astype(np.int64),
        time_ns=time[order].astype(np.int64),
        bandwidth_gbps=np.where(t_known > 0, total_b / np.maximum(t_known, 1), np.nan)[order],
        small_count=small[order].astype(np.int64))


def _memory_label(direction: int, pageable: int) -> str:
    if direction in (MemcpyKind.D2D, MemcpyKind.P2P):
        return "device"
    return {1: "pageable", 0: "pinned"}.get(pageable, "unknown")
