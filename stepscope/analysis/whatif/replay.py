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
from stepscope.analysis.whatif.graph import _NONE, StepGraph, gather


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


class _Streams:
    """Per-stream progress of the scan: the next activity and the last end."""

    def __init__(self, g: StepGraph, dur: I64) -> None:
        self.g, self.dur = g, dur
        dev = g.device
        n = len(dev.row)
        self.start, self.end = np.zeros(n, np.int64), np.zeros(n, np.int64)
        self.bounds = dev.stream_first
        self.next = dev.stream_first[:-1].copy()
        self.last_end = np.full(len(self.next), _NONE, np.int64)
        lp = dev.launch_pt.copy()
        self.reach = np.empty(n, np.int64)  # per activity: the host point it needs (running max on its stream)
        for s in range(len(self.next)):
            lo, hi = int(dev.stream_first[s]), int(dev.stream_first[s + 1])
            self.reach[lo:hi] = np.maximum.accumulate(np.maximum(lp[lo:hi], 0))

    def advance(self, host_t: I64, upto_pt: int) -> None:
        """Time every activity whose launch point is at or before ``upto_pt`` (host times known)."""
        dev = self.g.device
        for s in range(len(self.next)):
            lo, hi = int(self.next[s]), int(self.bounds[s + 1])
            if lo >= hi:
                continue
            stop = lo + int(np.searchsorted(self.reach[lo:hi], upto_pt, side="right"))
            if stop == lo:
                continue
            self._scan(s, lo, stop, host_t, dev.launch_pt[lo:stop])
            self.next[s] = stop

    def _scan(self, s: int, lo: int, hi: int, host_t: I64, lp: I64) -> None:
        dev = self.g.device
        d = self.dur[lo:hi]
        ready = np.where(lp >= 0, gather(host_t, lp, 0) + dev.latency_ns[lo:hi], _NONE)
        if lo == int(self.bounds[s]) and lp[0] < 0:
            ready[0] = dev.start_ns[lo]  # nothing traced launched it: it keeps its measured start
        c = np.cumsum(dev.gap_ns[lo:hi] + d)
        f = np.maximum.accumulate(ready + d - c)
        end = c + np.maximum(f, self.last_end[s])
        self.end[lo:hi] = end
        self.start[lo:hi] = end - d
        self.last_end[s] = end[-1]


def replay(g: StepGraph, dur: Durations) -> Replay:
    """Re-time the graph with these durations (see the module docstring)."""
    t, seg = g.host.t_ns, dur.host_seg_ns
    tp = np.empty(len(t), np.int64)
    if len(t):
        tp[0] = t[0]
    streams = _Streams(g, dur.device_ns)
    sy, cur = g.syncs, 0
    for j in range(len(sy.row)):
        a, b = int(sy.start_pt[j]), int(sy.end_pt[j])
        _advance_host(tp, seg, cur, a)
        streams.advance(tp, a)
        tp[b] = _return_time(g, dur, streams, j, int(tp[a]))
        if b > a + 1:  # (b - 1 of a call at point 0 lasting 0 would slice seg from the end)
            tp[a + 1:b] = np.minimum(tp[a] + np.cumsum(seg[a:b - 1]), tp[b])
        cur = b
    _advance_host(tp, seg, cur, len(t) - 1)
    streams.advance(tp, len(t))
    start, end = _windows(g, tp, streams)
    return Replay(tp, streams.start, streams.end, start, end)


def _advance_host(tp: I64, seg: I64, cur: int, upto: int) -> None:
    if upto > cur:
        tp[cur + 1:upto + 1] = tp[cur] + np.cumsum(seg[cur:upto])


def _return_time(g: StepGraph, dur: Durations, streams: _Streams, j: int, called: int) -> int:
    """When blocking call j returns: after what it waited for (or its own cost when dropped)."""
    sy = g.syncs
    tail = int(sy.tail_ns[j])
    if dur.sync_dropped[j]:
        t = g.host.t_ns
        return called + min(int(t[sy.end_pt[j]] - t[sy.start_pt[j]]), tail)
    k = int(sy.awaited[j])
    done = int(streams.end[k]) if k >= 0 else called
    return max(called, done) + tail


def _windows(g: StepGraph, tp: I64, streams: _Streams) -> tuple[I64, I64]:
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
