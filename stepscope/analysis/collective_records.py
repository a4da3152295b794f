"""One rank's collective records: the small, explicit per-rank input of the cross-rank arrival
analysis (:mod:`stepscope.analysis.arrivals`).

Per communication kernel of the rank (the one classification, :mod:`.activity` / :mod:`.comm`;
point-to-point send / recv excluded: they wait for one peer, not for the group) — or, on a rank
without one, per collective its host runs (gloo or MPI on the CPU: :func:`host_collective_rows`) —
in start order: its device start and end, the host time its launch call was made (``enqueue_ns``, -1 when the
kernel has no linked launch), its stream, collective type, process group and size, and what the rank
did before it: the *gap* from the end of its previous communication kernel — across its step
boundary: work a rank does at the end of its step (a checkpoint, a log) delays its next step's first
collective, and is that collective's cause, not a "late start" — or, for its first collective in the
trace, from the start of the step window that holds it, to its start, attributed by the rank's
critical path (:func:`stepscope.analysis.critical_path.attribute_windows`: compute,
communication, copy, input, host). Plus the rank's step windows.

:func:`collective_records` is the per-rank function; everything across ranks is computed from a
list of these records only, so it can run on per-rank summaries (map-reduce) as well as on one
whole trace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis._memo import per_rank
from stepscope.analysis.activity import is_comm_row
from stepscope.analysis.comm import CollType, classify, collective_of, host_collective_mask, inside_host_collective
from stepscope.analysis.common import I64, rank_rows
from stepscope.analysis.critical_path import PARTS, attribute_windows, compute_critical_path
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

I8 = npt.NDArray[np.int8]
S = npt.NDArray[np.object_]
#: Pairwise transfers: not matched as group collectives.
P2P_TYPES = (int(CollType.SEND), int(CollType.RECV), int(CollType.SENDRECV))


def coll_type_of(trace: Trace, rows: I64) -> npt.NDArray[np.int8]:
    """The collective type of device rows: the classification's, else the kernel name's (a SendRecv
    kernel whose op names no known collective is point-to-point by its name)."""
    cls = classify(trace)
    by_name = trace.strings.map(collective_of, np.int8, 0)[trace.events["name"][rows]]
    out: npt.NDArray[np.int8] = np.where(cls.coll_type[rows] == CollType.OTHER, by_name, cls.coll_type[rows])
    return out


@dataclass(frozen=True)
class CollectiveRecords:
    """One rank's communication kernels (arrays aligned, device start order) and step windows.

    ``gap_parts_ns[i, j]``: time of :data:`~stepscope.analysis.critical_path.PARTS` ``[j]`` in the
    gap ``[gap_start_ns[i], start_ns[i])`` (the row sums to the gap's length).
    """

    rank: int
    start_ns: I64
    end_ns: I64
    enqueue_ns: I64
    stream: I64
    coll_type: I8
    pg: S  # process group name ("" unknown)
    bytes: I64  # max(in, out) bytes, -1 unknown
    gap_start_ns: I64
    gap_parts_ns: npt.NDArray[np.int64]
    from_step_start: npt.NDArray[np.bool_]  # the gap starts at its step's start: no earlier collective in the trace
    step_start_ns: I64
    step_end_ns: I64
    row: I64  # the kernels' event rows (what the job replay ties across ranks; host rows for host collectives)

    def __len__(self) -> int:
        return len(self.start_ns)


#: ops in which a communication backend runs a collective on a host thread (gloo's worker threads,
#: MPI); the ``c10d`` op that queued it returns at once and is not the collective's time
BACKEND_OP = re.compile(r"^(gloo|mpi|ucc|x?ccl|oneccl):", re.IGNORECASE)


def host_collective_rows(trace: Trace, rank: int) -> I64:
    """A rank's collectives run by the host, one row each (point-to-point excluded): the backend's
    own ops (``gloo:all_reduce`` on a worker thread: it starts when the rank's work reaches it and
    ends when every rank's data has arrived) where the rank has them, else the outermost host-side
    collectives."""
    sl = trace.rank_slice(rank)  # a rank's rows are contiguous: its host-side collectives among them
    rows: I64 = (sl.start + np.flatnonzero(host_collective_mask(trace)[sl])).astype(np.int64)
    ctype = classify(trace).coll_type
    rows = rows[(ctype[rows] > 0) & ~np.isin(ctype[rows], P2P_TYPES)]
    backend = trace.strings.mask(lambda s: bool(BACKEND_OP.match(s)))[trace.events["name"][rows]]
    if backend.any():
        return rows[backend]
    return rows[~inside_host_collective(trace, rows)]


@per_rank
def collective_records(trace: Trace, rank: int) -> CollectiveRecords:
    """The collective records of one rank (see the module docstring)."""
    ev = trace.events
    cls = classify(trace)
    rows = rank_rows(trace, rank, (int(EventKind.KERNEL),))
    rows = rows[is_comm_row(trace)[rows] & ~np.isin(cls.coll_type[rows], P2P_TYPES)]
    on_host = len(rows) == 0
    if on_host:  # no communication kernel: the collectives the host runs (gloo, MPI on the CPU)
        rows = host_collective_rows(trace, rank)
    rows = rows[np.lexsort((rows, ev["ts_ns"][rows]))]
    start = ev["ts_ns"][rows].astype(np.int64)
    end = start + ev["dur_ns"][rows]
    launch = ev["launch"][rows]
    enqueue = np.where(launch >= 0, ev["ts_ns"][np.maximum(launch, 0)], -1).astype(np.int64)
    cp = compute_critical_path(trace, rank)
    w_start, w_end = cp.start_ns, cp.end_ns
    win = np.searchsorted(w_start, start, side="right") - 1
    inside = (win >= 0) & (start < w_end[np.maximum(win, 0)]) if len(w_start) else np.zeros(len(rows), bool)
    step_lo = np.where(inside, w_start[np.maximum(win, 0)], start)
    prev_end = np.concatenate([[np.iinfo(np.int64).min], np.maximum.accumulate(end)[:-1]]) if len(rows) else end
    first = np.arange(len(rows)) == 0  # before the rank's first collective the trace holds only its step's start
    gap_start = np.minimum(np.where(first, step_lo, prev_end), start)
    first &= inside
    parts = attribute_windows(trace, rank, gap_start, start) if len(rows) else np.zeros((0, len(PARTS)), np.int64)
    ids, inv = np.unique(cls.pg_name[rows], return_inverse=True)
    pg_of = np.array([trace.strings[int(i)] for i in ids] + [""], dtype=object)[inv.reshape(-1)]  # per group
    if on_host:  # matched only with other ranks' host-run collectives, never with a kernel's
        pg_of = np.array([f"host:{p}" for p in pg_of.tolist()], dtype=object)
    size = np.maximum(cls.in_bytes[rows], cls.out_bytes[rows]).astype(np.int64)
    return CollectiveRecords(rank, start, end, enqueue, ev["track"][rows].astype(np.int64),
                             cls.coll_type[rows].astype(np.int8), np.asarray(pg_of, dtype=object), size,
                             gap_start, parts.astype(np.int64), first, w_start.astype(np.int64),
                             w_end.astype(np.int64), rows.astype(np.int64))
