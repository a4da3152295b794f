"""A job bound by imbalance between ranks is never called "balanced" (the real CPU jobs in
tests/data): its ranks' steps are equal because the early one waits for the late one inside the
collectives, so the load-imbalance figure is small — 0.6 % of step time on ``cpu_jobs/skew``,
where rank 1 arrives 35 ms late at every all-reduce. The terminal, the Markdown summary and the
JSON word that figure as what it measures (step time across ranks here: no rank has GPU compute)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from stepscope.cli import cli

DATA = Path(__file__).resolve().parents[1] / "data"
RUNS = {"skew": DATA / "cpu_jobs" / "skew", "cpu_ddp_2rank": DATA / "cpu_ddp_2rank"}
BALANCED = re.compile(r"\bbalanced\b", re.IGNORECASE)


def _cli(*args: str) -> str:
    res = CliRunner().invoke(cli, [*args, "--no-cache"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    return res.output


@pytest.mark.parametrize("name", list(RUNS))
def test_the_imbalance_figure_says_what_it_measures(name: str) -> None:
    doc = json.loads(_cli("analyze", str(RUNS[name]), "--json"))
    assert doc["verdicts"][0]["rank"] is None and doc["verdicts"][0]["bound"] == "imbalance"
    cluster = doc["cluster"]
    # the steps are equal (the early rank waits); its host work, its waits aside, is not: the late rank's
    assert cluster["imbalance_of"] == "host" and cluster["imbalance_pct"] > 30.0
    pct = cluster["imbalance_pct"]
    figure = (f"load imbalance of the model's CPU work (its waits in collectives aside) across ranks {pct:.1f} % "
              "(the busiest rank over the mean)")
    terminal = _cli("analyze", str(RUNS[name]))
    assert "bound by imbalance between ranks" in _cli("advise", str(RUNS[name]))
    assert f"ranks with more work (step time): none; {figure}" in terminal  # a CPU-only job: no kernels to count
    md = _cli("analyze", str(RUNS[name]), "--md")
    assert "**Verdict:** job: bound by imbalance between ranks" in md and f"**Ranks** — {figure}" in md
    for text in (terminal, md):
        assert not BALANCED.search(text), BALANCED.search(text)
