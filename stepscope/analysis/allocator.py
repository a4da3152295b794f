"""What an allocator snapshot says about memory: the segments now, the history, what is live at the peak.

``summarize(snapshot)`` (pure, vectorised over the trace entries):

* **segments** (the state at the dump): reserved / allocated / requested bytes, large and small
  segments, blocks by state, the largest segments;
* **history** per device: live bytes replayed from the trace (``alloc`` +size, ``free_completed``
  −size; as memory_viz's "active memory timeline"), its peak and when (ms after the first entry),
  and the curve at most ``points`` long (each point the maximum of its time bucket: the level of
  detail keeps the peaks);
* **sites**: allocation sites (first frame outside site-packages) by cumulative bytes allocated, and
  by bytes still live at the peak, each with one full stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.model.snapshot import ACTIONS, BLOCK_STATES, AllocatorSnapshot

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class DeviceHistory:
    device: int
    peak_live_bytes: int
    peak_ms: float  # after the device's first trace entry
    duration_ms: float
    time_ms: npt.NDArray[np.float64]  # the curve, after the first entry
    live_bytes: I64
    live_at_peak: list[dict[str, Any]]  # site, bytes, count, stack
    by_category: dict[str, int]  # bytes live at the peak per CATEGORIES name (those with any)


@dataclass(frozen=True)
class AllocatorSummary:
    source: str
    segments: dict[str, Any]
    largest_segments: list[dict[str, Any]]
    actions: dict[str, int]
    largest_alloc_bytes: int
    sites: list[dict[str, Any]]  # by cumulative bytes allocated
    history: list[DeviceHistory]
    repairs: dict[str, int]  # what the reader repaired in the history: what → entries

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "segments": self.segments, "largest_segments": self.largest_segments,
                "actions": self.actions, "largest_alloc_bytes": self.largest_alloc_bytes, "sites": self.sites,
                "repairs": self.repairs,
                "history": [{"device": h.device, "peak_live_bytes": h.peak_live_bytes, "peak_ms": h.peak_ms,
                             "duration_ms": h.duration_ms, "live_at_peak": h.live_at_peak,
                             "by_category": h.by_category,
                             "curve": {"time_ms": np.round(h.time_ms, 3).tolist(),
                                       "live_bytes": h.live_bytes.tolist()}} for h in self.history]}


def _segment_totals(snap: AllocatorSnapshot) -> dict[str, Any]:
    s, b = snap.segments, snap.blocks
    states = np.bincount(b["state"][b["state"] >= 0], minlength=len(BLOCK_STATES)) if len(b["state"]) else \
        np.zeros(len(BLOCK_STATES), np.int64)
    return {"count": len(s["address"]), "large": int(s["is_large"].sum()), "small": int((~s["is_large"]).sum()),
            "reserved_bytes": int(s["total_size"].sum()), "allocated_bytes": int(s["allocated_size"].sum()),
            "requested_bytes": int(s["requested_size"].sum()), "active_bytes": int(s["active_size"].sum()),
            "blocks": len(b["address"]), "blocks_by_state": dict(zip(BLOCK_STATES, states.tolist()))}


def _largest_segments(snap: AllocatorSnapshot, top: int) -> list[dict[str, Any]]:
    s = snap.segments
    order = np.argsort(-s["total_size"], kind="stable")[:top]
    return [{"device": int(s["device"][i]), "address": int(s["address"][i]), "total_bytes": int(s["total_size"][i]),
             "allocated_bytes": int(s["allocated_size"][i]), "blocks": int(s["blocks"][i]),
             "type": "large" if s["is_large"][i] else "small"} for i in order.tolist()]


def _by_site(snap: AllocatorSnapshot, rows: I64, top: int) -> list[dict[str, Any]]:
    """Allocation sites of the trace rows ``rows``: bytes, count and one stack, largest first."""
    t = snap.trace
    site, size = t["site"][rows], t["size"][rows]
    if not len(rows):
        return []
    ids, inv = np.unique(site, return_inverse=True)
    nbytes = np.bincount(inv, weights=size).astype(np.int64)
    count = np.bincount(inv)
    first = np.full(len(ids), len(rows), np.int64)
    np.minimum.at(first, inv, np.arange(len(rows)))
    text = [snap.frame_text(int(i)) for i in ids.tolist()]
    order = sorted(range(len(ids)), key=lambda i: (-int(nbytes[i]), text[i]))[:top]
    return [{"site": text[i], "bytes": int(nbytes[i]), "count": int(count[i]),
             "stack": snap.stack_text(int(t["stack"][rows[first[i]]]))} for i in order]


def freed_at(snap: AllocatorSnapshot) -> I64:
    """For each trace row, the row of the ``free_completed`` that freed its ``alloc`` (-1: none / not an alloc)."""
    t = snap.trace
    alloc, free = snap.action_mask("alloc"), snap.action_mask("free_completed")
    rows = np.flatnonzero(alloc | free)
    order = rows[np.lexsort((rows, t["addr"][rows], t["device"][rows]))]
    out = np.full(len(t["addr"]), -1, np.int64)
    nxt = order[1:]
    pair = alloc[order[:-1]] & free[nxt] & (t["addr"][order[:-1]] == t["addr"][nxt]) & \
        (t["device"][order[:-1]] == t["device"][nxt])
    out[order[:-1][pair]] = nxt[pair]
    return out


#: what an allocation holds, told by the Python frames of its stack (innermost first), the first rule
#: that matches deciding: made inside ``optimizer.step`` → optimizer state; inside ``backward`` →
#: gradients (and the backward pass's temporaries: the stack cannot tell them apart); by moving or
#: building a module (``Module._apply`` / ``to`` / ``cuda``, ``reset_parameters``, ``nn.init``,
#: ``load_state_dict``) → parameters; inside a module's forward → activations; any other frame →
#: other (inputs, user tensors); an entry recorded without frames → unknown
CATEGORIES = ("optimizer_state", "gradients", "parameters", "activations", "other", "unknown")
_RULES = (("optimizer_state", ("torch/optim/", "optimizer.py")),
          ("gradients", (" backward", " _engine_run_backward")),
          ("parameters", (" _apply", " reset_parameters", "torch/nn/init.py", " load_state_dict",
                          "torch/nn/parameter.py")),
          ("activations", (" _call_impl", " forward", " _wrapped_call_impl")))


def stack_category(stack: str) -> int:
    """The CATEGORIES index of an allocation with this stack text (see CATEGORIES)."""
    if not stack:
        return CATEGORIES.index("unknown")
    for name, marks in _RULES:
        if any(m in stack for m in marks):
            return CATEGORIES.index(name)
    return CATEGORIES.index("other")


def stack_categories(snap: AllocatorSnapshot) -> I64:
    """The CATEGORIES index of each stack (see CATEGORIES), from its frames' text: vectorised over frames."""
    f = snap.frames
    n = len(snap.stack_offsets) - 1
    if n <= 0:
        return np.zeros(0, np.int64)
    text = np.array([snap.frame_text(i) for i in range(len(f["line"]))], dtype=object)
    owner = np.repeat(np.arange(n), np.diff(snap.stack_offsets))
    code = np.full(n, CATEGORIES.index("other"), np.int64)
    for name, marks in reversed(_RULES):  # the first rule that matches wins: apply the last first
        hit = np.array([any(m in s for m in marks) for s in text.tolist()], dtype=np.bool_)
        code[np.unique(owner[hit[snap.stack_frames]])] = CATEGORIES.index(name)
    return code


def _by_category(snap: AllocatorSnapshot, rows: I64) -> dict[str, int]:
    """Bytes of the trace rows ``rows`` per category; each distinct frame is matched once."""
    code = np.append(stack_categories(snap), CATEGORIES.index("unknown"))
    cat = code[snap.trace["stack"][rows]]
    nbytes = np.bincount(cat, weights=snap.trace["size"][rows], minlength=len(CATEGORIES)).astype(np.int64)
    return {c: int(n) for c, n in zip(CATEGORIES, nbytes.tolist()) if n}


def _buckets(time_ms: npt.NDArray[np.float64], live: I64, lo_ms: float, hi_ms: float,
             points: int) -> tuple[npt.NDArray[np.float64], I64]:
    """At most ``points`` points of a curve between lo_ms and hi_ms: each the maximum of its time bucket
    (at the latest time in it), so that the peaks survive at every level of detail."""
    if len(live) <= points:
        return time_ms, live
    cell = np.clip(((time_ms - lo_ms) / max(hi_ms - lo_ms, 1e-9) * points).astype(np.int64), 0, points - 1)
    top = np.full(points, np.iinfo(np.int64).min)
    np.maximum.at(top, cell, live)
    at = np.full(points, -np.inf)
    np.maximum.at(at, cell, time_ms)
    keep = top > np.iinfo(np.int64).min
    return at[keep], top[keep]


def _curve(time_ms: npt.NDArray[np.float64], live: I64, points: int) -> tuple[npt.NDArray[np.float64], I64]:
    return _buckets(time_ms, live, 0.0, float(time_ms[-1]) if len(time_ms) else 0.0, points)


def curve_window(snap: AllocatorSnapshot, device: int, start_ms: float | None = None, end_ms: float | None = None,
                 points: int = 500) -> dict[str, Any]:
    """The device's live-bytes curve between start_ms and end_ms (ms after its first trace entry; the whole
    history by default) in at most ``points`` points, each the maximum of its time bucket: the level of
    detail a viewer asks for as it zooms (a server answers a window without sending the history), with
    the live bytes just before the window and how many raw points the window holds."""
    t = snap.trace
    dev = np.flatnonzero(t["device"] == device)
    rows = dev[np.isin(t["action"][dev], [ACTIONS.index("alloc"), ACTIONS.index("free_completed")])]
    live = np.cumsum(np.where(t["action"][rows] == ACTIONS.index("alloc"), t["size"][rows], -t["size"][rows]))
    time_ms = (t["time_us"][rows] - (int(t["time_us"][dev].min()) if len(dev) else 0)) / 1e3
    lo = 0.0 if start_ms is None else float(start_ms)
    hi = (float(time_ms[-1]) if len(time_ms) else 0.0) if end_ms is None else float(end_ms)
    inside = (time_ms >= lo) & (time_ms <= hi)
    earlier = np.flatnonzero(time_ms < lo)
    tm, lv = _buckets(time_ms[inside], live[inside], lo, hi, points)
    return {"device": device, "start_ms": lo, "end_ms": hi, "points_in_window": int(inside.sum()),
            "live_before_bytes": int(live[earlier[-1]]) if len(earlier) else 0,
            "time_ms": np.round(tm, 3).tolist(), "live_bytes": lv.tolist()}


def _replay(snap: AllocatorSnapshot, device: int, freed: I64) -> tuple[I64, I64, int, I64]:
    """(alloc/free rows of the device, live bytes after each, index of the peak in them, alloc rows live at it)."""
    t = snap.trace
    rows = np.flatnonzero((t["device"] == device) & (snap.action_mask("alloc") | snap.action_mask("free_completed")))
    delta = np.where(snap.action_mask("alloc")[rows], t["size"][rows], -t["size"][rows])
    live = np.cumsum(delta)
    k = int(np.argmax(live)) if len(live) else 0
    peak_row = int(rows[k]) if len(rows) else -1
    allocs = rows[snap.action_mask("alloc")[rows] & (rows <= peak_row)]
    return rows, live, k, allocs[(freed[allocs] < 0) | (freed[allocs] > peak_row)]


def live_at_peak(snap: AllocatorSnapshot, device: int) -> I64:
    """The trace rows of the allocations live at the device's peak of live bytes."""
    return _replay(snap, device, freed_at(snap))[3]


def _history(snap: AllocatorSnapshot, device: int, freed: I64, points: int, top: int) -> DeviceHistory:
    t = snap.trace
    rows, live, k, alive = _replay(snap, device, freed)
    dev_rows = np.flatnonzero(t["device"] == device)
    t0 = int(t["time_us"][dev_rows].min())
    time_ms = (t["time_us"][rows] - t0) / 1e3  # the reader keeps times in [0, 2^53): no overflow
    tm, lv = _curve(time_ms, live, points)
    return DeviceHistory(device, int(live[k]) if len(live) else 0, float(time_ms[k]) if len(live) else 0.0,
                         float((t["time_us"][dev_rows].max() - t0) / 1e3), tm, lv, _by_site(snap, alive, top),
                         _by_category(snap, alive))


def summarize(snap: AllocatorSnapshot, top: int = 10, points: int = 500) -> AllocatorSummary:
    """The snapshot's summary (see the module docstring)."""
    t = snap.trace
    codes = np.bincount(t["action"][t["action"] >= 0], minlength=len(ACTIONS)) if len(t["action"]) else \
        np.zeros(len(ACTIONS), np.int64)
    alloc_rows = np.flatnonzero(snap.action_mask("alloc"))
    freed = freed_at(snap)
    return AllocatorSummary(
        source=snap.source, segments=_segment_totals(snap), largest_segments=_largest_segments(snap, top),
        actions={a: int(n) for a, n in zip(ACTIONS, codes.tolist()) if n},
        largest_alloc_bytes=int(t["size"][alloc_rows].max()) if len(alloc_rows) else 0,
        sites=_by_site(snap, alloc_rows, top),
        history=[_history(snap, int(d), freed, points, top) for d in np.unique(t["device"]).tolist()],
        repairs=dict(snap.repairs))
