"""Terminal view of the critical-path attribution of each step (what bounds it); on a rank without a
device (a CPU-only run) without the device's parts (always 0 there), its host said as its verdict says it."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.critical_path import HOST_PARTS, PARTS, CriticalPath
from stepscope.report.verdict_texts import part_words
from stepscope.report.views._deep import ms, pct, step_label, table


def render_critical_path(r: CriticalPath, console: Console, top: int) -> None:
    title = "the whole trace" if r.whole_trace else "each step"
    words = part_words(r.has_device)
    cols = [j for j, c in enumerate(PARTS) if c in words]
    t = table(f"rank {r.rank}: what bounds {title} on its critical path (ms)", "step", "step",
              *(words[PARTS[j]] for j in cols))
    for i in range(len(r.step)):  # per step
        t.add_row(step_label(int(r.step[i])), ms(r.step_ns[i]), *(ms(r.parts_ns[i, j]) for j in cols))
    shares = r.share_pct()
    t.add_row("share", "", *(pct(shares[PARTS[j]]) for j in cols), style="bold")
    console.print(t)
    host = r.host_share_pct()
    bound = words.get(r.bound, r.bound)
    if not r.has_device:  # a CPU-only run: no device to be busy, nothing launched
        console.print(f"  bound by: [bold]{bound}[/bold]; no device; {words['host']}: "
                      + ", ".join(f"{h.replace('_', ' ')} {pct(host[h])}" for h in HOST_PARTS if h != "launch"))
        return
    console.print(f"  bound by: [bold]{bound}[/bold]; device busy {pct(r.device_busy_pct())} of the window; "
                  "host part: " + ", ".join(f"{h.replace('_', ' ')} {pct(host[h])}" for h in HOST_PARTS))
