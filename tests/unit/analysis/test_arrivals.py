"""Arrivals at the collectives: culprits, victims, causes and slow links on hand-made 3-4 rank traces.

Every expected number below is worked out by hand from the planted kernel times (µs in the
builders, ns in the results)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope.advisor.engine import run_advisor
from stepscope.analysis.arrivals import CAUSES, arrivals_of, compute_arrivals, trace_records
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.bundle import analyze
from stepscope.analysis.collective_records import collective_records
from stepscope.analysis.slow_links import compute_slow_links
from stepscope.model.trace import Trace
from stepscope.report import texts
from tests.builders import TraceBuilder, kargs, load_ranks

US = 1000
NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float"
STEP = 20_000
MIB8 = 2 * 1024 * 1024  # floats: 8 MiB


def _nccl(b: TraceBuilder, launch: int, ts: int, end: int, pg: str = "0", nelems: int = MIB8,
          group: int = 4) -> None:
    b.launch_kernel(NCCL, launch_ts=launch, launch_dur=5, ts=ts, dur=end - ts, stream=20,
                    **kargs({"Process Group Name": pg, "Collective name": "allreduce", "In msg nelems": nelems,
                             "Out msg nelems": nelems, "dtype": "Float", "Group size": group}))


def planted_compute(tmp_path: Path, skew_us: int = 0, sync: bool = False) -> Trace:
    """4 ranks, 2 steps of 20 ms. Per step at T: the host launches everything at T+10..T+60; GEMM A
    runs [T+1000, T+6000+dA] (dA = 0, 50, 100, 20 µs on ranks 0-3), all-reduce 0 starts when A ends
    and ends at T+7000 everywhere; GEMM B [T+7000, T+9000]; rank 3 only runs a planted 5 ms GEMM
    [T+9000, T+14000]; all-reduce 1 starts when the GEMMs are done (T+9000, rank 3 T+14000) and ends
    at T+15000 everywhere. ``skew_us`` moves rank 2's clock (every event of its file). ``sync``: the
    host then waits for the device, cudaDeviceSynchronize [T+60, T+15005] (without it nothing in a
    step waits for the device: the host's 20 ms steps bound the job)."""
    builders = []
    for rank, d_a in enumerate((0, 50, 100, 20)):
        b = TraceBuilder(rank=rank, world_size=4)
        for s in range(2):
            t = s * STEP
            b.step(s + 1, t, STEP)
            b.launch_kernel("volta_sgemm_128x64_nn", launch_ts=t + 10, launch_dur=5, ts=t + 1000, dur=5000 + d_a)
            _nccl(b, t + 20, t + 6000 + d_a, t + 7000)
            b.launch_kernel("volta_sgemm_128x64_nn", launch_ts=t + 30, launch_dur=5, ts=t + 7000, dur=2000)
            if rank == 3:
                b.launch_kernel("volta_sgemm_planted", launch_ts=t + 40, launch_dur=5, ts=t + 9000, dur=5000)
            _nccl(b, t + 50, t + (14_000 if rank == 3 else 9000), t + 15_000)
            if sync:
                b.add(ph="X", cat=b.RUNTIME_CAT, name="cudaDeviceSynchronize", pid=b.pid, tid=b.tid, ts=t + 60,
                      dur=15_000 + 5 - 60, args={})
        if rank == 2:
            for e in b.events:
                e["ts"] += skew_us
        builders.append(b)
    return load_ranks(builders, tmp_path)


def test_the_planted_compute_makes_rank_3_the_culprit(tmp_path: Path) -> None:
    a = compute_arrivals(planted_compute(tmp_path))
    assert a.ranks == [0, 1, 2, 3] and a.collective_count == 4
    assert a.m.clock_offset_ns.tolist() == [0, 0, 0, 0]  # every collective ends at one instant
    # per step: all-reduce 0 (last rank 2, 100 after rank 1's 50), all-reduce 1 (rank 3, 14000 - 9000)
    assert a.last_rank.tolist() == [2, 3, 2, 3]
    assert a.lateness_ns.tolist() == [50 * US, 5000 * US] * 2
    assert a.wait_ns[0].tolist() == [100 * US, 50 * US, 0, 80 * US]
    assert a.wait_ns[1].tolist() == [5000 * US, 5000 * US, 5000 * US, 0]
    assert a.wait_total_ns.tolist() == [10_200 * US, 10_100 * US, 10_000 * US, 160 * US]
    assert a.late_ns.tolist() == [0, 0, 100 * US, 10_000 * US]
    assert a.times_last.tolist() == [0, 0, 2, 2]
    # rank 3's gap [T+7000, T+14000] holds 7 ms of GEMMs, rank 2's [T+7000, T+9000] 2 ms: +5 ms compute
    assert a.cause_ns[1].tolist() == [0, 5000 * US, 0, 0, 0, 0]
    assert a.cause_ns[0, CAUSES.index("compute")] == 50 * US  # rank 2's GEMM A runs 50 µs longer than rank 1's
    assert a.culprits == (3,) and a.culprit_cause == {3: "compute"}  # rank 2's 100 µs < 1 % of the job
    assert a.victims == (0, 1, 2)
    assert a.wait_on_culprits_ns.tolist() == [10_000 * US] * 3 + [0]
    assert a.in_trace_late_ns(3) == 10_000 * US
    first = a.m.arrival_ns[1, 3]
    assert a.m.enqueue_ns[1, 3] == 50 * US and first == 14_000 * US  # the launch at T+50, the start at T+14000
    assert a.spread_ns[1] == 5000 * US - 1250 * US  # 14000 - mean(9000, 9000, 9000, 14000)


def test_a_skewed_clock_is_aligned_on_the_collectives_ends(tmp_path: Path) -> None:
    """Rank 2's host clock 1.5 s ahead: its offset is found from the collectives' ends, the answer is the same."""
    a = compute_arrivals(planted_compute(tmp_path, skew_us=1_500_000))
    assert a.m.clock_offset_ns.tolist() == [0, 0, 1_500_000 * US, 0]
    assert a.last_rank.tolist() == [2, 3, 2, 3] and a.lateness_ns.tolist() == [50 * US, 5000 * US] * 2
    assert a.culprits == (3,) and a.culprit_cause == {3: "compute"} and a.victims == (0, 1, 2)


def test_records_are_enough_for_the_cross_rank_step(tmp_path: Path) -> None:
    """The map-reduce contract: the records of each rank alone give the same answer."""
    trace = planted_compute(tmp_path)
    records = tuple(collective_records(trace, r) for r in (3, 1, 0, 2))  # any order of ranks
    a, b = arrivals_of(records), compute_arrivals(trace)
    assert sorted(a.ranks) == b.ranks and a.culprits == b.culprits and a.victims == b.victims
    assert np.array_equal(np.sort(a.late_ns), np.sort(b.late_ns))
    r3 = trace_records(trace)[3]
    # step 2's first all-reduce: its gap from the previous all-reduce's end (T+15000 of step 1), across the
    # step boundary; only the rank's first collective in the trace starts its gap at its step's start
    assert r3.gap_start_ns.tolist() == [0, 7000 * US, 15_000 * US, (STEP + 7000) * US]
    assert r3.from_step_start.tolist() == [True, False, False, False]
    assert (r3.gap_parts_ns.sum(axis=1) == r3.start_ns - r3.gap_start_ns).all()  # the parts fill the gap


def test_the_advisor_names_the_culprit_and_the_job_is_imbalanced(tmp_path: Path) -> None:
    """The gain is the job replayed with rank 3 fixed: its GEMMs in the gap [T+7000, T+14000] take
    5000 less (B [7000, 7571], the planted one [7571, 9000]), it arrives at T+9000 with the others,
    all-reduce 1 ends at T+10000, the syncs return 5 ms earlier: every step 5 ms shorter."""
    advice = run_advisor(analyze(planted_compute(tmp_path, sync=True)))
    found = [f for f in advice.findings if f.rule == "straggler-rank"]
    assert [f.rank for f in found] == [3]
    f = found[0]
    assert f.est_gain_ns == 5000 * US and f.basis == "replayed"  # 10 ms of lateness over 2 steps, all saved
    assert f.evidence["whatif_measured_ms"] == 20.0 and f.evidence["whatif_predicted_ms"] == 15.0
    assert f.evidence["cause"] == "compute" and f.evidence["victims"] == [0, 1, 2]
    assert f.evidence["times_last"] == 2 and f.evidence["cause_ms"] == {"compute": 5.0}
    job = advice.verdicts[0]
    assert job.rank is None and job.bound == "imbalance"
    assert job.ranks == (3,) and job.causes == ("compute",)
    assert job.excess_pct == 25.0  # 5 of the 20 ms step
    assert texts.verdict_text(job) == ("job: bound by imbalance between ranks — rank 3 arrives late at the "
                                       "collectives (its own GPU compute); the others wait for it 25% of the "
                                       "20.0 ms step")


def late_start(tmp_path: Path) -> Trace:
    """3 ranks, one step. Rank 2's step (and all its work) starts 3 ms later than ranks 0 and 1's
    (its host began late, before the trace): GEMM A [1000, 6000] (rank 2: [4000, 9000]), all-reduce 0
    from A's end to 10000; GEMM B [10000, 12000] everywhere, all-reduce 1 [12000, 13000]."""
    builders = []
    for rank in range(3):
        b = TraceBuilder(rank=rank, world_size=3)
        d = 3000 if rank == 2 else 0
        b.step(1, d, STEP - d)
        b.launch_kernel("volta_sgemm_128x64_nn", launch_ts=d + 10, launch_dur=5, ts=d + 1000, dur=5000)
        _nccl(b, d + 20, d + 6000, 10_000, group=3)
        b.launch_kernel("volta_sgemm_128x64_nn", launch_ts=d + 30, launch_dur=5, ts=10_000, dur=2000)
        _nccl(b, d + 40, 12_000, 13_000, group=3)
        builders.append(b)
    return load_ranks(builders, tmp_path)


def test_a_late_start_is_not_an_in_trace_cause(tmp_path: Path) -> None:
    trace = late_start(tmp_path)
    a = compute_arrivals(trace)
    assert a.last_rank.tolist() == [2, -1] and a.lateness_ns.tolist() == [3000 * US, 0]
    assert a.cause_ns[0].tolist() == [3000 * US, 0, 0, 0, 0, 0]  # the same 6 ms gap, begun 3 ms later
    assert a.culprits == (2,) and a.culprit_cause == {2: "late_start"} and a.in_trace_late_ns(2) == 0
    advice = run_advisor(analyze(trace))
    assert "straggler-rank" not in {f.rule for f in advice.findings}
    assert advice.verdicts[0].bound != "imbalance"


def slow_link(tmp_path: Path) -> Trace:
    """4 ranks, one 8 MiB all-reduce each in group "0" (ranks 0-3, [1000, 2000]) and in a group of
    two: "1" = ranks 0, 1 ([3000, 4000]) and "2" = ranks 2, 3 ([3000, 7000]: 4× slower)."""
    builders = []
    for rank in range(4):
        b = TraceBuilder(rank=rank, world_size=4)
        b.step(1, 0, STEP)
        _nccl(b, 10, 1000, 2000)
        _nccl(b, 20, 3000, 4000 if rank < 2 else 7000, pg="1" if rank < 2 else "2", group=2)
        builders.append(b)
    return load_ranks(builders, tmp_path)


def test_the_planted_slow_link(tmp_path: Path) -> None:
    rows = compute_slow_links(slow_link(tmp_path)).rows
    by = {str(link): i for i, link in enumerate(rows.link)}
    assert set(by) == {"group 0 (ranks 0-3)", "group 1 (ranks 0, 1)", "group 2 (ranks 2, 3)"}
    nbytes = 8 * 1024 * 1024
    # bus bandwidth: bytes / transfer × 2(n-1)/n  (n = 4: 1.5; n = 2: 1)
    expect = {"group 0 (ranks 0-3)": nbytes / 1e6 * 1.5, "group 1 (ranks 0, 1)": nbytes / 1e6,
              "group 2 (ranks 2, 3)": nbytes / 4e6}
    for link, bw in expect.items():
        assert rows.bandwidth_gbps[by[link]] == pytest.approx(bw)
        assert rows.class_median_gbps[by[link]] == pytest.approx(nbytes / 1e6)
    assert rows.time_ns[by["group 2 (ranks 2, 3)"]] == 4000 * US and rows.bytes[by["group 2 (ranks 2, 3)"]] == nbytes
    assert [str(x) for x in compute_slow_links(slow_link(tmp_path)).slow.link] == ["group 2 (ranks 2, 3)"]


def test_no_slow_link_among_equals_and_one_rank_is_not_a_cluster(tmp_path: Path) -> None:
    rows = compute_slow_links(planted_compute(tmp_path)).rows
    assert not rows.slow.any()  # one group: nothing to compare with (a late rank is not a slow link)
    b = TraceBuilder()
    b.step(1, 0, 10)
    with pytest.raises(NotApplicable):
        compute_arrivals(b.load(tmp_path))


def test_the_job_verdict_is_the_waited_for_rank_not_the_longest_window(tmp_path: Path) -> None:
    # ranks 0 and 1 have the longest windows (20 ms, started 3 ms before rank 2) but spend those 3 ms
    # waiting for rank 2 at all-reduce 0; rank 2 waits for no one: the job's step is set by rank 2
    trace = late_start(tmp_path)
    a = compute_arrivals(trace)
    assert a.wait_total_ns.tolist() == [3000 * US, 3000 * US, 0]
    advice = run_advisor(analyze(trace))
    job = advice.verdicts[0]
    assert job.rank is None and job.ranks == (2,) and job.set_by == "waited-for"
    rank2 = next(v for v in advice.verdicts if v.rank == 2)
    assert job.bound == rank2.bound and rank2.step_ns == 17_000 * US
    # its step is the job's (ranks 0 and 1's 20 ms windows: the job's one step, as the arrivals and the
    # job replay state it), its shares rank 2's of its own 17 ms window, said apart
    assert job.step_ns == job.job_step_ns == round(a.m.job_step_ns) == 20_000 * US
    assert (job.shares_rank, job.shares_step_ns, job.shares_pct) == (2, 17_000 * US, rank2.shares_pct)
    d = job.to_dict()
    assert (d["avg_step_ms"], d["job_step_ms"], d["shares_rank"], d["shares_step_ms"]) == (20.0, 20.0, 2, 17.0)
    assert "(the 20.0 ms step), set by rank 2, the rank the others wait for" in texts.verdict_text(job)
    assert "of its own 17.0 ms step" in texts.verdict_text(job)


def test_a_culprit_nobody_needs_earlier_saves_nothing(tmp_path: Path) -> None:
    """Without the syncs nothing in a step waits for the device: the host's 20 ms steps bound the
    job, and the replay with rank 3 fixed saves nothing, though it is 5 ms late per step."""
    advice = run_advisor(analyze(planted_compute(tmp_path)))
    f = next(f for f in advice.findings if f.rule == "straggler-rank")
    assert f.rank == 3 and f.evidence["late_ms"] == 5.0
    assert f.est_gain_ns == 0 and f.basis == "replayed" and f.evidence["whatif_predicted_ms"] == 20.0


def test_collectives_waiting_together_are_one_wait() -> None:
    """Rank 1 is last at three collectives whose lateness intervals (second-to-last → last arrival)
    are [0,10], [5,12] and [20,25] µs: the first two wait together (asynchronous all-reduces of one
    step), so rank 1 cost the others 10 + 2 + 5 = 17 µs, not 22; rank 0's interval [30,31] is its own."""
    from stepscope.analysis.arrivals import _new_lateness

    lid = np.array([1, 1, 1, 0])
    second = np.array([0, 5, 20, 30]) * 1000
    last = np.array([10, 12, 25, 31]) * 1000
    named = np.array([True, True, True, True])
    assert (_new_lateness(lid, second, last, named) // 1000).tolist() == [10, 2, 5, 1]
    assert _new_lateness(lid, second, last, ~named).tolist() == [0, 0, 0, 0]
