"""Terminal view of the memory-copy analysis."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.memcpy import MemcpyResult
from stepscope.report.views._deep import gbps, ms, nbytes, pct, table


def render_memcpy(r: MemcpyResult, console: Console, top: int) -> None:
    g = r.groups
    t = table(f"rank {r.rank}: memory copies", "direction", "memory", "call", "count", "bytes", "time ms",
              "GB/s", f"< {nbytes(r.small_bytes)}", right_from=3)
    for i in range(min(top, len(g.count))):  # per group
        style = "yellow" if g.pageable[i] == "pageable" else ""
        t.add_row(g.direction[i], g.pageable[i], g.sync[i], f"{g.count[i]:,}", nbytes(float(g.bytes_total[i])),
                  ms(g.time_ns[i]), gbps(float(g.bandwidth_gbps[i])), f"{g.small_count[i]:,}", style=style)
    console.print(t)
    console.print(f"  {r.small_count} small copies take {pct(r.small_time_pct)} of copy time")
