"""``zero-grad-not-none``: gradients are zeroed with memset / fill kernels every step (PyTorch tuning guide).

Detects: GPU activities launched under an ``Optimizer.zero_grad#...`` annotation (or by ``aten::zero_``
inside it: the zero_grad analysis) take at least ``zero_grad_min_pct`` of the step. ``zero_grad(set_to_none=True)`` (the
default since PyTorch 2.0) frees the gradients instead: no kernels, and the next backward writes
instead of accumulating.

Gain: those kernels' GPU time per step.
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, per_step, top_names
from stepscope.analysis.registry import ZERO_GRAD

RULE_ID = "zero-grad-not-none"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("compute",)  # the bounds its change shortens
NEEDS_HOST_TIMELINE = True  # reads host ops, launches or annotations: not run on a summary-only trace


def detect(ctx: RuleContext) -> list[Finding]:
    zg = ctx.optional(ZERO_GRAD)
    if zg is None:
        return []
    time_ns = per_step(ctx, float(zg.activities.total_ns))
    if ctx.pct_of_step(time_ns) < ctx.cfg.zero_grad_min_pct:
        return []
    n = max(len(ctx.steps), 1)
    evidence = {"zero_grad_kernels_per_step": round(len(zg.activities) / n, 1), "zero_grad_ms": ms(time_ns),
                "kernels": top_names(zg.activities, per=n)}
    return [ctx.finding(RULE_ID, time_ns, "kernel-time-removed", evidence,
                        Change("zero-grad-set-to-none", {}))]
