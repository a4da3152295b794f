"""Launch calls that waited for a full launch queue are waits for the device in the what-if graph
(``whatif/queue_full.py``): faster kernels free the queue sooner, no change drops them, and a slow
launch on an idle device is not one.

The full queue, by hand: 300 kernels of 100 µs back to back on one stream from t = 20 µs (kernel k:
20 + 100k .. 120 + 100k). The host launches the first 200 every 10 µs (5 µs calls); by then 181 are
pending, and each later call returns 5 µs after the next kernel ends (kernel k - 181 for launch k),
having been called 5 µs after the previous one returned: 95 µs calls. A device sync waits for the last
kernel (30,020 µs); the step ends 5 µs later.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope.analysis.whatif import transforms as tf
from stepscope.analysis.whatif.graph import step_graph
from stepscope.analysis.whatif.simulate import simulate
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder

KERNEL_US = 100
N = 300
FIRST_BLOCKED = 201  # launch 200 finds 181 pending and waits only 20 µs (kernel 19 ends at 2,020)


def _end(k: int) -> int:
    return 120 + KERNEL_US * k


def full_queue(tmp_path: Path) -> Trace:
    b = TraceBuilder()
    last_end = _end(N - 1)
    b.step(1, 0, last_end + 10)
    t = 0
    for k in range(N):
        if k < 200:
            start, dur = 10 * k, 5
        else:
            start = t + 5
            dur = _end(k - 181) + 5 - start
        b.launch_kernel("void gemm_kernel<float>", launch_ts=start, launch_dur=dur, ts=20 + KERNEL_US * k,
                        dur=KERNEL_US, grid=[160, 1, 1], block=[256, 1, 1])
        t = start + dur
    b.add(ph="X", cat="cuda_runtime", name="cudaDeviceSynchronize", pid=b.pid, tid=b.tid, ts=t + 5,
          dur=last_end + 5 - (t + 5), args={})
    return b.load(tmp_path)


def test_the_blocked_launches_wait_for_the_device(tmp_path: Path) -> None:
    trace = full_queue(tmp_path)
    g = step_graph(trace, 0)
    names = trace.strings.decode(trace.events["name"][g.syncs.row])
    queued = g.syncs.row[~g.syncs.droppable]
    assert len(queued) == N - FIRST_BLOCKED  # launches 201..299 (95 µs each); 200 waited 20 µs, under the 50
    assert set(names[~g.syncs.droppable]) == {"cudaLaunchKernel"} and "cudaDeviceSynchronize" in set(names)
    assert simulate(trace, []).mean_ns(True) == pytest.approx(_end(N - 1) * 1e3 + 10e3, rel=1e-9)  # identity


def test_faster_kernels_free_the_queue_sooner(tmp_path: Path) -> None:
    """Kernels 5 x faster: 300 x 20 µs back to back from 20 µs. The blocked calls now find their slot
    free and return at once, the host launches the last kernel by ~3 ms, and the step is the device's
    6.02 ms, the sync's 5 µs and the 5 µs to the step's end. Were the blocked calls kept as host time
    (95 µs each), the host alone would take ~11.5 ms to launch the last kernel."""
    trace = full_queue(tmp_path)
    faster = tf.ScaleDevice(tf.Select(r"gemm_kernel"), 0.2)
    predicted_us = simulate(trace, [faster]).mean_ns(True) / 1e3
    assert predicted_us == pytest.approx(20 + 20 * N + 10, abs=2)


def test_no_change_drops_a_wait_for_the_queue(tmp_path: Path) -> None:
    """Dropping every sync leaves the step as long: the host still waits for the queue to free a slot
    (only the final device sync goes: its 5 µs tail)."""
    trace = full_queue(tmp_path)
    measured = simulate(trace, []).mean_ns(True)
    dropped = simulate(trace, [tf.DropSyncs(tf.Select("."))]).mean_ns(True)
    assert dropped >= measured - 20e3


def test_a_slow_launch_on_an_idle_device_is_host_time(tmp_path: Path) -> None:
    """A 200 µs launch call (40 x the median call) that returns 5 µs after a kernel it followed ended —
    but with one kernel pending when it was called: the host was slow (DLRM's host-bound ranks), the
    queue was not full. It stays host time; without the pending test it had read as a wait."""
    b = TraceBuilder()
    b.step(1, 0, 2_000)
    for k in range(10):  # ten short kernels, done by 500 µs
        b.launch_kernel("void gemm_kernel<float>", launch_ts=10 + 20 * k, launch_dur=5, ts=300 + 20 * k, dur=10,
                        grid=[1, 1, 1], block=[32, 1, 1])
    b.launch_kernel("void gemm_kernel<float>", launch_ts=900, launch_dur=5, ts=1_095, dur=100, grid=[1, 1, 1],
                    block=[32, 1, 1])  # pending when the slow call starts; ends at 1,195
    b.launch_kernel("void gemm_kernel<float>", launch_ts=1_000, launch_dur=200, ts=1_210, dur=10, grid=[1, 1, 1],
                    block=[32, 1, 1])  # returns at 1,200
    g = step_graph(b.load(tmp_path), 0)
    assert bool(np.all(g.syncs.droppable))
