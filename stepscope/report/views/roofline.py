"""Terminal view of the roofline: the device and its peaks, MFU per step with the FLOPs coverage,
the op shapes with their FLOPs, rates, intensity and bound, the kernels, and TraceLens's SDPA rows.
Fits 80 columns: op names and shapes are cut, numbers kept."""

from __future__ import annotations

import math

import numpy as np
from rich.console import Console
from rich.table import Table

from stepscope.analysis.roofline import RooflineView
from stepscope.report.views._deep import ms, step_label, table

BOUND = {"compute": "comp", "memory": "mem"}


def _num(v: float, fmt: str = ",.1f") -> str:
    return "-" if v is None or not math.isfinite(v) else format(v, fmt)


def _cut(out: Table, width: int = 17) -> None:
    """The name column is cut to ``width``, never folded (80 columns hold the numbers)."""
    col = out.columns[0]
    col.no_wrap, col.overflow, col.width = True, "ellipsis", width


def _device_line(v: RooflineView) -> str:
    if v.peak is None:
        name = v.device or "no device name in the trace"
        return (f"rank {v.rank}: device {name!s} is not in the peak table: no bound and no MFU "
                "(FLOPs and rates still shown)")
    p = v.peak
    peaks = ", ".join(f"{d} {t:,.0f}" for d, t in zip(("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8"),
                                                     p.tflops) if t is not None)
    return (f"rank {v.rank}: {v.device} → {p.name}: peak TFLOP/s {peaks}; {p.bandwidth_tbps:g} TB/s "
            f"(source: {p.source})")


def _steps(v: RooflineView, console: Console, top: int) -> None:
    s = v.steps
    out = table(f"rank {v.rank}: model FLOP utilisation", "step", "time ms", "TFLOP", "MFU", "FLOPs cover")
    order = np.argsort(-s.time_ns, kind="stable")[:top]
    for i in np.sort(order):  # per step shown
        out.add_row(step_label(int(s.step[i])), ms(s.time_ns[i]), _num(s.tflop[i], ",.2f"),
                    _num(s.mfu_pct[i]) + " %" if math.isfinite(s.mfu_pct[i]) else "-", f"{s.covered_pct[i]:.1f} %")
    console.print(out)


def _ops(v: RooflineView, console: Console, top: int) -> None:
    o = v.ops
    n = min(top, len(o.calls))
    out = table(f"rank {v.rank}: roofline per op shape (top {n} of {len(o.calls)})", "op (type)", "calls",
                "GFLOP", "ms", "TFLOP/s", "F/B", "bound", "roof")
    _cut(out)
    for i in range(n):  # per shape shown
        name = f"{str(o.name[i]).removeprefix('aten::')} ({o.dtype[i] or '?'})"
        out.add_row(name, f"{o.calls[i]:,}", _num(o.gflops[i], ",.2f"),
                    ms(o.time_ns[i]), _num(o.tflops[i]), _num(o.intensity[i], ".0f"), BOUND.get(str(o.bound[i]), "-"),
                    _num(o.roof_pct[i], ".0f") + " %" if math.isfinite(o.roof_pct[i]) else "-")
    console.print(out)
    console.print("[dim]GFLOP per call; F/B FLOPs per byte moved; bound: compute or memory; roof: achieved ÷ "
                  "the roof at that intensity (JSON: roofline.ops)[/dim]")


def _kernels(v: RooflineView, console: Console, top: int) -> None:
    k = v.kernels
    n = min(top, len(k.count))
    if n == 0:
        return
    out = table(f"rank {v.rank}: kernels of the costed ops (top {n} of {len(k.count)})", "kernel", "count", "ms",
                "TFLOP/s", "TB/s", "of peak")
    _cut(out)
    for i in range(n):  # per kernel shown
        out.add_row(str(k.name[i]), f"{k.count[i]:,}", ms(k.time_ns[i]), _num(k.tflops[i]),
                    _num(k.tbps[i], ",.2f"), _num(k.peak_pct[i]) + " %" if math.isfinite(k.peak_pct[i]) else "-")
    console.print(out)


def _sdpa(v: RooflineView, console: Console) -> None:
    a = v.sdpa
    if len(a.calls) == 0:
        return
    out = table(f"rank {v.rank}: attention per shape (TraceLens SDPA rows)", "B×H×Nq×Nkv×d", "causal", "calls",
                "GFLOP", "TFLOP/s", "TB/s")
    for i in range(len(a.calls)):  # per attention shape
        shape = f"{a.b[i]}×{a.h_q[i]}×{a.n_q[i]}×{a.n_kv[i]}×{a.d_qk[i]}" + (" bwd" if a.backward[i] else "")
        out.add_row(shape, "yes" if a.causal[i] else "no", f"{a.calls[i]:,}", _num(a.gflops[i], ",.2f"),
                    _num(a.tflops_median[i]), _num(a.tbps_median[i], ",.3f"))
    console.print(out)


def render_roofline(v: RooflineView, console: Console, top: int) -> None:
    console.print(_device_line(v))
    mfu = f"{v.mfu_pct:.1f} %" if math.isfinite(v.mfu_pct) else "unknown (no peak)"
    console.print(f"MFU {mfu}; ops of known FLOPs cover {v.covered_pct:.1f} % of the device busy time")
    _steps(v, console, top)
    _ops(v, console, top)
    _kernels(v, console, top)
    _sdpa(v, console)
