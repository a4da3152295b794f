"""Formatting shared by the Markdown renderer and the standalone page: numbers, category labels,
verdict words, and the cut of a very long text (:func:`clip`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

#: SPEC §4 breakdown categories in priority order, with display label and colour.
BREAKDOWN: tuple[tuple[str, str, str], ...] = (
    ("kernel", "Kernel", "#4c78a8"),
    ("memcpy", "Memcpy", "#f58518"),
    ("memset", "Memset", "#e45756"),
    ("communication", "Communication", "#72b7b2"),
    ("runtime", "Runtime", "#54a24b"),
    ("dataloader", "DataLoader", "#eeca3b"),
    ("cpu_exec", "CPU Exec", "#b279a2"),
    ("other", "Other", "#bab0ac"),
)
BREAKDOWN_KEYS = tuple(k for k, _, _ in BREAKDOWN)
LABELS = {k: label for k, label, _ in BREAKDOWN}
COLORS = {k: colour for k, _, colour in BREAKDOWN}

SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}


#: the most characters of one text the standalone page embeds: a 200 MB kernel name made a 1.2 GB page (the
#: middle of a longer text is elided; the ``--json`` document keeps it whole)
TEXT_LIMIT = 1 << 16


def clip(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text``, or its head and tail around a note of how much was left out when longer than ``limit``."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]} … ({len(text) - 2 * half:,} characters) … {text[-half:]}"


def num(value: object) -> float | None:
    """A finite float, or None for null / NaN / non-numbers."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def fmt_ms(value: object, digits: int = 1) -> str:
    f = num(value)
    if f is None:
        return "–"
    if abs(f) >= 1000:
        return f"{f / 1000:,.2f} s"
    if 0 < abs(f) < 0.1:
        return f"{f * 1000:,.1f} µs"
    return f"{f:,.{digits}f} ms"


def fmt_signed_ms(value: object) -> str:
    f = num(value)
    if f is None:
        return "–"
    return ("+" if f > 0 else "−" if f < 0 else "±") + fmt_ms(abs(f), 2)


def fmt_pct(value: object, digits: int = 1) -> str:
    f = num(value)
    return "–" if f is None else f"{f:.{digits}f} %"


def fmt_int(value: object) -> str:
    f = num(value)
    return "–" if f is None else f"{int(f):,}"


def fmt_bytes(value: object) -> str:
    f = num(value)
    if f is None:
        return "–"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(f) < 1024 or unit == "GiB":
            return f"{f:,.0f} {unit}" if unit == "B" else f"{f:,.1f} {unit}"
        f /= 1024
    return f"{f:,.1f} GiB"  # pragma: no cover


def rule_title(finding: Mapping[str, Any]) -> str:
    """The human title of a finding: its own ``title`` when given, else the rule id in words."""
    title = finding.get("title")
    if isinstance(title, str) and title:
        return title
    rule = str(finding.get("rule", "finding"))
    return rule.replace("-", " ").replace("_", " ").capitalize()


def breakdown_values(obj: Mapping[str, Any] | None) -> dict[str, float]:
    """The breakdown dict with every SPEC key present (missing / null → 0)."""
    bd = obj or {}
    return {k: num(bd.get(k)) or 0.0 for k in BREAKDOWN_KEYS}


def advisor_verdict(doc: Mapping[str, Any]) -> str | None:
    """The advisor's own verdict sentence when the document carries one.

    Accepted: ``verdict`` (str, or {"text": str}), ``verdicts`` (a list of such, first wins), or
    the first rank's ``verdict``.
    """
    ranks = doc.get("ranks")
    first_rank = ranks[0] if isinstance(ranks, list) and ranks and isinstance(ranks[0], Mapping) else {}
    verdicts = doc.get("verdicts")
    candidates = [doc.get("verdict"), verdicts[0] if isinstance(verdicts, list) and verdicts else None,
                  first_rank.get("verdict")]
    for c in candidates:
        text = c.get("text") if isinstance(c, Mapping) else c
        if isinstance(text, str) and text:
            return text
    return None


def verdict_text(doc: Mapping[str, Any]) -> str:
    """One sentence: the advisor's verdict when present, else built from the top finding or the split."""
    own = advisor_verdict(doc)
    if own:
        return own
    findings = [f for f in doc.get("findings") or [] if isinstance(f, Mapping)]
    ranks = [r for r in doc.get("ranks") or [] if isinstance(r, Mapping)]
    ov = (ranks[0].get("overview") or {}) if ranks else {}
    if findings:
        top = findings[0]
        gain = num(top.get("est_gain_pct"))
        tail = f" — fixing it could save about {gain:.0f} % of each step" if gain else ""
        return f"{rule_title(top)}{tail}."
    avg = num(ov.get("avg_step_ms"))
    if avg is None:
        return "No findings; step information is not available for this trace."
    bd = breakdown_values(ov.get("breakdown_ms"))
    top_key = max(bd, key=lambda k: bd[k])
    share = 100.0 * bd[top_key] / avg if avg else 0.0
    return (f"No findings. Average step {fmt_ms(avg)}, mostly {LABELS[top_key]} "
            f"({share:.0f} % of the step).")


#: what the cluster's ``imbalance_pct`` compares across ranks (``imbalance_of``)
IMBALANCE_OF = {"compute": "compute time (kernels)", "host": "the model's CPU work (its waits in collectives aside)",
                "step": "step time"}


def imbalance_text(pct_text: str, of: object) -> str:
    """The load-imbalance figure worded as what it measures, never as a verdict on the job (ranks
    waiting for a late one have equal steps): ``load imbalance of step time across ranks 0.6 % (the
    busiest rank over the mean)``."""
    return (f"load imbalance of {IMBALANCE_OF.get(str(of), IMBALANCE_OF['compute'])} across ranks {pct_text} "
            "(the busiest rank over the mean)")


def culprits_of(cluster: Mapping[str, Any] | None) -> set[int]:
    """The culprit ranks of the document's ``cluster.arrivals`` (ranks late at the collectives)."""
    arr = (cluster or {}).get("arrivals")
    items = arr.get("culprits") if isinstance(arr, Mapping) else None
    return {int(c["rank"]) for c in items or [] if isinstance(c, Mapping) and num(c.get("rank")) is not None}
