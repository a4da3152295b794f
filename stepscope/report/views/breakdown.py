"""Terminal step time breakdown (TB priority attribution), per step and averaged, with throughput."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from rich.console import Console
from rich.table import Table
from rich.text import Text

from stepscope.analysis.breakdown import CATEGORIES, StepBreakdown
from stepscope.report.views._deep import ms

COLOURS = ("green", "cyan", "blue", "magenta", "yellow", "red", "bright_white", "bright_black")
LABELS = ("Kernel", "Memcpy", "Memset", "Comm", "Runtime", "DataLoader", "CPU Exec", "Other")


def breakdown_bar(category_ns: npt.NDArray[np.floating] | npt.NDArray[np.integer], total_ns: float,
                  width: int = 60) -> Text:
    """One coloured bar of the categories' shares, with a legend."""
    bar = Text()
    if total_ns <= 0:
        return bar
    cells = np.floor(np.asarray(category_ns, np.float64) / total_ns * width).astype(int)
    for colour, n in zip(COLOURS, cells.tolist()):
        bar.append("█" * n, style=colour)
    bar.append("\n")
    for colour, label, v in zip(COLOURS, LABELS, np.asarray(category_ns, np.float64).tolist()):
        if v > 0:
            bar.append(f"■ {label} {100 * v / total_ns:.1f}%  ", style=colour)
    return bar


#: the categories of a device's work: a rank with none of it (a CPU-only run) shows none of them
DEVICE_CATEGORIES = ("kernel", "memcpy", "memset", "runtime")


def render_breakdown(bd: StepBreakdown, console: Console, top: int) -> None:
    """Per-step table (up to ``top`` steps, longest first when truncated) and the average row."""
    t = Table(title=f"rank {bd.rank}: step time breakdown (ms; categories sum to the step)",
              header_style="bold")
    t.add_column("step", no_wrap=True)
    t.add_column("total", justify="right", no_wrap=True)
    device = [CATEGORIES.index(c) for c in DEVICE_CATEGORIES]
    shown = [i for i in range(len(CATEGORIES)) if i not in device or bd.category_ns[:, device].any()]
    for i in shown:  # all 0 in every step (no device work): the device's four left out
        t.add_column(LABELS[i], justify="right", no_wrap=True)
    order = np.arange(bd.step_count)
    if bd.step_count > top:
        order = np.sort(np.argsort(-bd.total_ns, kind="stable")[:top])
    labels = bd.step_labels()
    for i in order.tolist():
        t.add_row(labels[i], ms(bd.total_ns[i]), *[ms(v) for v in bd.category_ns[i, shown].tolist()])
    if not bd.whole_trace:  # one window: its average is itself
        t.add_row("[bold]average[/bold]", ms(bd.avg_step_ns), *[ms(v) for v in bd.avg_category_ns[shown].tolist()],
                  style="bold")
    console.print(t)
    if bd.step_count > top:
        console.print(f"[dim]showing the {top} longest of {bd.step_count} steps[/dim]")
    if bd.dropped_tail_steps:
        console.print(f"[dim]{bd.dropped_tail_steps} trailing step(s) left out: the profiler likely missed "
                      "their GPU work (as TensorBoard does)[/dim]")
    reader = bd.reader_cost_ns.mean() if bd.step_count else 0
    if bd.whole_trace:
        console.print(f"  no step markers: one window over the whole trace, {ms(bd.avg_step_ns)} ms; "
                      f"reader_cost {ms(reader)} ms")
        return
    ips = f", {bd.samples_per_s:,.1f} samples/s" if bd.samples_per_s is not None else \
        " (give --batch-size for samples/s)"
    console.print(f"  throughput: {bd.steps_per_s or 0:.2f} steps/s{ips}; batch_cost {ms(bd.avg_step_ns)} ms, "
                  f"reader_cost {ms(reader)} ms per step")
    assert len(LABELS) == len(CATEGORIES)
