"""What-if replay on a micro trace whose every replayed time is computed by hand (µs).

Step 1 [0,100] on one thread: DataLoader [0,40]; cudaLaunchKernel [40,42] → k1 [45,75] (found its
stream idle: latency 5, the rank's typical one); cudaLaunchKernel [42,44] → k2 [75,85] (queued
behind k1: gap 0); host work [44,50]; cudaStreamSynchronize [50,90] waits for k2 (ends 85) and
returns 5 after it; host [90,100]. Measured step: 100.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope.analysis.whatif import replay as replay_mod
from stepscope.analysis.whatif import transforms as tf
from stepscope.analysis.whatif.graph import step_graph
from stepscope.analysis.whatif.optimizer import FusedOptimizer
from stepscope.analysis.whatif.replay import Durations, replay, replay_all
from stepscope.analysis.whatif.simulate import simulate
from stepscope.analysis.whatif.streams import Streams
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder

US = 1000


@pytest.fixture
def micro(tmp_path: Path) -> Trace:
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", ts=0, dur=40)
    b.launch_kernel("k1", launch_ts=40, launch_dur=2, ts=45, dur=30)
    b.launch_kernel("k2", launch_ts=42, launch_dur=2, ts=75, dur=10)
    b.add(ph="X", cat=b.RUNTIME_CAT, name="cudaStreamSynchronize", pid=b.pid, tid=b.tid, ts=50, dur=40, args={})
    return b.load(tmp_path)


def _steps_us(trace: Trace, *changes: tf.Transform) -> list[int]:
    return (simulate(trace, changes).ranks[0].predicted_ns // US).tolist()


def test_graph_edges_are_measured(micro: Trace) -> None:
    g = step_graph(micro, 0)
    assert (g.device.latency_ns // US).tolist() == [5, 5]  # k1 measured; k2 queued: the typical 5
    assert (g.device.gap_ns // US).tolist() == [0, 0]
    assert (g.syncs.tail_ns // US).tolist() == [5]
    assert (g.host.t_ns // US).tolist() == [0, 40, 42, 44, 50, 90, 100]


def test_identity_replay_gives_back_every_measured_time(micro: Trace) -> None:
    g = step_graph(micro, 0)
    rp = replay(g, Durations.measured(g))
    assert (rp.device_start_ns // US).tolist() == [45, 75]
    assert (rp.host_t_ns // US).tolist() == [0, 40, 42, 44, 50, 90, 100]
    assert (rp.step_ns // US).tolist() == [100]


def test_workers_hide_the_loader_and_the_sync_then_waits_for_the_device(micro: Trace) -> None:
    """fetch 40 / 2 workers = 20 < the rest of the step (60): no wait. The host runs 40 earlier: k1
    ready at 0 + 5 → [5,35], k2 queued → [35,45]; the sync, called at 10, returns at 45 + 5 = 50 (it
    now waits 35 where it waited 35 before: the device moved with the host); host 10 more: 60."""
    assert _steps_us(micro, tf.LoaderWorkers(2)) == [60]


def test_one_worker_hides_a_fetch_shorter_than_the_rest_of_the_step(micro: Trace) -> None:
    """One worker already hides a fetch (40) shorter than the rest of the step (60): max(0, 40 − 60) = 0."""
    assert _steps_us(micro, tf.LoaderWorkers(1)) == [60]


def test_dropping_the_sync_leaves_the_device_as_the_end(micro: Trace) -> None:
    """The sync costs only its tail 5: the host ends at 50 + 5 + 10 = 65; the device still ends at 85."""
    assert _steps_us(micro, tf.DropSyncs()) == [85]


def test_graph_capture_keeps_the_loader_and_the_sync(micro: Trace) -> None:
    """Launch calls and host work cost nothing: both kernels are launched at 40 (k1 [45,75], k2 queued
    [75,85]), the sync returns at 90, nothing follows: 90."""
    assert _steps_us(micro, tf.HostOverhead(0.0)) == [90]


def test_a_faster_kernel_moves_its_successor_and_the_sync(micro: Trace) -> None:
    """k1 takes 15: [45,60]; k2 [60,70]; the sync returns at 75; host 10 more: 85."""
    assert _steps_us(micro, tf.ScaleDevice(tf.Select("^k1$"), 0.5)) == [85]


def test_changes_combine_and_do_not_simply_add(micro: Trace) -> None:
    """Workers alone save 40, dropping the sync alone 15; together the host ends at 10 + 5 + 10 = 25
    but the device at 45 (k1 [5,35], k2 [35,45]): the step is 45, a saving of 55 — bounded by the
    device, not the sum of the two."""
    assert _steps_us(micro, tf.LoaderWorkers(2), tf.DropSyncs()) == [45]


def test_variants_replayed_in_lockstep_are_each_ones_replay(micro: Trace) -> None:
    """Five durations of the graph in one pass: the hand-computed steps of the tests above (workers 60,
    sync dropped 85, graph capture 90, k1 halved 85, unchanged 100), every time equal to its own replay."""
    g = step_graph(micro, 0)
    base = Durations.measured(g)
    changes = [tf.LoaderWorkers(2), tf.DropSyncs(), tf.HostOverhead(0.0), tf.ScaleDevice(tf.Select("^k1$"), 0.5)]
    durs = [c.change(micro, g, base) for c in changes] + [base]
    together = replay_all(g, durs)
    assert [int(r.step_ns[0]) // US for r in together] == [60, 85, 90, 85, 100]
    for d, r in zip(durs, together):
        one = replay(g, d)
        for f in ("host_t_ns", "device_start_ns", "device_end_ns", "start_ns", "end_ns"):
            assert np.array_equal(getattr(r, f), getattr(one, f))


def test_variants_that_would_diverge_are_replayed_one_by_one(micro: Trace, monkeypatch: pytest.MonkeyPatch) -> None:
    """A blocking call dropped in one variant and waiting in another for work not timed yet: the
    lockstep refuses (Diverged) and each variant is replayed alone, with its own answer."""
    g = step_graph(micro, 0)
    base = Durations.measured(g)
    streams = Streams(g, np.stack([base.device_ns, base.device_ns]))  # nothing timed yet
    called = np.array([50 * US, 50 * US])
    with pytest.raises(replay_mod.Diverged):
        replay_mod._return_time(g, np.array([True, False]), streams, 0, called)
    assert replay_mod._return_time(g, np.array([False, False]), streams, 0, called) is None
    assert (replay_mod._return_time(g, np.array([True, True]), streams, 0, called) // US).tolist() == [55, 55]
    lockstep = replay_mod.RankRun.run

    def diverging(self: replay_mod.RankRun) -> bool:
        if self.n > 1:
            raise replay_mod.Diverged
        return lockstep(self)
    monkeypatch.setattr(replay_mod.RankRun, "run", diverging)
    durs = [tf.DropSyncs().change(micro, g, base), base]
    assert [int(r.step_ns[0]) // US for r in replay_all(g, durs)] == [85, 100]


def test_the_replayed_trace_reads_as_the_prediction(micro: Trace) -> None:
    """The critical path of the replayed trace has the predicted step and a new bound."""
    w = simulate(micro, [tf.LoaderWorkers(2)])
    r = w.ranks[0]
    assert (r.after.step_ns // US).tolist() == (r.predicted_ns // US).tolist() == [60]
    assert w.bound(False) == "input"
    assert r.after.parts_ns[0, 3] == 0  # no input time left
    assert np.isclose(w.saved_ns(), 40 * US)


@pytest.fixture
def cpu_micro(tmp_path: Path) -> Trace:
    """A CPU step (no device, no runtime calls): the host chain's only points are the step marker
    and the DataLoader call, so one segment [40,100] holds the forward [40,60], untraced Python
    [60,70], the optimizer [70,90] and more Python [90,100]."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", ts=0, dur=40)
    b.op("aten::linear", ts=40, dur=20)
    b.op("Optimizer.step#Adam.step", ts=70, dur=20)
    b.op("aten::add_", ts=72, dur=5)
    return b.load(tmp_path)


def test_host_in_ops_scales_only_the_matching_part_of_a_segment(cpu_micro: Trace) -> None:
    """The optimizer is 20 of the 60 segment [40,100]: × 0.5 saves 10 (step 90), × 0 saves 20 (step
    80). The forward and the Python around it keep their time, and the DataLoader is kept. After all
    host work is halved (60 → 30: every op matches ``.``, the step marker too), removing the optimizer
    removes its half, 10 → 20: step 60. Everywhere (a CUDA graph) changes nothing on a CPU-only rank:
    nothing is launched, its host work is the model's own ops."""
    opt = tf.Select(r"^Optimizer\.step")
    assert _steps_us(cpu_micro, tf.HostOverhead(0.5, opt)) == [90]
    assert _steps_us(cpu_micro, tf.HostOverhead(0.0, opt)) == [80]
    assert _steps_us(cpu_micro, tf.HostOverhead(0.5, tf.Select(".")), tf.HostOverhead(0.0, opt)) == [60]
    assert _steps_us(cpu_micro, tf.HostOverhead(0.0)) == [100]


def test_a_sync_with_no_device_work_waits_for_nothing(tmp_path: Path) -> None:
    """Fuzzing (issue 21): a rank with a step and a sync call but no GPU activity raised IndexError
    in ``graph._syncs`` (``device.end_ns[0]`` of an empty array). The call waited for nothing: its
    tail is its whole length, 40, and the identity replay gives the measured step, 100."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.add(ph="X", cat=b.RUNTIME_CAT, name="cudaStreamSynchronize", pid=b.pid, tid=b.tid, ts=50, dur=40, args={})
    g = step_graph(b.load(tmp_path), 0)
    assert (g.syncs.tail_ns // US).tolist() == [40]
    assert (replay(g, Durations.measured(g)).step_ns // US).tolist() == [100]


def test_device_work_without_host_points_keeps_its_measured_times(tmp_path: Path) -> None:
    """Fuzzing (issue 21): a kernel whose launch call lost its runtime category (no host point at
    all) raised IndexError in ``replay._scan`` (``host_t[0]`` of an empty array). Nothing traced
    launched it: it keeps its measured start and length, 30."""
    b = TraceBuilder()
    rt, _k = b.launch_kernel("k1", launch_ts=10, launch_dur=2, ts=20, dur=30)
    b.events.remove(rt)  # no host event at all
    g = step_graph(b.load(tmp_path, "bare.json"), 0)
    assert len(g.host.t_ns) == 0
    rp = replay(g, Durations.measured(g))
    assert (rp.device_start_ns // US).tolist() == [20]
    assert (rp.step_ns // US).tolist() == [30]
    # the launch call read as an op: a host op, not a launch; the window runs from it (10) to the
    # kernel's end (50), as the step breakdown draws it, and the kernel keeps its measured start
    rt["cat"] = b.OP_CAT
    b.events.append(rt)
    g = step_graph(b.load(tmp_path, "as_op.json"), 0)
    assert (g.device.launch_pt == -1).all()
    rp = replay(g, Durations.measured(g))
    assert (rp.device_start_ns // US).tolist() == [20]
    assert (rp.step_ns // US).tolist() == [40] == ((g.steps.measured_end_ns - g.steps.measured_start_ns) // US).tolist()


def test_a_sync_of_no_length_at_the_first_host_point_replays(tmp_path: Path) -> None:
    """Fuzzing (issue 21): a sync call lasting 0 at the first host point (start and end point 0)
    sliced ``seg[0:-1]`` (all segments but the last) into an empty range: ValueError. It returns
    where it was called; the identity replay gives back the measured step, 100."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.add(ph="X", cat=b.RUNTIME_CAT, name="cudaStreamSynchronize", pid=b.pid, tid=b.tid, ts=0, dur=0, args={})
    b.launch_kernel("k1", launch_ts=40, launch_dur=2, ts=45, dur=30)
    g = step_graph(b.load(tmp_path), 0)
    assert g.syncs.start_pt.tolist() == [0] and g.syncs.end_pt.tolist() == [0]
    rp = replay(g, Durations.measured(g))
    assert (rp.step_ns // US).tolist() == [100]
    assert (rp.device_start_ns // US).tolist() == [45]


def test_fused_optimizer_scales_the_optimizer_host_work_and_its_kernels(tmp_path: Path) -> None:
    """Step [0,100]: Optimizer.step#Adam.step [10,30] launches k [20,80] at [12,14] (latency 8);
    cudaStreamSynchronize [30,85] waits for k (returns 5 after it); host [85,100]. A third of the
    optimizer's host work: 2 of the segment [0,12] → 2/3, the launch 2 → 2/3, [14,30] 16 → 16/3, so
    the launch starts at 10.667 and the sync is called at 16.667; k (60 → 20) runs [18.667, 38.667];
    the sync returns at 43.667 and the step ends 15 later: 58.667. The host part alone (``--host-in``)
    leaves k at 60 µs: the step ends at 98.667."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.op("Optimizer.step#Adam.step", ts=10, dur=20)
    b.launch_kernel("k", launch_ts=12, launch_dur=2, ts=20, dur=60)
    b.add(ph="X", cat=b.RUNTIME_CAT, name="cudaStreamSynchronize", pid=b.pid, tid=b.tid, ts=30, dur=55, args={})
    trace = b.load(tmp_path)
    fused = simulate(trace, [FusedOptimizer()]).ranks[0].predicted_ns
    host_only = simulate(trace, [tf.HostOverhead(1 / 3, tf.Select(r"^Optimizer\.step"))]).ranks[0].predicted_ns
    assert fused.tolist() == pytest.approx([58_667], abs=2)
    assert host_only.tolist() == pytest.approx([98_667], abs=2)


def test_graph_capture_keeps_the_cpu_ops_that_launch_nothing(tmp_path: Path) -> None:
    """Step [0,100]: a top-level CPU op [10,50] launches nothing (an SVD of a CPU tensor); aten::mm
    [50,60] launches k [60,70] at [52,54] (latency 8). Host work × 0 (CUDA graphs) keeps the CPU op's
    40: the segment [0,52] becomes 40, the launch and the rest 0, so k runs [48,58] and the step ends
    there, 58 (removing the CPU op too would give 18: a graph captures device work only)."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.op("aten::linalg_svdvals", ts=10, dur=40)
    b.op("aten::mm", ts=50, dur=10)
    b.launch_kernel("k", launch_ts=52, launch_dur=2, ts=60, dur=10)
    assert _steps_us(b.load(tmp_path), tf.HostOverhead(0.0)) == [58]


def _count_replays(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of durations each call of the remedies' ``replay_all`` replays, as it is called."""
    from stepscope.analysis.whatif import remedies as rem

    seen: list[int] = []
    real = rem.replay_all

    def counting(g, durs):  # type: ignore[no-untyped-def]
        seen.append(len(durs))
        return real(g, durs)

    monkeypatch.setattr(rem, "replay_all", counting)
    return seen


def test_a_remedy_that_changes_nothing_is_not_replayed(micro: Trace, monkeypatch: pytest.MonkeyPatch) -> None:
    """The micro step has a DataLoader, a sync, launches and host time between its ops but no copy and
    no optimizer: pinned copies and a fused optimizer change no duration, so only the other four
    (workers, drop-syncs, graph capture, move-loop-code) are replayed, and the two predict the measured
    step (100), saving nothing. (Its few ops cost the profiler more than a
    tenth of its 100 µs: the replay without that cost, and its remedies, are left out here.)"""
    from stepscope.analysis import profiler_cost
    from stepscope.analysis.whatif import remedies as rem

    monkeypatch.setattr(profiler_cost, "MIN_COST_SHARE", float("inf"))
    seen = _count_replays(monkeypatch)
    r = rem.compute_remedies(micro, 0)
    assert seen == [4]
    for name in ("pinned-copies", "fused-optimizer"):
        assert r.predicted_mean_ns[r.name.index(name)] == 100 * US and r.saved_ns(name) == 0
    assert r.saved_ns("loader-workers") > 0 and r.saved_ns("graph-capture") > 0


def test_keep_allocations_drops_the_frees_wait_and_the_mallocs_time(tmp_path: Path) -> None:
    """Step [0,100]: k1 launched at [10,12] runs [15,75]; cudaFree [20,80] waits for it (returns 5
    after it: its own cost); cudaMalloc [80,90]; k2 launched at [90,92] runs [95,100]. With the
    allocator keeping its blocks the free costs its own 5 and the malloc nothing: k2 is launched at
    [25,27], queued behind k1, runs [75,80]; the host is done at 35: the step ends with k2, at 80."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.launch_kernel("k1", launch_ts=10, launch_dur=2, ts=15, dur=60)
    b.add(ph="X", cat=b.RUNTIME_CAT, name="cudaFree", pid=b.pid, tid=b.tid, ts=20, dur=60, args={})
    b.add(ph="X", cat=b.RUNTIME_CAT, name="cudaMalloc", pid=b.pid, tid=b.tid, ts=80, dur=10, args={})
    b.launch_kernel("k2", launch_ts=90, launch_dur=2, ts=95, dur=5)
    trace = b.load(tmp_path)
    assert _steps_us(trace, tf.KeepAllocations()) == [80]


def test_work_launched_before_the_trace_keeps_its_gaps(tmp_path: Path) -> None:
    """The device ran behind the host: k0 [0,20] and k1 [25,45] were launched before the trace began
    (no launch call: a GPU-bound step whose host ran ahead during the profiler's warm-up); k2,
    launched at [30,32], queued behind k1 and started 5 after it, at 50. The identity replay gives
    back 0, 25, 50 and the measured step, 55 (from the end of the earlier work at 45, as the step
    breakdown draws it). k1's 5 µs gap was dropped (0, 20, 45); on an H200 trace whose first step's
    work was all launched before the window, the drift moved that step's start 9.7 ms."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.gpu("k0", 0, 20)
    b.gpu("k1", 25, 20)
    b.launch_kernel("k2", launch_ts=30, launch_dur=2, ts=50, dur=10)
    g = step_graph(b.load(tmp_path), 0)
    rp = replay(g, Durations.measured(g))
    assert (rp.device_start_ns // US).tolist() == [0, 25, 50]
    assert (rp.step_ns // US).tolist() == [55]


def test_batching_small_copies_removes_the_ops_that_make_them_not_the_model(tmp_path: Path) -> None:
    """A step [0,100] µs: ``model_inference`` [2,80] runs the model (a kernel launched at 50) and,
    inside it, an ``aten::to`` [10,20] that makes a small copy; a top-level ``aten::to`` [82,92]
    makes another. Made as one, the two ``aten::to`` take no host time (20 µs): step 80. The whole
    ``model_inference`` had been removed with them (SD 3.5: 1,195 -> 717 ms for 7 copies of 0.02 ms)."""
    from stepscope.analysis.host_ops import copy_only_ops_of
    from stepscope.model.schema import EventKind

    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.op("model_inference", ts=2, dur=78)
    b.op("aten::to", ts=10, dur=10)
    b.launch_kernel("Memcpy HtoD (Pinned -> Device)", 12, 2, 15, 1, runtime="cudaMemcpyAsync",
                    cat="gpu_memcpy", bytes=1000)
    b.launch_kernel("gemm", 50, 2, 52, 26)
    b.op("aten::to", ts=82, dur=10)
    b.launch_kernel("Memcpy HtoD (Pinned -> Device)", 84, 2, 87, 1, runtime="cudaMemcpyAsync",
                    cat="gpu_memcpy", bytes=1000)
    trace = b.load(tmp_path)
    ev = trace.events
    copies = np.flatnonzero(ev["kind"] == EventKind.MEMCPY)
    ops = copy_only_ops_of(trace, 0, ev["launch"][copies])
    assert sorted(trace.strings[int(n)] for n in ev["name"][ops]) == ["aten::to", "aten::to"]
    assert (ev["ts_ns"][ops] // US).tolist() == [10, 82]
    assert _steps_us(trace, tf.BatchSmallCopies()) == [80]


def test_on_the_step_without_the_profilers_cost_only_the_changing_remedies_are_replayed(
        micro: Trace, monkeypatch: pytest.MonkeyPatch) -> None:
    """The micro step's ops cost the profiler more than a tenth of it: the remedies are replayed a second
    time on the step without that cost — again only the four that change something."""
    from stepscope.analysis.whatif import remedies as rem

    seen = _count_replays(monkeypatch)
    r = rem.compute_remedies(micro, 0)
    assert seen == [4, 4]
    assert r.unprofiled_predicted_ns is not None and r.unprofiled_mean_ns is not None
    for name in ("pinned-copies", "fused-optimizer"):
        assert r.unprofiled_saved_ns(name) == 0


def test_instants_far_outside_the_host_chain_move_rigidly_without_overflow() -> None:
    """An instant 2^62 ns past the chain (a mutated trace's step end) takes the chain's last shift; its
    interpolation inside a segment is not computed from it (that overflowed and numpy warned on stderr: the
    fuzz harness's one noisy whatif)."""
    import warnings

    from stepscope.analysis.whatif.simulate import _map_host

    t = np.array([0, 100, 200], np.int64)
    tp = np.array([0, 50, 250], np.int64)  # the last segment twice as long: 2^62 x 2 overflows int64
    x = np.array([-(1 << 62), 50, 150, 1 << 62], np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = _map_host(t, tp, x)
    assert out.tolist() == [-(1 << 62), 25, 150, (1 << 62) + 50]
