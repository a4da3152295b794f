"""Critical-path attribution: each instant of a step charged once, device work on the path only
when the device (not the host) held the step up. Times in µs, answers computed by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.analysis.breakdown import compute_breakdown
from stepscope.analysis.critical_path import HOST_PARTS, PARTS, compute_critical_path
from tests.builders import TraceBuilder

US = 1000


def _parts(r: object) -> dict[str, int]:
    return dict(zip(PARTS, (r.parts_ns[0] // US).tolist()))  # type: ignore[attr-defined]


def _host(r: object) -> dict[str, int]:
    return dict(zip(HOST_PARTS, (r.host_parts_ns[0] // US).tolist()))  # type: ignore[attr-defined]


def test_every_instant_is_charged_once(tmp_path: Path) -> None:
    """Step [0,100]. DataLoader [0,20]; launch [20,25] → sgemm [30,60]; aten::foo [25,70] holds a launch
    [65,70] → NCCL all-reduce [80,90] on another stream.

    Each kernel is the last of its stream: on the path. compute: sgemm 30 + its wait after the launch
    returned [25,30] 5 = 35; communication: 10 + its wait [70,80] 10 = 20; input [0,20] 20; host: launch
    calls [20,25] + [65,70] = 10, aten::foo [60,65] 5, nothing traced [90,100] 10 = 25.
    """
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", ts=0, dur=20)
    b.launch_kernel("sgemm", launch_ts=20, launch_dur=5, ts=30, dur=30)
    b.op("aten::foo", ts=25, dur=45)
    b.launch_kernel("ncclKernel_AllReduce_RING_LL_Sum_float", launch_ts=65, launch_dur=5, ts=80, dur=10,
                    stream=20)
    r = compute_critical_path(b.load(tmp_path), 0)
    assert _parts(r) == {"compute": 35, "communication": 20, "copy": 0, "input": 20, "host": 25}
    assert _host(r) == {"launch": 10, "host_ops": 5, "untraced": 10, "compile": 0}
    assert (r.untraced_longest_ns // US).tolist() == [10]  # one stretch: [90,100]
    assert r.parts_ns.sum() == r.step_ns.sum() == 100 * US
    assert r.device_busy_pct() == pytest.approx(40.0)
    assert r.bound == "host"  # compute is the largest part but the device is starved (busy 40 %)


def test_a_burst_the_host_caught_up_with_is_off_the_path(tmp_path: Path) -> None:
    """k1 [10,20] and k2 [20,30] were queued (k2 launched at 5, before k1 ended); k3 [50,60] was launched
    at 40, after k2 ended: the stream ran dry, so the path reaches k3 through the host and k2's run is
    hidden under host time. While k1, k2 sat launched but not started [1,20] the device had a queue:
    compute. compute: 19 + k3's wait [41,50] 9 + k3 10 = 38; host: launch calls [0,1] + [40,41] = 2,
    untraced [20,40] = 20 (k2 runs then, but nothing waits for it)."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=60)
    b.launch_kernel("k1", launch_ts=0, launch_dur=1, ts=10, dur=10)
    b.launch_kernel("k2", launch_ts=5, launch_dur=1, ts=20, dur=10)
    b.launch_kernel("k3", launch_ts=40, launch_dur=1, ts=50, dur=10)
    r = compute_critical_path(b.load(tmp_path), 0)
    assert _parts(r) == {"compute": 38, "communication": 0, "copy": 0, "input": 0, "host": 22}
    assert _host(r) == {"launch": 2, "host_ops": 0, "untraced": 20, "compile": 0}
    assert (r.untraced_longest_ns // US).tolist() == [20]  # [20,40], in one stretch
    assert r.bound == "host"


def test_queued_work_keeps_the_path_on_the_device(tmp_path: Path) -> None:
    """Three kernels queued back to back [10,100] (all launched by 3): the device holds the step; its wait
    for the first after the launch returned [1,10] is the device's too."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    for i, name in enumerate(("k1", "k2", "k3")):
        b.launch_kernel(name, launch_ts=i, launch_dur=1, ts=10 + 30 * i, dur=30)
    r = compute_critical_path(b.load(tmp_path), 0)
    assert _parts(r) == {"compute": 99, "communication": 0, "copy": 0, "input": 0, "host": 1}
    assert r.bound == "compute"


def test_a_device_busy_with_work_before_the_window_is_not_starved(tmp_path: Path) -> None:
    """One step captured out of a GPU-bound loop (a schedule with ``active=1``): the host launches
    k1..k3 by 9 µs, but they start at 70 (the device still runs the warm-up steps' work, which the
    trace does not hold) and end at 100. The device shows busy 30 % of the window, yet nothing waited
    for the host: compute holds the step (the queue [1,70] is the device's, then the kernels), not
    the host's 1 µs — it read "bound by the host (0 %)" on the H200 captures cut to one step."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=10)
    for i, name in enumerate(("k1", "k2", "k3")):
        b.launch_kernel(name, launch_ts=3 * i, launch_dur=1, ts=70 + 10 * i, dur=10)
    r = compute_critical_path(b.load(tmp_path), 0)
    assert _parts(r) == {"compute": 99, "communication": 0, "copy": 0, "input": 0, "host": 1}
    assert r.device_busy_pct() == pytest.approx(30.0)
    assert r.bound == "compute"


def test_a_copy_queued_behind_unseen_work_waits_as_a_copy(tmp_path: Path) -> None:
    """A 64 MB pinned host-to-device copy launched at 1 (the call returns at 2) starts at 60, behind
    work the trace does not hold, and runs to 90: its wait [2,60] is the copy's, not compute's."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=10)
    b.launch_kernel("Memcpy HtoD (Pinned -> Device)", launch_ts=1, launch_dur=1, ts=60, dur=30,
                    runtime="cudaMemcpyAsync", cat="gpu_memcpy", bytes=64 << 20)
    r = compute_critical_path(b.load(tmp_path), 0)
    assert _parts(r) == {"compute": 0, "communication": 0, "copy": 88, "input": 0, "host": 2}
    assert r.bound == "copy"


def test_a_synchronous_copy_is_copy_time(tmp_path: Path) -> None:
    """The host sits in cudaMemcpy [0,30] while the H2D copy runs [10,30], then launches k [30,31] →
    [32,40]. The copy ended while the host was blocked on it: on the path (copy 20), and the host's
    wait in the blocking call before it [0,10] is copy too; k: 8 + its wait [31,32] 1; launch 1."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=40)
    b.launch_kernel("Memcpy HtoD (Pageable -> Device)", launch_ts=0, launch_dur=30, ts=10, dur=20,
                    runtime="cudaMemcpy", cat="gpu_memcpy")
    b.launch_kernel("k", launch_ts=30, launch_dur=1, ts=32, dur=8)
    r = compute_critical_path(b.load(tmp_path), 0)
    assert _parts(r) == {"compute": 9, "communication": 0, "copy": 30, "input": 0, "host": 1}
    assert r.bound == "copy"


def test_communication_overlapped_by_compute_is_not_on_the_path(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.step(1, ts=0, dur=50)
    b.launch_kernel("sgemm", launch_ts=0, launch_dur=1, ts=1, dur=49)
    b.launch_kernel("ncclKernel_AllReduce_RING_LL_Sum_float", launch_ts=0.5, launch_dur=0.5, ts=10, dur=20,
                    stream=20)
    r = compute_critical_path(b.load(tmp_path), 0)
    parts = _parts(r)
    assert (parts["compute"], parts["communication"], parts["host"]) == (49, 0, 1)


def test_a_trace_without_steps_is_one_window_over_the_device_work(tmp_path: Path) -> None:
    """No ProfilerStep: host work [0,100] launches one kernel at 50 that runs [1200,1300], queued
    more than 1 ms after its launch (the device was busy with work the trace does not show): the
    window is the breakdown's, from that kernel to the end, all of it compute."""
    b = TraceBuilder()
    b.op("aten::foo", ts=0, dur=100)
    b.launch_kernel("k", launch_ts=50, launch_dur=1, ts=1200, dur=100)
    trace = b.load(tmp_path)
    r = compute_critical_path(trace, 0)
    assert r.whole_trace and r.step.tolist() == [-1]
    assert (int(r.start_ns[0]) // US, int(r.end_ns[0]) // US) == (1200, 1300)
    assert _parts(r)["compute"] == 100
    bd = compute_breakdown(trace, 0)
    assert (bd.start_ns.tolist(), bd.end_ns.tolist()) == (r.start_ns.tolist(), r.end_ns.tolist())


def test_without_steps_the_window_is_the_breakdowns_host_time_included(tmp_path: Path) -> None:
    """The PyTorch CUPTI-monitor probe's case: no numbered ProfilerStep, 80 ms of host work before the
    first kernel, which its launch started at once. The one window is the breakdown's [0, 300] µs
    (it was the device's span [200, 300] before: the verdict said 'the 0.1 ms window' beside a
    0.3 ms step), and the parts sum to it."""
    b = TraceBuilder()
    b.op("aten::foo", ts=0, dur=200)
    b.launch_kernel("k", launch_ts=198, launch_dur=1, ts=200, dur=100)
    trace = b.load(tmp_path)
    r = compute_critical_path(trace, 0)
    assert (int(r.start_ns[0]) // US, int(r.end_ns[0]) // US) == (0, 300)
    assert int(r.parts_ns.sum()) == int(r.step_ns.sum()) == int(compute_breakdown(trace, 0).total_ns.sum())
    assert (_parts(r)["host"], _parts(r)["compute"]) == (199, 101)  # the kernel from its launch's end


def test_python_frames_are_python_time_not_op_time(tmp_path: Path) -> None:
    """``test_every_instant_is_charged_once``'s step recorded with ``with_stack=True``: a Python frame
    covers [0,100] and another [70,100] (metrics after the step's work). The host split is the same
    — frames are not ops, their time outside every op is Python ("untraced") — as without them."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.add(ph="X", cat="python_function", name="train.py(10): <module>", pid=b.pid, tid=b.tid, ts=0, dur=100,
          args={})
    b.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", ts=0, dur=20)
    b.launch_kernel("sgemm", launch_ts=20, launch_dur=5, ts=30, dur=30)
    b.op("aten::foo", ts=25, dur=45)
    b.launch_kernel("ncclKernel_AllReduce_RING_LL_Sum_float", launch_ts=65, launch_dur=5, ts=80, dur=10,
                    stream=20)
    b.add(ph="X", cat="python_function", name="train.py(40): metrics", pid=b.pid, tid=b.tid, ts=70, dur=30,
          args={})
    r = compute_critical_path(b.load(tmp_path), 0)
    assert _parts(r) == {"compute": 35, "communication": 20, "copy": 0, "input": 20, "host": 25}
    assert _host(r) == {"launch": 10, "host_ops": 5, "untraced": 10, "compile": 0}
