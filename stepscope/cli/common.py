"""Options and helpers shared by the commands: input paths checked in one line, loading with a progress
bar, JSON output."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from stepscope.errors import StepscopeError
from stepscope.ingest import load
from stepscope.ingest.engines import ENGINES
from stepscope.ingest.step_records import given_step_problem, with_given_step
from stepscope.model.trace import Trace

if TYPE_CHECKING:
    from stepscope.advisor.config import AdvisorConfig
    from stepscope.mapreduce.driver import MapReduceResult

PROGRESS_ABOVE_BYTES = 64 << 20
ENGINE_KEY, RAY_ADDRESS_KEY = "stepscope.engine", "stepscope.ray_address"
STEP_MS_KEY = "stepscope.step_ms"


def _progress_factory() -> Callable[[int], Callable[[int], None]] | None:
    if not sys.stderr.isatty():
        return None
    from rich.progress import Progress

    def start(total_bytes: int) -> Callable[[int], None]:
        if total_bytes < PROGRESS_ABOVE_BYTES:
            return lambda n: None
        prog = Progress(transient=True)
        prog.start()
        task = prog.add_task(f"reading {total_bytes / 2**20:,.0f} MiB", total=None)

        def tick(n_events: int) -> None:
            prog.advance(task, n_events)

        return tick

    return start


class InputPath(click.Path):
    """``click.Path(exists=True)`` whose refusals are stepscope's one line, as ``analyze`` reports a missing
    trace: ``stepscope: error: PATH: no such file or directory`` and exit code 2, not click's usage block."""

    def __init__(self, *, file_okay: bool = True, dir_okay: bool = True) -> None:
        super().__init__(exists=True, file_okay=file_okay, dir_okay=dir_okay)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        check_input_path(value, file_okay=self.file_okay, dir_okay=self.dir_okay)
        return super().convert(value, param, ctx)


def check_input_path(path: str | os.PathLike[str], *, file_okay: bool = True, dir_okay: bool = True) -> None:
    """Raise the one-line :class:`StepscopeError` naming ``path`` when it is missing, unreadable, or a
    directory where a file is wanted (or a file where a directory is)."""
    path = os.fspath(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise StepscopeError("no such file or directory", path) from None
    except OSError as exc:
        raise StepscopeError(f"cannot read it ({exc.strerror or type(exc).__name__})", path) from None
    if not dir_okay and stat.S_ISDIR(mode):
        raise StepscopeError("is a directory, not a file", path)
    if not file_okay and not stat.S_ISDIR(mode):
        raise StepscopeError("is not a directory", path)
    if not os.access(path, os.R_OK):
        raise StepscopeError("cannot read it (permission denied)", path)


#: ``--step-ms``'s help, on every trace-reading command and on ``serve``
STEP_MS_HELP = ("The step as timed without the profiler (a training log's): the profiler's own cost per op is "
                "measured from it instead of assumed (docs/analyses/profiler_cost.md).")


class StepMs(click.types.FloatParamType):
    """``--step-ms MS``: a finite number of milliseconds above 0 (``nan``, ``inf``, 0 refused with click's
    usage error, exit 2; :func:`~stepscope.ingest.step_records.given_step_problem`)."""

    name = "ms"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            step_ms = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of milliseconds", param, ctx)
        problem = given_step_problem(step_ms)
        if problem is not None:
            self.fail(problem, param, ctx)
        return step_ms


def load_trace(path: str | None, no_cache: bool, span: str | None, ranks: tuple[int, ...]) -> Trace:
    """Load with the CLI's conventions (progress bar on big inputs, rank / span selection, the
    --engine / --ray-address of the running command)."""
    ctx = click.get_current_context(silent=True)
    meta = ctx.meta if ctx is not None else {}
    trace = load(path, use_cache=not no_cache, span=span, ranks=list(ranks) or None,
                 progress=_progress_factory(), engine=meta.get(ENGINE_KEY, "local"),
                 ray_address=meta.get(RAY_ADDRESS_KEY))
    step_ms = meta.get(STEP_MS_KEY)
    return trace if step_ms is None else with_given_step(trace, float(step_ms))


def map_reduce_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--map-reduce/--no-map-reduce``: force the per-rank summaries path on or off (default: on for
    runs of many ranks or bytes, docs/scale.md)."""
    return click.option("--map-reduce/--no-map-reduce", "map_reduce", default=None,
                        help="Analyse each rank in a worker and combine their summaries (bounded memory; "
                             "default: for more than 16 rank files or 4 GiB). Same JSON document.")(fn)


def map_reduce_run(path: str | None, choice: bool | None, no_cache: bool, span: str | None, ranks: tuple[int, ...],
                   batch_size: int | None = None, config: AdvisorConfig | None = None) -> MapReduceResult | None:
    """The map-reduce result of ``path`` when that path is chosen (``choice``, else the thresholds), None
    when the whole-model path is; with the --engine / --ray-address of the running command."""
    from stepscope.mapreduce.driver import map_reduce, wants_map_reduce

    if path is None or not wants_map_reduce(path, span, choice):
        return None
    ctx = click.get_current_context(silent=True)
    meta = ctx.meta if ctx is not None else {}
    return map_reduce(path, span=span, ranks=list(ranks) or None, batch_size=batch_size, use_cache=not no_cache,
                      engine=meta.get(ENGINE_KEY, "local"), ray_address=meta.get(RAY_ADDRESS_KEY), config=config,
                      step_ms=meta.get(STEP_MS_KEY))


def emit_map_reduce(result: MapReduceResult, output: str | None) -> None:
    """The map-reduce document as ``--json`` prints it, written rank by rank (to ``output`` or stdout)."""
    if output is None:
        result.write_json(lambda text: click.echo(text, nl=False))
        return
    with open(output, "w", encoding="utf-8") as fh:
        result.write_json(fh.write)
        size = fh.tell()
    click.echo(f"wrote {output} ({size / 1024:,.0f} kB)", err=True)


def echo_json(doc: Any) -> None:
    click.echo(json.dumps(doc, indent=2, allow_nan=False))


#: ``--md`` and ``-o`` mean the same on analyze, report and diff
MD_HELP = "Markdown summary (for a pull-request comment) instead of the usual output; to -o FILE, else stdout."
OUTPUT_HELP = "Write the output (--md, --json{extra}) to FILE instead of stdout."


def md_output_options(extra: str = "") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--md`` (flag) and ``-o/--output FILE``: the one meaning of both across commands."""
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn = click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
                          help=OUTPUT_HELP.format(extra=extra))(fn)
        return click.option("--md", "as_md", is_flag=True, help=MD_HELP)(fn)
    return deco


def emit(text: str, output: str | None) -> None:
    """Print ``text``, or write it to ``output`` (UTF-8) and say so on stderr."""
    if output is None:
        click.echo(text, nl=not text.endswith("\n"))
        return
    from pathlib import Path

    Path(output).write_text(text, encoding="utf-8")
    click.echo(f"wrote {output} ({len(text.encode()) / 1024:,.0f} kB)", err=True)


def check_outputs(as_md: bool, as_json: bool, output: str | None) -> None:
    """--md and --json are two outputs of one command run: one at a time; -o needs one of them."""
    from stepscope.errors import UsageError

    if as_md and as_json:
        raise UsageError("--md and --json are two outputs: choose one")
    if output is not None and not (as_md or as_json):
        raise UsageError("-o FILE writes the --md or --json output: add one of them")


def json_text(doc: Any) -> str:
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def _to_meta(key: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def store(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
        ctx.meta[key] = value
    return store


def trace_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--no-cache, --span, --rank: the selection options every trace-reading command takes; --engine,
    --ray-address and --step-ms go to ``ctx.meta`` (read by :func:`load_trace`), not to the command's
    arguments."""
    fn = click.option("--engine", type=click.Choice(ENGINES), default="local", expose_value=False,
                      callback=_to_meta(ENGINE_KEY), show_default=True,
                      help="Who parses the rank files: local processes, or one Ray task per file (docs/scale.md).")(fn)
    fn = click.option("--ray-address", default=None, expose_value=False, callback=_to_meta(RAY_ADDRESS_KEY),
                      help="With --engine ray: 'auto' or HOST:PORT of a Ray cluster (default: start a local Ray).")(fn)
    fn = click.option("--step-ms", type=StepMs(), default=None, expose_value=False, callback=_to_meta(STEP_MS_KEY),
                      help=STEP_MS_HELP)(fn)
    fn = click.option("--no-cache", is_flag=True, help="Parse again; neither read nor write the cache.")(fn)
    fn = click.option("--span", default=None, help="Profiling window of a run directory (1-based or timestamp).")(fn)
    fn = click.option("--rank", "ranks", type=int, multiple=True, help="Only these ranks (repeatable).")(fn)
    return fn
