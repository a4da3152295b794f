"""An allocator snapshot joined to the Kineto trace of the same run: what was running when the memory
live at the peak was allocated.

``join(snapshot, trace)`` (pure, vectorised):

* **alignment** — the snapshot's ``time_us`` is wall-clock µs since the Unix epoch; a trace's event
  is at ``ts_ns + time_base_ns`` (``baseTimeNanoseconds``) when the trace records its base, or at
  ``ts_ns`` when its ``ts`` are themselves epoch µs (old Kineto). The shift between the two clocks is
  taken, in this order, from an explicit ``offset_us``; from the trace's ``[memory]`` events (each
  allocation the profiler saw is matched to the snapshot's ``alloc`` of the same address and size:
  the most common time difference, 1 ms bins, refined to the median of the pairs within 1 ms of
  the bin's centre); or from the wall clocks. Nothing else can be aligned: a trace without a time base whose
  ``ts`` are not epoch µs and without ``[memory]`` events is refused (give ``offset_us``).
* **attribution** — each allocation live at the peak gets the op of its matched ``[memory]`` event
  (the profiler's innermost host op around the allocation: exact) or else the innermost host op
  (CPU op or annotation, any thread, the latest started) that covers its aligned time; and the
  ``ProfilerStep#N`` window it falls in. Allocations before or after the trace are ``outside``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis.allocator import live_at_peak
from stepscope.errors import UsageError
from stepscope.model.masks import any_of
from stepscope.model.schema import EventKind
from stepscope.model.snapshot import AllocatorSnapshot
from stepscope.model.trace import Trace

I64 = npt.NDArray[np.int64]
#: a [memory] event and a snapshot alloc of the same address and size this close (after the shift) are one allocation
MATCH_TOLERANCE_NS = 1_000_000
#: epoch ns below this (2001-09-09) are not wall-clock
_EPOCH_FLOOR_NS = 1_000_000_000 * 1_000_000_000
_HOST_OPS = (EventKind.CPU_OP, EventKind.USER_ANNOTATION)


@dataclass(frozen=True)
class Alignment:
    method: str  # "offset" | "memory-events" | "wall-clock"
    shift_ns: int  # trace ts_ns = snapshot time_us * 1000 - shift_ns
    matched: int  # snapshot allocations matched to [memory] events at this shift
    trace_allocs: int  # [memory] allocation events on the GPU in the trace
    spread_ns: int  # the largest |time difference - shift| among the matched pairs

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "shift_ns": self.shift_ns, "matched": self.matched,
                "trace_allocs": self.trace_allocs, "spread_ns": self.spread_ns}


@dataclass(frozen=True)
class JoinedPeak:
    device: int
    alignment: Alignment
    live_bytes: int  # live at the peak, in all
    outside_bytes: int  # of which allocated before the trace's first or after its last event
    by_op: list[dict[str, Any]]  # op, bytes, count, matched (how many by their [memory] event)
    by_step: list[dict[str, Any]]  # step (-1: in the trace but in no ProfilerStep), bytes, count

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "alignment": self.alignment.to_dict(), "live_bytes": self.live_bytes,
                "outside_bytes": self.outside_bytes, "by_op": self.by_op, "by_step": self.by_step}


def _gpu_allocs(trace: Trace) -> tuple[I64, I64, I64, I64]:
    """Rows, addr, bytes, ts_ns of the trace's GPU [memory] allocation events."""
    m = trace.memory
    rows = np.flatnonzero((np.asarray(m["bytes"]) > 0) & (np.asarray(m["device_type"]) == 1))
    return rows, np.asarray(m["addr"])[rows], np.asarray(m["bytes"])[rows], np.asarray(m["ts_ns"])[rows]


def _pairs(snap: AllocatorSnapshot, trace: Trace) -> tuple[I64, I64, I64]:
    """(snapshot row, trace memory row, snapshot ns - trace ns) of every alloc pair with the same address and size."""
    t = snap.trace
    s_rows = np.flatnonzero(snap.action_mask("alloc"))
    m_rows, m_addr, m_bytes, m_ts = _gpu_allocs(trace)
    if not len(s_rows) or not len(m_rows):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    _, inv = np.unique(np.concatenate([np.stack([t["addr"][s_rows], t["size"][s_rows]], 1),
                                       np.stack([m_addr, m_bytes], 1)]), axis=0, return_inverse=True)
    s_key, m_key = inv[:len(s_rows)].ravel(), inv[len(s_rows):].ravel()
    order = np.argsort(s_key, kind="stable")
    lo = np.searchsorted(s_key[order], m_key, "left")
    hi = np.searchsorted(s_key[order], m_key, "right")
    n = np.minimum(hi - lo, 64)  # an address reused many times: its first 64 allocations suffice for the shift
    which = np.repeat(np.arange(len(m_rows)), n)
    s_pick = s_rows[order[np.repeat(lo, n) + np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)]]
    return s_pick, m_rows[which], t["time_us"][s_pick] * 1000 - m_ts[which]


def _wall_shift(trace: Trace) -> int | None:
    base = trace.rank_info(trace.rank_ids[0]).time_base_ns if trace.rank_ids else 0
    ts = np.asarray(trace.events["ts_ns"])
    first = int(ts.min()) if len(ts) else 0
    if base + first >= _EPOCH_FLOOR_NS:
        return base
    return None


def align(snap: AllocatorSnapshot, trace: Trace, offset_us: int | None = None) -> Alignment:
    """The shift between the snapshot's and the trace's clocks (see the module docstring)."""
    s_pick, _, diff = _pairs(snap, trace)
    n_trace = len(_gpu_allocs(trace)[0])

    def matched(shift: int) -> tuple[int, int]:
        ok = np.abs(diff - shift) <= MATCH_TOLERANCE_NS
        return len(np.unique(s_pick[ok])), int(np.abs(diff[ok] - shift).max()) if ok.any() else 0

    if offset_us is not None:
        n, spread = matched(offset_us * 1000)
        return Alignment("offset", offset_us * 1000, n, n_trace, spread)
    if len(diff):
        bins, counts = np.unique(diff // MATCH_TOLERANCE_NS, return_counts=True)  # integer ns: no float rounding
        mode = int(bins[np.lexsort((bins, -counts))[0]]) * MATCH_TOLERANCE_NS + MATCH_TOLERANCE_NS // 2
        near = np.sort(diff[np.abs(diff - mode) <= MATCH_TOLERANCE_NS])
        shift = int(near[(len(near) - 1) // 2])  # the (lower) median
        n, spread = matched(shift)
        if n >= min(3, n_trace):
            return Alignment("memory-events", shift, n, n_trace, spread)
    wall = _wall_shift(trace)
    if wall is None:
        raise UsageError(f"cannot align {snap.source} with {trace.source}: the trace records no "
                         "baseTimeNanoseconds, its timestamps are not wall-clock and no [memory] event matches an "
                         "allocation of the snapshot; give --offset-us (snapshot time_us minus trace ts)")
    n, spread = matched(wall)
    return Alignment("wall-clock", wall, n, n_trace, spread)


def _covering_op(trace: Trace, ts_ns: I64) -> I64:
    """For each time, the innermost host op covering it (the latest started; -1: none)."""
    ev = trace.events
    host = np.flatnonzero(any_of(np.asarray(ev["kind"]), [int(k) for k in _HOST_OPS]))
    start, end = np.asarray(ev["ts_ns"])[host], np.asarray(ev["ts_ns"])[host] + np.asarray(ev["dur_ns"])[host]
    names, inv = np.unique(np.asarray(ev["name"])[host], return_inverse=True)
    steps = np.array([trace.strings[int(n)].startswith("ProfilerStep#") for n in names.tolist()],
                     dtype=np.bool_)[inv.ravel()] if len(host) else np.zeros(0, np.bool_)
    host, start, end = host[~steps], start[~steps], end[~steps]
    order = np.lexsort((-end, start))  # by start; of equal starts the outer (longer) first
    host, start, end = host[order], start[order], end[order]
    out = np.full(len(ts_ns), -1, np.int64)
    k = np.searchsorted(start, ts_ns, "right") - 1  # the latest started op at or before each time
    pos = np.asarray(ev["parent"])
    row_of = np.full(len(ev["ts_ns"]), -1, np.int64)
    row_of[host] = np.arange(len(host))
    cur = np.where(k >= 0, host[np.maximum(k, 0)], -1)
    ev_ts, ev_end = np.asarray(ev["ts_ns"]), np.asarray(ev["ts_ns"]) + np.asarray(ev["dur_ns"])
    for _ in range(256):  # up the parent chain until an op covers the time (the chain is at most the nesting depth)
        live = (cur >= 0) & (out < 0)
        if not live.any():
            break
        hit = live & (ev_ts[np.maximum(cur, 0)] <= ts_ns) & (ts_ns < ev_end[np.maximum(cur, 0)]) & \
            (row_of[np.maximum(cur, 0)] >= 0)
        out[hit] = cur[hit]
        up = live & ~hit
        cur = np.where(up, pos[np.maximum(cur, 0)].astype(np.int64), -1)
    return out


def _step_of(trace: Trace, ts_ns: I64) -> I64:
    st = trace.steps
    start, end, num = np.asarray(st["start_ns"]), np.asarray(st["host_end_ns"]), np.asarray(st["step"])
    order = np.argsort(start, kind="stable")
    k = np.searchsorted(start[order], ts_ns, "right") - 1
    i = order[np.maximum(k, 0)] if len(order) else np.zeros(len(ts_ns), np.int64)
    inside = (k >= 0) & (ts_ns < end[i]) if len(order) else np.zeros(len(ts_ns), np.bool_)
    return np.where(inside, num[i] if len(order) else -1, -1).astype(np.int64)


def _grouped(keys: npt.NDArray[Any], size: I64, extra: I64 | None = None) -> list[tuple[Any, int, int, int]]:
    uniq, inv = np.unique(keys, return_inverse=True)
    nbytes = np.bincount(inv, weights=size, minlength=len(uniq)).astype(np.int64)
    count = np.bincount(inv, minlength=len(uniq))
    more = np.bincount(inv, weights=extra, minlength=len(uniq)).astype(np.int64) if extra is not None else count * 0
    order = np.lexsort((np.arange(len(uniq)), -nbytes))
    return [(uniq[i], int(nbytes[i]), int(count[i]), int(more[i])) for i in order.tolist()]


def join(snap: AllocatorSnapshot, trace: Trace, offset_us: int | None = None, top: int = 10) -> list[JoinedPeak]:
    """Per device, the allocations live at the peak attributed to the trace's ops and steps."""
    alignment = align(snap, trace, offset_us)
    t = snap.trace
    s_pick, m_pick, diff = _pairs(snap, trace)
    ok = np.abs(diff - alignment.shift_ns) <= MATCH_TOLERANCE_NS
    mem_op = np.full(len(t["addr"]), -1, np.int64)
    mem_op[s_pick[ok][::-1]] = np.asarray(trace.memory["op"])[m_pick[ok][::-1]]  # the first match wins
    was_matched = np.zeros(len(t["addr"]), np.bool_)
    was_matched[s_pick[ok]] = True
    ts = np.asarray(trace.events["ts_ns"])
    lo, hi = (int(ts.min()), int((ts + np.asarray(trace.events["dur_ns"])).max())) if len(ts) else (0, -1)
    out = []
    for device in np.unique(t["device"]).tolist():
        rows = live_at_peak(snap, int(device))
        at = t["time_us"][rows] * 1000 - alignment.shift_ns
        op = np.where(mem_op[rows] >= 0, mem_op[rows], _covering_op(trace, at))
        inside = (at >= lo) & (at <= hi)
        size = t["size"][rows]
        ids, inv = np.unique(np.where(op >= 0, np.asarray(trace.events["name"])[np.maximum(op, 0)], -1),
                             return_inverse=True)
        names = np.array([trace.strings[i] if i >= 0 else "(no op)" for i in ids.tolist()], dtype=object)[inv.ravel()]
        names[~inside] = "(outside the trace)"
        by_op = [{"op": str(k), "bytes": b, "count": c, "matched": m}
                 for k, b, c, m in _grouped(names, size, was_matched[rows].astype(np.int64))[:top]]
        step = np.where(inside, _step_of(trace, at), -2)
        by_step = [{"step": int(k), "bytes": b, "count": c} for k, b, c, _ in _grouped(step[inside], size[inside])]
        out.append(JoinedPeak(int(device), alignment, int(size.sum()), int(size[~inside].sum()), by_op, by_step))
    return out
