"""``zero_grad(set_to_none=True)`` as a what-if: the gradients freed instead of zeroed.

The zero_grad analysis' activities — the memset / fill kernels launched under ``Optimizer.zero_grad``
inside the steps — take no time, and so does the host's work inside ``Optimizer.zero_grad`` (its launch
calls and the dispatch around them: freeing a gradient is setting an attribute, microseconds a
parameter against a launch each). So do each zeroed gradient's first accumulation in the next backward
(the analysis' ``accumulations``: the ``aten::add_`` that adds the new gradient to the zeros, kernel and
launch — the backward hands the gradient over instead). The replay says what reaches the step: on a
host-bound step the launches, on a device-bound one the kernels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.whatif.graph import StepGraph
from stepscope.analysis.whatif.replay import Durations
from stepscope.analysis.whatif.transforms import HostOverhead, Select
from stepscope.analysis.zero_grad import compute_zero_grad
from stepscope.model.trace import Trace

#: the annotation ``torch.optim`` records around ``zero_grad`` (``Optimizer.zero_grad#SGD.zero_grad``)
ZERO_GRAD_PATTERN = r"^Optimizer\.zero_grad"


@dataclass(frozen=True)
class SetToNone:
    """The zeroing kernels, the host's work inside ``Optimizer.zero_grad`` and the first accumulations
    into the zeroed gradients take no time."""

    name: str = field(default="set-to-none", init=False)
    device_part: ClassVar[str] = "the GPU kernels that zero the gradients"

    def basis(self) -> str:
        return ("zero_grad(set_to_none=True): the kernels zeroing the gradients take no time, nor the host's "
                "work inside Optimizer.zero_grad (the gradients are freed instead of launched over), nor each "
                "gradient's first accumulation in the next backward (it is handed over, not added to zeros)")

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        try:
            zg = compute_zero_grad(trace, g.rank)
        except NotApplicable:
            return d
        d = HostOverhead(0.0, Select(ZERO_GRAD_PATTERN)).change(trace, g, d)
        adds = np.unique(trace.events["op"][zg.accumulations.rows]).astype(np.int64)
        if len(adds):  # (an empty Select is every event)
            d = HostOverhead(0.0, Select(rows=tuple(int(r) for r in adds))).change(trace, g, d)
        return d.scaled(np.isin(g.device.row, np.concatenate([zg.activities.rows, zg.accumulations.rows])), 0.0)
