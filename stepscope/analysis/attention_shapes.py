"""Attention calls per shape (TraceLens ``SDPA_fwd.csv`` / ``SDPA_bwd``): each scaled-dot-product
attention op TraceLens models, grouped by name, input shapes, types and flags, with the FLOPs and
bytes :mod:`stepscope.analysis.attention_costs` gives and the rate its device work achieved.

A call's time is the busy time of the device rows launched by the op or inside it (TraceLens's op
subtree: the ``FillFunctor`` a flash-attention op launches before its kernel counts). TFLOP/s and
TB/s per call, their mean and median per shape. Calls without recorded shapes are left out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis._groups import group_keys
from stepscope.analysis.attention_costs import AttentionShape, attention_shape
from stepscope.analysis.categories_tracelens import OP_LABELS
from stepscope.analysis.frames import TableResult
from stepscope.analysis.gemm_shapes import mean_median
from stepscope.analysis.op_costs import element_bytes
from stepscope.analysis.op_time import op_time
from stepscope.model.trace import Trace

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
S = npt.NDArray[np.object_]
B = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class AttentionShapeTable(TableResult):
    """One row per attention op name and input shapes, most summed time first."""

    name: S
    input_dims: S
    dtype: S
    backward: B
    b: I64
    n_q: I64
    h_q: I64
    n_kv: I64
    h_kv: I64
    d_qk: I64
    d_v: I64
    causal: B
    calls: I64
    gflops: F64  # per call
    data_moved_mb: F64  # per call, MiB
    flops_per_byte: F64
    time_ns: I64
    mean_time_ns: F64
    median_time_ns: F64
    tflops_mean: F64
    tflops_median: F64
    tbps_mean: F64
    tbps_median: F64

    def columns(self) -> dict[str, npt.NDArray[np.generic]]:
        return dict(self.__dict__)


def is_sdpa_op(name: str) -> bool:
    """The attention ops TraceLens files under SDPA_fwd / SDPA_bwd (and whose shapes we can read)."""
    return OP_LABELS.get(name) in ("SDPA_fwd", "SDPA_bwd")


def _shapes(trace: Trace, keys: list[I64]) -> list[AttentionShape | None]:
    pool = trace.strings
    out: list[AttentionShape | None] = []
    for nm, d, t, c in zip(*(k.tolist() for k in keys)):  # per distinct shape
        try:
            dims, types = json.loads(pool[d]) if d >= 0 else [], json.loads(pool[t]) if t >= 0 else []
            concrete = json.loads(pool[c]) if c >= 0 else None
        except (ValueError, RecursionError):
            out.append(None)
            continue
        out.append(attention_shape(pool[nm], dims, types, concrete))
    return out


def _params(shapes: list[AttentionShape | None]) -> tuple[I64, F64, F64, S, B, B]:
    full = [s or AttentionShape(0, 0, 0, 0, 0, 0, 0, False, False, "") for s in shapes]
    params = np.array([(s.b, s.n_q, s.h_q, s.n_kv, s.h_kv, s.d_qk, s.d_v) for s in full], np.int64).reshape(-1, 7)
    flops = np.array([s.flops() or np.nan for s in full], np.float64)
    nbytes = np.array([s.elements() * element_bytes(s.dtype) for s in full], np.float64)
    known = np.isfinite(flops) & (nbytes > 0) & np.array([s is not None for s in shapes], bool)
    return (params, flops, nbytes, np.array([s.dtype for s in full], dtype=object),
            np.array([s.causal for s in full], bool), known)


def attention_shapes(trace: Trace, rows: I64) -> AttentionShapeTable:
    """The attention calls owning device ``rows``, grouped by op name, input shapes, types and flags."""
    ev, pool = trace.events, trace.strings
    chosen = pool.mask(is_sdpa_op)[ev["name"]] & (ev["input_dims"] >= 0)
    ot = op_time(trace, rows, chosen)
    ops, busy = ot.op, ot.busy_ns.astype(np.float64)
    keys, inv = group_keys(ev["name"][ops], ev["input_dims"][ops], ev["input_types"][ops], ev["concrete_inputs"][ops])
    params, flops, nbytes, dtype, causal, known = _params(_shapes(trace, keys))
    g = len(keys[0])
    secs = np.maximum(busy, 1) / 1e9
    t_mean, t_median = mean_median(inv, busy, g)
    f_mean, f_median = mean_median(inv, np.nan_to_num(flops[inv]) / secs / 1e12, g)
    b_mean, b_median = mean_median(inv, nbytes[inv] / secs / 1e12, g)
    total = np.rint(np.bincount(inv, weights=busy, minlength=g)).astype(np.int64)
    o = np.argsort(-total, kind="stable")
    o = o[known[o]]
    names = pool.decode(keys[0].astype(np.int32))
    p = params[o].T
    return AttentionShapeTable(
        name=names[o], input_dims=pool.decode(keys[1].astype(np.int32))[o], dtype=dtype[o],
        backward=np.array([n.endswith(("backward", "Backward")) for n in names[o]], bool),
        b=p[0], n_q=p[1], h_q=p[2], n_kv=p[3], h_kv=p[4], d_qk=p[5], d_v=p[6], causal=causal[o],
        calls=np.bincount(inv, minlength=g).astype(np.int64)[o], gflops=flops[o] / 1e9,
        data_moved_mb=nbytes[o] / 2**20, flops_per_byte=flops[o] / np.maximum(nbytes[o], 1), time_ns=total[o],
        mean_time_ns=t_mean[o], median_time_ns=t_median[o], tflops_mean=f_mean[o], tflops_median=f_median[o],
        tbps_mean=b_mean[o], tbps_median=b_median[o])
