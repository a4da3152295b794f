"""Aggregate cells of a zoomed-out timeline window at a cost independent of the number of events.

When a window holds hundreds of thousands of events, walking them all costs more than a UI can wait
for. Everything a cell needs is answered instead by binary searches over the lane index
(:mod:`stepscope.analysis.timeline_index`), lanes × buckets × samples of them:

* **count**: per lane, events touching bucket ``j`` = (first event starting at or after the
  bucket's end) − (first event whose running max end passes the bucket's start); summed per track.
* **dominant kind / name**: ``samples`` evenly spaced instants per bucket; at each the innermost
  event of the track (the deepest lane with an event covering it) — the event whose *self* time
  holds that instant. The most frequent kind and name among the samples win, so dominance is
  self time estimated by sampling. A cell with events but no sample hit (sparse tiny events)
  takes the first event touching the bucket on its shallowest lane.

Busy fractions stay exact (union of intervals), see :func:`stepscope.analysis.timeline._aggregate`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stepscope.analysis.timeline_index import RankIndex

I64 = npt.NDArray[np.int64]
MAX_QUERIES = 4_000_000  # lanes × sample instants per window


def sampled_cells(ix: RankIndex, edges: I64, samples: int = 8) -> tuple[I64, I64, I64]:
    """(count, dominant kind, dominant name id) per (track, bucket); -1 where a cell is empty."""
    n_l = len(ix.lane_lo) - 1
    base = np.arange(n_l, dtype=np.int64) * ix.span - ix.t0
    starts = np.searchsorted(ix.lane_track_pos, np.arange(len(ix.tracks)))  # first lane of each track
    first_end = np.searchsorted(ix.key_rmax, base[:, None] + _clip_end(ix, edges), side="right")
    first_ts = np.searchsorted(ix.key_ts, base[:, None] + _clip_ts(ix, edges), side="left")
    touching = np.maximum(first_ts[:, 1:] - first_end[:, :-1], 0)  # lanes × buckets
    count = np.add.reduceat(touching, starts, axis=0)
    kind, name = _sample_modes(ix, edges, base, starts, samples)
    empty = (kind < 0) & (count > 0)
    if empty.any():
        lane_id = np.where(touching > 0, np.arange(n_l)[:, None], n_l)
        shallow = np.minimum.reduceat(lane_id, starts, axis=0)  # tracks × buckets
        t, j = np.nonzero(empty)
        pos = first_end[shallow[t, j], j]
        kind[t, j], name[t, j] = ix.kind[pos], ix.name[pos]
    return count.astype(np.int64), kind, name


def _clip_end(ix: RankIndex, t: I64) -> I64:
    """Times for running-max-end searches, kept inside one lane's key range."""
    return np.clip(t, ix.t0 - 1, ix.t0 + ix.span - 2)


def _clip_ts(ix: RankIndex, t: I64) -> I64:
    """Times for start searches, kept inside one lane's key range."""
    return np.clip(t, ix.t0, ix.t0 + ix.span - 1)


def _sample_modes(ix: RankIndex, edges: I64, base: I64, starts: I64, samples: int) -> tuple[I64, I64]:
    """Most frequent kind and name of the innermost events at ``samples`` instants per bucket."""
    n_l, n_b, n_t = len(base), len(edges) - 1, len(ix.tracks)
    samples = max(1, min(samples, MAX_QUERIES // max(n_l * n_b, 1)))  # bound memory on deep stacks
    width = np.diff(edges)
    k = np.arange(samples, dtype=np.int64)
    t = (edges[:-1, None] + ((2 * k + 1) * width[:, None]) // (2 * samples)).ravel()  # buckets × samples
    idx = np.searchsorted(ix.key_ts, base[:, None] + _clip_end(ix, t), side="right") - 1  # lanes × points
    idx_c = np.maximum(idx, 0)
    hit = (idx >= ix.lane_lo[:-1, None]) & (ix.end[idx_c] > t) & (ix.ts[idx_c] <= t)
    lane = np.where(hit, np.arange(n_l)[:, None], -1)
    best = np.maximum.reduceat(lane, starts, axis=0)  # tracks × points: deepest lane with a hit
    pos = idx_c[np.maximum(best, 0), np.arange(len(t))]
    kinds = np.where(best >= 0, ix.kind[pos], -1).reshape(n_t, n_b, samples)
    names = np.where(best >= 0, ix.name[pos], -1).reshape(n_t, n_b, samples)
    return _mode(kinds), _mode(names)


def _mode(x: I64) -> I64:
    """The most frequent value along the last axis, ignoring -1 (-1 when all are -1)."""
    votes = (x[..., :, None] == x[..., None, :]).sum(axis=-1) * (x >= 0)
    best = votes.argmax(axis=-1)
    out = np.take_along_axis(x, best[..., None], axis=-1)[..., 0]
    return np.where(votes.max(axis=-1) > 0, out, -1).astype(np.int64)
