"""The per-rank index behind :mod:`stepscope.analysis.timeline`: built once, then every window is cheap.

A rank's events are already sorted by (track, ts). The index re-orders them into *lanes* — one lane
per (track, nesting depth) — so that each lane is sorted by start and, because events of one depth
on one thread do not overlap, nearly sorted by end too. A lane's running maximum of ends is
non-decreasing, so the events of a lane that overlap a window ``[a, b)`` are a contiguous range
found with two binary searches: the first event whose running max end exceeds ``a`` (this finds a
long event that began before the window) and the first event that starts at or after ``b``.

All lanes are searched at once: every lane's keys are shifted by ``lane * span`` so that the
concatenation of all lanes is one sorted array, and one ``np.searchsorted`` call cuts every lane.

The index also holds what the derived counters need: the union of each track's busy time, the
union of kernel time per device, each stream's queue-length step function (from the ``launch``
link) and the reverse ``launch`` map (runtime row → GPU rows) for flows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis._memo import per_rank
from stepscope.analysis.launch import queue_length
from stepscope.model.masks import any_of
from stepscope.model.schema import GPU_KINDS, EventKind, TrackKind
from stepscope.model.table import Table
from stepscope.model.trace import Trace
from stepscope.model.uniq import stable_order, unique

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
_EMPTY = np.zeros(0, np.int64)


@dataclass(frozen=True)
class Series:
    """A step function: ``value[i]`` holds from ``ts_ns[i]`` to ``ts_ns[i + 1]``; 0 before and after.

    ``cum`` is its integral up to each point (value × ns), so a mean over any range is two lookups.
    """

    ts_ns: I64
    value: I64
    cum: F64

    @classmethod
    def of(cls, ts_ns: I64, value: I64) -> Series:
        seg = np.diff(ts_ns).astype(np.float64) * value[:-1] if len(ts_ns) else np.zeros(0)
        return cls(ts_ns, value, np.concatenate([[0.0], np.cumsum(seg)]))


@dataclass(frozen=True)
class RankIndex:
    """Everything a window query of one rank needs, computed once (module docstring)."""

    rank: int
    tracks: I64  # the rank's track ids that hold events, in display order
    rows: I64  # event rows in lane order (track, depth, ts)
    ts: I64  # per position in ``rows``
    end: I64  # ts + dur, at least ts + 1 (an instant overlaps the ns it marks)
    dur: I64  # per position: dur_ns
    self_ratio: npt.NDArray[np.float32]  # per position: self_ns / dur_ns (0 for instants)
    kind: npt.NDArray[np.int8]  # per position: EventKind
    name: npt.NDArray[np.int32]  # per position: string id
    track_pos: I64  # index into ``tracks`` per position
    lane_lo: I64  # offsets of the lanes in ``rows`` (len lanes + 1)
    lane_track_pos: I64  # track position of each lane
    key_ts: I64  # shifted starts, one sorted array (module docstring); empty when shifting would overflow
    key_rmax: I64  # shifted running max of ends
    t0: int
    span: int
    busy: tuple[intervals.Intervals, ...]  # per track position: union of its events
    devices: I64  # GPU devices of the rank
    kernels: tuple[intervals.Intervals, ...]  # per device: union of kernel time
    queue_tracks: I64  # GPU tracks with launched activity
    queue: tuple[Series, ...]  # per queue track
    launch_src: I64  # runtime rows that launched GPU work, sorted
    launch_dst: I64  # the GPU row of each


@per_rank
def rank_index(trace: Trace, rank: int) -> RankIndex:
    """Build (once per trace and rank, memoised) the index of one rank."""
    ev = trace.events
    sl = trace.rank_slice(rank)
    rows = np.arange(sl.start, sl.stop, dtype=np.int64)
    rows = rows[ev["track"][sl] >= 0]
    tracks = _display_order(trace, unique(ev["track"][rows]).astype(np.int64))
    pos_of = np.full(len(trace.tracks) + 1, -1, np.int64)
    pos_of[tracks] = np.arange(len(tracks))
    track_pos = pos_of[ev["track"][rows]]
    # a GPU annotation (ProfilerStep#N projected on a stream) is a label over the stream's work, not
    # work: it gets a lane of its own (depth 0, GPU work below it) and no weight in busy / dominance
    label = ev["kind"][rows] == EventKind.GPU_USER_ANNOTATION
    depth = ev["depth"][rows].astype(np.int64) + (~label & _on_gpu(ev, rows))
    lane_key = track_pos * (int(depth.max(initial=0)) + 1) + depth
    order = stable_order(lane_key)  # keeps (ts, longer first) inside a lane
    rows, lane_key, track_pos = rows[order], lane_key[order], track_pos[order]
    ts, dur = ev["ts_ns"][rows], ev["dur_ns"][rows]
    end = np.maximum(ts + dur, ts + 1)
    ratio = np.where(ev["kind"][rows] == EventKind.GPU_USER_ANNOTATION, 0.0,
                     ev["self_ns"][rows] / np.maximum(dur, 1)).astype(np.float32)
    brk = np.flatnonzero(np.diff(lane_key)) + 1
    lane_lo = np.concatenate([[0], brk, [len(rows)]]).astype(np.int64)
    lane_track_pos = track_pos[lane_lo[:-1]] if len(rows) else _EMPTY
    t0 = int(ts.min()) if len(ts) else 0
    span = (int(end.max()) - t0 + 2) if len(ts) else 2
    key_ts, key_rmax = _shifted_keys(ts, end, lane_lo, t0, span)
    devices, kernels = _kernel_unions(trace, rows)
    q_tracks, queue = _queues(trace, rows)
    src, dst = _launch_map(trace, rows)
    return RankIndex(rank, tracks, rows, ts, end, dur, ratio, ev["kind"][rows], ev["name"][rows], track_pos,
                     lane_lo, lane_track_pos, key_ts, key_rmax, t0, span,
                     _busy(ts, end, track_pos, len(tracks), ev["kind"][rows] != EventKind.GPU_USER_ANNOTATION),
                     devices, kernels, q_tracks, queue, src, dst)


def _display_order(trace: Trace, tracks: I64) -> I64:
    """CPU threads first (by track id), then GPU streams by (device, stream)."""
    tr = trace.tracks
    gpu = tr["kind"][tracks] == int(TrackKind.GPU_STREAM)
    order = np.lexsort((tracks, tr["stream"][tracks], tr["device"][tracks], gpu))
    return tracks[order]


def _shifted_keys(ts: I64, end: I64, lane_lo: I64, t0: int, span: int) -> tuple[I64, I64]:
    """Per-lane keys made globally sorted by adding ``lane * span`` (empty when that would overflow)."""
    n_lanes = len(lane_lo) - 1
    if len(ts) == 0 or n_lanes * span >= 2**62:
        return _EMPTY, _EMPTY
    lane = np.repeat(np.arange(n_lanes, dtype=np.int64), np.diff(lane_lo))
    base = lane * span - t0
    rmax = np.maximum.accumulate(end + base)  # lanes are increasing blocks: the running max resets per lane
    return ts + base, rmax


def _on_gpu(ev: Table, rows: I64) -> npt.NDArray[np.bool_]:
    out: npt.NDArray[np.bool_] = any_of(ev["kind"][rows], [int(k) for k in GPU_KINDS])
    return out


def _busy(ts: I64, end: I64, track_pos: I64, n_tracks: int,
          work: npt.NDArray[np.bool_]) -> tuple[intervals.Intervals, ...]:
    """Per track, the union of its work (labels such as GPU annotations excluded)."""
    out = []
    for t in range(n_tracks):  # per track
        m = (track_pos == t) & work
        out.append(intervals.union(ts[m], end[m]))
    return tuple(out)


def _kernel_unions(trace: Trace, rows: I64) -> tuple[I64, tuple[intervals.Intervals, ...]]:
    ev = trace.events
    k = rows[ev["kind"][rows] == EventKind.KERNEL]
    dev = trace.tracks["device"][ev["track"][k]].astype(np.int64)
    devices = unique(dev)
    out = []
    for d in devices.tolist():  # per device
        kd = k[dev == d]
        ts = ev["ts_ns"][kd]
        out.append(intervals.union(ts, ts + ev["dur_ns"][kd]))
    return devices, tuple(out)


def _queues(trace: Trace, rows: I64) -> tuple[I64, tuple[Series, ...]]:
    ev = trace.events
    gpu = rows[any_of(ev["kind"][rows], [int(k) for k in GPU_KINDS]) & (ev["launch"][rows] >= 0)]
    if len(gpu) == 0:
        return _EMPTY, ()
    q = queue_length(trace, np.sort(gpu), _EMPTY, _EMPTY)
    tracks = unique(ev["track"][gpu]).astype(np.int64)
    return tracks, tuple(Series.of(*q.series(i)) for i in range(len(tracks)))


def _launch_map(trace: Trace, rows: I64) -> tuple[I64, I64]:
    launch = trace.events["launch"][rows]
    has = launch >= 0
    src, dst = launch[has].astype(np.int64), rows[has]
    order = np.argsort(src, kind="stable")
    return src[order], dst[order]


def window_ranges(ix: RankIndex, a: int, b: int) -> tuple[I64, I64]:
    """Per lane, the candidate range [lo, hi) of positions overlapping ``[a, b)``.

    Exact for a lane whose events do not overlap each other (one depth of a thread, a stream's
    kernels); otherwise a superset that :func:`window_positions` filters.
    """
    if len(ix.rows) == 0 or b <= a:
        return _EMPTY, _EMPTY
    lo, hi = _lane_ranges(ix, a, b)
    return lo, np.maximum(hi, lo)


def window_positions(ix: RankIndex, a: int, b: int) -> I64:
    """Positions (into ``ix.rows``) of the events overlapping ``[a, b)``, in lane order."""
    lo, hi = window_ranges(ix, a, b)
    n = hi - lo
    total = int(n.sum())
    if total == 0:
        return _EMPTY
    offs = np.cumsum(n) - n
    pos = np.repeat(lo - offs, n) + np.arange(total, dtype=np.int64)
    return pos[ix.end[pos] > a]


def _lane_ranges(ix: RankIndex, a: int, b: int) -> tuple[I64, I64]:
    """Per lane, [first event whose running max end > a, first event starting at or after b)."""
    a_c = min(max(a, ix.t0 - 1), ix.t0 + ix.span - 2)
    b_c = min(max(b, ix.t0), ix.t0 + ix.span - 1)
    n_lanes = len(ix.lane_lo) - 1
    if len(ix.key_ts):
        base = np.arange(n_lanes, dtype=np.int64) * ix.span - ix.t0
        lo = np.searchsorted(ix.key_rmax, base + a_c, side="right")
        hi = np.searchsorted(ix.key_ts, base + b_c, side="left")
    else:  # shifting would overflow: cut lane by lane
        lo, hi = np.zeros(n_lanes, np.int64), np.zeros(n_lanes, np.int64)
        for i in range(n_lanes):  # per lane
            s, e = int(ix.lane_lo[i]), int(ix.lane_lo[i + 1])
            rmax = np.maximum.accumulate(ix.end[s:e])
            lo[i] = s + np.searchsorted(rmax, a_c, side="right")
            hi[i] = s + np.searchsorted(ix.ts[s:e], b_c, side="left")
    return np.asarray(lo, np.int64), np.asarray(hi, np.int64)


def bucket_edges(a: int, b: int, n: int) -> I64:
    """``n + 1`` integer edges splitting ``[a, b)`` into ``n`` near-equal buckets.

    Exact for any int64 bounds: ``i * (b - a)`` passes 2^63 for a wide window (the server takes
    bounds up to ±2^62), so the few edges are computed with Python integers."""
    return np.array(a + (np.arange(n + 1, dtype=object) * (b - a)) // n, dtype=np.int64)


def bucket_of(edges: I64, t: I64) -> I64:
    """Index of the bucket holding each time (times inside ``[edges[0], edges[-1])``).

    Float arithmetic gives the bucket within one; a comparison with the integer edges on each side
    makes it exact (cheaper than a binary search or an int64 division over millions of times).
    """
    a, n = int(edges[0]), len(edges) - 1
    scale = n / max(int(edges[-1]) - a, 1)
    i = np.clip(((t - a) * scale).astype(np.int64), 0, n - 1)
    i -= (edges[i] > t) & (i > 0)
    i += (edges[i + 1] <= t) & (i < n - 1)
    return i


def series_in_buckets(s: Series, edges: I64) -> tuple[I64, F64]:
    """Per bucket, the maximum and the time-weighted mean of a step function."""
    if len(s.ts_ns) == 0:
        return np.zeros(len(edges) - 1, np.int64), np.zeros(len(edges) - 1)
    at = np.searchsorted(s.ts_ns, edges, side="right") - 1
    v_at = np.where(at >= 0, s.value[np.maximum(at, 0)], 0)
    k = np.maximum(at, 0)
    integral = np.where(at >= 0, s.cum[k] + s.value[k] * (edges - s.ts_ns[k]).astype(np.float64), 0.0)
    mean = np.diff(integral) / np.maximum(np.diff(edges), 1)
    lo = at[:-1] + 1
    hi = np.searchsorted(s.ts_ns, edges[1:], side="left")
    padded = np.concatenate([s.value, [0]])
    pairs = np.stack([np.minimum(lo, len(s.value)), np.maximum(hi, lo)], axis=1).ravel()
    inner = np.maximum.reduceat(padded, np.minimum(pairs, len(s.value)))[::2]
    mx = np.where(hi > lo, np.maximum(v_at[:-1], inner), v_at[:-1])
    return mx.astype(np.int64), mean
