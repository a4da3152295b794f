"""Terminal view of the GPU idle-time analysis."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.idle import IdleResult
from stepscope.report.views._deep import ms, pct, step_label, table


def render_idle(r: IdleResult, console: Console, top: int) -> None:
    t = table(f"rank {r.rank}: GPU idle time (ms)", "step", "step", "idle", "host-wait", "kernel-wait", "other",
              "host-wait in DataLoader", "in DataLoader %")
    idle = r.idle_ns
    for i in range(len(r.step)):  # per step
        share = 100 * r.host_wait_in_dataloader_ns[i] / idle[i] if idle[i] else 0.0
        t.add_row(step_label(int(r.step[i])), ms(r.step_ns[i]), ms(idle[i]), ms(r.host_wait_ns[i]),
                  ms(r.kernel_wait_ns[i]), ms(r.other_ns[i]), ms(r.host_wait_in_dataloader_ns[i]), pct(share))
    console.print(t)
    s = table(f"rank {r.rank}: idle per stream (ms, gaps between its activities)", "stream", "gaps",
              "host-wait", "kernel-wait", "other")
    for i in range(len(r.stream)):  # per stream
        s.add_row(str(r.stream[i]), f"{r.stream_gap_count[i]:,}", ms(r.stream_host_wait_ns[i]),
                  ms(r.stream_kernel_wait_ns[i]), ms(r.stream_other_ns[i]))
    console.print(s)
    console.print(f"  kernel-wait = gap < {r.kernel_wait_max_ns / 1e3:.0f} µs with the next work already queued")
