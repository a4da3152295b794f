"""``zero-grad-not-none``: gradients are zeroed with memset / fill kernels every step (PyTorch tuning guide).

Detects: GPU activities launched under an ``Optimizer.zero_grad#...`` annotation (or by ``aten::zero_``
inside it: the zero_grad analysis) take at least ``zero_grad_min_pct`` of the step. ``zero_grad(set_to_none=True)`` (the
default since PyTorch 2.0) frees the gradients instead: no kernels, and the next backward writes
instead of accumulating.

Gain: the ``set-to-none`` remedy replayed (:class:`~stepscope.analysis.whatif.zero_grad.SetToNone`: those
kernels, the host's work inside ``Optimizer.zero_grad`` and each zeroed gradient's first accumulation in
the next backward take no time): what reaches the step — the launches on a host-bound step, the kernels
on a device-bound one. Where the replay did not run: those kernels' and accumulations' GPU time per step.
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, per_step, replayed_saving, top_names
from stepscope.analysis.registry import ZERO_GRAD

RULE_ID = "zero-grad-not-none"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("host", "compute")  # the bounds its change shortens: launches and kernels
NEEDS_HOST_TIMELINE = True  # reads host ops, launches or annotations: not run on a summary-only trace


def detect(ctx: RuleContext) -> list[Finding]:
    zg = ctx.optional(ZERO_GRAD)
    if zg is None:
        return []
    time_ns = per_step(ctx, float(zg.activities.total_ns))
    if ctx.pct_of_step(time_ns) < ctx.cfg.zero_grad_min_pct:
        return []
    n = max(len(ctx.steps), 1)
    accumulate_ns = per_step(ctx, float(zg.accumulations.total_ns))
    evidence = {"zero_grad_kernels_per_step": round(len(zg.activities) / n, 1), "zero_grad_ms": ms(time_ns),
                "first_accumulation_ms": ms(accumulate_ns), "kernels": top_names(zg.activities, per=n)}
    change = Change("zero-grad-set-to-none", {})
    replayed = replayed_saving(ctx, "set-to-none", evidence)
    if replayed is not None:
        return [ctx.finding(RULE_ID, replayed, "replayed", evidence, change)]
    return [ctx.finding(RULE_ID, time_ns + accumulate_ns, "kernel-time-removed", evidence, change)]
