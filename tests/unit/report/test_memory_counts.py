"""Allocations and frees are counted the same in the terminal and the web UI (issue 14).

The terminal said "6,420 allocations, 0 freed" on the TB plugin's nw0 trace (no addresses: frees
cannot be paired) while the UI's per-operator "frees" column summed to 6,418.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from stepscope.analysis.bundle import analyze
from stepscope.analysis.memory import MemoryView
from stepscope.analysis.registry import MEMORY
from stepscope.report.json_out import to_json
from stepscope.report.views.memory import render_memory
from tests.builders import TraceBuilder

STATIC = Path(__file__).resolve().parents[3] / "stepscope" / "server" / "static"


def _trace(tmp_path: Path, addresses: bool) -> TraceBuilder:
    """Three allocations; two freed in the trace, plus one free of memory allocated before it."""
    b = TraceBuilder()
    b.op("aten::empty", ts=0, dur=50)
    a = (lambda n: n) if addresses else (lambda n: 0)
    b.memory(10, 100, 100, 200, addr=a(1))
    b.memory(20, 50, 150, 200, addr=a(2))
    b.memory(25, 10, 160, 200, addr=a(3))
    b.memory(30, -100, 60, 200, addr=a(1))
    b.memory(40, -50, 10, 200, addr=a(2))
    b.memory(45, -8, 2, 200, addr=a(9))
    return b


def _terminal_line(m: MemoryView) -> str:
    out = io.StringIO()
    render_memory(m, Console(file=out, width=200), top=5)
    return next(line.strip() for line in out.getvalue().splitlines() if "allocations" in line)


def _ui_line(mem: dict[str, object], tmp_path: Path) -> str:
    """The UI's ``allocationSummary`` (server/static/views_more.js) run by node on the document."""
    js = tmp_path / "js"
    shutil.copytree(STATIC, js)
    (js / "package.json").write_text('{"type": "module"}')
    code = (f"import {{allocationSummary}} from {json.dumps(str(js / 'views_more.js'))};"
            f"console.log(allocationSummary({json.dumps(mem)}));")
    res = subprocess.run(["node", "--input-type=module", "-e", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


@pytest.mark.parametrize("addresses", [True, False])
def test_terminal_and_ui_count_allocations_and_frees_alike(tmp_path: Path, addresses: bool) -> None:
    bundle = analyze(_trace(tmp_path, addresses).load(tmp_path))
    m = bundle.rank(0).require(MEMORY)
    mem = to_json(bundle)["ranks"][0]["memory"]
    assert (mem["allocation_count"], mem["free_count"]) == (3, 3)
    assert mem["free_count"] == sum(o["free_count"] for o in mem["by_op"])  # the UI's per-operator column
    assert mem["freed_count"] == (2 if addresses else None)  # unknown is not 0
    line = _terminal_line(m)
    assert line.startswith("3 allocations, 3 frees within the trace")
    if shutil.which("node") is None:
        pytest.skip("node not installed: the UI's wording is not run")
    assert _ui_line(mem, tmp_path) == line
