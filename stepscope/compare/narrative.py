"""The short story of a diff: which few numbers moved most.

:func:`narrative_items` returns data (:class:`Change` items); :func:`word` turns them into
sentences.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from stepscope.compare.overall import SPLIT, Delta, OverallRow
from stepscope.compare.tables import DiffTable

#: a change smaller than this share of the base step is not worth a word
MIN_SHARE = 0.005
TOP_CATEGORIES = 3

_LABELS = {"kernel": "Kernel", "memcpy": "Memcpy", "memset": "Memset", "communication": "Communication",
           "runtime": "Runtime", "dataloader": "DataLoader", "cpu_exec": "CPU Exec", "other": "Other",
           "computing": "Computing", "communication_not_overlapped": "Communication not overlapped",
           "free": "Free"}


@dataclass(frozen=True)
class Change(Delta):
    """One moved number, per average step (ms). ``kind``: step | category | kernels | operators | ..."""

    kind: str
    key: str
    base_ms: float
    new_ms: float


def narrative_items(overall: Sequence[OverallRow], tables: dict[str, DiffTable]) -> list[Change]:
    """The step change, the biggest breakdown-category changes, and the biggest kernel / operator change."""
    step = next((r for r in overall if r.category == "step"), None)
    if step is None:
        return []
    floor = max(MIN_SHARE * step.base_ms, 1e-9)
    out = [Change("step", "step", step.base_ms, step.new_ms)]
    cats = [r for r in overall if r.category != "step" and r.category not in SPLIT and abs(r.diff_ms) >= floor]
    cats.sort(key=lambda r: -abs(r.diff_ms))
    out += [Change("category", r.category, r.base_ms, r.new_ms) for r in cats[:TOP_CATEGORIES]]
    for name in ("kernels", "operators"):
        t = tables.get(name)
        if t is not None and len(t) and t.unit == "ms" and abs(float(t.diff[0])) >= floor:
            out.append(Change(name, str(t.name[0]), float(t.base[0]), float(t.new[0])))
    return out


def _ms(ms: float) -> str:
    """1 decimal from 1 ms up, 3 below (micro traces, inference steps)."""
    return f"{ms:.1f}" if abs(ms) >= 1 or ms == 0 else f"{ms:.3f}"


def _signed(ms: float) -> str:
    return f"{'+' if ms >= 0 else '−'}{_ms(abs(ms))} ms"


def word(items: Sequence[Change]) -> list[str]:
    """Sentences for the items: the step, the biggest category changes, the largest kernel and operator."""
    lines: list[str] = []
    step = next((c for c in items if c.kind == "step"), None)
    if step is not None:
        pct = f", {step.change_pct:+.1f} %".replace("-", "−") if math.isfinite(step.change_pct) else ""
        lines.append(f"Average step {_ms(step.base_ms)} → {_ms(step.new_ms)} ms ({_signed(step.diff_ms)}{pct}).")
    cats = [c for c in items if c.kind == "category"]
    if cats:
        lines.append("Biggest changes: " + ", ".join(
            f"{_LABELS.get(c.key, c.key)} {_signed(c.diff_ms)}/step" for c in cats) + ".")
    for c in items:
        if c.kind in ("kernels", "operators"):
            what = "kernel" if c.kind == "kernels" else "operator"
            name = c.key if len(c.key) <= 60 else c.key[:59] + "…"
            lines.append(f"Largest {what} change: {name} {_signed(c.diff_ms)}/step "
                         f"({_ms(c.base_ms)} → {_ms(c.new_ms)} ms).")
    return lines
