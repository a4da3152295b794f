"""Draw a :class:`TimelineData` snapshot as one inline SVG: lanes, blocks, highlighted periods."""

from __future__ import annotations

from stepscope.report.html.fmt import esc, fmt_ms
from stepscope.report.html.svg import WIDTH, _c, legend, nice_ticks
from stepscope.report.html.timeline_data import HIGHLIGHT, KINDS, TimelineData

KIND_COLORS = {"other": "#bab0ac", "cpu_op": "#b279a2", "annotation": "#9d755d", "python": "#d6a5c9",
               "runtime": "#54a24b", "kernel": "#4c78a8", "memcpy": "#f58518", "memset": "#e45756",
               "communication": "#72b7b2", "dataloader": "#eeca3b", "sync": "#d62728"}
KIND_LABELS = {"cpu_op": "CPU op", "annotation": "annotation", "python": "Python", "runtime": "runtime call",
               "kernel": "kernel", "memcpy": "memcpy", "memset": "memset", "communication": "communication",
               "dataloader": "DataLoader", "sync": "sync call", "other": "other"}
LABEL_W = 190.0
AXIS_H = 26.0
CPU_ROW = 13.0
GPU_ROW = 22.0


def _lane_tops(tl: TimelineData) -> tuple[list[float], list[float], float]:
    """Top y and row height per lane, and the total height."""
    tops, rows, y = [], [], AXIS_H
    for depths, gpu in zip(tl.lane_depths, tl.lane_is_gpu):
        row = GPU_ROW if gpu else CPU_ROW
        tops.append(y)
        rows.append(row)
        y += row * depths + 8
    return tops, rows, y + 4


def render_timeline(tl: TimelineData, chart_id: str = "timeline") -> str:
    """The snapshot SVG plus its legend; an explanatory line when there is nothing to draw."""
    if len(tl) == 0 or tl.end_ns <= tl.start_ns:
        return '<p class="empty">No events to draw for this trace.</p>'
    tops, rows, height = _lane_tops(tl)
    span = tl.end_ns - tl.start_ns
    plot_w = WIDTH - LABEL_W - 6
    k = plot_w / span
    parts = [f'<svg id="{esc(chart_id)}" class="chart timeline" viewBox="0 0 {WIDTH} {_c(height)}" '
             f'role="img" aria-label="timeline of one step" data-step="{esc(tl.step)}" '
             f'data-window-ms="{span / 1e6:.3f}" data-blocks="{len(tl)}" xmlns="http://www.w3.org/2000/svg">']
    parts += _axis(span, height, k)
    for i, label in enumerate(tl.lanes):
        lane_h = rows[i] * tl.lane_depths[i]
        parts.append(f'<rect class="lane" x="{LABEL_W:g}" y="{_c(tops[i])}" width="{_c(plot_w)}" '
                     f'height="{_c(lane_h)}"/>')
        short = label if len(label) <= 30 else label[:28] + "…"
        parts.append(f'<text class="name" x="{LABEL_W - 8:g}" y="{_c(tops[i] + min(lane_h, 22) / 2 + 4)}" '
                     f'text-anchor="end">{esc(short)}</text>')
    parts += _bands(tl, height, k)
    parts += _blocks(tl, tops, rows, k)
    parts.append("</svg>")
    used = sorted(set(int(x) for x in tl.kind.tolist()))
    keys = [(KIND_LABELS[KINDS[c]], KIND_COLORS[KINDS[c]]) for c in used]
    note = (f'<p class="note">Step {esc(tl.step)} of rank {tl.rank}: {fmt_ms(span / 1e6)} window, '
            f'{tl.source_events:,} events drawn as {len(tl):,} blocks (runs of sub-pixel events merged). '
            'Shaded columns: DataLoader (yellow) and synchronisation (red) periods.</p>')
    return parts[0] + "".join(parts[1:]) + legend(keys) + note


def _axis(span: int, height: float, k: float) -> list[str]:
    out = []
    for t in nice_ticks(span / 1e6, 8):
        x = LABEL_W + t * 1e6 * k
        if t * 1e6 > span:
            break
        out.append(f'<line class="grid" x1="{_c(x)}" x2="{_c(x)}" y1="{AXIS_H - 4:g}" y2="{_c(height)}"/>')
        out.append(f'<text class="axis" x="{_c(x)}" y="14" text-anchor="middle">{t:g} ms</text>')
    return out


def _bands(tl: TimelineData, height: float, k: float) -> list[str]:
    """Full-height translucent columns behind DataLoader and sync periods."""
    out = []
    codes = {KINDS.index(h): h for h in HIGHLIGHT}
    for i in range(len(tl)):
        kind = codes.get(int(tl.kind[i]))
        if kind is None:
            continue
        x = LABEL_W + float(tl.rel_start_ns[i]) * k
        w = max(float(tl.dur_ns[i]) * k, 1.0)
        out.append(f'<rect class="band band-{kind}" x="{_c(x)}" y="{AXIS_H - 4:g}" width="{_c(w)}" '
                   f'height="{_c(height - AXIS_H + 4)}"/>')
    return out


def _blocks(tl: TimelineData, tops: list[float], rows: list[float], k: float) -> list[str]:
    out = []
    for i in range(len(tl)):
        lane = int(tl.lane[i])
        kind = KINDS[int(tl.kind[i])]
        x = LABEL_W + float(tl.rel_start_ns[i]) * k
        w = max(float(tl.dur_ns[i]) * k, 0.4)
        y = tops[lane] + rows[lane] * int(tl.depth[i])
        dur_ms = float(tl.dur_ns[i]) / 1e6
        tip = f"{tl.names[i]} · {KIND_LABELS[kind]} · {fmt_ms(dur_ms, 3)} at +{float(tl.rel_start_ns[i]) / 1e6:.3f} ms"
        out.append(f'<rect class="ev" x="{_c(x)}" y="{_c(y + 1)}" width="{_c(w)}" height="{_c(rows[lane] - 2)}" '
                   f'fill="{KIND_COLORS[kind]}" data-kind="{kind}" data-tip="{esc(tip)}"/>')
    return out
