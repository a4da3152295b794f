"""Order the findings a user reads: one finding per cause across ranks, the verdict's bound first.

* **Grouped across ranks.** In a multi-rank run a rank-scope rule that fires on several ranks with
  the same change is one finding: ``ranks`` lists where it holds, ``rank`` is the rank where it
  gains most (its evidence is that rank's), ``evidence.per_rank_gain_ms`` gives the spread.
* **Gain for the job.** A cluster rule's finding already states the job's gain (the largest of its
  ranks' is kept). For a rank rule: a synchronous job runs at the pace of its slowest rank, so the grouped
  finding's gain is how much the slowest step would shrink if every rank saved its own gain:
  ``max(step_r) - max(step_r - gain_r)`` (``gain_r`` 0 where the finding does not hold). A fix on
  ranks that wait for others anyway gains the job nothing. A finding whose gain was replayed
  (``evidence.whatif_remedy``) gets the job replay's answer instead when it ran
  (:mod:`stepscope.analysis.whatif.job_whatif`: the remedy on every rank, the ranks tied at their
  collectives, so a rank that gets faster waits longer for the others): the job's mean step
  measured − predicted, with both in the evidence (``whatif_job_measured_ms``, ``..._predicted_ms``).
* **The bound first.** Findings whose change shortens what the verdict says bounds the step (each
  rule's ``ADDRESSES``; for a job bound by imbalance, also what shortens a culprit's cause on that
  culprit) come first, largest gain first; then the others by gain. The verdict and
  the first finding tell one story; a larger saving elsewhere is still listed, and said. Each
  finding carries ``addresses_bound``; when none does, the verdict's text says so (report.texts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from stepscope.advisor.finding import Finding, Severity, severity_for

#: remedy name → the job's mean step (ns) measured and predicted with the remedy on every rank
JobReplays = Mapping[str, tuple[float, float]]


def group_across_ranks(findings: Sequence[Finding], step_ns: Mapping[int, int], high_pct: float,
                       medium_pct: float, cluster_rules: frozenset[str] = frozenset(),
                       job_replays: JobReplays | None = None) -> list[Finding]:
    """One finding per (rule, change) over the ranks it holds for (multi-rank runs only).

    A cluster rule's findings (one per slow rank, say) already carry the job's gain: the group keeps
    the largest, since the job runs at the pace of its slowest rank. A replayed remedy's finding
    takes its job saving from ``job_replays`` when the remedy is there."""
    if len(step_ns) < 2:
        return list(findings)
    groups: dict[tuple[str, str], list[Finding]] = {}
    out: list[Finding] = []
    for f in findings:  # a few per rule and rank
        if f.rank is None:
            out.append(f)
        else:
            groups.setdefault((f.rule, f.change.key), []).append(f)
    for (rule, _), members in groups.items():
        if rule in cluster_rules:
            best = max(members, key=lambda f: (f.est_gain_ns, -(f.rank or 0)))
            ranks = tuple(sorted(int(f.rank) for f in members if f.rank is not None))
            out.append(replace(best, ranks=ranks if len(ranks) > 1 else ()))
        else:
            out.append(_merge(members, step_ns, high_pct, medium_pct, job_replays or {}))
    return out


def job_step_ns(step_ns: Mapping[int, int], job_replays: JobReplays) -> int:
    """The job's step: as the job replay measured it (every rank together, tied by the collectives),
    else the slowest rank's."""
    replayed = next(iter(job_replays.values()), None)
    return int(replayed[0]) if replayed is not None else max(step_ns.values(), default=0)


def _merge(members: list[Finding], step_ns: Mapping[int, int], high_pct: float, medium_pct: float,
           job_replays: JobReplays) -> Finding:
    best = max(members, key=lambda f: (f.est_gain_ns, -(f.rank or 0)))
    gain = {int(f.rank): f.est_gain_ns for f in members if f.rank is not None}
    evidence = dict(best.evidence)
    evidence["per_rank_gain_ms"] = {str(r): round(g / 1e6, 3) for r, g in sorted(gain.items())}
    replayed = job_replays.get(str(evidence.get("whatif_remedy")))
    if replayed is not None:
        job_step, after = replayed
        evidence.update(whatif_job_measured_ms=round(job_step / 1e6, 3), whatif_job_predicted_ms=round(after / 1e6, 3))
    else:
        job_step = max(step_ns.values())
        after = max(s - gain.get(r, 0) for r, s in step_ns.items())
    job_gain = round(max(job_step - after, 0))
    sev: Severity = severity_for(job_gain, job_step, high_pct, medium_pct)
    return replace(best, ranks=tuple(sorted(gain)), est_gain_ns=int(job_gain), step_ns=int(job_step),
                   severity=sev, evidence=evidence)


def rank_findings(findings: Sequence[Finding], bound: str | None = None,
                  addresses: Mapping[str, tuple[str, ...]] | None = None,
                  culprit_causes: Mapping[int, str] | None = None) -> list[Finding]:
    """Findings addressing ``bound`` first, then the rest; each part by gain, severity, rule, rank.

    A job bound by imbalance is also shortened by what shortens a culprit's cause on that culprit
    (``culprit_causes``: its input pipeline, say): such a finding addresses the bound too."""
    addr = addresses or {}
    causes = culprit_causes or {}

    def addresses_bound(f: Finding) -> bool:
        rule = addr.get(f.rule, ())
        if bound is not None and bound in rule:
            return True
        on = set(f.ranks) | ({f.rank} if f.rank is not None else set())
        return bound == "imbalance" and any(causes[r] in rule for r in on & causes.keys())

    def key(f: Finding) -> tuple[int, int, int, str, int]:
        first = 0 if addresses_bound(f) else 1
        return (first, -f.est_gain_ns, f.severity.order, f.rule, -1 if f.rank is None else f.rank)

    return [replace(f, addresses_bound=key(f)[0] == 0) for f in sorted(findings, key=key)]
