"""What a misaligned half-precision GEMM would take padded to aligned dimensions.

cuBLAS runs an fp16 / bf16 GEMM whose N or K is not a multiple of 8 on kernels that cannot use the
16-byte aligned loads of its fast paths (on Hopper, Ampere's ``cutlass_80_..._align2`` kernels
instead of its own): measured on an H200 (``tests/data/h200_bounds/r16``), a 8192 × 4100 × 4100 bf16
GEMM took 1.1 ms, padded to 4160 it took 0.36 ms — 3.1 × faster for 3 % more arithmetic.

Padded, a call does its FLOPs with N and K rounded up to the alignment, at the rate of what runs
aligned on this rank (the FLOPs over the kernel time of its aligned half-precision GEMM calls), or,
where it has none, at :data:`GEMM_PEAK_EFFICIENCY` × the device's dense peak for the type — and no
faster than its bytes at the memory bandwidth (the roofline). NaN where the shapes or the device do
not say, and where the estimate is under :data:`THROUGHPUT_MIN_NS`: a GEMM that small is bound by its
launch and latency, which its FLOPs do not tell.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from stepscope.analysis.gemm_dims import GemmDimsResult
from stepscope.analysis.op_costs import row_costs
from stepscope.analysis.peaks import DevicePeak, device_peak, element_type
from stepscope.model.trace import Trace

F64 = npt.NDArray[np.float64]
#: the share of the datasheet's dense peak cuBLAS's large half-precision GEMMs reach: 790-800 of 989.5
#: TFLOP/s on the H200 here (bf16, 8192 × 4160 × 4160: ``tests/data/h200_bounds/r16/gemm_pad``)
GEMM_PEAK_EFFICIENCY = 0.8
#: the shortest padded estimate taken: below it a GEMM runs at no throughput its FLOPs would tell
THROUGHPUT_MIN_NS = 20_000.0


def padded_kernel_ns(trace: Trace, gd: GemmDimsResult, calls: npt.NDArray[np.bool_], align: int) -> F64:
    """Per chosen call (a mask over ``gd``'s calls), its kernels' time padded (NaN: unknown)."""
    cost = row_costs(trace, gd.rows[calls])
    n, k = gd.n[calls].astype(np.float64), gd.k[calls].astype(np.float64)
    grow = np.divide(np.ceil(n / align) * align * np.ceil(k / align) * align, n * k,
                     out=np.full(len(n), np.nan), where=(n > 0) & (k > 0))
    peak = device_peak(trace.device_of_rank(gd.rank))
    aligned_rate = _aligned_rate(trace, gd, align)  # FLOPs per ns
    rate = np.full(len(n), aligned_rate) if math.isfinite(aligned_rate) else _peak_rate(peak, cost.dtype)
    floor = cost.nbytes / (peak.bandwidth_tbps * 1e3) if peak is not None else np.zeros(len(n))
    out: F64 = np.maximum(cost.flops * grow / rate, floor)
    out[out < THROUGHPUT_MIN_NS] = np.nan
    return out


def _aligned_rate(trace: Trace, gd: GemmDimsResult, align: int) -> float:
    """FLOPs per ns of the rank's aligned half-precision GEMM calls (NaN without any)."""
    aligned = gd.half & gd.known & ~gd.misaligned(align) & (gd.call_kernel_ns > 0)
    if not aligned.any():
        return math.nan
    flops = row_costs(trace, gd.rows[aligned]).flops
    ok = np.isfinite(flops) & (flops > 0)
    time_ns = float(gd.call_kernel_ns[aligned][ok].sum())
    return float(flops[ok].sum()) / time_ns if time_ns > 0 else math.nan


def _peak_rate(peak: DevicePeak | None, dtypes: npt.NDArray[np.object_]) -> F64:
    """Per call, :data:`GEMM_PEAK_EFFICIENCY` × the device's dense peak for its type, in FLOPs per ns."""
    out = np.full(len(dtypes), np.nan)
    if peak is None:
        return out
    for t in set(dtypes.tolist()):  # per distinct type (one or two)
        et = element_type(str(t))
        tflops = peak.peak_tflops(et) if et is not None else None
        if tflops:
            out[dtypes == t] = tflops * 1e3 * GEMM_PEAK_EFFICIENCY
    return out
