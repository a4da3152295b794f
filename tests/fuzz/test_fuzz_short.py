"""The short fuzz run of CI: 150 mutated inputs of every format found (the shared traces when present,
else the repository's own), each through one command, with no crash and no hang; and the in-process
driver judged against real ``python -m stepscope`` runs of the same inputs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.fuzz.outcome import CRASH, HANG, OK, REFUSED, classify, signature
from tests.fuzz.runner import render, run


def test_classify_follows_the_command_line_contract() -> None:
    assert classify(0, "") == OK
    assert classify(0, "wrote out.html (12 kB)\n") == OK
    assert classify(2, "stepscope: error: t.json: not a JSON trace\n") == REFUSED
    assert classify(2, "stepscope: error: a\nstepscope: error: b\n") == CRASH  # two lines
    assert classify(1, "stepscope: error: t.json: x\n") == CRASH  # another exit code
    assert classify(-11, "") == CRASH
    assert classify(None, "") == HANG
    tb = ('Traceback (most recent call last):\n  File "/r/stepscope/analysis/launch.py", line 9, in _mean\n'
          "IndexError: index 0 is out of bounds\n")
    assert classify(1, tb) == CRASH
    assert signature(CRASH, 1, tb) == "IndexError in stepscope/analysis/launch.py:_mean"


def test_short_fuzz_run_has_no_crash_and_no_hang(tmp_path: Path) -> None:
    summary = run(150, run_seed=2026, jobs=2, out=tmp_path, timeout=60, progress=False)
    print(render(summary))
    assert summary["inputs"] == 150 and summary["harness_errors"] == 0
    bad = {k: v for k, v in summary["outcomes"].items() if k in (CRASH, HANG)}
    assert not bad, render(summary)
    assert sum(r["n"] for r in summary["by_command"].values()) == 150
    assert summary["outcomes"].get(REFUSED, 0) > 0  # the mutations do reach the readers' refusals


@pytest.mark.slow
def test_driver_classifies_as_a_subprocess_would(tmp_path: Path) -> None:
    """The same 12 inputs run in-process and as ``python -m stepscope``: the same outcome and the
    same last stderr line (paths aside)."""
    a = run(12, run_seed=7, jobs=2, out=tmp_path / "driver", progress=False)
    b = run(12, run_seed=7, jobs=2, out=tmp_path / "sub", subprocess_mode=True, progress=False)
    assert a["outcomes"] == b["outcomes"]

    def rows(d: Path) -> dict[int, tuple[str, str]]:
        out = {}
        for line in (d / "results.jsonl").read_text().splitlines():
            r = json.loads(line)
            text = r["stderr"].replace(str(d), "").replace("/work/j0", "").replace("/work/j1", "")
            # a report embeds its input's path, whose length differs between the two folders: the page's
            # size in kB may round either way
            out[r["index"]] = (r["outcome"], re.sub(r"\(\d[\d,]* kB\)", "(N kB)", text))
        return out

    assert rows(tmp_path / "driver") == rows(tmp_path / "sub")
