"""Which kernels ran on Tensor Cores (NVIDIA Volta → Blackwell) or matrix cores (AMD MFMA/WMMA), and
which operators could have: one table each, decided once per unique name.

A kernel's name is the only evidence a trace carries, so the table lists the name fragments that
the vendor libraries (cuBLAS, cuDNN, CUTLASS, flash-attention, rocBLAS/Tensile, composable_kernel)
put in Tensor-Core kernels, and the names of Triton's flash-attention kernels (``attn_fwd``). The
fragments name the MMA instruction shape (``h884`` = HMMA 8x8x4 on Volta, ``1688`` = 16x8x8 on
Turing/Ampere, ``16816`` = 16x8x16 on Ampere+), the library family
(``xmma``, ``tensorop``, ``gmma`` / ``wgmma`` on Hopper, ``tcgen05`` / ``umma`` on Blackwell) or the AMD
matrix instruction (``MFMA``, Tensile ``MI32x32x8``). A GEMM in an FP8 / FP6 / FP4 or MX format
(``e4m3``, ``MxE2m1``, ``mxfp4``, ``fp8_gemm``) runs on Tensor Cores whatever its library, since only
they multiply those types; a kernel that merely converts to such a type (``..._fp8_quant_kernel``)
is not a GEMM and is not counted. Plain FP32 SIMT kernels (``volta_sgemm``, ``scudnn``,
``simt_sgemm``, ``implicit_convolve_sgemm``) are deliberately absent, and a name that states its
math instruction as a CUDA-core FMA is not a Tensor-Core kernel whatever its family: cuBLAS names
its FP32 GEMMs without TF32 ``sm80_xmma_gemm_f32f32_f32f32_f32_..._ffma_...`` (``ffma`` FP32,
``dfma`` FP64, ``hfma2`` paired FP16), which the ``xmma`` / ``sm9x_..gemm`` rows would otherwise take.

:func:`compute_tensor_cores` (the ``tensor_cores`` analysis, the TB plugin's "Tensor Cores eligible"
recommendation) weighs a rank's kernels inside its steps: those launched by a Tensor-Core eligible
operator (the launching op or any op above it), and how much of that eligible time ran on Tensor
Cores. A kernel linked to no op (a CUDA / HIP graph replay's kernels: their launch is the graph's)
cannot be eligible; ``unlinked_ns`` says how much time that leaves out, so that the view can say it.
The overview's Tensor-Core share is another number: every kernel's time, by name alone. The
eligible kernels that did not, their operators and the operators' input types are the evidence of
the ``no-tensor-cores`` finding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis._groups import largest_first
from stepscope.analysis._memo import per_rank
from stepscope.analysis.attention_fallback import MathAttention, math_attention
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import ancestor_with, kept_steps, pct, step_kernels
from stepscope.analysis.named import NamedRows, named_rows
from stepscope.analysis.peaks import DevicePeak, device_peak
from stepscope.analysis.platform import platform_of
from stepscope.model.strings import StringPool
from stepscope.model.trace import Trace
from stepscope.model.uniq import unique

#: (architecture, regex fragment, what it names). Case-insensitive search in the kernel name.
TC_KERNEL_PATTERNS: tuple[tuple[str, str, str], ...] = (
    ("volta", r"[hsi]884", "HMMA 8x8x4 cuBLAS/cuDNN kernels (volta_h884gemm, volta_fp16_s884cudnn)"),
    ("volta", r"hmma|wmma", "explicit HMMA / WMMA kernels (also RDNA3 WMMA on AMD)"),
    ("turing", r"[hsci]1688|i8816|i8832|imma[_\d]", "Turing/Ampere 16x8x8 and integer IMMA shapes"),
    ("turing", r"turing_(fp16|h|i8)", "Turing cuBLAS/cuDNN half/int8 kernels"),
    ("ampere", r"16816|16832|tensor16x8x(8|16|32)", "Ampere+ 16x8x16 (bf16/fp16/tf32) MMA shapes"),
    ("ampere", r"xmma", "cuDNN/cuBLAS xmma kernels (sm80_xmma_*, xmma_gemm, implicit_gemm)"),
    ("ampere", r"tensorop", "CUTLASS TensorOp kernels (cutlass_80_tensorop_*, OpClassTensorOp)"),
    ("ampere", r"ampere_(fp16|bf16|h|tf32|i8)", "Ampere cuBLAS half/bf16/tf32 kernels"),
    ("ampere", r"dgrad_1x1_stride_2x2|first_layer_wgrad_kernel|conv1x1|conv2d_c1_k1|direct_group",
     "cuDNN Tensor-Core convolution helpers"),
    ("hopper", r"gmma|wgmma|warpgroup", "Hopper warp-group MMA (sm90 CUTLASS 3, cuBLAS)"),
    ("hopper", r"sm9\d_.*(gemm|conv|fprop|dgrad|wgrad|mma)", "sm90 specialised GEMM/conv kernels"),
    ("hopper", r"nvjet", "cuBLAS nvjet kernels (Hopper/Blackwell)"),
    ("hopper", r"flash_(fwd|bwd)|flash::|fmha|flashattn", "flash / fused multi-head attention kernels"),
    ("triton", r"^_?attn_(?:fwd|bwd)(?:_|$)|^bwd_kernel_(?:dk_dv|dq)(?:_|$)",
     "Triton flash-attention kernels, named by their @triton.jit function: the Triton tutorial's _attn_fwd / "
     "_attn_bwd, ROCm flash-attention's and AOTriton's (PyTorch SDPA on ROCm) attn_fwd, bwd_kernel_dk_dv, "
     "bwd_kernel_dq; their tl.dot runs on MMA / MFMA. Anchored: 'flash_attention' inside an Inductor fused "
     "kernel's name (a view's copy) or vLLM's reshape_and_cache_flash is no such kernel"),
    ("blackwell", r"tcgen05|(?<![a-z])umma|sm1[02]\da?_.*(gemm|conv|mma)", "Blackwell 5th-gen Tensor Core kernels"),
    ("low-precision", r"^(?=.*(?:gemm|bmm|matmul|mma|grouped_mm))"
                      r"(?=.*(?:e4m3|e5m2|e[23]m[123]|mxf(?:p)?[468]|mxint8|nvf(?:p)?4|fp8|fp4|f8f6f4|w8a8|w4a\d))",
     "FP8 / FP6 / FP4 and MX-format GEMMs (cutlass / cuBLASLt / trtllm-gen e4m3 and MxE2m1, DeepGEMM and "
     "grouped fp8 GEMMs, Triton matmul_ogs mxfp4): only Tensor Cores / matrix cores multiply these types"),
    ("amd", r"mfma|smfmac|xdl", "AMD CDNA matrix-core kernels (MFMA, composable_kernel XDL)"),
    ("amd", r"igemm_\w*gtcx", "MIOpen implicit-GEMM xdlops convolutions (igemm_fwd_gtcx*)"),
    ("amd", r"cijk_.*_mi\d+x\d+x\d+", "rocBLAS/hipBLASLt Tensile kernels built on MFMA (MI shape)"),
)

_TC_RE = re.compile("|".join(f"(?:{p})" for _, p, _ in TC_KERNEL_PATTERNS), re.IGNORECASE)
#: a kernel whose name gives its math instruction as a CUDA-core FMA (FP32 / FP64 / paired FP16)
_CUDA_CORE_MATH_RE = re.compile(r"(?:^|[^a-z0-9])(?:ffma|dfma|hfma2?)(?:[^a-z0-9]|$)", re.IGNORECASE)
#: the same for FP32 alone: an FFMA kernel, or a SIMT ``sgemm`` (cuBLAS / CUTLASS / cuDNN)
_FP32_CUDA_CORE_RE = re.compile(r"sgemm|(?:^|[^a-z0-9])ffma(?:[^a-z0-9]|$)", re.IGNORECASE)

#: Operators whose math maps onto Tensor Cores (convolutions, matrix products, attention, RNN cells).
TC_ELIGIBLE_OPS: frozenset[str] = frozenset({
    "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution", "aten::_convolution",
    "aten::_convolution_nogroup", "aten::conv_tbc", "aten::conv_transpose1d", "aten::conv_transpose2d",
    "aten::conv_transpose3d", "aten::cudnn_convolution", "aten::cudnn_convolution_transpose",
    "aten::miopen_convolution", "aten::convolution_backward", "aten::cudnn_convolution_backward",
    "aten::cudnn_convolution_backward_input", "aten::cudnn_convolution_backward_weight",
    "aten::cudnn_convolution_transpose_backward", "aten::cudnn_convolution_transpose_backward_input",
    "aten::cudnn_convolution_transpose_backward_weight", "aten::mm", "aten::bmm", "aten::addmm",
    "aten::addmm_", "aten::addmv", "aten::addr", "aten::addbmm", "aten::baddbmm", "aten::matmul",
    "aten::mv", "aten::linear", "aten::_scaled_mm", "aten::chain_matmul", "aten::linalg_multi_dot",
    "aten::prelu", "aten::lstm_cell", "aten::gru_cell", "aten::rnn_tanh_cell", "aten::rnn_relu_cell",
    "aten::_thnn_fused_lstm_cell", "aten::_thnn_fused_gru_cell", "aten::scaled_dot_product_attention",
    "aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention",
    "aten::_scaled_dot_product_cudnn_attention", "aten::_flash_attention_forward",
    "aten::_flash_attention_backward", "aten::_efficient_attention_forward",
    "aten::_efficient_attention_backward",
})
_TC_OP_RE = re.compile(
    r"^(autograd::engine::evaluate_function: )?"
    r"((Cudnn|Miopen|Mkldnn)?Convolution(Transpose)?|Addmm|Addmv|Addbmm|Baddbmm|Bmm|Mm|Mv|Matmul|"
    r"ScaledDotProduct\w*Attention)Backward\d*$")


def is_tc_kernel(name: str) -> bool:
    """True when the kernel name marks a Tensor-Core / matrix-core kernel (and no CUDA-core FMA)."""
    return _TC_RE.search(name) is not None and _CUDA_CORE_MATH_RE.search(name) is None


def is_tc_eligible_op(name: str) -> bool:
    """True when the operator's math could run on Tensor Cores."""
    return name in TC_ELIGIBLE_OPS or _TC_OP_RE.match(name) is not None


def tc_kernel_mask(strings: StringPool) -> npt.NDArray[np.bool_]:
    """Per string id (index with a name column): is it a Tensor-Core kernel name."""
    return strings.mask(is_tc_kernel)


def tc_eligible_mask(strings: StringPool) -> npt.NDArray[np.bool_]:
    """Per string id: is it a Tensor-Core eligible operator name."""
    return strings.mask(is_tc_eligible_op)


def tc_architecture(name: str) -> str | None:
    """The first table row (architecture family) that matches a kernel name, for explanations."""
    if not is_tc_kernel(name):
        return None
    for arch, pat, _ in TC_KERNEL_PATTERNS:
        if re.search(pat, name, re.IGNORECASE):
            return arch
    return None


@dataclass(frozen=True)
class TensorCoreResult:
    """Tensor-Core use of one rank's kernels inside its steps (totals over the steps)."""

    rank: int
    step_count: int  # steps the per-step numbers average over (0 without steps)
    device: str | None
    compute_major: int | None  # compute capability (NVIDIA), None when unknown
    kernel_ns: float  # all kernels
    unlinked_ns: float  # kernels linked to no launching op (a graph replay's): never counted eligible
    eligible_ns: float  # kernels launched by a Tensor-Core eligible op
    tc_eligible_ns: float  # eligible kernels that ran on Tensor Cores
    non_tc_kernels: NamedRows  # eligible kernels that did not
    non_tc_ops: NamedRows  # their eligible ops, each weighted by its kernels' time
    input_types: tuple[str, ...]  # the three most common ``Input type`` texts of those ops
    tf32_kernels: NamedRows  # eligible Tensor-Core kernels on FP32 tensors: TF32 math
    fp32_cuda_core_ns: float  # eligible non-TC kernels doing FP32 math (:func:`_fp32_cuda_core`)
    peak: DevicePeak | None  # the device's row of the peak table (None: unknown device)
    math_attention: MathAttention  # attention on SDPA's math backend (:mod:`.attention_fallback`): not counted above
    #: the non-TC kernels whose eligible op does not already take half-precision tensors (types unknown
    #: included): what autocast would move to Tensor Cores (the ``amp`` what-if); under an op on bf16 tensors
    #: they are the layout transforms and casts around a Tensor-Core convolution, which it would not
    amp_kernels: NamedRows

    @property
    def eligible_pct(self) -> float:
        return pct(self.eligible_ns, self.kernel_ns)

    @property
    def tc_pct_of_eligible(self) -> float:
        return pct(self.tc_eligible_ns, self.eligible_ns)

    @property
    def fp32_cuda_core_pct(self) -> float:
        """FP32 matrix math on CUDA cores, % of all kernel time."""
        return pct(self.fp32_cuda_core_ns, self.kernel_ns)


def has_tensor_core_names(trace: Trace, rank: int) -> bool:
    """Whether the rank's kernel names tell Tensor-Core (NVIDIA) or Matrix-Core (AMD) math from the rest:
    not on an Ascend NPU, whose matrix ops all run on the Cube unit of its AI cores."""
    return platform_of(trace, rank).split("+")[0] != "ascend"


@per_rank
def compute_tensor_cores(trace: Trace, rank: int) -> TensorCoreResult:
    """How much kernel time Tensor-Core eligible ops launch, and how much of it ran on Tensor Cores."""
    k = step_kernels(trace, rank)
    if len(k) == 0:
        raise NotApplicable("no GPU kernels")
    if not has_tensor_core_names(trace, rank):
        raise NotApplicable("an Ascend NPU runs matrix ops on its AI cores' Cube unit, whatever their kernels' "
                            "names: whether one used it is not told by the name")
    dev = trace.device_of_rank(rank)
    if dev is not None and dev.vendor == "nvidia" and dev.compute_major is not None and dev.compute_major < 7:
        raise NotApplicable(f"{dev.name} has no Tensor Cores")
    ev = trace.events
    elig_op = ancestor_with(trace, ev["op"][k].astype(np.int64), tc_eligible_mask(trace.strings))
    eligible = elig_op >= 0
    dur = ev["dur_ns"][k].astype(np.float64)
    tc = tc_kernel_mask(trace.strings)[ev["name"][k]]
    fallback = math_attention(trace, rank)
    eligible &= ~np.isin(k, fallback.rows)  # SDPA's math backend computes in FP32 whatever the inputs' type
    non_tc = eligible & ~tc
    ops = elig_op[non_tc]
    half = _half_inputs(trace, elig_op)
    tf32 = eligible & tc & _fp32_math(trace, k, elig_op)
    fp32_cores = non_tc & _fp32_cuda_core(trace, k)
    return TensorCoreResult(
        rank=rank, step_count=len(kept_steps(trace, rank)), device=dev.name if dev is not None else None,
        compute_major=dev.compute_major if dev is not None else None, kernel_ns=float(dur.sum()),
        unlinked_ns=float(dur[ev["op"][k] < 0].sum()),
        eligible_ns=float(dur[eligible].sum()), tc_eligible_ns=float(dur[eligible & tc].sum()),
        non_tc_kernels=named_rows(trace, k[non_tc]), non_tc_ops=named_rows(trace, ops, ev["dur_ns"][k[non_tc]]),
        input_types=_input_types(trace, ops), tf32_kernels=named_rows(trace, k[tf32]),
        fp32_cuda_core_ns=float(dur[fp32_cores].sum()),
        peak=device_peak(dev), math_attention=fallback,
        amp_kernels=named_rows(trace, k[non_tc & ~half]))


def _half_inputs(trace: Trace, op: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Per kernel: its eligible op takes half-precision tensors (fp16 / bf16 in its recorded ``Input type``)."""
    types = np.where(op >= 0, trace.events["input_types"][np.maximum(op, 0)], -1)
    half = trace.strings.mask(lambda t: "Half" in t or "BFloat16" in t)
    out: npt.NDArray[np.bool_] = (types >= 0) & half[np.maximum(types, 0)]
    return out


def _fp32_math(trace: Trace, k: npt.NDArray[np.int64], op: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Per kernel: its eligible op takes FP32 tensors only (its recorded ``Input type``) — on Tensor
    Cores that is TF32 math; without recorded types, the kernel's name says ``tf32``."""
    ev, pool = trace.events, trace.strings
    types = np.where(op >= 0, ev["input_types"][np.maximum(op, 0)], -1)
    by_types = pool.mask(_fp32_only)[types]
    by_name = pool.mask(_names_tf32)[ev["name"][k]]
    out: npt.NDArray[np.bool_] = np.where(types >= 0, by_types, by_name)
    return out


def _fp32_cuda_core(trace: Trace, k: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Per kernel: FP32 math on CUDA cores — the op that launched it takes FP32 tensors only (its own
    ``Input type``: the cast kernels autocast runs inside a ``linear`` are launched by a ``copy_`` of
    mixed types), or, without recorded types, its name gives an FP32 FMA (``ffma``, ``sgemm``)."""
    ev, pool = trace.events, trace.strings
    op = ev["op"][k]
    types = np.where(op >= 0, ev["input_types"][np.maximum(op, 0)], -1)
    by_types = pool.mask(_fp32_only)[types]
    by_name = pool.mask(_names_fp32_fma)[ev["name"][k]]
    out: npt.NDArray[np.bool_] = np.where(types >= 0, by_types, by_name)
    return out


def _names_fp32_fma(name: str) -> bool:
    return _FP32_CUDA_CORE_RE.search(name) is not None


def _fp32_only(types: str) -> bool:
    """An ``Input type`` text with FP32 tensors and no other floating type (``["float", "float", ""]``)."""
    return '"float"' in types and not any(t in types for t in ("Half", "BFloat16", "Float8", "double"))


def _names_tf32(name: str) -> bool:
    return "tf32" in name.lower()


def _input_types(trace: Trace, ops: npt.NDArray[np.int64]) -> tuple[str, ...]:
    """Distinct ``Input type`` texts of the ops (when shapes were recorded), most common first (ties
    in text order: the same whatever the file's order of events)."""
    ids = trace.events["input_types"][unique(ops)]
    ids = ids[ids >= 0]
    if len(ids) == 0:
        return ()
    uniq, cnt = np.unique(ids, return_counts=True)
    texts = [trace.strings[int(u)] for u in uniq.tolist()]  # a few distinct texts
    return tuple(texts[int(i)] for i in largest_first(cnt, texts)[:3])
