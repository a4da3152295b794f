"""``gemm-dims-not-multiple-of-8``: half-precision GEMMs whose N or K is not a multiple of 8 (SPEC §6).

Detects (needs ``record_shapes``): ``aten::mm`` / ``addmm`` / ``bmm`` / ``baddbmm`` / ``matmul`` /
``linear`` calls with fp16/bf16 inputs whose N or K dimension is not a multiple of ``gemm_align``;
their kernels take at least ``gemm_misaligned_min_pct`` of kernel time. Tensor-Core GEMMs need 16-byte
aligned leading dimensions (8 half values); otherwise cuBLAS falls back to slower kernels. A100 and
newer prefer multiples of 64 (``gemm_align_ampere``) for full tiles.

Helper of our own: M/N/K are parsed once per distinct ``Input Dims`` text; the kernel time of each
call comes from the kernels whose nearest GEMM ancestor op is that call.

Gain: those kernels' time per step × ``gemm_misaligned_recoverable``.
"""

from __future__ import annotations

import json

import numpy as np

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ancestor_with, compact_json, ms, per_step, rank_rows
from stepscope.analysis.base import NotApplicable
from stepscope.model.schema import EventKind
from stepscope.model.uniq import unique

RULE_ID = "gemm-dims-not-multiple-of-8"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("compute",)  # the bounds its change shortens
GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear")
HALF = ("Half", "BFloat16")


def gemm_nk(op: str, dims_text: str) -> tuple[int, int] | None:
    """(N, K) of a GEMM call from its ``Input Dims`` JSON text; None when it cannot tell."""
    try:
        dims = [d for d in json.loads(dims_text) if isinstance(d, list)]
    except (ValueError, TypeError):
        return None
    if op in ("aten::addmm", "aten::baddbmm"):
        dims = dims[1:]
    if len(dims) < 2 or len(dims[0]) < 2 or len(dims[1]) < 1:
        return None
    a, b = dims[0], dims[1]
    if op == "aten::linear":
        return (int(b[0]), int(a[-1])) if len(b) == 2 else None
    return (int(b[-1]), int(a[-1]))


def detect(ctx: RuleContext) -> list[Finding]:
    trace, ev = ctx.trace, ctx.trace.events
    is_gemm = trace.strings.mask(lambda s: s in GEMM_OPS)
    ops = rank_rows(ctx, EventKind.CPU_OP)
    ops = ops[is_gemm[ev["name"][ops]] & (ev["input_dims"][ops] >= 0)]
    if len(ops) == 0:
        raise NotApplicable("no GEMM ops with recorded input shapes (record_shapes=True)")
    half = trace.strings.mask(lambda s: any(h in s for h in HALF))[ev["input_types"][ops]]
    bad = _misaligned(ctx, ops) & half
    k = rank_rows(ctx, EventKind.KERNEL)
    owner = ancestor_with(trace, ev["op"][k].astype(np.int64), is_gemm)
    hit = np.isin(owner, ops[bad])
    total = float(ev["dur_ns"][k].sum())
    bad_ns = float(ev["dur_ns"][k[hit]].sum())
    if not bad.any() or total <= 0 or 100.0 * bad_ns / total < ctx.cfg.gemm_misaligned_min_pct:
        return []
    dev = trace.device_of_rank(ctx.rank) if ctx.rank is not None else None
    multiple = ctx.cfg.gemm_align_ampere if dev is not None and (dev.compute_major or 0) >= 8 else ctx.cfg.gemm_align
    shapes = unique(ev["input_dims"][ops[bad]])[:5]
    evidence = {"misaligned_calls": int(bad.sum()), "misaligned_kernel_pct": round(100.0 * bad_ns / total, 2),
                "misaligned_ms": ms(per_step(ctx, bad_ns)), "align": ctx.cfg.gemm_align,
                "example_shapes": [compact_json(trace.strings[int(s)]) for s in shapes.tolist()]}
    return [ctx.finding(RULE_ID, per_step(ctx, bad_ns) * ctx.cfg.gemm_misaligned_recoverable, "misaligned-share",
                        evidence, Change("pad-gemm-dims", {"multiple": multiple}))]


def _misaligned(ctx: RuleContext, ops: np.ndarray) -> np.ndarray:
    """Per op row: N or K not a multiple of ``gemm_align`` (decided once per distinct shape text)."""
    ev, pool = ctx.trace.events, ctx.trace.strings
    pairs, inv = np.unique(np.stack([ev["name"][ops], ev["input_dims"][ops]]), axis=1, return_inverse=True)
    align = ctx.cfg.gemm_align
    verdict = np.zeros(pairs.shape[1], dtype=bool)
    for j, (name_id, dims_id) in enumerate(pairs.T.tolist()):  # per distinct (op, shape), not per event
        nk = gemm_nk(pool[name_id], pool[dims_id])
        verdict[j] = nk is not None and (nk[0] % align != 0 or nk[1] % align != 0)
    return verdict[np.asarray(inv).reshape(-1)]
