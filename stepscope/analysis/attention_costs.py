"""FLOPs and bytes of scaled-dot-product attention ops from their recorded shapes (TraceLens's
``SDPA`` perf model, AMD-AGI/TraceLens ``PerfModel/perf_model.py``).

With B batch, H_Q / H_KV query / key-value heads, N_Q / N_KV sequence lengths, d_qk / d_v head dims:

* forward FLOPs = B·H_Q·(2·N_Q·N_KV·d_qk + 2·N_Q·N_KV·d_v) (QKᵀ and PV; softmax left out), halved
  when causal (only N_Q == N_KV: a causal mask over unequal lengths is left unknown);
* backward FLOPs = B·H_Q·2·N_Q·N_KV·(d_qk [recompute QKᵀ] + d_v [dV] + d_v [dP] + d_qk [dQ] + d_qk [dK])
  plus the GQA head reductions B·N_KV·(d_v + d_qk)·(H_Q/H_KV − 1), halved when causal; every fused
  backward kernel recomputes QKᵀ (TraceLens's ``flash_impl``);
* bytes forward = (Q + K + V + O) elements × element size; backward = (Q + K + V + dO + dQ + dK + dV).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AttentionSpec:
    """Where an attention op keeps its arguments."""

    q: int  # index of the query in Input Dims (key and value follow it)
    bnhd: bool  # tensors laid out (B, N, H, d) rather than (B, H, N, d)
    causal: int  # index of is_causal (or the custom mask type) in Concrete Inputs
    backward: bool


_BHND_FWD = {n: AttentionSpec(0, False, c, False) for n, c in (
    ("aten::scaled_dot_product_attention", 5), ("aten::_scaled_dot_product_flash_attention", 4),
    ("aten::_scaled_dot_product_efficient_attention", 6), ("aten::_scaled_dot_product_cudnn_attention", 6),
    ("aten::_scaled_dot_product_flash_attention_for_cpu", 4))}
_BHND_BWD = {n: AttentionSpec(1, False, c, True) for n, c in (
    ("aten::_scaled_dot_product_flash_attention_backward", 11),
    ("aten::_scaled_dot_product_efficient_attention_backward", 11),
    ("aten::_scaled_dot_product_cudnn_attention_backward", 14))}
_BNHD = {"aten::_flash_attention_forward": AttentionSpec(0, True, 8, False),
         "aten::_efficient_attention_forward": AttentionSpec(0, True, 9, False),
         "flash_attn::_flash_attn_forward": AttentionSpec(0, True, 5, False),
         "FlashAttnFunc": AttentionSpec(0, True, 5, False),
         "aten::_flash_attention_backward": AttentionSpec(1, True, 11, True),
         "aten::_efficient_attention_backward": AttentionSpec(1, True, 14, True),
         "flash_attn::_flash_attn_backward": AttentionSpec(1, True, 11, True)}
#: op name → where its arguments are
ATTENTION_OPS: dict[str, AttentionSpec] = {**_BHND_FWD, **_BHND_BWD, **_BNHD}


@dataclass(frozen=True)
class AttentionShape:
    """One attention call's parameters, as TraceLens's SDPA tables name them."""

    b: int
    n_q: int
    h_q: int
    n_kv: int
    h_kv: int
    d_qk: int
    d_v: int
    causal: bool
    backward: bool
    dtype: str

    def flops(self) -> float | None:
        if self.causal and self.n_q != self.n_kv:
            return None
        qk, pv = 2 * self.n_q * self.n_kv * self.d_qk, 2 * self.n_q * self.n_kv * self.d_v
        if not self.backward:
            total = float(self.b * self.h_q * (qk + pv))
        else:
            gqa = self.b * self.n_kv * (self.d_v + self.d_qk) * (self.h_q // max(self.h_kv, 1) - 1)
            total = float(self.b * self.h_q * (3 * qk + 2 * pv) + gqa)
        return total / 2 if self.causal else total

    def elements(self) -> int:
        q, o = self.b * self.n_q * self.h_q * self.d_qk, self.b * self.n_q * self.h_q * self.d_v
        k, v = self.b * self.n_kv * self.h_kv * self.d_qk, self.b * self.n_kv * self.h_kv * self.d_v
        return q + k + v + o + (q + k + v if self.backward else 0)


def _truthy(text: Any) -> bool | None:
    """is_causal as recorded: 'True' / 'False', or a mask type number (0 none, else causal)."""
    s = str(text).strip().lower()
    if s in ("true", "false"):
        return s == "true"
    try:
        return float(s) != 0.0
    except ValueError:
        return None


def attention_shape(name: str, dims: list[Any], types: list[Any], concrete: list[Any] | None) -> AttentionShape | None:
    """The parameters of one attention call, None when its shapes or flags do not say."""
    spec = ATTENTION_OPS.get(name)
    if spec is None or len(dims) < spec.q + 3:
        return None
    q, k, v = dims[spec.q:spec.q + 3]
    if not all(isinstance(t, list) and len(t) == 4 for t in (q, k, v)):
        return None
    order = (0, 2, 1, 3) if spec.bnhd else (0, 1, 2, 3)
    (b, h_q, n_q, d_qk), (_, h_kv, n_kv, _), (_, _, _, d_v) = ([int(t[i]) for i in order] for t in (q, k, v))
    causal = _truthy(concrete[spec.causal]) if concrete is not None and len(concrete) > spec.causal else None
    dtype = str(types[spec.q]) if len(types) > spec.q else ""
    if causal is None or not dtype:
        return None
    return AttentionShape(b, n_q, h_q, n_kv, h_kv, d_qk, d_v, causal, spec.backward, dtype)


def attention_cost(name: str, dims: list[Any], types: list[Any], concrete: list[Any] | None,
                   element_bytes: int) -> tuple[float, float] | None:
    """(FLOPs, bytes) of one attention call, None when unknown."""
    shape = attention_shape(name, dims, types, concrete)
    flops = shape.flops() if shape is not None else None
    if shape is None or flops is None or not math.isfinite(flops) or element_bytes <= 0:
        return None
    return flops, float(shape.elements() * element_bytes)
