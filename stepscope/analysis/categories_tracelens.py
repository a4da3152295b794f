"""The op categories as TraceLens reports them (``ops_summary_by_category.csv`` of its perf report),
so a stepscope run can be set beside a TraceLens one row for row.

TraceLens's definition, reproduced:

* a **kernel launcher** is the innermost CPU op around a runtime call that launched device work
  (kernels, copies, memsets; NCCL kernels — ``nccl`` in the name — left out); a runtime call with
  no CPU op around it is its own launcher. Device work whose runtime call is not in the trace
  (launched before the profiler started) belongs to no launcher and is not counted.
* a launcher's **time** is the busy time of its device rows (the union of their intervals);
  **Count** is the number of launchers.
* its **category**, first match wins: the op name in TraceLens's op tables (``aten::mm`` /
  ``addmm`` / ``bmm`` / ``baddbmm`` / ``_scaled_mm`` → ``GEMM``; ``aten::convolution`` /
  ``cudnn_convolution`` / ``miopen_convolution`` → ``CONV_fwd``, ``aten::convolution_backward`` →
  ``CONV_bwd``; the batch / layer / group / instance / RMS norm ops → ``NORM_fwd`` / ``NORM_bwd``;
  the SDPA / flash-attention entry points → ``SDPA_fwd`` / ``SDPA_bwd``; its unary and binary
  elementwise lists → ``elementwise``; its reduce list → ``reduce``), a name starting ``triton`` →
  ``triton``, ``record_param_comms`` → ``record_param_comms``; else the launcher's first kernel, when
  it is an ATen native kernel (``void at::native…``) whose name holds ``elementwise``, ``reduce`` or
  ``multi_tensor_apply``; else ``other``.

The tables are TraceLens's core ``torch_op_mapping`` (AMD-AGI/TraceLens); the op names its
extensions add (pseudo ops, MoE, Primus, aiter custom ops) are not replicated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis._groups import group_keys
from stepscope.analysis.frames import TableResult
from stepscope.model.strings import matchable
from stepscope.model.trace import Trace

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
S = npt.NDArray[np.object_]

LABELS: tuple[str, ...] = ("GEMM", "CONV_fwd", "CONV_bwd", "NORM_fwd", "NORM_bwd", "SDPA_fwd", "SDPA_bwd",
                           "InferenceAttention", "elementwise", "reduce", "triton", "multi_tensor_apply",
                           "record_param_comms", "other")
OTHER = LABELS.index("other")

_GEMM = ("aten::mm", "aten::addmm", "aten::_scaled_mm", "aten::bmm", "aten::baddbmm", "trtllm::cublas_scaled_mm",
         "bitsandbytes::int8_linear_matmul", "tex_ts::te_gemm_ts", "vllm::gemm_with_dynamic_quant")
_CONV_FWD = ("aten::convolution", "aten::miopen_convolution", "aten::cudnn_convolution", "ConvBias_",
             "ConvBiasReLU_")
_CONV_BWD = ("aten::convolution_backward", "ConvBias_Backward", "ConvBiasReLU_Backward")
_NORM = (*(f"aten::{p}{kind}_norm{b}" for p in ("", "native_", "miopen_", "cudnn_")
            for kind in ("batch", "layer", "group", "instance") for b in ("", "_backward")),
         "aten::_fused_rms_norm", "aten::_fused_rms_norm_backward", "aten::rms_norm_backward",
         "aten::native_rms_norm_backward", "aten::miopen_rms_norm_backward", "aten::cudnn_rms_norm_backward")
_SDPA_FWD = ("FlashAttnFunc", "flash_attn::_flash_attn_forward", "flash_attn::_flash_attn_varlen_forward",
             "aten::_scaled_dot_product_cudnn_attention", "aten::_scaled_dot_product_efficient_attention",
             "aten::_scaled_dot_product_flash_attention", "aiter::_flash_attn_forward", "aiter::wrapper_fmha_v3_fwd",
             "aiter::mha_fwd", "aiter::fmha_v3_fwd", "flash_attn_3::fwd", "EvoformerAttention")
_SDPA_BWD = ("FlashAttnFuncBackward", "FusedAttnFuncBackward", "flash_attn::_flash_attn_backward",
             "flash_attn::_flash_attn_varlen_backward", "aten::_scaled_dot_product_cudnn_attention_backward",
             "aten::_scaled_dot_product_efficient_attention_backward",
             "aten::_scaled_dot_product_flash_attention_backward", "aiter::_flash_attn_backward",
             "aiter::wrapper_fmha_v3_bwd", "aiter::mha_bwd")
_ELEMENTWISE = ("aten::copy", "aten::copy_", "aten::clamp_min", "aten::clamp_min_", "aten::clamp_max",
                "aten::clamp_max_", "aten::sigmoid", "aten::rsqrt", "aten::silu", "aten::neg", "aten::pow",
                "aten::div", "aten::div_", "aten::mul", "aten::mul_", "aten::add", "aten::add_",
                "aten::sigmoid_backward", "aten::threshold_backward")
_REDUCE = tuple(f"aten::{n}" for n in ("sum", "mean", "max", "min", "norm", "linalg_norm", "std", "var",
                                       "logsumexp", "cumsum", "cumprod", "amin", "amax"))
_INFERENCE_ATTENTION = ("_C_cache_ops::reshape_and_cache_flash", "_C_cache_ops::concat_and_cache_mla")
#: op name → label, TraceLens's op tables
OP_LABELS: dict[str, str] = {
    **{n: "GEMM" for n in _GEMM}, **{n: "CONV_fwd" for n in _CONV_FWD}, **{n: "CONV_bwd" for n in _CONV_BWD},
    **{n: "NORM_bwd" if n.endswith("_backward") else "NORM_fwd" for n in _NORM},
    **{n: "SDPA_fwd" for n in _SDPA_FWD}, **{n: "SDPA_bwd" for n in _SDPA_BWD},
    **{n: "InferenceAttention" for n in _INFERENCE_ATTENTION},
    **{n: "elementwise" for n in _ELEMENTWISE}, **{n: "reduce" for n in _REDUCE},
}
#: the first kernel's name, for launchers the tables do not name: (needle, label) in an ATen native kernel
KERNEL_FALLBACK: tuple[tuple[str, str], ...] = (("elementwise", "elementwise"), ("reduce", "reduce"),
                                                ("multi_tensor_apply", "multi_tensor_apply"))


@dataclass(frozen=True)
class TraceLensTable(TableResult):
    """Kernel launchers by TraceLens category, most time first (categories with launchers only)."""

    category: S
    ops: I64  # launchers (TraceLens "Count")
    time_ns: I64  # summed busy time of each launcher's device rows
    share_pct: F64

    def columns(self) -> dict[str, npt.NDArray[np.generic]]:
        return dict(self.__dict__)


def op_label(name: str) -> int:
    """The TraceLens label an op name gets from the tables and patterns, -1 when none."""
    label = OP_LABELS.get(name)
    if label is None and name.startswith("triton"):
        label = "triton"
    if label is None and name.startswith("record_param_comms"):
        label = "record_param_comms"
    return LABELS.index(label) if label is not None else -1


def kernel_label(name: str) -> int:
    """The label TraceLens reads off a launcher's first kernel, -1 when none."""
    if not name.startswith("void at::native"):
        return -1
    return next((LABELS.index(label) for needle, label in KERNEL_FALLBACK if needle in name), -1)


def _is_nccl(name: str) -> bool:
    return "nccl" in name


def _labels(trace: Trace, ids: I64, label: Callable[[str], int]) -> I64:
    """``label`` of each string id in ``ids``, each distinct name labelled once."""
    (uniq,), inv = group_keys(np.ravel(ids))
    return np.array([label(matchable(trace.strings[int(i)])) for i in uniq.tolist()], np.int64)[inv]


def launchers(trace: Trace, rows: I64) -> tuple[I64, I64, I64]:
    """TraceLens's kernel launchers of device ``rows``: the rows kept (sorted by launcher, launch call,
    start), each one's launcher index, and each launcher's row (op, or the runtime call itself)."""
    ev = trace.events
    launch = ev["launch"][rows].astype(np.int64)
    keep = (launch >= 0) & ~trace.strings.mask(_is_nccl)[ev["name"][rows]]
    rows, launch = rows[keep], launch[keep]
    op = ev["op"][launch].astype(np.int64)
    owner = np.where(op >= 0, op, launch)
    order = np.lexsort((ev["ts_ns"][rows], launch, owner))
    rows, owner = rows[order], owner[order]
    new = np.ones(len(rows), bool)
    new[1:] = owner[1:] != owner[:-1]
    return rows, np.cumsum(new) - 1, owner[new]


@dataclass(frozen=True)
class Launchers:
    """TraceLens's kernel launchers of some device rows, one entry each."""

    row: I64  # the launcher's row: its CPU op, or the runtime call itself
    label: I64  # index into LABELS
    busy_ns: I64  # union of its device rows' intervals


def launcher_labels(trace: Trace, rows: I64) -> Launchers:
    """Each TraceLens kernel launcher of device ``rows``, its category label and its busy time."""
    ev = trace.events
    kept, group, owners = launchers(trace, rows)
    ts = ev["ts_ns"][kept]
    busy = intervals.union_length_by_group(group, ts, ts + ev["dur_ns"][kept], len(owners))
    first = np.ones(len(kept), bool)
    first[1:] = group[1:] != group[:-1]
    label = _labels(trace, ev["name"][owners], op_label)
    fallback = _labels(trace, ev["name"][kept[first]], kernel_label)
    label = np.where(label >= 0, label, np.where(fallback >= 0, fallback, OTHER)).astype(np.int64)
    return Launchers(owners, label, busy)


def tracelens_table(trace: Trace, rows: I64) -> TraceLensTable:
    """The launchers of device ``rows`` grouped by TraceLens category."""
    lc = launcher_labels(trace, rows)
    count = np.bincount(lc.label, minlength=len(LABELS)).astype(np.int64)
    time = np.rint(np.bincount(lc.label, weights=lc.busy_ns, minlength=len(LABELS))).astype(np.int64)
    o = np.argsort(-time, kind="stable")
    o = o[count[o] > 0]
    total = max(int(time.sum()), 1)
    return TraceLensTable(category=np.array(LABELS, dtype=object)[o], ops=count[o], time_ns=time[o],
                          share_pct=time[o] / total * 100.0)
