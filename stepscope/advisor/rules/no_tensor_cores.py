"""``no-tensor-cores``: GEMM / convolution time runs in FP32 without Tensor Cores (SPEC §6; TB plugin).

Detects: kernels launched by Tensor-Core-eligible operators (convolutions, matrix products,
attention: :data:`stepscope.analysis.tensor_cores.TC_ELIGIBLE_OPS`, the launching op or any op above
it) take at least ``tc_eligible_min_pct`` of kernel time, and at most ``tc_max_used_pct`` of that
eligible time runs in Tensor-Core kernels (kernel-name table of the same module). This is the TB
plugin's "Kernels with N% time are launched by Tensor Cores eligible operators" recommendation.

Helper of our own: the eligible-kernel time needs each kernel's nearest eligible ancestor op, which
no view returns per kernel; computed here, vectorised over nesting levels.

Gain: eligible non-TC kernel time per step × (1 − 1 / ``amp_speedup``) — the GEMM/conv time mixed
precision (or TF32 on Ampere+) would save at a conservative 2× on those kernels.

Change: ``torch.autocast`` with bf16 on compute capability ≥ 8.0 (and TF32 as the one-line
alternative), fp16 + GradScaler before that. When the eligible ops already take half inputs, the
missing Tensor Cores point to shapes instead (see ``gemm-dims-not-multiple-of-8``).
"""

from __future__ import annotations

import numpy as np

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ancestor_with, ms, per_step, rank_rows, top_names
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.tensor_cores import tc_eligible_mask, tc_kernel_mask
from stepscope.model.schema import EventKind
from stepscope.model.uniq import unique

RULE_ID = "no-tensor-cores"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("compute",)  # the bounds its change shortens
HALF_TYPES = ("Half", "BFloat16", "c10::Half", "c10::BFloat16", "float16", "bfloat16")


def detect(ctx: RuleContext) -> list[Finding]:
    trace = ctx.trace
    ev = trace.events
    k = rank_rows(ctx, EventKind.KERNEL)
    if len(k) == 0:
        raise NotApplicable("no GPU kernels")
    dev = trace.device_of_rank(ctx.rank) if ctx.rank is not None else None
    if dev is not None and dev.vendor == "nvidia" and dev.compute_major is not None and dev.compute_major < 7:
        raise NotApplicable(f"{dev.name} has no Tensor Cores")
    elig_op = ancestor_with(trace, ev["op"][k].astype(np.int64), tc_eligible_mask(trace.strings))
    eligible = elig_op >= 0
    dur = ev["dur_ns"][k].astype(np.float64)
    tc = tc_kernel_mask(trace.strings)[ev["name"][k]]
    total, elig_ns = float(dur.sum()), float(dur[eligible].sum())
    elig_pct = 100.0 * elig_ns / total if total > 0 else 0.0
    tc_pct = 100.0 * float(dur[eligible & tc].sum()) / elig_ns if elig_ns > 0 else 0.0
    if elig_pct < ctx.cfg.tc_eligible_min_pct or tc_pct > ctx.cfg.tc_max_used_pct:
        return []
    non_tc = eligible & ~tc
    ops = elig_op[non_tc]
    n = max(len(ctx.steps), 1)
    types = _input_types(ctx, ops)
    evidence = {
        "eligible_kernel_pct": round(elig_pct, 2), "tensor_core_pct_of_eligible": round(tc_pct, 2),
        "eligible_non_tc_ms": ms(per_step(ctx, float(dur[non_tc].sum()))),
        "kernel_ms": ms(per_step(ctx, total)),
        "top_ops": _top_ops(ctx, ops, dur[non_tc], n),
        "top_kernels": top_names(trace, k[non_tc], per=n),
        "input_types": types,
        "device": dev.name if dev is not None else None, "amp_speedup": ctx.cfg.amp_speedup,
    }
    gain = per_step(ctx, float(dur[non_tc].sum())) * (1.0 - 1.0 / max(ctx.cfg.amp_speedup, 1.0))
    return [ctx.finding(RULE_ID, gain, "amp-speedup", evidence, _change(ctx, types))]


def _top_ops(ctx: RuleContext, ops: np.ndarray, dur: np.ndarray, n: int) -> list[dict[str, object]]:
    trace = ctx.trace
    names = trace.events["name"][ops]
    uniq, inv = np.unique(names, return_inverse=True)
    tot = np.bincount(inv, weights=dur, minlength=len(uniq))
    order = np.argsort(-tot, kind="stable")[:5]
    return [{"name": trace.strings[int(uniq[i])], "ms": ms(tot[i] / n)} for i in order.tolist()]


def _input_types(ctx: RuleContext, ops: np.ndarray) -> list[str]:
    """Distinct ``Input type`` texts of the eligible ops (when shapes were recorded), most common first."""
    ids = ctx.trace.events["input_types"][unique(ops)]
    ids = ids[ids >= 0]
    if len(ids) == 0:
        return []
    uniq, cnt = np.unique(ids, return_counts=True)
    return [ctx.trace.strings[int(u)] for u in uniq[np.argsort(-cnt, kind="stable")][:3].tolist()]


def _change(ctx: RuleContext, input_types: list[str]) -> Change:
    dev = ctx.trace.device_of_rank(ctx.rank) if ctx.rank is not None else None
    ampere = dev is not None and dev.compute_major is not None and dev.compute_major >= 8
    if input_types and all(any(h in t for h in HALF_TYPES) for t in input_types):
        return Change("pad-shapes-for-tensor-cores", {"multiple": ctx.cfg.gemm_align_ampere if ampere
                                                      else ctx.cfg.gemm_align})
    if ampere:
        return Change("enable-amp", {"dtype": "bfloat16", "grad_scaler": False, "tf32": True})
    return Change("enable-amp", {"dtype": "float16", "grad_scaler": True, "tf32": False})
