"""Terminal operator view: top operators by device self time, then host self time."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from stepscope.analysis.operators import OperatorView
from stepscope.report.views._deep import short, us

#: the columns of a rank's device work: a rank without a device (a CPU-only run) has none of them
DEVICE_COLUMNS = ("device self", "device total", "TC eligible", "TC self %", "TC total %")


def render_operators(v: OperatorView, console: Console, top: int) -> None:
    """Top-N operators by name with host/device self/total time and Tensor-Core columns (host only on
    a CPU-only run)."""
    b = v.by_name
    t = Table(title=f"rank {v.rank}: top {min(top, len(b))} of {len(b)} operators (µs)", header_style="bold")
    cols = [c for c in ("operator", "calls", "device self", "device total", "host self", "host total", "TC eligible",
                        "TC self %", "TC total %") if v.has_device or c not in DEVICE_COLUMNS]
    for col in cols:
        t.add_column(col, justify="left" if col == "operator" else "right", no_wrap=True,
                     overflow="ellipsis", max_width=44 if col == "operator" else None)
    for i in range(min(top, len(b))):
        cells = {"operator": short(str(b.name[i]), 50), "calls": f"{b.calls[i]:,}",
                 "device self": us(b.device_self_ns[i]), "device total": us(b.device_total_ns[i]),
                 "host self": us(b.host_self_ns[i]), "host total": us(b.host_total_ns[i]),
                 "TC eligible": "yes" if b.tc_eligible[i] else "no", "TC self %": f"{b.tc_self_pct[i]:.1f}",
                 "TC total %": f"{b.tc_total_pct[i]:.1f}"}
        t.add_row(*(cells[c] for c in cols))
    console.print(t)
    notes = []
    if not v.has_shapes:
        notes.append("no input shapes recorded (profile with record_shapes=True)")
    if not v.has_call_stacks:
        notes.append("no call stacks recorded (profile with with_stack=True)")
    if notes:
        console.print("[dim]" + "; ".join(notes) + "[/dim]")
