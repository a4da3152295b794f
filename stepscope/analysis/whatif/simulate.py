"""What-if on a trace: apply transformations to each rank's step graph, replay it, and read the
replayed trace with the same critical-path analysis as the measured one (new breakdown, new bound).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from stepscope.analysis._memo import memoised
from stepscope.analysis.arrivals import Arrivals, compute_arrivals, job_steps_ns
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import I64
from stepscope.analysis.critical_path import PARTS, CriticalPath, compute_critical_path
from stepscope.analysis.whatif.batch import LargerBatch
from stepscope.analysis.whatif.graph import StepGraph, step_graph, unlinked_device
from stepscope.analysis.whatif.job import JobEdges, collective_waits_ns, job_edges, replay_job
from stepscope.analysis.whatif.replay import Durations, Replay
from stepscope.analysis.whatif.transforms import LoaderWorkers, Transform, basis_for
from stepscope.model.masks import any_of
from stepscope.model.schema import HOST_KINDS
from stepscope.model.trace import Trace


@dataclass(frozen=True)
class RankWhatIf:
    """One rank: measured and predicted step windows, and both critical-path readings."""

    rank: int
    step: npt.NDArray[np.int32]
    measured_ns: I64
    predicted_ns: I64
    before: CriticalPath
    after: CriticalPath

    @property
    def saved_ns(self) -> I64:
        return self.measured_ns - self.predicted_ns


@dataclass(frozen=True)
class WhatIf:
    """The prediction for a trace: per rank, and the job's mean and median step (the slowest rank's
    mean window, :func:`~stepscope.analysis.arrivals.job_steps_ns`), measured and predicted. The job's
    bound is that of the rank the others wait for at the collectives (``paced_by``, before and after:
    the one waiting least, as the job verdict
    reads it), else the slowest rank's."""

    bases: tuple[str, ...]
    caveats: tuple[str, ...]  # what the model assumes that this trace puts in doubt (see cpu_caveat)
    ranks: tuple[RankWhatIf, ...]
    paced_by: tuple[int | None, int | None] = (None, None)
    samples_factor: float = 1.0  # samples per step after / before (a larger batch); 1 otherwise

    def throughput_change_pct(self) -> float:
        """How much the samples per second change, on the mean step: (F × before / after − 1) × 100."""
        after = self.mean_ns(True)
        return (self.samples_factor * self.mean_ns(False) / after - 1.0) * 100.0 if after > 0 else 0.0

    def job_steps_ns(self, predicted: bool) -> I64:
        return job_steps_ns([r.predicted_ns if predicted else r.measured_ns for r in self.ranks if len(r.step)])

    def mean_ns(self, predicted: bool) -> float:
        s = self.job_steps_ns(predicted)
        return float(s.mean()) if len(s) else 0.0

    def median_ns(self, predicted: bool) -> float:
        s = self.job_steps_ns(predicted)
        return float(np.median(s)) if len(s) else 0.0

    def saved_ns(self) -> float:
        """What the change saves on the mean step of the job."""
        return self.mean_ns(False) - self.mean_ns(True)

    def bound_rank(self, predicted: bool) -> int | None:
        """The rank whose bound is the job's: the one the others wait for, else the slowest (by mean
        step); None without a rank with steps."""
        rank = self.paced_by[1 if predicted else 0]
        if rank is not None:
            return rank
        with_steps = [r for r in self.ranks if r.before.step_count]
        if not with_steps:
            return None
        return max(with_steps, key=lambda r: (r.after if predicted else r.before).avg_step_ns).rank

    def _job_path(self, predicted: bool) -> CriticalPath | None:
        rank = self.bound_rank(predicted)
        hit = [r for r in self.ranks if r.rank == rank]
        return (hit[0].after if predicted else hit[0].before) if hit else None

    def share_pct(self, predicted: bool) -> dict[str, float]:
        """Critical-path shares of the job's bounding rank (:meth:`bound_rank`), after or before."""
        cp = self._job_path(predicted)
        return cp.share_pct() if cp is not None else {p: 0.0 for p in PARTS}

    def bound(self, predicted: bool) -> str:
        cp = self._job_path(predicted)
        return cp.bound if cp is not None else "host"


def simulate(trace: Trace, transforms: Sequence[Transform], ranks: Sequence[int] | None = None) -> WhatIf:
    """Predict every step of each rank with these transformations applied together, in order (the
    ranks replayed together, tied by their collectives: :mod:`.job`)."""
    wanted = list(ranks if ranks is not None else trace.rank_ids)
    with memoised():  # the measured trace's passes once (a replayed trace's are read once each, after)
        replayed, edges, acted = replayed_job(trace, transforms, wanted)
        before = {rank: compute_critical_path(trace, rank) for rank in wanted}
        paced = paced_by(_arrivals(trace) if edges is not None else None, edges,
                         {r: rp for r, (_, rp) in replayed.items()}, wanted)
    out = []
    for rank in wanted:
        g, rp = replayed[rank]
        after = compute_critical_path(replayed_trace(trace, g, rp), rank)
        measured = g.steps.measured_end_ns - g.steps.measured_start_ns
        out.append(RankWhatIf(rank, g.steps.step, measured, rp.step_ns, before[rank], after))
    unlinked = any(unlinked_device(g) for g, _ in replayed.values())
    return WhatIf(said_bases(transforms, out), caveats(transforms, out, unlinked, acted), tuple(out),
                  paced, samples_factor(transforms))


def said_bases(transforms: Sequence[Transform], ranks: Sequence[RankWhatIf]) -> tuple[str, ...]:
    """The changes' bases, in a CPU-only program's terms where no rank has a device (:func:`basis_for`)."""
    device = _any_device(ranks)
    return tuple(basis_for(t, device) for t in transforms)


def _any_device(ranks: Sequence[RankWhatIf]) -> bool:
    return not ranks or any(r.before.has_device for r in ranks)


def _arrivals(trace: Trace) -> Arrivals | None:
    try:
        return compute_arrivals(trace)
    except NotApplicable:
        return None


def paced_by(arrivals: Arrivals | None, e: JobEdges | None, rps: Mapping[int, Replay], wanted: Sequence[int]
             ) -> tuple[int | None, int | None]:
    """The rank the others wait for, before and after: the one waiting least at the collectives. Before,
    the arrival analysis' waits (the job verdict's reading); after, the same with the replayed collectives'
    waits in place of their measured ones (the collectives the replay ties; the others keep theirs)."""
    if e is None or arrivals is None:
        return None, None
    before = {r: int(arrivals.wait_total_ns[i]) for i, r in enumerate(arrivals.ranks)}
    if not sum(before.values()):
        return None, None
    delta = collective_waits_ns(e, rps) - collective_waits_ns(e)
    after = dict(before)
    for i, r in enumerate(e.ranks):
        if r in after:
            after[r] += int(delta[i])
    return _least(before, wanted), _least(after, wanted)


def _least(waits: Mapping[int, int], wanted: Sequence[int]) -> int | None:
    mine = [r for r in waits if r in wanted]
    return min(mine, key=lambda r: (waits[r], r)) if mine else None


#: said when DataLoader workers are replayed on a rank whose work all runs on the CPU
CPU_WORKERS_CAVEAT = ("CPU-only run: the DataLoader workers would share the CPU cores this training computes on; "
                      "the prediction assumes cores to spare, and on a busy or small machine the step can even grow")


def samples_factor(transforms: Sequence[Transform]) -> float:
    """Samples per step after the changes over before (a larger batch multiplies them)."""
    return float(np.prod([t.factor for t in transforms if isinstance(t, LargerBatch)]))


#: said when a rank's device work is linked to no launch call (Ascend's trace_view layout)
UNLINKED_CAVEAT = ("no device work in this trace is linked to the call that launched it: the device keeps its "
                   "measured times, so a change on the host moves the host alone (a lower bound for host-side "
                   "changes; a layout with launch links, such as the profiler's database, replays both)")


#: said of a change that finds nothing in the trace to act on (``--fill-sms`` without an under-filled grid)
IDLE_CAVEAT = "nothing in this trace for this change to act on, so it saves nothing: {basis}"


def caveats(transforms: Sequence[Transform], ranks: Sequence[RankWhatIf], unlinked: bool = False,
            acted: Sequence[bool] | None = None) -> tuple[str, ...]:
    """What the model assumes that this trace puts in doubt; ``acted``: per transformation, whether it
    changed any duration on any rank (the changes that did not are named)."""
    loader = any(isinstance(t, LoaderWorkers) for t in transforms)
    cpu_only = any(not r.before.has_device for r in ranks)
    out = (CPU_WORKERS_CAVEAT,) if loader and cpu_only else ()
    device = _any_device(ranks)
    idle = tuple(IDLE_CAVEAT.format(basis=basis_for(t, device)) for t, a in zip(transforms, acted or ())
                 if not a and not (isinstance(t, LoaderWorkers) and t.todays))  # --workers 2:2: nothing, by design
    return (*out, *idle, UNLINKED_CAVEAT) if unlinked and transforms else (*out, *idle)


def saving_ns(trace: Trace, transforms: Sequence[Transform], ranks: Sequence[int] | None = None) -> float:
    """What these transformations save on the job's mean step (0 when they change nothing)."""
    out = []
    wanted = list(ranks if ranks is not None else trace.rank_ids)
    with memoised():
        replayed, _, _ = replayed_job(trace, transforms, wanted)
    for rank in wanted:
        g, rp = replayed[rank]
        if len(g.steps.step):
            out.append((g.steps.measured_end_ns - g.steps.measured_start_ns, rp.step_ns))
    if not out:
        return 0.0
    n = min(len(m) for m, _ in out)
    before = np.max(np.stack([m[:n] for m, _ in out]), axis=0)
    after = np.max(np.stack([p[:n] for _, p in out]), axis=0)
    return max(float(before.mean() - after.mean()), 0.0)


def replayed_job(trace: Trace, transforms: Sequence[Transform], wanted: Sequence[int]
                 ) -> tuple[dict[int, tuple[StepGraph, Replay]], JobEdges | None, tuple[bool, ...]]:
    """Every rank's graph and replay with these transformations, the ranks tied by their collectives
    (a rank without a host chain is left out unless wanted: its arrivals stay the measured ones), the
    collectives that tie them (None for one rank), and per transformation whether it changed anything."""
    graphs = {}
    for r in trace.rank_ids:
        try:
            graphs[r] = step_graph(trace, r)
        except NotApplicable:
            if r in wanted:
                raise
    applied = {r: applied_durations(trace, g, transforms) for r, g in graphs.items()}
    durs = {r: d for r, (d, _) in applied.items()}
    acted = np.zeros(len(transforms), bool)
    for _, changed in applied.values():  # per rank
        acted |= changed
    edges = job_edges(trace, graphs)
    rps = replay_job(graphs, durs, edges)
    return {r: (g, rps[r]) for r, g in graphs.items()}, edges, tuple(acted.tolist())


def applied_durations(trace: Trace, g: StepGraph, transforms: Sequence[Transform]
                      ) -> tuple[Durations, npt.NDArray[np.bool_]]:
    """The graph's measured durations with the transformations applied, in order, and per transformation
    whether it changed anything on this graph."""
    d = Durations.measured(g)
    changed = np.zeros(len(transforms), bool)
    for i, t in enumerate(transforms):  # per transformation, a handful
        new = t.change(trace, g, d)
        changed[i] = not new.same_as(d)
        d = new
    return d, changed


def replayed_trace(trace: Trace, g: StepGraph, rp: Replay) -> Trace:
    """The trace with one rank's device activities and host events moved to their replayed times."""
    ev = trace.events
    ts, dur = ev["ts_ns"].copy(), ev["dur_ns"].copy()
    ts[g.device.row] = rp.device_start_ns
    dur[g.device.row] = rp.device_end_ns - rp.device_start_ns
    host = np.flatnonzero((ev["rank"] == g.rank) & any_of(ev["kind"], [int(k) for k in HOST_KINDS]))
    start = _map_host(g.host.t_ns, rp.host_t_ns, ev["ts_ns"][host])
    end = _map_host(g.host.t_ns, rp.host_t_ns, ev["ts_ns"][host] + ev["dur_ns"][host])
    ts[host], dur[host] = start, np.maximum(end - start, 0)
    st = trace.steps
    mine = st["rank"] == g.rank
    s_start, s_end = st["start_ns"].copy(), st["host_end_ns"].copy()
    s_start[mine] = _map_host(g.host.t_ns, rp.host_t_ns, s_start[mine])
    s_end[mine] = _map_host(g.host.t_ns, rp.host_t_ns, s_end[mine])
    steps = st.with_columns(start_ns=s_start, host_end_ns=s_end, end_ns=np.maximum(s_end, st["end_ns"]))
    return replace(trace, events=ev.with_columns(ts_ns=ts, dur_ns=dur), steps=steps)


def _map_host(t: I64, tp: I64, x: I64) -> I64:
    """Host instants moved with the chain: linearly inside each segment, rigidly outside the chain."""
    if len(t) < 2:
        shifted: I64 = x + (tp[0] - t[0]) if len(t) else x.copy()
        return shifted
    k = np.clip(np.searchsorted(t, x, side="right") - 1, 0, len(t) - 2)
    seg, new = t[k + 1] - t[k], tp[k + 1] - tp[k]
    # (instants outside the chain take the rigid shift below; clipped here, their interpolation cannot overflow)
    inner = tp[k] + ((np.clip(x, t[0], t[-1]) - t[k]) * (new / np.maximum(seg, 1))).astype(np.int64)
    before, after = x < t[0], x > t[-1]
    out: I64 = np.where(after, x + (tp[-1] - t[-1]), np.where(before, x + (tp[0] - t[0]), inner))
    return out
