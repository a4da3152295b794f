"""The fused-optimizer remedy: the optimizer step as a fused / foreach one.

On a device its kernels and its host work take :data:`~.transforms.FUSED_OPTIMIZER_FACTOR` × their
time (the advisor's ``optimizer_fused_speedup`` default; docs/whatif.md gives what an H200 pair
measured). On a CPU-only rank whose per-tensor loop was recorded with shapes, the factor is the rank's
own: one fused pass over the parameters' arrays at the memory bandwidth the loop's in-place ops reached
(:mod:`stepscope.analysis.optimizer_pass`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import launched_inside, rank_rows
from stepscope.analysis.cpu_optimizer import CpuOptimizer, compute_cpu_optimizer
from stepscope.analysis.optimizer_pass import FUSED_ARRAYS
from stepscope.analysis.platform import has_device
from stepscope.analysis.whatif.graph import StepGraph
from stepscope.analysis.whatif.replay import Durations
from stepscope.analysis.whatif.transforms import (
    FUSED_OPTIMIZER_FACTOR,
    OPTIMIZER_STEP,
    HostOverhead,
    Select,
    basis_for,
)
from stepscope.model.schema import HOST_KINDS
from stepscope.model.trace import Trace


@dataclass(frozen=True)
class FusedOptimizer:
    """A ``foreach`` / ``fused`` optimizer: the optimizer step's host work (launching one kernel per
    op and tensor, inside ``Optimizer.step`` annotations) and the device work launched inside it
    take ``factor`` × their time — the same math in a few multi-tensor kernels, a few launches.
    ``factor`` None: the rank's own where it has one (:func:`fused_factor_of`), else
    :data:`FUSED_OPTIMIZER_FACTOR`."""

    factor: float | None = None
    name: str = field(default="fused-optimizer", init=False)

    def basis(self) -> str:
        if self.factor is None:
            return (f"the optimizer step's host work and the kernels it launches take {FUSED_OPTIMIZER_FACTOR:.3g} × "
                    "their time (a fused / foreach optimizer); on a CPU-only rank with recorded shapes, one pass over "
                    "the parameters at the memory bandwidth its in-place ops reach")
        return (f"the optimizer step's host work and the kernels it launches take {self.factor:.3g} × their time "
                "(a fused / foreach optimizer)")

    def cpu_basis(self) -> str:
        """On a rank without a device: the optimizer step's own ops (no kernel is launched)."""
        if self.factor is None:
            return (f"the optimizer step takes {FUSED_OPTIMIZER_FACTOR:.3g} × its time (a fused / foreach optimizer); "
                    "where its per-tensor loop was recorded with shapes, one pass over the parameters at the memory "
                    "bandwidth its in-place ops reach")
        return f"the optimizer step takes {self.factor:.3g} × its time (a fused / foreach optimizer)"

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        factor = self.factor if self.factor is not None else fused_factor_of(trace, g.rank)
        d = HostOverhead(factor, Select(OPTIMIZER_STEP)).change(trace, g, d)
        host = rank_rows(trace, g.rank, tuple(int(k) for k in HOST_KINDS))
        return d.scaled(launched_inside(trace, g.device.row, host[Select(OPTIMIZER_STEP).mask(trace, host)]), factor)


def fused_factor_of(trace: Trace, rank: int) -> float:
    """The rank's fused optimizer step over its per-tensor one: on a CPU-only rank whose loop measured a
    memory pass (:mod:`~stepscope.analysis.optimizer_pass`), that pass's; else :data:`FUSED_OPTIMIZER_FACTOR`."""
    factor = _cpu_fused(trace, rank)
    return factor.fused_factor if factor is not None and factor.fused_factor is not None else FUSED_OPTIMIZER_FACTOR


def fused_basis_of(trace: Trace, rank: int) -> str:
    """The fused-optimizer remedy's basis on ``rank``: the pass it was estimated from, where it was."""
    cpu = _cpu_fused(trace, rank)
    if cpu is None or cpu.fused_factor is None or cpu.memory_pass is None or cpu.fused_step_ns is None:
        return basis_for(FusedOptimizer(FUSED_OPTIMIZER_FACTOR), has_device(trace, rank))
    p = cpu.memory_pass
    return (f"the optimizer step takes {cpu.fused_factor:.3g} × its time: one fused pass over "
            f"{FUSED_ARRAYS[cpu.name]} arrays of the parameters' {p.param_elems:,} elements at the "
            f"{p.bytes_per_ns:.3g} GB/s the loop's in-place ops reached ({cpu.fused_step_ns / 1e6:.3g} ms a step)")


def _cpu_fused(trace: Trace, rank: int) -> CpuOptimizer | None:
    try:
        return compute_cpu_optimizer(trace, rank)
    except NotApplicable:
        return None
