"""The terminal console of the commands: rich, with every string shown up to a bounded length.

rich wraps a long text in time that grows with the square of its length (each wrapped line copies
the rest of the text): one 4 MB kernel name in a finding took 6 s, a 200 MB one would take hours.
The model, JSON and reports keep the full name; the terminal shows its head and tail.

Inside :func:`said`, every string the console prints is first said in the words that fit the trace
(a rank without step markers: "over the whole trace", never "per step" — :func:`stepscope.report.
platform_texts.dialect`, the findings' words), so that no view has to repeat the choice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

#: the most characters of one string the terminal shows (its middle is elided beyond this)
DISPLAY_LIMIT = 2000


class BoundedConsole(Console):
    """A :class:`rich.console.Console` whose strings (printed or in table cells) are cut to
    :data:`DISPLAY_LIMIT` characters, keeping the head and the tail; inside :func:`said`, said first."""

    #: how each string is said (set by :func:`said`); None: as written
    say: Callable[[str], str] | None = None

    def render_str(self, text: str, *args: Any, **kwargs: Any) -> Text:
        out = super().render_str(self.say(text) if self.say is not None else text, *args, **kwargs)
        if len(out) <= DISPLAY_LIMIT:
            return out
        half = DISPLAY_LIMIT // 2
        clipped = out[:half]
        clipped.append(f" … ({len(out) - 2 * half:,} characters) … ")
        clipped.append_text(out[-half:])
        return clipped


def fit_table(table: Table, width: int) -> int:
    """Fit a table into ``width`` columns without cutting a number: numeric (right-aligned) columns
    never shrink below their widest cell (their headers wrap), text columns may shrink down to
    :data:`TEXT_MIN_WIDTH` (their texts wrap or end in "…"), and the last columns are dropped until
    the table fits (the first two always stay). A table wider than ``width`` gets every column's width
    set here — rich, left to itself, keeps a no-wrap header whole and crops the table's right edge,
    numbers included. Returns how many columns were dropped (the caption says so)."""
    for col in table.columns:
        if col.justify == "right":
            col.min_width = _needed(col)  # never narrower than its widest number; the header may wrap
    dropped = 0
    while len(table.columns) > 2 and _table_width(table) > width:
        table.columns.pop()
        dropped += 1
    if dropped:
        note = f"{dropped} column{'s' if dropped > 1 else ''} not shown at {width} columns (wider terminal or --json)"
        table.caption = f"{table.caption} · {note}" if table.caption else note
    if sum(_natural(c) + 3 for c in table.columns) + 1 > width:
        _set_widths(table, width)
    return dropped


#: a text column (names) may wrap down to this width before columns are dropped
TEXT_MIN_WIDTH = 16


def _cell_len(cell: object) -> int:
    text = cell if isinstance(cell, Text) else Text.from_markup(str(cell)) if isinstance(cell, str) else None
    return text.cell_len if text is not None else 8


def _needed(col: Column) -> int:
    """The narrowest a column may be: numbers whole, headers by their longest word, text wrapped or cut."""
    cells = [_cell_len(c) for c in col.cells]
    header = max((len(w) for w in str(col.header).split()), default=0)
    if col.width is not None:
        return col.width
    if col.justify == "right":
        return max([header, *cells])
    return max(header, min(max(cells, default=0), TEXT_MIN_WIDTH))


def _natural(col: Column) -> int:
    """The width a column takes when nothing constrains it (its whole header, its widest cell)."""
    if col.width is not None:
        return col.width
    widest = max([_cell_len(col.header), *(_cell_len(c) for c in col.cells)])
    return min(widest, col.max_width) if col.max_width is not None else widest


def _table_width(table: Table) -> int:
    """Columns at their narrowest, with each column's padding and rule."""
    return sum(_needed(c) + 3 for c in table.columns) + 1


def _set_widths(table: Table, width: int) -> None:
    """Every column at its narrowest, then what is left handed out — to the text columns first, up to
    their natural width, then to the numeric ones (whose headers then wrap less); set as fixed widths.
    Numeric columns wrap their headers only (a number is never wider than its column)."""
    cols = list(table.columns)
    widths = [_needed(c) for c in cols]
    room = width - sum(w + 3 for w in widths) - 1
    order = sorted(range(len(cols)), key=lambda i: cols[i].justify == "right")  # text columns first
    for i in order:
        more = max(0, min(room, _natural(cols[i]) - widths[i]))
        widths[i] += more
        room -= more
    for col, w in zip(cols, widths):
        col.width = w
        if col.justify == "right":
            col.no_wrap = False


@contextmanager
def said(console: Console, say: Callable[[str], str] | None) -> Iterator[None]:
    """Every string ``console`` prints inside the block (lines, table titles, headers and cells) is
    said by ``say`` first; None, or a console that is not the commands' own, prints as written."""
    if say is None or not isinstance(console, BoundedConsole):
        yield
        return
    before, console.say = console.say, say
    try:
        yield
    finally:
        console.say = before


class FittingConsole(BoundedConsole):
    """A bounded console that fits every table into its width (:func:`fit_table`)."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        for obj in objects:
            if isinstance(obj, Table):
                fit_table(obj, self.width)
        super().print(*objects, **kwargs)


def terminal_console(**kwargs: Any) -> Console:
    """The console every command prints its terminal report to (``Console(**kwargs)``, bounded)."""
    return FittingConsole(**kwargs)
