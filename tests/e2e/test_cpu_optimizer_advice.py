"""An optimizer stepping on the CPU (H200 ``r14/cpu_adam``: Adam on CPU tensors, 27.7 ms of a 88.6 ms
step with the GPU idle) is not work for a background thread or the DataLoader workers: the advice
is to keep it on the GPU or overlap it. Other CPU-only ops (``cpu_op``: an SVD of a CPU tensor) keep
the "move it out of the step / onto the GPU / into a thread" advice."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope import load
from stepscope.advisor.engine import run_advisor
from stepscope.analysis.bundle import analyze
from stepscope.report.texts import change_text

H200 = Path(__file__).resolve().parents[1] / "data" / "h200_bounds"


@pytest.mark.parametrize(("case", "key"), [("r14/cpu_adam", "cpu-optimizer-step"), ("cpu_op", "move-host-work")])
def test_heavy_host_op_advice_fits_the_op(case: str, key: str) -> None:
    (f,) = [f for f in run_advisor(analyze(load(H200 / case))).findings if f.rule == "heavy-host-op-no-gpu"]
    assert f.change.key == key
    text = change_text(f)
    assert ("DataLoader workers" in text) is (key == "move-host-work"), text
