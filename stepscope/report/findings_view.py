"""Terminal rendering of the advisor's output: verdict lines, a ranked findings table, each finding's
change and evidence, and the rules that could not run. Wording comes from :mod:`stepscope.report.texts`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from stepscope.advisor.finding import Finding, NotRun
from stepscope.advisor.verdict import Verdict
from stepscope.analysis.platform import NO_DEVICE
from stepscope.report import texts
from stepscope.report._prose import findings_order_text, prose
from stepscope.report.advice_json import verdict_dicts

SEVERITY_STYLE = {"high": "bold red", "medium": "yellow", "low": "dim"}


def render_verdicts(verdicts: Sequence[Verdict], console: Console, findings: Sequence[Finding] = ()) -> None:
    """One line per rank: what bounds the step, and the shares behind it; the first says when none
    of ``findings`` addresses its bound."""
    for d in verdict_dicts(verdicts, findings):
        console.print(f"[bold]verdict[/bold] {d['text']}")


def render_findings(findings: Sequence[Finding], console: Console, top: int = 10) -> None:
    """The ranked table of findings, then each one's advice and key evidence."""
    if not findings:
        console.print("[green]advisor: no findings[/green]")
        return
    shown = list(findings)[:max(top, 1)]
    console.print(_findings_table(findings, shown, console.width))
    for i, f in enumerate(shown, 1):
        console.print(f"[bold]{i}. {texts.title_text(f)}[/bold] ([cyan]{f.rule}[/cyan], rank {_rank(f.rank)})")
        console.print(f"   found: {texts.found_text(f)}", highlight=False)
        console.print(f"   change: {texts.change_text(f)}", highlight=False)
        console.print(f"   gain basis: {texts.basis_text(f)}", style="dim", highlight=False)
        console.print(f"   evidence: {_evidence_line(f.evidence)}", style="dim", highlight=False)
        console.print(f"   docs: {', '.join(link for link in _links(f) if link)}", style="dim",
                      highlight=False)


def _links(f: Finding) -> tuple[str, ...]:
    """The finding's pages: its rule's (``texts.links``), a TF32 page only where its change offers TF32
    (a V100 has none: no TF32 line, no TF32 page)."""
    tf32 = "allow_tf32" in texts.change_text(f)
    return tuple(link for link in texts.links(f.rule, f.platform) if tf32 or "tf32" not in link.lower())


#: below this width the table drops the rule id (the details below name it) so titles stay readable
NARROW_COLUMNS = 100


def _findings_title(count: int, shown: Sequence[Finding]) -> str:
    """The findings table's title: how many, and how the shown ones are ordered (the bound's
    findings first, when that puts a smaller gain above a larger one: advisor.ranking)."""
    return f"advisor findings ({count}; {findings_order_text([f.est_gain_ns for f in shown])})"


def _findings_table(findings: Sequence[Finding], shown: Sequence[Finding], width: int) -> Table:
    """The ranked table; narrow terminals lose the rule id, single-rank runs the rank column."""
    share = "% " + texts.gain_share((f.rule, f.ranks, f.whole_trace) for f in findings)  # window, job step, step
    cols = ["#", "severity", "finding", "rule", "rank", "est. gain", share]
    if width < NARROW_COLUMNS:
        cols.remove("rule")
    if len({f.rank for f in findings}) <= 1 and not any(f.ranks for f in findings):
        cols.remove("rank")
    t = Table(title=_findings_title(len(findings), shown), header_style="bold")
    for col in cols:
        t.add_column(col, justify="left" if col in ("severity", "finding", "rule") else "right",
                     overflow="fold", no_wrap=col in ("rule", "est. gain"))
    for i, f in enumerate(shown, 1):
        style = SEVERITY_STYLE[f.severity.value]
        cells = {"#": str(i), "severity": f"[{style}]{f.severity.value}[/{style}]", "finding": texts.title_text(f),
                 "rule": f.rule, "rank": _rank(f.rank), "est. gain": f"{f.est_gain_ms:.2f} ms",
                 share: f"{f.est_gain_pct:.1f}"}
        t.add_row(*(cells[c] for c in cols))
    return t


def render_not_run(not_run: Sequence[NotRun], console: Console, platform: str = "") -> None:
    """Rules that could not run on this trace, once each and quietly, in the platform's words; the rules of a
    device's work that did not run for want of a device (a CPU-only run) in one line, unnamed."""
    deviceless = [n for n in not_run if n.reason == NO_DEVICE]
    if deviceless:
        console.print(f"[dim]{texts.deviceless_rules_text(len(deviceless))}[/dim]", highlight=False)
    for n in not_run:
        if n.reason == NO_DEVICE:
            continue
        ranks = f" (ranks {', '.join(map(str, n.ranks))})" if len(n.ranks) > 1 else ""
        console.print(f"[dim]{texts.not_run_text(n.rule, n.reason, platform)}{ranks}[/dim]", highlight=False)


def _rank(rank: int | None) -> str:
    return "all" if rank is None else str(rank)


def _evidence_line(evidence: Any, limit: int = 300) -> str:
    """Evidence as ``key=value`` pairs in prose (lists joined, unknown values left out), lists of
    records summarised by their first item's name."""
    parts = []
    for k, v in dict(evidence).items():
        if isinstance(v, list) and v and isinstance(v[0], dict):
            if "name" in v[0]:
                parts.append(f"{k}: first {str(v[0]['name'])[:80]}")
            continue
        words = v if isinstance(v, (int, float)) and not isinstance(v, bool) else prose(v)
        if words is not None:
            parts.append(f"{k}={words}")
    line = ", ".join(parts)
    return line if len(line) <= limit else line[: limit - 1] + "…"
