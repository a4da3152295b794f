"""Vectorised walks up a parent-link forest (``parent[i]`` = row of i's parent, -1 at a root).

Shared by link derivation and the analyses that climb the op nesting or the module tree.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


def nearest_marked_ancestor(parent: npt.NDArray[np.integer], rows: I64, marked: npt.NDArray[np.bool_],
                            include_self: bool = False) -> I64:
    """For each row, its nearest ancestor (or itself when ``include_self``) with ``marked`` set, else -1.

    The rows still climbing and where they stand are carried from level to level, so each level
    costs one gather of ``parent`` and one of ``marked`` over those rows only."""
    out = np.full(len(rows), -1, np.int64)
    at = rows.astype(np.int64) if include_self else parent[rows].astype(np.int64)
    live = np.flatnonzero(at >= 0)
    at = at[live]
    while len(live):
        hit = marked[at]
        out[live[hit]] = at[hit]
        at = parent[at[~hit]].astype(np.int64, copy=False)
        live = live[~hit]
        keep = at >= 0
        live, at = live[keep], at[keep]
    return out


def highest_ancestor_while(parent: npt.NDArray[np.integer], rows: I64, ok: npt.NDArray[np.bool_]) -> I64:
    """For each row, the highest ancestor reached by climbing from its parent while ``ok`` holds (the
    last one before the first that does not, or a root); -1 where its parent is not ``ok``."""
    out = np.full(len(rows), -1, np.int64)
    at = parent[rows].astype(np.int64)
    live = np.flatnonzero(at >= 0)
    at = at[live]
    while len(live):
        good = ok[at]
        live, at = live[good], at[good]
        out[live] = at
        at = parent[at].astype(np.int64, copy=False)
        keep = at >= 0
        live, at = live[keep], at[keep]
    return out


def depths(parent: npt.NDArray[np.integer], rows: I64) -> I64:
    """Number of ancestors of each row (0 for a root): each row's count is written once, at the
    level where its climb ends."""
    depth = np.zeros(len(rows), np.int64)
    at = parent[rows].astype(np.int64)
    live = np.flatnonzero(at >= 0)
    at = at[live]
    level = 0
    while len(live):
        level += 1
        at = parent[at].astype(np.int64, copy=False)
        done = at < 0
        depth[live[done]] = level
        live, at = live[~done], at[~done]
    return depth
