"""Memory curves (what ``GET /api/v1/runs/{id}/memory`` answers and the standalone report embeds),
downsampled so a big trace stays a small answer.

A curve is computed from the trace's allocator events:
allocated = the recorded ``total_allocated`` when present, else the running sum of ±bytes;
reserved = the recorded ``total_reserved`` when present. Either way at most ``max_points`` points
per curve survive: the x range is cut into ``max_points / 2`` buckets and each keeps its min and max
(so peaks are never lost).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis.memory import device_label
from stepscope.model.trace import Trace
from stepscope.model.uniq import unique, unique_rows


@dataclass(frozen=True)
class MemoryCurve:
    """One device's memory over time (ms from the rank's first memory event, on every device: the
    rank's curves share one time axis; MiB)."""

    device: str
    ts_ms: tuple[float, ...]
    allocated_mb: tuple[float, ...]
    reserved_mb: tuple[float, ...] | None = None

    @property
    def peak_allocated_mb(self) -> float:
        return max(self.allocated_mb, default=0.0)


def downsample_minmax(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64],
                      max_points: int) -> npt.NDArray[np.intp]:
    """Indices (sorted) of at most ``max_points`` points keeping each bucket's min and max of y (``x``
    sorted): per bucket, the first point at its minimum and the last at its maximum."""
    n = len(x)
    if n <= max_points:
        return np.arange(n)
    buckets = max(max_points // 2, 1)
    edges = np.linspace(x[0], x[-1], buckets + 1)
    b = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, buckets - 1)
    # x is sorted, so each bucket is one run of points: its min and max without sorting y
    new = np.r_[True, b[1:] != b[:-1]]
    starts = np.flatnonzero(new)
    seg = np.cumsum(new) - 1
    lo = np.flatnonzero(y == np.minimum.reduceat(y, starts)[seg])
    hi = np.flatnonzero(y == np.maximum.reduceat(y, starts)[seg])
    first_lo = lo[np.r_[True, seg[lo][1:] != seg[lo][:-1]]]  # the first point at the bucket's min
    last_hi = hi[np.r_[seg[hi][1:] != seg[hi][:-1], True]]  # the last point at its max
    return unique(np.concatenate([first_lo, last_hi]))


def memory_from_trace(trace: Trace, rank: int, max_points: int = 2000) -> list[MemoryCurve]:
    """One curve per device of ``rank`` that has allocator events (GPU devices first)."""
    mem = trace.memory
    out: list[MemoryCurve] = []
    rows = np.flatnonzero(mem["rank"] == rank)
    if len(rows) == 0:
        return out
    origin = int(mem["ts_ns"][rows].min())  # one origin for every device, so their peaks line up
    keys = unique_rows(np.stack([mem["device_type"][rows], mem["device"][rows]], axis=1))[0]
    for dtype, dev in sorted(keys.tolist(), key=lambda k: (k[0] != 1, k[1])):
        r = rows[(mem["device_type"][rows] == dtype) & (mem["device"][rows] == dev)]
        r = r[np.argsort(mem["ts_ns"][r], kind="stable")]
        curve = _curve(mem, r, max_points, device_label(int(dtype), int(dev)), origin)
        if curve is not None:
            out.append(curve)
    return out


def _curve(mem: Any, r: npt.NDArray[np.intp], max_points: int, label: str, origin: int) -> MemoryCurve | None:
    ts = mem["ts_ns"][r]
    alloc = mem["total_allocated"][r].astype(np.float64)
    if (alloc < 0).any():
        alloc = np.cumsum(mem["bytes"][r].astype(np.float64))
    reserved = mem["total_reserved"][r].astype(np.float64)
    has_reserved = bool((reserved >= 0).all()) and len(r) > 0
    if len(r) < 2:
        return None
    x = (ts - origin).astype(np.float64) / 1e6
    keep = downsample_minmax(x, alloc, max_points)
    if has_reserved:
        keep = np.union1d(keep, downsample_minmax(x, reserved, max_points))
        if len(keep) > max_points:
            keep = keep[np.linspace(0, len(keep) - 1, max_points).astype(np.intp)]
    mib = 1.0 / 2**20
    return MemoryCurve(label, tuple(np.round(x[keep], 3).tolist()), tuple((alloc[keep] * mib).tolist()),
                       tuple((reserved[keep] * mib).tolist()) if has_reserved else None)
