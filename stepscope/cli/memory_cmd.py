"""``stepscope memory SNAPSHOT.pickle``: a CUDA caching-allocator snapshot, summarised (docs/memory_snapshot.md)."""

from __future__ import annotations

import re

import click
from rich.table import Table

from stepscope.analysis.allocator import AllocatorSummary, summarize
from stepscope.analysis.snapshot_join import JoinedPeak, join
from stepscope.cli.common import InputPath, echo_json, load_trace
from stepscope.ingest.snapshot import REPAIRS, read_snapshot
from stepscope.report.console import terminal_console


def _mb(n: int) -> str:
    return f"{n / 2**20:,.1f}"


_SITE = re.compile(r"^(?P<path>.*?)(?P<at>:\d+(?: .*)?)$", re.S)


def fit_site(site: str, width: int) -> str:
    """A site ``PATH:LINE FUNC`` in ``width`` characters with its end whole: the path's leading folders
    give way to "…" (``…\\gradient_estimators\\adam_forward.py:185 generate_perturbation_norm_paramwise``),
    never its file, line or function — two lines of one file stay two rows that read apart."""
    m = _SITE.match(site)
    if len(site) <= width or m is None:
        return site
    path, at = m["path"], m["at"]
    parts = re.split(r"(?<=[\\/])", path)  # each folder keeps its separator
    for i in range(1, len(parts)):
        short = "…" + "".join(parts[i:]) + at
        if len(short) <= width:
            return short
    return "…" + parts[-1] + at  # still too long: the column folds it, nothing cut


def _sites(title: str, rows: list[dict[str, object]], width: int) -> Table:
    t = Table(title=title)
    for col in ("MiB", "count", "site"):
        t.add_column(col, justify="right" if col != "site" else "left", overflow="fold")  # a site is never cut
    cells = [(_mb(int(r["bytes"])), f"{r['count']:,}", str(r["site"])) for r in rows]  # type: ignore[call-overload]
    numbers = max((len(a) for a, _, _ in cells), default=3) + max((len(b) for _, b, _ in cells), default=5)
    room = max(width - max(numbers, 8) - 10, 24)  # the site column: the width less the numbers, padding, rules
    for mib, count, site in cells:
        t.add_row(mib, count, fit_site(site, room))
    return t


#: the allocator's block states, as the terminal says them
STATE_WORDS = {"active_allocated": "allocated", "inactive": "free (cached by the allocator)",
               "active_pending_free": "freed, waiting for their streams"}


def blocks_in_words(total: int, by_state: dict[str, int]) -> str:
    """``468 blocks: 397 allocated, 71 free (cached by the allocator)`` (states with no block left out)."""
    parts = [f"{n:,} {STATE_WORDS.get(state, state.replace('_', ' '))}"
             for state, n in sorted(by_state.items(), key=lambda kv: -kv[1]) if n]
    return f"{total:,} block{'s' if total != 1 else ''}" + (f": {', '.join(parts)}" if parts else "")


def _render(s: AllocatorSummary) -> None:
    c = terminal_console()
    seg = s.segments
    c.print(f"[bold]{s.source}[/]: {seg['count']} segments ({seg['large']} large, {seg['small']} small), reserved "
            f"{_mb(seg['reserved_bytes'])} MiB, allocated {_mb(seg['allocated_bytes'])} MiB")
    c.print(f"{blocks_in_words(seg['blocks'], seg['blocks_by_state'])}; "
            f"largest allocation {_mb(s.largest_alloc_bytes)} MiB")
    for h in s.history:
        c.print(f"device {h.device}: peak live {_mb(h.peak_live_bytes)} MiB at +{h.peak_ms:,.1f} ms "
                f"of {h.duration_ms:,.1f} ms recorded")
        cats = ", ".join(f"{k.replace('_', ' ')} {_mb(v)}"
                         for k, v in sorted(h.by_category.items(), key=lambda kv: -kv[1]))
        c.print(f"device {h.device}: live at the peak by category (MiB, from the allocations' stacks): {cats or '-'}")
        c.print(_sites(f"device {h.device}: live at the peak, by site", h.live_at_peak, c.width))
    c.print(_sites("allocated over the history, by site", s.sites, c.width))
    for what, n in s.repairs.items():
        c.print(f"[yellow]repaired[/]: {n:,} history entries ({REPAIRS.get(what, what)})")


def _render_join(joined: list[JoinedPeak]) -> None:
    c = terminal_console()
    for j in joined:
        a = j.alignment
        c.print(f"device {j.device}: joined to the trace by {a.method} (shift {a.shift_ns:,} ns; {a.matched} of "
                f"{a.trace_allocs} [memory] allocations matched, within {a.spread_ns:,} ns); "
                f"{_mb(j.outside_bytes)} of {_mb(j.live_bytes)} MiB live at the peak were allocated outside the trace")
        t = Table(title=f"device {j.device}: live at the peak, by the op that allocated it")
        for col in ("MiB", "count", "by [memory] event", "op"):
            t.add_column(col, justify="right" if col != "op" else "left")
        for r in j.by_op:
            t.add_row(_mb(r["bytes"]), f"{r['count']:,}", f"{r['matched']:,}", str(r["op"]))
        c.print(t)
        steps = ", ".join(f"{'no step' if r['step'] < 0 else 'step ' + str(r['step'])} {_mb(r['bytes'])}"
                          for r in j.by_step)
        c.print(f"device {j.device}: live at the peak by ProfilerStep (MiB): {steps or '-'}")


@click.command("memory", short_help="Summarise a CUDA allocator snapshot (_dump_snapshot pickle).")
@click.argument("snapshot", type=InputPath(dir_okay=False))
@click.option("--top", default=10, show_default=True, type=click.IntRange(min=1), help="Rows per table.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON (with the live-bytes curve).")
@click.option("--trace", "trace_path", type=InputPath(),
              help="The Kineto trace of the same run: attribute the memory live at the peak to its ops and steps.")
@click.option("--offset-us", type=int, default=None,
              help="With --trace: the snapshot's time_us minus the trace's ts, when the clocks cannot be aligned "
                   "from the files (docs/memory_snapshot.md).")
def command(snapshot: str, top: int, as_json: bool, trace_path: str | None, offset_us: int | None) -> None:
    """Summarise a torch.cuda.memory._dump_snapshot pickle: segments, the peak, what is live at it and where
    it was allocated. The pickle is read with a restricted unpickler (plain data only: a snapshot is untrusted)."""
    snap = read_snapshot(snapshot)
    summary = summarize(snap, top=top)
    joined = join(snap, load_trace(trace_path, False, None, ()), offset_us, top) if trace_path else []
    if as_json:
        doc = summary.to_dict()
        if trace_path:
            doc["join"] = [j.to_dict() for j in joined]
        echo_json(doc)
        return
    _render(summary)
    _render_join(joined)
