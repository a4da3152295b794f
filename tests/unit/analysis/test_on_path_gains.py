"""Blocking pageable copies and on-path-weighted gains, on hand-made traces with hand-computed answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stepscope.analysis.critical_path import compute_critical_path
from stepscope.analysis.sync import blocking_calls
from stepscope.analysis.whatif.graph import step_graph
from stepscope.analysis.whatif.replay import Durations, replay
from stepscope.analysis.whatif.transforms import ScaleDevice, Select
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder

PAGEABLE_H2D = "Memcpy HtoD (Pageable -> Device)"


def _pageable_wait(tmp_path: Path) -> Trace:
    """One 10 ms step: a 6 ms kernel launched at 0.1 ms, then at 1 ms the input copy from pageable
    memory: its cudaMemcpyAsync waits for the kernel (returns at 6.3 ms), the copy runs 6.1-6.3 ms,
    then a 1 ms kernel launched at 6.4 ms."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=10_000)
    b.launch_kernel("sgemm_a", launch_ts=100, launch_dur=10, ts=110, dur=6000)
    b.launch_kernel(PAGEABLE_H2D, launch_ts=1000, launch_dur=5300, ts=6110, dur=190,
                    runtime="cudaMemcpyAsync", cat="gpu_memcpy")
    b.launch_kernel("sgemm_b", launch_ts=6400, launch_dur=10, ts=6420, dur=1000)
    return b.load(tmp_path)


def test_a_pageable_async_copy_blocks_the_host(tmp_path: Path) -> None:
    tr = _pageable_wait(tmp_path)
    ev = tr.events
    rt = np.flatnonzero(ev["kind"] == EventKind.RUNTIME)
    names = tr.names(ev["name"][rt]).tolist()
    blocking = blocking_calls(tr, rt)
    assert dict(zip(names, blocking.tolist())) == {"cudaLaunchKernel": False, "cudaMemcpyAsync": True}


def test_the_replay_lets_the_host_go_on_when_the_kernel_it_waited_for_gets_shorter(tmp_path: Path) -> None:
    tr = _pageable_wait(tmp_path)
    g = step_graph(tr, 0)
    base = Durations.measured(g)
    assert int(replay(g, base).step_ns[0]) == int(g.steps.measured_end_ns[0] - g.steps.measured_start_ns[0])
    # sgemm_a at half its time (3 ms): the copy call now returns 3 ms earlier, and so does
    # everything after it: the step (10 ms host span, the last kernel ends at 7.42 ms) keeps its
    # host end, so the saving shows on the device path's end, 3 ms earlier
    faster = ScaleDevice(Select(pattern="sgemm_a"), 0.5).change(tr, g, base)
    r = replay(g, faster)
    last = int(np.flatnonzero(tr.names(tr.events["name"][g.device.row]) == "sgemm_b")[0])
    assert int(r.device_end_ns[last]) == int(g.device.start_ns[last] + g.device.dur_ns[last]) - 3_000_000


def _hidden_or_not(tmp_path: Path, host_bound: bool) -> Trace:
    """One 10 ms step with a 2 ms fp32 GEMM from aten::mm. Host-bound: the host keeps working until
    the step's end and launches a last short kernel at 9.8 ms (the GEMM ran hidden under host work).
    Device-bound: the GEMM is the last device work and the host waits for it in a sync."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=10_000)
    b.op("aten::mm", ts=100, dur=100)
    b.launch_kernel("volta_sgemm_128x64_nn", launch_ts=110, launch_dur=10, ts=200, dur=2000)
    if host_bound:
        b.op("aten::python_work", ts=300, dur=9400)
        b.launch_kernel("elementwise_kernel", launch_ts=9800, launch_dur=10, ts=9820, dur=20)
    else:
        b.launch_kernel("elementwise_kernel", launch_ts=130, launch_dur=10, ts=2200, dur=7700)
        b.op("cudaDeviceSynchronize", ts=200, dur=9700, cat="cuda_runtime")
    return b.load(tmp_path)


def test_on_path_share_is_zero_for_a_kernel_hidden_under_host_work(tmp_path: Path) -> None:
    tr = _hidden_or_not(tmp_path, host_bound=True)
    cp = compute_critical_path(tr, 0)
    gemm = np.flatnonzero(tr.strings.mask(lambda s: "sgemm" in s)[tr.events["name"]])
    assert cp.on_path_share(tr, gemm) == 0.0


def test_on_path_share_is_one_for_a_kernel_the_step_waits_for(tmp_path: Path) -> None:
    tr = _hidden_or_not(tmp_path, host_bound=False)
    cp = compute_critical_path(tr, 0)
    gemm = np.flatnonzero(tr.strings.mask(lambda s: "sgemm" in s)[tr.events["name"]])
    assert cp.on_path_share(tr, gemm) == 1.0
