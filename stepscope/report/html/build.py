"""From a loaded trace to the report page: the §12 document plus the series only the trace has."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from stepscope.advisor.finding import Finding
from stepscope.analysis.bundle import Bundle, with_bundle_memo
from stepscope.model.trace import Trace
from stepscope.report import json_out
from stepscope.report.advice_json import finding_dict
from stepscope.report.html.cluster import culprits_of
from stepscope.report.html.page import render_html
from stepscope.report.html.series import MemoryCurve, memory_from_doc, memory_from_trace
from stepscope.report.html.timeline_data import compute_timeline


def timeline_rank(doc: Mapping[str, Any], trace: Trace) -> int | None:
    """The rank whose step the snapshot shows: the first culprit when known, else the first rank."""
    cluster = doc.get("cluster")
    slow = sorted(culprits_of(cluster if isinstance(cluster, Mapping) else None))
    if slow and slow[0] in trace.rank_ids:
        return slow[0]
    return trace.rank_ids[0] if trace.ranks else None


def memory_curves(doc: Mapping[str, Any], trace: Trace) -> dict[int, list[MemoryCurve]]:
    """Per rank: the document's curves when the memory view wrote some, else computed from the trace."""
    out: dict[int, list[MemoryCurve]] = {}
    for r in doc.get("ranks") or []:
        if isinstance(r, Mapping) and isinstance(r.get("rank"), int):
            rank = int(r["rank"])
            out[rank] = memory_from_doc(r) or memory_from_trace(trace, rank)
    return out


def render_trace_report(doc: Mapping[str, Any], trace: Trace, *, title: str | None = None,
                        step: int | None = None) -> str:
    """The HTML report of ``doc`` (made from ``trace``) with the timeline snapshot and memory curves."""
    rank = timeline_rank(doc, trace)
    tl = compute_timeline(trace, rank=rank, step=step) if rank is not None else None
    return render_html(doc, title=title or default_title(trace.source), timeline=tl,
                       memory=memory_curves(doc, trace))


@with_bundle_memo
def build_report(bundle: Bundle, findings: Sequence[Mapping[str, Any]], *,
                 title: str | None = None) -> tuple[dict[str, Any], str]:
    """(§12 document, HTML page) of an analysed trace."""
    doc = json_out.to_json(bundle, [dict(f) for f in findings])
    return doc, render_trace_report(doc, bundle.trace, title=title)


def default_title(source: str) -> str:
    name = Path(source.rstrip("/")).name if source else ""
    return f"stepscope · {name}" if name else "stepscope report"


def write_text(path: str | Path, text: str) -> int:
    """Write atomically-enough for a report (temp file + rename); returns the size in bytes."""
    p = Path(path)
    data = text.encode("utf-8")
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(p)
    return len(data)


@with_bundle_memo
def write_reports(bundle: Bundle, findings: Sequence[Finding], *, html_path: str | None) -> str:
    """``analyze --html FILE`` / ``--md``: write the page; return the Markdown summary."""
    import click

    from stepscope.report.markdown import render_markdown

    dicts = [finding_dict(f) for f in findings]
    doc = json_out.to_json(bundle, dicts)
    title = default_title(bundle.trace.source)
    if html_path is not None:
        size = write_text(html_path, render_trace_report(doc, bundle.trace, title=title))
        click.echo(f"wrote {html_path} ({size / 1024:,.0f} kB)", err=True)
    return render_markdown(doc, title=title)
