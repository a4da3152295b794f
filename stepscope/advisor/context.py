"""What a rule sees: the bundle, the config, the rank it looks at, and the average step it compares to.

A rule asks for an analysis result with :meth:`RuleContext.result` and the analysis's registry
entry, the typed key (``ctx.result(IDLE)`` is an :class:`~stepscope.analysis.idle.IdleResult`);
when that analysis did not run (skipped, or not asked for in this build) the call raises
:class:`~stepscope.analysis.base.NotApplicable` with the reason, and the engine reports the rule as
"not run" once. Rules build findings with :meth:`RuleContext.finding`, which fills in rank, the
step list and the severity from the gain. The context offers no trace: a rule judges analysis
results only (issue 18; ``tests/test_layers.py`` keeps it so).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from stepscope.advisor.config import AdvisorConfig
from stepscope.advisor.finding import Change, Finding, severity_for
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.breakdown import StepBreakdown
from stepscope.analysis.bundle import Bundle
from stepscope.analysis.common import step_windows
from stepscope.analysis.platform import platform_of
from stepscope.analysis.registry import BREAKDOWN, CRITICAL_PATH, OVERVIEW, PROFILER_COST, ClusterAnalysis, RankAnalysis

T = TypeVar("T")


@dataclass(frozen=True)
class RuleContext:
    """One rule's view of the bundle: a rank (``rank`` None = the whole cluster) and its step."""

    bundle: Bundle
    cfg: AdvisorConfig
    rank: int | None
    step_ns: int
    steps: tuple[int, ...]
    platform: str = "cuda"
    whole_trace: bool = False

    def result(self, key: RankAnalysis[T] | ClusterAnalysis[T]) -> T:
        """The result of analysis ``key`` (the rank's, or the trace's for a cluster analysis), or
        NotApplicable saying why there is none."""
        if isinstance(key, ClusterAnalysis):
            return self.bundle.require_cluster(key)
        if self.rank is None:
            raise NotApplicable(f"the {key.name} analysis is per rank")
        return self.bundle.ranks[self.rank].require(key)

    def optional(self, key: RankAnalysis[T] | ClusterAnalysis[T]) -> T | None:
        """The result of ``key``, or None when it did not run."""
        try:
            return self.result(key)
        except NotApplicable:
            return None

    def finding(self, rule: str, gain_ns: float, basis: str, evidence: Mapping[str, Any], change: Change,
                steps: tuple[int, ...] | None = None, rank: int | None = None) -> Finding:
        """A finding of this context's rank, severity from the gain's share of the average step: the step
        without the profiler's own cost where the rank's replay removed it (:meth:`shares_step_ns`)."""
        gain = max(round(gain_ns), 0)
        step_ns = self.shares_step_ns()
        sev = severity_for(gain, step_ns, self.cfg.severity_high_pct, self.cfg.severity_medium_pct)
        return Finding(rule=rule, severity=sev, rank=self.rank if rank is None else rank,
                       steps=self.steps if steps is None else steps, est_gain_ns=gain, step_ns=step_ns,
                       basis=basis, evidence=dict(evidence), change=change, platform=self.platform,
                       whole_trace=self.whole_trace)

    def shares_step_ns(self) -> int:
        """The step every finding of this rank is a share of: the mean step replayed without the
        profiler's own cost where the verdict names it (``ProfilerCost.said``; the replayed gains are
        taken from it), else the recorded step. One step per rank, so the findings' shares compare
        with each other."""
        if self.rank is None:
            return self.step_ns
        p = self.optional(PROFILER_COST)
        if p is None or not p.said or p.unprofiled_step_ns is None or p.unprofiled_step_ns <= 0:
            return self.step_ns
        return round(p.unprofiled_step_ns)

    def pct_of_step(self, ns: float) -> float:
        return 100.0 * ns / self.step_ns if self.step_ns > 0 else 0.0


def rank_breakdown(bundle: Bundle, rank: int) -> StepBreakdown | None:
    """The rank's step breakdown: its own analysis, else the overview's copy; None when neither ran."""
    rr = bundle.ranks[rank]
    bd = rr.get(BREAKDOWN)
    if bd is None:
        ov = rr.get(OVERVIEW)
        bd = ov.breakdown if ov is not None else None
    return bd


def rank_step(bundle: Bundle, rank: int) -> tuple[int, tuple[int, ...]]:
    """Average step time (ns) and step numbers of a rank: the critical path's (the breakdown's windows;
    the device's span for a trace without steps), else the breakdown's, else the raw step windows."""
    cp = bundle.ranks[rank].get(CRITICAL_PATH)
    if cp is not None and cp.step_count and cp.avg_step_ns > 0:
        return round(cp.avg_step_ns), tuple(int(s) for s in cp.step.tolist() if s >= 0)
    bd = rank_breakdown(bundle, rank)
    if bd is not None and bd.step_count:
        steps = tuple(int(s) for s in bd.step.tolist() if s >= 0)
        return round(bd.avg_step_ns), steps
    wins = step_windows(bundle.trace, rank)
    if len(wins) == 0:
        return 0, ()
    steps = tuple(int(s) for s in wins.step.tolist() if s >= 0)
    return int(np.mean(wins.dur_ns)), steps


def context_for(bundle: Bundle, cfg: AdvisorConfig, rank: int | None) -> RuleContext:
    """The context of one rank, or of the cluster (median average step over ranks)."""
    if rank is not None:
        step_ns, steps = rank_step(bundle, rank)
        cp = bundle.ranks[rank].get(CRITICAL_PATH)
        whole = cp is not None and cp.whole_trace
        return RuleContext(bundle, cfg, rank, step_ns, steps, platform_of(bundle.trace, rank), whole)
    first = min(bundle.ranks) if bundle.ranks else 0
    return cluster_context(bundle, cfg, {r: rank_step(bundle, r)[0] for r in bundle.ranks},
                           platform_of(bundle.trace, first))


def cluster_context(bundle: Bundle, cfg: AdvisorConfig, step_ns: Mapping[int, int], platform: str | None
                    ) -> RuleContext:
    """The cluster's context from the ranks' average steps (median of those > 0) and the lowest rank's
    platform; ``bundle`` needs only its cluster results."""
    per = [p for p in step_ns.values() if p > 0]
    return RuleContext(bundle, cfg, None, int(np.median(per)) if per else 0, (),
                       platform if platform is not None else platform_of(bundle.trace, 0))
