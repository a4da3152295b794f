"""``small-kernel-optimizer`` on a CPU-only rank: the ops its ``Optimizer.step`` runs (the cpu_optimizer
analysis), a per-tensor step a finding, a foreach one none (micro traces, µs, hand-computed)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from stepscope.advisor.engine import run_advisor
from stepscope.analysis.bundle import analyze
from stepscope.analysis.cpu_optimizer import compute_cpu_optimizer
from stepscope.report import texts
from tests.builders import TraceBuilder


def adam_steps(opt_us: int, fill: Callable[[TraceBuilder, int], None]) -> TraceBuilder:
    """Three 10 ms CPU steps: 6 ms of model ops, then an ``opt_us`` ``Optimizer.step#Adam.step`` whose ops
    ``fill(builder, its start)`` writes."""
    b = TraceBuilder(device=None)
    for i in range(3):
        t = i * 10_000
        b.step(i + 1, t, 10_000)
        b.op("aten::mm", ts=t, dur=6_000)
        b.op("Optimizer.step#Adam.step", ts=t + 6_000, dur=opt_us, cat="user_annotation")
        fill(b, t + 6_000)
    return b


def optimizer_trace(ops: list[str]) -> TraceBuilder:
    """A 4 ms optimizer step running ``ops`` one after another (each 4000 / len(ops) µs, the first under a
    Python frame as with_stack=True has it)."""
    each = 4_000 // len(ops)

    def fill(b: TraceBuilder, at: int) -> None:
        b.op("torch/optim/adam.py(300): _single_tensor_adam", ts=at, dur=each, cat="python_function")
        for k, name in enumerate(ops):
            b.op(name, ts=at + k * each, dur=each)
    return adam_steps(4_000, fill)


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


def shaped_optimizer_trace() -> TraceBuilder:
    """A 1 ms optimizer step stepping parameters tensor by tensor with their shapes recorded: A of 64,000
    floats (each in-place op 100 µs, its ``sqrt`` 200 µs) and four of 10 (10 µs each), each step counter's
    scalar ``add_`` 5 µs (30 ops)."""
    def fill(b: TraceBuilder, at: int) -> None:
        for n, each in ((64_000, 100), *[(10, 10)] * 4):
            x, s = [n], []
            for name, dims in (("aten::add_", [s, s]), ("aten::lerp_", [x, x, s]), ("aten::mul_", [x, s]),
                               ("aten::addcmul_", [x, x, x, s]), ("aten::sqrt", [x]), ("aten::addcdiv_", [x, x, x, s])):
                dur = 5 if not dims[0] else 2 * each if name == "aten::sqrt" else each
                b.op(name, ts=at, dur=dur, **{"Input Dims": dims, "Input type": ["float"] * len(dims)})
                at += dur
    return adam_steps(1_000, fill)


def test_the_fused_step_is_one_pass_at_the_loops_own_bandwidth(tmp_path: Path) -> None:
    """By hand: A's four in-place ops move 64,000 × 4 B × (3 + 2 + 4 + 4) streams = 3,328,000 B in 400 µs
    a step (8.32 B/ns; the small tensors' and the counters' are small, ``sqrt`` allocates: left out). The
    parameters: 64,040 elements (each of lerp_ / mul_ / addcmul_ / addcdiv_ once per tensor; add_ touches
    only the scalar counters). Fused Adam: 7 arrays × 64,040 × 4 B / 8.32 B/ns = 215,519 ns, 0.2155 of the
    1 ms step; the replayed step saves 1 ms × (1 − 0.2155)."""
    trace = shaped_optimizer_trace().load(tmp_path)
    opt = compute_cpu_optimizer(trace, 0)
    p = opt.memory_pass
    assert p is not None
    assert (p.param_elems, p.elem_bytes, p.inplace_bytes, p.inplace_ns) == (64_040, 4, 3 * 3_328_000, 3 * 400_000)
    assert opt.fused_step_ns == pytest.approx(7 * 64_040 * 4 / 8.32, rel=1e-9)
    assert opt.fused_factor == pytest.approx(0.215519, abs=1e-6)
    adv = run_advisor(analyze(trace))
    (f,) = [f for f in adv.findings if f.rule == "small-kernel-optimizer"]
    assert f.est_gain_ms == pytest.approx(1.0 * (1 - 0.215519), abs=0.002)
    assert "one fused pass over 7 arrays of the parameters' 64,040 elements at the 8.32 GB/s" in \
        str(f.evidence["whatif_basis"])


def test_without_shapes_or_a_fused_kernel_the_factor_is_the_default(tmp_path: Path) -> None:
    """No recorded shapes: no pass measured (the replay takes the default third: the first test); an
    optimizer without a fused CPU kernel (RMSprop) has no fused step either."""
    opt = compute_cpu_optimizer(optimizer_trace(["aten::mul_", "aten::lerp_"] * 20).load(tmp_path), 0)
    assert opt.memory_pass is None and opt.fused_factor is None
    b = shaped_optimizer_trace()
    for e in b.events:
        e["name"] = e["name"].replace("Adam", "RMSprop")
    rms = compute_cpu_optimizer(b.load(tmp_path, "rms.json"), 0)
    assert rms.name == "RMSprop" and rms.memory_pass is not None and rms.fused_factor is None


@pytest.mark.parametrize(("optimizer", "said"), [("Adam", "fused=True) or foreach=True"), ("RMSprop", "foreach=True)"),
                                                 ("SparseAdam", None)])
def test_the_change_names_only_keywords_the_class_takes(tmp_path: Path, optimizer: str, said: str | None) -> None:
    """A per-tensor step of each class: Adam takes fused=True, RMSprop only foreach=True, SparseAdam neither
    (``SparseAdam(..., fused=True)`` is a TypeError): no finding for it."""
    b = optimizer_trace(["aten::mul_", "aten::add_", "aten::lerp_", "aten::sqrt"] * 10)
    for e in b.events:
        e["name"] = e["name"].replace("#Adam.", f"#{optimizer}.")
    found = [f for f in run_advisor(analyze(b.load(tmp_path))).findings if f.rule == "small-kernel-optimizer"]
    if said is None:
        assert found == []
        return
    (f,) = found
    assert f"torch.optim.{optimizer}(..., {said}" in texts.change_text(f)
