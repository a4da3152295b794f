"""``channels-last``: a convolution network runs in NCHW on Tensor Cores (SPEC §6).

Detects: convolution kernels take at least ``channels_last_min_conv_pct`` of kernel time, some of
them run on Tensor Cores, and either cuDNN inserts layout-transform kernels (``nchwToNhwc`` /
``nhwcToNchw``: Tensor-Core convolutions work in NHWC, so NCHW tensors are transposed around every
conv) or the Tensor-Core conv kernels' names say NCHW. Without a Tensor-Core convolution the title
would be false and the layout matters little (FP32 SIMT convs): then ``no-tensor-cores`` comes first
and this rule stays quiet, transform kernels or not.

Gain: the transform kernels' time per step plus ``channels_last_conv_gain`` of the Tensor-Core conv
kernel time.
"""

from __future__ import annotations

import re

import numpy as np

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._conv import conv_kernels
from stepscope.advisor.rules._util import ms, per_step, top_names
from stepscope.analysis.tensor_cores import tc_kernel_mask

RULE_ID = "channels-last"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("compute",)  # the bounds its change shortens
TRANSFORM = re.compile(r"nchwToNhwc|nhwcToNchw|nchw_to_nhwc|nhwc_to_nchw|nchw2nhwc|nhwc2nchw", re.IGNORECASE)
NCHW = re.compile(r"nchw", re.IGNORECASE)


def detect(ctx: RuleContext) -> list[Finding]:
    trace, ev = ctx.trace, ctx.trace.events
    k, conv, _ = conv_kernels(ctx)
    total = float(ev["dur_ns"][k].sum())
    conv_ns = float(ev["dur_ns"][conv].sum())
    if total <= 0 or 100.0 * conv_ns / total < ctx.cfg.channels_last_min_conv_pct:
        return []
    names = ev["name"]
    transform = k[trace.strings.mask(lambda s: TRANSFORM.search(s) is not None)[names[k]]]
    tc_conv = conv[tc_kernel_mask(trace.strings)[names[conv]]]
    nchw_tc = tc_conv[trace.strings.mask(lambda s: NCHW.search(s) is not None)[names[tc_conv]]]
    if len(tc_conv) == 0 or (len(transform) == 0 and len(nchw_tc) == 0):
        return []
    tr_ns = per_step(ctx, float(ev["dur_ns"][transform].sum()))
    tc_ns = per_step(ctx, float(ev["dur_ns"][tc_conv].sum()))
    n = max(len(ctx.steps), 1)
    evidence = {"conv_kernel_pct": round(100.0 * conv_ns / total, 2), "layout_transform_ms": ms(tr_ns),
                "tc_conv_ms": ms(tc_ns), "transform_kernels": top_names(trace, transform, per=n),
                "nchw_tc_kernels": top_names(trace, np.asarray(nchw_tc, np.int64), per=n)}
    return [ctx.finding(RULE_ID, tr_ns + tc_ns * ctx.cfg.channels_last_conv_gain, "layout-transform-time",
                        evidence, Change("channels-last", {}))]
