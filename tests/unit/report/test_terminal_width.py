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
SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "traces"
#: a box row starts with one of these and, unless rich cropped it at the terminal's edge, ends with one
ROW_START, ROW_END = set("┏┃┡│└"), set("┓┃┩│┘")


def check_80(out: str) -> None:
    """No line over 80, no table row cropped at the edge (rich crops a table it cannot fit, numbers
    and all: "│   825."), no number ending in "…"."""
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    cropped = [ln for ln in lines if ln[:1] in ROW_START and ln.rstrip()[-1:] not in ROW_END]
    assert cropped == [], "a table was cropped at 80 columns"
    assert not re.search(r"[│┃]\s*-?[\d,.]+\s*\S{0,3}…\s*[│┃]", out), "a number was cut"


def _run(args: list[str], cache: Path) -> str:
    env = {**os.environ, "COLUMNS": "80", "STEPSCOPE_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-m", "stepscope", *args], capture_output=True,
                          text=True, encoding="utf-8", env=env, timeout=300, check=True).stdout


@pytest.mark.parametrize("command", [["analyze"], ["advise"], ["whatif", "--workers", "4"]])
def test_commands_fit_80_columns(command: list[str], tmp_path: Path) -> None:
    check_80(_run([*command, str(BASE)], tmp_path))


@pytest.mark.parametrize("trace", ["tracelens/h100_bert_small_inference", "tracelens/h100_qwen1.5_0.5b_inference",
                                   "hta/nccl_resnet_a100_rank0_of2"])
def test_analyze_of_shared_traces_fits_80_columns(trace: str, tmp_path: Path) -> None:
    """Operators, modules and memory-by-operator tables of these were cropped at 80 columns (the
    headers did not wrap, so rich kept them whole and cut the last number column)."""
    if not (SHARED / trace).exists():
        pytest.skip(f"{SHARED / trace} is absent (../shared/traces)")
    out = _run(["analyze", str(SHARED / trace)], tmp_path)
    check_80(out)
    assert "top 10 of" in out and "operators (µs)" in out


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


def test_a_no_wrap_table_is_fitted_with_whole_numbers_and_wrapped_headers() -> None:
    """The operators view's shape (no-wrap columns, long headers): rich alone crops it; fitted, every
    number is whole, the headers wrap, the name ends in "…", and it is exactly as wide as allowed."""
    from rich.console import Console

    t = Table(title="t")
    for h in ("operator", "calls", "device self", "device total", "host self", "host total"):
        t.add_column(h, justify="left" if h == "operator" else "right", no_wrap=True, overflow="ellipsis")
    t.add_row("aten::_flash_attention_forward", "4", "37.4", "37.4", "49.7", "128.3")
    t.add_row("aten::addmm", "26", "197.6", "197.6", "562.6", "825.7")
    console = Console(width=64, record=True)  # narrowest: name 16 + 5 + 6 + 6 + 5 + 5, 3 a column, + 1 = 62
    assert fit_table(t, 64) == 0
    console.print(t)
    out = console.export_text()
    check_80(out)
    assert max(len(ln) for ln in out.splitlines()) == 64
    assert "825.7 │" in out and "128.3 │" in out
    assert "│ aten::_flash_atte… │" in out  # the 2 spare columns went to the name
    assert "┃ device ┃" in out and "┃  total ┃" in out  # "device total" wrapped in its column
