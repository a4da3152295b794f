"""Runs of unfused elementwise kernels and the ``unfused-elementwise`` finding, on a hand-made step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stepscope.advisor.engine import run_advisor
from stepscope.analysis.bundle import analyze
from stepscope.analysis.elementwise_runs import compute_elementwise_runs, largest_numel
from stepscope.analysis.registry import REMEDIES
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder
from tests.unit.advisor.scenes import device_sync

BIG, SMALL = [1024, 1024], [4096]


#: each size's elementwise launch: 4 elements a thread, 256 threads a block
GRID = {id(BIG): [1024, 1, 1], id(SMALL): [4, 1, 1]}


def eager_step(tmp_path: Path, shapes: bool = True, grids: bool = False) -> Trace:
    """One 200 µs step; the host launches everything by 40 µs, the device runs it back to back (µs):

    ====================  ===========  =======  =======================================
    op (input dims)       kernel       runs     why
    ====================  ===========  =======  =======================================
    mul (BIG, scalar)     10-30 (20)   run 1    starts a run
    add (BIG, BIG)        31-61 (30)   run 1    same size, another op
    relu (BIG)            62-72 (10)   run 1    → Σ 60, longest 30: 30 saved
    mul (SMALL)           73-83 (10)   run 2    another size: a new run
    add_ (SMALL)          84-94 (10)   run 2    → Σ 20, longest 10: 10 saved
    add_ (SMALL)          95-105 (10)  alone    the same op again (the next tensor's update)
    mm (BIG, BIG)         106-190      —        a GEMM ends any run
    mul (BIG)             191-195 (4)  alone    nothing elementwise before it
    ====================  ===========  =======  =======================================

    The host then waits in ``cudaDeviceSynchronize`` from 45 µs until the device is done (it returns at 200 µs).
    """
    b = TraceBuilder()
    b.step(1, ts=0, dur=200)
    plan: list[tuple[str, list[Any], int, int, str]] = [
        ("aten::mul", [BIG, []], 10, 20, "vectorized_elementwise_kernel<mul>"),
        ("aten::add", [BIG, BIG], 31, 30, "vectorized_elementwise_kernel<add>"),
        ("aten::relu", [BIG], 62, 10, "vectorized_elementwise_kernel<relu>"),
        ("aten::mul", [SMALL, []], 73, 10, "vectorized_elementwise_kernel<mul>"),
        ("aten::add_", [SMALL, SMALL], 84, 10, "vectorized_elementwise_kernel<add>"),
        ("aten::add_", [SMALL, SMALL], 95, 10, "vectorized_elementwise_kernel<add>"),
        ("aten::mm", [BIG, BIG], 106, 84, "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize128x128x32"),
        ("aten::mul", [BIG, []], 191, 4, "vectorized_elementwise_kernel<mul>"),
    ]
    for i, (op, dims, ts, dur, kernel) in enumerate(plan):
        args = {"Input Dims": dims} if shapes else {}
        b.op(op, 5 * i, 4, **args)
        launch = {"grid": GRID[id(dims[0])], "block": [256, 1, 1]} if grids else {}
        b.launch_kernel(kernel, 5 * i + 1, 2, ts, dur, **launch)
    device_sync(b, 45, 200)  # the host then waits for the device: the step ends with its work
    return b.load(tmp_path)


def test_largest_numel() -> None:
    assert largest_numel("[[],[16384,4096],[16384,4096],[]]") == 16384 * 4096
    assert largest_numel("[[], []]") == -1
    assert largest_numel("[[16384,40") == -1  # cut short: no size


def test_runs_tie_kernels_of_one_size_from_different_ops(tmp_path: Path) -> None:
    runs = compute_elementwise_runs(eager_step(tmp_path), 0)
    assert (runs.run_count, len(runs.kernels), runs.time_ns, runs.fused_ns, runs.saved_ns) == (
        2, 5, 80_000, 40_000, 40_000)
    assert runs.example_ops == ("aten::mul", "aten::add", "aten::relu")


def test_without_recorded_shapes_or_launch_grids_nothing_is_tied(tmp_path: Path) -> None:
    trace = eager_step(tmp_path, shapes=False)
    runs = compute_elementwise_runs(trace, 0)
    assert (runs.run_count, runs.saved_ns) == (0, 0)
    assert "unfused-elementwise" not in {f.rule for f in run_advisor(analyze(trace)).findings}


def test_without_recorded_shapes_the_launch_grids_tie_a_chain(tmp_path: Path) -> None:
    """``record_shapes=False``: the elementwise kernels' grids stand in for their sizes (equal grids,
    equal element counts): the same two runs as with shapes, the same 40 µs saved."""
    runs = compute_elementwise_runs(eager_step(tmp_path, shapes=False, grids=True), 0)
    assert (runs.run_count, len(runs.kernels), runs.time_ns, runs.fused_ns, runs.saved_ns) == (
        2, 5, 80_000, 40_000, 40_000)


def test_the_finding_gains_what_fusing_saves_on_the_path(tmp_path: Path) -> None:
    bundle = analyze(eager_step(tmp_path))
    advice = run_advisor(bundle)
    assert advice.verdicts[0].bound == "compute"
    f = next(f for f in advice.findings if f.rule == "unfused-elementwise")
    # replayed: queued back to back and waited for, the device sets the pace. Fusing takes 40 µs of kernel
    # time away; as recorded the add's launch reaches the device at 15 µs, 5 µs after the fused run's start
    # (10 µs), so 36 µs reach the step; without the profiler's own cost (8 µs an op) the host launches it
    # sooner and 39 µs do — the finding's gain, taken on that step
    r = bundle.ranks[0].get(REMEDIES)
    assert r is not None and r.saved_ns("fuse-elementwise") == 36_000
    assert f.evidence["whatif_remedy"] == "fuse-elementwise" and f.est_gain_ns == 39_000
    assert f.change.key == "compile-elementwise"
    assert advice.findings[0].rule == "unfused-elementwise"
