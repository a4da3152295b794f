"""``torch.compile`` compiling inside the profiled steps: the host's time in PyTorch's compilation
ranges is compiling — not launch overhead a CUDA graph removes, not the step's syncs — and
``compile-in-step`` names it, with the replay without it as its gain (an H200 capture,
``tests/data/h200_bounds/r12/recompile``, had ``launch-bound`` "capture it in CUDA Graphs" at 1.75 s
a step first: the graph recompiled every step)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.advisor.engine import run_advisor
from stepscope.analysis import profiler_cost
from stepscope.analysis.bundle import analyze
from stepscope.analysis.compilation import compute_compilation
from stepscope.analysis.sync import compute_sync
from stepscope.analysis.whatif.simulate import simulate
from stepscope.analysis.whatif.transforms import HostOverhead, NoCompile, Transform
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder


def compiling_steps(tmp_path: Path, steps: int = 2, recompile: int = 3) -> Trace:
    """``steps`` steps of 100 µs (µs throughout, step n from 100 n). In each: ``entire_frame_compile``
    10-60, inside it autotuning launches ``bench`` at 20-22 (runs 25-30) and waits for it in
    ``cudaDeviceSynchronize`` 40-45; then ``Torch-Compiled Region: 0/R`` 60-95 (R = ``recompile`` + n)
    runs ``aten::mm`` 60-70, which launches ``k`` at 62-64 (runs 72-82)."""
    b = TraceBuilder()
    for n in range(steps):
        t = 100 * n
        b.step(n + 1, ts=t, dur=100)
        b.op("entire_frame_compile", t + 10, 50)
        b.launch_kernel("triton_bench", t + 20, 2, t + 25, 5)
        b.op("cudaDeviceSynchronize", t + 40, 5, cat=b.RUNTIME_CAT)
        b.op(f"Torch-Compiled Region: 0/{recompile + n}", t + 60, 35)
        b.op("aten::mm", t + 60, 10)
        b.launch_kernel("k", t + 62, 2, t + 72, 10)
    return b.load(tmp_path)


def _steps_us(trace: Trace, *changes: Transform) -> list[float]:
    return [round(float(v) / 1000, 3) for v in simulate(trace, changes).ranks[0].predicted_ns]


def test_compile_time_per_step_and_the_recompile_number(tmp_path: Path) -> None:
    c = compute_compilation(compiling_steps(tmp_path), 0)
    assert (c.compile_ns // 1000).tolist() == [50, 50]
    assert c.steps_with_compile == 2 and c.max_recompile == 4 and c.recompiling


def test_the_compilers_sync_is_not_the_steps(tmp_path: Path) -> None:
    assert compute_sync(compiling_steps(tmp_path), 0).sync_rows.size == 0


def test_graph_capture_keeps_the_compiling_and_no_compile_removes_it(tmp_path: Path) -> None:
    """Host points per step: 0, 20, 22 (the bench launch), 40, 45 (the sync), 62, 64 (k's launch),
    100. Graph capture (host work × 0) keeps what lies inside the compile range, 10-60: of [0,20]
    10, [20,22] 2, [22,40] 18, the sync waits for nothing left (bench ended at 30) and costs its own 5,
    [45,62] 15; k's launch and the rest take 0: k is launched at 50 and runs 60-70 (latency 10), the
    step ends with it: 70. Without the compile (``no-compile``): [0,20] keeps its 10 outside the range,
    the bench launch and [22,40] take 0, the sync no longer waits but its call takes its own 5 (as
    every dropped sync), [45,62] keeps 2, k's launch 2 and the rest 36: the host's step ends at 55,
    k runs 29-39 — the compile's 45 µs outside a call leave the step."""
    trace = compiling_steps(tmp_path, steps=1)
    assert _steps_us(trace) == [100.0]
    assert _steps_us(trace, HostOverhead(0.0)) == [70.0]
    assert _steps_us(trace, NoCompile()) == [55.0]


def test_the_finding_names_recompiling_and_its_gain_is_the_replay(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # steps of 100 µs with 4 recorded ops: at 8 µs an op the profiler_cost analysis would take the gain
    # from the step replayed without the profiler's cost; this test is about the replay as recorded
    monkeypatch.setattr(profiler_cost, "MIN_COST_SHARE", float("inf"))
    adv = run_advisor(analyze(compiling_steps(tmp_path)))
    f = next(f for f in adv.findings if f.rule == "compile-in-step")
    assert adv.findings[0] is f
    assert f.change.key == "avoid-recompiles"
    assert f.evidence["steps_compiling"] == 2 and f.evidence["recompile"] == 4
    assert round(f.est_gain_ns / 1000) == 45


def test_one_compiling_step_is_the_profiles_warm_up(tmp_path: Path) -> None:
    adv = run_advisor(analyze(compiling_steps(tmp_path, steps=1, recompile=0)))
    f = next(f for f in adv.findings if f.rule == "compile-in-step")
    assert f.change.key == "profile-after-warmup" and f.evidence["recompile"] is None


def test_the_device_waiting_for_the_compiler_is_not_waiting_for_launches(tmp_path: Path) -> None:
    """Host-wait gaps per step: [0,25) ends with ``bench`` (launched at 20), 15 of it inside the
    compile range 10-60; [30,72) ends with ``k`` (launched at 62), 30 inside it; step 2 the same (its
    first gap starts at the step boundary). 45 µs a step is the compiler's: ``launch-bound`` leaves
    it out (an H200 recompiling step read "the GPU waits for the host 1,793.7 ms per step")."""
    from stepscope.analysis.idle import compute_idle

    trace = compiling_steps(tmp_path)
    assert (compute_idle(trace, 0).host_wait_in_compile_ns // 1000).tolist() == [45, 45]


def test_the_verdict_says_the_host_is_compiling(tmp_path: Path) -> None:
    """The critical path's host part splits off the compile ranges first, the launches inside them
    included: 47 of the range's 50 µs a step (the device's parts claim before the host's: part of the
    autotuning kernel's time is compute), and the verdict names it — a 1.6 s H200 step 99 %
    compiling read "bound by the host (CPU work, launches)". Without the split the 47 µs were the
    host's ops and untraced time."""
    from stepscope.analysis.critical_path import HOST_PARTS, compute_critical_path
    from stepscope.report import texts

    trace = compiling_steps(tmp_path)
    cp = compute_critical_path(trace, 0)
    assert (cp.host_parts_ns[:, HOST_PARTS.index("compile")] // 1000).tolist() == [47, 47]
    v = run_advisor(analyze(trace)).verdicts[0]
    assert v.bound == "host" and v.compiling_pct == 47.0
    assert texts.verdict_text(v).startswith("rank 0: bound by torch.compile compiling on the host (")
