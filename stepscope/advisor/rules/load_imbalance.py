"""``load-imbalance``: ranks do unequal amounts of work (SPEC §6; HTA/MSA load balance).

Detects: the cluster analysis' ``imbalance_pct`` = (max − mean) / mean of per-rank GPU compute time
per step (a CPU-only job's host work, its waits in the collectives aside) is at least ``imbalance_min_pct``.
Unlike ``straggler-rank`` it needs no single outlier: it
fires for a spread-out imbalance too (uneven embedding tables, uneven sequence lengths, pipeline
stages of unequal size).

Gain: (max − mean) compute time per step — with perfectly balanced work the busiest rank, which every
collective waits for, would do the mean — capped by what the collectives actually lose to uneven
arrivals (:mod:`stepscope.analysis.arrivals`: Σ (last arrival − mean arrival) per step). Unequal work
that nobody waits for (the busier rank still arrives in time) is no finding.
"""

from __future__ import annotations

import numpy as np

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms
from stepscope.analysis.registry import ARRIVALS, CLUSTER

RULE_ID = "load-imbalance"
SCOPE = "cluster"
ADDRESSES: tuple[str, ...] = ("imbalance",)  # the bounds its change shortens


def detect(ctx: RuleContext) -> list[Finding]:
    c = ctx.result(CLUSTER)
    if c.imbalance_pct < ctx.cfg.imbalance_min_pct:
        return []
    compute = np.asarray(c.work_ns, np.float64)  # GPU compute; a CPU-only job's host work; else the steps
    busiest = int(np.argmax(compute))
    excess = float(compute.max() - compute.mean())
    arrivals = ctx.optional(ARRIVALS)
    if arrivals is not None:
        spread = float(arrivals.spread_ns.sum()) / max(arrivals.m.step_count, 1)
        if ctx.pct_of_step(spread) < ctx.cfg.imbalance_min_pct:
            return []
        excess = min(excess, spread)
    evidence = {"imbalance_pct": round(c.imbalance_pct, 1), "busiest_rank": c.ranks[busiest],
                "max_compute_ms": ms(compute.max()), "mean_compute_ms": ms(compute.mean()),
                "per_rank_compute_ms": {str(r): ms(v) for r, v in zip(c.ranks, compute.tolist())},
                "per_rank_kernels": {str(r): int(v) for r, v in zip(c.ranks, c.kernel_count.tolist())}}
    return [ctx.finding(RULE_ID, excess, "imbalance-excess", evidence,
                        Change("balance-work", {"busiest_rank": c.ranks[busiest]}))]
