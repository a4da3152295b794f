"""The diff report: ``stepscope diff BASE NEW --html`` from the §12 diff document.

Reads ``overall`` (per category base_ms / new_ms / diff_ms per average step), ``operators`` and
``kernels`` (same columns, any order: sorted here by |diff|), and when present ``gate``
(``passed`` / ``threshold_pct`` / ``slower_pct`` / ``reason``), ``narrative`` (str or list of str),
``base`` / ``new`` (source labels) and ``findings`` (with a ``status``: resolved / new / still).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from stepscope.report.html import svg
from stepscope.report.html.fmt import LABELS, esc, fmt_ms, fmt_pct, fmt_signed_ms, num, rule_title
from stepscope.report.html.page import page
from stepscope.report.html.sections import diagnostics_html, section
from stepscope.report.html.tables import DIFF_COLS, Col, table

CATEGORY_LABELS = {**LABELS, "step": "Step (end to end)", "computing": "Computing",
                   "communication_not_overlapped": "Communication not overlapped", "free": "Free (idle)"}


def by_abs_diff(rows: object) -> list[Mapping[str, Any]]:
    """Rows of a diff table, biggest absolute change first."""
    good = [r for r in rows or [] if isinstance(r, Mapping)] if isinstance(rows, Sequence) else []
    return sorted(good, key=lambda r: -abs(num(r.get("diff_ms")) or 0.0))


def gate_state(doc: Mapping[str, Any]) -> tuple[bool | None, str]:
    """(passed, sentence) of the CI gate; (None, "") when the diff ran without one."""
    gate = doc.get("gate")
    if not isinstance(gate, Mapping):
        return None, ""
    passed = gate.get("passed")
    if not isinstance(passed, bool):
        status = str(gate.get("status", gate.get("verdict", ""))).lower()
        passed = status in ("pass", "passed", "ok") if status else None
    if passed is None:
        return None, ""
    reason = gate.get("reason")
    if not isinstance(reason, str) or not reason:
        slower, limit = num(gate.get("slower_pct")), num(gate.get("threshold_pct"))
        reason = (f"new is {slower:+.1f} % vs base (limit {limit:.1f} %)"
                  if slower is not None and limit is not None else "")
    return passed, reason


def narrative(doc: Mapping[str, Any]) -> list[str]:
    """The document's narrative, or the three biggest category changes."""
    own = doc.get("narrative")
    if isinstance(own, str) and own:
        return [own]
    if isinstance(own, Sequence) and own and all(isinstance(x, str) for x in own):
        return list(own)
    rows = [r for r in by_abs_diff(doc.get("overall")) if r.get("category") not in
            ("step", "computing", "communication_not_overlapped", "free")]
    out = []
    step = next((r for r in doc.get("overall") or [] if isinstance(r, Mapping) and r.get("category") == "step"),
                None)
    if step is not None:
        out.append(f"Average step {fmt_ms(step.get('base_ms'))} → {fmt_ms(step.get('new_ms'))} "
                   f"({fmt_signed_ms(step.get('diff_ms'))}).")
    changes = [f"{CATEGORY_LABELS.get(str(r.get('category')), r.get('category'))} "
               f"{fmt_signed_ms(r.get('diff_ms'))}/step" for r in rows[:3] if num(r.get("diff_ms"))]
    if changes:
        out.append("Biggest changes: " + ", ".join(changes) + ".")
    return out


def _verdict(doc: Mapping[str, Any]) -> str:
    passed, reason = gate_state(doc)
    gate = ""
    if passed is not None:
        gate = (f'<span class="gate {"pass" if passed else "fail"}" id="gate" data-passed="{str(passed).lower()}">'
                f'gate {"passed" if passed else "FAILED"}</span> <span class="note">{esc(reason)}</span>')
    lines = "".join(f"<div>{esc(x)}</div>" for x in narrative(doc)) or "<div>No comparable numbers.</div>"
    return section("verdict", "Verdict", f'<div class="verdict" id="verdict">{lines}</div>{gate}')


def _overall(doc: Mapping[str, Any]) -> str:
    rows = [r for r in doc.get("overall") or [] if isinstance(r, Mapping)]
    if not rows:
        return section("overall", "Overall", '<p class="empty">No overall comparison in the document.</p>')
    items = [(CATEGORY_LABELS.get(str(r.get("category")), str(r.get("category"))),
              num(r.get("base_ms")) or 0.0, num(r.get("new_ms")) or 0.0) for r in rows
             if num(r.get("base_ms")) or num(r.get("new_ms"))]
    chart = svg.legend([("base", "#9aa5b1"), ("new", "#4c78a8")]) + svg.paired_hbars(
        "overall-chart", items, label="base vs new per category")
    named = [{**r, "name": CATEGORY_LABELS.get(str(r.get("category")), r.get("category"))} for r in rows]
    cols = (Col("name", "category", str, numeric=False), *DIFF_COLS[1:])
    return section("overall", "Overall (per average step)", chart + table("overall-table", cols, named, limit=100))


def _changes(sec_id: str, title: str, rows: list[Mapping[str, Any]], limit: int) -> str:
    if not rows:
        return section(sec_id, title, '<p class="empty">Nothing to compare.</p>')
    top = [(str(r.get("name", "")), num(r.get("base_ms")) or 0.0, num(r.get("new_ms")) or 0.0) for r in rows[:12]]
    chart = svg.legend([("base", "#9aa5b1"), ("new", "#4c78a8")]) + svg.paired_hbars(
        f"{sec_id}-chart", top, label=f"{title}: biggest changes")
    return section(sec_id, title, chart + table(f"{sec_id}-table", DIFF_COLS, rows, limit=limit),
                   "Sorted by absolute change; ms per average step where the diff engine says so.")


def _findings(doc: Mapping[str, Any]) -> str:
    rows = [f for f in doc.get("findings") or [] if isinstance(f, Mapping)]
    if not rows:
        return ""
    named = [{**f, "name": rule_title(f), "gain": fmt_pct(f.get("est_gain_pct"))} for f in rows]
    cols = (Col("status", "status", str, numeric=False, optional=True), Col("name", "finding", str, numeric=False),
            Col("severity", "severity", str, numeric=False, optional=True),
            Col("gain", "est. gain", str, numeric=False))
    return section("findings", "Findings compared", table("findings-table", cols, named, limit=100))


def render_diff_html(doc: Mapping[str, Any], *, title: str, limit: int = 50) -> str:
    """The diff report of one §12 diff document as one self-contained HTML page."""
    body = [_verdict(doc), _overall(doc),
            _changes("kernels", "Kernels", by_abs_diff(doc.get("kernels")), limit),
            _changes("operators", "Operators", by_abs_diff(doc.get("operators")), limit),
            _changes("runtime", "Runtime API", by_abs_diff(doc.get("runtime")), limit) if doc.get("runtime") else "",
            _findings(doc)]
    if doc.get("diagnostics"):
        body.append(diagnostics_html(doc))
    base, new = doc.get("base"), doc.get("new")
    meta = esc(f"{_label(base)} → {_label(new)}") if base or new else esc("base → new")
    nav = [("verdict", "Verdict"), ("overall", "Overall"), ("kernels", "Kernels"), ("operators", "Operators")]
    small = {**doc, **{k: by_abs_diff(doc.get(k))[:limit] for k in ("operators", "kernels", "runtime") if k in doc}}
    return page(title=title, kind="diff", meta=meta, nav=nav, body="".join(body), doc=small)


def diff_title(doc: Mapping[str, Any]) -> str:
    """"stepscope diff · <base name> → <new name>" from the sides' sources."""
    names = [Path(_label(doc.get(k)).rstrip("/")).name for k in ("base", "new")]
    return "stepscope diff" + (f" · {names[0]} → {names[1]}" if all(n not in ("", "?") for n in names) else "")


def findings_summary(doc: Mapping[str, Any]) -> str:
    """"resolved 1 · new 2 · still 3" from the compared findings' ``status``; '' without."""
    counts: dict[str, int] = {}
    for f in doc.get("findings") or []:
        if isinstance(f, Mapping) and f.get("status"):
            counts[str(f["status"])] = counts.get(str(f["status"]), 0) + 1
    return " · ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def _label(side: object) -> str:
    if isinstance(side, Mapping):
        return str(side.get("source") or side.get("path") or side.get("label") or "?")
    return str(side) if side else "?"
