"""The optimizer step of a CPU-only rank: the ops each ``Optimizer.step`` runs on the host.

On a device the fusion analysis reads an optimizer's kernels (:mod:`stepscope.analysis.fusion`); a
CPU-only run launches none, so this reads the ops directly inside the rank's ``Optimizer.step#...``
annotations in its steps. PyTorch's CPU optimizers step tensor by tensor by default (``foreach`` is
the default for CUDA parameters only): ten or so ops per parameter, each a pass over its memory,
against a few multi-tensor ops (``aten::_foreach_*``) with ``foreach=True`` or one fused kernel
(``aten::_fused_adam_``, CPU since PyTorch 2.4) with ``fused=True``. A CPU capture of a 19 M-parameter
dense embedding with Adam: 156 ms a step tensor by tensor, 122 ms with ``foreach``, 43 ms fused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stepscope.analysis._memo import per_rank
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import ancestor_with, in_step_rows, is_optimizer_step, optimizer_steps
from stepscope.analysis.fusion import FOREACH, optimizer_name
from stepscope.analysis.named import NamedRows, named_rows
from stepscope.analysis.optimizer_pass import FUSED_ARRAYS, OptimizerPass, optimizer_pass
from stepscope.analysis.platform import has_device
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

#: why a rank with a device has no CPU optimizer view
ON_A_DEVICE = "a rank with a device: the fusion view reads its optimizer's kernels"
#: ops per optimizer step from which a CPU optimizer that runs mostly single-tensor ops steps tensor by tensor
PER_TENSOR_MIN_OPS = 30


@dataclass(frozen=True)
class CpuOptimizer:
    """The ops directly inside a CPU-only rank's optimizer steps (in its steps), by name."""

    rank: int
    name: str  # the optimizer's class (``Adam`` of ``Optimizer.step#Adam.step``)
    step_count: int  # optimizer steps
    ops: NamedRows
    multi_tensor_ns: int  # the ops' time in multi-tensor / fused ones (``_foreach_``, ``_fused_``)
    time_ns: int  # the host's time inside the optimizer steps
    #: the loop's parameter elements and the bandwidth its large in-place ops reached (None: no recorded
    #: shapes, or no large in-place op)
    memory_pass: OptimizerPass | None = None

    @property
    def fused_step_ns(self) -> float | None:
        """One fused pass over the parameters' arrays at the loop's own bandwidth, per optimizer step
        (None: no pass measured, or an optimizer without a fused CPU kernel)."""
        arrays = FUSED_ARRAYS.get(self.name)
        return self.memory_pass.fused_ns(arrays) if self.memory_pass is not None and arrays else None

    @property
    def fused_factor(self) -> float | None:
        """The fused step's time over the loop's (at most 1; None where :attr:`fused_step_ns` is)."""
        fused = self.fused_step_ns
        if fused is None or self.time_ns <= 0:
            return None
        return min(1.0, fused / (self.time_ns / max(self.step_count, 1)))

    @property
    def ops_per_step(self) -> float:
        return len(self.ops) / max(self.step_count, 1)

    @property
    def multi_tensor_pct(self) -> float:
        """The multi-tensor / fused ops' share of the ops' time (a foreach optimizer still runs a few small
        single-tensor ops a step: its step counters)."""
        return 100.0 * self.multi_tensor_ns / max(self.ops.total_ns, 1)

    @property
    def per_tensor(self) -> bool:
        """Stepping tensor by tensor: many ops a step, most of their time in single-tensor ones."""
        return self.ops_per_step >= PER_TENSOR_MIN_OPS and self.multi_tensor_pct < 50.0


@per_rank
def compute_cpu_optimizer(trace: Trace, rank: int) -> CpuOptimizer:
    """The CPU-only rank's optimizer steps and the ops they run (NotApplicable on a device, or without
    ``Optimizer.step`` annotations in the steps)."""
    if has_device(trace, rank):
        raise NotApplicable(ON_A_DEVICE)
    steps = np.intersect1d(optimizer_steps(trace, rank), in_step_rows(trace, rank, (int(EventKind.USER_ANNOTATION),)))
    if len(steps) == 0:
        raise NotApplicable("no Optimizer.step annotations in the steps")
    ev = trace.events
    ops = in_step_rows(trace, rank, (int(EventKind.CPU_OP),))
    parent = ev["parent"][ops].astype(np.int64)
    # the optimizer's own ops: under one of its steps (Python frames between, with_stack=True), not under an op
    outer = (parent < 0) | (ev["kind"][np.maximum(parent, 0)] != EventKind.CPU_OP)
    ops = ops[outer & (ancestor_with(trace, parent, trace.strings.mask(is_optimizer_step)) >= 0)]
    multi = trace.strings.mask(lambda s: bool(FOREACH.search(s)))[ev["name"][ops]]
    return CpuOptimizer(rank, optimizer_name(trace), len(steps), named_rows(trace, ops),
                        int(ev["dur_ns"][ops][multi].sum()), int(ev["dur_ns"][steps].sum()),
                        optimizer_pass(trace, ops, len(steps)))
