"""The channels-last remedy as a what-if: a convolution network's tensors in NHWC.

Tensor-Core convolutions work in NHWC. On NCHW tensors cuDNN (or MIOpen) transposes around every
convolution, and the ops between the convolutions (batch norm, pooling) run PyTorch's NCHW kernels.
``model.to(memory_format=torch.channels_last)`` removes the transposes and runs those ops' NHWC
kernels, vectorised along the channels. The transformation: the layout transforms take 0 × their
time, the NCHW kernels that have a channels-last variant (:data:`~stepscope.analysis.convolutions.
NCHW_VARIANT`) ``factor`` × theirs; the convolutions themselves keep theirs (they already ran in NHWC
between the transposes).

``factor`` (:data:`NCHW_VARIANT_FACTOR`, 0.5: the NHWC kernels twice as fast) is a round number, not a fit:
on the H200 ResNet-50 pair of ``tests/data/h200_models`` PyTorch's bf16 batch norm took 35.0 ms a step
in NCHW and 12.7 ms in NHWC (0.36 ×), max pooling's backward 1.42 → 0.91 ms (0.64 ×). A rank with no
Tensor-Core convolution is left as it is (the remedy does not apply: its layout matters little).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.convolutions import NCHW_VARIANT, TRANSFORM, compute_convolutions
from stepscope.analysis.whatif.graph import StepGraph
from stepscope.analysis.whatif.replay import Durations
from stepscope.model.trace import Trace

#: the NHWC kernels' time against the NCHW ones' (see the module docstring)
NCHW_VARIANT_FACTOR = 0.5
#: the same change as ``stepscope whatif --scale`` patterns (case-insensitive, as the analysis matches them)
TRANSFORM_PATTERN = f"(?i){TRANSFORM.pattern}"
NCHW_VARIANT_PATTERN = f"(?i){NCHW_VARIANT.pattern}"


@dataclass(frozen=True)
class ChannelsLast:
    """The model and its inputs in channels-last memory format (see the module docstring)."""

    factor: float = NCHW_VARIANT_FACTOR
    name: str = field(default="channels-last", init=False)
    device_part: ClassVar[str] = "a GPU's convolution layout kernels"

    def basis(self) -> str:
        return (f"channels-last: the layout transforms around the convolutions take 0 × their time, the NCHW batch "
                f"norm and pooling kernels {self.factor:g} × (their NHWC variants)")

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        try:
            conv = compute_convolutions(trace, g.rank)
        except NotApplicable:
            return d
        if len(conv.tc_conv) == 0:  # no Tensor-Core convolution: nothing transposes, the layout matters little
            return d
        rows = g.device.row
        return d.scaled(np.isin(rows, conv.transforms.rows), 0.0).scaled(np.isin(rows, conv.nchw_variants.rows),
                                                                         self.factor)
