"""``stepscope diff BASE NEW``: where the time went between two runs, and a CI gate on regressions.

Exit codes: 0 ok (or gate passed), 1 ``--fail-if-slower`` gate failed (the reason is printed),
2 bad input or usage.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from stepscope.cli.common import InputPath, _progress_factory, check_outputs, emit, json_text, md_output_options
from stepscope.compare import tabular, terminal
from stepscope.compare.align import NameMap, builtin_name_map, load_name_map
from stepscope.compare.diff import DiffResult, compare_sides
from stepscope.compare.document import to_json
from stepscope.compare.gate import GateResult
from stepscope.compare.prepare import SideSpec, sides_for
from stepscope.errors import UsageError
from stepscope.ingest import load
from stepscope.model.trace import Trace
from stepscope.report.console import terminal_console


def _name_map(specs: tuple[str, ...]) -> NameMap | None:
    nm: NameMap | None = None
    for spec in specs:
        part = builtin_name_map() if spec == "builtin" else load_name_map(spec)
        nm = part if nm is None else nm.merged(part)
    return nm


def _loader(path: str | Path | None, use_cache: bool, span: str | None, ranks: Any) -> Trace:
    return load(path, use_cache=use_cache, span=span, ranks=list(ranks) or None, progress=_progress_factory())


def _write_reports(doc: dict[str, Any], csv_dir: str | None, xlsx: str | None, html: str | None,
                   title: str, runs: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> list[str]:
    written: list[str] = []
    if csv_dir:
        written += [str(p) for p in tabular.write_csv(doc, csv_dir)]
    if xlsx:
        written.append(str(tabular.write_xlsx(doc, xlsx)))
    if html:
        from stepscope.server.standalone import diff_payload, render_page, write_text

        write_text(html, render_page(diff_payload(doc, title=title, runs=runs(doc) if runs else None)))
        written.append(html)
    return written


def _aligned(base: SideSpec, new: SideSpec, use_cache: bool) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """For the HTML report: both traces again (from the cache), their compared ranks' timelines (and a
    few other ranks') at the same step (the diff's sides were reduced without their traces, maybe in
    other processes)."""
    def runs(doc: dict[str, Any]) -> dict[str, Any]:
        from stepscope.server.standalone import aligned_runs

        rb, rn = int(doc["base"]["rank"]), int(doc["new"]["rank"])
        # the ranks the diff read (a --rank side: that one; else all, so other ranks can be aligned too)
        tb = _loader(base.path, use_cache, base.span, () if base.rank is None else (rb,))
        tn = _loader(new.path, use_cache, new.span, () if new.rank is None else (rn,))
        return aligned_runs(tb, rb, tn, rn)
    return runs


def _finish(result: DiffResult, gate: GateResult | None, as_json: bool, top: int, outputs: dict[str, Any],
            title: str) -> None:
    doc = to_json(result, gate)
    written = _write_reports(doc, outputs["csv"], outputs["xlsx"], outputs["html"], title, outputs.get("runs"))
    if outputs["md"]:
        from stepscope.report.markdown import render_diff_markdown

        emit(render_diff_markdown(doc, title=title), outputs["output"])
    elif as_json:
        emit(json_text(doc), outputs["output"])
    else:
        terminal.render(doc, terminal_console(), top)
    err = terminal_console(stderr=True)
    for path in written:
        err.print(f"[dim]wrote {path}[/]")
    if gate is not None:
        if as_json:
            click.echo(f"stepscope diff: gate {'passed' if gate.passed else 'FAILED'}: {gate.reason}", err=True)
        if not gate.passed:
            if not as_json:
                click.echo(f"stepscope diff: gate FAILED: {gate.reason}", err=True)
            sys.exit(1)  # SystemExit: the group's standalone_mode=False would swallow click's Exit


@click.command("diff", short_help="Compare two runs (BASE before, NEW after); gate CI on it.")
@click.argument("base", type=InputPath())
@click.argument("new", type=InputPath())
@click.option("--base-rank", type=int, default=None, help="Rank compared in BASE (default: the lowest).")
@click.option("--new-rank", type=int, default=None, help="Rank compared in NEW (default: the lowest).")
@click.option("--base-span", default=None, help="Profiling window of a BASE run directory.")
@click.option("--new-span", default=None, help="Profiling window of a NEW run directory.")
@click.option("--base-steps", default=None, help="ProfilerSteps of BASE, e.g. 5-8,10 (default: all).")
@click.option("--new-steps", default=None, help="ProfilerSteps of NEW (default: all).")
@click.option("--by-shapes", is_flag=True, help="Match operators by name + input shapes.")
@click.option("--name-map", "name_maps", multiple=True,
              help="Rename before matching: 'builtin' (GPU↔NPU, CUDA↔ROCm families) or a JSON file. Repeatable.")
@click.option("--totals", is_flag=True, help="Tables as totals over the selection instead of per average step.")
@click.option("--no-findings", is_flag=True, help="Do not run the advisor on both runs.")
@click.option("--fail-if-slower", "fail_pct", type=float, default=None, metavar="PCT",
              help="Exit 1 when NEW's average step is more than PCT % slower than BASE's.")
@click.option("--json", "as_json", is_flag=True, help="Print the versioned diff document (docs/json.md).")
@click.option("--csv", "csv_dir", type=click.Path(), default=None, help="Write one CSV per table into DIR.")
@click.option("--xlsx", type=click.Path(), default=None, help="Write a workbook, one sheet per table.")
@click.option("--html", type=click.Path(), default=None, help="Write a self-contained HTML report.")
@md_output_options()
@click.option("--top", default=10, show_default=True, help="Rows per table in the terminal.")
@click.option("--no-cache", is_flag=True, help="Parse again; neither read nor write the cache.")
def command(base: str, new: str, base_rank: int | None, new_rank: int | None, base_span: str | None,
            new_span: str | None, base_steps: str | None, new_steps: str | None, by_shapes: bool,
            name_maps: tuple[str, ...], totals: bool, no_findings: bool, fail_pct: float | None, as_json: bool,
            csv_dir: str | None, xlsx: str | None, html: str | None, as_md: bool, output: str | None, top: int,
            no_cache: bool) -> None:
    """Compare two traces (files or run directories): BASE is before, NEW is after."""
    check_outputs(as_md, as_json, output)
    if fail_pct is not None and fail_pct < 0:
        raise UsageError("--fail-if-slower takes a percentage ≥ 0")
    nm = _name_map(name_maps)
    sb, sn = sides_for(SideSpec(base, base_rank, base_span, base_steps), SideSpec(new, new_rank, new_span, new_steps),
                       by_shapes=by_shapes, per_step=not totals, with_findings=not no_findings,
                       use_cache=not no_cache, loader=_loader)
    result = compare_sides(sb, sn, name_map=nm, by_shapes=by_shapes, per_step=not totals)
    gate = result.gate(fail_pct) if fail_pct is not None else None
    title = f"stepscope diff: {Path(base).name} → {Path(new).name}"
    outputs = {"csv": csv_dir, "xlsx": xlsx, "html": html, "md": as_md, "output": output,
               "runs": _aligned(SideSpec(base, base_rank, base_span, base_steps),
                                SideSpec(new, new_rank, new_span, new_steps), not no_cache)}
    _finish(result, gate, as_json, top, outputs, title)
    sys.stdout.flush()
