"""Terminal view of the launch-configuration analysis."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.launch_config import LaunchConfigResult
from stepscope.report.platform_texts import dialect
from stepscope.report.views._deep import ms, pct, short, table


def render_launch_config(r: LaunchConfigResult, console: Console, top: int, platform: str = "cuda") -> None:
    partial = r.kernel_time_ns < r.all_kernel_time_ns  # graph replays record no grid
    scope = (f"of the kernels with a known grid ({ms(r.kernel_time_ns)} of {ms(r.all_kernel_time_ns)} ms kernel "
             "time; a graph replay's kernels record none): " if partial else "")
    console.print(dialect(f"[bold]rank {r.rank}: launch configuration[/bold] ({r.sm_count} SMs): {scope}kernels "
                          f"with fewer blocks than ¾ of the SMs take {pct(r.underfilled_time_pct)} of "
                          f"{'their time' if partial else 'kernel time'}; time-weighted SM fill "
                          f"{pct(r.sm_fill_pct)}", platform))
    u, n = r.underfilled_in_step(), max(r.step_count, 1)
    if u.count:
        console.print(dialect(f"  inside the steps, per step: {u.count / n:,.1f} under-filled kernels, "
                              f"{ms(u.time_ns / n)} ms, leaving {ms(u.idle_sm_ns / n)} ms of SM time idle; "
                              f"{u.mean_blocks:,.1f} blocks on average", platform))
    k = r.kernels
    if not len(k.calls):
        return
    t = table(f"rank {r.rank}: under-filled kernels", "kernel", "calls", "time ms", "mean blocks")
    for i in range(min(top, len(k.calls))):  # per kernel name
        t.add_row(short(k.name[i]), f"{k.calls[i]:,}", ms(k.time_ns[i]), f"{k.mean_blocks[i]:.0f}")
    console.print(t)
