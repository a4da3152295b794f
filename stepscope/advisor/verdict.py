"""The macro answer: what bounds the step, per rank and, for a multi-rank run, for the job.

A rank's verdict is read off its critical-path attribution (:mod:`stepscope.analysis.critical_path`):
every instant of the step is charged once to compute, communication, copy, input or host, and the
bound is the largest part — except that a starved device's compute yields to what the device
waited for (``CriticalPath.bound``). The same windows as the step breakdown, so the step length is
the breakdown's.

A job's verdict comes first: ``imbalance`` when the arrival analysis (:mod:`stepscope.analysis.arrivals`)
finds culprits — ranks late at the collectives for reasons inside the trace (``straggler_min_pct``)
— whose lateness, the time the others wait for them alone, is at least ``imbalance_min_pct`` % of
the job's step; ``imbalance`` too, with no culprit (``set_by`` "moving"), when the collectives' lateness
summed over whichever rank is last is that large while no rank is last at more than
``moving_max_last_pct`` % of them and the ranks' work changes from step to step (their input shapes
vary: ``ClusterResult.per_step``): the slow rank moves from step to step (uneven sequence lengths), and
each rank's lateness is mostly what it waited for the others' (net of it, nobody is late);
otherwise the bound of the rank the others wait for at the collectives (the one that waits least: it
arrives last), or without collectives the slowest rank's. Its step is the job's step
in every case (the one the straggler finding and the job replay state); its shares are those of the
rank it is built from, of that rank's own window. Wording lives in :mod:`stepscope.report.texts`.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from stepscope.advisor.config import AdvisorConfig
from stepscope.advisor.rules.straggler_rank import claimed_culprits
from stepscope.analysis.annotations import AnnotationView
from stepscope.analysis.arrivals import Arrivals
from stepscope.analysis.bundle import Bundle
from stepscope.analysis.comm import CollType, collective_of
from stepscope.analysis.critical_path import CriticalPath
from stepscope.analysis.host_ops import top_self_op
from stepscope.analysis.host_stalls import HostStalls
from stepscope.analysis.idle import is_dataloader_name
from stepscope.analysis.platform import no_host_timeline, platform_of
from stepscope.analysis.profiler_cost import LOW_COST_SHARE, ProfilerCost
from stepscope.analysis.registry import (
    ANNOTATIONS,
    ARRIVALS,
    CLUSTER,
    CRITICAL_PATH,
    HOST_STALLS,
    JOB_WHATIF,
    PROFILER_COST,
)
from stepscope.model.steps import STEP_NAME
from stepscope.model.trace import Trace

#: Every bound a verdict can name.
BOUNDS = ("input", "host", "compute", "communication", "copy", "imbalance")


@dataclass(frozen=True)
class Verdict:
    """A rank's (``rank`` set) or the job's (``rank`` None) bound and the shares of its step (%)."""

    rank: int | None
    bound: str
    step_ns: int
    shares_pct: dict[str, float]
    step_count: int
    whole_trace: bool = False
    device_busy_pct: float | None = None
    has_device: bool = True
    ranks: tuple[int, ...] = field(default=())  # job verdict: the culprits, or the slowest rank
    excess_pct: float | None = None  # job: the slowest rank's step over the median rank's; imbalance: the
    #  culprits' lateness (what the others wait for them alone) in % of the job's step
    causes: tuple[str, ...] = field(default=())  # job imbalance: each culprit's cause (arrivals.CAUSES)
    platform: str = "cuda"  # what the device is called in words (analysis.platform)
    host_timeline: bool = True  # False: a summary-only trace, whose "host" share is device idle time of unknown cause
    set_by: str = ""  # job: "waited-for" (the rank the others wait for at the collectives), "slowest" or "moving"
    compiling_pct: float = 0.0  # the host's time compiling (torch.compile) on the path, % of the step
    untraced_pct: float = 0.0  # the host's time on the path outside every recorded op, % of the step
    untraced_in_gaps: bool = False  # ... mostly in short gaps between ops (stretches under 0.5 ms hold half of it)
    #: the driving host thread's time lost inside its ops on the path (stalled calls: waiting for the GIL or a
    #: core, :mod:`stepscope.analysis.host_stalls`), % of the step
    stalled_pct: float = 0.0
    #: the median step, and the slowest step's number and length: a mean far above the median is one or a few
    #: steps (an evaluation, a warm-up), said beside it (None / -1 for the job's verdict)
    median_step_ns: int | None = None
    #: a host-bound rank's largest ``record_function`` range (step markers and the DataLoader's aside) and its
    #: share of the steps, where it holds at least a quarter of them: where the host's time is, in the user's words
    top_annotation: str = ""
    top_annotation_pct: float = 0.0
    #: a CPU-only host-bound rank's op with the most host self time in the steps, where it holds at least a
    #: quarter of them and no user range is named: where the model's CPU work goes (``aten::sort`` 80 %)
    top_op: str = ""
    top_op_pct: float = 0.0
    slowest_step: int = -1
    slowest_step_ns: int = 0
    shares_rank: int | None = None  # job: the rank whose verdict it is built from: the shares, device busy and
    #  compiling % are of that rank's own window, ``shares_step_ns``; ``step_ns`` is the job's step
    shares_step_ns: int | None = None
    #: the bound of the step replayed without the profiler's own host cost, where it is another or that
    #: step is much shorter (:mod:`stepscope.analysis.profiler_cost`); None where the recording stands
    unprofiled_bound: str | None = None
    unprofiled_step_ns: int | None = None
    unprofiled_share_pct: float | None = None  # the unprofiled bound's share of that step
    host_events_per_step: float | None = None  # the recorded host events the cost is counted on
    event_cost_ns: int | None = None
    #: where ``stepscope run`` timed steps without the profiler beside the trace: their mean and count (the
    #: cost per op above is then this machine's, from them)
    measured_unprofiled_step_ns: int | None = None
    measured_unprofiled_steps: int = 0
    cost_source: str = "calibrated"  # analysis.profiler_cost: calibrated | measured (a step log) | given (--step-ms)
    #: with the calibrated cost: the step replayed at half of it (analysis.profiler_cost ``LOW_COST_SHARE``:
    #: how far the step moves with the cost, which captures have needed anywhere from 4.3 to 15 µs)
    low_cost_step_ns: int | None = None
    #: job imbalance whose slow rank moves (``set_by`` "moving"): the most collectives one rank is last at, of
    #: all those a rank is last at; and the largest share of op calls whose input shapes vary across steps
    most_last: tuple[int, int] = (0, 0)
    varying_shapes_pct: float | None = None
    #: a rank bound by communication: the time it waited there for other ranks to arrive (the arrivals'
    #: ``suffered_ns``), % of its step, and the job's culprits it waited for (empty: no one rank)
    waiting_pct: float = 0.0
    waiting_for: tuple[int, ...] = field(default=())

    @property
    def job_step_ns(self) -> int | None:
        """The job's step (the job's verdict only): the slowest rank's mean window (``arrivals.job_steps_ns``)."""
        return self.step_ns if self.rank is None else None

    @property
    def window_ns(self) -> int:
        """The mean window the shares are of: the rank's step, or for the job ``shares_rank``'s own."""
        return self.step_ns if self.shares_step_ns is None else self.shares_step_ns

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "bound": self.bound, "avg_step_ms": self.step_ns / 1e6,
                "shares_rank": self.rank if self.rank is not None else self.shares_rank,
                "shares_step_ms": self.window_ns / 1e6,
                "step_count": self.step_count, "whole_trace": self.whole_trace,
                "device_busy_pct": None if self.device_busy_pct is None else round(self.device_busy_pct, 2),
                "shares_pct": {k: round(v, 2) for k, v in self.shares_pct.items()},
                "ranks": list(self.ranks), "excess_pct": self.excess_pct, "causes": list(self.causes),
                "host_timeline": self.host_timeline, "set_by": self.set_by,
                "job_step_ms": None if self.job_step_ns is None else self.job_step_ns / 1e6,
                "compiling_pct": round(self.compiling_pct, 2), "untraced_pct": round(self.untraced_pct, 2),
                "untraced_in_gaps": self.untraced_in_gaps, "stalled_pct": round(self.stalled_pct, 2),
                "most_last": list(self.most_last) if self.set_by == "moving" else None,
                "varying_shapes_pct": None if self.varying_shapes_pct is None else round(self.varying_shapes_pct, 1),
                "waiting_pct": round(self.waiting_pct, 2), "waiting_for": list(self.waiting_for),
                "median_step_ms": None if self.median_step_ns is None else self.median_step_ns / 1e6,
                "top_annotation": self.top_annotation or None, "top_annotation_pct": round(self.top_annotation_pct, 2),
                "top_op": self.top_op or None, "top_op_pct": round(self.top_op_pct, 2),
                "slowest_step": self.slowest_step, "slowest_step_ms": self.slowest_step_ns / 1e6,
                "unprofiled": None if self.unprofiled_bound is None else {
                    "bound": self.unprofiled_bound, "avg_step_ms": (self.unprofiled_step_ns or 0) / 1e6,
                    "bound_pct": round(self.unprofiled_share_pct or 0.0, 2),
                    "host_events_per_step": self.host_events_per_step,
                    "event_cost_us": (self.event_cost_ns or 0) / 1e3,
                    "cost_source": self.cost_source,
                    "measured_step_ms": None if self.measured_unprofiled_step_ns is None
                    else self.measured_unprofiled_step_ns / 1e6,
                    "measured_steps": self.measured_unprofiled_steps,
                    "low_cost_step_ms": None if self.low_cost_step_ns is None else self.low_cost_step_ns / 1e6,
                    "low_cost_us": None if self.low_cost_step_ns is None
                    else (self.event_cost_ns or 0) * LOW_COST_SHARE / 1e3}}


def rank_critical_path(bundle: Bundle, rank: int) -> CriticalPath | None:
    cp = bundle.ranks[rank].get(CRITICAL_PATH)
    return cp if cp is not None and cp.step_count and cp.avg_step_ns > 0 else None


def verdict_of(bundle: Bundle, rank: int) -> Verdict | None:
    """The verdict of one rank, or None when its critical-path attribution did not run."""
    cp = rank_critical_path(bundle, rank)
    if cp is None:
        return None
    host = cp.host_share_pct()
    v = Verdict(rank, cp.bound, round(cp.avg_step_ns), cp.share_pct(), cp.step_count, cp.whole_trace,
                cp.device_busy_pct() if cp.has_device else None, cp.has_device,
                platform=platform_of(bundle.trace, rank), host_timeline=no_host_timeline(bundle.trace, rank) is None,
                compiling_pct=host["compile"], untraced_pct=host["untraced"], untraced_in_gaps=cp.untraced_in_gaps(),
                stalled_pct=_stalled_pct(bundle.ranks[rank].get(HOST_STALLS)),
                **_spread(cp), **_top_annotation(bundle.ranks[rank].get(ANNOTATIONS), cp,
                                                 _step_marker_names(bundle.trace, rank)))
    return _without_profiler(_with_top_op(v, bundle.trace, cp), bundle.ranks[rank].get(PROFILER_COST))


def _with_top_op(v: Verdict, trace: Trace, cp: CriticalPath) -> Verdict:
    """On a CPU-only rank bound by its ops (no user range, untraced or stalled part named): the op with the
    most host self time in the steps, where it holds at least :data:`ANNOTATION_MIN_PCT` of them."""
    named_part = max(v.untraced_pct, v.stalled_pct, v.compiling_pct) >= 50.0  # the verdict names that part
    if cp.has_device or v.bound != "host" or v.top_annotation or named_part:
        return v
    name, self_ns = top_self_op(trace, v.rank if v.rank is not None else 0)
    share = 100.0 * self_ns / max(float(cp.step_ns.sum()), 1.0)
    return replace(v, top_op=name, top_op_pct=share) if name and share >= ANNOTATION_MIN_PCT else v


def _stalled_pct(stalls: HostStalls | None) -> float:
    """The host's time lost inside its ops on the path (host_stalls: the median step's, of the mean step),
    %; 0 where not run."""
    return 0.0 if stalls is None else stalls.typical_pct


#: a user range holding at least this share of the steps is named in a host-bound verdict, short of this one
#: (a range around the whole step: ``model_inference``)
ANNOTATION_MIN_PCT = 25.0
ANNOTATION_WRAPPER_PCT = 90.0
#: torch.compile's own ranges around the compiled model's call: not the user's words for a part of the step
COMPILE_WRAPPERS = ("## Call CompiledFxGraph", "Torch-Compiled Region", "CompiledFunction", "TorchDynamo")


def _step_marker_names(trace: Trace, rank: int) -> set[str]:
    """The names of the ranges the rank's steps were read from (``ProfilerStep#N``, or an iteration range)."""
    rows = trace.steps["row"][(trace.steps["rank"] == rank) & (trace.steps["row"] >= 0)]
    return {str(n) for n in trace.strings.decode(np.unique(trace.events["name"][rows]))}


def _top_annotation(view: AnnotationView | None, cp: CriticalPath, markers: set[str]) -> dict[str, Any]:
    """The largest user range of the rank (not a step marker, the DataLoader's, torch.compile's or a collective's
    — gloo's ``gloo:all_reduce`` on its own thread) and its share of the steps' time, where the host bounds the
    step and it holds at least :data:`ANNOTATION_MIN_PCT` of it."""
    if view is None or cp.bound != "host" or not len(view.host.name):
        return {}
    names = [str(n) for n in view.host.name]
    keep = [i for i, n in enumerate(names) if n not in markers and not STEP_NAME.match(n)  # per name
            and not is_dataloader_name(n) and not n.startswith(COMPILE_WRAPPERS)
            and collective_of(n) == CollType.OTHER]
    if not keep:
        return {}
    total = max(float(cp.step_ns.sum()), 1.0)
    shares = {i: 100.0 * float(view.host.total_ns[i]) / total for i in keep}
    # a range around (nearly) the whole step says nothing of where in it the time goes
    inside = [i for i, p in shares.items() if ANNOTATION_MIN_PCT <= p < ANNOTATION_WRAPPER_PCT]
    if not inside:
        return {}
    i = max(inside, key=lambda k: shares[k])
    return {"top_annotation": names[i], "top_annotation_pct": shares[i]}


def _spread(cp: CriticalPath) -> dict[str, Any]:
    """The median step and the slowest one (its number and length) of a rank's windows."""
    slowest = int(np.argmax(cp.step_ns))
    return {"median_step_ns": round(float(np.median(cp.step_ns))), "slowest_step": int(cp.step[slowest]),
            "slowest_step_ns": int(cp.step_ns[slowest])}


def _without_profiler(v: Verdict, p: ProfilerCost | None) -> Verdict:
    """The verdict with its step replayed without the profiler's own cost, where that has another bound
    (the recorded host was the profiler's as much as the program's) or is much shorter."""
    if p is None or p.unprofiled_step_ns is None or p.unprofiled_bound is None or not p.said:
        return v  # not replayed; or the same bound, and the profiler's cost a small part of it: nothing to say
    share = (p.unprofiled_shares_pct or {}).get(p.unprofiled_bound, 0.0)
    return replace(v, unprofiled_bound=p.unprofiled_bound, unprofiled_step_ns=round(p.unprofiled_step_ns),
                   unprofiled_share_pct=share, host_events_per_step=p.events_per_step, event_cost_ns=p.event_cost_ns,
                   measured_unprofiled_step_ns=None if p.measured_step_ns is None else round(p.measured_step_ns),
                   measured_unprofiled_steps=p.measured_steps, cost_source=p.cost_source,
                   low_cost_step_ns=None if p.low_cost_step_ns is None else round(p.low_cost_step_ns))


def job_verdict(bundle: Bundle, per_rank: tuple[Verdict, ...], cfg: AdvisorConfig | None = None) -> Verdict | None:
    """The whole job's verdict (multi-rank runs only): imbalance, else the bound of the rank the others
    wait for, else the slowest rank's. Its ``step_ns`` is the job's step (:func:`job_step_of`) in every
    case; the shares stay those of the rank it is built from (``shares_rank``, ``shares_step_ns``)."""
    if len(per_rank) < 2:
        return None
    cfg = cfg or AdvisorConfig()
    slowest = max(per_rank, key=lambda v: v.step_ns)
    median = statistics.median(v.step_ns for v in per_rank)
    excess = round(100.0 * (slowest.step_ns - median) / median, 1) if median > 0 else 0.0
    arrivals = bundle.cluster_result(ARRIVALS)
    job_ns = job_step_of(bundle, slowest)
    if arrivals is not None and arrivals.m.job_step_ns > 0:
        culprits = claimed_culprits(arrivals, cfg.straggler_min_pct, cfg.straggler_min_times_last)
        late = sum(int(arrivals.late_ns[arrivals.ranks.index(r)]) for r in culprits) / max(arrivals.m.step_count, 1)
        share = round(100.0 * late / arrivals.m.job_step_ns, 1)
        leads = bool(culprits) and _imbalance_leads(arrivals, culprits, late, per_rank, cfg.imbalance_dwarfed_by)
        if leads and share >= cfg.imbalance_min_pct:
            return _as_job(slowest, job_ns, bound="imbalance", ranks=tuple(culprits), excess_pct=share,
                           causes=tuple(arrivals.culprit_cause[r] for r in culprits))
        cluster = bundle.cluster_result(CLUSTER)
        if (not culprits and cluster is not None and cluster.per_step
                and moving_share_pct(arrivals, cfg.moving_max_last_pct) >= cfg.imbalance_min_pct):
            return _as_job(slowest, job_ns, bound="imbalance", set_by="moving",
                           excess_pct=round(moving_share_pct(arrivals, cfg.moving_max_last_pct), 1),
                           most_last=_most_last(arrivals), varying_shapes_pct=cluster.varying_shapes_pct)
    setter = _waited_for(arrivals, per_rank)
    if setter is not None:  # the job's bound is that of the rank the others wait for, whatever its window
        return _as_job(setter, job_ns, ranks=(setter.rank,) if setter.rank is not None else (), set_by="waited-for")
    return _as_job(slowest, job_ns, ranks=(slowest.rank,) if slowest.rank is not None else (), excess_pct=excess,
                   set_by="slowest")


def moving_share_pct(a: Arrivals, max_last_pct: float) -> float:
    """The collectives' lateness (whichever rank is last) in % of the job's step where the slow rank moves: no
    rank is last at more than ``max_last_pct`` % of the collectives some rank is late at; else 0."""
    last, named = _most_last(a)
    if not named or 100.0 * last / named > max_last_pct or a.m.job_step_ns <= 0:
        return 0.0
    return 100.0 * float(a.late_ns.sum()) / max(a.m.step_count, 1) / a.m.job_step_ns


def _most_last(a: Arrivals) -> tuple[int, int]:
    """The most collectives one rank is last at, and how many collectives a rank is last at."""
    return int(a.times_last.max(initial=0)), int(a.times_last.sum())


def _imbalance_leads(arrivals: Arrivals, culprits: list[int], late_ns: float, per_rank: tuple[Verdict, ...],
                     dwarfed_by: float) -> bool:
    """Whether the others' wait for the culprits (``late_ns`` a step) is not dwarfed by a part of the main
    culprit's own step other than the one that made it late (its cause): at least ``dwarfed_by`` x the wait.
    A rank 4 ms late in a 41 ms step whose all-reduces take 21 ms is a communication-bound job with some
    imbalance."""
    main = max(culprits, key=arrivals.net_late_ns)
    v = next((v for v in per_rank if v.rank == main), None)
    if v is None:
        return True
    cause = arrivals.culprit_cause.get(main)
    others = [pct / 100.0 * v.step_ns for part, pct in v.shares_pct.items() if part != cause]
    return dwarfed_by * late_ns > max(others, default=0.0)


def _as_job(v: Verdict, job_ns: int, **changes: Any) -> Verdict:
    """Rank ``v``'s verdict as the job's: the job's step, ``v``'s shares of its own window."""
    return replace(v, rank=None, step_ns=job_ns, shares_rank=v.rank, shares_step_ns=v.step_ns, **changes)


def job_step_of(bundle: Bundle, slowest: Verdict) -> int:
    """The job's step: the arrival analysis' (``arrivals.job_mean_step_ns``: the slowest rank's mean
    window over the steps all ranks have — the straggler finding's and the job replay's measured step), else the
    job replay's measured step, else (no collective or transfer matched) the slowest rank's window."""
    arrivals = bundle.cluster_result(ARRIVALS)
    if arrivals is not None and arrivals.m.job_step_ns > 0:
        return round(arrivals.m.job_step_ns)
    replayed = bundle.cluster_result(JOB_WHATIF)
    if replayed is not None and replayed.measured_mean_ns > 0:
        return round(replayed.measured_mean_ns)
    return slowest.step_ns


def _waited_for(arrivals: Arrivals | None, per_rank: tuple[Verdict, ...]) -> Verdict | None:
    """The verdict of the rank that waits least at the collectives (it arrives last: the others wait
    for it), None without matched collectives. The longest step window is not the job's bound: in a
    job whose ranks start their steps at different times, the earliest starter has the longest window
    and spends it waiting for the others."""
    if arrivals is None or not len(arrivals.ranks) or not int(arrivals.wait_total_ns.sum()):
        return None
    by_rank = {v.rank: v for v in per_rank}
    order = np.argsort(arrivals.wait_total_ns, kind="stable")
    return next((by_rank[int(arrivals.ranks[i])] for i in order.tolist() if int(arrivals.ranks[i]) in by_rank), None)


def verdicts(bundle: Bundle, cfg: AdvisorConfig | None = None) -> tuple[Verdict, ...]:
    """The job's verdict first (multi-rank runs), then every rank's, by rank."""
    out = (verdict_of(bundle, r) for r in sorted(bundle.ranks))
    return verdicts_of(bundle, tuple(v for v in out if v is not None), cfg)


def verdicts_of(bundle: Bundle, per_rank: tuple[Verdict, ...], cfg: AdvisorConfig | None = None
                ) -> tuple[Verdict, ...]:
    """The job's verdict (from ``bundle``'s cluster results and the ranks' verdicts, by rank) first,
    then the ranks'."""
    job = job_verdict(bundle, per_rank, cfg)
    per_rank = _with_waits(per_rank, bundle.cluster_result(ARRIVALS), job)
    return ((job,) if job is not None else ()) + per_rank


#: a communication-bound rank's wait for the others, from this share of its step, is said in its verdict
WAITING_MIN_PCT = 10.0


def _with_waits(per_rank: tuple[Verdict, ...], arrivals: Arrivals | None, job: Verdict | None) -> tuple[Verdict, ...]:
    """The ranks bound by communication with the time they waited there for the others to arrive: a
    rank waiting for a late one is not slowed by its own communication."""
    if arrivals is None or not len(arrivals.ranks):
        return per_rank
    culprits = job.ranks if job is not None and job.bound == "imbalance" else ()
    out = []
    for v in per_rank:
        if v.bound == "communication" and v.rank in arrivals.ranks and v.step_ns > 0:
            per_step = int(arrivals.suffered_ns[arrivals.ranks.index(v.rank)]) / max(arrivals.m.step_count, 1)
            # the arrivals' wait intervals and the path's communication part are read apart: never more than it
            pct = min(100.0 * per_step / v.step_ns, v.shares_pct.get("communication", 0.0))
            if pct >= WAITING_MIN_PCT:
                v = replace(v, waiting_pct=pct, waiting_for=tuple(r for r in culprits if r != v.rank))
        out.append(v)
    return tuple(out)
