"""Terminal view of the memory-copy analysis."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.memcpy import CopySet, MemcpyResult
from stepscope.report.views._deep import gbps, ms, nbytes, pct, print_names, table


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
    n = max(r.step_count, 1)
    _copy_set(console, f"rank {r.rank}: pageable H2D / D2H copies in the steps", r.pageable_copies, n, top)
    _copy_set(console, f"rank {r.rank}: H2D / D2H copies under {nbytes(r.small_bytes)} in the steps",
              r.small_copies, n, top)


def _copy_set(console: Console, title: str, c: CopySet, n: int, top: int) -> None:
    if not c.count:
        return
    bw = gbps(c.bandwidth_gbps) if c.bandwidth_gbps is not None else "-"
    median = gbps(c.median_bandwidth_gbps) if c.median_bandwidth_gbps is not None else "-"
    console.print(f"  {title}, per step: {c.count / n:,.1f} copies, {ms(c.time_ns / n)} ms, "
                  f"{nbytes(c.bytes_total // n)}, {bw} GB/s (bytes / time; the median copy {median} GB/s)")
    print_names(console, f"{title}, by name", c.names, n, top, "copy")
