"""``variable-input-shapes``: the same ops see different input shapes from step to step (SPEC §6).

Detects (needs ``record_shapes``): among ops that run in every profiled step, the share of calls
whose (op, input shapes) pair is *not* seen in every step is at least ``shape_variability_min_pct``.
Varying shapes (NLP batches padded to their longest sequence, variable image sizes) defeat
``cudnn.benchmark`` caches, CUDA Graphs and ``torch.compile`` (recompiles), and pad work.

The input_shapes analysis counts the (name, shape) keys per step; the rule weighs their share.

Gain: not estimated (depends on the padding removed); severity low, the shapes are the evidence.
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.analysis.registry import INPUT_SHAPES

RULE_ID = "variable-input-shapes"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("host", "compute")  # the bounds its change shortens
NEEDS_HOST_TIMELINE = True  # reads host ops, launches or annotations: not run on a summary-only trace


def detect(ctx: RuleContext) -> list[Finding]:
    res = ctx.result(INPUT_SHAPES)
    if res.varying_calls == 0 or res.varying_pct < ctx.cfg.shape_variability_min_pct:
        return []
    evidence = {"varying_calls_pct": round(res.varying_pct, 1), "steps": res.step_count,
                "example_op": res.example_op, "example_shapes": list(res.example_shapes)}
    return [ctx.finding(RULE_ID, 0.0, "not-estimated", evidence, Change("bucket-by-length", {}))]
