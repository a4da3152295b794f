"""The page writes a number with the digits the terminal writes (server/static/util.js run by node
against Python's format): at an exact binary tie JavaScript rounded away from zero where Python rounds
to even, so a diff's 1361.125 MB read 1,361.12 in the terminal and 1,361.13 in the report."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parents[3] / "stepscope" / "server" / "static"
#: exact ties (1361.125, 2.5, -0.125), values just off one (1.005, 0.05, 99.95), grouping, zero, tiny
CASES = [(1361.125, 2), (1285.625, 2), (0.125, 2), (2.5, 0), (3.5, 0), (-1361.125, 2), (1.005, 2), (0.05, 1),
         (1234567.5, 0), (-0.125, 2), (0.0, 2), (99.95, 1), (1e-7, 3), (123456789.125, 2), (17.755, 2), (0.0467, 1)]


def test_the_page_rounds_as_the_terminal_does(tmp_path: Path) -> None:
    if shutil.which("node") is None:
        pytest.skip("node not installed: the UI's formatting is not run")
    js = tmp_path / "js"
    shutil.copytree(STATIC, js)
    (js / "package.json").write_text('{"type": "module"}')
    code = (f"import {{fixed, fmtNum, fmtMs, fmtPct}} from {json.dumps(str(js / 'util.js'))};"
            f"const out = {json.dumps(CASES)}.map(([v, d]) => [fixed(v, d), fmtNum(v, d), fmtPct(v, d), fmtMs(v, d)]);"
            "console.log(JSON.stringify(out));")
    res = subprocess.run(["node", "--input-type=module", "-e", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    for (v, d), got in zip(CASES, json.loads(res.stdout)):
        assert got == [f"{v:.{d}f}", f"{v:,.{d}f}", f"{v:.{d}f} %", f"{v:.{d}f} ms"], (v, d)
