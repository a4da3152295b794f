"""The ``stepscope`` command line: thin click commands over the one engine.

Exit codes: 0 ok, 1 a gate failed (``diff --fail-if-slower``), 2 bad input or usage.
Every :class:`~stepscope.errors.StepscopeError` becomes one line on stderr, never a traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import click

from stepscope.errors import StepscopeError

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


def main(argv: list[str] | None = None) -> None:
    """Console entry point: maps stepscope errors to one line and exit code 2."""
    try:
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
