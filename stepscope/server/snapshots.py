"""Allocator snapshots served: aggregated on the server, so the browser never holds the snapshot.

A ``torch.cuda.memory._dump_snapshot`` pickle under the served root is a run of kind ``snapshot``
(:func:`is_snapshot` sniffs its head without unpickling anything). It is read once
(:func:`stepscope.ingest.snapshot.read_snapshot`, the restricted reader) and kept as columns; the
browser then asks for

* the summary (``stepscope memory --json``: segments, peak, live at the peak by site and category,
  a 500-point curve), a few tens of kB whatever the snapshot's size;
* a window of the live-bytes curve (:func:`stepscope.analysis.allocator.curve_window`: at most
  ``points`` points, each its bucket's maximum): zooming in asks for a finer window (level of detail);
* the allocations live at the peak, largest first, one page at a time, each with its Python stack.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis.allocator import CATEGORIES, curve_window, live_at_peak, stack_categories, summarize
from stepscope.model.snapshot import AllocatorSnapshot
from stepscope.server.discover import RunEntry
from stepscope.server.params import ApiError
from stepscope.server.results import dumps

#: summary rows per table; default and largest curve points; largest allocations page
TOP = 10
CURVE_POINTS = 1000
MAX_POINTS = 5000
MAX_PAGE = 200


@dataclass(frozen=True)
class SnapshotResults:
    """One snapshot read and summarised: ``doc`` the summary's JSON, ``summary`` the runs list's headline."""

    entry: RunEntry
    snap: AllocatorSnapshot
    doc: bytes
    summary: dict[str, Any]
    devices: tuple[int, ...]
    peak_rows: dict[int, npt.NDArray[np.int64]]  # per device: trace rows live at its peak, largest first
    categories: npt.NDArray[np.int64]  # CATEGORIES index per stack id, "unknown" appended for -1


def analyse_snapshot(entry: RunEntry) -> SnapshotResults:
    """Read the snapshot (the restricted reader: a snapshot is untrusted) and compute its summary (once per
    served snapshot, or for a standalone report)."""
    from stepscope.ingest.snapshot import read_snapshot

    snap = read_snapshot(entry.path)
    summary = summarize(snap, top=TOP)
    doc = summary.to_dict()
    doc["source"] = entry.label  # the served root's relative path: the server's paths stay on the server
    devices = tuple(int(h.device) for h in summary.history)
    peaks: dict[int, npt.NDArray[np.int64]] = {}
    for d in devices:
        rows = live_at_peak(snap, d)
        peaks[d] = rows[np.lexsort((rows, -snap.trace["size"][rows]))]
    doc["devices"] = [{"device": d, "live_at_peak_allocations": len(peaks[d])} for d in devices]
    head = max(summary.history, key=lambda h: h.peak_live_bytes, default=None)
    line = {"snapshot": True, "ranks": [], "devices": list(devices), "findings": 0,
            "peak_live_bytes": head.peak_live_bytes if head else 0,
            "reserved_bytes": summary.segments["reserved_bytes"]}
    cats = np.append(stack_categories(snap), CATEGORIES.index("unknown"))
    return SnapshotResults(entry, snap, dumps(doc), line, devices, peaks, cats)


def device(res: SnapshotResults, q: dict[str, str]) -> int:
    """The ``device`` query parameter (the first device with a history by default), checked."""
    if not res.devices:
        raise ApiError(404, "this snapshot has no allocation history (record it with _record_memory_history)")
    raw = q.get("device")
    if raw is None:
        return res.devices[0]
    if not raw.lstrip("-").isdigit() or int(raw) not in res.devices:
        raise ApiError(404, f"no device {raw[:16]!r} in this snapshot's history (have {list(res.devices)})")
    return int(raw)


def _ms(q: dict[str, str], name: str) -> float | None:
    raw = q.get(name)
    if raw is None:
        return None
    try:
        v = float(raw)
    except ValueError:
        raise ApiError(400, f"{name} must be a number of ms, got {raw[:32]!r}") from None
    if not np.isfinite(v):
        raise ApiError(400, f"{name} must be finite")
    return v


def curve(res: SnapshotResults, q: dict[str, str], points: int) -> bytes:
    """One window of the device's live-bytes curve (``curve_window``)."""
    start, end = _ms(q, "start_ms"), _ms(q, "end_ms")
    if start is not None and end is not None and end <= start:
        raise ApiError(400, "end_ms must be greater than start_ms")
    return dumps(curve_window(res.snap, device(res, q), start, end, points))


def peak_windows(res: SnapshotResults, dev: int, points: int = 800) -> list[dict[str, Any]]:
    """The device's whole curve, then windows centred on its peak (a quarter, a sixteenth, the 2 % that
    the view's "zoom to the peak" asks for, 1/256 of the history): what a standalone report carries."""
    h = next(x for x in summarize_history(res) if x["device"] == dev)
    full = max(float(h["duration_ms"]), 0.01)
    out = [curve_window(res.snap, dev, 0.0, full, points)]
    for frac in (1 / 4, 1 / 16, 0.02, 1 / 256):
        span = full * frac
        start = max(0.0, min(float(h["peak_ms"]) - span / 2, full - span))
        out.append(curve_window(res.snap, dev, start, start + span, points))
    return out


def summarize_history(res: SnapshotResults) -> list[dict[str, Any]]:
    """The summary's per-device history (``stepscope memory --json``'s ``history``)."""
    history: list[dict[str, Any]] = json.loads(res.doc)["history"]
    return history


def _frames(snap: AllocatorSnapshot, sid: int) -> list[str]:
    if sid < 0:
        return []
    a, b = int(snap.stack_offsets[sid]), int(snap.stack_offsets[sid + 1])
    return [snap.frame_text(int(f)) for f in snap.stack_frames[a:b].tolist()]


def allocations(res: SnapshotResults, dev: int, offset: int, limit: int) -> bytes:
    """One page of the allocations live at the device's peak, largest first, each with its stack."""
    return dumps(allocations_page(res, dev, offset, limit))


def allocations_page(res: SnapshotResults, dev: int, offset: int, limit: int) -> dict[str, Any]:
    """:func:`allocations` as an object."""
    snap, t = res.snap, res.snap.trace
    rows = res.peak_rows[dev]
    page = rows[offset:offset + limit]
    t0 = int(t["time_us"][t["device"] == dev].min())
    items = [{"row": int(r), "bytes": int(t["size"][r]), "addr": int(t["addr"][r]),
              "time_ms": round((int(t["time_us"][r]) - t0) / 1e3, 3), "site": snap.frame_text(int(t["site"][r])),
              "category": CATEGORIES[int(res.categories[int(t["stack"][r])])],
              "stack": _frames(snap, int(t["stack"][r]))} for r in page.tolist()]
    return {"device": dev, "total": len(rows), "total_bytes": int(t["size"][rows].sum()),
            "offset": offset, "limit": limit, "allocations": items}
