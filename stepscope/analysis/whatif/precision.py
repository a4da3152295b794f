"""Mixed precision as a what-if: the FP32 matrix math of Tensor-Core-eligible ops moved to Tensor Cores
(:class:`MixedPrecision`), and TF32 Tensor-Core math moved to bf16 (:class:`Bf16OverTf32`).

``torch.autocast`` (bf16, or fp16 with a grad scaler) runs the convolutions, matrix products and
attention that the tensor_cores analysis finds launched by eligible ops without Tensor Cores on Tensor
Cores — those whose op does not already take half-precision tensors (``amp_kernels``: FP32 SIMT GEMMs
and convolutions; not the layout transforms and casts around a bf16 convolution). The transformation: those
kernels take ``1 / speedup`` × their time, ``speedup`` the device's half-precision Tensor-Core peak
over its FP32 peak (:func:`~stepscope.analysis.peaks.amp_speedup`, the ``no-tensor-cores`` rule's own
model; 2 where the device is unknown). Replayed, the saving is what reaches the step: once the GPU
work shrinks, the host (and, without the profiler, the program's own host) may bound it.

The Tensor-Core kernels on FP32 tensors (TF32 math: the analysis' ``tf32_kernels``) under bf16 autocast
run at the device's bf16 Tensor-Core peak over its TF32 one (2 on A100 / H100 / H200): the
``tf32-not-bf16`` rule's model, a lower bound (bf16 GEMMs also reach a larger share of their peak).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.named import NamedRows
from stepscope.analysis.peaks import amp_speedup
from stepscope.analysis.tensor_cores import TensorCoreResult, compute_tensor_cores
from stepscope.analysis.whatif.graph import StepGraph
from stepscope.analysis.whatif.replay import Durations
from stepscope.model.trace import Trace

#: the speed-up where the device's peaks are unknown (the advisor's ``UNKNOWN_DEVICE_AMP_SPEEDUP``)
UNKNOWN_DEVICE_SPEEDUP = 2.0


def _device_speedup(trace: Trace, rank: int, from_dtype: str) -> float:
    """The device's half-precision Tensor-Core peak over its ``from_dtype`` one (2 where unknown)."""
    try:
        peak = compute_tensor_cores(trace, rank).peak
    except NotApplicable:
        return UNKNOWN_DEVICE_SPEEDUP
    return amp_speedup(peak, from_dtype) or UNKNOWN_DEVICE_SPEEDUP


def amp_speedup_of(trace: Trace, rank: int) -> float:
    """The device's half-precision Tensor-Core peak over its FP32 peak (2 where unknown, or no kernels)."""
    return _device_speedup(trace, rank, "fp32")


def bf16_speedup_of(trace: Trace, rank: int) -> float:
    """The device's bf16 Tensor-Core peak over its TF32 one (2 where unknown, or no kernels)."""
    return _device_speedup(trace, rank, "tf32")


def _faster(trace: Trace, g: StepGraph, d: Durations, rows_of: Callable[[TensorCoreResult], NamedRows],
            speedup: float | None, from_dtype: str) -> Durations:
    """The durations with the rank's kernels ``rows_of`` its tensor_cores result taking ``1 / speedup`` ×
    their time (``speedup`` None: the device's peak ratio from ``from_dtype``)."""
    try:
        rows = rows_of(compute_tensor_cores(trace, g.rank)).rows
    except NotApplicable:
        return d
    if len(rows) == 0:
        return d
    by = speedup if speedup is not None else _device_speedup(trace, g.rank, from_dtype)
    return d.scaled(np.isin(g.device.row, rows), 1.0 / max(by, 1.0))


@dataclass(frozen=True)
class MixedPrecision:
    """The eligible ops' kernels without Tensor Cores take ``1 / speedup`` × their time (``speedup``
    None: the device's, :func:`amp_speedup_of`)."""

    speedup: float | None = None
    name: str = field(default="amp", init=False)
    device_part: ClassVar[str] = "a GPU's Tensor Cores (its FP32 matrix math moved onto them)"

    def basis(self) -> str:
        by = (f"{self.speedup:.3g} × faster" if self.speedup is not None
              else "faster by the device's half-precision Tensor-Core peak over its FP32 one")
        return f"mixed precision: the eligible ops' kernels without Tensor Cores run {by}"

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        return _faster(trace, g, d, lambda tc: tc.amp_kernels, self.speedup, "fp32")


@dataclass(frozen=True)
class Bf16OverTf32:
    """The Tensor-Core kernels on FP32 tensors (TF32) take ``1 / speedup`` × their time under bf16 autocast
    (``speedup`` None: the device's, :func:`bf16_speedup_of`)."""

    speedup: float | None = None
    name: str = field(default="bf16", init=False)
    device_part: ClassVar[str] = "a GPU's Tensor Cores (their TF32 math moved to bf16)"

    def basis(self) -> str:
        by = (f"{self.speedup:.3g} × faster" if self.speedup is not None
              else "faster by the device's bf16 Tensor-Core peak over its TF32 one")
        return f"bf16 autocast: the TF32 Tensor-Core kernels run {by}"

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        return _faster(trace, g, d, lambda tc: tc.tf32_kernels, self.speedup, "tf32")
