"""Ground truth we planted ourselves: `tests/data/cuda_train.py` captured on an H100, before/after."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import stepscope
from stepscope.advisor.engine import advise
from stepscope.analysis.bundle import analyze
from stepscope.analysis.registry import SYNC
from stepscope.compare.diff import compare
from stepscope.compare.document import to_json

RUNS = Path(__file__).resolve().parents[1] / "data" / "h100_cuda_train"


def _findings(run: str) -> dict[str, object]:
    bundle = analyze(stepscope.load(RUNS / run, use_cache=False))
    return {f.rule: f for f in advise(bundle)}


def test_planted_problems_are_found() -> None:
    found = _findings("base")
    ranked = list(found)
    assert ranked[0] == "dataloader-bound", ranked  # the loader does the augmentation in-process
    for rule in ("pageable-memcpy", "small-kernel-optimizer", "channels-last"):
        assert rule in found, (rule, ranked)


def test_the_fixed_run_is_clean_of_them() -> None:
    found = _findings("fixed")
    for rule in ("dataloader-bound", "pageable-memcpy", "small-kernel-optimizer", "channels-last"):
        assert rule not in found, (rule, list(found))


def test_item_syncs_are_traced_to_their_op() -> None:
    bundle = analyze(stepscope.load(RUNS / "base", use_cache=False), names=["sync"])
    sites = bundle.rank(0).require(SYNC)
    text = repr(sites)
    assert "aten::item" in text and "cudaStreamSynchronize" in text


def test_diff_shows_the_dataloader_fix() -> None:
    base = analyze(stepscope.load(RUNS / "base", use_cache=False))
    new = analyze(stepscope.load(RUNS / "fixed", use_cache=False))
    doc = to_json(compare(base, new))
    rows = {r["category"]: r for r in doc["overall"]}
    assert rows["dataloader"]["diff_ms"] < -15.0  # 22 ms of in-process loading per step is gone
    assert rows["step"]["new_ms"] < 0.5 * rows["step"]["base_ms"]
    biggest = min((r for r in doc["overall"] if r["category"] not in ("step", "free")), key=lambda r: r["diff_ms"])
    assert biggest["category"] == "dataloader"


@pytest.mark.parametrize("pct, code", [(5, 0)])
def test_gate_passes_on_the_faster_run(pct: int, code: int) -> None:
    res = subprocess.run([sys.executable, "-m", "stepscope", "diff", str(RUNS / "base"), str(RUNS / "fixed"),
                          "--fail-if-slower", str(pct), "--no-findings"], capture_output=True, text=True, check=False)
    assert res.returncode == code, res.stderr
