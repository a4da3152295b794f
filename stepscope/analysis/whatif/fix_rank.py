"""Fix a slow rank: what the job's step would be had a straggler arrived with the others.

The arrival analysis (:mod:`stepscope.analysis.arrivals`) names, per collective, the rank that
arrived last and its *lateness* (its arrival − the second-to-last one's). The fix: at every
collective ``rank`` arrived last at, it arrives with the second-to-last rank. Before each such
collective its host work (ops and launch calls: not DataLoader waits or blocking calls) from its
previous collective (or its step's start) to the collective's launch call takes that collective's
lateness less, and so does its device work (not communication) from the same start to its arrival;
whichever bounded its arrival, it arrives that much earlier. What the *job* gains is what the job
replay (:mod:`.job`) gives: the other ranks' waits shrink only as far as their own work lets them
(a rank arriving second-to-last on its own host path does not move), so the saving is at most —
and often less than — the sum of the lateness.

:data:`~stepscope.analysis.registry.JOB_WHATIF` replays the fix of every culprit on the job from
per-rank records (the rank's step graph, its communication mask, its collective records), so it
runs on per-rank summaries (map-reduce) as on one whole trace; the ``straggler-rank`` rule's gain
is its saving.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

import numpy as np
import numpy.typing as npt

from stepscope.analysis.activity import Activity, activity_of
from stepscope.analysis.arrivals import Arrivals, arrivals_of
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.collective_records import CollectiveRecords, collective_records
from stepscope.analysis.common import I64
from stepscope.analysis.whatif.graph import SEG_HOST, SEG_LAUNCH, StepGraph, step_graph
from stepscope.analysis.whatif.job import edges_of, job_steps_ns, replay_job
from stepscope.analysis.whatif.replay import Durations
from stepscope.model.trace import Trace

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
    host = (g.host.seg_kind == SEG_HOST) | (g.host.seg_kind == SEG_LAUNCH)
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


#: the largest step graph a rank's record carries (the graph grows with the rank's events; a
#: map-reduce summary should not): DLRM's ranks weigh 30-40 KiB
JOB_RECORD_MAX_BYTES = 128 << 10


def graph_nbytes(g: StepGraph) -> int:
    """The bytes of the graph's arrays."""
    parts = (g.host, g.syncs, g.device, g.steps)
    return sum(int(getattr(p, f.name).nbytes) for p in parts for f in fields(p)
               if isinstance(getattr(p, f.name), np.ndarray))


@dataclass(frozen=True)
class JobRecord:
    """One rank's input of the job replay: its step graph, which of its device activities are
    communication, its collective records."""

    graph: StepGraph
    comm: B
    coll: CollectiveRecords


@dataclass(frozen=True)
class JobWhatIf:
    """Per culprit of the arrival analysis: the job's mean step replayed with it fixed."""

    culprits: tuple[int, ...]
    measured_mean_ns: float
    predicted_mean_ns: npt.NDArray[np.float64]

    def saved_ns(self, rank: int) -> float | None:
        """What fixing the rank saves on the job's mean step (None: not a culprit)."""
        if rank not in self.culprits:
            return None
        return max(self.measured_mean_ns - float(self.predicted_mean_ns[self.culprits.index(rank)]), 0.0)

    @staticmethod
    def basis(rank: int) -> str:
        return fix_rank_basis(rank)


def job_record(trace: Trace, rank: int) -> JobRecord:
    """The registry's per-rank step: NotApplicable for a rank without collectives or host chain, or
    whose step graph is over :data:`JOB_RECORD_MAX_BYTES` (a map-reduce summary must stay small)."""
    coll = collective_records(trace, rank)
    if len(coll) == 0:
        raise NotApplicable("no collective kernels to tie the ranks' replays")
    g = step_graph(trace, rank)
    size = graph_nbytes(g)
    if size > JOB_RECORD_MAX_BYTES:
        raise NotApplicable(f"rank {rank}'s step graph ({size >> 10} KiB) is over the job replay's record limit "
                            f"({JOB_RECORD_MAX_BYTES >> 10} KiB): `stepscope whatif --fix-rank` replays it")
    return JobRecord(g, activity_of(trace)[g.device.row] == Activity.COMMUNICATION, coll)


def combine_job_whatif(records: Mapping[int, JobRecord]) -> JobWhatIf:
    """The registry's cross-rank step: each culprit fixed, the job replayed (module docstring)."""
    if len(records) < 2:
        raise NotApplicable("single-rank trace: no straggler to fix")
    a = arrivals_of(tuple(r.coll for r in records.values()))
    graphs = {r: rec.graph for r, rec in records.items()}
    e = edges_of(a.m, graphs)
    if e is None or not a.culprits:
        raise NotApplicable("no culprit at the collectives to fix")
    measured = {r: Durations.measured(g) for r, g in graphs.items()}
    steps = [g.steps.measured_end_ns - g.steps.measured_start_ns for g in graphs.values()]
    predicted = []
    for c in a.culprits:  # a handful of culprits
        durs = dict(measured)
        durs[c] = fixed_durations(graphs[c], measured[c], a, records[c].comm)
        rps = replay_job(graphs, durs, e)
        predicted.append(_mean(job_steps_ns([rp.step_ns for rp in rps.values()])))
    return JobWhatIf(tuple(a.culprits), _mean(job_steps_ns(steps)), np.asarray(predicted, np.float64))


def _mean(x: I64) -> float:
    return float(x.mean()) if len(x) else 0.0
