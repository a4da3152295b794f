"""HTML tables for the report: capped rows, optional columns, inline share bars, all text escaped."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stepscope.report.html.fmt import data_num, esc, fmt_int, fmt_ms, fmt_pct, num

Formatter = Callable[[object], str]


@dataclass(frozen=True)
class Col:
    """One table column: the row key, its header, how to format, whether it is a number."""

    key: str
    header: str
    fmt: Formatter = str
    numeric: bool = True
    optional: bool = False  # shown only when some row has the key
    tone: bool = False  # colour the cell by sign (a diff: + slower in red, − faster in green)


def ms(v: object) -> str:
    return fmt_ms(v, 2)


def yes_no(v: object) -> str:
    return "–" if v is None else ("yes" if v else "no")


def table(table_id: str, cols: Sequence[Col], rows: Sequence[Mapping[str, Any]], *, limit: int = 50,
          share_key: str | None = None, share_total: float | None = None) -> str:
    """A sortable table of at most ``limit`` rows; ``share_key`` adds a bar of that column's share."""
    if not rows:
        return '<p class="empty">Nothing to show.</p>'
    shown = [c for c in cols if not c.optional or any(c.key in r and r[c.key] is not None for r in rows)]
    total = share_total
    if share_key is not None and not total:
        total = sum(num(r.get(share_key)) or 0.0 for r in rows)
    head = "".join(f'<th class="{"num" if c.numeric else "txt"}">{esc(c.header)}</th>' for c in shown)
    if share_key is not None:
        head += '<th class="txt">share</th>'
    body = [_row(r, shown, share_key, total) for r in rows[:limit]]
    more = (f'<p class="note">Showing the top {limit:,} of {len(rows):,} rows.</p>'
            if len(rows) > limit else "")
    return (f'<div class="tablewrap"><table id="{esc(table_id)}" class="data sortable"><thead><tr>{head}'
            f'</tr></thead><tbody>{"".join(body)}</tbody></table></div>{more}')


def _row(r: Mapping[str, Any], cols: Sequence[Col], share_key: str | None, total: float | None) -> str:
    cells = []
    for c in cols:
        v = r.get(c.key)
        if c.numeric:
            f = num(v) if c.tone else None
            tone = " pos" if f is not None and f > 0 else " neg" if f is not None and f < 0 else ""
            cells.append(f'<td class="num{tone}" data-sort="{data_num(v)}">{esc(c.fmt(v))}</td>')
        else:
            text = c.fmt(v) if v is not None else "–"
            cells.append(f'<td class="txt" title="{esc(text)}">{esc(text)}</td>')
    if share_key is not None:
        pct = 100.0 * (num(r.get(share_key)) or 0.0) / total if total else 0.0
        cells.append(f'<td class="share" data-sort="{pct:.4f}"><span class="bar" style="width:{min(pct, 100):.1f}%">'
                     f'</span><span class="pct">{pct:.1f}%</span></td>')
    return f"<tr>{''.join(cells)}</tr>"


def us(v: object) -> str:
    f = num(v)
    return fmt_ms(f / 1000.0, 2) if f is not None else "–"


KERNEL_COLS = (
    Col("name", "kernel", str, numeric=False),
    Col("calls", "calls", fmt_int),
    Col("total_ms", "total", ms),
    Col("mean_us", "mean", us, optional=True),
    Col("median_us", "median", us, optional=True),
    Col("min_us", "min", us, optional=True),
    Col("max_us", "max", us, optional=True),
    Col("std_us", "std", us, optional=True),
    Col("mean_ms", "mean", ms, optional=True),
    Col("tc_used", "Tensor Cores", yes_no, numeric=False, optional=True),
    Col("mean_blocks_per_sm", "blocks/SM", lambda v: "–" if num(v) is None else f"{num(v):.2f}", optional=True),
    Col("mean_occupancy_pct", "occupancy", fmt_pct, optional=True),
)

CATEGORY_COLS = (
    Col("category", "category", str, numeric=False),
    Col("ops", "ops", fmt_int),
    Col("activities", "kernels / copies", fmt_int),
    Col("time_ms", "time", ms),
)

OPERATOR_COLS = (
    Col("name", "operator", str, numeric=False),
    Col("calls", "calls", fmt_int),
    Col("host_self_ms", "host self", ms),
    Col("host_total_ms", "host total", ms, optional=True),
    Col("device_self_ms", "device self", ms),
    Col("device_total_ms", "device total", ms, optional=True),
    Col("tc_eligible", "TC eligible", yes_no, numeric=False, optional=True),
    Col("tc_self_pct", "TC self", fmt_pct, optional=True),
)

DIAGNOSTIC_COLS = (
    Col("severity", "severity", str, numeric=False),
    Col("name", "what", str, numeric=False),
    Col("count", "count", fmt_int),
    Col("example", "example", lambda v: str(v)[:200], numeric=False),
    Col("source", "source", str, numeric=False, optional=True),
)

DIFF_COLS = (
    Col("name", "name", str, numeric=False),
    Col("base_ms", "base", ms),
    Col("new_ms", "new", ms),
    Col("diff_ms", "diff", lambda v: ("+" if (num(v) or 0) > 0 else "") + fmt_ms(v, 2), tone=True),
    Col("ratio", "ratio", lambda v: "–" if num(v) is None else f"{num(v):.2f}×", optional=True),
    Col("status", "status", str, numeric=False, optional=True),
)
