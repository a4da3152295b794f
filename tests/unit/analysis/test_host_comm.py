"""A CPU-only rank's collectives on gloo's worker threads hold its step only where the loop's thread
runs no op of its own (stepscope/analysis/host_comm.py; µs throughout, hand-computed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.advisor.engine import run_advisor
from stepscope.analysis.bundle import analyze
from stepscope.analysis.critical_path import HOST_PARTS, PARTS, compute_critical_path
from stepscope.analysis.host_comm import collectives_on_path, loop_threads
from stepscope.analysis.sync import driver_rows
from stepscope.analysis.whatif.graph import step_graph
from stepscope.analysis.whatif.simulate import simulate
from stepscope.analysis.whatif.transforms import OverlapComm
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder, load_ranks

GLOO = 200  # a gloo worker thread


def ddp_like_step(tmp_path: Path, blocking_on_loop: bool = False) -> Trace:
    """One 10 ms step on the loop's thread (tid 100): ``aten::mm`` 0-6000, nothing 6000-8000, ``aten::add``
    8000-10000. A ``gloo:all_reduce`` on the worker thread 4000-7000 (DDP's bucket, handed over during the
    backward); with ``blocking_on_loop`` another one on the loop's thread 8000-8500 inside ``aten::add``'s
    time instead of it (a blocking ``dist.all_reduce``: the loop's thread waits there)."""
    b = TraceBuilder(device=None)
    b.step(1, 0, 10_000)
    b.op("aten::mm", 0, 6_000)
    b.op("gloo:all_reduce", 4_000, 3_000, cat="user_annotation", tid=GLOO)
    if blocking_on_loop:
        b.op("gloo:all_reduce", 8_000, 500, cat="user_annotation")
        b.op("aten::add", 8_500, 1_500)
    else:
        b.op("aten::add", 8_000, 2_000)
    return b.load(tmp_path)


def test_a_worker_threads_collective_counts_only_beside_no_op_of_the_loop(tmp_path: Path) -> None:
    """The all-reduce runs 4000-7000; the loop's thread computes until 6000: 1000 µs of it hold the step
    (6000-7000), the other 1000 of the idle stretch are the loop's own untraced time."""
    trace = ddp_like_step(tmp_path)
    assert loop_threads(trace, 0).tolist() == [int(trace.events["track"][trace.steps["row"][0]])]
    starts, ends = collectives_on_path(trace, 0, driver_rows(trace, 0))
    assert (starts.tolist(), ends.tolist()) == ([6_000_000], [7_000_000])
    cp = compute_critical_path(trace, 0)
    assert dict(zip(PARTS, cp.parts_ns[0].tolist()))["communication"] == 1_000_000
    assert dict(zip(HOST_PARTS, cp.host_parts_ns[0].tolist()))["untraced"] == 1_000_000


def test_a_collective_on_the_loops_thread_is_a_wait_there(tmp_path: Path) -> None:
    """Both: 6000-7000 beside no op, and the loop thread's own all-reduce 8000-8500 — 1500 µs."""
    trace = ddp_like_step(tmp_path, blocking_on_loop=True)
    starts, ends = collectives_on_path(trace, 0, driver_rows(trace, 0))
    assert (starts.tolist(), ends.tolist()) == ([6_000_000, 8_000_000], [7_000_000, 8_500_000])
    cp = compute_critical_path(trace, 0)
    assert dict(zip(PARTS, cp.parts_ns[0].tolist()))["communication"] == 1_500_000


def test_overlapped_communication_is_no_finding(tmp_path: Path) -> None:
    """10 % of the step beside no op: comm-not-overlapped's gain is that 1 ms, not the 3 ms all-reduce."""
    advice = run_advisor(analyze(ddp_like_step(tmp_path)))
    assert advice.verdicts[0].bound != "communication"
    comm = [f for f in advice.findings if f.rule == "comm-not-overlapped"]
    assert all(f.est_gain_ms == pytest.approx(1.0, abs=0.01) for f in comm)


def beside_rank(rank: int) -> TraceBuilder:
    """Two ranks, one 10 ms step each: the loop's thread runs ``aten::mm`` 0-6000, waits 6000-7000, runs
    ``aten::add`` 7000-10000; the all-reduce runs on the worker thread from the rank's arrival (rank 0
    at 2000, rank 1 at 5000) to 7000 (2000 µs of transfer after the later arrival, on both)."""
    b = TraceBuilder(device=None, rank=rank, world_size=2)
    b.step(1, 0, 10_000)
    b.op("aten::mm", 0, 6_000)
    b.op("gloo:all_reduce", 2_000 if rank == 0 else 5_000, 5_000 if rank == 0 else 2_000,
         cat="user_annotation", tid=GLOO)
    b.op("aten::add", 7_000, 3_000)
    return b


def test_the_job_replay_does_not_squeeze_the_loops_work_into_a_collective_beside_it(tmp_path: Path) -> None:
    """Unchanged, every step replays to 10 ms. Communication hidden (--overlap-comm): the wait 6000-7000
    goes and so does the transfer; the all-reduce returns at the later arrival (5000), before the loop's
    ``mm`` ends, so the step is 6000 + 3000 = 9 ms on both ranks — the ``mm`` keeps its 6 ms (holding
    the loop from the all-reduce's start, 2000 on rank 0, would have cut it to end at 5000: 8 ms)."""
    trace = load_ranks([beside_rank(0), beside_rank(1)], tmp_path)
    g = step_graph(trace, 0)
    assert g.host_colls.beside.tolist() == [True]
    assert simulate(trace, []).job_steps_ns(True).tolist() == [10_000_000]
    w = simulate(trace, [OverlapComm()])
    assert [r.predicted_ns.tolist() for r in w.ranks] == [[9_000_000], [9_000_000]]
