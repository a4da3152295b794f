"""Terminal view of the caching allocator's calls and totals."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.caching_allocator import CachingAllocatorResult
from stepscope.report.views._deep import ms, nbytes, pct, print_names


def render_caching_allocator(r: CachingAllocatorResult, console: Console, top: int) -> None:
    n = max(r.step_count, 1)
    console.print(f"[bold]rank {r.rank}: caching allocator[/bold]: {len(r.calls) / n:,.1f} allocator calls per step "
                  f"({ms(r.calls.total_ns / n)} ms host time per step)")
    if r.has_memory_events:
        reserved, alloc = r.at_reserved_peak
        cap = r.device_memory_bytes
        of_device = f", {pct(100.0 * int(reserved) / cap)} of the device's {nbytes(cap)}" if cap else ""
        console.print(f"  peak reserved {nbytes(int(reserved))}{of_device}; allocated at that peak "
                      f"{nbytes(int(alloc))} (unused {nbytes(int(reserved - alloc))}); "
                      f"peak allocated {nbytes(int(r.allocated_bytes.max()))}")
    else:
        console.print(f"  {r.no_memory_reason}")
    print_names(console, f"rank {r.rank}: allocator calls, by name", r.calls, n, top, "call")
