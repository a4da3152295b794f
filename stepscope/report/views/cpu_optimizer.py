"""Terminal view of a CPU-only rank's optimizer steps: the ops they run."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.cpu_optimizer import CpuOptimizer
from stepscope.report.views._deep import ms, print_names


def render_cpu_optimizer(r: CpuOptimizer, console: Console, top: int) -> None:
    n = max(r.step_count, 1)
    how = "tensor by tensor" if r.per_tensor else "with multi-tensor or fused ops" if r.multi_tensor_pct >= 50 else ""
    console.print(f"[bold]rank {r.rank}: optimizer {r.name}[/bold] on the CPU: {r.ops_per_step:,.0f} ops per step"
                  f"{f' ({how})' if how else ''}, {r.multi_tensor_pct:.0f}% of their time multi-tensor or fused, "
                  f"{ms(r.time_ns / n)} ms per step in Optimizer.step")
    print_names(console, f"rank {r.rank}: optimizer ops, by name", r.ops, n, top, "op")
