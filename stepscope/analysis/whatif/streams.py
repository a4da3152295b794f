"""The device side of a rank's replay: each stream's activities timed in order, as far as what they
depend on is known.

An activity ends at ``max(ready, previous end + gap) + dur`` on its stream — one vectorised max-plus
scan per run of activities (``end = C + cummax(ready + dur − C)``, ``C`` the running sum of gaps and
durations). ``ready`` is its launch reaching the device (the host point + latency) and, for an
activity that waited for another stream (:attr:`~.graph.DeviceWork.wait_on`), that activity's end
+ the measured gap. A scan stops before an activity whose dependency is not timed yet: another
stream's activity (timed in a later pass of :meth:`Streams.advance`), or a collective whose last
participant's arrival is not known yet (the job replay, :mod:`.job`, supplies it). A collective
kernel *arrives* (starts) as any activity does and ends at ``max(arrival, last arrival) + transfer``.

Several *variants* of the same graph (the same activities with other durations: one per remedy) are
timed in lockstep, one row each: what is timed when, and where a scan stops, depends on the graph
alone, so one pass of Python control flow times them all.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stepscope.analysis.whatif.graph import _NONE, StepGraph, gather

B = npt.NDArray[np.bool_]
I2 = npt.NDArray[np.int64]  # (variants, n)


class Streams:
    """Per-stream progress of the scan: the next activity, the last end, what is timed. Times are
    (variants, activities); the progress (``next``, ``timed``) is the graph's, shared by the variants."""

    def __init__(self, g: StepGraph, dur: I2, coll_transfer_ns: I2 | None = None) -> None:
        dev = g.device
        n = len(dev.row)
        v = dur.shape[0]
        self.g = g
        self.start, self.end = np.zeros((v, n), np.int64), np.zeros((v, n), np.int64)
        self.timed = np.zeros(n, bool)
        self.bounds = dev.stream_first
        self.next = dev.stream_first[:-1].copy()
        self.last_end = np.full((v, len(self.next)), _NONE, np.int64)
        self.reach = np.empty(n, np.int64)  # per activity: the host point it needs (running max on its stream)
        for s in range(len(self.next)):
            lo, hi = int(dev.stream_first[s]), int(dev.stream_first[s + 1])
            self.reach[lo:hi] = np.maximum.accumulate(np.maximum(dev.launch_pt[lo:hi], 0))
        # a collective (a transfer where the job replay matched it) ends after its last participant arrives
        self.coll: B = np.zeros(n, bool)
        if coll_transfer_ns is not None:
            self.coll = np.asarray((coll_transfer_ns > _NONE).any(axis=0), bool)
        self.dur = np.where(self.coll, coll_transfer_ns, dur) if coll_transfer_ns is not None else dur
        self.last_arrival = np.full((v, n), _NONE, np.int64)  # per collective: the job's last arrival (rank clock)
        self.known = ~self.coll
        self.arrival = np.full((v, n), _NONE, np.int64)
        self.wait_on = dev.wait_on.copy()
        self.blockers = np.flatnonzero((dev.wait_on >= 0) | self.coll)
        # per activity, for the scans (an epoch times a dozen activities: fewer array calls each)
        self.launched, self.launch_pt0 = dev.launch_pt >= 0, np.maximum(dev.launch_pt, 0)
        self.gap_dur = dev.gap_ns + self.dur

    def advance(self, host_t: I2, upto_pt: int) -> None:
        """Time every activity launched at or before ``upto_pt`` whose dependencies are timed."""
        again = True
        while again:  # another pass when a stream waits for another stream's activity timed in this one
            moved = stalled = False
            for s in range(len(self.next)):
                m, w = self._advance_stream(s, host_t, upto_pt)
                moved, stalled = moved or m, stalled or w
            again = moved and stalled

    def _advance_stream(self, s: int, host_t: I2, upto_pt: int) -> tuple[bool, bool]:
        """Time what it can of stream ``s``: (whether it moved, whether it stopped at a wait on another stream)."""
        lo, hi = int(self.next[s]), int(self.bounds[s + 1])
        if lo >= hi or self.reach[lo] > upto_pt:  # done, or its next activity not launched yet
            return False, False
        stop = lo + int(np.searchsorted(self.reach[lo:hi], upto_pt, side="right"))
        bl = self.blockers[np.searchsorted(self.blockers, lo):np.searchsorted(self.blockers, stop)]
        stalled, plain = False, len(bl) == 0  # plain: no wait on another stream, no collective
        if len(bl):
            w = self.wait_on[bl]
            on_stream = (w >= 0) & ~gather(self.timed, w, 1).astype(bool)
            waiting = on_stream | ~self.known[bl]
            if waiting.any():
                first = int(np.argmax(waiting))
                stop, stalled = int(bl[first]), bool(on_stream[first])
        if stop > lo:
            self._scan(s, lo, stop, host_t, plain)
            self.next[s] = stop
        self._arrive(s, stop, hi, host_t, upto_pt)
        return stop > lo, stalled

    def _ready(self, s: int, lo: int, hi: int, host_t: I2, plain: bool = False) -> I2:
        """When each activity of [lo, hi) could start, its stream aside (launch, other streams);
        ``plain``: none of them waits on another stream."""
        dev = self.g.device
        at = host_t[:, self.launch_pt0[lo:hi]] if host_t.shape[1] else np.zeros((len(host_t), hi - lo), np.int64)
        ready = np.where(self.launched[lo:hi], at + dev.latency_ns[lo:hi], _NONE)
        if lo == int(self.bounds[s]) and not self.launched[lo]:
            ready[:, 0] = dev.start_ns[lo]  # nothing traced launched it: it keeps its measured start
        if plain:
            return ready
        w = self.wait_on[lo:hi]
        waited = np.where(w >= 0, self.end[:, np.maximum(w, 0)], _NONE) if self.end.shape[1] else ready
        return np.where(w >= 0, np.maximum(ready, waited + dev.wait_gap_ns[lo:hi]), ready)

    def _scan(self, s: int, lo: int, hi: int, host_t: I2, plain: bool = False) -> None:
        d = self.dur[:, lo:hi]
        ready = self._ready(s, lo, hi, host_t, plain)
        gated = ready if plain else np.where(self.coll[lo:hi], np.maximum(ready, self.last_arrival[:, lo:hi]), ready)
        c = np.cumsum(self.gap_dur[:, lo:hi], axis=1)
        f = np.maximum.accumulate(gated + d - c, axis=1)
        end = c + np.maximum(f, self.last_end[:, s, None])
        self.end[:, lo:hi] = end
        self.start[:, lo:hi] = end - d
        if not plain and self.coll[lo:hi].any():  # a collective starts when it arrives; ends after the last arrival
            coll = self.coll[lo:hi]
            prev = np.concatenate([self.last_end[:, s, None], end[:, :-1]], axis=1)
            arrive = np.maximum(ready, prev + self.g.device.gap_ns[lo:hi])
            self.start[:, lo:hi] = np.where(coll, arrive, self.start[:, lo:hi])
            self.arrival[:, lo:hi] = np.where(coll, arrive, self.arrival[:, lo:hi])
        self.timed[lo:hi] = True
        self.last_end[:, s] = end[:, -1]

    def _arrive(self, s: int, k: int, hi: int, host_t: I2, upto_pt: int) -> None:
        """A collective the stream stopped at arrives once it is launched and what precedes it is timed."""
        if k >= hi or not self.coll[k] or self.known[k] or self.arrival[0, k] > _NONE or self.reach[k] > upto_pt:
            return
        dev = self.g.device
        w = int(self.wait_on[k])
        if w >= 0 and not self.timed[w]:
            return
        self.arrival[:, k] = np.maximum(self._ready(s, k, k + 1, host_t)[:, 0], self.last_end[:, s] + dev.gap_ns[k])

    def resolve(self, k: int, last_arrival_ns: int) -> None:
        """The job's last arrival at collective activity ``k`` (this rank's clock) is known."""
        self.last_arrival[:, k] = last_arrival_ns
        self.known[k] = True

    def unblock(self) -> bool:
        """Break a cycle of waits between streams (inferred edges that contradict each other): drop
        the wait of every stream's next activity on an activity not timed yet. False: none to drop."""
        heads = self.next[self.next < self.bounds[1:]]
        w = self.wait_on[heads]
        stuck = heads[(w >= 0) & ~gather(self.timed, w, 1).astype(bool)]
        self.wait_on[stuck] = -1
        return len(stuck) > 0

    def is_timed(self, k: int) -> bool:
        return bool(self.timed[k])
