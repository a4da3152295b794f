"""The name families of the op categories: which operator names and which kernel names are GEMM,
attention, convolution, normalisation, reduction or elementwise.

Two tables, each matched case-insensitively, first match wins, decided once per distinct name
(:meth:`~stepscope.model.strings.StringPool.map`):

* :data:`OP_FAMILIES` — the launching operator's name (``aten::addmm``, ``AddmmBackward0``,
  ``flash_attn::_flash_attn_forward``, ``aten::cudnn_convolution``, ``aten::native_layer_norm`` ...).
  An operator the table names gives its category to every kernel it launches (a cuBLAS split-K
  reduce under ``aten::addmm`` is GEMM time).
* :data:`KERNEL_FAMILIES` — the kernel's own name, for kernels whose operator the table does not
  name or that have no operator (``cutlass``/``Cijk_``/``nvjet`` → GEMM, ``flash``/``fmha`` →
  attention, ``winograd``/``dgrad``/``implicit_convolve`` → convolution, ``bn_fw``/``layer_norm`` →
  normalisation, ``reduce_kernel``/``softmax`` → reduction, ``elementwise``/``triton_poi`` →
  elementwise).

Communication and memory are not name families here: they are the device activity classes of
:mod:`stepscope.analysis.activity` (communication kernels, copies, memsets), so a kernel is
communication in this table exactly when it is in every other view.

Ops whose device work depends on where the tensors live (``aten::copy_``, ``aten::to``,
``aten::clone``) are deliberately absent from the op table: a copy between devices is memory, a
casting copy on the device is an elementwise kernel, and the rows say which.
"""

from __future__ import annotations

import re
from enum import IntEnum


class Category(IntEnum):
    """An op category (the order of the tables)."""

    GEMM = 0
    ATTENTION = 1
    CONVOLUTION = 2
    ELEMENTWISE = 3
    NORMALISATION = 4
    REDUCTION = 5
    COMMUNICATION = 6
    MEMORY = 7
    OTHER = 8


#: category names as reports and the JSON document spell them, in :class:`Category` order
CATEGORY_NAMES: tuple[str, ...] = ("GEMM", "attention", "convolution", "elementwise", "normalisation",
                                   "reduction", "communication", "memory", "other")

_POINTWISE = (
    "abs|acos|acosh|add|addcdiv|addcmul|asin|atan|atan2|bitwise_and|bitwise_not|bitwise_or|bitwise_xor|"
    "ceil|clamp|clamp_max|clamp_min|cos|cosh|div|elu|eq|erf|erfinv|exp|exp2|expm1|fill|floor|fmod|frac|"
    "ge|gelu|gelu_backward|gt|hardsigmoid|hardswish|hardtanh|isinf|isnan|le|leaky_relu|lerp|log|log10|"
    "log1p|log2|logical_and|logical_not|logical_or|lt|masked_fill|maximum|minimum|mish|mul|ne|neg|"
    "nan_to_num|pow|reciprocal|relu|relu6|remainder|round|rsqrt|rsub|sigmoid|sigmoid_backward|sign|"
    "silu|silu_backward|sin|sinh|softplus|sqrt|square|sub|tan|tanh|tanh_backward|threshold|"
    "threshold_backward|trunc|where|xlogy|zero|_foreach_\\w+|_fused_adamw?|_fused_sgd")
_REDUCTIONS = (
    "all|amax|amin|aminmax|any|argmax|argmin|count_nonzero|cummax|cummin|cumprod|cumsum|logcumsumexp|"
    "logsumexp|max|mean|median|min|mode|nanmean|nanmedian|nansum|norm|linalg_norm|linalg_vector_norm|"
    "frobenius_norm|prod|std|std_mean|sum|var|var_mean|topk|_softmax|softmax|_log_softmax|log_softmax|"
    "_softmax_backward_data|_log_softmax_backward_data|_safe_softmax")

#: Ascend CANN operator APIs (``aclnn<Op>[V<n>]``, ``aclnnInplace<Op>``), the PyTorch op's name in CamelCase
_ACLNN = r"^aclnn(?:Inplace)?(?:{})(?:V\d+)?$"
_ACLNN_POINTWISE = (
    "Foreach[A-Za-z]+|Adds?|Subs?|Muls?|Divs?|Relu|Gelu|GeluBackward|Silu|SiluBackward|Sigmoid|SigmoidBackward|"
    "Tanh|TanhBackward|Exp|Log|Sqrt|Rsqrt|Pow[A-Za-z]*|Neg|Abs|Cast|Fill[A-Za-z]*|Zero|Dropout[A-Za-z]*|"
    "MaskedFill[A-Za-z]*|ThresholdBackward|Clamp[A-Za-z]*|Where|Eq[A-Za-z]*|Ne[A-Z][A-Za-z]*|Gt[A-Za-z]*|"
    "Ge[A-Z][A-Za-z]*|Lt[A-Za-z]*|Le[A-Z][A-Za-z]*|Addcmul|Addcdiv|Lerp")
_ACLNN_REDUCTIONS = "Reduce[A-Za-z]*|Sum|Mean|Amax|Amin|Max|Min|ArgMax|ArgMin|Softmax[A-Za-z]*|LogSoftmax[A-Za-z]*|" \
                    "Cumsum|Norm|Prod|Any|All"

#: (category, regex) over operator names; first match wins.
OP_FAMILIES: tuple[tuple[Category, str], ...] = (
    (Category.ATTENTION, r"attention|attn|fmha|(?<![a-z])mha(?![a-z])|sdpa|flash|_and_cache"),
    (Category.CONVOLUTION, r"convolution|conv_?(?:transpose)?[123]d|conv_tbc|convbias|causal_conv1d"),
    (Category.GEMM, r"^aten::(?:mm|addmm|bmm|baddbmm|addbmm|matmul|linear|addmv|mv|addr|dot|vdot|chain_matmul|"
                    r"linalg_multi_dot|_scaled_mm|_scaled_grouped_mm|_grouped_mm|_int_mm|_addmm_activation)_?$"
                    r"|^(?:autograd::engine::evaluate_function: )?(?:Mm|Addmm|Bmm|Baddbmm|Addbmm|Mv|Addmv|Matmul|"
                    r"Linear|Dot)Backward\d*$|gemm|gemv|matmul|(?:::|_)b?mm$"),
    (Category.NORMALISATION, r"(?:batch|layer|group|instance|rms|local_response|weight)_?norm"),
    (Category.REDUCTION, rf"^aten::(?:{_REDUCTIONS})_?$|{_ACLNN.format(_ACLNN_REDUCTIONS)}"),
    (Category.ELEMENTWISE, rf"^aten::(?:{_POINTWISE})_?$|^triton_poi_|{_ACLNN.format(_ACLNN_POINTWISE)}"),
    (Category.REDUCTION, r"^triton_(?:red|per)_"),
)

#: (category, regex) over kernel names, for kernels whose op the op table does not name; first match wins.
KERNEL_FAMILIES: tuple[tuple[Category, str], ...] = (
    (Category.ATTENTION, r"flash|fmha|attention|attn|(?<![a-z])mha_|paged_?attention"),
    (Category.NORMALISATION, r"(?:batch|layer|group|instance|rms)_?norm|(?<![a-z])bn_(?:fw|bw)|batchnorm"),
    (Category.CONVOLUTION, r"conv(?:olution|olve|_?[123]d|_)|winograd|dgrad|wgrad|fprop|im2col|col2im|scudnn"
                           r"|igemm_(?:fwd|bwd|wrw)"),
    (Category.GEMM, r"gemm|gemv|gmma|cublas|(?<![a-z])cijk_|nvjet|matmul|dot_kernel|splitkreduce|wmma|mfma"
                    r"|(?<![a-z])[sdhcz]?b?mm(?![a-z])"),
    (Category.REDUCTION, r"(?<!all)(?<!all_)reduc(?:e|tion)(?!_?scatter)|softmax|logsumexp|argmax|argmin"
                         r"|cumsum|cumprod|scan|topk|triton_(?:red|per)_"),
    (Category.ELEMENTWISE, r"elementwise|pointwise|triton_poi_|multi_tensor_apply|fillfunctor"),
)

_OP_RES = tuple((c, re.compile(p, re.IGNORECASE)) for c, p in OP_FAMILIES)
_KERNEL_RES = tuple((c, re.compile(p, re.IGNORECASE)) for c, p in KERNEL_FAMILIES)


def op_family(name: str) -> int:
    """The category an operator name names, -1 when it names none."""
    for cat, pat in _OP_RES:
        if pat.search(name):
            return int(cat)
    return -1


def kernel_family(name: str) -> int:
    """The category a kernel name names, OTHER when it names none."""
    for cat, pat in _KERNEL_RES:
        if pat.search(name):
            return int(cat)
    return int(Category.OTHER)
