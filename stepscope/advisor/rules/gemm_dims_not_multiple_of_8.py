"""``gemm-dims-not-multiple-of-8``: half-precision GEMMs whose N or K is not a multiple of 8 (SPEC §6).

Detects (needs ``record_shapes``): ``aten::mm`` / ``addmm`` / ``bmm`` / ``baddbmm`` / ``matmul`` /
``linear`` calls with fp16/bf16 inputs whose N or K dimension is not a multiple of ``gemm_align``;
their kernels take at least ``gemm_misaligned_min_pct`` of kernel time. Tensor-Core GEMMs need 16-byte
aligned leading dimensions (8 half values); otherwise cuBLAS falls back to slower kernels. A100 and
newer prefer multiples of 64 (``gemm_align_ampere``) for full tiles.

The gemm_dims analysis gives each GEMM call once (at the innermost GEMM op, the one that launches
the kernels: an ``aten::linear`` and the ``aten::addmm`` under it are one call), its N, K (parsed
once per distinct ``Input Dims`` text), whether its inputs are half precision, and the time of the
kernels it launched (those whose nearest counted GEMM call is that call); the rule checks N and K
against ``gemm_align``.

Gain: the ``pad-gemms`` remedy replayed (:class:`~stepscope.analysis.whatif.kernel_remedies.PadGemms`:
those kernels at ``1 − gemm_misaligned_recoverable`` of their time): what reaches the step. With other
``gemm_align`` / ``gemm_misaligned_recoverable`` values than the defaults, or where the replay did not
run: those kernels' time per step × ``gemm_misaligned_recoverable`` × their share of the step's
critical path.
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, on_path_share, per_step, replayed_saving
from stepscope.analysis.registry import GEMM_DIMS
from stepscope.analysis.whatif.kernel_remedies import GEMM_ALIGN, GEMM_MISALIGNED_RECOVERABLE
from stepscope.model.uniq import unique

RULE_ID = "gemm-dims-not-multiple-of-8"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("compute",)  # the bounds its change shortens
NEEDS_HOST_TIMELINE = True  # reads host ops, launches or annotations: not run on a summary-only trace


def detect(ctx: RuleContext) -> list[Finding]:
    g = ctx.result(GEMM_DIMS)
    bad = g.misaligned(ctx.cfg.gemm_align)
    total = float(g.kernel_ns)
    bad_ns = float(g.call_kernel_ns[bad].sum())
    if not bad.any() or total <= 0 or 100.0 * bad_ns / total < ctx.cfg.gemm_misaligned_min_pct:
        return []
    ampere = g.compute_major is not None and g.compute_major >= 8
    multiple = ctx.cfg.gemm_align_ampere if ampere else ctx.cfg.gemm_align
    evidence = {"misaligned_calls": int(bad.sum()), "misaligned_kernel_pct": round(100.0 * bad_ns / total, 2),
                "misaligned_ms": ms(per_step(ctx, bad_ns)), "align": ctx.cfg.gemm_align,
                "example_shapes": [g.dims_texts[i] for i in unique(g.dims[bad])[:5].tolist()]}
    change = Change("pad-gemm-dims", {"multiple": multiple})
    default = (ctx.cfg.gemm_align, ctx.cfg.gemm_misaligned_recoverable) == (GEMM_ALIGN, GEMM_MISALIGNED_RECOVERABLE)
    replayed = replayed_saving(ctx, "pad-gemms", evidence) if default else None
    if replayed is not None:
        return [ctx.finding(RULE_ID, replayed, "replayed", evidence, change)]
    gain = per_step(ctx, bad_ns) * ctx.cfg.gemm_misaligned_recoverable
    gain *= on_path_share(ctx, "pad-gemms", evidence)  # only what reaches the step counts
    return [ctx.finding(RULE_ID, gain, "misaligned-share", evidence, change)]
