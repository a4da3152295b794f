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

import re

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._conv import conv_kernels
from stepscope.advisor.rules._util import ms, per_step, top_names

RULE_ID = "cudnn-benchmark-off"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("compute",)  # the bounds its change shortens
FALLBACK = re.compile(r"implicit_convolve_sgemm|wgrad_alg0_engine|dgrad_engine|explicit_convolve_sgemm")


def detect(ctx: RuleContext) -> list[Finding]:
    trace, ev = ctx.trace, ctx.trace.events
    k, conv, _ = conv_kernels(ctx)
    fb = conv[trace.strings.mask(lambda s: FALLBACK.search(s) is not None)[ev["name"][conv]]]
    total = float(ev["dur_ns"][k].sum())
    fb_ns = float(ev["dur_ns"][fb].sum())
    pct = 100.0 * fb_ns / total if total > 0 else 0.0
    if len(fb) == 0 or pct < ctx.cfg.cudnn_fallback_min_pct:
        return []
    n = max(len(ctx.steps), 1)
    evidence = {"fallback_conv_kernel_pct": round(pct, 2), "fallback_conv_ms": ms(per_step(ctx, fb_ns)),
                "conv_kernel_ms": ms(per_step(ctx, float(ev["dur_ns"][conv].sum()))),
                "kernels": top_names(trace, fb, per=n)}
    return [ctx.finding(RULE_ID, per_step(ctx, fb_ns) * ctx.cfg.cudnn_benchmark_gain, "benchmark-share",
                        evidence, Change("cudnn-benchmark", {}))]
