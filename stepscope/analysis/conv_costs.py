"""FLOPs and bytes of convolutions from their recorded shapes (TraceLens's ``CONV`` perf model, itself
PyTorch's ``torch/utils/flop_counter.py``).

With x the input, w the weight ([C_out, C_in / groups, k…]) and y the output (its spatial size from
stride, padding and dilation, read from Concrete Inputs):

* forward FLOPs = 2 · |y| · |w[1:]| (+ |y| with a bias); a transposed convolution 2 · |x| · |w[1:]|;
  bytes = (|x| + |w| + C_out if bias + |y|) × element size;
* ``aten::convolution_backward`` (grad of the input and of the weight): FLOPs twice the forward's
  matrix work (+ |y| for the bias gradient), bytes 2 · (|x| + |w| + |y|) (+ |y| + C_out for the bias).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ConvSpec:
    """Where a convolution op keeps its arguments (-1: not an argument of that op)."""

    x: int  # index of the input tensor in Input Dims (weight follows)
    bias: int
    stride: int
    padding: int
    dilation: int
    transposed: int
    backward: bool = False


_ATEN = ConvSpec(0, 2, 3, 4, 5, 6)
#: op name → where its arguments are
CONV_OPS: dict[str, ConvSpec] = {
    "aten::conv1d": ConvSpec(0, 2, 3, 4, 5, -1), "aten::conv2d": ConvSpec(0, 2, 3, 4, 5, -1),
    "aten::conv3d": ConvSpec(0, 2, 3, 4, 5, -1), "aten::convolution": _ATEN, "aten::_convolution": _ATEN,
    "aten::cudnn_convolution": ConvSpec(0, -1, 3, 2, 4, -1), "aten::miopen_convolution": ConvSpec(0, 2, 4, 3, 5, -1),
    "aten::mkldnn_convolution": ConvSpec(0, 2, 4, 3, 5, -1),
    "aten::convolution_backward": ConvSpec(1, 3, 4, 5, 6, 7, backward=True),
}


def _ints(text: Any, n: int, default: int) -> tuple[int, ...] | None:
    """A stride / padding / dilation argument as n integers ('[1, 1]', '1', '' → default); None when
    it is not numbers ('same' padding is handled by the caller)."""
    s = str(text).strip().strip("[]()")
    if not s:
        return (default,) * n
    try:
        vals = tuple(int(v) for v in s.split(",") if v.strip())
    except ValueError:
        return None
    if len(vals) == 1:
        return vals * n
    return vals if len(vals) == n else None


def _arg(concrete: list[Any], i: int) -> Any:
    return concrete[i] if 0 <= i < len(concrete) else ""


def _out_spatial(x: list[int], w: list[int], spec: ConvSpec, concrete: list[Any]) -> list[int] | None:
    n = len(x) - 2
    pad_text = str(_arg(concrete, spec.padding)).strip().strip("'\"")
    stride, dilation = _ints(_arg(concrete, spec.stride), n, 1), _ints(_arg(concrete, spec.dilation), n, 1)
    transposed = str(_arg(concrete, spec.transposed)).strip().lower() == "true"
    if stride is None or dilation is None:
        return None
    if pad_text == "same":
        return list(x[2:])
    padding = (0,) * n if pad_text == "valid" else _ints(pad_text, n, 0)
    if padding is None:
        return None
    if transposed:  # output_padding is not counted (TraceLens reads it; it changes one row or column)
        return [(i - 1) * s - 2 * p + d * (k - 1) + 1 for i, k, s, p, d in zip(x[2:], w[2:], stride, padding, dilation)]
    return [(i + 2 * p - d * (k - 1) - 1) // s + 1 for i, k, s, p, d in zip(x[2:], w[2:], stride, padding, dilation)]


def conv_cost(name: str, dims: list[Any], concrete: list[Any] | None, element_bytes: int) -> tuple[float, float] | None:
    """(FLOPs, bytes) of one convolution call, None when its shapes or arguments do not say."""
    spec = CONV_OPS.get(name)
    if spec is None or concrete is None or len(dims) < spec.x + 2 or element_bytes <= 0:
        return None
    x, w = dims[spec.x], dims[spec.x + 1]
    if not (isinstance(x, list) and isinstance(w, list) and 3 <= len(x) == len(w) <= 5):
        return None
    spatial = _out_spatial([int(v) for v in x], [int(v) for v in w], spec, concrete)
    if spatial is None or min(spatial, default=1) <= 0:
        return None
    transposed = str(_arg(concrete, spec.transposed)).strip().lower() == "true"
    y = [int(x[0]), int(w[1] if transposed else w[0]), *spatial]
    bias_dims = dims[spec.bias] if 0 <= spec.bias < len(dims) else []
    bias_text = str(_arg(concrete, spec.bias)).strip() if spec.backward else ""  # bias_sizes: an int list
    bias = (isinstance(bias_dims, list) and len(bias_dims) > 0) or bias_text not in ("", "None", "[]")
    nx, nw, ny = math.prod(int(v) for v in x), math.prod(int(v) for v in w), math.prod(y)
    matrix = 2 * (nx if transposed else ny) * math.prod(int(v) for v in w[1:])
    if spec.backward:
        flops = 2 * matrix + (ny if bias else 0)
        elements = 2 * (nx + nw + ny) + (ny + y[1] if bias else 0)
    else:
        flops = matrix + (ny if bias else 0)
        elements = nx + nw + ny + (y[1] if bias else 0)
    return float(flops), float(elements * element_bytes)
