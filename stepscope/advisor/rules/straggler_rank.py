"""``straggler-rank``: one rank arrives late at the collectives and the others wait for it (SPEC §6).

Detects: the culprits of the arrival analysis (:mod:`stepscope.analysis.arrivals`): ranks that
arrive last at the collectives, whose lateness the trace explains (every cause but a late start
before the trace) for at least ``straggler_min_pct`` % of the job's step, and that are last at
``straggler_min_times_last`` collectives or more (consistently late, not once). Not the ranks with the
longest step spans: an early rank has a long span and waits long, and is the victim.

Gain: the "fix a slow rank" what-if (:mod:`stepscope.analysis.whatif.fix_rank`): the culprit
arrives with the second-to-last rank at every collective it was last at, and the whole job is
replayed, its ranks tied by their collectives: the saving on the job's mean step. The other ranks'
waits shrink only as far as their own work lets them, so this is at most the culprit's summed
lateness, and often less. Without the replay (no step graph), the summed lateness per step,
capped by the step.
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms
from stepscope.analysis.arrivals import CAUSES, Arrivals
from stepscope.analysis.registry import ARRIVALS, JOB_WHATIF
from stepscope.analysis.whatif.job_whatif import JobWhatIf

RULE_ID = "straggler-rank"
SCOPE = "cluster"
ADDRESSES: tuple[str, ...] = ("imbalance",)  # the bounds its change shortens


def claimed_culprits(a: Arrivals, min_pct: float, min_times: int) -> list[int]:
    """Culprits consistently late (last at ``min_times`` collectives or more) whose in-trace lateness,
    net of the others' lateness they waited for, is at least ``min_pct`` % of the job's step time."""
    job = a.m.job_step_ns * max(a.m.step_count, 1)
    return [r for r in a.culprits if job > 0 and 100.0 * a.in_trace_net_late_ns(r) / job >= min_pct
            and int(a.times_last[a.ranks.index(r)]) >= min_times]


def detect(ctx: RuleContext) -> list[Finding]:
    a = ctx.result(ARRIVALS)
    job = ctx.optional(JOB_WHATIF)
    out: list[Finding] = []
    steps = max(a.m.step_count, 1)
    for r in claimed_culprits(a, ctx.cfg.straggler_min_pct, ctx.cfg.straggler_min_times_last):  # a handful of culprits
        i = a.ranks.index(r)
        lateness = min(float(a.late_ns[i]) / steps, a.m.job_step_ns)
        waits = {str(v): ms(a.wait_on_culprits_ns[a.ranks.index(v)] / steps) for v in a.victims}
        evidence = {"slow_rank": r, "cause": a.culprit_cause[r], "times_last": int(a.times_last[i]),
                    "collectives": a.collective_count, "late_ms": ms(a.late_ns[i] / steps),
                    "in_trace_late_ms": ms(a.in_trace_late_ns(r) / steps),
                    "net_late_ms": ms(a.net_late_ns(r) / steps), "waited_for_others_ms": ms(a.suffered_ns[i] / steps),
                    "cause_ms": {c: ms(v / steps) for c, v in zip(CAUSES, a.rank_cause_ns[i].tolist()) if v > 0},
                    "victims": list(a.victims), "victim_wait_ms": waits, "job_step_ms": ms(a.m.job_step_ns)}
        replayed = _replayed_fix(job, r, evidence)
        gain, basis = (lateness, "culprit-lateness") if replayed is None else (replayed, "replayed")
        out.append(ctx.finding(RULE_ID, gain, basis, evidence,
                               Change("fix-slow-rank", {"rank": r, "cause": a.culprit_cause[r]}), rank=r))
    return out


def _replayed_fix(job: JobWhatIf | None, rank: int, evidence: dict[str, object]) -> float | None:
    """What fixing the rank saves on the job's mean step, replayed, with its basis added to the
    evidence; None when the job replay did not run (the summed lateness is the gain then)."""
    saved = job.saved_ns(rank) if job is not None else None
    if job is None or saved is None:
        return None
    predicted = float(job.predicted_mean_ns[job.culprits.index(rank)])
    evidence.update(whatif_remedy="fix-rank", whatif_basis=job.basis(rank),
                    whatif_command=f"stepscope whatif RUN --fix-rank {rank}",
                    whatif_measured_ms=ms(job.measured_mean_ns), whatif_predicted_ms=ms(predicted))
    return saved
