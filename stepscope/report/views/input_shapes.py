"""Terminal view of the input shapes from step to step."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.input_shapes import InputShapesResult
from stepscope.report.views._deep import pct, short, table


def render_input_shapes(r: InputShapesResult, console: Console, top: int) -> None:
    console.print(f"[bold]rank {r.rank}: input shapes[/bold]: {r.varying_calls:,} of {r.calls:,} calls of the ops "
                  f"that run in every one of the {r.step_count} steps ({pct(r.varying_pct)}) see shapes that "
                  "change from step to step")
    v = r.varying_ops
    if not len(v.name):
        return
    if r.example_op is not None:
        console.print(f"  e.g. {r.example_op}: {', '.join(r.example_shapes)}")
    t = table(f"rank {r.rank}: ops whose shapes vary", "op", "calls", "distinct shapes")
    for i in range(min(top, len(v.name))):  # per op name
        t.add_row(short(v.name[i]), f"{v.calls[i]:,}", f"{v.shapes[i]:,}")
    console.print(t)
