"""The job replayed, all ranks together (their matched collectives tie them): each straggler fixed,
and each standard remedy applied on every rank.

A synchronous job runs at the pace of its slowest rank at each step, and a rank that gets faster
only waits longer at the next collective for the ranks that did not. Replaying a rank alone keeps
its measured waits as if they were work; the job replay (:mod:`.job`) re-times them: a collective
ends at the last participant's arrival plus its transfer. So:

* **each culprit fixed** (:mod:`.fix_rank`): the ``straggler-rank`` rule's gain;
* **each standard remedy** of :data:`~.remedies.REMEDIES` (the same program change, so applied on
  every rank): what it saves on the job's mean step — the advisor's gain for a remedy finding
  grouped across ranks (:mod:`stepscope.advisor.ranking`). A remedy that changes nothing on any
  rank is not replayed (its saving is 0).

Everything is computed from per-rank records (the rank's step graph, its communication mask, its
collective records, its durations under each remedy), so it runs on per-rank summaries
(map-reduce) as on one whole trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

import numpy as np
import numpy.typing as npt

from stepscope.analysis.activity import Activity, activity_of
from stepscope.analysis.arrivals import Arrivals, arrivals_of, job_mean_step_ns
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.collective_records import CollectiveRecords, collective_records
from stepscope.analysis.common import I64
from stepscope.analysis.platform import has_device
from stepscope.analysis.whatif.fix_rank import fix_rank_basis, fixed_durations
from stepscope.analysis.whatif.graph import StepGraph, require_linked, step_graph
from stepscope.analysis.whatif.job import JobEdges, matched_edges, replay_job
from stepscope.analysis.whatif.p2p import P2PRecords, p2p_records
from stepscope.analysis.whatif.remedies import REMEDIES, remedies_possible
from stepscope.analysis.whatif.replay import Durations
from stepscope.analysis.whatif.transforms import basis_for
from stepscope.model.trace import Trace

B = npt.NDArray[np.bool_]

#: the largest step graph a rank's record carries (the graph grows with the rank's events; a
#: map-reduce summary should not): DLRM's ranks weigh 30-40 KiB
JOB_RECORD_MAX_BYTES = 128 << 10


def graph_nbytes(g: StepGraph) -> int:
    """The bytes of the graph's arrays."""
    parts = (g.host, g.syncs, g.device, g.steps, g.host_colls)
    return sum(int(getattr(p, f.name).nbytes) for p in parts for f in fields(p)
               if isinstance(getattr(p, f.name), np.ndarray))


@dataclass(frozen=True)
class DurationsDelta:
    """A remedy's durations on a rank as the entries that differ from the measured ones: a remedy
    changes a few of a rank's segments and activities, and each full copy cost a map-reduce summary
    ~10 KB a remedy on a DLRM rank."""

    host_idx: I64
    host_ns: I64
    device_idx: I64
    device_ns: I64
    dropped_idx: I64

    @staticmethod
    def between(d: Durations, base: Durations) -> DurationsDelta:
        h = np.flatnonzero(d.host_seg_ns != base.host_seg_ns)
        k = np.flatnonzero(d.device_ns != base.device_ns)
        return DurationsDelta(h, d.host_seg_ns[h], k, d.device_ns[k], np.flatnonzero(d.sync_dropped))

    def applied_to(self, base: Durations) -> Durations:
        host, dev, dropped = base.host_seg_ns.copy(), base.device_ns.copy(), base.sync_dropped.copy()
        host[self.host_idx], dev[self.device_idx], dropped[self.dropped_idx] = self.host_ns, self.device_ns, True
        return Durations(host, dev, dropped)


@dataclass(frozen=True)
class JobRecord:
    """One rank's input of the job replay: its step graph, which of its device activities are
    communication, its collective records, and per remedy of :data:`~.remedies.REMEDIES` (in that
    order) what the remedy changes of its durations: the entries that differ, or all of them where
    most do (graph capture changes every host segment); None: nothing on the rank."""

    graph: StepGraph
    comm: B
    coll: CollectiveRecords
    remedies: tuple[DurationsDelta | Durations | None, ...] = ()
    p2p: P2PRecords | None = None  # its sends and receives that name their peer (:mod:`.p2p`)
    device: bool = True  # whether the rank ran on a device (False: a CPU-only rank)


@dataclass(frozen=True)
class JobWhatIf:
    """The job's mean step replayed: per culprit of the arrival analysis with it fixed, and per
    standard remedy with it applied on every rank."""

    culprits: tuple[int, ...]
    measured_mean_ns: float
    predicted_mean_ns: npt.NDArray[np.float64]
    remedy: tuple[str, ...]
    remedy_predicted_mean_ns: npt.NDArray[np.float64]
    device: bool = True  # whether any rank ran on a device (False: a CPU-only job)

    @property
    def remedy_possible(self) -> tuple[bool, ...]:
        """Per remedy, whether it can act on the job at all: not a change to a device's work alone on a job
        without a device (:func:`~.remedies.remedies_possible`; not named there)."""
        return remedies_possible(self.device)

    def remedy_basis(self, name: str) -> str:
        """The remedy's basis in the job's terms (a CPU-only job's: :func:`~.transforms.basis_for`)."""
        return basis_for(REMEDIES[name], self.device)

    @property
    def fix_change_ns(self) -> npt.NDArray[np.float64]:
        """Per culprit fixed, measured − predicted job step: signed (the tables show it so)."""
        return self.measured_mean_ns - self.predicted_mean_ns

    @property
    def remedy_change_ns(self) -> npt.NDArray[np.float64]:
        """Per remedy on every rank, measured − predicted job step: signed (the tables show it so)."""
        return self.measured_mean_ns - self.remedy_predicted_mean_ns

    def saved_ns(self, rank: int) -> float | None:
        """What fixing the rank saves on the job's mean step (None: not a culprit; never negative)."""
        if rank not in self.culprits:
            return None
        return max(float(self.fix_change_ns[self.culprits.index(rank)]), 0.0)

    def remedy_saved_ns(self, name: str) -> float | None:
        """What the remedy, applied on every rank, saves on the job's mean step (None: not replayed;
        never negative)."""
        if name not in self.remedy:
            return None
        return max(float(self.remedy_change_ns[self.remedy.index(name)]), 0.0)

    def remedy_predicted_ns(self, name: str) -> float | None:
        return float(self.remedy_predicted_mean_ns[self.remedy.index(name)]) if name in self.remedy else None

    @staticmethod
    def basis(rank: int) -> str:
        return fix_rank_basis(rank)


def job_record(trace: Trace, rank: int) -> JobRecord:
    """The registry's per-rank step: NotApplicable for a rank without collectives or host chain, or
    whose step graph is over :data:`JOB_RECORD_MAX_BYTES` (a map-reduce summary must stay small)."""
    coll, p2p = collective_records(trace, rank), p2p_records(trace, rank)
    if len(coll) == 0 and len(p2p.row) == 0:
        raise NotApplicable("no collective or point-to-point kernels to tie the ranks' replays")
    g = step_graph(trace, rank)
    require_linked(g)
    size = graph_nbytes(g)
    if size > JOB_RECORD_MAX_BYTES:
        raise NotApplicable(f"rank {rank}'s step graph ({size >> 10} KiB) is over the job replay's record limit "
                            f"({JOB_RECORD_MAX_BYTES >> 10} KiB): `stepscope whatif --fix-rank` replays it")
    base = Durations.measured(g)
    remedies = tuple(_changed(t.change(trace, g, base), base) for t in REMEDIES.values())
    return JobRecord(g, activity_of(trace)[g.device.row] == Activity.COMMUNICATION, coll, remedies, p2p,
                     has_device(trace, rank))


def _changed(d: Durations, base: Durations) -> DurationsDelta | Durations | None:
    if d.same_as(base):
        return None
    delta = DurationsDelta.between(d, base)
    sparse = 2 * (len(delta.host_idx) + len(delta.device_idx)) < len(d.host_seg_ns) + len(d.device_ns)
    return delta if sparse else d


def combine_job_whatif(records: Mapping[int, JobRecord]) -> JobWhatIf:
    """The registry's cross-rank step: each culprit fixed, each remedy applied, the job replayed
    (module docstring)."""
    if len(records) < 2:
        raise NotApplicable("single-rank trace: no job to replay")
    graphs = {r: rec.graph for r, rec in records.items()}
    colls = tuple(r.coll for r in records.values() if len(r.coll))
    try:
        a: Arrivals | None = arrivals_of(colls) if len(colls) > 1 else None
    except NotApplicable:
        a = None
    e = matched_edges(a, {r: rec.p2p for r, rec in records.items() if rec.p2p is not None}, graphs)
    if e is None:
        raise NotApplicable("no collective or send/receive matched across the ranks to tie their replays")
    measured = {r: Durations.measured(g) for r, g in graphs.items()}
    job_measured = job_mean_step_ns([g.steps.measured_end_ns - g.steps.measured_start_ns for g in graphs.values()])
    culprits = a.culprits if a is not None else ()
    fixes = [_job_mean(graphs, {**measured, c: fixed_durations(graphs[c], measured[c], a, records[c].comm)}, e)
             for c in culprits if a is not None]  # a handful of culprits
    remedies = []
    for i in range(len(REMEDIES)):  # per remedy, a handful
        changed = {r: rec.remedies[i] for r, rec in records.items() if len(rec.remedies) > i}
        if all(d is None for d in changed.values()):
            remedies.append(job_measured)
            continue
        remedies.append(_job_mean(graphs, {r: _applied(changed.get(r), measured[r]) for r in graphs}, e))
    return JobWhatIf(tuple(culprits), job_measured, np.asarray(fixes, np.float64),
                     tuple(REMEDIES), np.asarray(remedies, np.float64), any(r.device for r in records.values()))


def _applied(change: DurationsDelta | Durations | None, base: Durations) -> Durations:
    if change is None:
        return base
    return change.applied_to(base) if isinstance(change, DurationsDelta) else change


def _job_mean(graphs: Mapping[int, StepGraph], durs: Mapping[int, Durations], e: JobEdges) -> float:
    rps = replay_job(graphs, durs, e)
    return job_mean_step_ns([rp.step_ns for rp in rps.values()])

