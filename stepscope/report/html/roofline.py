"""The roofline card of the HTML report, from the JSON document's ``roofline`` section: the device
and MFU line, a log-log roofline chart (one dot per op shape at its arithmetic intensity and achieved
TFLOP/s, the memory roof and one compute roof per element type used) and the op table."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from stepscope.report.html.fmt import data_num, esc, fmt_pct, num
from stepscope.report.html.svg import WIDTH
from stepscope.report.html.tables import Col, ms, table

#: one colour per element type (dots and their compute roof)
DTYPE_COLORS = {"fp64": "#6b4c9a", "fp32": "#1f77b4", "tf32": "#17becf", "fp16": "#ff7f0e", "bf16": "#d62728",
                "fp8": "#2ca02c", "int8": "#8c564b", "": "#7f7f7f"}
LEFT, RIGHT, TOP, BOTTOM, HEIGHT = 70.0, 110.0, 14.0, 36.0, 380.0


def _g(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


def _fmt(v: object, digits: int = 1) -> str:
    x = num(v)
    return "–" if x is None else f"{x:,.{digits}f}"


ROOFLINE_COLS = (
    Col("name", "op", numeric=False), Col("dtype", "type", numeric=False), Col("kind", "kind", numeric=False),
    Col("calls", "calls", lambda v: _fmt(v, 0)), Col("gflops", "GFLOP / call", lambda v: _fmt(v, 3)),
    Col("mbytes", "MB / call", lambda v: _fmt(v, 2)), Col("time_ms", "time", ms),
    Col("tflops", "TFLOP/s", _fmt), Col("tbps", "TB/s", lambda v: _fmt(v, 3)),
    Col("intensity", "FLOP/B", _fmt), Col("bound", "bound", lambda v: str(v or "–"), numeric=False),
    Col("roof_pct", "of roof", fmt_pct), Col("peak_pct", "of peak", fmt_pct),
)


class _Axes:
    """Log-log axes: decades covering the dots and the roofs."""

    def __init__(self, xs: Sequence[float], ys: Sequence[float]) -> None:
        self.x0, self.x1 = math.floor(math.log10(min(xs))), math.ceil(math.log10(max(xs)))
        self.y0, self.y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
        self.x1, self.y1 = max(self.x1, self.x0 + 1), max(self.y1, self.y0 + 1)

    def x(self, v: float) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * (math.log10(v) - self.x0) / (self.x1 - self.x0)

    def y(self, v: float) -> float:
        return HEIGHT - BOTTOM - (HEIGHT - TOP - BOTTOM) * (math.log10(v) - self.y0) / (self.y1 - self.y0)

    def grid(self) -> list[str]:
        out = []
        for d in range(self.x0, self.x1 + 1):  # per decade
            x = self.x(10.0**d)
            out.append(f'<line class="grid" x1="{_g(x)}" y1="{_g(TOP)}" x2="{_g(x)}" y2="{_g(HEIGHT - BOTTOM)}"/>'
                       f'<text class="axis" x="{_g(x)}" y="{_g(HEIGHT - BOTTOM + 16)}" text-anchor="middle">'
                       f'{esc(f"{10.0**d:g}")}</text>')
        for d in range(self.y0, self.y1 + 1):  # per decade
            y = self.y(10.0**d)
            out.append(f'<line class="grid" x1="{_g(LEFT)}" y1="{_g(y)}" x2="{_g(WIDTH - RIGHT)}" y2="{_g(y)}"/>'
                       f'<text class="axis" x="{_g(LEFT - 6)}" y="{_g(y + 4)}" text-anchor="end">'
                       f'{esc(f"{10.0**d:g}")}</text>')
        out.append(f'<text class="axis" x="{_g((LEFT + WIDTH - RIGHT) / 2)}" y="{_g(HEIGHT - 4)}" '
                   'text-anchor="middle">arithmetic intensity (FLOP / byte)</text>'
                   f'<text class="axis" x="{_g(LEFT + 6)}" y="{_g(TOP + 24)}">TFLOP/s</text>')
        return out


def _roofs(ax: _Axes, peaks: Mapping[str, float], bandwidth: float) -> list[str]:
    """The memory roof (TFLOP/s = intensity × TB/s) up to each dtype's ridge, then its flat compute roof."""
    out = []
    for dtype, peak in peaks.items():  # per element type used
        ridge = peak / bandwidth
        xl, xr = 10.0**ax.x0, 10.0**ax.x1
        start = max(xl, 10.0**ax.y0 / bandwidth)
        color = DTYPE_COLORS.get(dtype, "#7f7f7f")
        points = (f"{_g(ax.x(start))},{_g(ax.y(start * bandwidth))} {_g(ax.x(ridge))},{_g(ax.y(peak))} "
                  f"{_g(ax.x(xr))},{_g(ax.y(peak))}")
        out.append(f'<polyline class="roof" fill="none" stroke="{color}" stroke-width="2" data-dtype="{esc(dtype)}" '
                   f'data-peak="{data_num(peak)}" data-ridge="{data_num(ridge)}" points="{points}"/>'
                   f'<text class="axis" x="{_g(ax.x(xr) + 4)}" y="{_g(ax.y(peak) + 4)}">'
                   f'{esc(dtype)} {peak:,.0f}</text>')
    return out


def roofline_svg(chart_id: str, ops: Sequence[Mapping[str, Any]], peak: Mapping[str, Any] | None) -> str:
    """Log-log roofline: one dot per op shape (area ∝ its time), the roofs when the device is known."""
    dots = [(num(o.get("intensity")), num(o.get("tflops")), o) for o in ops]
    pts = [(x, y, o) for x, y, o in dots if x and y and x > 0 and y > 0]
    if not pts:
        return '<p class="empty">No op has both FLOPs and bytes known.</p>'
    bandwidth = num((peak or {}).get("bandwidth_tbps")) or 0.0
    tflops = (peak or {}).get("tflops") or {}
    used = {str(o.get("dtype") or "") for _, _, o in pts}
    peaks = {d: float(v) for d, v in tflops.items() if d in used and num(v)} if bandwidth else {}
    xs = [x for x, _, _ in pts] + [p / bandwidth for p in peaks.values()]
    ax = _Axes(xs, [y for _, y, _ in pts] + list(peaks.values()))
    total = sum(num(o.get("time_ms")) or 0.0 for _, _, o in pts) or 1.0
    parts = [f'<svg id="{esc(chart_id)}" class="chart roofline" viewBox="0 0 {WIDTH} {_g(HEIGHT)}" role="img" '
             'aria-label="roofline: achieved TFLOP/s against arithmetic intensity" xmlns="http://www.w3.org/2000/svg">',
             *ax.grid(), *_roofs(ax, peaks, bandwidth)]
    for x, y, o in pts:  # per op shape
        r = 3.0 + 12.0 * math.sqrt((num(o.get("time_ms")) or 0.0) / total)
        tip = (f"{o.get('name', '')} ({o.get('dtype') or '?'}, {o.get('calls')} calls): {x:,.1f} FLOP/B, "
               f"{y:,.1f} TFLOP/s, {ms(o.get('time_ms'))}, {o.get('bound') or 'no bound'}")
        parts.append(f'<circle class="dot" cx="{_g(ax.x(x))}" cy="{_g(ax.y(y))}" r="{_g(r)}" '
                     f'fill="{DTYPE_COLORS.get(str(o.get("dtype") or ""), "#7f7f7f")}" fill-opacity="0.6" '
                     f'data-name="{esc(o.get("name", ""))}" data-intensity="{data_num(x)}" '
                     f'data-tflops="{data_num(y)}" data-tip="{esc(tip)}"/>')
    parts.append("</svg>")
    return "".join(parts)


def roofline_html(rank: Mapping[str, Any], rank_id: int) -> str:
    rf = rank.get("roofline")
    if not isinstance(rf, Mapping):
        return '<p class="empty">No op of known FLOPs ran on the device (or no device activity).</p>'
    peak = rf.get("peak") if isinstance(rf.get("peak"), Mapping) else None
    if peak is None:
        head = (f"Device {rf.get('device') or '(no name recorded)'} is not in the peak table: no roofs, no bound "
                "and no MFU; the dots show the FLOPs and rates measured.")
    else:
        head = (f"{rf.get('device')} → {peak.get('name')} ({peak.get('bandwidth_tbps')} TB/s; source "
                f"{peak.get('source')}). MFU {fmt_pct(rf.get('mfu_pct'))}; ops of known FLOPs cover "
                f"{fmt_pct(rf.get('covered_pct'))} of the device busy time.")
    ops = [o for o in rf.get("ops") or [] if isinstance(o, Mapping)]
    chart = roofline_svg(f"roofline-chart-r{rank_id}", ops, peak)
    return (f'<p class="note">{esc(head)}</p>' + chart
            + table(f"roofline-r{rank_id}", ROOFLINE_COLS, ops))
