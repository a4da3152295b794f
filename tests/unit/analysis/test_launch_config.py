"""Launch configuration: kernels with fewer blocks than SMs, weighted by time."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.advisor.config import AdvisorConfig
from stepscope.advisor.engine import run_advisor
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.bundle import analyze
from stepscope.analysis.launch_config import compute_launch_config
from stepscope.report import texts
from tests.builders import TraceBuilder


def test_underfilled_kernels_weighted_by_time(tmp_path: Path) -> None:
    """80 SMs. 'small' grid 40 blocks, 30 µs (fill 0.5); 'big' grid 10×10 = 100 blocks, 10 µs (fill 1).
    Under-filled time 30/40 = 75 %; SM fill (30·0.5 + 10·1) / 40 = 62.5 %. NCCL kernels are left out."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.launch_kernel("small", 0, 1, 10, 30, grid=[40, 1, 1], block=[128, 1, 1])
    b.launch_kernel("big", 1, 1, 40, 10, grid=[10, 10, 1], block=[128, 1, 1])
    b.launch_kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 2, 1, 50, 40, stream=20, grid=[2, 1, 1])
    r = compute_launch_config(b.load(tmp_path), 0)
    assert (r.sm_count, r.kernel_count, r.kernel_time_ns) == (80, 2, 40_000)
    assert r.underfilled_time_pct == pytest.approx(75.0)
    assert r.sm_fill_pct == pytest.approx(62.5)
    assert r.kernels.name == ["small"]
    assert r.kernels.mean_blocks.tolist() == [40.0]
    assert len(r.underfilled_rows) == 1
    u = r.underfilled_in_step()  # what under-filled-grid weighs: 30 µs x (1 - 40/80) idle
    assert (u.count, u.time_ns, u.idle_sm_ns, u.mean_blocks) == (1, 30_000.0, 15_000.0, 40.0)
    assert r.underfilled_in_step(min_dur_ns=31_000).count == 0


def test_a_grid_sized_to_the_machine_is_not_under_filled(tmp_path: Path) -> None:
    """80 SMs: 60 blocks (three quarters: a persistent kernel's one block per usable SM) is sized to
    the machine; 59 blocks is under-filled, 20 µs x (1 - 59/80) = 5.25 µs of SM time idle."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.launch_kernel("persistent", 0, 1, 10, 30, grid=[60, 1, 1], block=[384, 1, 1])
    b.launch_kernel("small", 1, 1, 40, 20, grid=[59, 1, 1], block=[128, 1, 1])
    r = compute_launch_config(b.load(tmp_path), 0)
    assert r.kernels.name == ["small"]
    u = r.underfilled_in_step()
    assert (u.count, u.time_ns) == (1, 20_000.0)
    assert u.idle_sm_ns == pytest.approx(5_250.0)
    assert r.sm_fill_pct == pytest.approx(100 * (30 * 60 / 80 + 20 * 59 / 80) / 50)


def test_without_sm_count_it_is_not_applicable(tmp_path: Path) -> None:
    b = TraceBuilder(device=None)
    b.launch_kernel("small", 0, 1, 10, 30, grid=[40, 1, 1])
    with pytest.raises(NotApplicable):
        compute_launch_config(b.load(tmp_path), 0)


def test_the_finding_says_which_kernels_its_share_counts(tmp_path: Path) -> None:
    """80 SMs, one 10 ms step: a 6 ms kernel of 160 blocks, a 2 ms one of 10 blocks and 100 of 8 µs
    with 4 blocks. The view counts every under-filled kernel: 2.8 / 8.8 ms = 31.8 % of kernel time;
    the finding only those of at least ``underfill_min_kernel_us`` (10 µs): 2 / 8.8 = 22.7 % — and
    says so. With the floor at 5 µs it counts them all: the view's 31.8 %."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=10_000)
    b.launch_kernel("filled", 10, 5, 30, 6_000, grid=[160, 1, 1], block=[256, 1, 1])
    b.launch_kernel("under", 20, 5, 6_040, 2_000, grid=[10, 1, 1], block=[256, 1, 1])
    for i in range(100):
        b.launch_kernel("tiny", 100 + 10 * i, 5, 8_050 + 8 * i, 8, grid=[4, 1, 1], block=[128, 1, 1])
    bundle = analyze(b.load(tmp_path))
    assert compute_launch_config(bundle.trace, 0).underfilled_time_pct == pytest.approx(100 * 2.8 / 8.8)
    found = {}
    for floor in (10.0, 5.0):
        (f,) = [f for f in run_advisor(bundle, AdvisorConfig().replace(underfill_min_kernel_us=floor)).findings
                if f.rule == "under-filled-grid"]
        assert f.evidence["min_kernel_us"] == floor
        found[floor] = texts.found_text(f)
    assert found[10.0].startswith("22.7% of kernel time runs in kernels of at least 10 µs with fewer blocks than "
                                  "the 80 SMs (mean 10 blocks)")
    assert found[5.0].startswith("31.8% of kernel time runs in kernels of at least 5 µs")


def test_the_view_says_its_shares_are_of_the_kernels_with_a_grid(tmp_path: Path) -> None:
    """Audit: a HIP-graph decode step said 'under-filled kernels take 3.3 % of kernel time' of the
    0.28 ms of its 10.7 ms of kernels that record a grid. 80 SMs: 'small' 40 blocks 30 µs, 'big' 100
    blocks 10 µs, and a graph replay's kernel of 60 µs without a grid: 75 % of the 0.040 of 0.100 ms."""
    import io

    from rich.console import Console

    from stepscope.report import terminal

    b = TraceBuilder()
    b.step(1, ts=0, dur=200)
    b.launch_kernel("small", 0, 1, 10, 30, grid=[40, 1, 1], block=[128, 1, 1])
    b.launch_kernel("big", 1, 1, 40, 10, grid=[10, 10, 1], block=[128, 1, 1])
    b.launch_kernel("graph_kernel", 2, 1, 60, 60, runtime="cudaGraphLaunch")
    bundle = analyze(b.load(tmp_path), names=["launch_config"])
    r = compute_launch_config(bundle.trace, 0)
    assert (r.kernel_time_ns, r.all_kernel_time_ns) == (40_000, 100_000)
    out = io.StringIO()
    terminal.render(bundle, Console(file=out, width=400), ["launch_config"], 10)
    assert ("launch configuration (80 SMs): of the kernels with a known grid (0.040 of 0.100 ms kernel time; "
            "a graph replay's kernels record none): kernels with fewer blocks than ¾ of the SMs take "
            "75.0 % of their time; time-weighted SM fill 62.5 %") in out.getvalue()
