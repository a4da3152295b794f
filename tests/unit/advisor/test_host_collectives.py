"""A GPU rank whose collectives run on the host (DDP over gloo): the device waits for the host to
finish communicating, not for its launches. That time is communication — the verdict's, and
``comm-not-overlapped``'s with NCCL as the change — not ``launch-bound``'s, and the stream
synchronisations gloo makes inside its all-reduce are not the step's syncs (an H200 capture,
``tests/data/h200_bounds/r6/gloo_ddp``, had "launch-bound: less Python per step" first)."""

from __future__ import annotations

from pathlib import Path

from stepscope.advisor.engine import run_advisor
from stepscope.analysis.bundle import analyze
from stepscope.analysis.idle import compute_idle
from stepscope.analysis.sync import compute_sync
from stepscope.analysis.whatif.simulate import simulate
from stepscope.analysis.whatif.transforms import DropSyncs, HostOverhead, OverlapComm, Transform
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder

GLOO = 200  # the gloo worker thread


def gloo_step(tmp_path: Path) -> Trace:
    """One 100 µs step (µs throughout). Main thread: kernel ``fwd`` launched at 0, runs 2-20; ``opt``
    launched at 84, runs 87-98. Gloo thread: ``gloo:all_reduce`` 22-82 — it launches the D2H copy at
    23 (runs 25-30), waits for it in ``cudaStreamSynchronize`` 24-31, reduces on the CPU, and launches
    the H2D copy at 78 (runs 80-84). The GPU waits for the host 20-25 (3 of it inside the collective)
    and 30-80 (all inside); at 84 ``opt`` is launched as the gap begins (84-87 is the launch latency)."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.launch_kernel("fwd", 0, 1, 2, 18)
    b.op("gloo:all_reduce", 22, 60, cat="user_annotation", tid=GLOO)
    b.launch_kernel("Memcpy DtoH (Device -> Pinned)", 23, 1, 25, 5, runtime="cudaMemcpyAsync",
                    cat="gpu_memcpy", stream=20, tid=GLOO)
    b.op("cudaStreamSynchronize", 24, 7, cat="cuda_runtime", tid=GLOO)
    b.launch_kernel("Memcpy HtoD (Pinned -> Device)", 78, 1, 80, 4, runtime="cudaMemcpyAsync",
                    cat="gpu_memcpy", stream=20, tid=GLOO)
    b.launch_kernel("opt", 84, 2, 87, 11)
    return b.load(tmp_path)


def test_the_devices_wait_inside_a_host_collective_is_told_apart(tmp_path: Path) -> None:
    idle = compute_idle(gloo_step(tmp_path), 0)
    assert idle.host_wait_ns.tolist() == [55_000]  # 5 + 50
    assert idle.host_wait_in_comm_ns.tolist() == [53_000]  # 3 + 50
    assert idle.host_wait_in_dataloader_ns.tolist() == [0]


def test_a_collectives_own_sync_is_not_the_steps(tmp_path: Path) -> None:
    sync = compute_sync(gloo_step(tmp_path), 0)
    assert sync.sync_count.tolist() == [0]
    assert sync.d2h_count.tolist() == [0]  # the D2H copy is the collective's too


def test_communication_bounds_the_step_and_nccl_is_the_change(tmp_path: Path) -> None:
    advice = run_advisor(analyze(gloo_step(tmp_path)))
    assert advice.verdicts[0].bound == "communication"
    rules = [f.rule for f in advice.findings]
    assert "launch-bound" not in rules and "sync-in-step" not in rules, rules  # 5 µs of 100 outside
    comm = advice.findings[0]
    assert comm.rule == "comm-not-overlapped" and comm.change.key == "use-nccl"
    # the host inside the collective (22-82) less the copies the path runs through (25-30, 80-82)
    assert comm.est_gain_ns == 53_000
    assert comm.evidence["backend"] == "gloo"  # from the op's name: no distributedInfo here


def test_the_replay_keeps_the_collective_and_overlap_removes_it(tmp_path: Path) -> None:
    """Graph capture removes launch calls and host work, not the host's time in the collective:
    the step keeps it. Overlapping communication takes it off the host (and the syncs gloo makes
    inside it keep blocking: dropping every sync changes nothing)."""
    trace = gloo_step(tmp_path)

    def step_ns(change: Transform | None) -> int:
        r = simulate(trace, [change] if change is not None else [], ranks=[0]).ranks[0]
        assert r.measured_ns.tolist() == [100_000]
        return int(r.predicted_ns[0])

    assert step_ns(None) == 100_000
    # graphs remove the launches (0-1, 84-86) and the host time around the collective (1-22, 82-84):
    # 26 µs; the collective's 60 µs stay
    assert step_ns(HostOverhead(0.0)) == 74_000
    assert step_ns(DropSyncs()) == 100_000
    assert step_ns(OverlapComm()) < 50_000
