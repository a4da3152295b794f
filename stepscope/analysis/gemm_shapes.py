"""GEMMs per shape (TraceLens ``GEMM.csv``): each matrix-product op grouped by name and input shapes,
with the FLOPs and bytes its shapes imply and the rate its kernels achieved.

For ``aten::mm`` / ``addmm`` / ``_scaled_mm`` (A = [M, K], B = [K, N]) and ``aten::bmm`` / ``baddbmm``
(A = [B, M, K], B = [B, K, N]); ``addmm`` / ``baddbmm`` add a bias (their first input):

* FLOPs = B × (2·M·N·K + M·N if bias), bytes moved = B × (M·K + K·N + M·N) × element size, plus N ×
  element size for the bias (TraceLens's model: the bias read once as a row of N);
* each call's time is the busy time of its device rows (the op as TraceLens's kernel launcher:
  kernels, copies and memsets, overlaps counted once); TFLOP/s and TB/s per call, their mean and
  median per shape.

Calls without recorded shapes (``record_shapes=False``) or with an unknown element type are left out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis._groups import group_keys
from stepscope.analysis.categories_tracelens import launchers
from stepscope.analysis.comm import dtype_bytes
from stepscope.analysis.frames import TableResult
from stepscope.model.trace import Trace

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
S = npt.NDArray[np.object_]

#: op name → (index of A in Input Dims, batched, bias)
GEMM_OPS: dict[str, tuple[int, bool, bool]] = {
    "aten::mm": (0, False, False), "aten::_scaled_mm": (0, False, False), "aten::addmm": (1, False, True),
    "aten::bmm": (0, True, False), "aten::baddbmm": (1, True, True),
}


@dataclass(frozen=True)
class GemmShapeTable(TableResult):
    """One row per GEMM op name and input shapes, most summed time first."""

    name: S
    input_dims: S
    dtype: S
    batch: I64
    m: I64
    n: I64
    k: I64
    bias: npt.NDArray[np.bool_]
    calls: I64
    gflops: F64  # per call
    data_moved_mb: F64  # per call, MiB (2^20 bytes, as TraceLens)
    flops_per_byte: F64
    time_ns: I64  # summed busy time
    mean_time_ns: F64
    median_time_ns: F64
    tflops_mean: F64  # TFLOP/s of each call, mean and median over the calls
    tflops_median: F64
    tbps_mean: F64  # TB/s of each call
    tbps_median: F64

    def columns(self) -> dict[str, npt.NDArray[np.generic]]:
        return dict(self.__dict__)


def gemm_shape(name: str, dims_text: str, types_text: str) -> tuple[int, int, int, int, bool, str, int] | None:
    """(B, M, N, K, bias, dtype, element bytes) of one GEMM call, None when its shapes do not say."""
    spec = GEMM_OPS.get(name)
    try:
        dims, types = json.loads(dims_text), json.loads(types_text)
    except ValueError:
        return None
    if spec is None or not isinstance(dims, list) or not isinstance(types, list):
        return None
    a_at, batched, bias = spec
    rank = 3 if batched else 2
    if len(dims) < a_at + 2 or len(types) <= a_at or len(dims[a_at]) != rank or len(dims[a_at + 1]) != rank:
        return None
    a, b = dims[a_at], dims[a_at + 1]
    size = dtype_bytes(str(types[a_at]))
    if size <= 0:
        return None
    return (a[0] if batched else 1), a[-2], b[-1], a[-1], bias, str(types[a_at]), size


def mean_median(inv: I64, values: F64, groups: int) -> tuple[F64, F64]:
    """Mean and median of ``values`` per group (``inv``: each value's group)."""
    calls = np.maximum(np.bincount(inv, minlength=groups), 1)
    mean = np.bincount(inv, weights=values, minlength=groups) / calls
    order = np.lexsort((values, inv))
    first = np.concatenate([[0], np.cumsum(calls)[:-1]])
    v = values[order]
    median = (v[first + (calls - 1) // 2] + v[first + calls // 2]) / 2.0 if len(v) else np.zeros(groups)
    return mean, median


def _is_gemm_op(name: str) -> bool:
    return name in GEMM_OPS


def _per_call(trace: Trace, rows: I64) -> tuple[I64, F64]:
    """The GEMM launchers among ``rows``' launchers, and each one's busy time."""
    ev = trace.events
    kept, group, owners = launchers(trace, rows)
    ts = ev["ts_ns"][kept]
    busy = intervals.union_length_by_group(group, ts, ts + ev["dur_ns"][kept], len(owners))
    gemm = trace.strings.mask(_is_gemm_op)[ev["name"][owners]] & (ev["input_dims"][owners] >= 0)
    return owners[gemm], busy[gemm].astype(np.float64)


def gemm_shapes(trace: Trace, rows: I64) -> GemmShapeTable:
    """The GEMM calls that launched device ``rows``, grouped by op name and input shapes and types."""
    ev, pool = trace.events, trace.strings
    ops, busy = _per_call(trace, rows)
    (names, dims, types), inv = group_keys(ev["name"][ops], ev["input_dims"][ops], ev["input_types"][ops])
    shapes = [gemm_shape(pool[int(a)], pool[int(b)], pool[int(c)]) for a, b, c in zip(names, dims, types)]
    known = np.array([s is not None for s in shapes], bool)
    full = [s or (1, 0, 0, 0, False, "", 0) for s in shapes]  # per distinct shape
    bsz, m, n, k, size = np.array([(s[0], s[1], s[2], s[3], s[6]) for s in full], np.int64).reshape(-1, 5).T
    bias = np.array([s[4] for s in full], bool)
    dtype = np.array([s[5] for s in full], dtype=object)
    flops = (bsz * (2 * m * n * k + np.where(bias, m * n, 0))).astype(np.float64)
    nbytes = (bsz * (m * k + k * n + m * n) * size + np.where(bias, n * size, 0)).astype(np.float64)
    g = len(names)
    secs = np.maximum(busy, 1) / 1e9
    t_mean, t_median = mean_median(inv, busy, g)
    f_mean, f_median = mean_median(inv, flops[inv] / secs / 1e12, g)
    b_mean, b_median = mean_median(inv, nbytes[inv] / secs / 1e12, g)
    total = np.rint(np.bincount(inv, weights=busy, minlength=g)).astype(np.int64)
    o = np.argsort(-total, kind="stable")
    o = o[known[o]]
    return GemmShapeTable(
        name=pool.decode(names.astype(np.int32))[o], input_dims=pool.decode(dims.astype(np.int32))[o],
        dtype=dtype[o], batch=bsz[o], m=m[o], n=n[o],
        k=k[o], bias=bias[o], calls=np.bincount(inv, minlength=g).astype(np.int64)[o], gflops=flops[o] / 1e9,
        data_moved_mb=nbytes[o] / 2**20, flops_per_byte=flops[o] / np.maximum(nbytes[o], 1), time_ns=total[o],
        mean_time_ns=t_mean[o], median_time_ns=t_median[o], tflops_mean=f_mean[o], tflops_median=f_median[o],
        tbps_mean=b_mean[o], tbps_median=b_median[o])
