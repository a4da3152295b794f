"""``stepscope analyze PATH``: the views, deep analyses and findings of one trace."""

from __future__ import annotations

import click
from rich.console import Console

from stepscope.advisor.engine import advise
from stepscope.advisor.finding import Finding
from stepscope.analysis.bundle import Bundle, analyze
from stepscope.cli.common import (
    InputPath,
    check_outputs,
    emit,
    emit_map_reduce,
    json_text,
    load_trace,
    map_reduce_option,
    map_reduce_run,
    md_output_options,
    trace_options,
)
from stepscope.errors import UsageError
from stepscope.report import json_out, terminal
from stepscope.report.advice_json import finding_dict
from stepscope.report.console import terminal_console


def findings_for(bundle: Bundle) -> list[Finding]:
    """The advisor's findings of the bundle."""
    return list(advise(bundle))


def _write_reports(bundle: Bundle, findings: list[Finding], html_path: str | None) -> str:
    """``--html FILE`` (the standalone app, :mod:`stepscope.server.standalone`) / ``--md``: write the
    page; return the Markdown summary."""
    from stepscope.report.markdown import render_markdown
    from stepscope.server.standalone import default_title, render_page, run_payload, write_text

    with bundle.memo.active():
        doc = json_out.to_json(bundle, [finding_dict(f) for f in findings])
        title = default_title(bundle.trace.source)
        if html_path is not None:
            size = write_text(html_path, render_page(run_payload(bundle, doc, title=title)))
            click.echo(f"wrote {html_path} ({size / 1024:,.0f} kB)", err=True)
        return render_markdown(doc, title=title)


def view_names() -> list[str]:
    """The names ``--view`` accepts: every analysis the terminal report renders."""
    from stepscope.report.views import CLUSTER_RENDERERS, RENDERERS

    return [*RENDERERS, *CLUSTER_RENDERERS]


def _check_views(views: tuple[str, ...]) -> tuple[str, ...]:
    bad = [v for v in views if v not in view_names()]
    if bad:
        raise UsageError(f"unknown view {', '.join(repr(b) for b in bad)} (views: {', '.join(view_names())})")
    return views


@click.command("analyze", short_help="Every view, analysis and finding of a trace or run directory.")
@click.argument("path", required=False, type=InputPath())
@click.option("--json", "as_json", is_flag=True, help="Print the versioned JSON document (docs/json.md).")
@click.option("--view", "views", multiple=True, callback=lambda _c, _p, v: _check_views(v),
              help="Show only these views (repeatable), e.g. --view kernels; the analyses and findings "
                   "are the same as without it.")
@click.option("--top", default=10, show_default=True, help="Rows per table.")
@click.option("--batch-size", type=int, default=None, help="Samples per step, for samples/s.")
@click.option("--html", "html_out", type=click.Path(dir_okay=False), default=None,
              help="Also write the self-contained HTML report to this file.")
@md_output_options()
@map_reduce_option
@trace_options
def command(path: str | None, as_json: bool, views: tuple[str, ...], top: int, batch_size: int | None,
            no_cache: bool, span: str | None, ranks: tuple[int, ...], html_out: str | None = None,
            as_md: bool = False, output: str | None = None, map_reduce: bool | None = None) -> None:
    """Analyze a trace file or run directory (the embedded sample when PATH is omitted)."""
    check_outputs(as_md, as_json, output)
    if as_json and not html_out:
        mr = map_reduce_run(path, map_reduce, no_cache, span, ranks, batch_size)
        if mr is not None:
            emit_map_reduce(mr, output)
            return
    if map_reduce:
        raise UsageError("--map-reduce makes the JSON document: add --json (without --html)")
    trace = load_trace(path, no_cache, span, ranks)
    bundle = analyze(trace, batch_size=batch_size)  # --view chooses only what is shown
    findings = findings_for(bundle)
    if html_out or as_md:
        md = _write_reports(bundle, findings, html_out)
        if as_md:
            emit(md, output)
            return
    if as_json:
        emit(json_text(json_out.to_json(bundle, [finding_dict(f) for f in findings])), output)
        return
    console = terminal_console()
    renderer = None
    if findings:
        from stepscope.report.findings_view import render_findings

        def renderer(c: Console) -> None:
            render_findings(findings, c, top)

    terminal.render(bundle, console, views or None, top, findings_renderer=renderer)
