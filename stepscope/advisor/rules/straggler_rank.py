"""``straggler-rank``: one rank works longer and the others wait for it in every collective (SPEC §6).

Detects: the cluster analysis' slow ranks (a rank whose work metrics exceed the median by more than
its threshold and by a robust z-score; :mod:`stepscope.analysis.stragglers`).

Gain: the slow rank's excess GPU compute time per step over the median rank — the time every other
rank spends waiting for it at the next collective.
"""

from __future__ import annotations

import numpy as np

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms
from stepscope.analysis.registry import CLUSTER

RULE_ID = "straggler-rank"
SCOPE = "cluster"
ADDRESSES: tuple[str, ...] = ("imbalance",)  # the bounds its change shortens


def detect(ctx: RuleContext) -> list[Finding]:
    c = ctx.result(CLUSTER)
    out: list[Finding] = []
    med_compute = float(np.median(c.compute_ns))
    med_step = float(np.median(c.step_ns))
    for r in c.slow_ranks:  # per slow rank (a handful), not per event
        i = c.ranks.index(r)
        excess = max(float(c.compute_ns[i]) - med_compute, float(c.step_ns[i]) - med_step, 0.0)
        evidence = {"slow_rank": r, "reasons": list(c.slow_reasons.get(r, [])),
                    "excess_pct": {k: round(v, 1) for k, v in c.excess_pct.get(r, {}).items()},
                    "compute_ms": ms(c.compute_ns[i]), "median_compute_ms": ms(med_compute),
                    "step_ms": ms(c.step_ns[i]), "median_step_ms": ms(med_step),
                    "kernel_count": int(c.kernel_count[i]),
                    "median_kernel_count": float(np.median(c.kernel_count)),
                    "others_wait_ms": ms(float(np.median(np.delete(c.wait_ns, i))))}
        f = ctx.finding(RULE_ID, excess, "excess-over-median", evidence, Change("fix-slow-rank", {"rank": r}),
                       rank=r)
        out.append(f)
    return out
