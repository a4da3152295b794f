"""Terminal view of the per-rank summary."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from stepscope.analysis.summary import Summary


def render_summary(s: Summary, console: Console, top: int) -> None:
    t = Table(title=f"rank {s.rank}: events", show_header=True, header_style="bold")
    t.add_column("what")
    t.add_column("count", justify="right")
    for kind, n in sorted(s.event_counts.items(), key=lambda kv: -kv[1]):
        t.add_row(kind, f"{n:,}")
    t.add_row("memory events", f"{s.memory_event_count:,}")
    device = s.stream_count > 0 or s.gpu_span_ns > 0  # no stream and no activity: a CPU-only run
    t.add_row(*(("CPU threads / GPU streams", f"{s.thread_count} / {s.stream_count}") if device
                else ("CPU threads", f"{s.thread_count}")))
    console.print(t)
    steps = f"{s.step_count} steps ({s.steps[0]}..{s.steps[-1]})" if s.steps else "no ProfilerStep spans"
    gpu = (f"GPU busy {s.gpu_busy_ns / 1e6:.3f} ms between its first and last activity ({s.gpu_span_ns / 1e6:.3f} ms, "
           f"{100 * s.gpu_busy_ns / s.gpu_span_ns:.1f} %; the steps' share is in the verdict)" if s.gpu_span_ns
           else "no GPU activity" if device else "no device activity")
    console.print(f"  {steps}; {gpu}")
