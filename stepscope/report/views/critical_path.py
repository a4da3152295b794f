"""Terminal view of the critical-path attribution of each step (what bounds it)."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.critical_path import HOST_PARTS, PARTS, CriticalPath
from stepscope.report.views._deep import ms, pct, step_label, table


def render_critical_path(r: CriticalPath, console: Console, top: int) -> None:
    title = "the whole trace" if r.whole_trace else "each step"
    t = table(f"rank {r.rank}: what bounds {title} on its critical path (ms)", "step", "step", *PARTS)
    for i in range(len(r.step)):  # per step
        t.add_row(step_label(int(r.step[i])), ms(r.step_ns[i]), *(ms(v) for v in r.parts_ns[i]))
    shares = r.share_pct()
    t.add_row("share", "", *(pct(shares[c]) for c in PARTS), style="bold")
    console.print(t)
    host = r.host_share_pct()
    if not r.has_device:  # a CPU-only run: no device to be busy, nothing launched
        console.print(f"  bound by: [bold]{r.bound}[/bold]; no device; host part: "
                      + ", ".join(f"{h.replace('_', ' ')} {pct(host[h])}" for h in HOST_PARTS if h != "launch"))
        return
    console.print(f"  bound by: [bold]{r.bound}[/bold]; device busy {pct(r.device_busy_pct())} of the window; "
                  "host part: " + ", ".join(f"{h.replace('_', ' ')} {pct(host[h])}" for h in HOST_PARTS))
