"""``stepscope run [opts] -- python train.py ...``: profile an unmodified training script."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import click

from stepscope.collect.step_timer import STEPS, StepRecord, summarise_records


def _summarise(trace_dir: Path) -> tuple[str, float]:
    """The short verdict printed after a run: steps and mean step time (the step breakdown's) from the
    trace; and that mean step (0 without steps)."""
    import stepscope
    from stepscope.cli.demo_run import stats_of

    trace = stepscope.load(trace_dir)
    stats = stats_of(trace)
    if stats.steps == 0:
        return "no ProfilerStep spans in the trace", 0.0
    return (f"{stats.steps} profiled steps on {len(trace.ranks)} rank(s), "
            f"mean step {stats.step_ms:.2f} ms, {len(trace.counters)} system counter samples"), stats.step_ms


@click.command("run", short_help="Profile an unmodified training script: run -- python train.py",
               context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--wait", type=click.IntRange(min=0), default=1, show_default=True,
              help="Steps skipped before each profiling cycle.")
@click.option("--warmup", type=click.IntRange(min=0), default=1, show_default=True,
              help="Steps traced but discarded before recording.")
@click.option("--active", type=click.IntRange(min=1), default=3, show_default=True,
              help="Steps recorded per cycle.")
@click.option("--repeat", type=click.IntRange(min=0), default=1, show_default=True,
              help="Profiling cycles (0: until the script ends).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Trace directory (default: a new temporary directory).")
@click.option("--record-shapes/--no-record-shapes", default=True, show_default=True)
@click.option("--profile-memory/--no-profile-memory", default=True, show_default=True)
@click.option("--with-stack/--no-with-stack", default=False, show_default=True)
@click.option("--with-modules/--no-with-modules", default=True, show_default=True)
@click.option("--worker-name", default=None, help="Trace file prefix (default <hostname>_<pid>).")
@click.option("--log-every", type=click.IntRange(min=0), default=10, show_default=True,
              help="Log ips / batch_cost / reader_cost every N steps (0: never).")
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Samples per optimizer step: the rate is then samples/s (steps/s without it).")
@click.option("--sample-interval", type=click.FloatRange(min=0.001), default=0.1, show_default=True,
              help="Seconds between system samples.")
@click.argument("cmd", nargs=-1, type=click.UNPROCESSED, required=True)
def command(wait: int, warmup: int, active: int, repeat: int, out_dir: Path | None,
            record_shapes: bool, profile_memory: bool, with_stack: bool, with_modules: bool,
            worker_name: str | None, log_every: int, batch_size: int | None, sample_interval: float,
            cmd: tuple[str, ...]) -> None:
    """Run CMD (e.g. `-- python train.py --epochs 1`) with the PyTorch profiler armed.

    The profiler steps at each optimizer.step(); DataLoader waits are timed; CPU, memory, disk
    (and GPU via NVML) are sampled into the trace as counter tracks. Needs PyTorch. The script needs
    wait + warmup + active optimizer steps per cycle: with fewer, the run warns that its capture is
    short and its last profiled step partial.
    """
    from stepscope.collect.profiler import ProfileOptions
    from stepscope.collect.runner import capture_shortfall, profiler_cost_line, run_script, write_step_records

    opts = ProfileOptions(wait=wait, warmup=warmup, active=active, repeat=repeat,
                          record_shapes=record_shapes, profile_memory=profile_memory,
                          with_stack=with_stack, with_modules=with_modules)
    out = out_dir if out_dir is not None else Path(tempfile.mkdtemp(prefix="stepscope-run-"))
    result = run_script(cmd, out, opts, log_every=log_every, worker_name=worker_name,
                        sample_interval_s=sample_interval, batch_size=batch_size)
    _report(result.trace_files, result.records, out, wait + warmup + active, batch_size)
    if result.records and out.is_dir():
        write_step_records(result)
    if result.trace_files:
        said, step_ms = _summarise(out)
        click.echo(f"[stepscope] {said}", err=True)
        cost = profiler_cost_line(result, step_ms)
        if cost is not None:
            click.echo(f"[stepscope] {cost}", err=True)
    for i, line in enumerate(capture_shortfall(result, opts)):  # last, where it is seen; the exit code stays
        click.secho(f"[stepscope] {'warning: ' if i == 0 else '  '}{line}", err=True, fg="yellow")
    if result.exit_code:
        sys.exit(result.exit_code)


def _report(files: tuple[Path, ...], recs: tuple[StepRecord, ...], out: Path, needed: int,
            batch_size: int | None = None) -> None:
    """Where the traces are, and the step timer over the whole run (on stderr)."""
    if not files:
        click.echo(f"[stepscope] no trace written: the script made {len(recs)} optimizer steps, "
                   f"the schedule needs at least {needed}", err=True)
        return
    click.echo(f"[stepscope] {len(files)} trace file(s) in {out}:", err=True)
    for f in files:
        click.echo(f"[stepscope]   {f.name}", err=True)
    if recs:
        unit = "samples" if batch_size else STEPS
        click.echo(f"[stepscope] {len(recs)} steps: {summarise_records(recs).format(unit)}", err=True)
