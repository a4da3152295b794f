"""Terminal view of the GPU work that zeroes gradients."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.zero_grad import ZeroGradResult
from stepscope.report.views._deep import ms, print_names


def render_zero_grad(r: ZeroGradResult, console: Console, top: int) -> None:
    n = max(r.step_count, 1)
    console.print(f"[bold]rank {r.rank}: zero_grad[/bold]: {len(r.activities) / n:,.1f} GPU activities per step "
                  f"under Optimizer.zero_grad, {ms(r.activities.total_ns / n)} ms per step")
    print_names(console, f"rank {r.rank}: zero_grad kernels, by name", r.activities, n, top, "kernel")
