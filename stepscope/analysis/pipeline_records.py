"""One rank's pipeline record: the small, explicit per-rank input of the pipeline-parallel analysis
(:mod:`stepscope.analysis.pipeline`).

A rank takes part in a pipeline when it runs point-to-point communication kernels (send, recv,
send/recv — the one classification, :mod:`.activity` / :mod:`.comm`; the SendRecv kernels of an
all-to-all are all-to-all, not point-to-point; a SendRecv kernel whose op names no known collective
— ``batch_isend_irecv``'s "coalesced" — is point-to-point by its kernel name). Its record holds, per step window
(:func:`~stepscope.analysis.common.step_windows`):

* ``busy_ns``: the union of its compute kernels inside the window (the stage's work);
* ``other_ns``: its other device work (collectives, copies, memsets) not overlapped by compute;
* ``warmup_ns``: window start → its first device work (compute or other; the whole window when none);
* ``cooldown_ns``: the end of its last device work → window end;
* ``p2p_wait_ns``: its point-to-point kernels' union not overlapped by other device work — the time its
  device sat in a recv (or a send) waiting for the neighbour stage, with no other work;
* ``p2p_count``: point-to-point kernels started in the window;

plus the peers its point-to-point kernels name (``Dst Rank`` of a send, ``Src Rank`` of a recv:
global ranks, PyTorch ≥ 2.4) and the process groups they name (``Process Group Ranks``, as
recorded), which give the order of the stages, and the start of its first device work (the order by timing, for
traces that name no group). The window's *bubble* is what is left: window − busy − other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stepscope.analysis import intervals
from stepscope.analysis._memo import per_rank
from stepscope.analysis.activity import Activity, activity_of
from stepscope.analysis.collective_records import P2P_TYPES, coll_type_of
from stepscope.analysis.comm import classify
from stepscope.analysis.common import (
    I32,
    I64,
    Windows,
    interval_set,
    rank_rows,
    recorded_peer,
    step_windows,
    window_of,
)
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

DEVICE_KINDS = (int(EventKind.KERNEL), int(EventKind.MEMCPY), int(EventKind.MEMSET))


@dataclass(frozen=True)
class PipelineRecord:
    """One rank's point-to-point groups and per-window stage times (arrays aligned with ``step``)."""

    rank: int
    groups: tuple[str, ...]  # distinct "Process Group Ranks" texts of its p2p kernels ("[0, 1, 2, 3]")
    peers: tuple[int, ...]  # distinct ranks its p2p kernels send to or receive from, where recorded
    p2p_bytes: int  # summed known sizes of its p2p kernels
    first_work_ns: int  # start of its first device work inside a window, -1 none
    step: I32  # ProfilerStep number of each window (-1: one window over the rank's device work)
    window_ns: I64
    busy_ns: I64
    other_ns: I64
    warmup_ns: I64
    cooldown_ns: I64
    p2p_wait_ns: I64
    p2p_count: I64


@per_rank
def pipeline_record(trace: Trace, rank: int) -> PipelineRecord | None:
    """The rank's pipeline record, None when it runs no point-to-point kernel (see the module docstring)."""
    ev = trace.events
    cls = classify(trace)
    act = activity_of(trace)
    rows = rank_rows(trace, rank, DEVICE_KINDS)
    ctype = coll_type_of(trace, rows)
    is_p2p = (act[rows] == Activity.COMMUNICATION) & np.isin(ctype, P2P_TYPES)
    p2p = rows[is_p2p]
    if len(p2p) == 0:
        return None
    wins = step_windows(trace, rank)
    comp = interval_set(trace, rows[act[rows] == Activity.COMPUTE])
    work = interval_set(trace, rows[~is_p2p & (act[rows] != Activity.NONE)])
    busy = intervals.covered_in_windows(comp, wins.start_ns, wins.end_ns)
    other = intervals.covered_in_windows(work, wins.start_ns, wins.end_ns) - busy
    wait = intervals.covered_in_windows(intervals.subtract(interval_set(trace, p2p), work), wins.start_ns,
                                        wins.end_ns)
    first, last = _first_last(work, wins)
    warmup = np.where(first >= 0, first - wins.start_ns, wins.dur_ns)
    cooldown = np.where(last >= 0, wins.end_ns - last, 0)
    win = window_of(wins, ev["ts_ns"][p2p])
    count = np.bincount(win[win >= 0], minlength=len(wins)).astype(np.int64)
    pg = ev["pg_ranks"][p2p]
    op = cls.comm_op[p2p]
    pg = np.where(pg >= 0, pg, np.where(op >= 0, ev["pg_ranks"][np.maximum(op, 0)], -1))
    groups = tuple(sorted(trace.strings[int(g)] for g in np.unique(pg[pg >= 0])))  # distinct groups
    peers = tuple(int(p) for p in np.unique(recorded_peer(trace, p2p, op)) if p >= 0 and p != rank)
    size = np.maximum(cls.in_bytes[p2p], cls.out_bytes[p2p])
    in_win = first[first >= 0]
    return PipelineRecord(rank, groups, peers, int(size[size > 0].sum()), int(in_win[0]) if len(in_win) else -1,
                          wins.step.astype(np.int32), wins.dur_ns.astype(np.int64), busy.astype(np.int64),
                          other.astype(np.int64),
                          warmup.astype(np.int64), cooldown.astype(np.int64), wait.astype(np.int64), count)


def _first_last(iv: intervals.Intervals, wins: Windows) -> tuple[I64, I64]:
    """Per window, the first and last instant a normalised set covers inside it (-1 when none)."""
    s, e = iv
    lo, hi = wins.start_ns, wins.end_ns
    if len(s) == 0:
        none = np.full(len(lo), -1, np.int64)
        return none, none.copy()
    k = np.searchsorted(e, lo, side="right")  # the first interval ending after the window's start
    kk = np.minimum(k, len(s) - 1)
    has_first = (k < len(s)) & (s[kk] < hi)
    j = np.searchsorted(s, hi, side="left") - 1  # the last interval starting before the window's end
    jj = np.maximum(j, 0)
    has_last = (j >= 0) & (e[jj] > lo)
    first = np.where(has_first, np.maximum(s[kk], lo), -1)
    last = np.where(has_last, np.minimum(e[jj], hi), -1)
    return first.astype(np.int64), last.astype(np.int64)
