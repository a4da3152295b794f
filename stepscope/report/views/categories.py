"""Terminal view of the op categories: time, share and counts per category, per step, and the
same launchers grouped as TraceLens groups them."""

from __future__ import annotations

import numpy as np
from rich.console import Console

from stepscope.analysis.categories import CategoryView
from stepscope.analysis.gemm_shapes import GemmShapeTable
from stepscope.report.views._deep import ms, pct, table

#: short element types for the GEMM table
DTYPES = {"c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32", "double": "fp64",
          "c10::Float8_e4m3fn": "fp8e4m3", "c10::Float8_e5m2": "fp8e5m2", "signed char": "int8"}
#: column headers of the per-step table, in Category order
SHORT = ("GEMM", "attn", "conv", "elemwise", "norm", "reduce", "comm", "memory", "other")


def render_categories(v: CategoryView, console: Console, top: int) -> None:
    t = v.table
    title = f"rank {v.rank}: op categories (device time {ms(v.total_ns)} ms"
    title += f", {ms(v.unattributed_ns)} ms without a launching op)" if v.unattributed_ns else ")"
    out = table(title, "category", "ops", "kernels/copies", "time ms", "share")
    for i in np.flatnonzero(t.activities > 0):  # per category (nine at most)
        out.add_row(str(t.category[i]), f"{t.ops[i]:,}", f"{t.activities[i]:,}", ms(t.time_ns[i]),
                    pct(t.share_pct[i]))
    console.print(out)
    _steps(v, console, top)
    _gemm(v, console, top)
    tl = v.tracelens
    if len(tl.category):
        parts = [f"{c} {n:,} ({ms(ns)} ms)" for c, n, ns in zip(tl.category, tl.ops.tolist(), tl.time_ns.tolist())]
        console.print("[dim]as TraceLens groups them (launching ops, busy time): " + ", ".join(parts) + "[/dim]")


def _steps(v: CategoryView, console: Console, top: int) -> None:
    if len(v.step) < 2:
        return
    cols = np.flatnonzero(v.step_time_ns.sum(axis=0) > 0)
    longest = np.argsort(-v.step_total_ns(), kind="stable")[:top]
    shown = f"showing the {len(longest)} longest of {len(v.step)} steps" if len(longest) < len(v.step) else "ms"
    out = table(f"rank {v.rank}: op categories per step ({shown})", "step", *[SHORT[c] for c in cols])
    for col in out.columns:
        col.no_wrap, col.overflow = True, "ellipsis"
    for i in np.sort(longest):  # per step shown
        out.add_row(str(v.step[i]), *[ms(v.step_time_ns[i, c]) for c in cols])
    console.print(out)


def _shape(g: GemmShapeTable, i: int) -> str:
    mnk = f"{g.m[i]}×{g.n[i]}×{g.k[i]}"
    return mnk if g.batch[i] == 1 else f"{g.batch[i]}×{mnk}"


def _gemm(v: CategoryView, console: Console, top: int) -> None:
    g = v.gemm
    if len(g.calls) == 0:
        return
    out = table(f"rank {v.rank}: GEMMs per shape (top {min(top, len(g.calls))} of {len(g.calls)})", "op",
                "[B×]M×N×K", "type", "calls", "time ms", "median TFLOP/s", "median TB/s")
    out.columns[1].no_wrap = True
    for i in range(min(top, len(g.calls))):  # per shape shown
        out.add_row(str(g.name[i]).removeprefix("aten::"), _shape(g, i), DTYPES.get(str(g.dtype[i]), str(g.dtype[i])),
                    f"{g.calls[i]:,}", ms(g.time_ns[i]), f"{g.tflops_median[i]:,.1f}", f"{g.tbps_median[i]:,.2f}")
    console.print(out)
    console.print("[dim]median over the calls (the roofline's TFLOP/s: all the calls' FLOPs over their time), "
                  "FLOPs and bytes from the input shapes (JSON: categories.gemm)[/dim]")
