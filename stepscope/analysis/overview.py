"""Overview of one rank (SPEC §4, TB "Overview"): device, steps, breakdown and GPU efficiency numbers.

* GPU Utilization = |∪ kernel intervals ∩ [first step start, last step end]| / that span (TB: kernels
  only, on the rank's main GPU).
* Est. SM Efficiency = Σ over time of min(1, Σ blocks-per-SM of the kernels running then) / span, over
  the kernels with a known grid only: a kernel without one (a graph-replayed kernel's launch records
  none) is left out, and so is the time when only such kernels run (``grid_kernel_ns`` says how much
  kernel time had a grid); None when no kernel has one.
* Est. Achieved Occupancy = mean of per-kernel occupancy weighted by each kernel's duration inside
  the span (trace value, or computed by :mod:`stepscope.analysis.occupancy` when absent).
* Tensor Core share = time of Tensor-Core kernels / time of all kernels, inside the span.
* ``busy_ns`` / ``span_ns`` (SPEC §12 ``gpu``): union and extent of kernel, memcpy and memset
  intervals launched inside the profiled steps (activity whose launch precedes the profiling window
  is left out, as TraceLens does); the whole trace when there are no steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis._memo import per_rank
from stepscope.analysis.breakdown import StepBreakdown, compute_breakdown
from stepscope.analysis.occupancy import kernel_occupancy
from stepscope.analysis.tensor_cores import has_tensor_core_names, tc_kernel_mask
from stepscope.model.masks import any_of
from stepscope.model.schema import GPU_KINDS, EventKind
from stepscope.model.trace import DeviceInfo, Trace

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Overview:
    """Headline numbers of one rank; percentages are None when the rank has no kernels."""

    rank: int
    device: DeviceInfo | None
    breakdown: StepBreakdown
    gpu_utilization_pct: float | None
    sm_efficiency_pct: float | None
    achieved_occupancy_pct: float | None
    tensor_core_pct: float | None
    occupancy_computed: bool  # True when some occupancy values were computed, not read
    kernel_ns: int  # kernel time inside the steps span
    tc_kernel_ns: int
    grid_kernel_ns: int  # ... of kernels with a known grid (blocks per SM): what the SM efficiency weighs
    busy_ns: int
    span_ns: int

    @property
    def step_count(self) -> int:
        return self.breakdown.step_count

    @property
    def avg_step_ns(self) -> float:
        return self.breakdown.avg_step_ns


def _device_kernels(trace: Trace, rank: int, dev: DeviceInfo | None) -> I64:
    ev = trace.events
    rows = np.flatnonzero((ev["rank"] == rank) & (ev["kind"] == EventKind.KERNEL))
    if dev is not None and len(rows):
        on_dev = trace.tracks["device"][ev["track"][rows]] == dev.index
        if on_dev.any():
            rows = rows[on_dev]
    return rows.astype(np.int64)


def _clipped(ts: I64, end: I64, lo: int, hi: int) -> I64:
    return np.asarray(np.maximum(np.minimum(end, hi) - np.maximum(ts, lo), 0), np.int64)


def sm_efficiency_ns(ts: I64, end: I64, bps: F64, lo: int, hi: int) -> float:
    """∫ min(1, Σ concurrent blocks-per-SM) dt over [lo, hi), ns (kernels with bps > 0 only)."""
    ok = bps > 0
    if not ok.any():
        return 0.0
    pts, val = intervals.concurrency(ts[ok], end[ok], bps[ok])
    seg = _clipped(pts[:-1], pts[1:], lo, hi)
    level = np.clip(val[:-1], 0.0, 1.0)
    return float((seg * level).sum())


def sm_efficiency_pct(ts: I64, end: I64, bps: F64, lo: int, hi: int) -> float | None:
    """The est. SM efficiency over [lo, hi) of the kernels with a known blocks-per-SM (NaN: unknown):
    the others are left out, and so is the time when only they run; None when none is known."""
    known = ~np.isnan(bps)
    if not known.any():
        return None
    only_unknown = (intervals.total(intervals.clip(intervals.union(ts, end), lo, hi))
                    - intervals.total(intervals.clip(intervals.union(ts[known], end[known]), lo, hi)))
    window = (hi - lo) - only_unknown
    if window <= 0:
        return None
    return sm_efficiency_ns(ts[known], end[known], bps[known], lo, hi) / window * 100.0


def _gpu_metrics(trace: Trace, rows: I64, dev: DeviceInfo | None, lo: int, hi: int) -> dict[str, object]:
    ev = trace.events
    ts, end = ev["ts_ns"][rows], ev["ts_ns"][rows] + ev["dur_ns"][rows]
    span = hi - lo
    occ = kernel_occupancy(trace, rows, dev)
    inside = _clipped(ts, end, lo, hi)
    tc = tc_kernel_mask(trace.strings)[ev["name"][rows]]
    busy = intervals.total(intervals.clip(intervals.union(ts, end), lo, hi))
    has_occ = (occ.occupancy_pct >= 0) & (inside > 0)
    occ_w = inside[has_occ].sum()
    return {
        "gpu_utilization_pct": busy / span * 100.0,
        "sm_efficiency_pct": sm_efficiency_pct(ts, end, occ.blocks_per_sm, lo, hi),
        "achieved_occupancy_pct": (float((occ.occupancy_pct[has_occ] * inside[has_occ]).sum() / occ_w)
                                   if occ_w > 0 else None),
        "tensor_core_pct": float(inside[tc].sum() / inside.sum() * 100.0) if inside.sum() > 0 else None,
        "occupancy_computed": bool(occ.computed.any()),
        "kernel_ns": int(inside.sum()), "tc_kernel_ns": int(inside[tc].sum()),
        "grid_kernel_ns": int(inside[~np.isnan(occ.blocks_per_sm)].sum()),
    }


def gpu_busy_span(trace: Trace, rank: int, steps: I64) -> tuple[int, int]:
    """Union and extent (ns) of the rank's GPU activity launched inside the given steps (all without steps)."""
    ev = trace.events
    gpu = np.flatnonzero((ev["rank"] == rank) & any_of(ev["kind"], [int(k) for k in GPU_KINDS]))
    launch = ev["launch"][gpu]
    if len(steps) and steps[0] >= 0 and (launch >= 0).any():
        lstep = ev["step"][np.maximum(launch, 0)]
        gpu = gpu[(launch >= 0) & np.isin(lstep, steps)]
    if len(gpu) == 0:
        return 0, 0
    ts, end = ev["ts_ns"][gpu], ev["ts_ns"][gpu] + ev["dur_ns"][gpu]
    return intervals.total(intervals.union(ts, end)), int(end.max() - ts.min())


@per_rank
def compute_overview(trace: Trace, rank: int) -> Overview:
    """The overview of one rank."""
    bd = compute_breakdown(trace, rank)
    dev = trace.device_of_rank(rank)
    rows = _device_kernels(trace, rank, dev)
    metrics: dict[str, object] = {"gpu_utilization_pct": None, "sm_efficiency_pct": None,
                                  "achieved_occupancy_pct": None, "tensor_core_pct": None,
                                  "occupancy_computed": False, "kernel_ns": 0, "tc_kernel_ns": 0,
                                  "grid_kernel_ns": 0}
    if len(rows) and bd.step_count and bd.end_ns[-1] > bd.start_ns[0]:
        metrics = _gpu_metrics(trace, rows, dev, int(bd.start_ns[0]), int(bd.end_ns[-1]))
    elif len(rows):  # no step markers and no host ops to frame a step: the kernels' own span
        ev = trace.events
        lo, hi = int(ev["ts_ns"][rows].min()), int((ev["ts_ns"][rows] + ev["dur_ns"][rows]).max())
        metrics = _gpu_metrics(trace, rows, dev, lo, max(hi, lo + 1))
    if not has_tensor_core_names(trace, rank):  # an NPU's matrix unit is not named in its kernels
        metrics.update(tensor_core_pct=None, tc_kernel_ns=0)
    busy, span = gpu_busy_span(trace, rank, bd.step.astype(np.int64))
    return Overview(rank=rank, device=dev, breakdown=bd, busy_ns=busy, span_ns=span,
                    **metrics)  # type: ignore[arg-type]
