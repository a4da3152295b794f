"""How a trace shows itself in a notebook (``Trace._repr_html_``): small HTML tables, escaped.

:func:`html_table` is the one table maker of the notebook displays (the trace here, the analysis,
findings and diff in ``stepscope.notebook``): plain ``<table>`` markup that Jupyter, VS Code and
GitHub render alike, every text escaped, numbers with thousands separators and at most three decimals.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from stepscope.model.schema import EventKind

if TYPE_CHECKING:
    from stepscope.model.trace import Trace

#: the longest text shown in one cell (a kernel name can be kilobytes)
MAX_CELL_CHARS = 160


def cell(v: Any) -> str:
    """One value as escaped cell text."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return "" if not math.isfinite(v) else f"{v:,.3f}".rstrip("0").rstrip(".")
    if isinstance(v, int):
        return f"{v:,}"
    s = str(v)
    if len(s) > MAX_CELL_CHARS:
        s = s[:MAX_CELL_CHARS - 1] + "…"
    return html.escape(s)


def html_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None, caption: str = "") -> str:
    """An HTML table of ``rows`` (dicts) over ``columns`` (default: the first row's keys)."""
    cols = list(columns) if columns is not None else list(rows[0]) if rows else []
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{cell(r.get(c))}</td>" for c in cols) + "</tr>" for r in rows)
    cap = f"<caption style='text-align:left'>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _kind_counts(trace: Trace) -> list[dict[str, Any]]:
    counts = np.bincount(np.asarray(trace.events["kind"], dtype=np.int64), minlength=len(EventKind))
    return [{"kind": k.name.lower(), "events": int(counts[k])} for k in EventKind if counts[k]]


def trace_html(trace: Trace) -> str:
    """The trace's summary: source, ranks (platform, devices, events, steps), event kinds, diagnostics."""
    ev_rank = np.asarray(trace.events["rank"])
    st_rank = np.asarray(trace.steps["rank"])
    ranks = [{"rank": r.rank, "platform": r.platform, "devices": ", ".join(d.name for d in r.devices),
              "events": int((ev_rank == r.rank).sum()), "steps": int((st_rank == r.rank).sum())}
             for r in trace.ranks]
    parts = [f"<b>stepscope Trace</b> <code>{html.escape(trace.source)}</code>: {len(trace.events):,} events, "
             f"{len(trace.ranks)} rank(s)", html_table(ranks), html_table(_kind_counts(trace), caption="events")]
    if trace.diagnostics:
        parts.append(html_table([d.to_dict() for d in trace.diagnostics], caption="diagnostics"))
    return "<div>" + "".join(parts) + "</div>"
