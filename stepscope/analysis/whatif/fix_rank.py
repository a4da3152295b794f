"""Fix a slow rank: what the job's step would be had a straggler arrived with the others.

The arrival analysis (:mod:`stepscope.analysis.arrivals`) names, per collective, the rank that
arrived last and its *lateness* (its arrival − the second-to-last one's). The fix: at every
collective ``rank`` arrived last at, it arrives with the second-to-last rank. Before each such
collective its host work (ops, launch calls and its DataLoader: not blocking calls, which wait for
the device) from its
previous collective (or its step's start) to the collective's launch call takes that collective's
lateness less, and so does its device work (not communication) from the same start to its arrival;
whichever bounded its arrival, it arrives that much earlier. What the *job* gains is what the job
replay (:mod:`.job`) gives: the other ranks' waits shrink only as far as their own work lets them
(a rank arriving second-to-last on its own host path does not move), so the saving is at most —
and often less than — the sum of the lateness.

:mod:`.job_whatif` (registry key ``JOB_WHATIF``) replays the fix of every culprit on the job from
per-rank records; the ``straggler-rank`` rule's gain is its saving.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import numpy.typing as npt

from stepscope.analysis.arrivals import Arrivals
from stepscope.analysis.common import I64
from stepscope.analysis.whatif.graph import SEG_HOST, SEG_INPUT, SEG_LAUNCH, StepGraph
from stepscope.analysis.whatif.replay import Durations

B = npt.NDArray[np.bool_]


def fix_rank_basis(rank: int) -> str:
    return (f"rank {rank} arrives with the second-to-last rank at every collective it was last at: its "
            "host and device work before each takes that collective's lateness less")


def fixed_durations(g: StepGraph, d: Durations, a: Arrivals, comm: B) -> Durations:
    """The rank's durations with its lateness removed (module docstring); ``comm``: per device
    activity of ``g``, whether it is communication."""
    late = _lateness_windows(a, g.rank)
    if late is None:
        return d
    gap0, launch, arrive, cut = late
    host = (g.host.seg_kind == SEG_HOST) | (g.host.seg_kind == SEG_LAUNCH) | (g.host.seg_kind == SEG_INPUT)
    seg = _cut_in_windows(g.host.t_ns[:-1], g.host.t_ns[1:], d.host_seg_ns, host, gap0, launch, cut)
    dev = _cut_in_windows(g.device.start_ns, g.device.end_ns, d.device_ns, ~comm, gap0, arrive, cut)
    return replace(d, host_seg_ns=seg, device_ns=dev)


def _lateness_windows(a: Arrivals, rank: int) -> tuple[I64, I64, I64, I64] | None:
    """Per collective the rank arrived last at, in its own clock: the gap's start, its launch call
    (its arrival where unlinked), its arrival, and the lateness."""
    if rank not in a.ranks:
        return None
    i = a.ranks.index(rank)
    mine = np.flatnonzero(a.last_rank == rank)
    if len(mine) == 0:
        return None
    off = int(a.m.clock_offset_ns[i])
    arrive = a.m.arrival_ns[mine, i] + off
    enq = a.m.enqueue_ns[mine, i]
    launch = np.minimum(np.where(enq >= 0, enq + off, arrive), arrive)
    return a.m.gap_start_ns[mine, i] + off, launch, arrive, a.lateness_ns[mine].astype(np.int64)


def _cut_in_windows(a: I64, b: I64, dur: I64, eligible: B, w0: I64, w1: I64, cut: I64) -> I64:
    """Shorten the eligible items' time inside each window [w0, w1) by the window's ``cut`` in all
    (each by the same share of its part inside; at most all of it)."""
    out = dur.copy()
    for lo, hi, c in zip(w0.tolist(), w1.tolist(), cut.tolist()):  # per late collective, a handful
        inside = np.clip(np.minimum(b, hi) - np.maximum(a, lo), 0, None) * eligible
        total = float(inside.sum())
        if total <= 0:
            continue
        frac = np.divide(inside, b - a, out=np.zeros(len(a)), where=b > a)
        out = out - np.round(out * frac * min(1.0, c / total)).astype(np.int64)
    cut_ns: I64 = out
    return cut_ns
