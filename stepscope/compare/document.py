"""The versioned diff document (``stepscope diff --json``, SPEC §12); docs/json.md lists every field.

The §12 keys come first and keep their names: ``schema_version``, ``overall`` (``category``,
``base_ms``, ``new_ms``, ``diff_ms``), ``operators`` / ``kernels`` (``name``, ``base_ms``,
``new_ms``, ``diff_ms``). Tables in MB (memory) use ``base_mb`` / ``new_mb`` / ``diff_mb``.
Non-finite numbers become null, so the document is strict JSON.
"""

from __future__ import annotations

import math
from typing import Any

from stepscope.compare.diff import DiffResult, Side
from stepscope.compare.gate import GateResult
from stepscope.compare.narrative import word
from stepscope.compare.tables import STATUS_NAMES, DiffTable

SCHEMA_VERSION = "1"


def _num(x: float) -> float | None:
    v = float(x)
    return round(v, 6) if math.isfinite(v) else None


def _side(s: Side) -> dict[str, Any]:
    return {"source": s.source, "rank": s.rank, "steps": s.steps, "step_count": s.overall.step_count,
            "device": s.device, "platform": s.platform, "split_source": s.overall.split_source,
            "per_step": [{"step": p["step"], "total_ms": _num(p["total_ms"]),
                          "breakdown_ms": {k: _num(v) for k, v in p["breakdown_ms"].items()}}
                         for p in s.overall.per_step]}


def table_rows(t: DiffTable) -> list[dict[str, Any]]:
    """One dict per row, |diff| order, with the unit in the value keys (``base_ms`` / ``base_mb``)."""
    u = t.unit.lower()
    names, bn, nn = t.name.tolist(), t.base_name.tolist(), t.new_name.tolist()
    diff, ratio = t.diff.tolist(), t.ratio.tolist()
    shapes = t.shapes.tolist() if t.shapes is not None else None
    extra = {k: (b.tolist(), n.tolist()) for k, (b, n) in t.extra.items()}
    rows = []
    for i, (b, n) in enumerate(zip(t.base.tolist(), t.new.tolist())):  # rows of a result, not events
        row: dict[str, Any] = {"name": names[i], f"base_{u}": _num(b), f"new_{u}": _num(n),
                               f"diff_{u}": _num(diff[i]), "ratio": _num(ratio[i]),
                               "base_count": int(t.base_count[i]), "new_count": int(t.new_count[i]),
                               "status": STATUS_NAMES[int(t.status[i])]}
        if shapes is not None:
            row["input_shapes"] = shapes[i]
        if (bn[i] and bn[i] != names[i]) or (nn[i] and nn[i] != names[i]):  # renamed by a name map
            row["base_name"], row["new_name"] = bn[i] or None, nn[i] or None
        for k, (eb, en) in extra.items():
            row[f"base_{k}_{u}"], row[f"new_{k}_{u}"] = _num(eb[i]), _num(en[i])
        rows.append(row)
    return rows


def _table_meta(t: DiffTable) -> dict[str, Any]:
    return {"unit": t.unit, "metric": t.metric, "rows": len(t), "matched": t.matched_count,
            "added": t.added, "removed": t.removed, "skipped": t.skipped,
            "base_total": _num(float(t.base.sum())), "new_total": _num(float(t.new.sum()))}


def to_json(result: DiffResult, gate: GateResult | None = None, top: int | None = None) -> dict[str, Any]:
    """The diff document; ``top`` limits the rows of each table (added / removed lists stay whole)."""
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "overall": [{"category": r.category, "base_ms": _num(r.base_ms), "new_ms": _num(r.new_ms),
                     "diff_ms": _num(r.diff_ms), "ratio": _num(r.ratio) if r.ratio is not None else None}
                    for r in result.overall],
    }
    for name, t in result.tables.items():
        rows = table_rows(t)
        doc[name] = rows[:top] if top is not None else rows
    doc["tables"] = {name: _table_meta(t) for name, t in result.tables.items()}
    doc["base"], doc["new"] = _side(result.base), _side(result.new)
    doc["per_step"] = result.per_step
    doc["by_shapes"] = result.by_shapes
    doc["narrative"] = word(result.narrative)
    doc["changes"] = [{"kind": c.kind, "key": c.key, "base_ms": _num(c.base_ms), "new_ms": _num(c.new_ms),
                       "diff_ms": _num(c.diff_ms)} for c in result.narrative]
    doc["findings"] = [f.to_dict() for f in result.findings] if result.findings is not None else None
    if gate is not None:
        g = gate.to_dict()
        g["slower_pct"] = g["change_pct"]
        doc["gate"] = g
    doc["notes"] = list(result.notes)
    return doc
