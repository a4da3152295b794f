"""Convolution kernels of a rank: the kernels whose launching op (or an op above it) is a convolution."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stepscope.advisor.context import RuleContext
from stepscope.advisor.rules._util import ancestor_with, rank_rows
from stepscope.model.schema import EventKind

I64 = npt.NDArray[np.int64]


def is_conv_op(name: str) -> bool:
    low = name.lower()
    return (low.startswith("aten::") and "conv" in low) or "ConvolutionBackward" in name


def conv_kernels(ctx: RuleContext) -> tuple[I64, I64, I64]:
    """(all kernel rows in steps, the conv kernel rows among them, each conv kernel's conv op row)."""
    k = rank_rows(ctx, EventKind.KERNEL)
    ops = ancestor_with(ctx.trace, ctx.trace.events["op"][k].astype(np.int64), ctx.trace.strings.mask(is_conv_op))
    conv = ops >= 0
    return k, k[conv], ops[conv]
