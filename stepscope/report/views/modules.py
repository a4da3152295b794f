"""Terminal module view: the nn.Module tree (indented by depth), host/device self and total time."""

from __future__ import annotations

import numpy as np
from rich.console import Console
from rich.table import Table

from stepscope.analysis.modules import ModuleTable
from stepscope.report.views._deep import us


def render_modules(m: ModuleTable, console: Console, top: int) -> None:
    """Top-N modules by device total time, indented by nesting depth."""
    t = Table(title=f"top {min(top, len(m.name))} of {len(m.name)} modules (µs)", header_style="bold")
    for col in ("module", "calls", "device total", "device self", "host total", "host self"):
        t.add_column(col, justify="left" if col == "module" else "right", no_wrap=True, overflow="ellipsis")
    keep = np.sort(np.arange(len(m.name))[:top])
    for i in keep.tolist():
        t.add_row("  " * int(m.depth[i]) + str(m.name[i]), f"{m.calls[i]:,}", us(m.device_total_ns[i]),
                  us(m.device_self_ns[i]), us(m.host_total_ns[i]), us(m.host_self_ns[i]))
    console.print(t)
