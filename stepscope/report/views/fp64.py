"""Terminal view of the ops on float64 tensors."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.fp64 import Float64Ops
from stepscope.report.views._deep import ms, short, table


def render_fp64(r: Float64Ops, console: Console, top: int) -> None:
    n = max(r.step_count, 1)
    device = f", {ms(r.device_ns / n)} ms of device work" if r.device_ns else ""
    console.print(f"[bold]rank {r.rank}: ops on float64 tensors[/bold]: {r.calls_per_step:,.0f} calls a step, "
                  f"{ms(r.host_self_ns / n)} ms of their own host time{device}")
    t = table(f"rank {r.rank}: float64 ops by their own time", "op", "calls / step", "ms / step", right_from=1)
    for name, calls, total in r.ops.top(top):
        t.add_row(short(name, 60), f"{calls / n:,.1f}", ms(total / n))
    console.print(t)
