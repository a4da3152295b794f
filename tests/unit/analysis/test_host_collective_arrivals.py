"""Collectives the host runs (gloo on the CPU): matched across ranks like communication kernels, so
a CPU job's late rank is found, and the job replay ties the ranks at them.

Two ranks, 3 steps of 10 ms. Each step: the DataLoader (rank 0: 5 ms, rank 1: 1 ms), then the
model's ops (2 ms), then ``c10d::allreduce_`` queues the all-reduce (20 µs on the main thread) and
``gloo:all_reduce`` runs it on a worker thread from there until 500 µs after the later rank arrived
(rank 0 at t+7,100, rank 1 at t+3,100: rank 1 waits 4 ms), then ``Optimizer.step`` (1 ms) once it
is done."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope.advisor.engine import run_advisor
from stepscope.analysis.arrivals import compute_arrivals
from stepscope.analysis.bundle import analyze
from stepscope.analysis.collective_records import collective_records
from stepscope.analysis.whatif.graph import step_graph
from stepscope.analysis.whatif.job import job_edges, replay_job
from stepscope.analysis.whatif.replay import Durations
from stepscope.model.trace import Trace
from stepscope.report import texts
from tests.builders import TraceBuilder, load_ranks

STEP = 10_000
LOADER = {0: 5_000, 1: 1_000}


def cpu_rank(rank: int) -> TraceBuilder:
    b = TraceBuilder(rank=rank, world_size=2)
    for i in range(3):
        t = i * STEP
        b.step(i + 1, t, STEP - 100)
        b.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", ts=t + 50, dur=LOADER[rank],
             cat="user_annotation")
        arrive = t + 100 + LOADER[rank] + 2_000
        b.op("aten::addmm", ts=t + 100 + LOADER[rank], dur=2_000)
        b.op("c10d::allreduce_", ts=arrive - 10, dur=20)
        b.op("gloo:all_reduce", ts=arrive, dur=t + 7_600 - arrive, tid=2)
        b.op("Optimizer.step#SGD.step", ts=t + 7_650, dur=1_000, cat="user_annotation")
    return b


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Trace:
    return load_ranks([cpu_rank(0), cpu_rank(1)], tmp_path_factory.mktemp("cpu_job"))


def test_the_backend_ops_are_the_records(job: Trace) -> None:
    """One record per all-reduce: gloo's own op (its span is the collective), not the c10d op that queued it."""
    for r in (0, 1):
        rec = collective_records(job, r)
        assert len(rec) == 3
        starts = [i * STEP + 100 + LOADER[r] + 2_000 for i in range(3)]
        np.testing.assert_array_equal(rec.start_ns, np.array(starts) * 1_000)
        np.testing.assert_array_equal(rec.end_ns, (np.arange(3) * STEP + 7_600) * 1_000)


def test_rank_0_is_late_for_its_input_pipeline(job: Trace) -> None:
    a = compute_arrivals(job)
    assert a.culprits == (0,) and a.culprit_cause[0] == "input"
    assert a.late_ns[a.ranks.index(0)] == 3 * 4_000_000  # 4 ms at each of 3 all-reduces
    assert a.victims == (1,)


def test_the_job_replay_ties_the_host_collectives(job: Trace) -> None:
    graphs = {r: step_graph(job, r) for r in (0, 1)}
    e = job_edges(job, graphs)
    assert e is not None and (e.hact >= 0).all() and (e.act < 0).all()
    measured = {r: Durations.measured(g) for r, g in graphs.items()}
    rps = replay_job(graphs, measured, e)
    for r, g in graphs.items():  # identity: every step comes back
        np.testing.assert_array_equal(rps[r].step_ns, g.steps.measured_end_ns - g.steps.measured_start_ns)
    # rank 0's DataLoader 4 ms shorter: it arrives with rank 1, so both ranks' all-reduces end 4 ms
    # earlier in each step (the 500 µs transfer after the last arrival is kept) and every step of
    # both ranks is 4 ms shorter — rank 1's too, whose own work did not change: the k-th all-reduce
    # ends 4 k ms earlier
    d0 = graphs[0]
    seg = measured[0].host_seg_ns.copy()
    loader = d0.host.seg_input_call >= 0
    seg[loader] = seg[loader] * 1_000 // 5_000
    faster = {0: Durations(seg, measured[0].device_ns, measured[0].sync_dropped), 1: measured[1]}
    after = replay_job(graphs, faster, e)
    for r, g in graphs.items():
        hc = g.host_colls
        ends = after[r].host_t_ns[hc.end_pt] - rps[r].host_t_ns[hc.end_pt]
        np.testing.assert_array_equal(ends, np.array([-4, -8, -12]) * 1_000_000)
        np.testing.assert_array_equal(after[r].step_ns, rps[r].step_ns - 4_000_000)


def test_the_job_verdict_and_first_finding(job: Trace) -> None:
    advice = run_advisor(analyze(job))
    v = advice.verdicts[0]
    assert v.rank is None and v.bound == "imbalance" and v.ranks == (0,) and v.causes == ("input",)
    # its step is the job's (both ranks' windows are the 9.9 ms step markers), said in the JSON as the
    # job's step too (job_step_ms was null for an imbalance verdict)
    d = v.to_dict()
    assert v.step_ns == v.job_step_ns == round(compute_arrivals(job).m.job_step_ns) == 9_900_000
    assert d["avg_step_ms"] == d["job_step_ms"] == d["shares_step_ms"] == 9.9
    first = advice.findings[0]
    assert first.rule == "dataloader-bound" and first.addresses_bound  # what makes rank 0 late
    assert "straggler-rank" in [f.rule for f in advice.findings]


def test_the_waiting_ranks_verdict_says_whom_it_waits_for(job: Trace) -> None:
    """Rank 1 is bound by communication: its all-reduce 3100-7600 of each 9.9 ms step and the 10 µs of
    ``c10d::allreduce_`` before it, 4510 µs (45.6 %); 4 ms of it waiting for rank 0: 4 / 9.9 = 40.4 %."""
    r1 = run_advisor(analyze(job)).verdicts[2]
    assert r1.rank == 1 and r1.bound == "communication"
    assert round(r1.waiting_pct, 1) == 40.4 and r1.waiting_for == (0,)
    assert "; 40% of the step waiting there for rank 0 to arrive)" in texts.verdict_text(r1)
    r0 = run_advisor(analyze(job)).verdicts[1]
    assert r0.waiting_pct == 0.0 and "waiting there" not in texts.verdict_text(r0)


def test_a_host_run_collective_is_never_matched_with_a_kernel(tmp_path: Path) -> None:
    """Rank 0 all-reduces with NCCL kernels, rank 1 (its kernels missing from the capture) shows only
    gloo ops: the n-th of each is not the same collective, so nothing is matched across them."""
    from stepscope.analysis.base import NotApplicable

    nccl = TraceBuilder(rank=0, world_size=2)
    gloo = TraceBuilder(rank=1, world_size=2)
    for i in range(3):
        t = i * STEP
        for b in (nccl, gloo):
            b.step(i + 1, t, STEP - 100)
        nccl.op("nccl:all_reduce", ts=t + 100, dur=30)
        nccl.launch_kernel("ncclKernel_AllReduce_RING_LL_Sum_float", launch_ts=t + 105, launch_dur=5, ts=t + 200,
                           dur=1_000, stream=20)
        gloo.op("gloo:all_reduce", ts=t + 150, dur=1_050, tid=2)
    with pytest.raises(NotApplicable, match="no collective matched"):
        compute_arrivals(load_ranks([nccl, gloo], tmp_path))


#: two asynchronous all-reduces a step (one per DDP bucket, each on its own gloo worker thread): when
#: the rank queues them, µs after its step start (rank 1 does 6 ms more work before them)
BUCKETS = {0: (2_000, 2_500), 2: (4_000, 4_500), 1: (8_000, 8_500)}


def bucket_rank(rank: int, world: int) -> TraceBuilder:
    b = TraceBuilder(rank=rank, world_size=world)
    for i in range(2):
        t = i * STEP
        b.step(i + 1, t, STEP - 100)
        b.op("aten::addmm", ts=t + 100, dur=BUCKETS[rank][0] - 200)
        for k, arrive in enumerate(BUCKETS[rank]):  # each runs until 500 µs after rank 1 queued it
            b.op("c10d::allreduce_", ts=t + arrive - 10, dur=20)
            b.op("gloo:all_reduce", ts=t + arrive, dur=t + BUCKETS[1][k] + 500 - (t + arrive), tid=2 + k)
    return b


@pytest.mark.parametrize("world", [2, 3])
def test_a_wait_on_collectives_waiting_together_is_their_union(world: int, tmp_path: Path) -> None:
    """Rank 1 is last at both all-reduces of each step. Rank 0 waits [2000, 8000] and [2500, 8500] µs
    into the step: 6.5 ms of its 10 ms step (their union), not 12 ms (their sum, longer than the
    step). Its wait on the culprit is capped by the lateness (the second-to-last → the last arrival):
    with 2 ranks the same intervals, 6.5 ms, = rank 1's lateness; with rank 2 arriving at 4000 / 4500
    µs, [4000, 8000] ∪ [4500, 8500] = 4.5 ms, = rank 1's lateness, and rank 2 waits those 4.5 ms."""
    a = compute_arrivals(load_ranks([bucket_rank(r, world) for r in range(world)], tmp_path))
    assert a.collective_count == 4 and a.last_rank.tolist() == [1] * 4 and a.culprits == (1,)
    late = {2: 6_500, 3: 4_500}[world] * 2 * 1_000  # 2 steps
    assert a.wait_ns[:, 0].tolist() == [6_000_000] * 4  # each collective's own wait is unchanged
    wait = dict(zip(a.ranks, a.wait_total_ns.tolist()))
    on = dict(zip(a.ranks, a.wait_on_culprits_ns.tolist()))
    assert a.late_ns[1] == late and wait[0] == 2 * 6_500_000 and on[0] == late and wait[1] == on[1] == 0
    if world == 3:
        assert wait[2] == on[2] == late and a.victims == (0, 2)
