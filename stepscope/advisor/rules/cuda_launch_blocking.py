"""``cuda-launch-blocking``: every kernel launch waits for its kernel to finish (``CUDA_LAUNCH_BLOCKING=1``).

Detects: at least ``blocking_launch_min_share_pct`` of the kernels (of at least 20) finish before
their launch call returns (launch analysis: launch delay ≤ −kernel duration) — the signature of
``CUDA_LAUNCH_BLOCKING=1`` (a debugging switch left on) or of a profiler/driver mode that
serialises launches. The host can then never run ahead of the GPU.

Gain: the ``no-launch-blocking`` remedy replayed (:class:`~stepscope.analysis.whatif.launch_blocking.
NoLaunchBlocking`: those calls take a normal launch's 5 µs): what reaches the step — the host runs ahead,
but the kernels still take their time, so on a device-heavy program most of the wait is not saved.
Where the replay did not run: the calls' host time beyond a normal launch, per step.
"""

from __future__ import annotations

import numpy as np

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, per_step, replayed_saving
from stepscope.analysis.registry import LAUNCH
from stepscope.analysis.whatif.launch_blocking import NORMAL_LAUNCH_NS

RULE_ID = "cuda-launch-blocking"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("host",)  # the bounds its change shortens
NEEDS_HOST_TIMELINE = True  # reads host ops, launches or annotations: not run on a summary-only trace
MIN_KERNELS = 20


def detect(ctx: RuleContext) -> list[Finding]:
    res = ctx.result(LAUNCH)
    sel = res.step >= 0 if ctx.steps else np.ones(len(res.rows), bool)
    if int(sel.sum()) < MIN_KERNELS:
        return []
    blocking = sel & (res.launch_delay_ns + res.kernel_ns <= 0)
    share = 100.0 * float(blocking.sum()) / float(sel.sum())
    if share < ctx.cfg.blocking_launch_min_share_pct:
        return []
    excess = per_step(ctx, float(np.maximum(res.cpu_launch_ns[blocking] - NORMAL_LAUNCH_NS, 0).sum()))
    evidence = {"blocking_launch_pct": round(share, 1), "launches": int(sel.sum()),
                "median_launch_us": round(float(np.median(res.cpu_launch_ns[sel])) / 1e3, 2),
                "median_kernel_us": round(float(np.median(res.kernel_ns[sel])) / 1e3, 2),
                "excess_launch_ms": ms(excess)}
    change = Change("unset-launch-blocking", {"env": "CUDA_LAUNCH_BLOCKING"})
    replayed = replayed_saving(ctx, "no-launch-blocking", evidence)
    if replayed is not None:
        return [ctx.finding(RULE_ID, replayed, "replayed", evidence, change)]
    return [ctx.finding(RULE_ID, excess, "launch-excess", evidence, change)]
