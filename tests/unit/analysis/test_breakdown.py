"""Step time breakdown: TB step stretching, priority attribution, tail-step drop, throughput."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stepscope.analysis.breakdown import CATEGORIES, compute_breakdown, tb_step_windows, with_batch_size
from stepscope.model.trace import Trace
from tests.builders import OldTraceBuilder, TraceBuilder

US = 1000
DL = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def two_steps(b: TraceBuilder) -> TraceBuilder:
    """Step 1 host [0,100], step 2 host [100,200] (times µs).

    Step 1: DataLoader [0,30]; aten::mm [30,55] with a launch [40,45] of a kernel at [60,110]
    → the step is stretched to 110: kernel 50, runtime 5, dataloader 30, cpu_exec [30,40]+[45,55] = 20,
    other [55,60] = 5.
    Step 2 starts where step 1 ended (110) and ends at 200: an NCCL kernel [125,135] (launch [120,122]),
    a memset [160,170] (launch [150,152]), a memcpy [180,190] (launch [170,172]):
    comm 10, memset 10, memcpy 10, runtime 6, other 90 - 36 = 54.
    """
    b.step(1, ts=0, dur=100)
    b.step(2, ts=100, dur=100)
    b.op(DL, ts=0, dur=30)
    b.op("aten::mm", ts=30, dur=25)
    b.launch_kernel("sgemm", launch_ts=40, launch_dur=5, ts=60, dur=50)
    b.launch_kernel("ncclKernel_AllReduce_RING_LL_Sum_float", launch_ts=120, launch_dur=2, ts=125, dur=10)
    b.launch_kernel("Memset (Device)", launch_ts=150, launch_dur=2, ts=160, dur=10, runtime="cudaMemsetAsync",
                    cat="gpu_memset")
    b.launch_kernel("Memcpy HtoD (Pinned -> Device)", launch_ts=170, launch_dur=2, ts=180, dur=10,
                    runtime="cudaMemcpyAsync", cat="gpu_memcpy")
    return b


def expected() -> dict[str, list[int]]:
    return {"kernel": [50, 0], "memcpy": [0, 10], "memset": [0, 10], "communication": [0, 10],
            "runtime": [5, 6], "dataloader": [30, 0], "cpu_exec": [20, 0], "other": [5, 54]}


def check(trace: Trace) -> None:
    bd = compute_breakdown(trace, 0)
    assert bd.step.tolist() == [1, 2]
    assert bd.start_ns.tolist() == [0, 110 * US]
    assert bd.total_ns.tolist() == [110 * US, 90 * US]
    for i, c in enumerate(CATEGORIES):
        assert (bd.category_ns[:, i] // US).tolist() == expected()[c], c
    assert (bd.category_ns.sum(axis=1) == bd.total_ns).all()


def test_priority_attribution_new_schema(tmp_path: Path) -> None:
    check(two_steps(TraceBuilder()).load(tmp_path))


def test_priority_attribution_old_schema(tmp_path: Path) -> None:
    check(two_steps(OldTraceBuilder()).load(tmp_path))


def test_averages_and_throughput(tmp_path: Path) -> None:
    bd = compute_breakdown(two_steps(TraceBuilder()).load(tmp_path), 0)
    assert bd.avg_step_ns == 100 * US
    assert bd.steps_per_s == 1e9 / (100 * US)
    assert bd.samples_per_s is None
    assert bd.reader_cost_ns.tolist() == [30 * US, 0]
    assert with_batch_size(bd, 32).samples_per_s == 32 * 1e9 / (100 * US)
    assert np.isclose(bd.avg_category_pct.sum(), 100.0)


def test_trailing_step_without_gpu_work_is_dropped(tmp_path: Path) -> None:
    b = two_steps(TraceBuilder())
    b.step(3, ts=200, dur=100)
    win = tb_step_windows(b.load(tmp_path), 0)
    assert win.step.tolist() == [1, 2]
    assert win.dropped_tail_steps == 1


def test_first_step_starts_after_gpu_work_launched_before_it(tmp_path: Path) -> None:
    """A kernel launched before step 1 (launch at -20) that ends at 5 moves step 1's start to 5."""
    b = TraceBuilder()
    b.op("aten::add", ts=-30, dur=20)
    b.launch_kernel("early", launch_ts=-20, launch_dur=2, ts=-10, dur=15)
    b.step(1, ts=0, dur=100)
    b.launch_kernel("k", launch_ts=10, launch_dur=2, ts=20, dur=10)
    win = tb_step_windows(b.load(tmp_path), 0)
    assert win.start_ns.tolist() == [5 * US]
    assert win.end_ns.tolist() == [100 * US]


def test_no_steps_means_one_window_over_the_host_work(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("aten::mm", ts=0, dur=40)
    b.launch_kernel("k", launch_ts=10, launch_dur=2, ts=20, dur=50)
    bd = compute_breakdown(b.load(tmp_path), 0)
    assert bd.step.tolist() == [-1]
    assert bd.step_labels() == ["all"]
    assert bd.total_ns.tolist() == [70 * US]
    assert bd.category_ns[0, CATEGORIES.index("kernel")] == 50 * US


def test_no_steps_window_starts_at_device_work_queued_behind_unseen_work(tmp_path: Path) -> None:
    """A window cut from a longer run (vLLM decode): the host launched the work at 10 µs and the GPU,
    busy with work the trace does not show, began it at 5 ms. The host time before is not GPU wait."""
    b = TraceBuilder()
    b.op("execute_model", ts=0, dur=2400)
    b.launch_kernel("graph_kernel", launch_ts=10, launch_dur=2, ts=5000, dur=4000)
    bd = compute_breakdown(b.load(tmp_path), 0)
    assert bd.start_ns.tolist() == [5000 * US] and bd.total_ns.tolist() == [4000 * US]
    assert bd.category_ns[0, CATEGORIES.index("kernel")] == 4000 * US


def test_every_view_uses_the_breakdown_step_windows(tmp_path: Path) -> None:
    """One length per step: the first step starts after the GPU work before it (TB rule), in the
    breakdown and in the deep analyses alike."""
    from stepscope.analysis.common import step_windows

    b = TraceBuilder()
    b.gpu("previous_step_kernel", ts=-5, dur=10)  # launched before the profiling window
    b.step(1, ts=0, dur=100)
    b.launch_kernel("k", launch_ts=10, launch_dur=2, ts=20, dur=10)
    b.step(2, ts=100, dur=50)
    b.launch_kernel("k", launch_ts=110, launch_dur=2, ts=120, dur=60)
    trace = b.load(tmp_path)
    bd, wins = compute_breakdown(trace, 0), step_windows(trace, 0)
    assert bd.total_ns.tolist() == [95 * US, 80 * US]
    assert wins.step.tolist() == bd.step.tolist() and wins.dur_ns.tolist() == bd.total_ns.tolist()
