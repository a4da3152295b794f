"""The ``stepscope`` command line: thin click commands over the one engine.

Exit codes: 0 ok, 1 a gate failed (``diff --fail-if-slower``), 2 bad input or usage.
Every :class:`~stepscope.errors.StepscopeError` becomes one line on stderr, never a traceback.
"""

from __future__ import annotations

from stepscope.runtime.heap import threads_share_the_heap

threads_share_the_heap()  # first, before numpy is imported and starts its threads (stepscope.runtime.heap)

import contextlib  # noqa: E402
import importlib  # noqa: E402
import importlib.util  # noqa: E402
import sys  # noqa: E402
from collections.abc import Iterator  # noqa: E402

import click  # noqa: E402

from stepscope.errors import StepscopeError  # noqa: E402
from stepscope.runtime.deferred import deferred_cache_writes  # noqa: E402
from stepscope.runtime.heap import heap_for_big_arrays  # noqa: E402

#: command modules, each exposing ``command`` (a click.Command); loaded lazily by name
COMMANDS = {
    "analyze": "stepscope.cli.analyze_cmd",
    "sql": "stepscope.cli.sql_cmd",
    "advise": "stepscope.cli.advise_cmd",
    "diff": "stepscope.cli.diff_cmd",
    "report": "stepscope.cli.report_cmd",
    "run": "stepscope.cli.run_cmd",
    "demo": "stepscope.cli.demo_cmd",
    "serve": "stepscope.cli.serve_cmd",
    "export": "stepscope.cli.export_cmd",
    "whatif": "stepscope.cli.whatif_cmd",
    "mcp": "stepscope.cli.mcp_cmd",
    "memory": "stepscope.cli.memory_cmd",
}


class LazyGroup(click.Group):
    """A group whose commands import only when used, so ``stepscope --help`` stays fast."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name, mod in COMMANDS.items() if _module_exists(mod)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        mod = COMMANDS.get(cmd_name)
        if mod is None or not _module_exists(mod):
            return None
        command = importlib.import_module(mod).command
        assert isinstance(command, click.Command)
        return command


def _module_exists(mod: str) -> bool:
    return importlib.util.find_spec(mod) is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="stepscope")
def cli() -> None:
    """stepscope: why is this training / inference step slow, and what to change."""


#: commands that keep running or run the user's workload: glibc's defaults stay (freed memory goes back)
LONG_RUNNING = frozenset({"serve", "mcp", "run"})


def _heap_mode(argv: list[str]) -> contextlib.AbstractContextManager[None]:
    """A one-shot command (analyze, report ...) takes its big arrays from the heap and keeps freed
    memory for the next pass (:mod:`stepscope.runtime.heap`): its analyses make and drop arrays of
    tens of MB by the dozen, each otherwise a fresh mapping faulted in page by page."""
    command = next((a for a in argv if not a.startswith("-")), "")
    return contextlib.nullcontext() if command in LONG_RUNNING else _one_shot()


@contextlib.contextmanager
def _one_shot() -> Iterator[None]:
    """Big arrays from the heap, and the cache entry of a trace parsed afresh written on a thread
    while the command's analyses run (:mod:`stepscope.runtime.deferred`; waited for before exit).
    Its threads (the analyses, the cache write) allocate from the same heap (set at import)."""
    with heap_for_big_arrays(), deferred_cache_writes():
        yield


def main(argv: list[str] | None = None) -> None:
    """Console entry point: maps stepscope errors to one line and exit code 2."""
    try:
        with _heap_mode(argv if argv is not None else sys.argv[1:]):
            rc = cli.main(args=argv, prog_name="stepscope", standalone_mode=False)
    except StepscopeError as exc:
        click.echo(f"stepscope: error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("stepscope: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    sys.exit(rc if isinstance(rc, int) else 0)
