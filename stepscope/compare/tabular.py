"""CSV and XLSX output of a diff: one file / one sheet per table, built from the JSON document.

Building from the document (not from the result objects) keeps the three outputs identical by
construction. Tables: ``overall``, ``steps`` (per-step totals of both runs), ``operators``,
``kernels``, ``modules``, ``memory``, ``runtime`` and, when the advisor ran, ``findings``.
openpyxl is optional and imported only for ``--xlsx``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from stepscope.errors import UsageError

TABLE_ORDER = ("overall", "steps", "operators", "kernels", "categories", "modules", "memory", "runtime",
               "findings")
XLSX_HINT = "writing .xlsx needs openpyxl: pip install 'stepscope[xlsx]' (or pip install openpyxl)"
GOOD_FILL, BAD_FILL = "C6EFCE", "FFC7CE"  # Excel's own "good" / "bad" fills
GOOD_FONT, BAD_FONT = "006100", "9C0006"
MAX_WIDTH = 60
MAX_CELL = 32767  # Excel's limit on characters in one cell


def _steps_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for side in ("base", "new"):
        for p in (doc.get(side) or {}).get("per_step") or []:
            rows.append({"run": side, "step": p["step"], "total_ms": p["total_ms"],
                         **{f"{k}_ms": v for k, v in p["breakdown_ms"].items()}})
    return rows


def _finding_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    keep = ("status", "rule", "severity", "title", "base_est_gain_ms", "new_est_gain_ms", "base_severity",
            "new_severity", "advice")
    return [{k: f.get(k) for k in keep} for f in doc.get("findings") or []]


def tables_of(doc: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The document's tables as lists of flat rows, in :data:`TABLE_ORDER`."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name in TABLE_ORDER:
        if name == "steps":
            out[name] = _steps_rows(doc)
        elif name == "findings":
            if doc.get("findings") is not None:
                out[name] = _finding_rows(doc)
        elif isinstance(doc.get(name), list):
            out[name] = [dict(r) for r in doc[name]]
    return out


def _columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    cols: dict[str, None] = {}
    for r in rows:  # rows of a result table
        cols.update(dict.fromkeys(r))
    return list(cols)


def _cell(v: Any) -> Any:
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return v


def write_csv(doc: Mapping[str, Any], directory: str | Path) -> list[Path]:
    """One ``<table>.csv`` per table in ``directory`` (created); returns the files written."""
    d = Path(directory)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the CSV directory: {exc}", d) from exc
    written = []
    for name, rows in tables_of(doc).items():
        cols = _columns(rows) or ["name"]
        path = d / f"{name}.csv"
        with path.open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(cols)
            w.writerows([[_cell(r.get(c)) for c in cols] for r in rows])
        written.append(path)
    return written


def _openpyxl() -> Any:
    try:
        import openpyxl
    except ImportError:
        raise UsageError(XLSX_HINT) from None
    return openpyxl


def write_xlsx(doc: Mapping[str, Any], path: str | Path) -> Path:
    """One sheet per table: frozen header, widths set, diff columns green (lower) / red (higher)."""
    opx = _openpyxl()
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
    from openpyxl.styles import Font, PatternFill

    wb = opx.Workbook()
    wb.remove(wb.active)
    styles = {+1: (PatternFill("solid", fgColor=BAD_FILL), Font(color=BAD_FONT)),
              -1: (PatternFill("solid", fgColor=GOOD_FILL), Font(color=GOOD_FONT))}
    for name, rows in tables_of(doc).items():
        ws = wb.create_sheet(name)
        cols = _columns(rows) or ["name"]
        ws.append(cols)
        for r in rows:
            ws.append([_xl(_cell(r.get(c)), ILLEGAL_CHARACTERS_RE) for c in cols])
        ws.freeze_panes = "A2"
        for cell in ws[1]:
            cell.font = Font(bold=True)
        _widths(ws, cols, rows)
        _colour(ws, cols, len(rows), styles)
    out = Path(path)
    try:
        wb.save(str(out))
    except OSError as exc:
        raise UsageError(f"cannot write the workbook: {exc}", out) from exc
    return out


def _xl(v: Any, illegal: Any) -> Any:
    if isinstance(v, str):
        return illegal.sub("", v)[:MAX_CELL]
    return v


def _widths(ws: Any, cols: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> None:
    from openpyxl.utils import get_column_letter

    for i, c in enumerate(cols, start=1):
        longest = max([len(c)] + [len(str(r.get(c))) for r in rows[:500]])
        ws.column_dimensions[get_column_letter(i)].width = min(max(longest + 2, 8), MAX_WIDTH)


def _colour(ws: Any, cols: Sequence[str], n: int, styles: Mapping[int, tuple[Any, Any]]) -> None:
    """Diff columns: red where NEW is higher (slower, more memory), green where lower."""
    for j, c in enumerate(cols, start=1):
        if not c.startswith("diff_"):
            continue
        for i in range(2, n + 2):  # cells of one column of a result table
            cell = ws.cell(row=i, column=j)
            v = cell.value
            if isinstance(v, (int, float)) and v != 0:
                fill, font = styles[1 if v > 0 else -1]
                cell.fill, cell.font = fill, font
