"""``stepscope demo``: an input-bound CPU training run, its diagnosis, the fix, the measured gain."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import click

from stepscope.errors import UsageError


@click.command("demo", short_help="Diagnose a slow CPU training run, fix it, measure the gain.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory for the traces (default: a new temporary directory).")
@click.option("--steps", type=click.IntRange(min=12), default=40, show_default=True,
              help="Training steps per run.")
@click.option("--json", "as_json", is_flag=True, help="Print the measured results as JSON on stdout.")
def command(out_dir: Path | None, steps: int, as_json: bool) -> None:
    """Train a small CNN on CPU with a slow input pipeline, diagnose it, rerun it fixed, compare.

    Needs PyTorch (pip install 'stepscope[torch]'). Takes well under two minutes on two cores.
    """
    from stepscope.cli.demo_run import run_demo

    if out_dir is None:
        out_dir = Path(tempfile.mkdtemp(prefix="stepscope-demo-"))
    elif out_dir.exists() and any(out_dir.iterdir()):
        raise UsageError("--out must be a new or empty directory", out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    def echo(line: str) -> None:
        click.echo(line, err=as_json)

    result = run_demo(out_dir, echo=echo, steps=steps)
    echo(f"Traces and step records kept in {out_dir}")
    if as_json:
        json.dump(result.to_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
