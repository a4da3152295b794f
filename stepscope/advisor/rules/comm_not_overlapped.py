"""``comm-not-overlapped``: collectives run while no computation does (SPEC §6; TB, HTA, MSA).

Detects: communication time not overlapped by computation (distributed analysis:
``communication_ns`` = |comm kernels \\ compute kernels| per step) is at least
``comm_exposed_min_pct`` of the step.

Gain: the exposed communication that is *transfer* (not waiting for a late rank: the distributed
analysis splits each collective into wait and transfer), capped by the computation time it could
hide behind — what overlapping gradient all-reduce with the backward pass (DDP buckets, FSDP
prefetch) can give back. Waiting time belongs to ``straggler-rank``.

A GPU rank whose collectives run on the host (gloo all-reduces CUDA tensors on the CPU: a copy to
the host, the reduction over TCP, a copy back) has no communication kernel to overlap; its exposed
communication is the host's time inside those collectives on the step's critical path (the verdict's
communication part), at least ``comm_exposed_min_pct`` of the step. The gain is that time (an upper
bound: the collectives on the device still take a fraction of it), and the change, with gloo, is
NCCL for the CUDA tensors. A CPU-only job's collectives (gloo) are its communication: their time on
the step's critical path (the verdict's communication part), at least ``comm_exposed_min_pct`` of the
step, is the gain (an upper bound), and the change is to communicate less per sample (gradient
accumulation under ``no_sync()``, a larger batch, a compression hook, larger buckets).
"""

from __future__ import annotations

import numpy as np

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms
from stepscope.analysis.critical_path import PARTS, WAITS
from stepscope.analysis.registry import CRITICAL_PATH, DISTRIBUTED, SOFTWARE

RULE_ID = "comm-not-overlapped"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("communication",)  # the bounds its change shortens


def detect(ctx: RuleContext) -> list[Finding]:
    d = ctx.optional(DISTRIBUTED)
    if d is None or len(d.step) == 0 or d.comm_kernel_count == 0:
        return _host_side(ctx)
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


def _host_side(ctx: RuleContext) -> list[Finding]:
    """A rank whose collectives run on the host: a GPU rank's gloo, or a CPU-only job's (see the
    module docstring)."""
    cp = ctx.optional(CRITICAL_PATH)
    if cp is None or not len(cp.step):
        return []
    if not cp.has_device:
        return _cpu_job(ctx, float(np.mean(cp.parts_ns[:, PARTS.index("communication")])))
    exposed = float(np.mean(cp.waits_ns[:, WAITS.index("communication")]))
    if ctx.pct_of_step(exposed) < ctx.cfg.comm_exposed_min_pct:
        return []
    backend = ctx.result(SOFTWARE).comm_backend
    evidence = {"exposed_comm_ms": ms(exposed), "exposed_comm_pct": round(ctx.pct_of_step(exposed), 2),
                "host_side": True, "backend": backend or "unknown"}
    change = (Change("use-nccl", {"backend": backend}) if backend == "gloo"
              else Change("overlap-communication", {"bucket_cap_mb": 25}))
    return [ctx.finding(RULE_ID, exposed, "host-side-comm", evidence, change)]


def _cpu_job(ctx: RuleContext, on_path_ns: float) -> list[Finding]:
    """A CPU-only rank: its collectives' time on the step's critical path (the verdict's communication
    part) is what communicating less gives back, at most; waiting there for a late rank is
    ``straggler-rank``'s too (the gains are not added)."""
    if ctx.pct_of_step(on_path_ns) < ctx.cfg.comm_exposed_min_pct:
        return []
    backend = ctx.result(SOFTWARE).comm_backend
    evidence = {"exposed_comm_ms": ms(on_path_ns), "exposed_comm_pct": round(ctx.pct_of_step(on_path_ns), 2),
                "host_side": True, "backend": backend or "unknown"}
    change = Change("communicate-less", {"comm_pct": round(ctx.pct_of_step(on_path_ns), 1)})
    return [ctx.finding(RULE_ID, on_path_ns, "cpu-comm", evidence, change)]
