"""Programs without a device (the CPU captures in tests/data): nothing said about them names a GPU,
CUDA, pinned memory or a GPU vendor's page — the advice is for the machine the program ran on."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from stepscope import load
from stepscope.advisor.engine import Advice, run_advisor
from stepscope.analysis.bundle import analyze
from stepscope.report import texts

DATA = Path(__file__).resolve().parents[1] / "data"
RUNS = [*(p.relative_to(DATA).as_posix() for p in sorted(DATA.glob("cpu_pairs/*/*/1"))), "cpu_ddp_2rank",
        *(p.relative_to(DATA).as_posix() for p in sorted(DATA.glob("cpu_cases/*/")))]
GPU_WORDS = re.compile(r"\bGPUs?\b|CUDA|pin_memory|Tensor Core|\bSMs?\b|DALI|nvidia\.com|amd\.com")


@cache
def advice(run: str) -> Advice:
    return run_advisor(analyze(load(DATA / run)))


def said(adv: Advice) -> list[str]:
    out = [texts.verdict_text(v) for v in adv.verdicts]
    for f in adv.findings:
        out += [texts.title_text(f), texts.advice_text(f), texts.basis_text(f), *texts.links(f.rule, f.platform)]
    return out


def test_the_cpu_runs_are_found() -> None:
    assert len(RUNS) >= 5 and all((DATA / r).is_dir() for r in RUNS)


@pytest.mark.parametrize("run", RUNS)
def test_no_gpu_words_for_a_cpu_program(run: str) -> None:
    adv = advice(run)
    assert {f.platform for f in adv.findings} <= {"cpu"}
    bad = [t for t in said(adv) if GPU_WORDS.search(t)]
    assert not bad, bad


def test_the_loader_advice_sizes_workers_to_the_free_cores() -> None:
    (f,) = [f for f in advice("cpu_pairs/workers/before/1").findings if f.rule == "dataloader-bound"]
    assert f.change.key == "set-num-workers"
    assert "cores the model's ops leave free" in texts.change_text(f)
