"""``small-kernel-optimizer``: the optimizer step is many small per-tensor kernels (SPEC §6; HTA/MSA fusion).

Detects: the fusion analysis' optimizer verdict ``many-small-kernels`` (an ``Optimizer.step#...``
annotation launches mostly single-tensor elementwise kernels) with at least
``optimizer_min_kernels_per_step`` kernels per optimizer step.

Gain: the optimizer kernels' GPU time per step × (1 − 1 / ``optimizer_fused_speedup``): the
``foreach`` / ``fused`` implementations do the same math in a few multi-tensor kernels.
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, per_step, top_names
from stepscope.analysis.registry import FUSION

RULE_ID = "small-kernel-optimizer"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("host", "compute")  # the bounds its change shortens
NEEDS_HOST_TIMELINE = True  # reads host ops, launches or annotations: not run on a summary-only trace


def detect(ctx: RuleContext) -> list[Finding]:
    opt = ctx.result(FUSION).optimizer
    if opt.verdict != "many-small-kernels" or opt.kernels_per_step < ctx.cfg.optimizer_min_kernels_per_step:
        return []
    n = max(opt.step_count, 1)
    time_ns = opt.time_ns / n
    evidence = {"optimizer_steps": opt.step_count, "kernels_per_optimizer_step": round(opt.kernels_per_step, 1),
                "elementwise_pct": round(opt.elementwise_pct, 1), "optimizer_kernel_ms": ms(time_ns),
                "optimizer": opt.name, "kernels": top_names(opt.kernels, per=n),
                "fused_speedup": ctx.cfg.optimizer_fused_speedup}
    gain = per_step(ctx, opt.time_ns) * (1.0 - 1.0 / max(ctx.cfg.optimizer_fused_speedup, 1.0))
    return [ctx.finding(RULE_ID, gain, "fused-optimizer-speedup", evidence,
                        Change("fused-optimizer", {"optimizer": evidence["optimizer"]}))]
