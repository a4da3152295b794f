"""The terminal console of the commands: rich, with every string shown up to a bounded length.

rich wraps a long text in time that grows with the square of its length (each wrapped line copies
the rest of the text): one 4 MB kernel name in a finding took 6 s, a 200 MB one would take hours.
The model, JSON and reports keep the full name; the terminal shows its head and tail.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

#: the most characters of one string the terminal shows (its middle is elided beyond this)
DISPLAY_LIMIT = 2000


class BoundedConsole(Console):
    """A :class:`rich.console.Console` whose strings (printed or in table cells) are cut to
    :data:`DISPLAY_LIMIT` characters, keeping the head and the tail."""

    def render_str(self, text: str, *args: Any, **kwargs: Any) -> Text:
        out = super().render_str(text, *args, **kwargs)
        if len(out) <= DISPLAY_LIMIT:
            return out
        half = DISPLAY_LIMIT // 2
        clipped = out[:half]
        clipped.append(f" … ({len(out) - 2 * half:,} characters) … ")
        clipped.append_text(out[-half:])
        return clipped


def terminal_console(**kwargs: Any) -> Console:
    """The console every command prints its terminal report to (``Console(**kwargs)``, bounded)."""
    return BoundedConsole(**kwargs)
