"""Scaled-dot-product attention computed by SDPA's math backend: the score matrix materialised in
memory, softmax, masking and dropout as separate kernels, and — for bf16 / fp16 inputs — the matmuls
in FP32 (the math path upcasts half-precision inputs for accuracy), where a fused kernel (flash,
memory-efficient, cuDNN) makes one pass on Tensor Cores. PyTorch falls back to it when no fused
kernel accepts the call (an explicit ``sdpa_kernel(SDPBackend.MATH)``, an unsupported mask, head
dimension or dtype, a non-contiguous layout) and says so only in a warning.

* **Forward**: the device work launched inside ``aten::_scaled_dot_product_attention_math``.
* **Backward**: autograd differentiates the math path's own ops (``BmmBackward0``,
  ``SafeSoftmaxBackward0`` …); a backward op carries the ``Sequence number`` of the forward op it
  differentiates, so the device work under a host op whose sequence number belongs to a forward op
  inside a math call (and which itself runs outside every math call) is that call's backward.
* **What a fused kernel needs at least**: the attention's FLOPs (forward and backward, the shapes
  and ``is_causal`` of the enclosing ``aten::scaled_dot_product_attention``, as TraceLens counts
  them: :mod:`.attention_costs`) at the device's dense peak for the inputs' type — a lower bound of
  the fused time, so the gain derived from it is an upper bound.

These kernels are the fallback's, not a precision choice: the tensor_cores analysis leaves them out
of its FP32 kernels (AMP would not change them; the program already runs bf16) and the elementwise
runs leave them out too (a fused attention removes them).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis._memo import per_rank
from stepscope.analysis.attention_costs import attention_shape
from stepscope.analysis.common import I64, in_step_rows, interval_set, launched_inside, rank_rows
from stepscope.analysis.intervals import Intervals
from stepscope.analysis.peaks import DevicePeak, device_peak
from stepscope.model.schema import GPU_KINDS, HOST_KINDS, EventKind
from stepscope.model.trace import Trace
from stepscope.model.tree import nearest_marked_ancestor

#: SDPA's math backend, the op every fallback runs through
MATH_OPS = ("aten::_scaled_dot_product_attention_math",)
SDPA_OP = "aten::scaled_dot_product_attention"
_DTYPES = {"c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32"}


@dataclass(frozen=True)
class MathAttention:
    """The rank's attention on SDPA's math backend, inside its steps."""

    rows: I64  # device rows (forward and backward) of the math calls
    device_ns: int  # their summed time
    calls: int  # math calls inside the steps
    dtype: str  # the inputs' type (bf16, fp16, fp32), "" unknown
    flops: float  # forward + backward FLOPs of those calls (nan: shapes or is_causal not recorded)
    fused_min_ns: float  # the FLOPs at the device's dense peak for ``dtype`` (nan: unknown)


@per_rank
def math_attention(trace: Trace, rank: int) -> MathAttention:
    """The math backend's calls and their device work (see the module docstring)."""
    dev = trace.device_of_rank(rank)
    return _math_attention(trace, rank, device_peak(dev))


def _math_attention(trace: Trace, rank: int, peak: DevicePeak | None) -> MathAttention:
    ev = trace.events
    host = rank_rows(trace, rank, tuple(int(k) for k in HOST_KINDS))
    calls = host[np.isin(ev["name"][host], _ids(trace, MATH_OPS))]
    if len(calls):
        calls = calls[np.isin(calls, in_step_rows(trace, rank, tuple(int(k) for k in HOST_KINDS)))]
    if len(calls) == 0:
        return MathAttention(np.zeros(0, np.int64), 0, 0, "", math.nan, math.nan)
    gpu = in_step_rows(trace, rank, tuple(int(k) for k in GPU_KINDS if k != EventKind.COMMUNICATION))
    spans = interval_set(trace, calls)
    fwd = launched_inside(trace, gpu, calls)
    bwd = _backward_of(trace, host, gpu, spans)
    flops, dtype = _flops(trace, calls)
    peak_tflops = peak.peak_tflops(dtype) if peak is not None and dtype else None
    fused = flops / (peak_tflops * 1e12) * 1e9 if peak_tflops and math.isfinite(flops) else math.nan
    rows = gpu[fwd | bwd]
    return MathAttention(rows, int(ev["dur_ns"][rows].sum()), len(calls), dtype, flops, fused)


def _ids(trace: Trace, names: tuple[str, ...]) -> I64:
    return np.asarray([i for i in (trace.strings.find(n) for n in names) if i >= 0], np.int64)


def _backward_of(trace: Trace, host: I64, gpu: I64, spans: Intervals) -> npt.NDArray[np.bool_]:
    """Per device row: launched under a backward op of an op inside a math call."""
    ev = trace.events
    seq = ev["seq"][host]
    numbered = seq >= 0
    inside = intervals.contains(spans, ev["ts_ns"][host])
    forward_seqs = np.unique(seq[numbered & inside])
    backward = host[numbered & ~inside & np.isin(seq, forward_seqs)]
    if len(backward) == 0:
        return np.zeros(len(gpu), bool)
    marked = np.zeros(len(ev), bool)
    marked[backward] = True
    launch = ev["launch"][gpu].astype(np.int64)
    op = np.where(launch >= 0, ev["parent"][np.maximum(launch, 0)], -1).astype(np.int64)
    owner = np.full(len(gpu), -1, np.int64)
    ok = op >= 0
    owner[ok] = nearest_marked_ancestor(ev["parent"], op[ok], marked, include_self=True)
    return owner >= 0


def _flops(trace: Trace, calls: I64) -> tuple[float, str]:
    """Forward + backward FLOPs of the calls (from their enclosing SDPA op's shapes), and the dtype."""
    ev, pool = trace.events, trace.strings
    parent = ev["parent"][calls].astype(np.int64)
    sdpa = parent[(parent >= 0) & (ev["name"][np.maximum(parent, 0)] == pool.find(SDPA_OP))]
    if len(sdpa) < len(calls):
        return math.nan, _dtype_of(trace, calls)
    keys, counts = np.unique(np.stack([ev["input_dims"][sdpa], ev["input_types"][sdpa],
                                       ev["concrete_inputs"][sdpa]]), axis=1, return_counts=True)
    total, dtype = 0.0, ""
    for (d, t, c), n in zip(keys.T.tolist(), counts.tolist()):  # per distinct call shape
        try:
            dims, types = json.loads(pool[d]), json.loads(pool[t])
            concrete = json.loads(pool[c]) if c >= 0 else None
        except (ValueError, RecursionError, IndexError):
            return math.nan, ""
        fwd = attention_shape(SDPA_OP, dims, types, concrete)
        if fwd is None:
            return math.nan, ""
        f_fwd, f_bwd = fwd.flops(), replace(fwd, backward=True).flops()  # a fused backward's work
        if f_fwd is None or f_bwd is None:
            return math.nan, ""
        total += n * (f_fwd + f_bwd)
        dtype = _DTYPES.get(fwd.dtype, "")
    return total, dtype


def _dtype_of(trace: Trace, calls: I64) -> str:
    ev, pool = trace.events, trace.strings
    t = int(ev["input_types"][calls[0]])
    return next((v for k, v in _DTYPES.items() if t >= 0 and f'"{k}"' in pool[t]), "")
