"""Terminal memory view: peaks and fragmentation per device, top operators by allocated bytes."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from stepscope.analysis.memory import MemoryView
from stepscope.report.views._deep import nbytes, short


def render_memory(m: MemoryView, console: Console, top: int) -> None:
    """Per-device peaks, allocation counts and the top-N operators by allocated bytes."""
    t = Table(title=f"rank {m.rank}: memory", header_style="bold")
    for col in ("device", "events", "peak allocated", "peak reserved", "max reserved − allocated"):
        t.add_column(col, justify="right")
    for c in m.curves:
        reserved = nbytes(c.peak_reserved_bytes) if c.peak_reserved_bytes >= 0 else "not recorded"
        frag = nbytes(int(c.fragmentation_bytes.max())) if c.peak_reserved_bytes >= 0 else "-"
        t.add_row(c.device, f"{len(c.ts_ns):,}", nbytes(c.peak_allocated_bytes), reserved, frag)
    console.print(t)
    console.print(f"  {allocation_summary(m.allocation_count, m.free_count, m.freed_count)}")
    o = m.by_op
    t = Table(title=f"top {min(top, len(o.name))} operators by allocated bytes", header_style="bold")
    for col in ("operator", "device", "allocs", "allocated", "self increase", "total increase"):
        t.add_column(col, justify="left" if col == "operator" else "right", no_wrap=True, overflow="ellipsis",
                     max_width=44 if col == "operator" else None)
    for i in range(min(top, len(o.name))):
        t.add_row(short(str(o.name[i]), 50), str(o.device[i]), f"{o.alloc_count[i]:,}", nbytes(o.alloc_bytes[i]),
                  _signed(o.self_increase_bytes[i]), _signed(o.total_increase_bytes[i]))
    console.print(t)


def allocation_summary(allocs: int, frees: int, freed: int | None) -> str:
    """One line, the same counts the web UI shows (``memory.allocation_count`` / ``free_count`` /
    ``freed_count`` of the JSON document)."""
    line = f"{allocs:,} allocations, {frees:,} frees within the trace"
    if freed is None:
        return line + " (no addresses recorded: frees cannot be paired with allocations)"
    return line + f"; {freed:,} of the allocations freed within it"


def _signed(n: int) -> str:
    return ("-" if n < 0 else "") + nbytes(abs(int(n)))
