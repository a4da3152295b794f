"""``zero-grad-not-none``: gradients are zeroed with memset / fill kernels every step (PyTorch tuning guide).

Detects: GPU activities launched under an ``Optimizer.zero_grad#...`` annotation (or by ``aten::zero_``
inside it) take at least ``zero_grad_min_pct`` of the step. ``zero_grad(set_to_none=True)`` (the
default since PyTorch 2.0) frees the gradients instead: no kernels, and the next backward writes
instead of accumulating.

Gain: those kernels' GPU time per step.
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ancestor_with, ms, per_step, rank_rows, top_names
from stepscope.model.schema import GPU_KINDS

RULE_ID = "zero-grad-not-none"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("compute",)  # the bounds its change shortens


def detect(ctx: RuleContext) -> list[Finding]:
    trace, ev = ctx.trace, ctx.trace.events
    g = rank_rows(ctx, *GPU_KINDS)
    marked = trace.strings.mask(lambda s: s.startswith("Optimizer.zero_grad"))
    under = ancestor_with(trace, ev["op"][g].astype("int64"), marked) >= 0
    rows = g[under]
    time_ns = per_step(ctx, float(ev["dur_ns"][rows].sum()))
    if len(rows) == 0 or ctx.pct_of_step(time_ns) < ctx.cfg.zero_grad_min_pct:
        return []
    n = max(len(ctx.steps), 1)
    evidence = {"zero_grad_kernels_per_step": round(len(rows) / n, 1), "zero_grad_ms": ms(time_ns),
                "kernels": top_names(trace, rows, per=n)}
    return [ctx.finding(RULE_ID, time_ns, "kernel-time-removed", evidence,
                        Change("zero-grad-set-to-none", {}))]
