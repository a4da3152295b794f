"""``stepscope advise PATH``: what bounds each step, and what to change — ranked, with evidence."""

from __future__ import annotations

from typing import Any

import click

from stepscope.advisor.config import load_config
from stepscope.advisor.engine import Advice, run_advisor
from stepscope.analysis.bundle import analyze
from stepscope.cli.common import InputPath, echo_json, load_trace, map_reduce_option, map_reduce_run, trace_options
from stepscope.errors import UsageError
from stepscope.report import findings_view, json_out
from stepscope.report.advice_json import finding_dict, verdict_dicts
from stepscope.report.console import terminal_console
from stepscope.report.terminal import render_diagnostics


@click.command("advise", short_help="What bounds each step, and what to change, ranked.")
@click.argument("path", required=False, type=InputPath())
@click.option("--json", "as_json", is_flag=True, help="Print findings, verdicts and rules not run as JSON.")
@click.option("--top", default=10, show_default=True, help="Findings to show in the terminal.")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="Override an advisor threshold (repeatable), e.g. --set dataloader_min_pct=10.")
@click.option("--config", "config_file", type=InputPath(dir_okay=False), default=None,
              help="TOML file with advisor thresholds (top level, [advisor] or [tool.stepscope.advisor]).")
@map_reduce_option
@trace_options
def command(path: str | None, as_json: bool, top: int, settings: tuple[str, ...], config_file: str | None,
            no_cache: bool, span: str | None, ranks: tuple[int, ...], map_reduce: bool | None = None) -> None:
    """Advise on a trace file or run directory (the embedded sample when PATH is omitted)."""
    cfg = load_config(config_file, settings)  # bad settings fail before the (slower) load
    mr = map_reduce_run(path, map_reduce, no_cache, span, ranks, config=cfg) if as_json else None
    if mr is not None:
        _echo_advice(str(mr.document["source"]), mr.advice, list(mr.document.get("diagnostics") or []))
        return
    if map_reduce:
        raise UsageError("--map-reduce makes the JSON output: add --json")
    trace = load_trace(path, no_cache, span, ranks)
    advice = run_advisor(analyze(trace), cfg)
    if as_json:
        _echo_advice(trace.source, advice, [d.to_dict() for d in trace.diagnostics])
        return
    console = terminal_console()
    console.rule(f"[bold]stepscope advise[/bold] {trace.source}")
    findings_view.render_verdicts(advice.verdicts, console, advice.findings)
    findings_view.render_findings(advice.findings, console, top)
    findings_view.render_not_run(advice.not_run, console, advice.verdicts[0].platform if advice.verdicts else "")
    render_diagnostics(trace.diagnostics, console)  # what was repaired or dropped: the answer is of what was read


def _echo_advice(source: str, advice: Advice, diagnostics: list[Any]) -> None:
    echo_json(json_out.clean({
        "schema_version": json_out.SCHEMA_VERSION, "source": source,
        "verdicts": verdict_dicts(advice.verdicts, advice.findings),
        "findings": [finding_dict(f) for f in advice.findings],
        "not_run": [n.to_dict() for n in advice.not_run], "diagnostics": diagnostics}))
