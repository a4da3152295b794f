"""Terminal view of the simplified critical-path analysis."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.critical_path import CATEGORIES, CriticalPathResult
from stepscope.report.views._deep import ms, pct, step_label, table


def render_critical_path(r: CriticalPathResult, console: Console, top: int) -> None:
    t = table(f"rank {r.rank}: what bounds each step (ms)", "step", "step", *CATEGORIES)
    for i in range(len(r.step)):  # per step
        t.add_row(step_label(int(r.step[i])), ms(r.step_ns[i]), *(ms(v) for v in r.parts_ns[i]))
    shares = r.share_pct()
    t.add_row("share", "", *(pct(shares[c]) for c in CATEGORIES), style="bold")
    console.print(t)
    console.print(f"  bound by: [bold]{r.bound_by}[/bold]")
