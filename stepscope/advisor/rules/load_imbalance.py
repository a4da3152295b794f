"""``load-imbalance``: ranks do unequal amounts of work (SPEC §6; HTA/MSA load balance).

Detects: the cluster analysis' ``imbalance_pct`` — per step, the busiest rank's work over the average
rank's (GPU compute time; a CPU-only job's host work, its waits in the collectives aside), averaged over
the steps, / the mean work — is at least ``imbalance_min_pct``. Step by step where some rank's input
shapes vary across its steps (its work changes from step to step), so that an imbalance whose busiest
rank changes from step to step (random sequence lengths per rank) is seen, where the ranks' averages
are equal; else on the ranks' averages (``ClusterResult.per_step``).
Unlike ``straggler-rank`` it needs no single outlier: it fires for a spread-out or a moving imbalance
too (uneven embedding tables, uneven sequence lengths, pipeline stages of unequal size).
Where one rank is a claimed straggler (``straggler-rank``) and the busiest at most steps, that finding
names the same cause: no second one.

Gain: the busiest rank's work − the average rank's, per step — with perfectly balanced work the
busiest rank, which every collective waits for, would do the mean — capped by what the collectives
actually lose to uneven arrivals (:mod:`stepscope.analysis.arrivals`: Σ (last arrival − mean arrival)
per step). Unequal work that nobody waits for (the busier rank still arrives in time) is no finding.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms
from stepscope.advisor.rules.straggler_rank import claimed_culprits
from stepscope.analysis.registry import ARRIVALS, CLUSTER

RULE_ID = "load-imbalance"
SCOPE = "cluster"
ADDRESSES: tuple[str, ...] = ("imbalance",)  # the bounds its change shortens


def detect(ctx: RuleContext) -> list[Finding]:
    c = ctx.result(CLUSTER)
    if c.imbalance_pct < ctx.cfg.imbalance_min_pct:
        return []
    compute = np.asarray(c.work_ns, np.float64)  # GPU compute; a CPU-only job's host work; else the steps
    by_mean = c.ranks[int(np.argmax(compute))]
    busiest, share = _busiest(c.busiest_per_step, by_mean) if c.per_step else (by_mean, 100.0)
    excess = c.excess_ns
    arrivals = ctx.optional(ARRIVALS)
    if arrivals is not None:
        spread = float(arrivals.spread_ns.sum()) / max(arrivals.m.step_count, 1)
        if ctx.pct_of_step(spread) < ctx.cfg.imbalance_min_pct:
            return []
        excess = min(excess, spread)
        claimed = claimed_culprits(arrivals, ctx.cfg.straggler_min_pct, ctx.cfg.straggler_min_times_last)
        if busiest in claimed and share >= ctx.cfg.moving_max_last_pct:
            return []  # the straggler finding names this rank and its cause: one finding for one cause
    moving = share < ctx.cfg.moving_max_last_pct
    evidence = {"imbalance_pct": round(c.imbalance_pct, 1), "busiest_rank": busiest,
                "busiest_share_pct": round(share, 1), "busiest_per_step": c.busiest_per_step.tolist(),
                "max_compute_ms": ms(compute.max()), "mean_compute_ms": ms(compute.mean()),
                "step_excess_ms": ms(c.excess_ns),
                "per_rank_compute_ms": {str(r): ms(v) for r, v in zip(c.ranks, compute.tolist())},
                "per_rank_kernels": {str(r): int(v) for r, v in zip(c.ranks, c.kernel_count.tolist())}}
    change = Change("balance-per-step", {}) if moving else Change("balance-work", {"busiest_rank": busiest})
    return [ctx.finding(RULE_ID, excess, "imbalance-moving" if moving else "imbalance-excess", evidence, change)]


def _busiest(per_step: npt.NDArray[np.int64], by_mean: int) -> tuple[int, float]:
    """The rank busiest at the most steps and the % of steps it is (the busiest on average, 100 %, without
    per-step work)."""
    if not len(per_step):
        return by_mean, 100.0
    ranks, counts = np.unique(per_step, return_counts=True)
    i = int(np.argmax(counts))
    return int(ranks[i]), 100.0 * float(counts[i]) / len(per_step)
