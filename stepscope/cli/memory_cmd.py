"""``stepscope memory SNAPSHOT.pickle``: a CUDA caching-allocator snapshot, summarised (docs/memory_snapshot.md)."""

from __future__ import annotations

import click
from rich.table import Table

from stepscope.analysis.allocator import AllocatorSummary, summarize
from stepscope.cli.common import echo_json
from stepscope.ingest.snapshot import read_snapshot
from stepscope.report.console import terminal_console


def _mb(n: int) -> str:
    return f"{n / 2**20:,.1f}"


def _sites(title: str, rows: list[dict[str, object]]) -> Table:
    t = Table(title=title)
    for col in ("MiB", "count", "site"):
        t.add_column(col, justify="right" if col != "site" else "left")
    for r in rows:
        t.add_row(_mb(int(r["bytes"])), f"{r['count']:,}", str(r["site"]))  # type: ignore[call-overload]
    return t


def _render(s: AllocatorSummary) -> None:
    c = terminal_console()
    seg = s.segments
    c.print(f"[bold]{s.source}[/]: {seg['count']} segments ({seg['large']} large, {seg['small']} small), reserved "
            f"{_mb(seg['reserved_bytes'])} MiB, allocated {_mb(seg['allocated_bytes'])} MiB, {seg['blocks']} blocks "
            f"{seg['blocks_by_state']}; largest allocation {_mb(s.largest_alloc_bytes)} MiB")
    for h in s.history:
        c.print(f"device {h.device}: peak live {_mb(h.peak_live_bytes)} MiB at +{h.peak_ms:,.1f} ms "
                f"of {h.duration_ms:,.1f} ms recorded")
        cats = ", ".join(f"{k.replace('_', ' ')} {_mb(v)}"
                         for k, v in sorted(h.by_category.items(), key=lambda kv: -kv[1]))
        c.print(f"device {h.device}: live at the peak by category (MiB, from the allocations' stacks): {cats or '-'}")
        c.print(_sites(f"device {h.device}: live at the peak, by site", h.live_at_peak))
    c.print(_sites("allocated over the history, by site", s.sites))


@click.command("memory")
@click.argument("snapshot", type=click.Path(exists=True, dir_okay=False))
@click.option("--top", default=10, show_default=True, type=click.IntRange(min=1), help="Rows per table.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON (with the live-bytes curve).")
def command(snapshot: str, top: int, as_json: bool) -> None:
    """Summarise a torch.cuda.memory._dump_snapshot pickle: segments, the peak, what is live at it and where
    it was allocated. The pickle is read with a restricted unpickler (plain data only: a snapshot is untrusted)."""
    summary = summarize(read_snapshot(snapshot), top=top)
    if as_json:
        echo_json(summary.to_dict())
        return
    _render(summary)
