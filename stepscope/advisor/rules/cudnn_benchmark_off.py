"""``cudnn-benchmark-off``: convolutions run cuDNN's generic fallback algorithms (SPEC §6).

Detects: convolution kernels named after cuDNN's algorithm-0 fallbacks (``implicit_convolve_sgemm``,
``wgrad_alg0_engine``, ``dgrad_engine``: what the heuristics pick without benchmarking) take at least
``cudnn_fallback_min_pct`` of kernel time. With ``torch.backends.cudnn.benchmark = True`` and
static shapes, cuDNN times every algorithm once per shape and keeps the fastest (Winograd, FFT,
precomputed implicit GEMM ...). The trace cannot prove the flag is off; the kernels are the symptom.

Gain: those kernels' time per step × ``cudnn_benchmark_gain`` (a conservative share; the real gain
depends on the layer shapes).
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, on_path_share, per_step, top_names
from stepscope.analysis.registry import CONVOLUTIONS

RULE_ID = "cudnn-benchmark-off"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("compute",)  # the bounds its change shortens


def detect(ctx: RuleContext) -> list[Finding]:
    c = ctx.optional(CONVOLUTIONS)
    if c is None or len(c.fallback) == 0 or c.fallback_pct < ctx.cfg.cudnn_fallback_min_pct:
        return []
    n = max(len(ctx.steps), 1)
    fb_ns = float(c.fallback.total_ns)
    evidence = {"fallback_conv_kernel_pct": round(c.fallback_pct, 2), "fallback_conv_ms": ms(per_step(ctx, fb_ns)),
                "conv_kernel_ms": ms(per_step(ctx, float(c.conv.total_ns))),
                "kernels": top_names(c.fallback, per=n)}
    gain = per_step(ctx, fb_ns) * ctx.cfg.cudnn_benchmark_gain
    gain *= on_path_share(ctx, "cudnn-benchmark", evidence)  # only what reaches the step counts
    return [ctx.finding(RULE_ID, gain, "benchmark-share",
                        evidence, Change("cudnn-benchmark", {}))]
