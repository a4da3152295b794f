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

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.breakdown import stretch_windows
from stepscope.analysis.common import I64
from stepscope.analysis.whatif.graph import _NONE, StepGraph
from stepscope.analysis.whatif.streams import Streams


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


@dataclass(frozen=True)
class Replay:
    """Replayed times: every host point, every device activity, every step window."""

    host_t_ns: I64
    device_start_ns: I64
    device_end_ns: I64
    start_ns: I64
    end_ns: I64

    @property
    def step_ns(self) -> I64:
        return self.end_ns - self.start_ns


class RankRun:
    """A rank's replay, resumable: it goes from blocking call to blocking call and stops where it
    needs a collective's last arrival that the job replay (:mod:`.job`) has not supplied yet."""

    def __init__(self, g: StepGraph, dur: Durations, coll_transfer_ns: I64 | None = None) -> None:
        self.g, self.dur = g, dur
        t = g.host.t_ns
        self.tp = np.full(len(t), _NONE, np.int64)
        if len(t):
            self.tp[0] = t[0]
        self.streams = Streams(g, dur.device_ns, coll_transfer_ns)
        self.j = self.cur = 0
        self.alone = coll_transfer_ns is None  # nothing from other ranks to wait for
        self.done = False

    def run(self) -> bool:
        """Advance as far as possible; True when the whole graph is timed."""
        g, seg, tp, sy = self.g, self.dur.host_seg_ns, self.tp, self.g.syncs
        while self.j < len(sy.row):
            a, b = int(sy.start_pt[self.j]), int(sy.end_pt[self.j])
            _advance_host(tp, seg, self.cur, a)
            self.cur = max(self.cur, a)
            self.streams.advance(tp, a)
            back = _return_time(g, self.dur, self.streams, self.j, int(tp[a]))
            if back is None:
                if self.alone and self.streams.unblock():
                    continue
                return False
            tp[b] = back
            if b > a + 1:  # (b - 1 of a call at point 0 lasting 0 would slice seg from the end)
                tp[a + 1:b] = np.minimum(tp[a] + np.cumsum(seg[a:b - 1]), tp[b])
            self.cur, self.j = b, self.j + 1
        _advance_host(tp, seg, self.cur, len(tp) - 1)
        self.cur = max(self.cur, len(tp) - 1)
        self.streams.advance(tp, len(tp))
        while self.alone and not self.streams.timed.all() and self.streams.unblock():
            self.streams.advance(tp, len(tp))
        self.done = bool(self.streams.timed.all())
        return self.done

    def result(self) -> Replay:
        st = self.streams
        start, end = _windows(self.g, self.tp, st)
        return Replay(self.tp, st.start, st.end, start, end)


def replay(g: StepGraph, dur: Durations) -> Replay:
    """Re-time one rank's graph alone with these durations (see the module docstring)."""
    r = RankRun(g, dur)
    r.run()
    return r.result()


def _advance_host(tp: I64, seg: I64, cur: int, upto: int) -> None:
    if upto > cur:
        tp[cur + 1:upto + 1] = tp[cur] + np.cumsum(seg[cur:upto])


def _return_time(g: StepGraph, dur: Durations, streams: Streams, j: int, called: int) -> int | None:
    """When blocking call j returns: after what it waited for (or its own cost when dropped); None
    while what it waited for is not timed yet."""
    sy = g.syncs
    tail = int(sy.tail_ns[j])
    if dur.sync_dropped[j]:
        t = g.host.t_ns
        return called + min(int(t[sy.end_pt[j]] - t[sy.start_pt[j]]), tail)
    k = int(sy.awaited[j])
    if k >= 0 and not streams.is_timed(k):
        return None
    done = int(streams.end[k]) if k >= 0 else called
    return max(called, done) + tail


def _windows(g: StepGraph, tp: I64, streams: Streams) -> tuple[I64, I64]:
    """The step windows from replayed times, built as the step breakdown builds them."""
    st = g.steps
    if st.whole_trace:
        if len(streams.end):
            return np.array([streams.start.min()], np.int64), np.array([streams.end.max()], np.int64)
        return np.array([tp.min() if len(tp) else 0], np.int64), np.array([tp.max() if len(tp) else 0], np.int64)
    n = len(st.step)
    hs, he = tp[st.host_start_pt], tp[st.host_end_pt]
    inside = st.work_step >= 0
    ws = st.work_step[inside]
    count = np.bincount(ws, minlength=n).astype(np.int64)[:n]
    dmin = np.full(n, np.iinfo(np.int64).max)
    dmax = np.full(n, np.iinfo(np.int64).min)
    np.minimum.at(dmin, ws, streams.start[inside])
    np.maximum.at(dmax, ws, streams.end[inside])
    return stretch_windows(hs, he, dmin, dmax, count, st.outside_end_ns)
