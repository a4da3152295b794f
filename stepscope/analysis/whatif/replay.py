"""Re-time a rank's :class:`~.graph.StepGraph` with changed durations: the what-if replay.

The host chain advances segment by segment; at each blocking call it waits for the device work the
call waited for, so the replay goes from one blocking call to the next (an *epoch*): the host
points up to the call (a cumulative sum), then each stream's activities launched so far (one
vectorised max-plus scan per stream: an activity ends at ``max(ready, previous end + gap) + dur``,
which is ``C + cummax(ready + dur - C)`` with ``C`` the running sum of gaps and durations), then the
call's return. The step windows are then rebuilt from the replayed times exactly as the step
breakdown builds them from the measured ones, so the unchanged graph gives back the measured steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from stepscope.analysis.breakdown import stretch_windows
from stepscope.analysis.common import I64
from stepscope.analysis.whatif.graph import _NONE, SEG_COMM, StepGraph
from stepscope.analysis.whatif.streams import I2, Streams


@dataclass(frozen=True)
class Durations:
    """What a transformation changes: every host segment's and device activity's duration, and
    which blocking calls no longer block (they cost only their own call)."""

    host_seg_ns: I64
    device_ns: I64
    sync_dropped: npt.NDArray[np.bool_]

    @staticmethod
    def measured(g: StepGraph) -> Durations:
        return Durations(np.diff(g.host.t_ns), g.device.dur_ns.copy(), np.zeros(len(g.syncs.row), bool))

    def same_as(self, other: Durations) -> bool:
        """Every duration and every dropped sync equal: a change that changes nothing."""
        return (np.array_equal(self.host_seg_ns, other.host_seg_ns) and np.array_equal(self.device_ns, other.device_ns)
                and np.array_equal(self.sync_dropped, other.sync_dropped))

    def scaled(self, hit: npt.NDArray[np.bool_], factor: float | npt.NDArray[np.float64]) -> Durations:
        """The device activities ``hit`` (a mask over the graph's) at ``factor`` × their time: one number, or
        one per hit activity."""
        dev = self.device_ns.copy()
        dev[hit] = np.round(dev[hit] * factor).astype(np.int64)
        return replace(self, device_ns=dev)


@dataclass(frozen=True)
class Replay:
    """Replayed times: every host point, every device activity, every step window."""

    host_t_ns: I64
    device_start_ns: I64
    device_end_ns: I64
    start_ns: I64
    end_ns: I64
    host_coll_start_ns: I64  # per host-run collective of the graph: when the rank arrived at it

    @property
    def step_ns(self) -> I64:
        return self.end_ns - self.start_ns


class Diverged(Exception):
    """Variants replayed in lockstep would take different paths: a blocking call dropped in some of
    them waits in the others for device work not timed yet (:func:`replay_all` then replays each alone)."""


class RankRun:
    """A rank's replay, resumable: it goes from blocking call to blocking call and stops where it
    needs a collective's last arrival that the job replay (:mod:`.job`) has not supplied yet.
    Several durations of the same graph (``dur`` a sequence) are replayed in lockstep, one row each.

    A collective the host runs (gloo on the CPU) that the job replay ties (``host_coll_transfer_ns``
    given for it) is a stop like a blocking call: the host returns from it at ``max(its arrival, the
    last arrival) + transfer``; a blocking call inside it is part of it."""

    def __init__(self, g: StepGraph, dur: Durations | Sequence[Durations], coll_transfer_ns: I64 | None = None,
                 host_coll_transfer_ns: I64 | None = None) -> None:
        durs = [dur] if isinstance(dur, Durations) else list(dur)
        self.g, self.n = g, len(durs)
        self.seg = np.stack([d.host_seg_ns for d in durs]).reshape(self.n, -1)
        self.dropped = np.stack([d.sync_dropped for d in durs]).reshape(self.n, -1)
        t = g.host.t_ns
        self.tp = np.full((self.n, len(t)), _NONE, np.int64)
        if len(t):
            self.tp[:, 0] = t[0]
        self.streams = Streams(g, np.stack([d.device_ns for d in durs]).reshape(self.n, -1),
                               None if coll_transfer_ns is None else coll_transfer_ns[None, :])
        nh = len(g.host_colls.row)
        self.hc_transfer = (np.full(nh, _NONE, np.int64) if host_coll_transfer_ns is None
                            else host_coll_transfer_ns.astype(np.int64))
        self.hc_last = np.full((self.n, nh), _NONE, np.int64)  # per tied host collective: the last arrival
        self.stops = _stops(g, self.hc_transfer > _NONE)
        self.k = self.cur = 0
        self.alone = coll_transfer_ns is None and host_coll_transfer_ns is None  # nothing from other ranks
        self.done = False

    def run(self) -> bool:
        """Advance as far as possible; True when the whole graph is timed."""
        seg, tp, st, last = self.seg, self.tp, self.stops, self.tp.shape[1] - 1
        while self.k < len(st.idx):
            a, b, j = int(st.start_pt[self.k]), int(st.end_pt[self.k]), int(st.idx[self.k])
            _advance_host(tp, seg, self.cur, a)
            self.cur = max(self.cur, a)
            self.streams.advance(tp, a)
            back = (self._coll_return(j, tp[:, a], self._own_ns(a, b)) if st.coll[self.k]
                    else _return_time(self.g, self.dropped[:, j], self.streams, j, tp[:, a]))
            if back is None:
                if self.alone and self.streams.unblock():
                    continue
                return False
            tp[:, b] = back
            if b > a + 1:  # (b - 1 of a call at point 0 lasting 0 would slice seg from the end)
                tp[:, a + 1:b] = np.minimum(tp[:, a, None] + np.cumsum(seg[:, a:b - 1], axis=1), tp[:, b, None])
            self.cur, self.k = b, self.k + 1
        _advance_host(tp, seg, self.cur, last)
        self.cur = max(self.cur, last)
        self.streams.advance(tp, last + 1)
        while self.alone and not self.streams.timed.all() and self.streams.unblock():
            self.streams.advance(tp, last + 1)
        self.done = bool(self.streams.timed.all())
        return self.done

    def _coll_return(self, j: int, called: I64, own_ns: I64) -> I64 | None:
        """When the host leaves tied host collective j: after the last arrival (None: not known yet). One
        that runs beside the loop began before the loop's wait (``called``) and ends at its arrival or
        the last one's plus its transfer, and not before the loop's own work over the wait (``own_ns``)."""
        last = self.hc_last[:, j]
        if (last <= _NONE).any():
            return None
        hc = self.g.host_colls
        if not hc.beside[j]:
            on_path: I64 = np.maximum(called, last) + self.hc_transfer[j]
            return on_path
        back: I64 = np.maximum(called + own_ns, np.maximum(self.tp[:, hc.start_pt[j]], last) + self.hc_transfer[j])
        return back

    def _own_ns(self, a: int, b: int) -> I64:
        """The host chain's own (not communication) segments' time between points a and b, per variant."""
        own: I64 = np.where(self.g.host.seg_kind[a:b] != SEG_COMM, self.seg[:, a:b], 0).sum(axis=1)
        return own

    def host_arrivals(self, j: I64) -> I64:
        """When the rank arrived at host collectives ``j`` (the first variant), _NONE where not replayed yet."""
        out: I64 = self.tp[0, self.g.host_colls.start_pt[j]]
        return out

    def resolve_hosts(self, j: I64, last_arrival_ns: I64) -> None:
        """The job's last arrivals at host collectives ``j`` (this rank's clock) are known."""
        self.hc_last[:, j] = last_arrival_ns

    def results(self) -> list[Replay]:
        """One replay per durations given, in order."""
        st, out = self.streams, []
        for v in range(self.n):  # per variant (a handful)
            start, end = _windows(self.g, self.tp[v], st.start[v], st.end[v])
            out.append(Replay(self.tp[v], st.start[v], st.end[v], start, end,
                              self.tp[v][self.g.host_colls.start_pt]))
        return out

    def result(self) -> Replay:
        return self.results()[0]


def replay(g: StepGraph, dur: Durations) -> Replay:
    """Re-time one rank's graph alone with these durations (see the module docstring)."""
    r = RankRun(g, dur)
    r.run()
    return r.result()


def replay_all(g: StepGraph, durs: Sequence[Durations]) -> list[Replay]:
    """:func:`replay` of each durations, the same answers: in lockstep (one pass of the epochs for all
    of them), or one by one where they diverge."""
    try:
        r = RankRun(g, durs)
        r.run()
        return r.results()
    except Diverged:
        return [replay(g, d) for d in durs]


@dataclass(frozen=True)
class Stops:
    """Where the host's replay waits, in time order, none inside another: blocking calls and tied
    host collectives (``coll``); ``idx`` indexes :class:`~.graph.Syncs` or :class:`~.graph.HostCollectives`."""

    start_pt: I64
    end_pt: I64
    idx: I64
    coll: npt.NDArray[np.bool_]


def _stops(g: StepGraph, tied: npt.NDArray[np.bool_]) -> Stops:
    """The blocking calls, and the tied host collectives with the calls inside them left out (a
    call a collective makes, or one made while it runs, returns before it ends)."""
    sy, hc = g.syncs, g.host_colls
    if not tied.any():
        return Stops(sy.start_pt, sy.end_pt, np.arange(len(sy.row), dtype=np.int64), np.zeros(len(sy.row), bool))
    k = np.flatnonzero(tied & (hc.wait_pt >= 0))  # one beside the loop is waited for only where a wait ends it
    a = np.concatenate([hc.wait_pt[k], sy.start_pt])
    b = np.concatenate([hc.end_pt[k], sy.end_pt])
    coll = np.concatenate([np.ones(len(k), bool), np.zeros(len(sy.row), bool)])
    idx = np.concatenate([k, np.arange(len(sy.row))]).astype(np.int64)
    order = np.lexsort((~coll, a))  # by start; a collective before a call that starts with it
    a, b, coll, idx = a[order], b[order], coll[order], idx[order]
    keep = a >= np.concatenate([[np.iinfo(np.int64).min], np.maximum.accumulate(b)[:-1]])
    return Stops(a[keep], b[keep], idx[keep], coll[keep])


def _advance_host(tp: I2, seg: I2, cur: int, upto: int) -> None:
    if upto > cur:
        tp[:, cur + 1:upto + 1] = tp[:, cur, None] + np.cumsum(seg[:, cur:upto], axis=1)


def _return_time(g: StepGraph, dropped: npt.NDArray[np.bool_], streams: Streams, j: int, called: I64) -> I64 | None:
    """When blocking call j returns (per variant): after what it waited for (or its own cost where
    dropped); None while what it waited for is not timed yet."""
    sy = g.syncs
    tail = int(sy.tail_ns[j])
    t = g.host.t_ns
    own = called + min(int(t[sy.end_pt[j]] - t[sy.start_pt[j]]), tail)
    if dropped.all():
        return own
    k = int(sy.awaited[j])
    if k >= 0 and not streams.is_timed(k):
        if dropped.any():
            raise Diverged
        return None
    done = streams.end[:, k] if k >= 0 else called
    back: I64 = np.where(dropped, own, np.maximum(called, done) + tail)
    return back


def _windows(g: StepGraph, tp: I64, dev_start: I64, dev_end: I64) -> tuple[I64, I64]:
    """The step windows from replayed times, built as the step breakdown builds them."""
    st = g.steps
    if st.whole_trace:  # from the first host op or device activity to the last one's end
        lo = [*tp[st.host_start_pt].tolist(), *([int(dev_start.min())] if len(dev_start) else [])]
        hi = [*tp[st.host_end_pt].tolist(), *([int(dev_end.max())] if len(dev_end) else [])]
        if not lo or not hi:
            return np.array([tp.min() if len(tp) else 0], np.int64), np.array([tp.max() if len(tp) else 0], np.int64)
        return np.array([min(lo)], np.int64), np.array([max(hi)], np.int64)
    n = len(st.step)
    hs, he = tp[st.host_start_pt], tp[st.host_end_pt]
    inside = st.work_step >= 0
    ws = st.work_step[inside]
    count = np.bincount(ws, minlength=n).astype(np.int64)[:n]
    dmin = np.full(n, np.iinfo(np.int64).max)
    dmax = np.full(n, np.iinfo(np.int64).min)
    np.minimum.at(dmin, ws, dev_start[inside])
    np.maximum.at(dmax, ws, dev_end[inside])
    return stretch_windows(hs, he, dmin, dmax, count, st.outside_end_ns)
