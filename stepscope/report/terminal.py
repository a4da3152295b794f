"""The terminal report: header, each view's renderer in order, findings, then diagnostics."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from stepscope.analysis.bundle import Bundle, RankResults, with_bundle_memo
from stepscope.analysis.common import step_windows
from stepscope.analysis.platform import NO_DEVICE, has_device, platform_of
from stepscope.analysis.registry import RANK_ANALYSES
from stepscope.model.diagnostics import Diagnostic
from stepscope.report.console import said
from stepscope.report.platform_texts import window_words
from stepscope.report.views import CLUSTER_RENDERERS, RENDERERS


def render_header(bundle: Bundle, console: Console) -> None:
    trace = bundle.trace
    console.rule(f"[bold]stepscope[/bold] {trace.source}")
    for r in trace.ranks:
        dev = trace.device_of_rank(r.rank)
        units = "CUs" if dev is not None and dev.vendor == "amd" else "SMs"
        shown = dev is not None and dev.sm_count and f"{dev.sm_count} {units}" not in dev.name
        what = (dev.name + (f" ({dev.sm_count} {units})" if shown else "")) if dev is not None else \
            "no device (a CPU-only run)" if r.platform == "cpu" else "no GPU activity"
        world = f", world {r.world_size}" if r.world_size else ""
        console.print(f"rank {r.rank}: {what}, platform {r.platform}{world}")
    console.print(f"{len(trace.events):,} events, {len(trace.ranks)} rank(s), {len(trace.steps)} step spans")


@with_bundle_memo
def render(bundle: Bundle, console: Console, views: Iterable[str] | None = None, top: int = 10,
           findings_renderer: Any = None) -> None:
    """Everything for the chosen views (all by default), then findings and diagnostics."""
    wanted = set(views) if views is not None else None
    render_header(bundle, console)
    if findings_renderer is not None:
        findings_renderer(console)
    # the job's views in its devices' words (an Ascend job's streams are an NPU's), as its findings
    job_platform = platform_of(bundle.trace, bundle.trace.rank_ids[0]) if bundle.trace.ranks else ""
    with said(console, window_words(False, job_platform)):
        for name, show_cluster in CLUSTER_RENDERERS.items():
            if wanted is None or name in wanted:
                show_cluster(bundle, console, top)
    for rank, rr in sorted(bundle.ranks.items()):
        # a rank without step markers: its views say "over the whole trace", as its findings do; on an
        # Ascend NPU or an AMD GPU, in that platform's words
        platform = platform_of(bundle.trace, rank)
        with said(console, window_words(not step_windows(bundle.trace, rank).has_steps, platform)):
            _render_rank(rr, console, wanted, top, has_device(bundle.trace, rank), platform)
    render_diagnostics(bundle.trace.diagnostics, console)


#: the views of the device's work: a rank without a device (a CPU-only run) gets one line, no rows
DEVICE_VIEWS = frozenset(a.name for a in RANK_ANALYSES if a.device)


def _render_rank(rr: RankResults, console: Console, wanted: set[str] | None, top: int, device: bool,
                 platform: str) -> None:
    """One rank's views, in order; the reason of each that has none (``name (rank r): why``)."""
    names = [n for n in RENDERERS if wanted is None or n in wanted]
    gone = [n for n in names if not device and n in DEVICE_VIEWS]
    for name in names:
        if name in gone:  # one line for them all, where the first would be: named where they were asked for
            if name == gone[0]:
                what = ", ".join(gone) if wanted is not None else f"the {len(gone)} views of a device's work"
                console.print(f"[dim]{what} (rank {rr.rank}): {NO_DEVICE}[/dim]")
            continue
        if RENDERERS[name](rr, console, top, platform):
            continue
        if name in rr.skipped:
            console.print(f"[dim]{name} (rank {rr.rank}): {rr.skipped[name]}[/dim]")


def render_diagnostics(diags: Sequence[Diagnostic], console: Console) -> None:
    """What ingest repaired or dropped; shown in every report."""
    if not diags:
        console.print("[green]ingest: no repairs, nothing dropped[/green]")
        return
    t = Table(title="ingest diagnostics (what was repaired or dropped)", header_style="bold")
    for col in ("severity", "what", "count", "example"):
        t.add_column(col, overflow="fold")
    for d in diags:
        colour = {"error": "red", "warning": "yellow"}.get(d.severity, "dim")
        t.add_row(f"[{colour}]{d.severity}[/{colour}]", d.name, f"{d.count:,}", d.example[:120])
    console.print(t)
