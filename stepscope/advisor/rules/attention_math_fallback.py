"""``attention-math-fallback``: scaled-dot-product attention runs on SDPA's math backend — the score
matrix materialised, softmax and masking as separate kernels, bf16 / fp16 inputs computed in FP32 —
where a fused kernel (flash, memory-efficient, cuDNN) would make one pass on Tensor Cores.

Detects, from the tensor_cores analysis' :class:`~stepscope.analysis.attention_fallback.MathAttention`
(the device work launched inside ``aten::_scaled_dot_product_attention_math`` and under the backward
ops of its ops, matched by sequence number): its time per step, at least
``attention_fallback_min_pct`` of the step after the critical-path share.

Gain: the ``fused-attention`` remedy replayed
(:class:`~stepscope.analysis.whatif.kernel_remedies.FusedAttention`: the math kernels take what a fused
kernel needs at least — the attention's FLOPs, forward and backward as TraceLens counts them, at the
device's dense peak for the inputs' type; no time without a known device or recorded shapes): what
reaches the step, an upper bound (fused kernels reach part of the peak). Where the replay did not run:
the math kernels' time per step less that minimum, times their on-path share.
Measured on an H200 (``tests/data/h200_bounds/
r12``: bf16 causal attention, batch 16, 16 heads, 2,048 tokens, head dim 128): 55.7 ms a step on the
math backend, the gain 54.0 ms (0.97 ms at the peak), 2.48 ms measured with SDPA's default choice
(cuDNN's flash kernels): saving 53.3 ms, predicted within 1.5 %.

No ``no-tensor-cores`` for these kernels: the program runs bf16 already, AMP would not change them.
"""

from __future__ import annotations

import math

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, on_path_share, per_step, replayed_saving
from stepscope.analysis.registry import TENSOR_CORES

RULE_ID = "attention-math-fallback"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("compute",)  # the bounds its change shortens
NEEDS_HOST_TIMELINE = True  # reads the launching ops


def detect(ctx: RuleContext) -> list[Finding]:
    fb = ctx.result(TENSOR_CORES).math_attention
    if fb.calls == 0 or not len(fb.rows):
        return []
    math_ns = per_step(ctx, float(fb.device_ns))
    fused_ns = per_step(ctx, fb.fused_min_ns) if math.isfinite(fb.fused_min_ns) else 0.0
    evidence: dict[str, object] = {}
    replayed = replayed_saving(ctx, "fused-attention", evidence)
    gain = replayed if replayed is not None else \
        max(math_ns - fused_ns, 0.0) * on_path_share(ctx, "fused-attention", evidence)
    if ctx.pct_of_step(gain) < ctx.cfg.attention_fallback_min_pct:
        return []
    evidence |= {
        "math_ms": ms(math_ns), "calls_per_step": round(fb.calls / max(len(ctx.steps), 1), 1),
        "kernels_per_step": round(len(fb.rows) / max(len(ctx.steps), 1), 1), "dtype": fb.dtype or None,
        "tflop_per_step": round(per_step(ctx, fb.flops) / 1e12, 3) if math.isfinite(fb.flops) else None,
        "fused_min_ms": ms(fused_ns) if math.isfinite(fb.fused_min_ns) else None}
    basis = "replayed" if replayed is not None else \
        "fused-attention-peak" if math.isfinite(fb.fused_min_ns) else "math-attention-time"
    return [ctx.finding(RULE_ID, gain, basis, evidence, Change("use-fused-attention", {}))]
