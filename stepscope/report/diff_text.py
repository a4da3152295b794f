"""Words of a §12 diff document shared by its renderers (the Markdown summary, the standalone page's
title): the gate sentence, the narrative, the findings' counts, the title.

Reads ``overall`` (per category base_ms / new_ms / diff_ms per average step), ``operators`` and
``kernels`` (any order: sorted here by |diff|), and when present ``gate`` (``passed`` /
``threshold_pct`` / ``slower_pct`` / ``reason``), ``narrative`` (str or list of str), ``base`` /
``new`` (source labels) and ``findings`` (with a ``status``: resolved / new / still).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from stepscope.report.fmt import LABELS, fmt_ms, fmt_signed_ms, num

CATEGORY_LABELS = {**LABELS, "step": "Step (end to end)", "computing": "Computing",
                   "communication_not_overlapped": "Communication not overlapped", "free": "Free (no kernel, no comm)"}


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
