"""Overview: GPU utilization, est. SM efficiency, est. occupancy, Tensor Core share, busy/span."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.analysis.overview import Overview, compute_overview
from tests.builders import TraceBuilder

US = 1000


def test_gpu_efficiency_numbers_by_hand(tmp_path: Path) -> None:
    """Step [0,100]; k1 [10,50] bps 0.5 occ 40; k2 [30,70] bps 2.0 occ 60 (a Tensor-Core kernel).

    utilization = |[10,70]| / 100 = 60 %; SM efficiency = (20·0.5 + 20·1 + 20·1) / 100 = 50 %;
    occupancy = (40·40 + 60·40) / 80 = 50 %; Tensor Cores = 40 / 80 = 50 %.
    """
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.launch_kernel("k1", launch_ts=1, launch_dur=1, ts=10, dur=40,
                    **{"blocks per SM": 0.5, "est. achieved occupancy %": 40})
    b.launch_kernel("volta_h884gemm_64x64_nn", launch_ts=3, launch_dur=1, ts=30, dur=40,
                    **{"blocks per SM": 2.0, "est. achieved occupancy %": 60})
    o = compute_overview(b.load(tmp_path), 0)
    assert o.step_count == 1
    assert o.gpu_utilization_pct == pytest.approx(60.0)
    assert o.sm_efficiency_pct == pytest.approx(50.0)
    assert o.achieved_occupancy_pct == pytest.approx(50.0)
    assert o.tensor_core_pct == pytest.approx(50.0)
    assert not o.occupancy_computed
    assert o.busy_ns == 60 * US and o.span_ns == 60 * US


def test_occupancy_is_computed_when_the_trace_lacks_it(tmp_path: Path) -> None:
    """V100, grid 160 blocks of 256 threads, 32 regs, no shared memory: 2 blocks/SM, 8 resident
    → occupancy = 2·256/2048 = 25 %; SM efficiency = min(1, 2) over the whole kernel = 100 %."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.launch_kernel("k", launch_ts=1, launch_dur=1, ts=0, dur=100, grid=[160, 1, 1], block=[256, 1, 1],
                    **{"registers per thread": 32, "shared memory": 0})
    o = compute_overview(b.load(tmp_path), 0)
    assert o.occupancy_computed
    assert o.achieved_occupancy_pct == pytest.approx(25.0)
    assert o.sm_efficiency_pct == pytest.approx(100.0)


def test_gpu_work_launched_before_the_steps_is_not_busy_time(tmp_path: Path) -> None:
    """A kernel without a recorded launch (queued before profiling) is outside busy/span."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.gpu("queued_earlier", ts=0, dur=10, corr=5)
    b.launch_kernel("k", launch_ts=5, launch_dur=1, ts=20, dur=30)
    o = compute_overview(b.load(tmp_path), 0)
    assert (o.busy_ns, o.span_ns) == (30 * US, 30 * US)


def test_cpu_only_trace_has_no_gpu_numbers(tmp_path: Path) -> None:
    b = TraceBuilder(device=None)
    b.step(1, ts=0, dur=100)
    b.op("aten::add", ts=10, dur=20)
    o = compute_overview(b.load(tmp_path), 0)
    assert o.device is None
    assert o.gpu_utilization_pct is None and o.achieved_occupancy_pct is None
    assert o.avg_step_ns == 100 * US


def _graph_replay(tmp_path: Path, grid: bool = True) -> tuple[Overview, str]:
    """Step [0,100] on a V100 (80 SMs): k1 [10,30] with a grid of 80 blocks (1 block per SM), k2
    [40,90] without a grid (a graph replay's kernel: its launch records no shape)."""
    import io

    from rich.console import Console

    from stepscope.analysis.bundle import analyze
    from stepscope.report import terminal

    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.launch_kernel("k1", launch_ts=1, launch_dur=1, ts=10, dur=20, **({"grid": [80, 1, 1], "block": [256, 1, 1]}
                                                                      if grid else {}))
    b.launch_kernel("graph_kernel", launch_ts=2, launch_dur=1, ts=40, dur=50, runtime="cudaGraphLaunch")
    trace = b.load(tmp_path)
    out = io.StringIO()
    terminal.render(analyze(trace, names=["overview"]), Console(file=out, width=200), ["overview"], 10)
    return compute_overview(trace, 0), out.getvalue()


def test_kernels_without_a_grid_are_left_out_of_the_sm_efficiency(tmp_path: Path) -> None:
    """Audit: a HIP-graph decode step showed 'est. SM efficiency 2.58 %' beside 'GPU utilization
    99.36 %': the graph kernels' missing grid counted as 0 blocks. Left out (with the time only they
    run): 20 µs at 1 block per SM over the 100 − 50 µs that are not graph-kernel-only = 40 % (was 20 %)."""
    o, text = _graph_replay(tmp_path)
    assert o.sm_efficiency_pct == pytest.approx(40.0)
    assert (o.grid_kernel_ns, o.kernel_ns) == (20 * US, 70 * US)
    assert "40.00 % (of the kernels with a known grid: 28.6 % of kernel time)" in text


def test_no_kernel_with_a_grid_is_no_sm_efficiency(tmp_path: Path) -> None:
    o, text = _graph_replay(tmp_path, grid=False)
    assert o.sm_efficiency_pct is None
    assert "est. SM efficiency" in text and "n/a (no launch shapes)" in text
