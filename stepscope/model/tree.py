"""Vectorised walks up a parent-link forest (``parent[i]`` = row of i's parent, -1 at a root).

Shared by link derivation and the analyses that climb the op nesting or the module tree.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


def nearest_marked_ancestor(parent: npt.NDArray[np.integer], rows: I64, marked: npt.NDArray[np.bool_],
                            include_self: bool = False) -> I64:
    """For each row, its nearest ancestor (or itself when ``include_self``) with ``marked`` set, else -1."""
    out = np.full(len(rows), -1, np.int64)
    cur = rows.astype(np.int64) if include_self else parent[rows].astype(np.int64)
    live = np.flatnonzero(cur >= 0)
    while len(live):
        hit = marked[cur[live]]
        out[live[hit]] = cur[live[hit]]
        live = live[~hit]
        cur[live] = parent[cur[live]]
        live = live[cur[live] >= 0]
    return out


def depths(parent: npt.NDArray[np.integer], rows: I64) -> I64:
    """Number of ancestors of each row (0 for a root)."""
    depth = np.zeros(len(rows), np.int64)
    cur = parent[rows].astype(np.int64)
    live = np.flatnonzero(cur >= 0)
    while len(live):
        depth[live] += 1
        cur[live] = parent[cur[live]]
        live = live[cur[live] >= 0]
    return depth
