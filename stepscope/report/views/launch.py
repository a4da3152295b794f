"""Terminal view of the launch-overhead analysis."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.launch import LaunchResult
from stepscope.report.views._deep import pct, table, us


def render_launch(r: LaunchResult, console: Console, top: int) -> None:
    t = table(f"rank {r.rank}: kernel launches ({len(r.rows):,} kernels, µs)", "", "p50", "p90", "p99", "max")
    for label, field in (("CPU launch", "cpu_launch_ns"), ("launch delay", "launch_delay_ns"),
                         ("kernel", "kernel_ns")):
        vals = [us(r.percentile_ns(field, q)) for q in (50, 90, 99, 100)]
        t.add_row(label, *vals)
    console.print(t)
    console.print(f"  short kernels (kernel < its launch call): {r.short_kernel_count:,} ({pct(r.short_kernel_pct)})")
    if r.graph_launches:
        console.print(f"  {r.graph_kernels:,} kernels ran from {r.graph_launches:,} graph launches, "
                      "each sharing its one launch call")
    q = r.queue
    s = table(f"rank {r.rank}: queue length per stream", "stream", "max", "mean in steps")
    for i in range(len(q.stream)):  # per stream
        s.add_row(str(q.stream[i]), str(q.max_length[i]), f"{q.mean_length[i]:.2f}")
    console.print(s)
