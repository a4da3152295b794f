"""Inline SVG charts, generated on the server: no chart library, nothing to fetch.

Each chart is one ``<svg>`` string with a fixed ``viewBox`` that scales with the page. Every mark
carries its numbers in ``data-*`` attributes (what the browser test reads back) and a ``data-tip``
text that the page's small script shows on hover. All text is escaped with :func:`esc`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from stepscope.report.html.fmt import data_num, esc, fmt_ms

WIDTH = 1000


@dataclass(frozen=True)
class Series:
    """One named, coloured value per column (a layer of a stacked chart, a line of a line chart)."""

    key: str
    label: str
    color: str
    values: Sequence[float]


def nice_ticks(vmax: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``vmax``."""
    if vmax <= 0 or not math.isfinite(vmax):
        return [0.0, 1.0]
    raw = vmax / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    n = math.ceil(vmax / step - 1e-9)
    return [round(i * step, 10) for i in range(n + 1)]


def nice_range(lo: float, hi: float, count: int = 6) -> list[float]:
    """Round tick values inside [lo, hi] (e.g. a time axis that does not start at 0)."""
    span = hi - lo
    if span <= 0 or not math.isfinite(span):
        return [lo]
    step = nice_ticks(span, count)[1]
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step + 1e-9) + 1)]


def _c(x: float) -> str:
    """A coordinate with one decimal (keeps big charts small)."""
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _open(chart_id: str, height: float, label: str) -> str:
    return (f'<svg id="{esc(chart_id)}" class="chart" viewBox="0 0 {WIDTH} {_c(height)}" '
            f'role="img" aria-label="{esc(label)}" xmlns="http://www.w3.org/2000/svg">')


def _y_axis(ticks: list[float], x0: float, x1: float, y_of: dict[float, float], unit: str) -> list[str]:
    out = []
    for t in ticks:
        y = _c(y_of[t])
        out.append(f'<line class="grid" x1="{_c(x0)}" x2="{_c(x1)}" y1="{y}" y2="{y}"/>')
        out.append(f'<text class="axis" x="{_c(x0 - 6)}" y="{y}" text-anchor="end" '
                   f'dominant-baseline="middle">{esc(f"{t:g}")}{esc(unit)}</text>')
    return out


def stacked_columns(chart_id: str, columns: Sequence[str], layers: Sequence[Series], *,
                    unit: str = " ms", height: float = 280, label: str = "") -> str:
    """Vertical stacked bars, one per column (e.g. per step), one segment per layer."""
    n = len(columns)
    totals = [sum(s.values[i] for s in layers) for i in range(n)]
    ticks = nice_ticks(max(totals, default=0.0))
    left, right, top, bottom = 64.0, 8.0, 12.0, 34.0
    plot_h = height - top - bottom
    scale = plot_h / ticks[-1]
    y_of = {t: top + plot_h - t * scale for t in ticks}
    slot = (WIDTH - left - right) / max(n, 1)
    bar_w = max(min(slot * 0.7, 64.0), 1.0)
    parts = [_open(chart_id, height, label), *_y_axis(ticks, left, WIDTH - right, y_of, unit)]
    label_every = max(1, math.ceil(n / 25))
    for i, col in enumerate(columns):
        x = left + slot * i + (slot - bar_w) / 2
        y = top + plot_h
        parts.append(f'<g class="col" data-col="{esc(col)}" data-total="{data_num(totals[i])}">')
        for s in layers:
            v = s.values[i]
            if v <= 0:
                continue
            h = v * scale
            y -= h
            tip = f"{col} · {s.label}: {fmt_ms(v, 2)} of {fmt_ms(totals[i], 2)}"
            parts.append(f'<rect class="seg" x="{_c(x)}" y="{_c(y)}" width="{_c(bar_w)}" '
                         f'height="{_c(max(h, 0.3))}" fill="{s.color}" data-col="{esc(col)}" '
                         f'data-cat="{esc(s.key)}" data-value="{data_num(v)}" data-tip="{esc(tip)}"/>')
        parts.append("</g>")
        if i % label_every == 0:
            parts.append(f'<text class="axis" x="{_c(x + bar_w / 2)}" y="{_c(height - bottom + 16)}" '
                         f'text-anchor="middle">{esc(col)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def share_bar(chart_id: str, layers: Sequence[Series], *, total: float, label: str = "") -> str:
    """One horizontal 100 % bar split into layers (each layer's first value), labelled with shares."""
    height = 44.0
    parts = [_open(chart_id, height, label)]
    x = 0.0
    denom = total if total > 0 else sum(s.values[0] for s in layers) or 1.0
    for s in layers:
        v = s.values[0]
        if v <= 0:
            continue
        w = WIDTH * v / denom
        pct = 100.0 * v / denom
        tip = f"{s.label}: {fmt_ms(v, 2)} ({pct:.1f} %)"
        parts.append(f'<rect class="seg" x="{_c(x)}" y="4" width="{_c(w)}" height="36" fill="{s.color}" '
                     f'data-cat="{esc(s.key)}" data-value="{data_num(v)}" data-tip="{esc(tip)}"/>')
        text = f"{s.label} {pct:.0f}%"
        if w > 7.5 * len(text) + 12:
            parts.append(f'<text class="inbar" x="{_c(x + 6)}" y="27">{esc(text)}</text>')
        elif w > 7.5 * len(f"{pct:.0f}%") + 10:
            parts.append(f'<text class="inbar" x="{_c(x + 5)}" y="27">{pct:.0f}%</text>')
        x += w
    parts.append("</svg>")
    return "".join(parts)


def hbars(chart_id: str, items: Sequence[tuple[str, float, str]], *, color: str, label: str = "",
          value_fmt: str = "pct", colors: Sequence[str] | None = None) -> str:
    """Horizontal bars with a name column: ``items`` are (name, value, tooltip), largest first."""
    row_h, name_w = 21.0, 380.0
    height = row_h * len(items) + 8
    vmax = max((v for _, v, _ in items), default=0.0) or 1.0
    parts = [_open(chart_id, height, label)]
    for i, (name, v, tip) in enumerate(items):
        y = 4 + i * row_h
        w = (WIDTH - name_w - 90) * max(v, 0.0) / vmax
        short = name if len(name) <= 58 else name[:55] + "…"
        shown = f"{v:.1f} %" if value_fmt == "pct" else fmt_ms(v, 2)
        parts.append(f'<text class="name" x="{_c(name_w - 8)}" y="{_c(y + 16)}" text-anchor="end">'
                     f'{esc(short)}</text>')
        parts.append(f'<rect class="seg" x="{_c(name_w)}" y="{_c(y + 3)}" width="{_c(max(w, 1.0))}" '
                     f'height="{_c(row_h - 6)}" fill="{colors[i] if colors else color}" data-name="{esc(name)}" '
                     f'data-value="{data_num(v)}" data-tip="{esc(tip)}"/>')
        parts.append(f'<text class="axis" x="{_c(name_w + w + 6)}" y="{_c(y + 16)}">{esc(shown)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def line_chart(chart_id: str, xs: Sequence[float], lines: Sequence[Series], *, x_unit: str = " ms",
               y_unit: str = "", height: float = 240, label: str = "") -> str:
    """Lines over a shared x axis (e.g. memory over time); points are drawn as given."""
    left, right, top, bottom = 70.0, 12.0, 12.0, 30.0
    plot_w, plot_h = WIDTH - left - right, height - top - bottom
    ymax = max((max(s.values, default=0.0) for s in lines), default=0.0)
    ticks = nice_ticks(ymax)
    x0, x1 = (xs[0], xs[-1]) if xs else (0.0, 1.0)
    xspan = (x1 - x0) or 1.0
    y_of = {t: top + plot_h - plot_h * t / ticks[-1] for t in ticks}
    parts = [_open(chart_id, height, label), *_y_axis(ticks, left, WIDTH - right, y_of, y_unit)]
    for t in nice_range(x0, x1, 6):
        x = _c(left + plot_w * (t - x0) / xspan)
        parts.append(f'<line class="grid" x1="{x}" x2="{x}" y1="{_c(top)}" y2="{_c(top + plot_h)}"/>')
        parts.append(f'<text class="axis" x="{x}" y="{_c(height - 10)}" text-anchor="middle">'
                     f'{esc(f"{t:g}")}{esc(x_unit)}</text>')
    for s in lines:
        pts = " ".join(f"{_c(left + plot_w * (x - x0) / xspan)},{_c(top + plot_h - plot_h * y / ticks[-1])}"
                       for x, y in zip(xs, s.values))
        peak = max(s.values, default=0.0)
        parts.append(f'<polyline class="line" points="{pts}" stroke="{s.color}" fill="none" '
                     f'data-series="{esc(s.key)}" data-peak="{data_num(peak)}" data-points="{len(s.values)}" '
                     f'data-tip="{esc(f"{s.label}: peak {peak:,.1f}{y_unit}")}"/>')
    parts.append("</svg>")
    return "".join(parts)


def legend(layers: Sequence[tuple[str, str]] | Mapping[str, str]) -> str:
    """An HTML legend: (label, colour) pairs."""
    pairs = layers.items() if isinstance(layers, Mapping) else layers
    items = "".join(f'<span class="key"><i style="background:{c}"></i>{esc(lbl)}</span>' for lbl, c in pairs)
    return f'<div class="legend">{items}</div>'


def paired_hbars(chart_id: str, items: Sequence[tuple[str, float, float]], *, label: str = "",
                 colors: tuple[str, str] = ("#9aa5b1", "#4c78a8")) -> str:
    """Base vs new per name: two thin horizontal bars per row, the diff written at the end."""
    row_h, name_w = 34.0, 240.0
    height = row_h * len(items) + 8
    vmax = max((max(b, n) for _, b, n in items), default=0.0) or 1.0
    span = WIDTH - name_w - 150
    parts = [_open(chart_id, height, label)]
    for i, (name, base, new) in enumerate(items):
        y = 4 + i * row_h
        short = name if len(name) <= 36 else name[:33] + "…"
        parts.append(f'<text class="name" x="{_c(name_w - 8)}" y="{_c(y + 19)}" text-anchor="end">{esc(short)}</text>')
        for j, (side, v) in enumerate((("base", base), ("new", new))):
            w = span * max(v, 0.0) / vmax
            tip = f"{name} · {side}: {fmt_ms(v, 3)}"
            parts.append(f'<rect class="seg" x="{_c(name_w)}" y="{_c(y + 3 + j * 14)}" width="{_c(max(w, 1.0))}" '
                         f'height="12" fill="{colors[j]}" data-name="{esc(name)}" data-side="{side}" '
                         f'data-value="{data_num(v)}" data-tip="{esc(tip)}"/>')
        d = new - base
        cls = "pos" if d > 0 else "neg" if d < 0 else ""
        sign = "+" if d > 0 else "−" if d < 0 else "±"
        parts.append(f'<text class="axis {cls}" x="{_c(name_w + span + 10)}" y="{_c(y + 19)}">'
                     f'{sign}{esc(fmt_ms(abs(d), 2))}</text>')
    parts.append("</svg>")
    return "".join(parts)
