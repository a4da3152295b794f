"""Timeline windows: zoom and pan over one rank, exact events when zoomed in, aggregates when out.

:func:`timeline_window` answers "what happens on rank R between ``start_ns`` and ``end_ns``": the
rank's tracks (CPU threads, GPU streams), and either

* ``mode == "events"``: every event overlapping the window (a long event that began before it
  included) when there are at most ``max_items`` of them, with the launch → GPU flows; or
* ``mode == "aggregate"``: per track, ``buckets`` equal time buckets with the busy fraction (union
  of the track's events / bucket width), the number of events touching the bucket, and the
  dominant kind and name by (self) time — the Perfetto "aggregate at low zoom" idea;

plus, in both modes, the steps overlapping the window and derived counters per bucket: GPU
utilization per device (union of kernel time / bucket width, %) and queue length per stream
(GPU activities launched — launch call started — and not finished; max and time-weighted mean).

Cost: the first call on a rank builds an index (:mod:`stepscope.analysis.timeline_index`,
memoised per trace and rank); each window is then a few binary searches plus work proportional to
the events in the window (aggregates are vectorised over them, never a per-event Python loop).

Dominance weights: an event's weight in a bucket is its overlap with the bucket × ``self_ns / dur_ns``
(exact for leaves and GPU work; for a parent it assumes its children are spread evenly).

``TimelineWindow.to_dict()`` (times are int ns, as in the model; names decoded)::

    {"rank": 0, "start_ns": int, "end_ns": int, "mode": "events" | "aggregate",
     "event_count": int,                       # events overlapping the window
     "max_items": int,
     "bucket_edges_ns": [int, ...],            # buckets + 1 edges (aggregate and counters)
     "tracks": [{"id": int, "label": str, "kind": "cpu_thread" | "gpu_stream" | "other",
                 "device": int | null, "stream": int | null, "pid": str, "tid": str,
                 "max_depth": int}],
     "events": {"row": [int], "track": [int], "ts_ns": [int], "dur_ns": [int], "kind": [str],
                "name": [str], "depth": [int], "step": [int],
                "op": [int]} | null,                  # mode "events"; op: launching CPU op row, -1
     "aggregate": [{"track": int, "busy_frac": [float], "count": [int],
                    "kind": [str | null], "name": [str | null]}] | null,  # mode "aggregate"
     "steps": [{"step": int, "start_ns": int, "end_ns": int, "host_end_ns": int}],
     "flows": [{"from_row": int, "to_row": int, "from_track": int, "to_track": int,
                "from_ts_ns": int, "to_ts_ns": int}],                     # mode "events" only
     "counters": {"gpu_util_pct": [{"device": int, "values": [float]}],
                  "queue_length": [{"track": int, "stream": int, "max": [int], "mean": [float]}]}}

``kind`` strings are :class:`~stepscope.model.schema.EventKind` names in lower case ("kernel",
"cpu_op", "runtime" ...). Event columns are in (track, depth, ts) order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis import timeline_index as tix
from stepscope.analysis._memo import per_rank
from stepscope.analysis._timeline_sample import sampled_cells
from stepscope.analysis.breakdown import tb_step_windows
from stepscope.model.schema import EventKind, TrackKind
from stepscope.model.strings import StringPool
from stepscope.model.trace import Trace
from stepscope.model.uniq import unique

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
KIND_NAMES = tuple(k.name.lower() for k in EventKind)
_TRACK_KINDS = {int(k): k.name.lower() for k in TrackKind}
_NK = len(EventKind)
#: above this many events in a window, aggregate cells come from binary searches, not from every event
SAMPLE_ABOVE = 100_000


@dataclass(frozen=True)
class TimelineTrack:
    """One lane: a CPU thread or a GPU stream of the rank."""

    id: int
    label: str
    kind: str  # cpu_thread | gpu_stream | other
    device: int | None
    stream: int | None
    pid: str
    tid: str
    max_depth: int


@dataclass(frozen=True)
class Aggregate:
    """Per (track, bucket) cells; arrays are (tracks × buckets), rows in ``TimelineWindow.tracks`` order."""

    busy_frac: F64
    count: I64
    kind: I64  # EventKind code, -1 for an empty cell
    name: I64  # string id, -1 for an empty cell


@dataclass(frozen=True)
class Counters:
    """Derived counters per bucket: GPU utilization per device, queue length per stream."""

    devices: I64
    gpu_util_pct: F64  # devices × buckets
    queue_tracks: I64
    queue_streams: I64
    queue_max: I64  # queue tracks × buckets
    queue_mean: F64


@dataclass(frozen=True)
class TimelineWindow:
    """One window of one rank's timeline (module docstring: modes, columns, JSON shape)."""

    rank: int
    start_ns: int
    end_ns: int
    mode: str  # events | aggregate
    event_count: int
    max_items: int
    edges_ns: I64
    tracks: tuple[TimelineTrack, ...]
    events: dict[str, npt.NDArray[Any]] | None  # row, track, ts_ns, dur_ns, kind, name, depth, step, op
    aggregate: Aggregate | None
    steps: dict[str, I64]  # step, start_ns, end_ns, host_end_ns
    flows: dict[str, I64]  # from_row, to_row, from_track, to_track, from_ts_ns, to_ts_ns
    counters: Counters
    strings: StringPool = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (see the module docstring for the shape)."""
        return {"rank": self.rank, "start_ns": self.start_ns, "end_ns": self.end_ns, "mode": self.mode,
                "event_count": self.event_count, "max_items": self.max_items,
                "bucket_edges_ns": self.edges_ns.tolist(),
                "tracks": [dict(t.__dict__) for t in self.tracks],
                "events": None if self.events is None else self._events_dict(self.events),
                "aggregate": None if self.aggregate is None else self._aggregate_dict(self.aggregate),
                "steps": _records(self.steps), "flows": _records(self.flows),
                "counters": self._counters_dict()}

    def _events_dict(self, ev: dict[str, npt.NDArray[Any]]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {k: v.tolist() for k, v in ev.items()}
        out["kind"] = [KIND_NAMES[k] if 0 <= k < _NK else "other" for k in out["kind"]]
        out["name"] = self.strings.decode(ev["name"]).tolist()
        return out

    def _aggregate_dict(self, ag: Aggregate) -> list[dict[str, Any]]:
        names = self.strings.decode(np.maximum(ag.name, -1)).astype(object)
        names[ag.name < 0] = None
        kinds = np.array([*KIND_NAMES, None], dtype=object)[np.where(ag.kind < 0, _NK, ag.kind)]
        return [{"track": t.id, "busy_frac": np.round(ag.busy_frac[i], 4).tolist(),
                 "count": ag.count[i].tolist(), "kind": kinds[i].tolist(), "name": names[i].tolist()}
                for i, t in enumerate(self.tracks)]

    def _counters_dict(self) -> dict[str, Any]:
        c = self.counters
        util = [{"device": int(d), "values": np.round(c.gpu_util_pct[i], 2).tolist()}
                for i, d in enumerate(c.devices.tolist())]
        queue = [{"track": int(t), "stream": int(c.queue_streams[i]), "max": c.queue_max[i].tolist(),
                  "mean": np.round(c.queue_mean[i], 3).tolist()} for i, t in enumerate(c.queue_tracks.tolist())]
        return {"gpu_util_pct": util, "queue_length": queue}


def _records(cols: dict[str, I64]) -> list[dict[str, int]]:
    keys = list(cols)
    return [dict(zip(keys, vals)) for vals in zip(*(cols[k].tolist() for k in keys))]


def timeline_window(trace: Trace, rank: int, start_ns: int, end_ns: int, *, max_items: int = 4000,
                    buckets: int = 500) -> TimelineWindow:
    """The window ``[start_ns, end_ns)`` of ``rank``'s timeline (see the module docstring)."""
    if end_ns <= start_ns:
        raise ValueError(f"empty window [{start_ns}, {end_ns})")
    a, b = int(start_ns), int(end_ns)
    buckets = max(1, min(int(buckets), b - a))
    ix = tix.rank_index(trace, rank)
    edges = tix.bucket_edges(a, b, buckets)
    lo, hi = tix.window_ranges(ix, a, b)
    upper = int((hi - lo).sum())
    if upper > max(max_items, SAMPLE_ABOVE) and len(ix.key_ts):
        return _window(trace, ix, edges, max_items, upper, None, _sampled_aggregate(ix, edges))
    pos = tix.window_positions(ix, a, b)
    if len(pos) <= max_items:
        return _window(trace, ix, edges, max_items, len(pos), _events(trace, ix, pos), None)
    return _window(trace, ix, edges, max_items, len(pos), None, _aggregate(ix, pos, edges))


def _window(trace: Trace, ix: tix.RankIndex, edges: I64, max_items: int, count: int,
            events: dict[str, npt.NDArray[Any]] | None, aggregate: Aggregate | None) -> TimelineWindow:
    a, b = int(edges[0]), int(edges[-1])
    return TimelineWindow(
        rank=ix.rank, start_ns=a, end_ns=b, mode="events" if events is not None else "aggregate",
        event_count=count, max_items=max_items, edges_ns=edges, tracks=_tracks(trace, ix.rank),
        events=events, aggregate=aggregate, steps=_steps(trace, ix.rank, a, b),
        flows=_flows(trace, ix, events["row"]) if events is not None else _no_flows(),
        counters=_counters(trace, ix, edges), strings=trace.strings)


@per_rank
def _tracks(trace: Trace, rank: int) -> tuple[TimelineTrack, ...]:
    """The rank's lanes, labelled (memoised: the same for every window)."""
    tr, s = trace.tracks, trace.strings
    ix = tix.rank_index(trace, rank)
    depth = np.zeros(len(ix.tracks), np.int64)
    if len(ix.rows):
        np.maximum.at(depth, ix.track_pos, trace.events["depth"][ix.rows].astype(np.int64))
    out = []
    for i, t in enumerate(ix.tracks.tolist()):  # per track
        gpu = int(tr["kind"][t]) == TrackKind.GPU_STREAM
        dev, stream = int(tr["device"][t]), int(tr["stream"][t])
        tid = s[int(tr["tid"][t])]
        label = f"GPU {dev} · stream {stream}" if gpu else (s[int(tr["name"][t])] or f"thread {tid}")
        out.append(TimelineTrack(id=t, label=label, kind=_TRACK_KINDS.get(int(tr["kind"][t]), "other"),
                                 device=dev if dev >= 0 else None, stream=stream if stream >= 0 else None,
                                 pid=s[int(tr["pid"][t])], tid=tid, max_depth=int(depth[i])))
    return tuple(out)


def _events(trace: Trace, ix: tix.RankIndex, pos: I64) -> dict[str, npt.NDArray[Any]]:
    ev = trace.events
    rows = ix.rows[pos]
    return {"row": rows, "track": ev["track"][rows].astype(np.int64), "ts_ns": ev["ts_ns"][rows],
            "dur_ns": ev["dur_ns"][rows], "kind": ev["kind"][rows].astype(np.int64),
            "name": ev["name"][rows].astype(np.int64), "depth": ev["depth"][rows].astype(np.int64),
            "step": ev["step"][rows].astype(np.int64), "op": ev["op"][rows].astype(np.int64)}


def _aggregate(ix: tix.RankIndex, pos: I64, edges: I64) -> Aggregate:
    """Busy fraction, event count and dominant kind / name per (track, bucket), from every event."""
    n_b, n_t = len(edges) - 1, len(ix.tracks)
    cell, name, kind, weight = _pieces(ix, pos, edges)
    count = np.bincount(cell, minlength=n_t * n_b)
    by_kind = np.bincount(cell * _NK + kind, weights=weight, minlength=n_t * n_b * _NK).reshape(-1, _NK)
    dom_kind = np.where(count > 0, by_kind.argmax(axis=1), -1)
    dom_name = _dominant_names(cell, name, weight, n_t * n_b)
    return Aggregate(busy_frac=_busy(ix, edges), count=count.reshape(n_t, n_b).astype(np.int64),
                     kind=dom_kind.reshape(n_t, n_b), name=dom_name.reshape(n_t, n_b))


def _sampled_aggregate(ix: tix.RankIndex, edges: I64) -> Aggregate:
    """The same cells for very large windows, by binary searches only (:mod:`._timeline_sample`)."""
    count, kind, name = sampled_cells(ix, edges)
    return Aggregate(busy_frac=_busy(ix, edges), count=count, kind=kind, name=name)


def _busy(ix: tix.RankIndex, edges: I64) -> F64:
    """Exact busy fraction per (track, bucket): the track's union of events over the bucket width."""
    busy = np.zeros((len(ix.tracks), len(edges) - 1))
    widths = np.maximum(np.diff(edges), 1)
    for t, iv in enumerate(ix.busy):  # per track
        busy[t] = intervals.covered_in_windows(iv, edges[:-1], edges[1:]) / widths
    return busy


def _pieces(ix: tix.RankIndex, pos: I64, edges: I64) -> tuple[I64, I64, I64, F64]:
    """One piece per (event, bucket it touches): cell (track × buckets + bucket), name, kind, weight.

    An event's first piece keeps its place (so same-name runs on a lane stay adjacent); the pieces of
    the further buckets of long events follow at the end. Weight = overlap × self ratio, plus 1e-3
    so that instants count and counts break ties.
    """
    a, b, n_b = int(edges[0]), int(edges[-1]), len(edges) - 1
    sel: I64 | slice = pos
    if len(pos) and int(pos[-1]) - int(pos[0]) + 1 == len(pos):  # one run (zoomed out): views, no gathers
        sel = slice(int(pos[0]), int(pos[-1]) + 1)
    ts = ix.ts[sel]
    cs = np.maximum(ts, a)
    ce = np.minimum(ts + ix.dur[sel], b)
    first = tix.bucket_of(edges, cs)
    first_end = edges[first + 1]
    ratio = ix.self_ratio[sel]
    w = (np.minimum(ce, first_end) - cs).clip(0) * ratio
    cell = ix.track_pos[sel] * n_b + first
    name, kind = ix.name[sel], ix.kind[sel]
    multi = np.flatnonzero(ce > first_end)
    if len(multi):
        n = tix.bucket_of(edges, ce[multi] - 1) - first[multi]
        src = np.repeat(multi, n)
        k = first[src] + 1 + np.arange(len(src), dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
        extra = (np.minimum(ce[src], edges[k + 1]) - edges[k]).clip(0) * ratio[src]
        cell = np.concatenate([cell, cell[src] + (k - first[src])])
        name, kind = np.concatenate([name, name[src]]), np.concatenate([kind, kind[src]])
        w = np.concatenate([w, extra])
    return cell, name.astype(np.int64, copy=False), kind.astype(np.int64, copy=False), w + 1e-3


def _dominant_names(cell: I64, name: I64, weight: F64, n_cells: int) -> I64:
    """Per cell, the name of the heaviest run of same-name pieces (runs are consecutive on a lane)."""
    out = np.full(n_cells, -1, np.int64)
    if len(cell) == 0:
        return out
    brk = np.ones(len(cell), bool)
    brk[1:] = (cell[1:] != cell[:-1]) | (name[1:] != name[:-1])
    starts = np.flatnonzero(brk)
    run_w = np.add.reduceat(weight, starts)
    run_cell, run_name = cell[starts], name[starts]
    best = np.zeros(n_cells)
    np.maximum.at(best, run_cell, run_w)
    win = run_w >= best[run_cell]
    out[run_cell[win]] = run_name[win]
    return out


def _steps(trace: Trace, rank: int, a: int, b: int) -> dict[str, I64]:
    """The step windows of the breakdown (one length per step everywhere) overlapping [a, b)."""
    w = tb_step_windows(trace, rank)
    m = np.flatnonzero((w.step >= 0) & (w.start_ns < b) & (np.maximum(w.end_ns, w.host_end_ns) > a))
    return {"step": w.step[m].astype(np.int64), "start_ns": w.start_ns[m].astype(np.int64),
            "end_ns": w.end_ns[m].astype(np.int64), "host_end_ns": w.host_end_ns[m].astype(np.int64)}


def _flows(trace: Trace, ix: tix.RankIndex, rows: I64) -> dict[str, I64]:
    """launch → GPU pairs with either end among ``rows``."""
    ev = trace.events
    launched = rows[ev["launch"][rows] >= 0]
    lo = np.searchsorted(ix.launch_src, rows, side="left")
    hi = np.searchsorted(ix.launch_src, rows, side="right")
    n = hi - lo
    by_src = ix.launch_dst[np.repeat(lo, n) + np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)]
    dst = unique(np.concatenate([launched, by_src]))
    src = ev["launch"][dst].astype(np.int64)
    return {"from_row": src, "to_row": dst, "from_track": ev["track"][src].astype(np.int64),
            "to_track": ev["track"][dst].astype(np.int64), "from_ts_ns": ev["ts_ns"][src],
            "to_ts_ns": ev["ts_ns"][dst]}


def _no_flows() -> dict[str, I64]:
    e = np.zeros(0, np.int64)
    return {k: e for k in ("from_row", "to_row", "from_track", "to_track", "from_ts_ns", "to_ts_ns")}


def _counters(trace: Trace, ix: tix.RankIndex, edges: I64) -> Counters:
    widths = np.maximum(np.diff(edges), 1)
    util = np.zeros((len(ix.devices), len(edges) - 1))
    for i, iv in enumerate(ix.kernels):  # per device
        util[i] = 100.0 * intervals.covered_in_windows(iv, edges[:-1], edges[1:]) / widths
    qmax = np.zeros((len(ix.queue), len(edges) - 1), np.int64)
    qmean = np.zeros((len(ix.queue), len(edges) - 1))
    for i, s in enumerate(ix.queue):  # per stream
        qmax[i], qmean[i] = tix.series_in_buckets(s, edges)
    streams = trace.tracks["stream"][ix.queue_tracks].astype(np.int64)
    return Counters(devices=ix.devices, gpu_util_pct=util, queue_tracks=ix.queue_tracks,
                    queue_streams=streams, queue_max=qmax, queue_mean=qmean)
