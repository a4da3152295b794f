"""One rank's communication kernels as compact records, and their cross-rank matching.

The map-reduce path (``stepscope.mapreduce``) reads each rank alone; what a cluster analysis needs
from a rank travels as a record, never as events. :func:`comm_records` is a rank's part: per
communication kernel (in row order) its process group, collective type, start, duration, size and
its ordinal ``nth`` within (group, type) in time order. :func:`match_records` is the cross-rank
part: the same collective is the n-th kernel of one (group, type) on every rank; its *transfer*
time is the shortest duration any rank saw, the rest is *wait* (:mod:`.stragglers`). When at most
one rank has communication kernels, a collective is one of the same (group, type, size) across
steps instead. The whole-trace path (``match_collectives``) runs the same two functions.

Not to be confused with :mod:`.collective_records`, the arrival analysis's richer per-rank records
(device start order, launch times, the critical-path parts of the gap before each kernel).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis._memo import per_rank
from stepscope.analysis.comm import classify
from stepscope.analysis.common import I64, rank_rows
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

I8 = npt.NDArray[np.int8]
I32 = npt.NDArray[np.int32]
MULTI, SINGLE = "min across ranks", "same size across steps"


@dataclass(frozen=True)
class CommRecords:
    """A rank's communication kernels, aligned arrays in row order (~45 bytes per kernel)."""

    rank: int
    rows: I64  # rows into the trace they were read from
    groups: tuple[str, ...]  # the process-group names the kernels name
    group: I32  # index into ``groups``, -1 unknown
    coll_type: I8  # CollType code
    ts_ns: I64
    dur_ns: I64
    bytes: I64  # max(input, output) bytes, -1 unknown
    nth: I64  # ordinal within (group, type) on this rank, in time order

    @property
    def nbytes(self) -> int:
        arrays = (self.rows, self.group, self.coll_type, self.ts_ns, self.dur_ns, self.bytes, self.nth)
        return sum(a.nbytes for a in arrays) + sum(len(g) for g in self.groups)


@dataclass(frozen=True)
class RecordsMatch:
    """Per rank, aligned with its records: the transfer time and how many ranks hold the collective."""

    transfer_ns: dict[int, I64]
    seen: dict[int, I64]
    method: str


@per_rank
def comm_records(trace: Trace, rank: int) -> CommRecords:
    """The rank's communication kernels (cached per build)."""
    cls = classify(trace)
    kernels = rank_rows(trace, rank, (int(EventKind.KERNEL),))
    rows = kernels[cls.is_comm[kernels]]
    ev = trace.events
    pg_ids = cls.pg_name[rows].astype(np.int64)
    known = np.unique(pg_ids[pg_ids >= 0])
    group = np.where(pg_ids >= 0, np.searchsorted(known, pg_ids), -1).astype(np.int32)
    ctype = cls.coll_type[rows].astype(np.int8)
    ts = ev["ts_ns"][rows]
    order = np.lexsort((ts, ctype, group))
    new = np.ones(len(order), bool)
    new[1:] = (group[order][1:] != group[order][:-1]) | (ctype[order][1:] != ctype[order][:-1])
    start = np.maximum.accumulate(np.where(new, np.arange(len(order)), 0)) if len(order) else order
    nth = np.empty(len(order), np.int64)
    nth[order] = np.arange(len(order)) - start
    size = np.maximum(cls.in_bytes[rows], cls.out_bytes[rows])
    return CommRecords(rank, rows, tuple(str(s) for s in trace.strings.decode(known)), group, ctype, ts,
                             ev["dur_ns"][rows], size, nth)


def match_records(records: Mapping[int, CommRecords]) -> RecordsMatch:
    """Transfer time and ranks seen of every record, matched across the ranks (see the module docstring)."""
    recs = [r for r in records.values() if len(r.rows)]
    multi = len(recs) > 1
    index = {g: i + 1 for i, g in enumerate(sorted({g for r in recs for g in r.groups}))}
    parts = []
    for r in recs:  # per rank: its group names to codes shared by all ranks (0 = unknown)
        code = np.array([0, *(index[g] for g in r.groups)], np.int64)
        pg = code[r.group + 1]
        parts.append(np.stack([pg, r.coll_type.astype(np.int64), r.nth if multi else r.bytes]))
    out_t = {rank: np.zeros(0, np.int64) for rank in records}
    out_s = dict(out_t)
    if recs:
        key = np.concatenate(parts, axis=1)
        _, inv = np.unique(key, axis=1, return_inverse=True)
        inv = np.asarray(inv).reshape(-1)
        dur = np.concatenate([r.dur_ns for r in recs])
        best = np.full(int(inv.max()) + 1, np.iinfo(np.int64).max, np.int64)
        np.minimum.at(best, inv, dur)
        seen = np.bincount(inv).astype(np.int64)
        bounds = np.cumsum([0] + [len(r.rows) for r in recs])
        for i, r in enumerate(recs):  # per rank
            sl = inv[bounds[i]:bounds[i + 1]]
            out_t[r.rank], out_s[r.rank] = best[sl], seen[sl]
    return RecordsMatch(out_t, out_s, MULTI if multi else SINGLE)
