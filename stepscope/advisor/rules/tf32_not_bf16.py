"""``tf32-not-bf16``: GEMMs and convolutions run on Tensor Cores in TF32, on FP32 tensors (SPEC §6).

Detects: Tensor-Core kernels launched by Tensor-Core eligible ops whose inputs are FP32 only (the
op's recorded ``Input type``; without it, the kernel's name says ``tf32``) — TF32 math, PyTorch's
default for convolutions and ``set_float32_matmul_precision("high")``'s for matmuls — take at least
``tf32_min_pct`` of kernel time, on an NVIDIA device of compute capability ≥ 8.0 (or of unknown
capability, a trace without its ``deviceProperties``: TF32 kernels exist from Ampere on). The model runs in
FP32: mixed precision (bf16) has twice TF32's Tensor-Core throughput on every such part.

Gain: the ``bf16`` remedy replayed (:class:`stepscope.analysis.whatif.precision.Bf16OverTf32`: the TF32
kernels at 1 / speed-up of their time, the speed-up being the device's dense bf16 peak over its TF32
peak, :func:`stepscope.analysis.peaks.amp_speedup`: 2 on A100 / H100 / H200) — what reaches the step
once they shrink. Where ``amp_speedup`` is set, or the replay did not run: the TF32 kernels' time per
step × (1 − 1 / speed-up) × the share of those kernels' time on the step's critical path (``remedies``'
``tf32`` kernel set). A lower bound of what autocast gives: on an H200
(``tests/data/h200_bounds/r10``, ``r11``) bf16 GEMMs ran 2.6× faster than TF32 ones (93 % against
71 % of their peaks) and the activations in bf16 halve the memory traffic of the ops around them —
an MLP step predicted 6.0 ms from 10.7, measured 5.15 ms (+17 %); a conv net 21.1 ms from 28.6,
measured 17.5 ms (+21 %).
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import amp_speedup_for, ms, on_path_share, per_step, replayed_saving, top_names
from stepscope.analysis.registry import TENSOR_CORES

RULE_ID = "tf32-not-bf16"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("compute",)  # the bounds its change shortens
NEEDS_HOST_TIMELINE = True  # reads the launching ops' input types


def detect(ctx: RuleContext) -> list[Finding]:
    tc = ctx.optional(TENSOR_CORES)
    # TF32 Tensor-Core kernels exist from Ampere on: a device of unknown capability (a trace without
    # its deviceProperties) that runs them is one
    pre_ampere = tc is not None and tc.compute_major is not None and tc.compute_major < 8
    if ctx.platform != "cuda" or tc is None or pre_ampere or tc.kernel_ns <= 0:
        return []
    tf32_ns = float(tc.tf32_kernels.total_ns)
    share_pct = 100.0 * tf32_ns / tc.kernel_ns
    if share_pct < ctx.cfg.tf32_min_pct:
        return []
    speedup = amp_speedup_for(ctx, tc.peak, "tf32")
    n = max(len(ctx.steps), 1)
    evidence = {"tf32_kernel_pct": round(share_pct, 2), "tf32_ms": ms(per_step(ctx, tf32_ns)),
                "bf16_over_tf32": round(speedup, 2), "peak_source": tc.peak.name if tc.peak else "amp_speedup",
                "top_kernels": top_names(tc.tf32_kernels, per=n)}
    change = Change("bf16-autocast", {"speedup": round(speedup, 1)})
    # replayed (the bf16 remedy, at the device's peak ratio): what reaches the step once the TF32 kernels
    # shrink; a speed-up of the user's own (``amp_speedup`` set) is the first-order estimate below
    replayed = replayed_saving(ctx, "bf16", evidence) if ctx.cfg.amp_speedup <= 0 else None
    if replayed is not None:
        return [ctx.finding(RULE_ID, replayed, "replayed", evidence, change)]
    gain = per_step(ctx, tf32_ns) * (1.0 - 1.0 / max(speedup, 1.0))
    gain *= on_path_share(ctx, "tf32", evidence)  # only what reaches the step counts
    return [ctx.finding(RULE_ID, gain, "bf16-over-tf32", evidence, change)]
