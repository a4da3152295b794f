"""The sections of the analysis report, each built from the §12 document (plain dicts) only."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from stepscope.report.html import svg
from stepscope.report.html.fmt import (
    BREAKDOWN,
    COLORS,
    LABELS,
    SEVERITY_ORDER,
    advisor_verdict,
    breakdown_values,
    esc,
    fmt_bytes,
    fmt_int,
    fmt_ms,
    fmt_pct,
    num,
    rule_title,
    verdict_text,
)
from stepscope.report.html.series import MemoryCurve
from stepscope.report.html.tables import CATEGORY_COLS, DIAGNOSTIC_COLS, KERNEL_COLS, OPERATOR_COLS, table
from stepscope.report.html.whatif import finding_link

Doc = Mapping[str, Any]
MAX_STEP_BARS = 300


def section(sec_id: str, title: str, body: str, sub: str = "") -> str:
    subtitle = f'<p class="sub">{esc(sub)}</p>' if sub else ""
    return f'<section id="{esc(sec_id)}" class="card"><h2>{esc(title)}</h2>{subtitle}{body}</section>'


# ---- findings -------------------------------------------------------------------------------------

def findings_html(doc: Doc) -> str:
    """The top card: verdict, headline numbers, the average step split, and the ranked findings."""
    findings = [f for f in doc.get("findings") or [] if isinstance(f, Mapping)]
    verdict = f'<div class="verdict" id="verdict">{esc(verdict_text(doc))}</div>'
    if findings and advisor_verdict(doc):
        verdict = verdict.replace("</div>", f'<div class="next">Biggest opportunity: '
                                  f'{esc(rule_title(findings[0]))} — '
                                  f'{esc(fmt_ms(findings[0].get("est_gain_ms")))} per step</div></div>', 1)
    head = verdict + _headline(doc)
    if not findings:
        body = head + '<h3>Findings</h3><p class="empty" id="no-findings">no findings</p>'
        return section("findings", "Verdict", body).replace('class="card"', 'class="card hero"', 1)
    ranks = [r.get("rank") for r in doc.get("ranks") or [] if isinstance(r, Mapping)]
    first = ranks[0] if ranks and isinstance(ranks[0], int) else None
    cards = "".join(_finding_card(i + 1, f, first, open_evidence=i < 2) for i, f in enumerate(findings))
    body = (head + f"<h3>Findings ({len(findings)}), ranked by estimated gain per step</h3>"
            f'<ol class="findings">{cards}</ol>')
    return section("findings", "Verdict", body).replace('class="card"', 'class="card hero"', 1)


def _headline(doc: Doc) -> str:
    """Key numbers and the average-step split bar of the first rank."""
    ranks = [r for r in doc.get("ranks") or [] if isinstance(r, Mapping)]
    if not ranks:
        return ""
    r = ranks[0]
    ov = r.get("overview") or {}
    avg_bd = breakdown_values(ov.get("breakdown_ms"))
    avg = num(ov.get("avg_step_ms")) or sum(avg_bd.values())
    if not avg:
        return ""
    top = max(avg_bd, key=lambda k: avg_bd[k])
    idle = r.get("idle") if isinstance(r.get("idle"), Mapping) else {}
    stats = [("average step" + (f" (rank {r.get('rank')})" if len(ranks) > 1 else ""), fmt_ms(avg)),
             ("GPU utilization", fmt_pct(ov.get("gpu_utilization_pct"))),
             ("GPU idle per step", fmt_ms((idle or {}).get("idle_ms"))),
             (f"largest part: {LABELS[top]}", fmt_pct(100.0 * avg_bd[top] / avg)),
             ("steps / s", "–" if num(ov.get("steps_per_s")) is None else f"{num(ov.get('steps_per_s')):.2f}"),
             ("steps profiled", fmt_int(ov.get("step_count")))]
    tiles = "".join(f'<div class="stat"><div class="v">{esc(v)}</div><div class="k">{esc(k)}</div></div>'
                    for k, v in stats if v != "–")
    out = f'<div class="stats">{tiles}</div>'
    if any(avg_bd.values()):
        layers = [svg.Series(k, label, c, [avg_bd[k]]) for k, label, c in BREAKDOWN]
        out += svg.share_bar("headline-breakdown", layers, total=avg, label="average step split")
        out += svg.legend([(label, colour) for _, label, colour in BREAKDOWN])
    return out


def _finding_card(pos: int, f: Mapping[str, Any], first_rank: int | None, *, open_evidence: bool = True) -> str:
    sev = str(f.get("severity", "low"))
    sev_cls = sev if sev in SEVERITY_ORDER else "low"
    rank = f.get("rank")
    where = f" · rank {esc(rank)}" if rank is not None else ""
    gain_ms, gain_pct = num(f.get("est_gain_ms")), num(f.get("est_gain_pct"))
    gain = (f'<span class="gain" data-gain-ms="{gain_ms if gain_ms is not None else ""}">'
            f'save ≈ {esc(fmt_ms(gain_ms))} / step ({esc(fmt_pct(gain_pct))})</span>')
    advice = f.get("advice")
    advice_html = f'<div class="advice">{esc(advice)}</div>' if advice else ""
    basis = f.get("basis")
    if isinstance(basis, str) and basis:
        advice_html += f'<div class="note">Estimate: {esc(basis)} {finding_link(f, first_rank)}</div>'
    steps = f.get("steps")
    if isinstance(steps, list) and steps:
        shown = ", ".join(str(x) for x in steps[:12]) + (" …" if len(steps) > 12 else "")
        advice_html += f'<div class="note">Steps: {esc(shown)}</div>'
    return (f'<li class="finding sev-{sev_cls}" data-rule="{esc(f.get("rule", ""))}">'
            f'<div class="fhead"><span class="badge {sev_cls}">{esc(sev)}</span>'
            f'<span class="ftitle">{pos}. {esc(rule_title(f))}</span>'
            f'<code class="rule">{esc(f.get("rule", ""))}</code>{where}{gain}</div>'
            f'{advice_html}{evidence_html(f.get("evidence"), open_evidence)}</li>')


def evidence_html(evidence: object, is_open: bool = True) -> str:
    """Evidence as a key/value grid; nested values as compact JSON (escaped, truncated)."""
    if not isinstance(evidence, Mapping) or not evidence:
        return ""
    items = []
    for k, v in list(evidence.items())[:24]:
        if v is None:  # unknown: left out rather than shown as null
            continue
        if isinstance(v, float):
            text = f"{v:,.3f}".rstrip("0").rstrip(".")
        elif isinstance(v, (str, int)):
            text = str(v)
        else:
            text = json.dumps(v, default=str)
        text = text if len(text) <= 300 else text[:297] + "…"
        items.append(f"<dt>{esc(k)}</dt><dd>{esc(text)}</dd>")
    attr = " open" if is_open else ""
    return f'<details class="evidence"{attr}><summary>evidence</summary><dl>{"".join(items)}</dl></details>'


# ---- overview -------------------------------------------------------------------------------------

def overview_html(rank: Mapping[str, Any]) -> str:
    ov = rank.get("overview") or {}
    gpu = rank.get("gpu") or {}
    stats = [("avg step", fmt_ms(ov.get("avg_step_ms"))), ("steps", fmt_int(ov.get("step_count"))),
             ("GPU utilization", fmt_pct(ov.get("gpu_utilization_pct"))),
             ("est. SM efficiency", fmt_pct(ov.get("sm_efficiency_pct"))),
             ("est. achieved occupancy", fmt_pct(ov.get("achieved_occupancy_pct"))),
             ("Tensor Core kernel time", fmt_pct(ov.get("tensor_core_pct"))),
             ("GPU busy", fmt_ms(gpu.get("busy_ms"))), ("GPU span", fmt_ms(gpu.get("span_ms")))]
    for key, label in (("steps_per_s", "steps / s"), ("samples_per_s", "samples / s")):
        if num(ov.get(key)) is not None:
            stats.append((label, f"{num(ov.get(key)):,.2f}"))
    tiles = "".join(f'<div class="stat"><div class="v">{esc(v)}</div><div class="k">{esc(k)}</div></div>'
                    for k, v in stats if v != "–")
    missing = "" if ov else '<p class="note">Step overview not available (no steps, or the view did not run).</p>'
    return f'<div class="stats">{tiles}</div>{missing}{device_html(rank.get("device"))}'


def device_html(dev: object) -> str:
    if not isinstance(dev, Mapping):
        return '<p class="note">Device: no GPU activity in this rank (CPU only).</p>'
    bits = [str(dev.get("name", "device"))]
    if dev.get("sm_count"):
        bits.append(f"{dev['sm_count']} SMs")
    if dev.get("total_memory_bytes"):
        bits.append(fmt_bytes(dev["total_memory_bytes"]))
    if dev.get("compute_capability"):
        bits.append(f"compute capability {dev['compute_capability']}")
    return f'<p class="note">Device: {esc(" · ".join(bits))}</p>'


# ---- step breakdown -------------------------------------------------------------------------------

def breakdown_html(rank: Mapping[str, Any], rank_id: int) -> str:
    ov = rank.get("overview") or {}
    steps = [s for s in rank.get("steps") or [] if isinstance(s, Mapping)]
    if not ov.get("breakdown_ms") and not steps:
        return '<p class="empty">No step breakdown for this rank (no ProfilerStep spans, or the view did not run).</p>'
    avg_bd = breakdown_values(ov.get("breakdown_ms"))
    avg = num(ov.get("avg_step_ms")) or sum(avg_bd.values())
    left = ""
    if any(avg_bd.values()):
        left = f'<h3>Average step: {esc(fmt_ms(avg))}</h3>' + _avg_table(avg_bd, avg)
    right = ""
    if steps:
        shown = steps if len(steps) <= MAX_STEP_BARS else steps[:: -(-len(steps) // MAX_STEP_BARS)]
        cols = [str(s.get("step", i)) for i, s in enumerate(shown)]
        bds = [breakdown_values(s.get("breakdown_ms")) for s in shown]
        layers = [svg.Series(k, label, c, [bd[k] for bd in bds]) for k, label, c in BREAKDOWN]
        note = "" if len(shown) == len(steps) else f" (every {len(steps) // len(shown)}th of {len(steps):,})"
        right = (f"<h3>Per step{esc(note)}</h3>" + svg.legend([(label, colour) for _, label, colour in BREAKDOWN])
                 + svg.stacked_columns(f"step-chart-r{rank_id}", cols, layers, label="time per step"))
    return f'<div class="split"><div>{left}</div><div>{right}</div></div>'


def _avg_table(bd: Mapping[str, float], avg: float) -> str:
    rows = "".join(f'<tr><td class="txt"><i class="sw" style="background:{COLORS[k]}"></i>{esc(LABELS[k])}</td>'
                   f'<td class="num">{esc(fmt_ms(v, 2))}</td>'
                   f'<td class="num">{esc(fmt_pct(100.0 * v / avg if avg else None))}</td></tr>'
                   for k, v in bd.items())
    return (f'<div class="tablewrap"><table class="data"><thead><tr><th class="txt">category</th>'
            f'<th class="num">ms / step</th><th class="num">share</th></tr></thead><tbody>{rows}'
            f"</tbody></table></div>")


# ---- kernels / operators --------------------------------------------------------------------------

def kernels_html(rank: Mapping[str, Any], rank_id: int, limit: int) -> str:
    rows = [k for k in rank.get("kernels") or [] if isinstance(k, Mapping)]
    if not rows:
        return '<p class="empty">No kernels (CPU-only trace, or the kernel view did not run).</p>'
    total = sum(num(k.get("total_ms")) or 0.0 for k in rows)
    busy = num((rank.get("gpu") or {}).get("busy_ms"))
    items = [(str(k.get("name", "")), _share(k, total),
              f"{k.get('name', '')}: {fmt_ms(k.get('total_ms'), 3)} in {fmt_int(k.get('calls'))} calls")
             for k in rows]
    items = sorted(items, key=lambda it: -it[1])[:10]
    chart = svg.hbars(f"kernel-chart-r{rank_id}", items, color=COLORS["kernel"], label="top kernels by time")
    sub = f'<p class="note">Share of all kernel time ({esc(fmt_ms(total))}'
    sub += f"; GPU busy {esc(fmt_ms(busy))})</p>" if busy is not None else ")</p>"
    return chart + sub + table(f"kernels-r{rank_id}", KERNEL_COLS, rows, limit=limit, share_key="total_ms",
                               share_total=total)


def _share(row: Mapping[str, Any], total: float) -> float:
    own = num(row.get("share_pct"))
    if own is not None:
        return own
    return 100.0 * (num(row.get("total_ms")) or 0.0) / total if total else 0.0


def categories_html(rank: Mapping[str, Any], rank_id: int) -> str:
    cat = rank.get("categories")
    rows = [c for c in (cat or {}).get("categories") or [] if isinstance(c, Mapping) and c.get("activities")]
    if not rows:
        return '<p class="empty">No device activity (CPU-only trace, or the categories view did not run).</p>'
    items = [(str(c.get("category", "")), num(c.get("share_pct")) or 0.0,
              f"{c.get('category', '')}: {fmt_ms(c.get('time_ms'), 3)}, {fmt_int(c.get('ops'))} ops") for c in rows]
    chart = svg.hbars(f"category-chart-r{rank_id}", items, color=COLORS["kernel"], label="device time by category")
    total = num((cat or {}).get("total_ms")) or 0.0
    sub = f'<p class="note">Share of all device time ({esc(fmt_ms(total))}).</p>'
    return chart + sub + table(f"categories-r{rank_id}", CATEGORY_COLS, rows, share_key="time_ms", share_total=total)


def operators_html(rank: Mapping[str, Any], rank_id: int, limit: int) -> str:
    rows = [o for o in rank.get("operators") or [] if isinstance(o, Mapping)]
    if not rows:
        return '<p class="empty">No operators (the operator view did not run, or the trace has none).</p>'
    dev_total = sum(num(o.get("device_self_ms")) or 0.0 for o in rows)
    key = "device_self_ms" if dev_total > 0 else "host_self_ms"
    total = dev_total if dev_total > 0 else sum(num(o.get("host_self_ms")) or 0.0 for o in rows)
    top = sorted(rows, key=lambda o: -(num(o.get(key)) or 0.0))[:10]
    what = "device" if key == "device_self_ms" else "host"
    items = [(str(o.get("name", "")), 100.0 * (num(o.get(key)) or 0.0) / total if total else 0.0,
              f"{o.get('name', '')}: {what} self {fmt_ms(o.get(key), 3)}") for o in top]
    chart = svg.hbars(f"operator-chart-r{rank_id}", items, color=COLORS["cpu_exec"], label="top operators")
    return (chart + f'<p class="note">Share of {what} self time ({esc(fmt_ms(total))}).</p>'
            + table(f"operators-r{rank_id}", OPERATOR_COLS, rows, limit=limit, share_key=key, share_total=total))


# ---- memory, idle, distributed, diagnostics -------------------------------------------------------

def memory_html(curves: Sequence[MemoryCurve], rank_id: int) -> str:
    if not curves:
        return ""
    out = []
    for i, c in enumerate(curves):
        lines = [svg.Series("allocated", "allocated", "#4c78a8", c.allocated_mb)]
        if c.reserved_mb is not None:
            lines.append(svg.Series("reserved", "reserved", "#f58518", c.reserved_mb))
        out.append(f"<h3>{esc(c.device)}: peak allocated {c.peak_allocated_mb:,.1f} MiB</h3>")
        out.append(svg.legend([(s.label, s.color) for s in lines]))
        out.append(svg.line_chart(f"memory-chart-r{rank_id}-{i}", c.ts_ms, lines, y_unit=" MiB",
                                  label=f"memory of {c.device}"))
    return section(f"memory-r{rank_id}", "Memory", "".join(out),
                   "Allocator totals over the profiled window (min/max per pixel kept).")


def idle_html(rank: Mapping[str, Any], rank_id: int) -> str:
    idle = rank.get("idle")
    if not isinstance(idle, Mapping):
        return ""
    keys = (("host_wait_ms", "host wait (CPU late)", "#e45756"), ("kernel_wait_ms", "kernel wait", "#f58518"),
            ("other_ms", "other", "#bab0ac"))
    layers = [svg.Series(k, label, c, [num(idle.get(k)) or 0.0]) for k, label, c in keys]
    total = sum(s.values[0] for s in layers)
    body = (svg.legend([(s.label, s.color) for s in layers])
            + svg.share_bar(f"idle-chart-r{rank_id}", layers, total=total, label="GPU idle time")
            + f'<p class="note">GPU idle {esc(fmt_ms(total, 2))} per average step.</p>')
    return section(f"idle-r{rank_id}", "GPU idle time", body, "Why the GPU waited, per average step.")


def diagnostics_html(doc: Doc) -> str:
    diags = [d for d in doc.get("diagnostics") or [] if isinstance(d, Mapping)]
    body = (table("diagnostics", DIAGNOSTIC_COLS, diags, limit=200) if diags else
            '<p class="empty ok" id="no-diagnostics">Ingest: no repairs, nothing dropped.</p>')
    return section("diagnostics", "Ingest diagnostics", body, "What ingest repaired, dropped or could not read.")
