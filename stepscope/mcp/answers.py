"""The answers of the document tools, read off the §12 document (``stepscope analyze --json``).

Nothing here computes a number: overview, findings and views are cuts of the same document the
terminal, HTML, Markdown and web front ends render (``report.json_out.to_json``), so an agent
sees the values a person sees. Each function returns plain data; :func:`text` makes the compact,
deterministic JSON text the tools send (no spaces, keys in the document's order, floats to six
significant digits). Units are in the key names, as in the document (``avg_step_ms``,
``peak_allocated_bytes``, ``mean_us``, ``share_pct``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from stepscope.advisor.finding import Severity
from stepscope.errors import UsageError
from stepscope.report.json_out import clean

#: per-rank keys that are not views
NOT_VIEWS = ("rank",)
#: document-level sections a view may name too
DOC_VIEWS = ("cluster", "verdicts", "diagnostics")
#: ranks listed in the overview (a 1,000-rank job's overview stays a page)
MAX_OVERVIEW_RANKS = 16
#: the longest answer sent, in characters; longer ones ask for fewer rows instead
MAX_CHARS = 400_000
#: the advisor's severities, lowest first
SEVERITIES = [s.value for s in (Severity.LOW, Severity.MEDIUM, Severity.HIGH)]
#: headline keys of a finding in the overview
FINDING_HEADLINE = ("rule", "severity", "rank", "est_gain_ms", "est_gain_pct", "title")


def _round(x: float) -> float:
    return float(f"{x:.6g}") if math.isfinite(x) else x


def compact(obj: Any) -> Any:
    """Plain JSON (numpy scalars → Python, NaN → null) with floats to six significant digits."""
    obj = clean(obj)

    def walk(o: Any) -> Any:
        if isinstance(o, float):
            return _round(o)
        if isinstance(o, dict):
            return {k: walk(v) for k, v in o.items()}
        if isinstance(o, list):
            return [walk(v) for v in o]
        return o

    return walk(obj)


def text(obj: Any) -> str:
    """The compact JSON text of an answer; a usage error when it is too long for an agent to read."""
    out = json.dumps(compact(obj), separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=str)
    if len(out) > MAX_CHARS:
        raise UsageError(f"the answer is {len(out):,} characters (at most {MAX_CHARS:,}): ask for fewer rows "
                         "(top, limit, max_items) or a narrower filter")
    return out


def rank_doc(doc: dict[str, Any], rank: int | None) -> dict[str, Any]:
    """The document's section of ``rank`` (the first rank when None); a usage error naming the ranks."""
    ranks = doc.get("ranks") or []
    if not ranks:
        raise UsageError(f"{doc.get('source')}: the trace has no ranks")
    if rank is None:
        return dict(ranks[0])
    for r in ranks:
        if r.get("rank") == rank:
            return dict(r)
    raise UsageError(f"rank {rank} is not in the trace (ranks: {', '.join(str(r.get('rank')) for r in ranks)})")


def view_names(doc: dict[str, Any], rank: int | None = None) -> list[str]:
    """The views of a rank that hold data (null sections are skipped: see the rank's ``skipped``)."""
    r = rank_doc(doc, rank)
    names = [k for k, v in r.items() if k not in NOT_VIEWS and v is not None]
    return names + [k for k in DOC_VIEWS if doc.get(k)]


def _headline(f: dict[str, Any]) -> dict[str, Any]:
    return {k: f.get(k) for k in FINDING_HEADLINE}


def overview(doc: dict[str, Any], rank: int | None = None) -> dict[str, Any]:
    """Each rank's summary (device, step, breakdown, GPU use), the verdicts, and the findings' headlines."""
    ranks = [rank_doc(doc, rank)] if rank is not None else list(doc.get("ranks") or [])
    rows = [{"rank": r.get("rank"), "device": (r.get("device") or {}).get("name"), **(r.get("overview") or {}),
             "gpu": r.get("gpu"), "bound_by": (r.get("critical_path") or {}).get("bound_by"),
             "skipped": r.get("skipped")} for r in ranks[:MAX_OVERVIEW_RANKS]]
    found = [f for f in doc.get("findings") or [] if rank is None or f.get("rank") == rank]
    verdicts = [v for v in doc.get("verdicts") or [] if rank is None or v.get("rank") == rank]
    return {"source": doc.get("source"), "schema_version": doc.get("schema_version"),
            "ranks_total": len(doc.get("ranks") or []), "ranks": rows, "cluster": doc.get("cluster"),
            "verdicts": verdicts, "findings_total": len(found), "findings": [_headline(f) for f in found[:5]],
            "diagnostics": doc.get("diagnostics") or [], "views": view_names(doc, rank)}


def findings(doc: dict[str, Any], top: int = 10, rule: str | None = None, rank: int | None = None,
             min_severity: str | None = None) -> dict[str, Any]:
    """The advisor's findings in their ranked order, each with its evidence, change and advice."""
    order = SEVERITIES
    if min_severity is not None and min_severity not in order:
        raise UsageError(f"min_severity {min_severity!r}: one of {', '.join(order)}")
    found = list(doc.get("findings") or [])
    rules = sorted({str(f.get("rule")) for f in found})
    if rule is not None and rule not in rules:
        raise UsageError(f"no finding of rule {rule!r} (rules found: {', '.join(rules) or 'none'})")
    keep = [f for f in found if (rule is None or f.get("rule") == rule) and (rank is None or f.get("rank") == rank)
            and (min_severity is None or _level(order, f.get("severity")) >= order.index(min_severity))]
    return {"source": doc.get("source"), "findings_total": len(found), "matched": len(keep),
            "findings": keep[:max(0, top)]}


def _level(order: list[str], severity: Any) -> int:
    return order.index(severity) if severity in order else len(order)


def view(doc: dict[str, Any], name: str, rank: int | None = None, top: int = 10, sort_by: str | None = None,
         name_regex: str | None = None) -> dict[str, Any]:
    """One section of the document, its tables cut to the ``top`` rows matching ``name_regex``
    (on the rows' ``name``), sorted by ``sort_by`` (descending) when given, else in the document's order."""
    names = view_names(doc, rank)
    if name not in names:
        raise UsageError(f"unknown or empty view {name!r} (views of this trace: {', '.join(names)})")
    section = doc[name] if name in DOC_VIEWS else rank_doc(doc, rank)[name]
    match = _matcher(name_regex)
    tables: dict[str, dict[str, int]] = {}
    out = _cut(section, name, max(0, top), sort_by, match, tables)
    if sort_by is not None and not any(t.get("sorted") for t in tables.values()):
        raise UsageError(f"sort_by {sort_by!r}: no table of view {name!r} has that numeric column")
    for t in tables.values():
        t.pop("sorted", None)
    rank_no = None if name in DOC_VIEWS else rank_doc(doc, rank).get("rank")
    return {"source": doc.get("source"), "view": name, "rank": rank_no, "tables": tables, "data": out}


def _matcher(name_regex: str | None) -> Callable[[Any], bool] | None:
    if name_regex is None:
        return None
    try:
        pat = re.compile(name_regex, re.IGNORECASE)
    except re.error as exc:
        raise UsageError(f"name_regex {name_regex!r}: {exc}") from None
    return lambda row: isinstance(row, dict) and pat.search(str(row.get("name", ""))) is not None


def _cut(obj: Any, path: str, top: int, sort_by: str | None, match: Callable[[Any], bool] | None,
         tables: dict[str, dict[str, int]]) -> Any:
    """``obj`` with every list cut to ``top`` items (lists of rows filtered and sorted first); each
    cut list is described in ``tables[path]``: rows in the document, rows matching, rows shown."""
    if isinstance(obj, dict):
        return {k: _cut(v, f"{path}.{k}", top, sort_by, match, tables) for k, v in obj.items()}
    if not isinstance(obj, list):
        return obj
    rows = obj
    is_table = bool(rows) and all(isinstance(r, dict) for r in rows)
    sortable = is_table and sort_by is not None and any(_number(r.get(sort_by)) for r in rows)
    if is_table and match is not None and any("name" in r for r in rows):
        rows = [r for r in rows if match(r)]
    if sortable:
        rows = sorted(rows, key=lambda r: -float(r[sort_by]) if _number(r.get(sort_by)) else math.inf)
    shown = rows[:top]
    tables[path] = {"rows": len(obj), "matched": len(rows), "shown": len(shown), "sorted": int(sortable)}
    return [_cut(r, f"{path}[]", top, sort_by, match, {}) for r in shown]


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
