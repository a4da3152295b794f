"""``stepscope whatif PATH --workers 4 ...``: predict the step after a fix, before making it."""

from __future__ import annotations

import click

from stepscope.analysis.whatif import transforms as tf
from stepscope.analysis.whatif.simulate import simulate
from stepscope.cli.common import echo_json, load_trace, trace_options
from stepscope.errors import UsageError
from stepscope.report import whatif_view
from stepscope.report.console import terminal_console


def _pair(text: str, option: str) -> tuple[str, float]:
    """``REGEX=FACTOR`` → (regex, factor); a one-line usage error otherwise."""
    pattern, sep, value = text.rpartition("=")
    try:
        factor = float(value)
    except ValueError:
        factor = -1.0
    if not sep or not pattern or factor < 0:
        raise UsageError(f"{option} takes REGEX=FACTOR with a factor >= 0 (got {text!r})")
    return pattern, factor


def transforms_of(workers: int | None, drop_syncs: str | None, pin: bool, scales: tuple[str, ...],
                  host_overhead: float | None, host_in: tuple[str, ...], overlap_comm: bool) -> list[tf.Transform]:
    """The transformations the options name, in a fixed order (input, host, syncs, copies, device)."""
    out: list[tf.Transform] = []
    if workers is not None:
        out.append(tf.LoaderWorkers(workers))
    if host_overhead is not None:
        out.append(tf.HostOverhead(host_overhead))
    out += [tf.HostOverhead(f, tf.Select(p)) for p, f in (_pair(s, "--host-in") for s in host_in)]
    if drop_syncs is not None:
        out.append(tf.DropSyncs(tf.Select(drop_syncs)))
    if pin:
        out.append(tf.PinnedCopies())
    out += [tf.ScaleDevice(tf.Select(p), f) for p, f in (_pair(s, "--scale") for s in scales)]
    if overlap_comm:
        out.append(tf.OverlapComm())
    if not out:
        raise UsageError("name at least one change: --workers, --host-overhead, --host-in, --drop-syncs, "
                         "--pin-copies, --scale or --overlap-comm (see stepscope whatif --help)")
    return out


@click.command("whatif")
@click.argument("path", required=False, type=click.Path())
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="DataLoader with N background workers (each call waits max(0, fetch/N - rest of step)).")
@click.option("--host-overhead", type=click.FloatRange(min=0), default=None, metavar="FACTOR",
              help="Launch calls and host work between them take FACTOR x their time (0: CUDA/HIP graphs).")
@click.option("--host-in", multiple=True, metavar="REGEX=FACTOR",
              help="The same, only inside host ops matching REGEX (e.g. '^Optimizer.step=0.5': a fused optimizer).")
@click.option("--drop-syncs", default=None, metavar="REGEX",
              help="Blocking calls whose name or op matches REGEX no longer block ('.': all; 'item': .item()).")
@click.option("--pin-copies", "pin", is_flag=True, help="Pageable copies pinned: half their time, non-blocking.")
@click.option("--scale", "scales", multiple=True, metavar="REGEX=FACTOR",
              help="Kernels/copies whose name or launching op matches REGEX take FACTOR x their time (repeatable).")
@click.option("--overlap-comm", is_flag=True, help="Communication kernels fully hidden under compute (upper bound).")
@click.option("--json", "as_json", is_flag=True, help="Print the prediction as JSON.")
@trace_options
def command(path: str | None, workers: int | None, host_overhead: float | None, host_in: tuple[str, ...],
            drop_syncs: str | None, pin: bool, scales: tuple[str, ...], overlap_comm: bool, as_json: bool,
            no_cache: bool, span: str | None, ranks: tuple[int, ...]) -> None:
    """Predict each step with the named changes applied together (the embedded sample when PATH is omitted)."""
    changes = transforms_of(workers, drop_syncs, pin, scales, host_overhead, host_in, overlap_comm)
    trace = load_trace(path, no_cache, span, ranks)
    result = simulate(trace, changes)
    if as_json:
        echo_json(whatif_view.whatif_dict(result, trace.source))
        return
    whatif_view.render(result, trace.source, terminal_console())
