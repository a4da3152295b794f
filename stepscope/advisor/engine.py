"""Run every rule over an analysed trace and rank what they find by estimated gain.

``advise(bundle)`` is what ``stepscope analyze`` calls; ``run_advisor(bundle)`` also returns the rules
that could not run (one entry per rule and reason, with the ranks it concerns) and the per-rank
verdicts, for ``stepscope advise``.

A rule is a module of :mod:`stepscope.advisor.rules` with ``RULE_ID``, ``SCOPE`` (``"rank"`` or
``"cluster"``) and ``detect(ctx) -> list[Finding]`` (the :class:`Rule` protocol). A rule whose data
is missing raises :class:`~stepscope.analysis.base.NotApplicable`; any other exception is a bug in the
rule, recorded as "not run" with the error so that one broken rule never takes the report down. A rule
that sets ``NEEDS_HOST_TIMELINE = True`` is not run on a rank without a host timeline (a summary-only
trace, :func:`~stepscope.analysis.platform.no_host_timeline`), with that as the reason.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from stepscope.advisor.config import AdvisorConfig
from stepscope.advisor.context import RuleContext, cluster_context, context_for
from stepscope.advisor.finding import Finding, NotRun
from stepscope.advisor.ranking import JobReplays, group_across_ranks, job_step_ns, rank_findings
from stepscope.advisor.rules import ALL_RULES
from stepscope.advisor.verdict import Verdict, verdict_of, verdicts_of
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.bundle import Bundle, with_bundle_memo
from stepscope.analysis.platform import no_host_timeline
from stepscope.analysis.registry import JOB_WHATIF
from stepscope.analysis.whatif.job_whatif import JobWhatIf

log = logging.getLogger(__name__)


class Rule(Protocol):
    """What every rule module provides."""

    @property
    def RULE_ID(self) -> str: ...

    @property
    def SCOPE(self) -> str: ...

    @property
    def ADDRESSES(self) -> tuple[str, ...]: ...  # the verdict bounds its change shortens

    def detect(self, ctx: RuleContext) -> list[Finding]: ...


@dataclass(frozen=True)
class Advice:
    """Everything the advisor says about one trace."""

    findings: tuple[Finding, ...]
    not_run: tuple[NotRun, ...]
    verdicts: tuple[Verdict, ...]


def advise(bundle: Bundle, config: AdvisorConfig | None = None) -> list[Finding]:
    """Findings of every rule, largest estimated gain first."""
    return list(run_advisor(bundle, config).findings)


@dataclass(frozen=True)
class RankAdvice:
    """One rank's part of the advisor, made where the rank's results are (a map worker on the
    map-reduce path): every rank-scope rule's findings on it, or why the rule did not run, in rule
    order; the rank's average step and platform (the cluster context) and its verdict."""

    rank: int
    step_ns: int
    platform: str
    outcomes: dict[str, tuple[str | None, tuple[Finding, ...]]]  # rule id → (reason not run, findings)
    verdict: Verdict | None


@with_bundle_memo
def run_advisor(bundle: Bundle, config: AdvisorConfig | None = None,
                rules: Sequence[Rule] | None = None) -> Advice:
    """Findings (ranked), the rules that could not run (once each, with why) and the verdicts."""
    cfg = config or AdvisorConfig()
    parts = {r: rank_advice(bundle, r, cfg, rules) for r in sorted(bundle.ranks)}
    return combine_advice(parts, bundle, cfg, rules)


def rank_advice(bundle: Bundle, rank: int, cfg: AdvisorConfig, rules: Sequence[Rule] | None = None) -> RankAdvice:
    """The per-rank step: the rank-scope rules on ``rank`` and its verdict (inside the bundle's memo)."""
    with bundle.memo.active():
        ctx = context_for(bundle, cfg, rank)
        outcomes: dict[str, tuple[str | None, tuple[Finding, ...]]] = {}
        for rule in rules if rules is not None else ALL_RULES:
            if rule.SCOPE != "cluster":
                found: list[Finding] = []
                reason = _run_one(rule, ctx, found)
                outcomes[rule.RULE_ID] = (reason, tuple(found))
        return RankAdvice(rank, ctx.step_ns, ctx.platform, outcomes, verdict_of(bundle, rank))


def combine_advice(parts: Mapping[int, RankAdvice], bundle: Bundle, cfg: AdvisorConfig,
                   rules: Sequence[Rule] | None = None) -> Advice:
    """The cross-rank step: the cluster rules (on ``bundle``'s cluster results), the job's verdict,
    one finding per cause across ranks, ranked. ``parts`` are the ranks' own steps."""
    found: list[Finding] = []
    skipped: dict[tuple[str, str], list[int]] = {}
    steps = {r: p.step_ns for r, p in parts.items() if p.step_ns > 0}
    cluster_ctx = cluster_context(bundle, cfg, {r: p.step_ns for r, p in parts.items()},
                                  parts[min(parts)].platform if parts else None)
    replays = _job_replays(cluster_ctx.optional(JOB_WHATIF))
    if len(steps) > 1:  # a cluster finding's share is of the job's step, as a finding merged across ranks
        cluster_ctx = replace(cluster_ctx, step_ns=job_step_ns(steps, replays))
    for rule in rules if rules is not None else ALL_RULES:
        if rule.SCOPE == "cluster":
            outcomes = [(-1, _run_one(rule, cluster_ctx, found))]
        else:
            outcomes = []
            for r in sorted(parts):  # per rank
                reason, fs = parts[r].outcomes[rule.RULE_ID]
                found.extend(fs)
                outcomes.append((r, reason))
        for r, reason in outcomes:
            if reason is not None:
                skipped.setdefault((rule.RULE_ID, reason), []).append(r)
    not_run = tuple(NotRun(rule_id, reason, tuple(sorted({r for r in ranks if r >= 0})))
                    for (rule_id, reason), ranks in skipped.items())
    verdict = verdicts_of(bundle, tuple(p.verdict for _, p in sorted(parts.items()) if p.verdict is not None), cfg)
    cluster_rules = frozenset(r.RULE_ID for r in ALL_RULES if r.SCOPE == "cluster")
    grouped = group_across_ranks(found, steps, cfg.severity_high_pct, cfg.severity_medium_pct, cluster_rules,
                                 replays)
    # findings that shorten the step's bound come first: the bound of the step without the profiler's own
    # cost where that is another (analysis.profiler_cost), else the recorded one
    bound = (verdict[0].unprofiled_bound or verdict[0].bound) if verdict else None
    addresses = {rule.RULE_ID: tuple(rule.ADDRESSES) for rule in ALL_RULES}
    causes = dict(zip(verdict[0].ranks, verdict[0].causes)) if bound == "imbalance" else {}
    return Advice(tuple(rank_findings(grouped, bound, addresses, causes)), not_run, verdict)


def _job_replays(job: JobWhatIf | None) -> JobReplays:
    """Per standard remedy: the job's mean step measured and predicted with it on every rank."""
    if job is None:
        return {}
    return {n: (job.measured_mean_ns, float(job.remedy_predicted_mean_ns[i])) for i, n in enumerate(job.remedy)}


def _run_one(rule: Rule, ctx: RuleContext, out: list[Finding]) -> str | None:
    """Run one rule on one context; the reason it could not run, or None."""
    if getattr(rule, "NEEDS_HOST_TIMELINE", False) and ctx.rank is not None:
        missing = no_host_timeline(ctx.bundle.trace, ctx.rank)
        if missing:  # an absent op or launch would read as "none": no finding, but never a wrong one
            return missing
    try:
        out.extend(rule.detect(ctx))
    except NotApplicable as exc:
        return exc.reason
    except Exception as exc:  # a bug in one rule must not hide the others' findings
        log.debug("rule %s failed on rank %s", rule.RULE_ID, ctx.rank, exc_info=True)
        return f"internal error: {type(exc).__name__}: {exc}"
    return None


