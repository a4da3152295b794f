"""``small-kernel-optimizer`` on a CPU-only rank: the ops its ``Optimizer.step`` runs (the cpu_optimizer
analysis), a per-tensor step a finding, a foreach one none (micro traces, µs, hand-computed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.advisor.engine import run_advisor
from stepscope.analysis.bundle import analyze
from stepscope.analysis.cpu_optimizer import compute_cpu_optimizer
from stepscope.report import texts
from tests.builders import TraceBuilder


def optimizer_trace(ops: list[str]) -> TraceBuilder:
    """Three 10 ms CPU steps: 6 ms of model ops, then a 4 ms ``Optimizer.step#Adam.step`` running ``ops``
    one after another (each 4000 / len(ops) µs, the first under a Python frame as with_stack=True has it)."""
    b = TraceBuilder(device=None)
    for i in range(3):
        t = i * 10_000
        b.step(i + 1, t, 10_000)
        b.op("aten::mm", ts=t, dur=6_000)
        b.op("Optimizer.step#Adam.step", ts=t + 6_000, dur=4_000, cat="user_annotation")
        each = 4_000 // len(ops)
        b.op("torch/optim/adam.py(300): _single_tensor_adam", ts=t + 6_000, dur=each, cat="python_function")
        for k, name in enumerate(ops):
            b.op(name, ts=t + 6_000 + k * each, dur=each)
    return b


def test_a_per_tensor_step_is_found_and_replayed(tmp_path: Path) -> None:
    trace = optimizer_trace(["aten::mul_", "aten::add_", "aten::lerp_", "aten::sqrt"] * 10).load(tmp_path)
    opt = compute_cpu_optimizer(trace, 0)
    assert (opt.name, opt.step_count, opt.ops_per_step, opt.multi_tensor_pct, opt.per_tensor) == \
        ("Adam", 3, 40.0, 0.0, True)
    adv = run_advisor(analyze(trace))
    (f,) = [f for f in adv.findings if f.rule == "small-kernel-optimizer"]
    # replayed: the 4 ms optimizer step at a third, the step 10 -> 7.333 ms
    assert f.basis == "replayed" and f.est_gain_ms == pytest.approx(4.0 * 2 / 3, abs=0.01)
    assert texts.title_text(f) == "The optimizer steps tensor by tensor"
    assert "fused=True" in texts.change_text(f) and "kernel" not in texts.found_text(f)


def test_a_foreach_step_is_no_finding(tmp_path: Path) -> None:
    trace = optimizer_trace(["aten::_foreach_mul_", "aten::_foreach_add_", "aten::_foreach_sqrt"]).load(tmp_path)
    assert not compute_cpu_optimizer(trace, 0).per_tensor
    assert "small-kernel-optimizer" not in {f.rule for f in run_advisor(analyze(trace)).findings}
