"""Terminal annotation view: record_function ranges on the host and their GPU projections."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from stepscope.analysis.annotations import AnnotationTable, AnnotationView
from stepscope.report.views._deep import short, us


def _table(title: str, a: AnnotationTable, top: int, with_device: bool) -> Table:
    t = Table(title=title, header_style="bold")
    cols = ["annotation", "calls", "total", "mean", "min", "max"] + (["GPU launched inside"] if with_device else [])
    for col in cols:
        t.add_column(col, justify="left" if col == "annotation" else "right", no_wrap=True,
                     overflow="ellipsis", max_width=44 if col == "annotation" else None)
    for i in range(min(top, len(a.name))):
        row = [short(str(a.name[i]), 50), f"{a.calls[i]:,}", us(a.total_ns[i]), us(a.mean_ns[i]), us(a.min_ns[i]),
               us(a.max_ns[i])]
        t.add_row(*(row + ([us(a.device_ns[i])] if with_device else [])))
    return t


def render_annotations(v: AnnotationView, console: Console, top: int) -> None:
    """Host annotations (with the GPU time launched inside them, on a rank with a device) and GPU
    annotation ranges (µs)."""
    if len(v.host.name):
        console.print(_table(f"rank {v.rank}: host annotations (µs)", v.host, top, v.has_device))
    if len(v.gpu.name):
        console.print(_table(f"rank {v.rank}: GPU annotations (µs)", v.gpu, top, False))
