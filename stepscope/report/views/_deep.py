"""Formatting helpers shared by the deep-analysis renderers."""

from __future__ import annotations

import math

from rich.console import Console
from rich.table import Table

from stepscope.analysis.named import NamedRows


def ms(ns: float) -> str:
    """Nanoseconds as milliseconds with 3 decimals."""
    return f"{ns / 1e6:,.3f}"


def us(ns: float) -> str:
    return f"{ns / 1e3:,.1f}"


def pct(v: float) -> str:
    return f"{v:.1f} %"


def gbps(v: float) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:,.2f}"


def nbytes(n: float) -> str:
    if n < 0:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} GiB"


def short(name: str, width: int = 70) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def table(title: str, *columns: str, right_from: int = 1) -> Table:
    """A table whose columns after ``right_from`` are right-aligned (numbers)."""
    t = Table(title=title, header_style="bold", title_justify="left")
    for i, c in enumerate(columns):
        t.add_column(c, justify="right" if i >= right_from else "left", overflow="fold")
    return t


def step_label(step: int) -> str:
    return "all" if step < 0 else str(step)


def print_names(console: Console, title: str, named: NamedRows, per: int, top: int, what: str = "name") -> None:
    """The top names of an analysis' evidence rows (count, ms per step): what the findings list."""
    rows = named.top(top)
    if not rows:
        return
    t = table(title, what, "count", "ms / step")
    for name, count, total in rows:  # per name
        t.add_row(short(name), f"{count:,}", ms(total / max(per, 1)))
    console.print(t)
