"""The MCP tests' reference: the §12 document as ``stepscope analyze --json`` prints it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from stepscope.cli import cli

DATA = Path(__file__).resolve().parents[2] / "data" / "h100_cuda_train"
BASE, FIXED = DATA / "base", DATA / "fixed"


def cli_json(cache: Path, *args: str) -> dict[str, Any]:
    """What a ``stepscope ... --json`` command prints, parsed (the reference the tools must equal)."""
    res = CliRunner(env={"STEPSCOPE_CACHE_DIR": str(cache)}).invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    out: dict[str, Any] = json.loads(res.output)
    return out


@pytest.fixture(scope="session")
def base_doc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return cli_json(tmp_path_factory.mktemp("cache"), "analyze", str(BASE))


@pytest.fixture(scope="session")
def fixed_doc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return cli_json(tmp_path_factory.mktemp("cache"), "analyze", str(FIXED))
