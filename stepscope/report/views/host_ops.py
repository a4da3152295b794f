"""Terminal view of the host ops that launch no GPU work."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.host_ops import HostOpsResult
from stepscope.report.views._deep import ms, short, table


def render_host_ops(r: HostOpsResult, console: Console, top: int) -> None:
    n = max(r.step_count, 1)
    console.print(f"[bold]rank {r.rank}: host ops without GPU work[/bold]: the GPU is idle "
                  f"{ms(float(r.gpu_idle_ns.sum()) / n)} ms per step inside top-level ops that launch nothing")
    if not len(r.names):
        return
    t = table(f"rank {r.rank}: top-level ops without GPU work", "op", "calls", "GPU idle ms / step")
    for i in r.by_idle()[:top]:  # per op name
        t.add_row(short(r.names[i]), f"{r.calls[i]:,}", ms(float(r.gpu_idle_ns[i]) / n))
    console.print(t)
