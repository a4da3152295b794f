"""One rank's rank-to-rank traffic from its Kineto communication kernels: the part of the
communication matrix (:mod:`stepscope.analysis.comm_matrix`) that traces without a profiler-written
matrix get.

Only the ops whose bytes have a defined peer are placed in a (src, dst) cell:

* **point-to-point** kernels (send, recv, and the SendRecv kernels of ``batch_isend_irecv``, recorded
  as "coalesced" — the one classification, as in :mod:`.pipeline_records`): a send of S bytes is
  S on (rank → peer), a recv is S on (peer → rank), a coalesced SendRecv both (its input size sent,
  its output size received). The peer is the kernel's (else its op's) ``Dst Rank`` / ``Src Rank``
  (global ranks, PyTorch ≥ 2.4; basis ``recorded``), else the other member of a two-rank process
  group (basis ``group``); a kernel with neither is *unplaced* (counted, not in a cell).
* **all-to-all** kernels (``ncclDevKernel_AllToAll``, the SendRecv kernels of an ``all_to_all`` op):
  an op of S input bytes in a group of n ranks sends S / n to each member (itself included: the
  local chunk) and receives its output size / n from each — splits are taken as even, the traces
  record none. The members are the op's ``Process Group Ranks`` (basis ``group``), else ranks
  0..world−1 of the rank's ``distributedInfo`` (basis ``world``), else the kernel is unplaced.

Each entry carries the kernel's duration (waiting for the peer included: the time the link was
busy from this rank's view). An op's size is counted on its first kernel only.
Group collectives (all-reduce, all-gather ...) move their bytes along the library's ring or tree,
which the trace does not record: they have no cell here (their per-group bandwidth is in
:mod:`.slow_links`).

A rank's record holds its entries summed per (src, dst, op, basis): its size grows with the peers it
talks to, never with its kernels. A transfer is seen from both ends (the send on the source rank,
the recv on the destination); :func:`combine_links` keeps the source's view when the source rank is
in the trace, else the destination's — each byte counted once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis._memo import per_rank
from stepscope.analysis.activity import is_comm_row
from stepscope.analysis.collective_records import P2P_TYPES
from stepscope.analysis.comm import CollType, classify, collective_of
from stepscope.analysis.common import I32, I64, rank_rows, recorded_peer
from stepscope.model.schema import EventKind
from stepscope.model.trace import WORLD_SIZE_MAX, Trace
from stepscope.model.uniq import unique_rows

S = npt.NDArray[np.object_]
B = npt.NDArray[np.bool_]
OPS = ("p2p", "all_to_all")
BASES = ("recorded", "group", "world")


@dataclass(frozen=True)
class RankLinks:
    """One rank's entries summed per (src, dst, op, basis) — at most two per peer, however many kernels —
    and what it could not place."""

    rank: int
    src: I32
    dst: I32
    op: npt.NDArray[np.int8]  # index into OPS
    basis: npt.NDArray[np.int8]  # index into BASES
    bytes: I64  # known sizes summed
    time_ns: I64  # kernel durations summed
    sized_time_ns: I64  # durations of the entries with a known size
    count: I64  # ops (counted on their first kernel)
    unplaced_count: int
    unplaced_time_ns: int

    def __len__(self) -> int:
        return len(self.src)


@per_rank
def rank_links(trace: Trace, rank: int) -> RankLinks | None:
    """The rank's entries (see the module docstring); None when it runs no p2p or all-to-all kernel."""
    ev, cls = trace.events, classify(trace)
    rows = rank_rows(trace, rank, (int(EventKind.KERNEL),))
    rows = rows[is_comm_row(trace)[rows]]
    by_name = trace.strings.map(collective_of, np.int8, 0)[ev["name"][rows]]
    ctype = np.where(cls.coll_type[rows] == CollType.OTHER, by_name, cls.coll_type[rows])
    p2p, a2a = np.isin(ctype, P2P_TYPES), ctype == CollType.ALLTOALL
    rows, ctype, p2p = rows[p2p | a2a], ctype[p2p | a2a], p2p[p2p | a2a]
    if len(rows) == 0:
        return None
    op = cls.comm_op[rows]
    first = _first_of_each_op(op)
    members, mcount, mbasis = _members(trace, rank, rows, op)
    parts = [_p2p(trace, rank, rows[p2p], op[p2p], ctype[p2p], members[p2p], mcount[p2p], first[p2p]),
             _a2a(trace, rank, rows[~p2p], members[~p2p], mcount[~p2p], mbasis[~p2p], first[~p2p])]
    placed = np.concatenate([p[0] for p in parts])
    cols = [np.concatenate([p[1][i] for p in parts]) for i in range(6)]
    dur = ev["dur_ns"][rows]
    kdur = np.concatenate([dur[p2p], dur[~p2p]])
    first = np.concatenate([p[2] for p in parts])
    sized = cols[4] >= 0
    key, (nbytes, time, sized_time, count) = _sum_cells(
        np.stack(cols[:4], axis=1).astype(np.int64),
        [np.where(sized, cols[4], 0), cols[5], np.where(sized, cols[5], 0), first])
    return RankLinks(rank, key[:, 0].astype(np.int32), key[:, 1].astype(np.int32), key[:, 2].astype(np.int8),
                     key[:, 3].astype(np.int8), nbytes, time, sized_time, count, int((~placed).sum()),
                     int(kdur[~placed].sum()))


def _sum_cells(key: I64, values: list[npt.NDArray[Any]]) -> tuple[I64, list[I64]]:
    """The distinct rows of ``key`` (n, 4) and each of ``values`` summed over them."""
    uniq, _, inv = unique_rows(key.reshape(-1, 4))  # np.unique(axis=0)'s answer, by one int64 sort
    return uniq, [np.bincount(inv, weights=v, minlength=len(uniq)).round().astype(np.int64) for v in values]


Parts = tuple[B, list[npt.NDArray[np.int64]], B]


def _p2p(trace: Trace, rank: int, rows: I64, op: I32, ctype: npt.NDArray[np.int8], members: I64,
         mcount: I64, first: B) -> Parts:
    """Entries of the point-to-point kernels: rank → peer for what it sends, peer → rank for what it gets."""
    ev = trace.events
    peer, basis = recorded_peer(trace, rows, op), np.zeros(len(rows), np.int64)
    two = (peer < 0) & (mcount == 2)  # the other member of a two-rank group
    other = np.where(members[:, 0] == rank, members[:, 1], members[:, 0])
    peer = np.where(two, other, peer)
    basis = np.where(two, BASES.index("group"), basis)
    placed = (peer >= 0) & (peer != rank)
    c = classify(trace)
    size = np.maximum(c.in_bytes[rows], c.out_bytes[rows])
    sent = np.where(c.in_bytes[rows] >= 0, c.in_bytes[rows], size)
    got = np.where(c.out_bytes[rows] >= 0, c.out_bytes[rows], size)
    sends = placed & np.isin(ctype, [int(CollType.SEND), int(CollType.SENDRECV)])
    recvs = placed & np.isin(ctype, [int(CollType.RECV), int(CollType.SENDRECV)])
    dur = ev["dur_ns"][rows]
    s, r = np.flatnonzero(sends), np.flatnonzero(recvs)
    me = np.full(len(rows), rank, np.int64)
    cols = [np.concatenate([me[s], peer[r]]), np.concatenate([peer[s], me[r]]),
            np.zeros(len(s) + len(r), np.int64),
            np.concatenate([basis[s], basis[r]]),
            np.concatenate([np.where(first[s], sent[s], 0), np.where(first[r], got[r], 0)]),
            np.concatenate([dur[s], dur[r]])]
    return placed, cols, np.concatenate([first[s], first[r]])


def _a2a(trace: Trace, rank: int, rows: I64, members: I64, mcount: I64, mbasis: I64, first: B) -> Parts:
    """Entries of the all-to-all kernels: S / n to and from each member of the group."""
    c, dur = classify(trace), trace.events["dur_ns"][rows]
    placed = mcount > 0
    k = np.flatnonzero(placed)
    n = mcount[k]
    rep = np.repeat(k, n)  # one entry per (kernel, member)
    width = members.shape[1]
    mask = np.arange(width)[None, :] < n[:, None]
    peer = members[k][mask]
    me = np.full(len(rep), rank, np.int64)

    def share(b: I64) -> I64:
        per: I64 = np.where(b[rep] >= 0, np.where(first[rep], b[rep] // np.maximum(mcount[rep], 1), 0), -1)
        return per

    sent, got = share(c.in_bytes[rows]), share(c.out_bytes[rows])
    o = peer != rank  # received: from the others (the local chunk is in the sent entries)
    op = np.full(len(rep) + int(o.sum()), OPS.index("all_to_all"), np.int64)
    cols = [np.concatenate([me, peer[o]]), np.concatenate([peer, me[o]]), op,
            np.concatenate([mbasis[rep], mbasis[rep][o]]), np.concatenate([sent, got[o]]),
            np.concatenate([dur[rep], dur[rep][o]])]
    return placed, cols, np.concatenate([first[rep], first[rep][o]])


def _members(trace: Trace, rank: int, rows: I64, op: I32) -> tuple[I64, I64, I64]:
    """Per kernel: its group's member ranks (a -1 padded matrix), their count (0 unknown) and the basis
    (group / world). The group is the kernel's (else its op's) ``Process Group Ranks``."""
    ev = trace.events
    pg = ev["pg_ranks"][rows].astype(np.int64)
    pg = np.where(pg >= 0, pg, np.where(op >= 0, ev["pg_ranks"][np.maximum(op, 0)], -1))
    ids, inv = np.unique(pg, return_inverse=True)
    lists = [_parse_ranks(trace.strings[int(i)]) if i >= 0 else [] for i in ids]  # per distinct group text
    world = trace.rank_info(rank).world_size or 0
    world_list = list(range(world if 0 < world <= WORLD_SIZE_MAX else 0))  # a cache entry older than the check
    basis = np.array([BASES.index("group") if ranks else BASES.index("world") for ranks in lists], np.int64)
    lists = [ranks or world_list for ranks in lists]
    width = max([len(x) for x in lists] + [2])
    table = np.full((len(lists), width), -1, np.int64)
    for i, ranks in enumerate(lists):  # per distinct group
        table[i, :len(ranks)] = ranks
    inv = inv.reshape(-1)
    count = np.array([len(x) for x in lists], np.int64)[inv]
    return table[inv], count, basis[inv]


def _parse_ranks(text: str) -> list[int]:
    try:
        got = json.loads(text)
    except (ValueError, RecursionError):
        return []
    ok = isinstance(got, list) and all(isinstance(x, int) for x in got)
    return [int(x) for x in got] if ok else []


def _first_of_each_op(op: I32) -> B:
    """True on each kernel without an op and on the first kernel of each op."""
    out: B = op < 0
    _, first = np.unique(op, return_index=True)
    out[first] = True
    return out


@dataclass(frozen=True)
class Cells:
    """The combined cells, one per (src, dst, op, basis), and the unplaced kernels of every rank."""

    src: I32
    dst: I32
    op: S
    basis: S
    count: I64  # ops counted
    bytes: I64  # known sizes summed
    time_ns: I64
    bandwidth_gbps: npt.NDArray[np.float64]  # bytes / time of the sized entries (NaN none)
    unplaced_count: int
    unplaced_time_ns: int


def combine_links(records: Mapping[int, RankLinks | None]) -> Cells | None:
    """Every rank's entries, each transfer seen from one end (see the module docstring); None when none."""
    recs = [r for r in records.values() if r is not None]
    if not recs:
        return None
    profiled = np.array(sorted(records), np.int64)
    by = np.concatenate([np.full(len(r), r.rank, np.int64) for r in recs])
    src = np.concatenate([r.src for r in recs]).astype(np.int64)
    dst = np.concatenate([r.dst for r in recs]).astype(np.int64)
    keep = (by == src) | ((by == dst) & ~np.isin(src, profiled))
    key = np.stack([src, dst, np.concatenate([r.op for r in recs]), np.concatenate([r.basis for r in recs])],
                   axis=1).astype(np.int64)[keep]
    values = [np.concatenate([getattr(r, f) for r in recs])[keep] for f in ("bytes", "time_ns", "sized_time_ns",
                                                                              "count")]
    uniq, (b, t, t_sized, ops) = _sum_cells(key, values)
    bw = np.where((t_sized > 0) & (b > 0), b / np.maximum(t_sized, 1), np.nan)  # bytes/ns == GB/s
    order = np.lexsort((uniq[:, 1], uniq[:, 0], -b))
    return Cells(uniq[order, 0].astype(np.int32), uniq[order, 1].astype(np.int32),
                 np.array(OPS, dtype=object)[uniq[order, 2]], np.array(BASES, dtype=object)[uniq[order, 3]],
                 ops[order], b[order], t[order], bw[order], sum(r.unplaced_count for r in recs),
                 sum(r.unplaced_time_ns for r in recs))
