"""Every terminal table fits 80 columns without cutting a number ("187.…"): columns are dropped and said."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.table import Table

from stepscope.report.console import fit_table

BASE = Path(__file__).resolve().parents[2] / "data" / "h100_cuda_train" / "base"


@pytest.mark.parametrize("command", [["analyze"], ["advise"], ["whatif", "--workers", "4"]])
def test_commands_fit_80_columns(command: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "80", "STEPSCOPE_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "stepscope", *command, str(BASE)], capture_output=True,
                         text=True, encoding="utf-8", env=env, timeout=300, check=True).stdout
    assert max(len(line) for line in out.splitlines()) <= 80
    assert not re.search(r"[│┃]\s*-?[\d,.]+…\s*[│┃]", out), "a number was cut"


def test_fit_table_drops_the_last_columns_and_says_so() -> None:
    t = Table(title="t")
    t.add_column("name")
    for h in ("alpha", "beta", "gamma"):
        t.add_column(h, justify="right")
    t.add_row("aten::cudnn_convolution", "1,234,567.0", "2,345,678.0", "3,456,789.0")
    assert fit_table(t, 60) == 1  # name 16 + 3 numbers of 11 (+3 each) + 1 = 62 > 60; two numbers fit
    assert [c.header for c in t.columns] == ["name", "alpha", "beta"]
    assert t.caption == "1 column not shown at 60 columns (wider terminal or --json)"
    assert all(c.min_width == 11 for c in t.columns[1:])
