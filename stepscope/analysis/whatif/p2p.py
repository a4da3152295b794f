"""Point-to-point transfers as edges of the job replay: a send and its matching receive.

An NCCL send and its receive meet: neither kernel ends before both have started (each waits for
the other one's arrival), then the transfer runs — a collective of two. So the job replay
(:mod:`.job`) ties them as it ties a group's collective: each ends at ``max(its arrival, the
other's) + transfer``, the transfer measured on each side.

The match: rank *a*'s k-th send to rank *b* is rank *b*'s k-th receive from *a* (NCCL orders a
pair's transfers on its communicator). The peer is the one the trace records (``Dst Rank`` of a
send, ``Src Rank`` of a receive, PyTorch ≥ 2.4; :func:`~stepscope.analysis.common.recorded_peer`);
a kernel without one, or a fused send/receive (``SendRecv``: both directions at once, the
all-to-all's parts), is not tied. Per rank the input is :class:`P2PRecords` (small: a few arrays
per point-to-point kernel), so the edges come from per-rank summaries as from one whole trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis._memo import per_rank
from stepscope.analysis.activity import Activity, activity_of
from stepscope.analysis.collective_records import coll_type_of
from stepscope.analysis.comm import CollType, classify
from stepscope.analysis.common import I64, rank_rows, recorded_peer
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

B = npt.NDArray[np.bool_]
_DEVICE = (int(EventKind.KERNEL), int(EventKind.MEMCPY), int(EventKind.MEMSET))


@dataclass(frozen=True)
class P2PRecords:
    """One rank's sends and receives that name their peer, by device start (own clock)."""

    rank: int
    row: I64  # event rows
    send: B  # True: a send, False: a receive
    peer: I64
    start_ns: I64
    end_ns: I64


@dataclass(frozen=True)
class P2PPairs:
    """Matched transfers: per pair, the sender's and the receiver's rank and index into their records."""

    src: I64
    src_i: I64
    dst: I64
    dst_i: I64


@per_rank
def p2p_records(trace: Trace, rank: int) -> P2PRecords:
    ev = trace.events
    rows = rank_rows(trace, rank, _DEVICE)
    ctype = coll_type_of(trace, rows)
    one_way = (activity_of(trace)[rows] == Activity.COMMUNICATION) & np.isin(ctype, (CollType.SEND, CollType.RECV))
    rows, ctype = rows[one_way], ctype[one_way]
    peer = recorded_peer(trace, rows, classify(trace).comm_op[rows])
    keep = (peer >= 0) & (peer != rank)
    rows, ctype, peer = rows[keep], ctype[keep], peer[keep]
    order = np.lexsort((rows, ev["ts_ns"][rows]))
    rows, ctype, peer = rows[order], ctype[order], peer[order]
    start = ev["ts_ns"][rows].astype(np.int64)
    return P2PRecords(rank, rows, ctype == CollType.SEND, peer, start, start + ev["dur_ns"][rows])


def pair_p2p(records: Mapping[int, P2PRecords]) -> P2PPairs:
    """Each send matched with its receive (module docstring); unmatched ones are left out."""
    parts = [(np.full(len(r.row), rank, np.int64), np.arange(len(r.row), dtype=np.int64), r)
             for rank, r in records.items() if len(r.row)]
    if not parts:
        empty = np.zeros(0, np.int64)
        return P2PPairs(empty, empty, empty, empty)
    rank = np.concatenate([p[0] for p in parts])
    idx = np.concatenate([p[1] for p in parts])
    send = np.concatenate([p[2].send for p in parts])
    peer = np.concatenate([p[2].peer for p in parts])
    src, dst = np.where(send, rank, peer), np.where(send, peer, rank)
    ordinal = _ordinal(src, dst, send, idx)  # records are by start: the k-th of each (src, dst, side)
    key = np.lexsort((ordinal, dst, src))
    k_src, k_dst, k_ord, k_send = src[key], dst[key], ordinal[key], send[key]
    same = (k_src[:-1] == k_src[1:]) & (k_dst[:-1] == k_dst[1:]) & (k_ord[:-1] == k_ord[1:]) & (
        k_send[:-1] != k_send[1:])
    first = np.flatnonzero(same)
    a, b = key[first], key[first + 1]
    s, r = np.where(send[a], a, b), np.where(send[a], b, a)
    return P2PPairs(rank[s], idx[s], rank[r], idx[r])


def _ordinal(src: I64, dst: I64, send: B, idx: I64) -> I64:
    """Per entry, its rank among the entries of the same (src, dst, side), in start order."""
    order = np.lexsort((idx, send, dst, src))
    g_src, g_dst, g_send = src[order], dst[order], send[order]
    new = np.ones(len(order), bool)
    new[1:] = (g_src[1:] != g_src[:-1]) | (g_dst[1:] != g_dst[:-1]) | (g_send[1:] != g_send[:-1])
    group_start = np.maximum.accumulate(np.where(new, np.arange(len(order)), 0))
    out = np.empty(len(order), np.int64)
    out[order] = np.arange(len(order)) - group_start
    return out
