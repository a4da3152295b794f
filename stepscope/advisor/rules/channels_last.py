"""``channels-last``: a convolution network runs in NCHW on Tensor Cores (SPEC §6).

Detects: convolution kernels take at least ``channels_last_min_conv_pct`` of kernel time, some of
them run on Tensor Cores, and either cuDNN inserts layout-transform kernels (``nchwToNhwc`` /
``nhwcToNchw``: Tensor-Core convolutions work in NHWC, so NCHW tensors are transposed around every
conv) or the Tensor-Core conv kernels' names say NCHW. Without a Tensor-Core convolution the title
would be false and the layout matters little (FP32 SIMT convs): then ``no-tensor-cores`` comes first
and this rule stays quiet, transform kernels or not.

Gain: the ``channels-last`` remedy replayed (:mod:`stepscope.analysis.whatif.channels_last`: the
transforms gone, the NCHW batch-norm and pooling kernels at half their time, on the step's critical
path and, where the profiler's own cost weighs on the host, on the step without it); where the replay
did not run, the transform kernels' time per step plus ``channels_last_conv_gain`` of the Tensor-Core
conv kernel time, weighed by their share on the critical path.
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, on_path_share, per_step, replayed_saving, top_names
from stepscope.analysis.registry import CONVOLUTIONS

RULE_ID = "channels-last"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("compute",)  # the bounds its change shortens


def detect(ctx: RuleContext) -> list[Finding]:
    c = ctx.optional(CONVOLUTIONS)
    if c is None or c.kernel_ns <= 0 or c.conv_pct < ctx.cfg.channels_last_min_conv_pct:
        return []
    if len(c.tc_conv) == 0 or (len(c.transforms) == 0 and len(c.nchw_tc) == 0):
        return []
    tr_ns = per_step(ctx, float(c.transforms.total_ns))
    tc_ns = per_step(ctx, float(c.tc_conv.total_ns))
    n = max(len(ctx.steps), 1)
    evidence = {"conv_kernel_pct": round(c.conv_pct, 2), "layout_transform_ms": ms(tr_ns),
                "tc_conv_ms": ms(tc_ns), "transform_kernels": top_names(c.transforms, per=n),
                "nchw_tc_kernels": top_names(c.nchw_tc, per=n),
                "nchw_variant_ms": ms(per_step(ctx, float(c.nchw_variants.total_ns))),
                "nchw_variant_kernels": top_names(c.nchw_variants, per=n)}
    replayed = replayed_saving(ctx, "channels-last", evidence)
    if replayed is not None:
        return [ctx.finding(RULE_ID, replayed, "replayed", evidence, Change("channels-last", {}))]
    gain = tr_ns + tc_ns * ctx.cfg.channels_last_conv_gain
    gain *= on_path_share(ctx, "channels-last", evidence)  # only what reaches the step counts
    return [ctx.finding(RULE_ID, gain, "layout-transform-time",
                        evidence, Change("channels-last", {}))]
