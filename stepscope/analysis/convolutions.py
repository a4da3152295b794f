"""Convolutions of one rank: their kernels, the layout transforms around them, cuDNN's fallback
algorithms and algorithm searches (SPEC §6 rows channels-last and cuDNN benchmark).

Inside the rank's steps (the whole trace without steps), a *convolution kernel* is one whose
launching op, or an op above it, is a convolution (``aten::*conv*``, ``ConvolutionBackward``). Of
those, the analysis singles out:

* the **Tensor-Core** ones (name table of :mod:`stepscope.analysis.tensor_cores`), and among them
  the ones whose names say **NCHW** (Tensor-Core convolutions work in NHWC);
* the **NCHW variants**: kernels of the ops around the convolutions (batch norm, pooling) that
  PyTorch or cuDNN runs in an NCHW version where a channels-last one exists (:data:`NCHW_VARIANT`);
* the **layout transforms** (``nchwToNhwc`` / ``nhwcToNchw`` ..., MIOpen's ``batched_transpose_*``,
  ``general_4d_reorder_*``, ``transpose_NCHW2CNHW``: any kernel, convolution or not, :data:`TRANSFORM`),
  cuDNN / MIOpen transposing NCHW tensors around every Tensor-Core (matrix-core) convolution;
* the **fallback** algorithms (``implicit_convolve_sgemm``, ``wgrad_alg0_engine``, ``dgrad_engine``,
  ``explicit_convolve_sgemm``): what cuDNN's heuristics pick without ``cudnn.benchmark``;
* per convolution **call** (op row): how many kernels it launched and their time, its step, and
  the median kernel count of the calls of the same op — a call that launches far more kernels than
  its op's median is cuDNN trying algorithms (``cudnn.benchmark`` meeting a new shape).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis._memo import per_rank
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import F64, I32, I64, B, ancestor_with, interval_set, kept_steps, pct, step_kernels
from stepscope.analysis.named import NamedRows, named_rows
from stepscope.analysis.tensor_cores import tc_kernel_mask
from stepscope.model.trace import Trace
from stepscope.model.uniq import unique

#: layout-transform kernels: cuDNN's (``nchwToNhwcKernel``, ``nhwcToNchwKernel``) and MIOpen's, whose
#: kernels are ``extern "C"`` and so start their names: ``batched_transpose_32x32_half`` (the NCHW ⇄ NHWC
#: transposes around its NHWC igemm / composable_kernel convolutions), ``general_4d_reorder_1x256_dword_r0231``
#: (its general tensor reorder) and ``transpose_NCHW2CNHW`` / ``transpose_CNHW2NCHW`` (around its 1x1
#: strided GEMM convolutions). Anchored at the start: composable_kernel's mangled ``ck_tile`` names and
#: Inductor's ``triton_poi_fused_..._transpose_...`` kernels are not layout transforms of a convolution.
TRANSFORM = re.compile(r"nchwToNhwc|nhwcToNchw|nchw_to_nhwc|nhwc_to_nchw|nchw2nhwc|nhwc2nchw"
                       r"|^batched_transpose_\d+x\d+|^general_4d_reorder_\d+x\d+|^transpose_(?:NCHW2CNHW|CNHW2NCHW)",
                       re.IGNORECASE)
NCHW = re.compile(r"nchw", re.IGNORECASE)
#: the kernels of the ops around convolutions that run an NCHW variant where a channels-last one exists:
#: PyTorch's batch norm (``batch_norm_collect_statistics_kernel`` … against
#: ``batch_norm_collect_statistics_channels_last_kernel``), cuDNN's (``bn_fw_tr_1C11_kernel_NCHW``,
#: ``bn_bw_1C11_kernel_new`` against ``batchnorm_fwtr_nhwc_semiPersist``, ``batchnorm_bwtr_nhwc_semiPersist``)
#: and pooling (``max_pool_backward_nchw`` against ``max_pool_backward_nhwc``)
NCHW_VARIANT = re.compile(r"batch_norm_(?!\w*channels_last)\w*kernel|\bbn_(?:fw|bw)_\w*|(?:max|avg)_pool\w*_nchw",
                          re.IGNORECASE)
#: the conv-algo-search rule's defaults (``AdvisorConfig`` mirrors them): a call that launched this many
#: kernels, or half that and this many times its op's median, is cuDNN trying algorithms
CONV_SEARCH_MIN_KERNELS = 12
CONV_SEARCH_OVER_MEDIAN = 3.0
FALLBACK = re.compile(r"implicit_convolve_sgemm|wgrad_alg0_engine|dgrad_engine|explicit_convolve_sgemm")


def is_conv_op(name: str) -> bool:
    low = name.lower()
    return (low.startswith("aten::") and "conv" in low) or "ConvolutionBackward" in name


def _is_transform(name: str) -> bool:
    return TRANSFORM.search(name) is not None


def _is_nchw(name: str) -> bool:
    return NCHW.search(name) is not None


def _is_nchw_variant(name: str) -> bool:
    return NCHW_VARIANT.search(name) is not None


def _is_fallback(name: str) -> bool:
    return FALLBACK.search(name) is not None


@dataclass(frozen=True)
class ConvCalls:
    """One row per convolution call (op row, in row order) that launched kernels in the steps."""

    rows: I64  # the calls' op rows
    op: I64  # index into ``names``
    names: tuple[str, ...]
    kernels: I64  # kernels the call launched
    time_ns: F64  # their time
    host_ns: F64  # the call's own time on the host
    step: I32  # the call's step (-1 outside steps)
    typical_kernels: F64  # median ``kernels`` over the calls of the same op
    kernel_rows: I64  # the calls' kernels
    kernel_call: I64  # per kernel, its call (row of the arrays above)

    def searching(self, min_kernels: int, over_median: float) -> B:
        """Calls that look like cuDNN trying algorithms: at least ``min_kernels`` kernels, or half that
        and ``over_median`` times their op's median (a plain backward launches several on every call)."""
        k = self.kernels
        out: B = (k >= min_kernels) | ((k >= min_kernels // 2) & (k >= over_median * self.typical_kernels))
        return out

    def search_ns(self, calls: B) -> float:
        """The time of those calls' kernels beyond one kernel's share per call (what the search adds)."""
        return float((self.time_ns[calls] * (1.0 - 1.0 / self.kernels[calls])).sum())

    def settled_host_ns(self, searching: B) -> F64:
        """Per searching call, the host time of a call that does not search: the median of the same op's
        calls that did not; of every call that did not where the op has none; else ``1 / kernels`` of
        its own."""
        idx = np.flatnonzero(searching)
        out: F64 = self.host_ns[idx] / self.kernels[idx]
        plain = ~searching
        if plain.any():
            out[:] = float(np.median(self.host_ns[plain]))
            for op in unique(self.op[idx]).tolist():  # per distinct op name (a handful), not per call
                same = plain & (self.op == op)
                if same.any():
                    out[self.op[idx] == op] = float(np.median(self.host_ns[same]))
        return out

    def search_host_ns(self, searching: B) -> float:
        """The searching calls' host time beyond a call's that does not search (cuDNN building and timing
        its candidates)."""
        return float(np.maximum(self.host_ns[searching] - self.settled_host_ns(searching), 0.0).sum())


@dataclass(frozen=True)
class ConvolutionResult:
    """Convolution kernels of one rank inside its steps (totals over the steps)."""

    rank: int
    step_count: int  # steps the per-step numbers average over (0 without steps)
    kernel_ns: int  # every kernel
    conv: NamedRows  # convolution kernels
    tc_conv: NamedRows  # ... on Tensor Cores
    nchw_tc: NamedRows  # ... on Tensor Cores, named NCHW
    fallback: NamedRows  # ... with cuDNN's fallback algorithms
    transforms: NamedRows  # layout-transform kernels (any kernel)
    calls: ConvCalls
    nchw_variants: NamedRows  # NCHW kernels with a channels-last variant (batch norm, pooling; any kernel)

    @property
    def conv_pct(self) -> float:
        return pct(self.conv.total_ns, self.kernel_ns)

    @property
    def fallback_pct(self) -> float:
        return pct(self.fallback.total_ns, self.kernel_ns)


@per_rank
def compute_convolutions(trace: Trace, rank: int) -> ConvolutionResult:
    """The rank's convolution kernels, their layout transforms, fallbacks and calls."""
    k = step_kernels(trace, rank)
    ev, pool = trace.events, trace.strings
    ops = ancestor_with(trace, ev["op"][k].astype(np.int64), pool.mask(is_conv_op))
    is_conv = ops >= 0
    if not is_conv.any():
        raise NotApplicable("no convolution kernels")
    conv = named_rows(trace, k[is_conv])
    conv_ids = ev["name"][conv.rows]
    tc = tc_kernel_mask(pool)[conv_ids]
    nchw = pool.mask(_is_nchw)[conv_ids]
    return ConvolutionResult(
        rank=rank, step_count=len(kept_steps(trace, rank)), kernel_ns=int(ev["dur_ns"][k].sum()), conv=conv,
        tc_conv=conv.subset(tc), nchw_tc=conv.subset(tc & nchw),
        fallback=conv.subset(pool.mask(_is_fallback)[conv_ids]),
        transforms=named_rows(trace, k[pool.mask(_is_transform)[ev["name"][k]]]),
        calls=_calls(trace, ops[is_conv], conv.rows, conv.dur_ns),
        nchw_variants=named_rows(trace, k[pool.mask(_is_nchw_variant)[ev["name"][k]]]))


def _calls(trace: Trace, ops: I64, rows: I64, dur: I64) -> ConvCalls:
    """Per convolution call: kernels launched, their time, its step, its op's median kernel count."""
    ev = trace.events
    calls, inv, per_call = np.unique(ops, return_inverse=True, return_counts=True)
    names, op = np.unique(ev["name"][calls], return_inverse=True)
    time = np.bincount(np.asarray(inv).reshape(-1), weights=dur, minlength=len(calls)).astype(np.float64)
    return ConvCalls(rows=calls.astype(np.int64), op=np.asarray(op, np.int64).reshape(-1),
                     names=tuple(str(s) for s in trace.strings.decode(names)),
                     kernels=per_call.astype(np.int64), time_ns=time, host_ns=ev["dur_ns"][calls].astype(np.float64),
                     step=ev["step"][calls].astype(np.int32),
                     typical_kernels=_median_by(ev["name"][calls], per_call), kernel_rows=rows,
                     kernel_call=np.asarray(inv, np.int64).reshape(-1))


def algo_search_rows(trace: Trace, rank: int, min_kernels: int = CONV_SEARCH_MIN_KERNELS,
                     over_median: float = CONV_SEARCH_OVER_MEDIAN) -> I64:
    """The rank's convolution calls that searched algorithms (op rows; none without convolutions)."""
    try:
        calls = compute_convolutions(trace, rank).calls
    except NotApplicable:
        return np.zeros(0, np.int64)
    out: I64 = calls.rows[calls.searching(min_kernels, over_median)]
    return out


def inside_algo_search(trace: Trace, rank: int, rows: I64) -> B:
    """Per host row of the rank: whether it starts inside a convolution call that searched algorithms
    (cuDNN's own calls while it times its trials: its syncs, allocations, launches)."""
    out: B = intervals.contains(interval_set(trace, algo_search_rows(trace, rank)), trace.events["ts_ns"][rows])
    return out


def _median_by(group: npt.NDArray[np.int32], values: I64) -> F64:
    """Per element, the median of ``values`` over the elements of its group."""
    out = np.zeros(len(values), np.float64)
    for g in unique(group).tolist():  # per distinct op name (a handful), not per event
        sel = group == g
        out[sel] = float(np.median(values[sel]))
    return out
