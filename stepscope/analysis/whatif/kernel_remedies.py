"""Kernel remedies as what-ifs: each makes chosen kernels faster by its rule's own model, and the
replay says what of it reaches the step.

* :class:`FillSms` — the under-filled grids (``launch_config``: kernels of at least
  :data:`UNDERFILL_MIN_KERNEL_US` inside the steps with fewer blocks than three quarters of the SMs)
  recover :data:`UNDERFILL_RECOVERABLE` of the SM time they leave idle: a kernel of ``b`` blocks on
  ``s`` SMs takes ``1 − (1 − b / s) × recoverable`` of its time (a larger batch, fusion or a split-K
  kernel fills part, not all, of the idle SMs).
* :class:`PadGemms` — the half-precision GEMM calls whose N or K is not a multiple of
  :data:`GEMM_ALIGN` (``gemm_dims``), padded: their kernels take their padded FLOPs at the rate of the
  rank's aligned half-precision GEMMs, else a share of the device's dense peak (``gemm_padding``);
  ``1 −`` :data:`GEMM_MISALIGNED_RECOVERABLE` of their time where the shapes or the device do not say.
* :class:`FuseElementwise` — each run of unfused elementwise kernels (``elementwise_runs``) becomes
  one pass over the data, the cost of its longest kernel: the others take no time. Their launches
  stay (an upper bound on the host's time: a compiled region also launches less).
* :class:`FusedAttention` — SDPA's math-backend kernels (``attention_fallback``) take what a fused
  kernel needs at least: the attention's FLOPs at the device's dense peak (no time where the device or
  the shapes are unknown), spread over them in proportion to their time.

The defaults mirror the advisor's (``AdvisorConfig``); a rule replays its remedy only while its
configured values are these (a test holds them equal).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from stepscope.analysis.attention_fallback import math_attention
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import I64
from stepscope.analysis.elementwise_runs import compute_elementwise_runs
from stepscope.analysis.gemm_dims import compute_gemm_dims
from stepscope.analysis.gemm_padding import GEMM_PEAK_EFFICIENCY, padded_kernel_ns
from stepscope.analysis.launch_config import compute_launch_config
from stepscope.analysis.whatif.graph import StepGraph
from stepscope.analysis.whatif.replay import Durations
from stepscope.model.trace import Trace

F64 = npt.NDArray[np.float64]
#: the advisor's ``underfill_min_kernel_us`` and ``underfill_recoverable`` defaults
UNDERFILL_MIN_KERNEL_US = 10.0
UNDERFILL_RECOVERABLE = 0.5
#: the advisor's ``gemm_align`` and ``gemm_misaligned_recoverable`` defaults
GEMM_ALIGN = 8
GEMM_MISALIGNED_RECOVERABLE = 0.5


def scale_rows(g: StepGraph, d: Durations, rows: I64, factors: F64) -> Durations:
    """The durations with each device activity of ``rows`` taking its ``factors`` × its time."""
    if len(rows) == 0:
        return d
    order = np.argsort(rows, kind="stable")
    rows, factors = rows[order], factors[order]
    pos = np.minimum(np.searchsorted(rows, g.device.row), len(rows) - 1)
    hit = rows[pos] == g.device.row
    return d.scaled(hit, np.clip(factors[pos[hit]], 0.0, 1.0))


@dataclass(frozen=True)
class FillSms:
    """Under-filled grids recover ``recoverable`` of the SM time they leave idle."""

    recoverable: float = UNDERFILL_RECOVERABLE
    min_kernel_us: float = UNDERFILL_MIN_KERNEL_US
    name: str = field(default="fill-sms", init=False)
    device_part: ClassVar[str] = "the grids of a GPU's kernels against its SMs"

    def basis(self) -> str:
        return (f"the under-filled grids (kernels of ≥ {self.min_kernel_us:g} µs with fewer blocks than ¾ of the "
                f"SMs) recover {self.recoverable:.0%} of the SM time they leave idle")

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        try:
            res = compute_launch_config(trace, g.rank)
        except NotApplicable:
            return d
        u = res.underfilled_in_step(self.min_kernel_us * 1e3)
        idle = 1.0 - u.blocks.astype(np.float64) / res.sm_count
        return scale_rows(g, d, u.names.rows, 1.0 - np.clip(idle, 0.0, 1.0) * self.recoverable)


@dataclass(frozen=True)
class PadGemms:
    """The misaligned half-precision GEMMs padded: their kernels take what their padded FLOPs need at the
    rate of what runs aligned (:func:`~stepscope.analysis.gemm_padding.padded_kernel_ns`), ``1 −
    recoverable`` of their time where the shapes or the device do not say."""

    recoverable: float = GEMM_MISALIGNED_RECOVERABLE
    align: int = GEMM_ALIGN
    name: str = field(default="pad-gemms", init=False)
    device_part: ClassVar[str] = "a GPU's half-precision GEMM kernels"

    def basis(self) -> str:
        return (f"the fp16 / bf16 GEMMs with N or K not a multiple of {self.align} padded: each takes its padded "
                f"FLOPs at the rate of this rank's aligned half-precision GEMMs (else {GEMM_PEAK_EFFICIENCY:.0%} of "
                f"the device's dense peak), {1.0 - self.recoverable:g} × its time where the shapes or the device "
                "do not say")

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        try:
            gd = compute_gemm_dims(trace, g.rank)
        except NotApplicable:
            return d
        bad = gd.misaligned(self.align)
        padded = padded_kernel_ns(trace, gd, bad, self.align)
        took = gd.call_kernel_ns[bad].astype(np.float64)
        factor = np.where(np.isfinite(padded) & (took > 0), np.divide(padded, took, out=np.ones(len(took)),
                                                                      where=took > 0), 1.0 - self.recoverable)
        per_call = np.ones(len(bad))
        per_call[bad] = factor
        mine = bad[gd.kernel_call]  # per kernel: its call is a misaligned one
        return scale_rows(g, d, gd.kernel_rows[mine], per_call[gd.kernel_call[mine]])


@dataclass(frozen=True)
class FuseElementwise:
    """Each run of unfused elementwise kernels costs its longest kernel."""

    name: str = field(default="fuse-elementwise", init=False)
    device_part: ClassVar[str] = "a GPU's elementwise kernels"

    def basis(self) -> str:
        return ("each run of unfused elementwise kernels fused into one pass: its longest kernel's time "
                "(torch.compile; the launches kept)")

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        try:
            runs = compute_elementwise_runs(trace, g.rank)
        except NotApplicable:
            return d
        return scale_rows(g, d, runs.kernels.rows, runs.longest.astype(np.float64))


@dataclass(frozen=True)
class FusedAttention:
    """SDPA's math-backend kernels take the attention's FLOPs at the device's dense peak."""

    name: str = field(default="fused-attention", init=False)
    device_part: ClassVar[str] = "a GPU's attention kernels"

    def basis(self) -> str:
        return ("scaled-dot-product attention on a fused kernel: the math backend's kernels take the attention's "
                "FLOPs at the device's dense peak (none where the device or the shapes are unknown)")

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        try:
            fb = math_attention(trace, g.rank)
        except NotApplicable:
            return d
        share = fb.fused_min_ns / fb.device_ns if fb.device_ns > 0 and math.isfinite(fb.fused_min_ns) else 0.0
        return scale_rows(g, d, fb.rows, np.full(len(fb.rows), min(share, 1.0)))
