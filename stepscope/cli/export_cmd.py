"""``stepscope export PATH -o OUT.json.gz``: the model as a Perfetto / chrome-trace file with derived tracks."""

from __future__ import annotations

import click

from stepscope.cli.common import InputPath, echo_json, load_trace, trace_options
from stepscope.errors import UsageError


def parse_steps(text: str | None) -> tuple[int, int] | None:
    """``"3-7"`` → (3, 7); ``"5"`` → (5, 5); None → None."""
    if text is None:
        return None
    a, sep, b = text.partition("-")
    try:
        lo, hi = int(a), int(b) if sep else int(a)
    except ValueError:
        raise UsageError(f"--steps wants N or A-B (step numbers), got {text!r}") from None
    if hi < lo:
        raise UsageError(f"--steps {text}: the last step comes before the first")
    return lo, hi


@click.command("export", short_help="Write a trace as a Perfetto / chrome-trace JSON file.")
@click.argument("path", type=InputPath())
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Output file (.json, or .json.gz to compress).")
@click.option("--steps", default=None, help="Only the time span of these ProfilerSteps: N or A-B.")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
@trace_options
def command(path: str, output: str, steps: str | None, as_json: bool, no_cache: bool, span: str | None,
            ranks: tuple[int, ...]) -> None:
    """Write PATH as a chrome-trace / Perfetto JSON file: every event and memory (allocator) event,
    launch→kernel flows, steps, and derived counter tracks (GPU utilization %, queue length per stream).

    Open the output in https://ui.perfetto.dev or chrome://tracing; it also loads back in stepscope.
    """
    from stepscope.report.export import export_chrome_trace

    step_range = parse_steps(steps)
    trace = load_trace(path, no_cache, span, ranks)
    stats = export_chrome_trace(trace, output, ranks=list(ranks) or None, steps=step_range)
    if as_json:
        echo_json(stats.to_dict())
        return
    click.echo(f"wrote {stats.path}: {stats.events:,} events, {stats.memory_events:,} memory events, "
               f"{stats.flows:,} flows, {stats.steps} steps, "
               f"{stats.counter_samples:,} counter samples ({stats.bytes_written / 2**20:,.1f} MiB)")
