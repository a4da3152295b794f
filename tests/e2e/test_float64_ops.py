"""A loss computed in float64 (tests/data/cpu_cases/fp64_loss, its float32 program fp32_loss): the float64
ops' own time read off the trace with the json module is the finding's, half of it the gain — a lower
bound the float32 program's measured step beats."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

import pytest

from stepscope import load
from stepscope.advisor.engine import Advice, run_advisor
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.bundle import analyze
from stepscope.analysis.fp64 import compute_fp64

CASES = Path(__file__).resolve().parents[1] / "data" / "cpu_cases"


@cache
def advice(case: str) -> Advice:
    return run_advisor(analyze(load(CASES / case)))


def by_hand_float64_self_ms() -> float:
    """Per step: the self time of the ops with an input typed double of ≥ 1,024 elements (self = duration less
    the durations of the ops directly inside it on the same thread)."""
    (path,) = (CASES / "fp64_loss").glob("*.pt.trace.json.gz")
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    ops = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"),
                 key=lambda e: (e["ts"], -e["dur"]))
    steps = [e for e in events if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")]
    lo, hi = min(s["ts"] for s in steps), max(s["ts"] + s["dur"] for s in steps)
    total = 0.0
    for i, e in enumerate(ops):
        a = e["args"]
        big = [t == "double" and d and __import__("math").prod(d) >= 1024
               for t, d in zip(a.get("Input type", []), a.get("Input Dims", []))]
        if not any(big) or not lo <= e["ts"] < hi:
            continue
        end, inner, j = e["ts"] + e["dur"], 0.0, i + 1
        while j < len(ops) and ops[j]["ts"] < end:  # the children: skip their own children
            inner += ops[j]["dur"]
            child_end = ops[j]["ts"] + ops[j]["dur"]
            j += 1
            while j < len(ops) and ops[j]["ts"] < child_end:
                j += 1
        total += e["dur"] - inner
    return total / len(steps) / 1e3


def test_the_float64_loss_is_found_and_half_of_it_is_the_gain() -> None:
    f = next(f for f in advice("fp64_loss").findings if f.rule == "float64-ops")
    assert advice("fp64_loss").findings[0].rule == "float64-ops"
    assert float(f.evidence["float64_ms"]) == pytest.approx(by_hand_float64_self_ms(), rel=0.01)
    assert f.est_gain_ms == pytest.approx(float(f.evidence["float64_ms"]) / 2, abs=0.001)
    measured = json.loads((CASES / "fp64_loss" / "timing.json").read_text())["profiled_median_ms"] - \
        json.loads((CASES / "fp32_loss" / "timing.json").read_text())["profiled_median_ms"]
    assert 0 < f.est_gain_ms < measured  # a lower bound: float32 saved 140 ms of the recorded step


def test_the_float32_program_has_no_float64_op() -> None:
    with pytest.raises(NotApplicable):
        compute_fp64(load(CASES / "fp32_loss"), 0)
    assert "float64-ops" not in {f.rule for f in advice("fp32_loss").findings}
