"""Terminal view of the synchronisation analysis."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.sync import SyncResult
from stepscope.report.views._deep import ms, short, table


def render_sync(r: SyncResult, console: Console, top: int) -> None:
    n = max(len(r.step), 1)
    console.print(f"[bold]rank {r.rank}: synchronisation[/bold] per average step: "
                  f"{r.sync_count.sum() / n:.1f} blocking sync calls ({ms(r.sync_ns.sum() / n)} ms host), "
                  f"{r.d2h_count.sum() / n:.1f} device-to-host copies ({ms(r.d2h_ns.sum() / n)} ms)")
    s = r.sites
    if not len(s.count):
        return
    t = table(f"rank {r.rank}: who synchronises", "what", "op", "outer op", "call site", "count", "time ms",
              right_from=4)
    for i in range(min(top, len(s.count))):  # per call site
        t.add_row(short(s.what[i], 40), short(s.op[i], 40) or "-", short(s.top_op[i], 40) or "-",
                  short(s.call_site[i], 50) or "-", f"{s.count[i]:,}", ms(s.time_ns[i]))
    console.print(t)
