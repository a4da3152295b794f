"""``cudnn-benchmark-off``: convolutions run cuDNN's generic fallback algorithms (SPEC §6).

Detects: convolution kernels named after cuDNN's algorithm-0 fallbacks (``implicit_convolve_sgemm``,
``wgrad_alg0_engine``, ``dgrad_engine``: what the heuristics pick without benchmarking) take at least
``cudnn_fallback_min_pct`` of kernel time. With ``torch.backends.cudnn.benchmark = True`` and
static shapes, cuDNN times every algorithm once per shape and keeps the fastest (Winograd, FFT,
precomputed implicit GEMM ...). The trace cannot prove the flag is off; the kernels are the symptom.

Gain: the ``cudnn-benchmark`` remedy replayed (those kernels at 1 − ``cudnn_benchmark_gain`` of their
time, a conservative share; the real gain depends on the layer shapes): what reaches the step. With
another ``cudnn_benchmark_gain`` than the default, or where the replay did not run: those kernels' time
per step × the share × their share of the step's critical path.
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, on_path_share, per_step, replayed_saving, top_names
from stepscope.analysis.registry import CONVOLUTIONS
from stepscope.analysis.whatif.remedies import CUDNN_BENCHMARK_GAIN

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
    # replayed (the cudnn-benchmark remedy: those kernels at 1 - the default share of their time): what
    # reaches the step; a share of the user's own (``cudnn_benchmark_gain`` set) is the first-order estimate
    default = ctx.cfg.cudnn_benchmark_gain == CUDNN_BENCHMARK_GAIN
    replayed = replayed_saving(ctx, "cudnn-benchmark", evidence) if default else None
    if replayed is not None:
        return [ctx.finding(RULE_ID, replayed, "replayed", evidence, Change("cudnn-benchmark", {}))]
    gain = per_step(ctx, fb_ns) * ctx.cfg.cudnn_benchmark_gain
    gain *= on_path_share(ctx, "cudnn-benchmark", evidence)  # only what reaches the step counts
    return [ctx.finding(RULE_ID, gain, "benchmark-share",
                        evidence, Change("cudnn-benchmark", {}))]
