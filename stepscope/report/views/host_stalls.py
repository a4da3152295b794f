"""Terminal view of the driving host thread's stalls inside its ops."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.host_stalls import HostStalls
from stepscope.report.views._deep import ms, pct, short, table, us


def render_host_stalls(r: HostStalls, console: Console, top: int) -> None:
    n = max(len(r.step), 1)
    lost = "on the step's path" if r.has_device else "of the step"
    console.print(f"[bold]rank {r.rank}: host stalls inside ops[/bold]: {r.stalled_calls:,} of {r.calls:,} calls "
                  f"far slower than the same op on the same {'shapes' if r.shapes_recorded else 'name'}: "
                  f"{ms(float(r.excess_ns.sum()) / n)} ms per step beyond their typical time, "
                  f"{ms(float(r.on_path_ns.sum()) / n)} ms ({pct(r.on_path_pct)}) {lost}")
    g = r.groups
    if not len(g):
        return
    t = table(f"rank {r.rank}: stalled ops, most time lost first", "op", "shapes", "calls", "stalled",
              "typical µs", "longest ms", "lost ms / step", right_from=2)
    for i in range(min(top, len(g))):  # the top groups
        t.add_row(short(g.name[i], 50), short(g.shapes[i], 40), f"{int(g.calls[i]):,}", f"{int(g.stalled[i]):,}",
                  us(float(g.typical_ns[i])), ms(float(g.max_ns[i])), ms(float(g.excess_ns[i]) / n))
    console.print(t)
