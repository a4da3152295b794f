"""The diff in the terminal (rich): narrative, gate, overall side by side, biggest movers per table.

Renders the JSON document (:mod:`.document`), so the terminal shows exactly what ``--json`` says.
Lower is green, higher is red (time and memory alike).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

LABELS = {"step": "Step (average)", "kernel": "Kernel", "memcpy": "Memcpy", "memset": "Memset",
          "communication": "Communication", "runtime": "Runtime", "dataloader": "DataLoader",
          "cpu_exec": "CPU Exec", "other": "Other", "computing": "Computing (MSA)",
          "communication_not_overlapped": "Comm. not overlapped (MSA)", "free": "Free (no kernel, no comm; MSA)"}
TITLES = {"operators": "Operators", "kernels": "Kernels", "modules": "Modules",
          "memory": "Memory (allocations per op)", "runtime": "Runtime API",
          "categories": "Op categories"}
NAME_WIDTH = 70


def _signed(v: float | None, digits: int = 2) -> Text:
    if v is None:
        return Text("–")
    style = "red" if v > 0 else "green" if v < 0 else ""
    return Text(f"{v:+,.{digits}f}", style=style)


def _num(v: float | None, digits: int = 2) -> str:
    return "–" if v is None else f"{v:,.{digits}f}"


def _ratio(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}×"


def _short(name: str) -> str:
    return name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 1] + "…"


def _header(doc: Mapping[str, Any], console: Console) -> None:
    for side in ("base", "new"):
        s = doc.get(side) or {}
        steps = s.get("steps") or []
        shown = f"{steps[0]}–{steps[-1]}" if len(steps) > 1 else (str(steps[0]) if steps else "none")
        console.print(f"[bold]{side:>4}[/]: {s.get('source')}  rank {s.get('rank')}, steps {shown} "
                      f"({s.get('step_count')}), {s.get('device') or 'no GPU'}")
    for line in doc.get("narrative") or []:
        console.print(f"  {line}")
    gate = doc.get("gate")
    if isinstance(gate, Mapping):
        mark = "[bold green]gate passed[/]" if gate.get("passed") else "[bold red]gate FAILED[/]"
        console.print(f"  {mark}: {gate.get('reason')}")


def _overall(doc: Mapping[str, Any], console: Console) -> None:
    t = Table(title="Per average step (ms)", title_justify="left")
    for col, just in (("category", "left"), ("base", "right"), ("new", "right"), ("diff", "right"),
                      ("ratio", "right")):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in doc.get("overall") or []:
        if r["category"] == "computing":
            t.add_section()
        t.add_row(LABELS.get(r["category"], r["category"]), _num(r["base_ms"]), _num(r["new_ms"]),
                  _signed(r["diff_ms"]), _ratio(r.get("ratio")))
    console.print(t)


def _table(name: str, rows: Sequence[Mapping[str, Any]], meta: Mapping[str, Any], console: Console,
           top: int, doc_per_step: bool) -> None:
    title = TITLES.get(name, name)
    if meta.get("skipped") and not rows:
        console.print(f"[dim]{title}: not compared ({meta['skipped']})[/]")
        return
    unit = str(meta.get("unit", "ms"))
    u = unit.lower()
    per = " per step" if doc_per_step else ""
    t = Table(title=f"{title}: {meta.get('metric')} ({unit}{per}), biggest changes", title_justify="left")
    t.add_column("name", no_wrap=True, overflow="ellipsis", min_width=24, ratio=1)
    counted = "allocations" if name == "memory" else "calls"  # the memory table counts allocations
    for col in ("base", "new", "diff", "ratio", f"{counted} base→new", "status"):
        t.add_column(col, justify="left" if col == "status" else "right", no_wrap=True)
    for r in rows[:top]:
        t.add_row(_short(str(r["name"])), _num(r[f"base_{u}"]), _num(r[f"new_{u}"]), _signed(r[f"diff_{u}"]),
                  _ratio(r.get("ratio")), f"{r['base_count']:,} → {r['new_count']:,}", r["status"])
    console.print(t)
    matched, added, removed = meta.get("matched", 0), meta.get("added") or [], meta.get("removed") or []
    line = f"  {matched} matched, {len(added)} only in NEW, {len(removed)} only in BASE"
    if meta.get("skipped"):
        line += f" ({meta['skipped']})"
    console.print(f"[dim]{line}[/]")


def _findings(doc: Mapping[str, Any], console: Console) -> None:
    found = doc.get("findings")
    if not found:
        return
    t = Table(title="Advisor findings", title_justify="left")
    for col in ("status", "finding", "severity", "est. gain base → new (ms/step)"):
        t.add_column(col)
    colour = {"resolved": "green", "new": "red", "still": "yellow"}
    for f in found:
        b, n = f.get("base_est_gain_ms"), f.get("new_est_gain_ms")
        t.add_row(Text(str(f["status"]), style=colour.get(str(f["status"]), "")), str(f.get("title") or f["rule"]),
                  str(f.get("severity", "")), f"{_num(b, 1)} → {_num(n, 1)}")
    console.print(t)


def render(doc: Mapping[str, Any], console: Console, top: int = 10) -> None:
    """Print the whole diff."""
    _header(doc, console)
    _overall(doc, console)
    metas = doc.get("tables") or {}
    for name in ("categories", "kernels", "operators", "modules", "memory", "runtime"):
        if name in doc:
            _table(name, doc[name], metas.get(name, {}), console, top, bool(doc.get("per_step", True)))
    _findings(doc, console)
    for note in doc.get("notes") or []:
        console.print(f"[dim]note: {note}[/]")
