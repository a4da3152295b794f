"""``comm-not-overlapped``: collectives run while no computation does (SPEC §6; TB, HTA, MSA).

Detects: communication time not overlapped by computation (distributed analysis:
``communication_ns`` = |comm kernels \\ compute kernels| per step) is at least
``comm_exposed_min_pct`` of the step.

Gain: the exposed communication that is *transfer* (not waiting for a late rank: the distributed
analysis splits each collective into wait and transfer), capped by the computation time it could
hide behind — what overlapping gradient all-reduce with the backward pass (DDP buckets, FSDP
prefetch) can give back. Waiting time belongs to ``straggler-rank``.
"""

from __future__ import annotations

import numpy as np

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms
from stepscope.analysis.registry import DISTRIBUTED

RULE_ID = "comm-not-overlapped"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("communication",)  # the bounds its change shortens


def detect(ctx: RuleContext) -> list[Finding]:
    d = ctx.result(DISTRIBUTED)
    if len(d.step) == 0 or d.comm_kernel_count == 0:
        return []
    exposed = float(np.mean(d.communication_ns))
    if ctx.pct_of_step(exposed) < ctx.cfg.comm_exposed_min_pct:
        return []
    comm_total = float(np.mean(d.communication_ns + d.overlap_ns))
    wait = float(np.mean(d.wait_ns))
    transfer_share = 1.0 - min(wait / comm_total, 1.0) if comm_total > 0 else 1.0
    gain = min(exposed * transfer_share, float(np.mean(d.computation_ns)))
    c = d.collectives
    colls = [{"type": c.coll_type[i], "pg": c.pg_name[i], "count": int(c.count[i]), "ms": ms(c.time_ns[i])}
             for i in range(min(5, len(c.coll_type)))]
    evidence = {"exposed_comm_ms": ms(exposed), "exposed_comm_pct": round(ctx.pct_of_step(exposed), 2),
                "overlap_ratio_pct": round(d.overlap_ratio_pct, 1), "wait_ms": ms(wait),
                "computation_ms": ms(float(np.mean(d.computation_ns))), "collectives": colls,
                "wait_method": d.wait_method}
    return [ctx.finding(RULE_ID, gain, "hideable-comm", evidence,
                        Change("overlap-communication", {"bucket_cap_mb": 25}))]
