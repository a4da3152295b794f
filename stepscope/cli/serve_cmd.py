"""``stepscope serve DIR``: the local web UI over every run under DIR (docs/serve.md).

Needs starlette and uvicorn, core dependencies of stepscope; in an environment that lacks them the
command prints the install hint and exits 2. Binds 127.0.0.1 on a free port by default and says
loudly when told to bind elsewhere.
"""

from __future__ import annotations

import logging

import click

from stepscope.cli.common import STEP_MS_HELP, InputPath, StepMs
from stepscope.errors import UsageError

INSTALL_HINT = "stepscope serve needs starlette and uvicorn (dependencies of stepscope): pip install starlette uvicorn"


def _need_web() -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise UsageError(INSTALL_HINT) from None


@click.command("serve", short_help="Local web UI over the runs under a directory.")
@click.argument("directory", type=InputPath())
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. Anything but loopback exposes the traces to the network.")
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535),
              help="Port to bind (0 = pick a free one).")
@click.option("--no-browser", is_flag=True, help="Do not open a browser tab.")
@click.option("--lazy", is_flag=True, help="Analyse each run on its first request instead of in the background "
              "from startup.")
@click.option("--map-reduce/--no-map-reduce", "map_reduce", default=None,
              help="Analyse runs through per-rank summaries, loading one rank's events only for a view that needs "
              "them [default: runs of several rank files]; --no-map-reduce holds every run's whole model.")
@click.option("--loaded-ranks", default=2, show_default=True, type=click.IntRange(1, 4096),
              help="Rank models a map-reduce run keeps loaded for its timeline (each holds one rank's events; "
              "raise it to the run's ranks for 'all ranks on one axis' without reloading).")
@click.option("--step-ms", type=StepMs(), default=None,
              help=STEP_MS_HELP[:-1] + ", for every run served; the page asks for another per run (docs/serve.md).")
def command(directory: str, host: str, port: int, no_browser: bool, lazy: bool, map_reduce: bool | None,
            loaded_ranks: int, step_ms: float | None) -> None:
    """Serve a web UI over the runs (trace files or run directories) under DIRECTORY."""
    _need_web()
    from stepscope.server.serve import serve

    logging.basicConfig(level=logging.WARNING, format="stepscope serve: %(message)s")

    def warn(text: str) -> None:
        click.secho(text, err=True, fg="red", bold=True)

    try:
        serve(directory, host=host, port=port, open_browser=not no_browser, preload=not lazy, map_reduce=map_reduce,
              loaded_ranks=loaded_ranks, step_ms=step_ms,
              echo=lambda s: click.echo(s), warn=warn)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
