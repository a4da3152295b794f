"""FLOPs and bytes moved of each operator call: the trace's ``flops`` arg where the profiler recorded
one (``with_flops=True``), else computed from the recorded input shapes and types for GEMMs,
convolutions and attention; bytes from the shapes (inputs read + outputs written).

* GEMM (``mm``, ``addmm``, ``_scaled_mm``, ``bmm``, ``baddbmm``): TraceLens's model, as
  :mod:`stepscope.analysis.gemm_shapes`; ``linear`` (input [..., K], weight [N, K], bias [N]) and
  ``matmul`` (broadcast batch) the same model on their own shapes;
* convolution: :mod:`stepscope.analysis.conv_costs`; attention: :mod:`stepscope.analysis.attention_costs`;
* any other op with a recorded ``flops`` (PyTorch counts ``aten::mul`` / ``add`` as one FLOP per
  output element): bytes = its tensor inputs + one output of their broadcast shape, in the widest
  input type (an elementwise op's traffic).

Each distinct (name, shapes, types, concrete inputs) is costed once; rows take their key's cost.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis._groups import group_keys
from stepscope.analysis.attention_costs import ATTENTION_OPS, attention_cost
from stepscope.analysis.comm import dtype_bytes
from stepscope.analysis.conv_costs import CONV_OPS, conv_cost
from stepscope.analysis.gemm_shapes import GEMM_OPS, gemm_shape
from stepscope.model.trace import Trace

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
S = npt.NDArray[np.object_]

#: the op kinds costed from shapes, and "recorded" for ops only the profiler's count covers
KINDS = ("GEMM", "convolution", "attention", "recorded")
_EXTRA_BYTES = {"signed char": 1, "unsigned char": 1, "c10::float8_e4m3fn": 1, "c10::float8_e5m2": 1,
                "c10::float8_e4m3fnuz": 1, "c10::float8_e5m2fnuz": 1, "c10::complexfloat": 8, "c10::complexdouble": 16}


def element_bytes(torch_type: str) -> int:
    """Element size of a PyTorch "Input type" string, -1 when unknown."""
    size = dtype_bytes(torch_type) if torch_type and not torch_type.startswith("[") else -1
    return size if size > 0 else _EXTRA_BYTES.get(torch_type.lower(), -1)


@dataclass(frozen=True)
class Cost:
    kind: str  # one of KINDS
    flops: float
    nbytes: float  # NaN when the shapes do not say
    dtype: str  # the compute type: the first operand's "Input type"


def _linear(dims: list[Any], size: int) -> tuple[float, float] | None:
    x, w = dims[0], dims[1]
    if not (isinstance(x, list) and isinstance(w, list) and len(x) >= 1 and len(w) == 2):
        return None
    m, k, n = math.prod(x[:-1]), int(x[-1]), int(w[0])
    bias = len(dims) > 2 and isinstance(dims[2], list) and len(dims[2]) > 0
    flops = 2 * m * n * k + (m * n if bias else 0)
    return float(flops), float((m * k + k * n + m * n + (n if bias else 0)) * size)


def _matmul(dims: list[Any], size: int) -> tuple[float, float] | None:
    a, b = dims[0], dims[1]
    if not (isinstance(a, list) and isinstance(b, list) and a and b):
        return None
    a2, b2 = (a if len(a) > 1 else [1, *a]), (b if len(b) > 1 else [*b, 1])
    try:
        batch = math.prod(np.broadcast_shapes(tuple(a2[:-2]), tuple(b2[:-2])))
    except ValueError:
        return None
    m, k, n = int(a2[-2]), int(a2[-1]), int(b2[-1])
    return float(2 * batch * m * n * k), float((math.prod(a) + math.prod(b) + batch * m * n) * size)


def _gemm(name: str, dims: list[Any], dims_text: str, types_text: str, size: int) -> tuple[float, float] | None:
    if name == "aten::linear":
        return _linear(dims, size) if len(dims) >= 2 else None
    if name == "aten::matmul":
        return _matmul(dims, size) if len(dims) >= 2 else None
    shape = gemm_shape(name, dims_text, types_text)
    if shape is None:
        return None
    b, m, n, k, bias, _, size = shape
    return float(b * (2 * m * n * k + (m * n if bias else 0))), float(b * (m * k + k * n + m * n) * size
                                                                      + (n * size if bias else 0))


def elementwise_bytes(dims: list[Any], types: list[Any]) -> float:
    """Tensor inputs read + one output of their broadcast shape in the widest type; NaN when unknown."""
    tensors = [(d, element_bytes(str(t))) for d, t in zip(dims, types) if isinstance(d, list) and d]
    if not tensors or any(s <= 0 for _, s in tensors):
        return float("nan")
    try:
        out = math.prod(np.broadcast_shapes(*(tuple(int(v) for v in d) for d, _ in tensors)))
    except ValueError:
        return float("nan")
    return float(sum(math.prod(d) * s for d, s in tensors) + out * max(s for _, s in tensors))


def _json(text: str) -> list[Any] | None:
    try:
        got = json.loads(text) if text else None
    except ValueError:
        return None
    return got if isinstance(got, list) else None


def _first_type(dims: list[Any], types: list[Any], at: int) -> str:
    return str(types[at]) if at < len(types) and at < len(dims) else ""


def shape_cost(name: str, dims_text: str, types_text: str, concrete_text: str) -> Cost | None:
    """The cost of one call computed from its shapes, None when it is not a costed op or they do not say."""
    dims, types, concrete = _json(dims_text), _json(types_text), _json(concrete_text)
    if dims is None or types is None:
        return None
    got: tuple[float, float] | None = None
    if name in GEMM_OPS or name in ("aten::linear", "aten::matmul"):
        kind, at = "GEMM", GEMM_OPS.get(name, (0, False, False))[0]
        got = _gemm(name, dims, dims_text, types_text, element_bytes(_first_type(dims, types, at)))
    elif name in CONV_OPS:
        kind, at = "convolution", CONV_OPS[name].x
        got = conv_cost(name, dims, concrete, element_bytes(_first_type(dims, types, at)))
    elif name in ATTENTION_OPS:
        kind, at = "attention", ATTENTION_OPS[name].q
        got = attention_cost(name, dims, types, concrete, element_bytes(_first_type(dims, types, at)))
    if got is None or not got[0] > 0:
        return None
    return Cost(kind, got[0], got[1], _first_type(dims, types, at))


def costed_name(name: str) -> bool:
    """Whether an op name is one whose cost the shapes give."""
    return name in GEMM_OPS or name in CONV_OPS or name in ATTENTION_OPS or name in ("aten::linear", "aten::matmul")


@dataclass(frozen=True)
class RowCosts:
    """Cost of each of some op rows (NaN FLOPs: unknown)."""

    flops: F64
    nbytes: F64
    kind: I64  # index into KINDS, -1 unknown
    dtype: S  # "Input type" of the compute operand ('' unknown)
    recorded: npt.NDArray[np.bool_]  # FLOPs from the trace's flops arg


def _recorded_cost(dims_text: str, types_text: str) -> tuple[float, str]:
    dims, types = _json(dims_text) or [], _json(types_text) or []
    first = next((str(t) for d, t in zip(dims, types) if isinstance(d, list) and d), "")
    return elementwise_bytes(dims, types), first


def row_costs(trace: Trace, rows: I64) -> RowCosts:
    """FLOPs and bytes of op ``rows``: recorded ``flops`` first, else from the shapes (each distinct key once)."""
    ev, pool = trace.events, trace.strings

    def lookup(i: int) -> str:
        return pool[int(i)] if i >= 0 else ""

    recorded_flops = ev["flops"][rows]
    recorded = np.isfinite(recorded_flops) & (recorded_flops > 0)
    keys, inv = group_keys(ev["name"][rows], ev["input_dims"][rows], ev["input_types"][rows],
                           ev["concrete_inputs"][rows], recorded)
    n = len(keys[0])
    flops, nbytes, kind = np.full(n, np.nan), np.full(n, np.nan), np.full(n, -1, np.int64)
    dtype = np.full(n, "", dtype=object)
    for j, (nm, d, t, c, rec) in enumerate(zip(*(k.tolist() for k in keys))):  # per distinct key
        dims_text, types_text = lookup(d), lookup(t)
        cost = shape_cost(lookup(nm), dims_text, types_text, lookup(c))
        if cost is not None:
            flops[j], nbytes[j], kind[j], dtype[j] = cost.flops, cost.nbytes, KINDS.index(cost.kind), cost.dtype
        elif rec:
            nbytes[j], dtype[j] = _recorded_cost(dims_text, types_text)
            kind[j] = KINDS.index("recorded")
    out_flops = np.where(recorded, recorded_flops, flops[inv])
    return RowCosts(out_flops, nbytes[inv], kind[inv], dtype[inv], recorded)
