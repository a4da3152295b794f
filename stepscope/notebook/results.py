"""Analysis, findings and diff results that display themselves in a notebook and convert to frames.

Each holds the JSON document its command prints (``stepscope analyze --json``, ``stepscope diff
--json``) and renders from it — the same numbers as every other front end, nothing recomputed.
``to_pandas`` / ``to_polars`` / ``to_arrow`` turn one table of the document (a view's rows, the
findings, a diff table) into a frame.
"""

from __future__ import annotations

import html
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from stepscope.analysis.bundle import Bundle
from stepscope.errors import UsageError
from stepscope.model.display import html_table
from stepscope.model.trace import Trace

#: rows per table in a display (the frames have them all)
DISPLAY_ROWS = 10
#: a finding's columns in the findings table and frame
FINDING_COLUMNS = ("rank", "severity", "rule", "title", "est_gain_ms", "est_gain_pct", "change")
RANK_COLUMNS = ("rank", "device", "step_count", "avg_step_ms", "gpu_utilization_pct", "bound_by")


def frame(rows: Sequence[dict[str, Any]], kind: str) -> Any:
    """Rows as an Arrow table, or a pandas / polars frame (``kind``: arrow, pandas, polars)."""
    table = pa.Table.from_pylist(list(rows))
    if kind == "arrow":
        return table
    if kind == "pandas":
        try:
            return table.to_pandas()
        except ImportError as exc:
            raise ImportError("to_pandas needs pandas: pip install 'stepscope[pandas]'") from exc
    try:
        import polars as pl
    except ImportError as exc:
        raise ImportError("to_polars needs polars: pip install 'stepscope[polars]'") from exc
    return pl.from_arrow(table)


def _flat_finding(f: dict[str, Any]) -> dict[str, Any]:
    return {**{k: f.get(k) for k in FINDING_COLUMNS}, "change": (f.get("change") or {}).get("key")}


@dataclass(frozen=True)
class Findings:
    """The advisor's findings in ranked order (each the document's finding object)."""

    items: tuple[dict[str, Any], ...]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.items)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.items[i]

    def rows(self) -> list[dict[str, Any]]:
        """One flat row per finding: rank, severity, rule, title, gains, the change's key."""
        return [_flat_finding(f) for f in self.items]

    def to_arrow(self) -> pa.Table:
        return frame(self.rows(), "arrow")

    def to_pandas(self) -> Any:
        return frame(self.rows(), "pandas")

    def to_polars(self) -> Any:
        return frame(self.rows(), "polars")

    def _repr_html_(self) -> str:
        if not self.items:
            return "<div><b>stepscope findings</b>: none</div>"
        advice = "".join(f"<li><b>{html.escape(str(f.get('title')))}</b>: {html.escape(str(f.get('advice')))}</li>"
                         for f in self.items[:DISPLAY_ROWS])
        return (f"<div><b>stepscope findings</b> ({len(self.items)}, largest gain first)"
                f"{html_table(self.rows()[:DISPLAY_ROWS], FINDING_COLUMNS)}<ul>{advice}</ul></div>")


@dataclass(frozen=True)
class Analysis:
    """A trace analysed and advised: the bundle and its §12 document (``stepscope analyze --json``)."""

    bundle: Bundle
    doc: dict[str, Any]

    @property
    def trace(self) -> Trace:
        return self.bundle.trace

    @property
    def findings(self) -> Findings:
        return Findings(tuple(self.doc.get("findings") or ()))

    def view(self, name: str, rank: int | None = None) -> Any:
        """One section of the document for ``rank`` (default: the first): e.g. ``kernels`` (rows),
        ``overview`` (a dict); ``cluster``, ``verdicts`` and ``diagnostics`` are whole-trace."""
        if name in ("cluster", "verdicts", "diagnostics", "findings"):
            return self.doc.get(name)
        ranks = self.doc.get("ranks") or []
        r = next((x for x in ranks if rank is None or x.get("rank") == rank), None)
        if r is None:
            raise UsageError(f"rank {rank} is not in the trace (ranks: {', '.join(str(x['rank']) for x in ranks)})")
        if name not in r or name == "rank":
            raise UsageError(f"unknown view {name!r} (views: {', '.join(k for k in r if k != 'rank')})")
        return r[name]

    def _rows(self, name: str, rank: int | None) -> list[dict[str, Any]]:
        rows = self.view(name, rank)
        if not isinstance(rows, list):
            raise UsageError(f"view {name!r} is not a table (it is {type(rows).__name__}); a table is e.g. "
                             "kernels, operators, steps")
        return rows

    def to_arrow(self, view: str = "kernels", rank: int | None = None) -> pa.Table:
        """The rows of a table view (kernels, operators, steps, ...) as Arrow."""
        return frame(self._rows(view, rank), "arrow")

    def to_pandas(self, view: str = "kernels", rank: int | None = None) -> Any:
        return frame(self._rows(view, rank), "pandas")

    def to_polars(self, view: str = "kernels", rank: int | None = None) -> Any:
        return frame(self._rows(view, rank), "polars")

    def _repr_html_(self) -> str:
        return analysis_html(self.doc, self.findings)


def analysis_html(doc: dict[str, Any], findings: Findings) -> str:
    """Per rank: the headline numbers and the step's breakdown; the verdicts; the findings; the top
    kernels and operators of the first rank."""
    ranks = doc.get("ranks") or []
    heads = [{"rank": r.get("rank"), "device": (r.get("device") or {}).get("name"),
              **{k: (r.get("overview") or {}).get(k) for k in ("step_count", "avg_step_ms", "gpu_utilization_pct")},
              "bound_by": (r.get("critical_path") or {}).get("bound_by")} for r in ranks]
    breakdown = [{"rank": r.get("rank"), **((r.get("overview") or {}).get("breakdown_ms") or {})} for r in ranks]
    verdicts = "".join(f"<li>{html.escape(str(v.get('text')))}</li>" for v in doc.get("verdicts") or [])
    parts = [f"<b>stepscope analysis</b> <code>{html.escape(str(doc.get('source')))}</code>",
             html_table(heads[:DISPLAY_ROWS], RANK_COLUMNS),
             html_table(breakdown[:DISPLAY_ROWS], caption="step breakdown, ms per step"),
             f"<ul>{verdicts}</ul>", findings._repr_html_()]
    first = ranks[0] if ranks else {}
    for name, cols in (("kernels", ("name", "calls", "total_ms", "mean_us", "share_pct")),
                       ("operators", ("name", "calls", "host_self_ms", "device_self_ms", "device_total_ms"))):
        if first.get(name):
            parts.append(html_table(first[name][:DISPLAY_ROWS], cols, caption=f"top {name}"))
    return "<div>" + "".join(parts) + "</div>"


@dataclass(frozen=True)
class Diff:
    """Two runs compared: the diff document (``stepscope diff --json``)."""

    doc: dict[str, Any]

    def table(self, name: str = "overall") -> list[dict[str, Any]]:
        """A table of the diff: overall, operators, kernels, modules, memory, runtime, changes, findings."""
        rows = self.doc.get(name)
        if not isinstance(rows, list):
            names = [k for k, v in self.doc.items() if isinstance(v, list) and k not in ("narrative", "notes")]
            raise UsageError(f"no diff table {name!r} (tables: {', '.join(names)})")
        return rows

    def to_arrow(self, table: str = "overall") -> pa.Table:
        return frame(self.table(table), "arrow")

    def to_pandas(self, table: str = "overall") -> Any:
        return frame(self.table(table), "pandas")

    def to_polars(self, table: str = "overall") -> Any:
        return frame(self.table(table), "polars")

    def _repr_html_(self) -> str:
        d = self.doc
        narrative = "".join(f"<li>{html.escape(str(s))}</li>" for s in d.get("narrative") or [])
        parts = [f"<b>stepscope diff</b> <code>{html.escape(str((d.get('base') or {}).get('source')))}</code> → "
                 f"<code>{html.escape(str((d.get('new') or {}).get('source')))}</code>",
                 html_table(d.get("overall") or [], ("category", "base_ms", "new_ms", "diff_ms", "ratio"),
                            caption="ms per step"), f"<ul>{narrative}</ul>"]
        for name in ("kernels", "operators"):
            if d.get(name):
                parts.append(html_table(d[name][:DISPLAY_ROWS], ("name", "base_ms", "new_ms", "diff_ms", "status"),
                                        caption=f"{name}: largest changes"))
        if d.get("findings"):
            parts.append(html_table(d["findings"], ("rule", "status", "title", "base_est_gain_ms", "new_est_gain_ms"),
                                    caption="findings"))
        return "<div>" + "".join(parts) + "</div>"
