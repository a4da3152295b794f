"""Walks up the host nesting (``parent`` links), vectorised by levels, for inclusive ("total") sums."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]


def sum_to_ancestors(parent: npt.NDArray[np.int32], start: I64, weights: npt.ArrayLike, n: int,
                     include_start: bool = True) -> F64:
    """Add each weight to its start row and every ancestor of it (one pass per nesting level).

    Returns a length-``n`` array: for every row, the summed weight of the starts at or below it.
    """
    w = np.asarray(weights, np.float64)
    out: F64 = np.zeros(n, np.float64)
    cur = start.astype(np.int64)
    if not include_start:
        cur = np.where(cur >= 0, parent[np.maximum(cur, 0)], -1).astype(np.int64)
    live = cur >= 0
    cur, w = cur[live], w[live]
    while len(cur):
        out += np.bincount(cur, weights=w, minlength=n)
        cur = parent[cur].astype(np.int64)
        keep = cur >= 0
        cur, w = cur[keep], w[keep]
    return out


def any_descendant(parent: npt.NDArray[np.int32], marked: B) -> B:
    """Rows that are marked or have a marked descendant."""
    out = marked.copy()
    cur = parent[np.flatnonzero(marked)].astype(np.int64)
    cur = cur[cur >= 0]
    last = np.zeros(len(parent), np.int64)  # scratch for dropping repeats without sorting
    while len(cur):
        last[cur] = np.arange(len(cur))
        cur = cur[last[cur] == np.arange(len(cur))]  # each row once (its last occurrence)
        new = cur[~out[cur]]
        out[new] = True
        cur = parent[new].astype(np.int64)
        cur = cur[cur >= 0]
    return np.asarray(out, dtype=bool)
