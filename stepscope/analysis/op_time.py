"""The device time of chosen operator calls: each device row belongs to the chosen op that is its
launching op or an ancestor of it (TraceLens's view of an op: the kernels of its whole subtree), and an
op's time is the busy time of its rows (their union: overlaps counted once).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.model.trace import Trace
from stepscope.model.tree import nearest_marked_ancestor

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class OpTime:
    """Chosen op calls that own device rows."""

    op: I64  # the op rows, ascending
    busy_ns: I64  # union of each op's device rows
    rows: I64  # the device rows owned by some op ...
    owner: I64  # ... and the index (into ``op``) of the op owning each


def owners(trace: Trace, rows: I64, chosen: B, outermost: bool) -> I64:
    """For each device row, the chosen op (``chosen``: a mask over event rows) that is its launching
    op or an ancestor of it — the nearest one, or with ``outermost`` the outermost one; -1 when none."""
    ev = trace.events
    op = ev["op"][rows].astype(np.int64)
    out = np.full(len(rows), -1, np.int64)
    has = op >= 0
    if has.any():
        out[has] = nearest_marked_ancestor(ev["parent"], op[has], chosen, include_self=True)
    while outermost:  # one chosen level per pass: chosen ops nest a few deep at most
        live = np.flatnonzero(out >= 0)
        up = nearest_marked_ancestor(ev["parent"], out[live], chosen) if len(live) else live
        climb = up >= 0
        if not climb.any():
            break
        out[live[climb]] = up[climb]
    return out


def op_time(trace: Trace, rows: I64, chosen: B, outermost: bool = False) -> OpTime:
    """The chosen ops that own some of device ``rows``, and each one's busy time."""
    owner = owners(trace, rows, chosen, outermost)
    keep = owner >= 0
    rows, owner = rows[keep], owner[keep]
    ops, idx = np.unique(owner, return_inverse=True)
    idx = idx.reshape(-1).astype(np.int64)
    ts = trace.events["ts_ns"][rows]
    busy = intervals.union_length_by_group(idx, ts, ts + trace.events["dur_ns"][rows], len(ops))
    return OpTime(ops.astype(np.int64), busy, rows, idx)
