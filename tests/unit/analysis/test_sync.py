"""Synchronisation: blocking calls and D2H copies inside steps, traced back to op and call site."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stepscope.analysis.callsite import user_frame
from stepscope.analysis.sync import compute_sync, is_sync_call
from tests.builders import TraceBuilder

US = 1000
STACK = "/venv/lib/python3.11/site-packages/torch/_tensor.py(99): item;train.py(12): train_step;train.py(30): <module>"


def item_trace(tmp_path: Path):  # type: ignore[no-untyped-def]
    """``loss.item()`` in step 1: aten::item > _local_scalar_dense > cudaMemcpyAsync (D2H copy of 4 B
    to pageable memory, 2 µs on the GPU: the call blocks, 3 µs) + cudaStreamSynchronize (12 µs). A
    cudaDeviceSynchronize after the step is ignored."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.op("aten::item", ts=10, dur=20, **{"Call stack": STACK})
    b.op("aten::_local_scalar_dense", ts=11, dur=18)
    b.launch_kernel("Memcpy DtoH (Device -> Pageable)", launch_ts=12, launch_dur=3, ts=20, dur=2,
                    runtime="cudaMemcpyAsync", cat="gpu_memcpy", bytes=4)
    b.op("cudaStreamSynchronize", ts=16, dur=12, cat="cuda_runtime")
    b.op("cudaDeviceSynchronize", ts=150, dur=5, cat="cuda_runtime")
    return b.load(tmp_path)


def test_counts_and_times_per_step(tmp_path: Path) -> None:
    r = compute_sync(item_trace(tmp_path), 0)
    assert r.step.tolist() == [1]
    assert (r.sync_count.tolist(), r.sync_ns.tolist()) == ([2], [15 * US])
    assert (r.d2h_count.tolist(), r.d2h_ns.tolist(), r.d2h_bytes.tolist()) == ([1], [2 * US], [4])
    assert len(r.sync_rows) == 2 and len(r.d2h_rows) == 1


def test_who_caused_them(tmp_path: Path) -> None:
    s = compute_sync(item_trace(tmp_path), 0).sites
    assert s.what == ["cudaStreamSynchronize", "cudaMemcpyAsync", "Memcpy DtoH (Device -> Pageable)"]
    assert s.op == ["aten::_local_scalar_dense"] * 3
    assert s.top_op == ["aten::item"] * 3
    assert s.call_site == ["train.py(12): train_step"] * 3
    assert s.count.tolist() == [1, 1, 1]
    assert s.time_ns.tolist() == [12 * US, 3 * US, 2 * US]


def test_sync_calls_belong_to_the_host_span_they_start_in(tmp_path: Path) -> None:
    """Step 1's host span is [0, 100) µs, its kernel runs until 230 µs, so its window is [0, 230);
    step 2's host span is [100, 200), its kernel runs at [240, 250). A sync at 150 µs is step 2's
    (the host is in step 2), though step 1's window holds it; the profiler's own cudaDeviceSynchronize
    at 205 µs, after the last host span, is no step's — on an H200 capture it was a 35 ms call counted
    as "7 ms per step" of 9.8 ms steps."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.launch_kernel("k1", launch_ts=10, launch_dur=5, ts=20, dur=210)
    b.step(2, ts=100, dur=100)
    b.launch_kernel("k2", launch_ts=110, launch_dur=5, ts=240, dur=10)
    b.op("cudaStreamSynchronize", ts=150, dur=40, cat="cuda_runtime")
    b.op("cudaDeviceSynchronize", ts=205, dur=25, cat="cuda_runtime")
    r = compute_sync(b.load(tmp_path), 0)
    assert r.step.tolist() == [1, 2]
    assert r.sync_count.tolist() == [0, 1]
    assert r.sync_ns.tolist() == [0, 40 * US]


def test_without_steps_the_profilers_own_sync_is_no_one_s(tmp_path: Path) -> None:
    """No step markers, the whole trace one window: a torch.cuda.synchronize() between two launches
    (at 50 µs) is the program's; the profiler's cudaDeviceSynchronize when it stops (at 200 µs,
    after the last op and launch, waiting for the last kernel) is not — it read as a sync-in-step
    finding on traces of a `with profile():` block."""
    b = TraceBuilder()
    b.op("aten::mm", ts=0, dur=20)
    b.launch_kernel("k1", launch_ts=5, launch_dur=5, ts=10, dur=100)
    b.op("cudaDeviceSynchronize", ts=50, dur=60, cat="cuda_runtime")
    b.op("aten::mm", ts=120, dur=20)
    b.launch_kernel("k2", launch_ts=125, launch_dur=5, ts=130, dur=150)
    b.op("cudaDeviceSynchronize", ts=200, dur=80, cat="cuda_runtime")
    r = compute_sync(b.load(tmp_path), 0)
    assert r.step.tolist() == [-1]  # the whole trace
    assert (r.sync_count.tolist(), r.sync_ns.tolist()) == ([1], [60 * US])


def test_sync_call_names() -> None:
    for name in ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "hipDeviceSynchronize",
                 "cudaMemcpy", "cudaMemcpy2D", "hipMemcpyWithStream", "cuMemcpyDtoH_v2", "cuCtxSynchronize",
                 "cudaFree", "hipFree", "cuMemFree_v2"):
        assert is_sync_call(name), name
    for name in ("cudaMemcpyAsync", "cudaLaunchKernel", "cudaStreamWaitEvent", "cudaEventRecord", "hipMemcpyAsync",
                 "cudaFreeAsync", "cudaMalloc"):
        assert not is_sync_call(name), name


def test_user_frame_skips_library_frames() -> None:
    assert user_frame(STACK) == "train.py(12): train_step"
    assert user_frame("/x/site-packages/torch/a.py(1): f") == "/x/site-packages/torch/a.py(1): f"
    assert user_frame("") == ""


def test_a_free_blocks_but_is_the_allocators_not_a_read(tmp_path: Path) -> None:
    """``cudaFree`` waits for the device (``torch.cuda.empty_cache()`` in the loop): a blocking call
    for the critical path and the what-if, but not a sync of this analysis — the allocator's churn is
    ``allocator-fragmentation``'s finding, one cause, one finding."""
    from stepscope.analysis.sync import blocking_calls

    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.launch_kernel("k1", launch_ts=10, launch_dur=2, ts=15, dur=60)
    b.add(ph="X", cat=b.RUNTIME_CAT, name="cudaFree", pid=b.pid, tid=b.tid, ts=20, dur=60, args={})
    trace = b.load(tmp_path)
    rows = np.flatnonzero(trace.strings.mask(lambda s: s == "cudaFree")[trace.events["name"]])
    assert blocking_calls(trace, rows).tolist() == [True]
    assert compute_sync(trace, 0).sync_count.tolist() == [0]
