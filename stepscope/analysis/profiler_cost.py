"""What the profiler's own cost does to a rank's step: the step replayed without it, and its bound.

Every op the profiler records costs the host a few µs the unprofiled program does not spend
(:mod:`stepscope.analysis.whatif.unprofiled`). Where the recorded step is bound by the host, the step is
replayed with that cost removed (:class:`~stepscope.analysis.whatif.unprofiled.WithoutProfiler`) and
read with the same critical-path analysis: if the host still bounds it, the verdict stands; if the
device then does, the recorded host was the profiler's as much as the program's, and the verdict says
so. A step the host does not bound keeps its bound without the cost (only host time shrinks), and is
replayed all the same: a remedy that shortens the device's work can leave the host the bound, and the
program's host is the unprofiled one (ResNet-50 in channels-last). No step is replayed where its recorded
ops cost under a tenth of it (``MIN_COST_SHARE``) or more than all of it (the calibration cannot hold
for that host). Applied where the cost was measured (NVIDIA CUDA traces: ``calibrated_for``).

Where the user gives the step timed without the profiler (``--step-ms``: a training log's step time), the
cost per op is measured from it the same way (``cost_source`` "given"; it takes precedence over a step log).
Where ``stepscope run`` timed steps without the profiler beside the trace (its step log, read into the
rank's metadata by ``ingest.step_records``), the cost per op is this machine's own: the recorded mean
step less the unprofiled steps' median, over the ops recorded a step (``cost_source`` "measured"), on any device
platform; the same gates apply to it.

The calibrated cost is a constant; the cost per op that reproduces the unprofiled step of the H200
captures ranges 4.3-15 µs. Where the step is replayed with it, it is replayed at half of it too
(:data:`LOW_COST_SHARE`), and the verdict gives both steps: how far the step moves with the cost (GPT-2
bf16 with its vocabulary padded, ``tests/data/h200_models/r3``: 27.9 ms at 8 µs, 33.7 ms at 4 µs, 32.3 ms
measured; BERT fine-tuning 28.3 ms at 8 µs, 50.9 at 4, 28.3 measured: a wide gap says the host's own
time is uncertain, a narrow one that the bound does not hang on it).

Where the step is replayed, the remedies analysis replays each standard remedy on that step too
(``Remedies.unprofiled_*``): what a change saves is then measured from the step the program runs
without the profiler, not from the profiler's host (a CUDA graph "saving" the profiler's own cost
would save nothing unprofiled).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from stepscope.analysis._memo import per_rank
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.critical_path import CriticalPath, compute_critical_path
from stepscope.analysis.whatif.graph import StepGraph, require_linked, step_graph
from stepscope.analysis.whatif.replay import Durations, Replay, replay
from stepscope.analysis.whatif.simulate import replayed_trace
from stepscope.analysis.whatif.unprofiled import EVENT_COST_NS, WithoutProfiler, calibrated_for, recorded_ops
from stepscope.model.trace import UNPROFILED_GIVEN_KEY, UNPROFILED_STEPS_KEY, Trace

#: the step is replayed only where the profiler's cost (recorded ops x the cost per op) is at least this
#: share of it: below, it is within the step's own variation. Nor where the cost alone would exceed the
#: whole recorded step: this host's profiler then costs less per op than the calibration (TraceLens' H100
#: BERT inference: 1,756 ops a step x 8 µs = 14 ms in a 4.4 ms step), which cannot hold for its trace
MIN_COST_SHARE = 0.1
#: unprofiled steps a step log must hold for its mean to calibrate the cost
MIN_MEASURED_STEPS = 2
#: the verdict speaks of the step without the profiler's own cost when the bound changes, or when that
#: step is shorter than this share of the recorded one
SAID_BELOW = 0.9
#: the low end of the calibrated cost's reach: the cost per op that reproduces the unprofiled step of the
#: H200 captures (``tests/data/h200_models``) ranges 4.3-15 µs against the calibrated 8
LOW_COST_SHARE = 0.5


@dataclass(frozen=True)
class ProfilerCost:
    """A rank's recorded ops and, where their cost weighs on the step (``MIN_COST_SHARE``), the step
    without it."""

    rank: int
    event_cost_ns: int  # the profiler's host cost per recorded op
    events_per_step: float  # recorded ops on the threads that drive the device, per step
    recorded_step_ns: float  # the mean step as recorded (the critical path's windows)
    bound: str  # the recorded step's bound
    unprofiled_step_ns: float | None  # the mean step replayed without the cost (None: not replayed)
    unprofiled_bound: str | None  # its bound (None: not replayed, the bound stands)
    unprofiled_shares_pct: dict[str, float] | None
    #: "calibrated" (:data:`EVENT_COST_NS`, measured on H200 captures), "measured" (this run's step log) or
    #: "given" (the step the user timed without the profiler, ``--step-ms``)
    cost_source: str = "calibrated"
    measured_step_ns: float | None = None  # the median of the steps ``stepscope run`` timed without the profiler
    #  (or the step the user gave)
    measured_steps: int = 0
    #: with the calibrated cost: the mean step replayed at :data:`LOW_COST_SHARE` of it (None: not replayed, or
    #: the cost measured)
    low_cost_step_ns: float | None = None

    @property
    def changes_bound(self) -> bool:
        return self.unprofiled_bound is not None and self.unprofiled_bound != self.bound

    @property
    def said(self) -> bool:
        """Whether the verdict speaks of the step without the profiler's cost: it has another bound, or it
        is shorter than :data:`SAID_BELOW` of the recorded one (the findings' shares are then of it)."""
        if self.unprofiled_step_ns is None or self.unprofiled_bound is None:
            return False
        return self.changes_bound or self.unprofiled_step_ns <= SAID_BELOW * self.recorded_step_ns


@per_rank
def compute_profiler_cost(trace: Trace, rank: int) -> ProfilerCost:
    """The rank's recorded ops per step and, where their cost weighs on it, its step without that cost."""
    measured = measured_unprofiled_steps(trace, rank)
    given = given_unprofiled_step_ns(trace, rank)
    if not measured and given is None and not calibrated_for(trace, rank):
        raise NotApplicable("the profiler's cost per event was measured on NVIDIA CUDA traces only (and no step "
                            "log of `stepscope run` lies beside this trace)")
    cp = compute_critical_path(trace, rank)
    if not cp.step_count or not (cp.has_device or measured or given is not None):  # a timed CPU step: its own cost
        raise NotApplicable("no steps with device work")
    per_step = _recorded_per_step(trace, rank, cp)
    measured_ns = _timed_step_ns(measured, given)
    event_cost = _measured_cost_ns(cp.avg_step_ns, measured_ns, per_step) if measured_ns else EVENT_COST_NS
    source = "given" if given is not None else "measured" if measured_ns else "calibrated"
    cost_ns = per_step * event_cost
    kept = ProfilerCost(rank, event_cost, per_step, cp.avg_step_ns, cp.bound, None, None, None, source, measured_ns,
                        0 if given is not None else len(measured))
    if not MIN_COST_SHARE * cp.avg_step_ns <= cost_ns <= cp.avg_step_ns:
        return kept
    g = step_graph(trace, rank)
    require_linked(g)
    rp, after = _replayed(trace, g, rank, event_cost)
    kept = replace(kept, unprofiled_step_ns=float(rp.step_ns.mean()), unprofiled_bound=after.bound,
                   unprofiled_shares_pct=after.share_pct())
    if measured_ns:
        return kept
    low = replay(g, WithoutProfiler(round(event_cost * LOW_COST_SHARE)).change(trace, g, Durations.measured(g)))
    return replace(kept, low_cost_step_ns=float(low.step_ns.mean()))


def _timed_step_ns(measured: list[int], given: int | None) -> float | None:
    """The step timed without the profiler: the one the user gave, else the median of the step log's (the
    script's own warm-up steps and a machine's hiccups are among them — a 71 ms step among GPT-2's 33 ms ones
    on the H200 — and a mean carries them); None without either."""
    if given is not None:
        return float(given)
    return float(np.median(measured)) if measured else None


def _recorded_per_step(trace: Trace, rank: int, cp: CriticalPath) -> float:
    """The ops the profiler recorded on the threads that drive the device, per step of the critical path."""
    starts = trace.events["ts_ns"][recorded_ops(trace, rank)]
    win = np.searchsorted(cp.start_ns, starts, side="right") - 1
    inside = (win >= 0) & (starts < cp.end_ns[np.maximum(win, 0)])
    return int(np.count_nonzero(inside)) / cp.step_count


def measured_cost_us(trace: Trace) -> float | None:
    """The profiler's cost per op the trace's own step times say (a step log, or ``--step-ms``): the median
    over its ranks that have them; None where none has (the calibrated cost is then the one). No replay."""
    costs = []
    for rank in trace.rank_ids:  # per rank
        step_ns = _timed_step_ns(measured_unprofiled_steps(trace, rank), given_unprofiled_step_ns(trace, rank))
        if step_ns is None:
            continue
        cp = compute_critical_path(trace, rank)
        if cp.step_count:  # a timed step measures the cost on a CPU-only rank too, as compute_profiler_cost does
            costs.append(_measured_cost_ns(cp.avg_step_ns, step_ns, _recorded_per_step(trace, rank, cp)) / 1e3)
    return float(np.median(costs)) if costs else None


def _replayed(trace: Trace, g: StepGraph, rank: int, cost_ns: int) -> tuple[Replay, CriticalPath]:
    """The rank's steps replayed without ``cost_ns`` a recorded op, and their critical path."""
    rp = replay(g, WithoutProfiler(cost_ns).change(trace, g, Durations.measured(g)))
    return rp, compute_critical_path(replayed_trace(trace, g, rp), rank)


def given_unprofiled_step_ns(trace: Trace, rank: int) -> int | None:
    """The step the user timed without the profiler and gave (``--step-ms``), None where none was."""
    step = trace.rank_info(rank).metadata.get(UNPROFILED_GIVEN_KEY)
    return step if isinstance(step, int) and step > 0 else None


def measured_unprofiled_steps(trace: Trace, rank: int) -> list[int]:
    """The steps (ns) ``stepscope run`` timed without the profiler for this rank; empty with fewer than
    :data:`MIN_MEASURED_STEPS` (or no step log)."""
    steps = trace.rank_info(rank).metadata.get(UNPROFILED_STEPS_KEY)
    if not isinstance(steps, list):
        return []
    ok = [int(s) for s in steps if isinstance(s, int) and s > 0]
    return ok if len(ok) >= MIN_MEASURED_STEPS else []


def _measured_cost_ns(recorded_step_ns: float, measured_step_ns: float, ops_per_step: float) -> int:
    """The profiler's cost per recorded op on this machine: what the recorded step took more than the
    unprofiled one, spread over its recorded ops (0 where the profiler cost nothing measurable)."""
    if ops_per_step <= 0:
        return 0
    return max(round((recorded_step_ns - measured_step_ns) / ops_per_step), 0)
