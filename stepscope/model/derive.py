"""One-time link derivation at the end of ingest; analyses never search for these again.

* nesting: ``parent``, ``depth``, ``self_ns`` of host events per thread (pointer jumping, vectorised)
* launch: GPU activity → its runtime call (same rank, same correlation id)
* op: runtime call → innermost enclosing CPU op; GPU activity → the op of its launch
  (or, when no runtime call matches, the CPU op with the same External id)
* graph_node: GPU activity replayed by a CUDA / HIP graph launch (``cudaGraphLaunch``,
  ``hipGraphLaunch``, ``cuGraphLaunch``: every node of the graph carries the launch's correlation
  id, so ``launch`` already points at the graph launch) → its index among that launch's activities
  in start order; the capture trace's ops are matched to these indices (``ingest/capture.py``)
* steps: :mod:`stepscope.model.steps`
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.model import tree
from stepscope.model.diagnostics import DiagnosticsBuilder
from stepscope.model.masks import any_of
from stepscope.model.schema import GPU_KINDS, HOST_KINDS, EventKind
from stepscope.model.strings import StringPool
from stepscope.model.table import Table
from stepscope.model.uniq import unique

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]


def sort_order(ev: Table) -> I64:
    """Row order by (track, ts, longer first): a parent always precedes its children."""
    order = time_order(ev["track"], ev["ts_ns"], ev["dur_ns"])
    return np.arange(len(ev), dtype=np.int64) if order is None else order


def time_order(track: npt.NDArray[np.int32], ts: I64, dur: I64) -> I64 | None:
    """:func:`sort_order` of these columns, or None when the rows are in that order already
    (ingest gathers each file in this order, so the whole trace usually is)."""
    key = _track_time_key(track, ts)
    if key is None:
        order = np.lexsort((-dur, ts, track)).astype(np.int64)
        return None if bool((order == np.arange(len(order))).all()) else order
    if _in_key_order(key, dur):
        return None
    order = np.argsort(key, kind="stable")  # timsort: rows arrive as long time-ordered runs
    ks = key[order]
    tie = np.flatnonzero(ks[1:] == ks[:-1])
    if len(tie):  # events starting together on a track: the longer (the parent) first
        pos = unique(np.concatenate([tie, tie + 1]))
        sub = order[pos]
        order[pos] = sub[np.lexsort((-dur[sub], key[sub]))]
    return order.astype(np.int64)


def _in_key_order(key: I64, dur: I64) -> bool:
    """Keys never decrease, and where two are equal the longer event comes first."""
    step = np.subtract(key[1:], key[:-1])
    if bool((step > 0).all()):
        return True
    if bool((step < 0).any()):
        return False
    tie = np.flatnonzero(step == 0)
    return bool((dur[tie] >= dur[tie + 1]).all())


def _track_time_key(track: npt.NDArray[np.int32], ts: I64) -> I64 | None:
    """(track, ts) packed in one int64 that sorts the same way, or None when they do not fit."""
    packed = pack_track_time(track, ts)
    return None if packed is None else packed.key


@dataclass(frozen=True)
class PackedTrackTime:
    """``key`` = (track << ``time_bits``) + (ts − ``lo``): one int64 per row that sorts like (track, ts)."""

    key: I64
    time_bits: int
    lo: int

    def at(self, track: npt.NDArray[np.integer], ts: I64) -> I64:
        """Keys of other (track, ts) pairs on the same scale, ts clamped into it (before every row →
        the track's first key; after every row → past its last, given a spare bit)."""
        t = np.clip(ts - self.lo, 0, (1 << self.time_bits) - 1)
        return (track.astype(np.int64) << self.time_bits) + t


def pack_track_time(track: npt.NDArray[np.int32], ts: I64, spare_bits: int = 0) -> PackedTrackTime | None:
    """:class:`PackedTrackTime` of these rows, with ``spare_bits`` of headroom above the latest ts;
    None when there are none, a track is negative, or the key would not fit in 62 bits."""
    if len(ts) == 0 or int(track.min()) < 0:
        return None
    lo = int(ts.min())
    time_bits = max(1, (int(ts.max()) - lo).bit_length()) + spare_bits
    if time_bits + max(1, int(track.max()).bit_length()) > 62:
        return None
    key: I64 = track.astype(np.int64)  # one new array, then in place: (track << bits) + (ts - lo)
    np.left_shift(key, time_bits, out=key)
    np.subtract(key, lo, out=key)
    np.add(key, ts, out=key)
    return PackedTrackTime(key, time_bits, lo)


def nest(ev: Table, diags: DiagnosticsBuilder) -> tuple[I32, npt.NDArray[np.int16], I64]:
    """Parent row, depth and self time of host events; events must be in :func:`sort_order`."""
    parent = nest_parents(ev, diags)
    return parent, nest_depths(parent), self_times(ev, parent)


def nest_parents(ev: Table, diags: DiagnosticsBuilder) -> I32:
    """Parent row of host events (events in :func:`sort_order`); depths and self times follow from
    the parents (:func:`nest_depths`, :func:`self_times`), so ingest derives them beside other links."""
    n = len(ev)
    host = any_of(ev["kind"], [int(k) for k in HOST_KINDS])
    idx = np.flatnonzero(host)
    parent = np.full(n, -1, np.int32)
    if len(idx) == 0:
        return parent
    track, ts = ev["track"][idx], ev["ts_ns"][idx]
    end = ts + ev["dur_ns"][idx]
    follows = np.zeros(len(idx), bool)  # the previous host event is on the same track
    np.equal(track[1:], track[:-1], out=follows[1:])
    _count_overlaps(ts, end, follows, ev["kind"][idx], diags)
    local = _jump_to_container(follows, end)
    parent[idx] = np.where(local >= 0, idx[np.maximum(local, 0)], -1)
    return parent


def self_times(ev: Table, parent: I32) -> I64:
    """Each event's duration less its children's (host events; others keep their duration)."""
    dur: I64 = ev["dur_ns"]
    self_ns: I64 = dur.copy()
    has = np.flatnonzero(parent >= 0)
    if len(has) == 0:
        return self_ns
    child_sum = np.bincount(parent[has], weights=dur[has], minlength=len(ev))
    host = any_of(ev["kind"], [int(k) for k in HOST_KINDS])
    self_ns[host] = np.maximum(dur[host] - child_sum[host].astype(np.int64), 0)
    return self_ns


def nest_depths(parent: I32) -> npt.NDArray[np.int16]:
    """Each event's number of ancestors (0 at top level and for every event without a parent)."""
    depth = np.zeros(len(parent), np.int16)
    nested = np.flatnonzero(parent >= 0)
    depth[nested] = tree.depths(parent, nested)
    return depth


def _jump_to_container(follows: npt.NDArray[np.bool_], end: I64) -> I64:
    """For each event, the nearest earlier event on its track that ends no earlier than it does.

    The first candidate is the previous event (compared as shifted slices: no gather); the rest by
    pointer jumping, each candidate replaced by its own candidate until one contains the event."""
    cand = np.arange(-1, len(end) - 1, dtype=np.int64)
    cand[~follows] = -1
    inside_prev = np.zeros(len(end), bool)
    np.greater_equal(end[:-1], end[1:], out=inside_prev[1:])
    todo = np.flatnonzero(follows & ~inside_prev)
    at, todo_end = todo - 1, end[todo]  # each open event's candidate and end, carried along the rounds
    while len(todo):
        at = cand[at]
        cand[todo] = at
        keep = (at >= 0) & (end[at] < todo_end)  # at -1 the read is junk, masked out
        todo, at, todo_end = todo[keep], at[keep], todo_end[keep]
    return cand


def _count_overlaps(ts: I64, end: I64, follows: npt.NDArray[np.bool_], kind: npt.NDArray[np.int8],
                    diags: DiagnosticsBuilder) -> None:
    """Count events that start inside the previous one and end after it (not properly nested).

    A Python frame overlapping the range it opens or closes (``record_function``'s enter call starts
    before the range and returns inside it; ``__exit__`` starts inside and returns after) is a known
    profiler artifact, counted apart as info.
    """
    partial = follows[1:] & (end[:-1] > ts[1:]) & (end[:-1] < end[1:])  # row i+1 against row i
    is_py = kind == EventKind.PYTHON_FUNCTION
    python = is_py[:-1] | is_py[1:]
    n_py, n_other = int((partial & python).sum()), int((partial & ~python).sum())
    if n_py:
        diags.add("python-frame-overlaps-range", "info",
                  "a Python frame of record_function's enter/exit straddles the range it opens or "
                  "closes (a profiler artifact); both are kept, as siblings", n_py)
    if n_other:
        diags.add("events-overlap-on-thread", "warning",
                  "an event starts inside the previous one and ends after it; nested under the enclosing one",
                  n_other)


def link_launches(ev: Table, diags: DiagnosticsBuilder | None = None) -> I32:
    """GPU activity → row of the runtime/driver call with the same (rank, correlation id).

    Correlation ids are unique per rank in a sound trace; when several runtime calls share one, the
    GPU activity is linked to the earliest and the duplicates are counted.
    """
    launch = np.full(len(ev), -1, np.int32)
    rt = np.flatnonzero(any_of(ev["kind"], [EventKind.RUNTIME, EventKind.DRIVER]) & (ev["corr"] >= 0))
    gpu = np.flatnonzero(any_of(ev["kind"], [int(k) for k in GPU_KINDS]) & (ev["corr"] >= 0))
    if len(rt) == 0 or len(gpu) == 0:
        return launch
    keys = _key(ev["rank"][rt], ev["corr"][rt])
    order = np.lexsort((ev["ts_ns"][rt], keys))  # by key, the earliest call first among equal keys
    sk = keys[order]
    n_dup = int(np.count_nonzero(sk[1:] == sk[:-1]))
    if n_dup and diags is not None:
        diags.add("duplicate-correlation", "warning",
                  f"{n_dup} runtime calls reuse a correlation id of another call on the same rank; "
                  "GPU activity is linked to the earliest", n_dup)
    found = _match_sorted(sk, _key(ev["rank"][gpu], ev["corr"][gpu]))
    ok = found >= 0
    launch[gpu[ok]] = rt[order[found[ok]]]
    return launch


def _key(rank: npt.NDArray[np.int32], ids: I64) -> I64:
    return (rank.astype(np.int64) << 44) | (ids & ((1 << 44) - 1))


def match_keys(keys: I64, queries: I64) -> I64:
    """Index into ``keys`` of each query's first equal key, -1 when absent."""
    order = np.argsort(keys, kind="stable")
    found = _match_sorted(keys[order], queries)
    return np.where(found >= 0, order[np.maximum(found, 0)], -1)


def _match_sorted(sorted_keys: I64, queries: I64) -> I64:
    """Index into the sorted ``sorted_keys`` of each query's first equal key, -1 when absent."""
    pos = np.searchsorted(sorted_keys, queries)
    pos_c = np.minimum(pos, len(sorted_keys) - 1)
    hit = (pos < len(sorted_keys)) & (sorted_keys[pos_c] == queries)
    return np.where(hit, pos_c, -1)


def link_ops(ev: Table, parent: I32, launch: I32) -> I32:
    """Runtime → innermost CPU op ancestor; GPU → its launch's op, else the op with its External id."""
    n = len(ev)
    kind = ev["kind"]
    is_op = kind == EventKind.CPU_OP
    op = np.full(n, -1, np.int32)
    calls = np.flatnonzero(any_of(kind, [EventKind.RUNTIME, EventKind.DRIVER])).astype(np.int64)
    op[calls] = tree.nearest_marked_ancestor(parent, calls, is_op)
    gpu = np.flatnonzero(any_of(kind, [int(k) for k in GPU_KINDS]))
    has_launch = launch[gpu] >= 0
    op[gpu[has_launch]] = op[launch[gpu[has_launch]]]
    orphan = gpu[(op[gpu] < 0) & (ev["ext_id"][gpu] >= 0)]
    ops = np.flatnonzero(is_op & (ev["ext_id"] >= 0))
    if len(orphan) and len(ops):
        found = match_keys(_key(ev["rank"][ops], ev["ext_id"][ops]), _key(ev["rank"][orphan], ev["ext_id"][orphan]))
        op[orphan[found >= 0]] = ops[found[found >= 0]]
    return op


_GRAPH_LAUNCH = re.compile(r"^(?:cuda|hip)GraphLaunch|^cuGraphLaunch")


def is_graph_launch(name: str) -> bool:
    """A runtime / driver call that replays a captured CUDA or HIP graph."""
    return _GRAPH_LAUNCH.match(name) is not None


def link_graph_nodes(ev: Table, launch: I32, strings: StringPool) -> I32:
    """GPU activity launched by a graph launch → its index among that launch's activities, by start
    time (ties by row); -1 for activity not replayed from a graph."""
    node = np.full(len(ev), -1, np.int32)
    gpu = np.flatnonzero(launch >= 0)
    g = gpu[strings.mask(is_graph_launch)[ev["name"][launch[gpu]]]]
    if len(g) == 0:
        return node
    lr = launch[g]
    order = np.lexsort((g, ev["ts_ns"][g], lr))
    ls = lr[order]
    pos = np.arange(len(order), dtype=np.int64)
    first = np.ones(len(order), bool)
    first[1:] = ls[1:] != ls[:-1]
    node[g[order]] = pos - np.maximum.accumulate(np.where(first, pos, 0))
    return node


def rows_by_track(ev: Table, kinds: list[int], track: npt.NDArray[Any]) -> Iterator[tuple[I64, I64]]:
    """Per track that some of ``track`` (the instants' tracks) name: those instants' indices and the
    rows of that track's events of ``kinds``, in time order (events in :func:`sort_order`: each
    track's rows one contiguous, time-ordered run). Tracks without such events are skipped."""
    for t in unique(track[track >= 0]).tolist():  # per track, vectorised within
        lo, hi = np.searchsorted(ev["track"], [t, t + 1]).tolist()
        rows = lo + np.flatnonzero(any_of(ev["kind"][lo:hi], kinds))
        if len(rows):
            yield np.flatnonzero(track == t), rows.astype(np.int64)


def innermost_host_event(ev: Table, parent: I32, track: npt.NDArray[Any], ts: npt.NDArray[Any]) -> I32:
    """For instants (memory events), the innermost host event on their track that contains them;
    events must be in :func:`sort_order` (each track's rows one contiguous, time-ordered run)."""
    out = np.full(len(ts), -1, np.int32)
    ev_ts, ev_dur = ev["ts_ns"], ev["dur_ns"]
    for q, rows in rows_by_track(ev, [int(k) for k in HOST_KINDS], track):
        pos = np.searchsorted(ev_ts[rows], ts[q], side="right") - 1
        cand = np.where(pos >= 0, rows[np.maximum(pos, 0)], -1)
        live = np.flatnonzero(cand >= 0)
        while len(live):
            at = cand[live]
            inside = ev_ts[at] + ev_dur[at] >= ts[q[live]]
            live = live[~inside]
            cand[live] = parent[cand[live]]
            live = live[cand[live] >= 0]
        out[q] = cand
    return out
