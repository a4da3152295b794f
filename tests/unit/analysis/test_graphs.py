"""CUDA graph replays: one cudaGraphLaunch of 20 kernels sharing its correlation id, in every view.

The scene (µs), one step [0, 400]:

* ``CUDAGraphRunner.replay`` (cpu_op) [5, 70] holds ``cudaGraphLaunch`` [10, 60]; its 20 kernels
  run at 100 + 10 i for 5 µs (i = 0 … 19; written to the file in reverse order);
* ``aten::mm`` [75, 80] holds ``cudaLaunchKernel`` [76, 78]; its kernel runs [300, 320].
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.analysis.critical_path import PARTS, compute_critical_path
from stepscope.analysis.graphs import compute_graphs
from stepscope.analysis.idle import compute_idle
from stepscope.analysis.launch import compute_launch
from stepscope.ingest.capture import match_windows
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder

US = 1000


def graph_scene(b: TraceBuilder, corr: int = 555, n: int = 20) -> None:
    b.step(1, ts=0, dur=400)
    b.op("CUDAGraphRunner.replay", ts=5, dur=65)
    b.add(ph="X", cat="cuda_runtime", name="cudaGraphLaunch", pid=b.pid, tid=b.tid, ts=10, dur=50,
          args={"correlation": corr})
    for i in reversed(range(n)):
        b.gpu(f"k{i}", ts=100 + 10 * i, dur=5, corr=corr)
    b.op("aten::mm", ts=75, dur=5)
    b.launch_kernel("sgemm", launch_ts=76, launch_dur=2, ts=300, dur=20)


@pytest.fixture
def trace(tmp_path: Path) -> Trace:
    b = TraceBuilder()
    graph_scene(b)
    return b.load(tmp_path)


def test_every_graph_kernel_is_linked_numbered_and_attributed(trace: Trace) -> None:
    ev = trace.events
    k = [i for i in range(len(ev)) if ev["kind"][i] == EventKind.KERNEL]
    names = [trace.strings[int(ev["name"][i])] for i in k]
    node = {n: int(ev["graph_node"][i]) for n, i in zip(names, k)}
    assert node == {**{f"k{i}": i for i in range(20)}, "sgemm": -1}  # start order, not file order
    launch_names = {trace.strings[int(ev["name"][ev["launch"][i]])] for i, n in zip(k, names) if n != "sgemm"}
    assert launch_names == {"cudaGraphLaunch"}
    op_names = {trace.strings[int(ev["name"][ev["op"][i]])] for i, n in zip(k, names) if n != "sgemm"}
    assert op_names == {"CUDAGraphRunner.replay"}


def test_graph_view(trace: Trace) -> None:
    """20 of 21 kernels, 100 of 120 µs; the launch: 50 µs call, first kernel 40 µs after it returned,
    span 100 → 295."""
    r = compute_graphs(trace, 0)
    g = r.launches
    assert (r.gpu_activities, r.graph_activities, r.unattributed) == (21, 20, 0)
    assert (r.graph_gpu_ns, r.gpu_ns) == (100 * US, 120 * US)
    assert r.graph_gpu_pct == pytest.approx(100 * 100 / 120)
    assert g.nodes.tolist() == [20] and g.cpu_ns.tolist() == [50 * US]
    assert g.first_delay_ns.tolist() == [40 * US] and g.span_ns.tolist() == [195 * US]
    assert (g.name(0), g.launcher(0), int(g.step[0])) == ("cudaGraphLaunch", "CUDAGraphRunner.replay", 1)
    assert not r.has_capture and len(r.captured) == 0


def test_launch_counts_a_graph_as_one_launch(trace: Trace) -> None:
    """Each graph kernel gets 50 / 20 = 2.5 µs of the call (equal run times): 5 µs > 2.5, not short;
    sgemm 20 µs > its 2 µs call. Counted per kernel against the whole call, all 20 would be short."""
    r = compute_launch(trace, 0)
    assert sorted(r.cpu_launch_ns.tolist()) == [2 * US] + [2500] * 20
    assert r.short_kernel_count == 0
    assert (r.graph_launches, r.graph_kernels) == (1, 20)


def test_idle_gaps_inside_a_graph_are_not_host_waits(trace: Trace) -> None:
    """[0, 100) waits for the graph's launch (host); the 19 gaps of 5 µs between graph kernels and
    [295, 300) were queued work (kernel wait: 100 µs); [320, 400) has no next activity (other)."""
    r = compute_idle(trace, 0)
    assert (int(r.host_wait_ns[0]), int(r.kernel_wait_ns[0]), int(r.other_ns[0])) == (100 * US, 100 * US, 80 * US)


def test_critical_path_runs_through_the_graph_kernels(trace: Trace) -> None:
    """From the call's return (60) the device has queued work until 320: compute 260 µs; host the
    rest, 140 µs (launch call [10, 60] 50, the runner op [5, 10] 5, untraced [0, 5] + [320, 400] 85)."""
    r = compute_critical_path(trace, 0)
    parts = dict(zip(PARTS, r.parts_ns[0].tolist()))
    assert parts["compute"] == 260 * US and parts["host"] == 140 * US
    assert r.host_parts_ns[0].tolist() == [50 * US, 5 * US, 85 * US, 0]  # launch, host ops, untraced, compile


def test_match_windows_by_node_count() -> None:
    """PIECEWISE replays: pieces of 4, 15, 15, 12 nodes captured in order; a launch matches the next
    window with its count (wrapping), a count no window has matches none."""
    assert match_windows([4, 15, 15, 12, 4, 15], [4, 15, 15, 12]) == [0, 1, 2, 3, 0, 1]
    assert match_windows([15, 7], [4, 15]) == [1, -1]


def _capture_trace(path: Path, ops: list[str]) -> None:
    b = TraceBuilder()
    b.add(ph="X", cat="cuda_runtime", name="cudaStreamBeginCapture", pid=b.pid, tid=b.tid, ts=0, dur=1,
          args={"correlation": 1})
    for i, name in enumerate(ops):
        b.op(name, ts=10 + 20 * i, dur=10)
        b.add(ph="X", cat="cuda_runtime", name="cudaLaunchKernel", pid=b.pid, tid=b.tid, ts=12 + 20 * i, dur=2,
              args={"correlation": 10 + i})
    b.add(ph="X", cat="cuda_runtime", name="cudaStreamEndCapture", pid=b.pid, tid=b.tid, ts=10 + 20 * len(ops),
          dur=1, args={"correlation": 2})
    path.parent.mkdir(parents=True, exist_ok=True)
    b.write(path)


def test_capture_trace_names_each_node_by_its_op(tmp_path: Path) -> None:
    """The capture window launches 20 kernels, inside aten::op0 … aten::op19 in that order: replayed
    node i is named aten::op<i>; the eager sgemm keeps no capture op."""
    _capture_trace(tmp_path / "capture_traces" / "graph_capture_rank_0.1.pt.trace.json",
                   [f"aten::op{i}" for i in range(20)])
    b = TraceBuilder()
    graph_scene(b)
    b.write(tmp_path / "replay.json")
    import stepscope

    trace = stepscope.load(tmp_path / "replay.json", use_cache=False)
    ev = trace.events
    got = {trace.strings[int(ev["name"][i])]: trace.strings[int(ev["capture_op"][i])] if ev["capture_op"][i] >= 0
           else None for i in range(len(ev)) if ev["kind"][i] == EventKind.KERNEL}
    assert got == {**{f"k{i}": f"aten::op{i}" for i in range(20)}, "sgemm": None}
    r = compute_graphs(trace, 0)
    assert r.has_capture and r.captured_pct == 100.0 and int(r.launches.captured_nodes[0]) == 20
    assert r.captured.top(1) == [("aten::op0", 1, 5.0 * US)]
    assert r.captured_top(1) == [("aten::op0", 1, 1, 5.0 * US)]
    diag = {d.name: d for d in trace.diagnostics}["graph-capture-merged"]
    assert diag.severity == "info" and diag.example.startswith("1 of 1 graph launches matched")


def test_one_capture_op_of_several_kernels_is_one_call(tmp_path: Path) -> None:
    """Capture: aten::a launches 2 kernels, aten::b 1, aten::a again 1 (4 nodes); replayed twice.
    aten::a: 2 calls per replay → 4 calls, 6 kernels; aten::b: 2 calls, 2 kernels."""
    b = TraceBuilder()
    b.add(ph="X", cat="cuda_runtime", name="cudaStreamBeginCapture", pid=b.pid, tid=b.tid, ts=0, dur=1,
          args={"correlation": 1})
    for i, (name, n) in enumerate((("aten::a", 2), ("aten::b", 1), ("aten::a", 1))):
        b.op(name, ts=10 + 20 * i, dur=10)
        for j in range(n):
            b.add(ph="X", cat="cuda_runtime", name="cudaLaunchKernel", pid=b.pid, tid=b.tid, ts=11 + 20 * i + 3 * j,
                  dur=2, args={"correlation": 10 + 3 * i + j})
    b.add(ph="X", cat="cuda_runtime", name="cudaStreamEndCapture", pid=b.pid, tid=b.tid, ts=90, dur=1,
          args={"correlation": 2})
    (tmp_path / "capture_traces").mkdir()
    b.write(tmp_path / "capture_traces" / "graph_capture_rank_0.1.pt.trace.json")
    r0 = TraceBuilder()
    r0.step(1, ts=0, dur=400)
    for k, corr in enumerate((501, 502)):
        r0.add(ph="X", cat="cuda_runtime", name="cudaGraphLaunch", pid=r0.pid, tid=r0.tid, ts=10 + 100 * k, dur=5,
               args={"correlation": corr})
        for i in range(4):
            r0.gpu(f"n{i}", ts=50 + 100 * k + 10 * i, dur=5, corr=corr)
    r0.write(tmp_path / "replay.json")
    import stepscope

    r = compute_graphs(stepscope.load(tmp_path / "replay.json", use_cache=False), 0)
    assert r.captured_top(5) == [("aten::a", 4, 6, 30.0 * US), ("aten::b", 2, 2, 10.0 * US)]


def test_capture_window_of_another_size_is_not_matched(tmp_path: Path) -> None:
    """A capture of 3 nodes cannot be this 20-node graph: no node is named, and a warning says so."""
    _capture_trace(tmp_path / "capture_traces" / "graph_capture_rank_0.1.pt.trace.json", ["a", "b", "c"])
    b = TraceBuilder()
    graph_scene(b)
    b.write(tmp_path / "replay.json")
    import stepscope

    trace = stepscope.load(tmp_path / "replay.json", use_cache=False)
    assert int((trace.events["capture_op"] >= 0).sum()) == 0
    diag = {d.name: d for d in trace.diagnostics}["graph-capture-merged"]
    assert diag.severity == "warning" and diag.example.startswith("0 of 1")


def test_categories_read_the_capture_time_op(tmp_path: Path) -> None:
    """The 20 graph kernels (names k0…k19, no family) were launched by aten::mm at capture: GEMM, with
    the eager sgemm (under aten::mm too): 21 activities, 120 µs. Without the capture trace they take
    the runner op around the replay call, which names no family: 'other' by kernel name, only the
    sgemm is GEMM. Nothing is unattributed either way."""
    from stepscope.analysis.categories import compute_categories

    b = TraceBuilder()
    graph_scene(b)
    b.write(tmp_path / "replay.json")
    import stepscope

    bare = compute_categories(stepscope.load(tmp_path / "replay.json", use_cache=False), 0)
    before = dict(zip(bare.table.category.tolist(), zip(bare.table.activities.tolist(), bare.table.time_ns.tolist())))
    assert (before["GEMM"], before["other"], bare.unattributed_ns) == ((1, 20 * US), (20, 100 * US), 0)
    _capture_trace(tmp_path / "capture_traces" / "graph_capture_rank_0.1.pt.trace.json", ["aten::mm"] * 20)
    view = compute_categories(stepscope.load(tmp_path / "replay.json", use_cache=False), 0)
    row = dict(zip(view.table.category.tolist(), zip(view.table.activities.tolist(), view.table.time_ns.tolist())))
    assert (row["GEMM"], row["other"], view.unattributed_ns) == ((21, 120 * US), (0, 0), 0)


def test_capture_files_serve_the_rank_their_name_gives(tmp_path: Path) -> None:
    """Rank 1's capture (ops r1::op<i>) names rank 1's graph; rank 0's file has another node count, so
    rank 0's graph (20 nodes) stays unnamed: 1 of 2 launches matched."""
    from stepscope.ingest.capture import capture_rank
    from tests.builders import load_ranks

    assert (capture_rank("graph_capture_rank_3.17.pt.trace.json.gz"), capture_rank("capture.json")) == (3, None)
    run = tmp_path / "run"
    _capture_trace(run / "capture_traces" / "graph_capture_rank_0.1.pt.trace.json", ["a", "b"])
    _capture_trace(run / "capture_traces" / "graph_capture_rank_1.1.pt.trace.json", [f"r1::op{i}" for i in range(20)])
    builders = [TraceBuilder(rank=r, world_size=2) for r in (0, 1)]
    for b in builders:
        graph_scene(b)
    trace = load_ranks(builders, tmp_path)
    ev = trace.events
    named = {(int(ev["rank"][i]), trace.strings[int(ev["capture_op"][i])]) for i in range(len(ev))
             if ev["capture_op"][i] >= 0}
    assert named == {(1, f"r1::op{i}") for i in range(20)}
    diag = {d.name: d for d in trace.diagnostics}["graph-capture-merged"]
    assert diag.severity == "warning" and diag.example.startswith("1 of 2")


def test_kernels_launched_before_the_host_trace_are_told_apart(tmp_path: Path) -> None:
    """The H200 captures' case: the profiler's active window delivers kernels launched in its
    warm-up, with correlation ids below every call in the trace (a whole graph launch's nodes
    among them). Three such kernels (corr 100) are 'launched before the trace'; one whose corr
    (900) is above the calls' (555, and sgemm's) but matches none is unattributed."""
    b = TraceBuilder()
    graph_scene(b)
    for i in range(3):
        b.gpu(f"early{i}", ts=1 + i, dur=1, corr=100)
    b.gpu("lost", ts=350, dur=5, corr=900)
    r = compute_graphs(b.load(tmp_path), 0)
    assert (r.gpu_activities, r.unattributed, r.before_trace) == (25, 1, 3)
