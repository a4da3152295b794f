"""Terminal view of the DataLoader events."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.dataloader import DataLoaderResult
from stepscope.report.views._deep import ms, print_names

BESIDE = "with no GPU work or launch call beside it"


def render_dataloader(r: DataLoaderResult, console: Console, top: int) -> None:
    n = max(r.step_count, 1)
    console.print(f"[bold]rank {r.rank}: DataLoader[/bold] ({r.loading} loading): {len(r.calls) / n:,.1f} events "
                  f"per step, {ms(r.calls.total_ns / n)} ms per step in them on the host (the step breakdown's "
                  f"DataLoader is the part of it {BESIDE if r.has_device else 'with no model op beside it'})")
    print_names(console, f"rank {r.rank}: DataLoader events, by name", r.calls, n, top, "event")
