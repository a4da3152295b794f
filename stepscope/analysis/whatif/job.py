"""Replay every rank of a job together: the collectives matched across ranks tie their replays.

A collective kernel cannot end before the last of its participants has arrived (started its own
kernel), plus the transfer: on each rank it ends at ``max(its arrival, the last arrival) +
transfer``, the transfer measured on that rank (its end − the later of its arrival and the last
arrival: on the last rank to arrive, its whole duration). The matching and the clock offsets are the
arrival analysis' (:func:`stepscope.analysis.arrivals.match`). Every rank's replay
(:class:`~.replay.RankRun`) runs until it needs a last arrival not known yet; when every
participant of a collective has arrived, its last arrival is published to all of them and the
ranks go on. The unchanged graphs give back every measured time: each arrival and each end is the
measured one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis.arrivals import TIE_NS, Arrivals, Matched, compute_arrivals
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import I64
from stepscope.analysis.whatif.graph import _NONE, SEG_COMM, StepGraph
from stepscope.analysis.whatif.p2p import P2PRecords, p2p_records, pair_p2p
from stepscope.analysis.whatif.replay import Durations, RankRun, Replay, replay
from stepscope.model.trace import Trace

I2 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class JobEdges:
    """Collectives × ranks: each participant's device activity (index into its graph's
    :class:`~.graph.DeviceWork`, -1 absent), its measured transfer and arrival (aligned clock)."""

    ranks: tuple[int, ...]
    present: npt.NDArray[np.bool_]
    act: I2
    hact: I2  # the participant's host-run collective instead (index into its graph's HostCollectives), -1 absent
    transfer_ns: I2
    arrival_ns: I2  # measured, aligned: the arrival of a participant that is not replayed
    offset_ns: I64  # per rank: its clock − the aligned clock
    p2p: npt.NDArray[np.bool_]  # per row: a send and its receive (:mod:`.p2p`), not a group's collective


def job_edges(trace: Trace, graphs: Mapping[int, StepGraph]) -> JobEdges | None:
    """The cross-rank edges of a trace: its matched collectives and its matched sends and receives
    (None for one rank, or nothing matched on two ranks)."""
    if len(trace.rank_ids) < 2:
        return None
    try:
        arrivals: Arrivals | None = compute_arrivals(trace)
    except NotApplicable:
        arrivals = None
    return matched_edges(arrivals, {r: p2p_records(trace, r) for r in trace.rank_ids}, graphs)


def matched_edges(arrivals: Arrivals | None, p2p: Mapping[int, P2PRecords], graphs: Mapping[int, StepGraph]
                  ) -> JobEdges | None:
    """The edges of the collectives ``arrivals`` matched (None: none) and of the sends and receives
    that pair up (from per-rank records, so a run held rank by rank gets them too)."""
    return with_p2p(edges_of(arrivals.m, graphs) if arrivals is not None else None, p2p, graphs)


def edges_of(m: Matched, graphs: Mapping[int, StepGraph]) -> JobEdges | None:
    """The edges of matched collectives; a collective that ends on some rank before its last
    participant arrived (the match or the clocks disagree with the trace) is left out."""
    arr = np.where(m.present, m.arrival_ns, _NONE)
    last = arr.max(axis=1)
    plausible = (~m.present | (m.end_ns >= last[:, None] - TIE_NS)).all(axis=1)
    keep = np.flatnonzero(plausible)
    if len(keep) == 0:
        return None
    act = np.full((len(keep), len(m.ranks)), -1, np.int64)
    hact = np.full((len(keep), len(m.ranks)), -1, np.int64)
    for i, r in enumerate(m.ranks.tolist()):  # per rank
        g = graphs.get(int(r))
        if g is not None:
            act[:, i] = np.where(m.present[keep, i], activity_index(g, m.row[keep, i]), -1)
            hact[:, i] = np.where(m.present[keep, i], _row_index(g.host_colls.row, m.row[keep, i]), -1)
    transfer = np.where(m.present[keep], m.end_ns[keep] - np.maximum(m.arrival_ns[keep], last[keep, None]), -1)
    return JobEdges(tuple(int(r) for r in m.ranks), m.present[keep], act, hact, transfer, arr[keep],
                    m.clock_offset_ns, np.zeros(len(keep), bool))


def activity_index(g: StepGraph, rows: I64) -> I64:
    """Per event row, its index in the graph's device work (-1: not there)."""
    return _row_index(g.device.row, rows)


def _row_index(table: I64, rows: I64) -> I64:
    """Per event row, its index in ``table`` (-1: not there)."""
    if len(table) == 0:
        return np.full(len(rows), -1, np.int64)
    by_row = np.argsort(table)
    pos = np.minimum(np.searchsorted(table[by_row], rows), len(by_row) - 1)
    out: I64 = np.where(table[by_row[pos]] == rows, by_row[pos], -1).astype(np.int64)
    return out


def with_p2p(e: JobEdges | None, records: Mapping[int, P2PRecords], graphs: Mapping[int, StepGraph]
             ) -> JobEdges | None:
    """``e`` with the matched sends and receives added as two-rank rows (:mod:`.p2p`), in ``e``'s
    aligned clock (a rank without collectives: its own); a pair that ends before its other side
    arrived (the clocks or the match disagree with the trace) is left out."""
    pairs = pair_p2p(records)
    if len(pairs.src) == 0:
        return e
    ranks = sorted(set(e.ranks if e is not None else ()) | set(pairs.src.tolist()) | set(pairs.dst.tolist()))
    offset = np.zeros(len(ranks), np.int64)
    if e is not None:
        offset[[ranks.index(r) for r in e.ranks]] = e.offset_ns
    shape = (len(pairs.src), len(ranks))
    arr, end, act = np.full(shape, _NONE, np.int64), np.full(shape, _NONE, np.int64), np.full(shape, -1, np.int64)
    for who, idx in ((pairs.src, pairs.src_i), (pairs.dst, pairs.dst_i)):  # the senders, the receivers
        for r in np.unique(who).tolist():  # per rank
            k, rec, c = np.flatnonzero(who == r), records[r], ranks.index(r)
            arr[k, c] = rec.start_ns[idx[k]] - offset[c]
            end[k, c] = rec.end_ns[idx[k]] - offset[c]
            g = graphs.get(r)
            act[k, c] = activity_index(g, rec.row[idx[k]]) if g is not None else -1
    present = arr > _NONE
    last = arr.max(axis=1)
    ok = np.flatnonzero((~present | (end >= last[:, None] - TIE_NS)).all(axis=1))
    if len(ok) == 0:
        return e
    transfer = np.where(present, end - np.maximum(arr, last[:, None]), -1)[ok]
    p2p = JobEdges(tuple(ranks), present[ok], act[ok], np.full_like(act[ok], -1), transfer, arr[ok], offset,
                   np.ones(len(ok), bool))
    return p2p if e is None else _stack(_widen(e, ranks, offset), p2p)


def _widen(e: JobEdges, ranks: list[int], offset: I64) -> JobEdges:
    """``e`` with a column per rank of ``ranks`` (absent where it had none)."""
    cols = [ranks.index(r) for r in e.ranks]
    n = len(e.act)

    def grow(x: I2, fill: int) -> I2:
        out = np.full((n, len(ranks)), fill, x.dtype)
        out[:, cols] = x
        return out

    present = np.zeros((n, len(ranks)), bool)
    present[:, cols] = e.present
    return JobEdges(tuple(ranks), present, grow(e.act, -1), grow(e.hact, -1), grow(e.transfer_ns, -1),
                    grow(e.arrival_ns, _NONE), offset, e.p2p)


def _stack(a: JobEdges, b: JobEdges) -> JobEdges:
    return JobEdges(a.ranks, np.vstack([a.present, b.present]), np.vstack([a.act, b.act]), np.vstack([a.hact, b.hact]),
                    np.vstack([a.transfer_ns, b.transfer_ns]), np.vstack([a.arrival_ns, b.arrival_ns]), a.offset_ns,
                    np.concatenate([a.p2p, b.p2p]))


def replay_job(graphs: Mapping[int, StepGraph], durs: Mapping[int, Durations], e: JobEdges | None
               ) -> dict[int, Replay]:
    """Replay every rank with these durations, tied by the collectives (alone when ``e`` is None)."""
    if e is None:
        return {r: replay(g, durs[r]) for r, g in graphs.items()}
    runs = {r: RankRun(g, durs[r], _transfers(g, durs[r], e, r), _host_transfers(g, durs[r], e, r))
            for r, g in graphs.items()}
    cols = {r: e.ranks.index(r) for r in runs if r in e.ranks}  # a rank in no matched edge runs untied
    known = np.zeros(len(e.act), bool)
    while True:  # each turn publishes a collective's last arrival or breaks a cycle: it ends
        for run in runs.values():
            if not run.done:
                run.run()
        if all(run.done for run in runs.values()):
            break
        arrived = _arrivals(runs, cols, e)
        ready = ~known & ((arrived > _NONE) | ~e.present).all(axis=1)
        if not ready.any():
            if any(run.streams.unblock() for run in runs.values()):
                continue
            some = np.flatnonzero(~known & (arrived > _NONE).any(axis=1))
            if len(some) == 0:
                break
            ready[some[0]] = True  # a participant never arrives (the match is wrong): the others go on
        _publish(runs, cols, e, np.flatnonzero(ready), arrived.max(axis=1))
        known |= ready
    return {r: run.result() for r, run in runs.items()}


def _transfers(g: StepGraph, dur: Durations, e: JobEdges, rank: int) -> I64:
    """Per device activity of the rank: its transfer (scaled as its duration was); not a collective: _NONE."""
    out = np.full(len(g.device.row), _NONE, np.int64)
    if rank not in e.ranks:
        return out
    i = e.ranks.index(rank)
    mine = e.act[:, i] >= 0
    k = e.act[mine, i]
    measured = g.device.dur_ns[k]
    scale = np.divide(dur.device_ns[k], measured, out=np.ones(len(k)), where=measured > 0)
    out[k] = np.round(e.transfer_ns[mine, i] * scale).astype(np.int64)
    return out


def _host_transfers(g: StepGraph, dur: Durations, e: JobEdges, rank: int) -> I64:
    """Per host-run collective of the rank: its transfer where the job ties it (scaled as the host's
    communication segments over it were: a change that hides communication hides its transfer too),
    else _NONE."""
    out = np.full(len(g.host_colls.row), _NONE, np.int64)
    if rank in e.ranks:
        i = e.ranks.index(rank)
        mine = e.hact[:, i] >= 0
        k = e.hact[mine, i]
        out[k] = np.round(e.transfer_ns[mine, i] * _comm_scale(g, dur)[k]).astype(np.int64)
    return out


def _comm_scale(g: StepGraph, dur: Durations) -> npt.NDArray[np.float64]:
    """Per host-run collective: its span's communication segments' time with these durations over the
    measured (1 where its span has none)."""
    comm = g.host.seg_kind == SEG_COMM
    cum = [np.concatenate([[0], np.cumsum(np.where(comm, s, 0))]) for s in (np.diff(g.host.t_ns), dur.host_seg_ns)]
    hc = g.host_colls
    before, after = (c[hc.end_pt] - c[hc.start_pt] for c in cum)
    out: npt.NDArray[np.float64] = np.divide(after, before, out=np.ones(len(hc.row)), where=before > 0)
    return out


def _arrivals(runs: Mapping[int, RankRun], cols: Mapping[int, int], e: JobEdges) -> I2:
    """Collectives × ranks: replayed arrivals (aligned), measured ones for ranks not replayed."""
    out = np.where(e.act >= 0, _NONE, e.arrival_ns)
    for r, i in cols.items():
        run = runs[r]
        mine = np.flatnonzero(e.act[:, i] >= 0)
        a = run.streams.arrival[0, e.act[mine, i]]
        out[mine, i] = np.where(a > _NONE, a - e.offset_ns[i], _NONE)
        host = np.flatnonzero(e.hact[:, i] >= 0)  # its host-run collectives
        h = run.host_arrivals(e.hact[host, i])
        out[host, i] = np.where(h > _NONE, h - e.offset_ns[i], _NONE)
    return out


def _publish(runs: Mapping[int, RankRun], cols: Mapping[int, int], e: JobEdges, which: I64, last: I64) -> None:
    for r, i in cols.items():
        run = runs[r]
        for c in which[e.act[which, i] >= 0].tolist():  # per collective resolved this turn
            run.streams.resolve(int(e.act[c, i]), int(last[c] + e.offset_ns[i]))
        host = which[e.hact[which, i] >= 0]
        run.resolve_hosts(e.hact[host, i], last[host] + e.offset_ns[i])


def collective_waits_ns(e: JobEdges, rps: Mapping[int, Replay] | None = None) -> I64:
    """Per rank of ``e.ranks``: its wait at the group collectives (the last arrival − its own; the union
    of these intervals, as the arrivals' ``wait_total_ns``: collectives that wait together count once),
    measured, or replayed where ``rps`` holds the rank's replay (a collective starts at its arrival)."""
    arr = e.arrival_ns.copy()
    for i, r in enumerate(e.ranks):  # per rank
        rp = (rps or {}).get(r)
        mine, host = e.act[:, i] >= 0, e.hact[:, i] >= 0
        if rp is not None:
            arr[mine, i] = rp.device_start_ns[e.act[mine, i]] - e.offset_ns[i]
            arr[host, i] = rp.host_coll_start_ns[e.hact[host, i]] - e.offset_ns[i]
    present = e.present & ~e.p2p[:, None]  # the group collectives only
    last = np.where(present, arr, _NONE).max(axis=1)
    c, k = np.nonzero(present)
    return intervals.union_length_by_group(k, arr[c, k], last[c], len(e.ranks))
