"""What-if across streams and ranks, on micro traces whose every replayed time is computed by hand (µs).

**Two ranks, one all-reduce** (``late_rank``): both run step 1 [0, 100].
Rank 1: a host op [0, 10]; cudaLaunchKernel [10, 12] → the all-reduce [15, 65] (it arrives at 15 and
waits for rank 0); cudaStreamSynchronize [12, 70] returns 5 after it; host [70, 100].
Rank 0 (late by X = 30): a host op [0, 40]; cudaLaunchKernel [40, 42] → the all-reduce [45, 65];
cudaStreamSynchronize [42, 70]; host [70, 100]. The last arrival is 45, the transfer 65 − 45 = 20.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from stepscope.analysis.whatif import transforms as tf
from stepscope.analysis.whatif.graph import step_graph
from stepscope.analysis.whatif.job import job_edges, replay_job
from stepscope.analysis.whatif.replay import Durations, replay
from stepscope.analysis.whatif.simulate import simulate
from stepscope.cli import main
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder, kargs, load_ranks

US = 1000
X_US = 30
NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float"


def _rank(rank: int, host_us: int, op: str | None = "aten::mm") -> TraceBuilder:
    """Host work [0, host_us] (an op that launches nothing; ``op=None``: Python no op covers), the
    all-reduce launched at host_us, a sync until 70, host work [70, 100] (the same kind)."""
    b = TraceBuilder(rank=rank, world_size=2)
    b.step(1, ts=0, dur=100)
    if op is not None:
        b.op(op, ts=0, dur=host_us)
    b.launch_kernel(NCCL, launch_ts=host_us, launch_dur=2, ts=host_us + 5, dur=65 - host_us - 5, stream=20,
                    **kargs({"Process Group Name": "0", "Collective name": "allreduce", "In msg nelems": 1024,
                             "Out msg nelems": 1024, "dtype": "Float", "Group size": 2}))
    b.add(ph="X", cat=b.RUNTIME_CAT, name="cudaStreamSynchronize", pid=b.pid, tid=b.tid, ts=host_us + 2,
          dur=70 - host_us - 2, args={})
    if op is not None:
        b.op("aten::add", ts=70, dur=30)
    return b


@pytest.fixture
def late_rank(tmp_path: Path) -> Trace:
    return load_ranks([_rank(0, 10 + X_US), _rank(1, 10)], tmp_path)


def _job_steps_us(trace: Trace, *changes: tf.Transform) -> list[int]:
    return (simulate(trace, changes).job_steps_ns(True) // US).tolist()


def test_identity_job_replay_gives_back_every_time(late_rank: Trace) -> None:
    graphs = {r: step_graph(late_rank, r) for r in late_rank.rank_ids}
    e = job_edges(late_rank, graphs)
    assert e is not None and (e.transfer_ns // US).tolist() == [[20, 20]]
    rps = replay_job(graphs, {r: Durations.measured(g) for r, g in graphs.items()}, e)
    for r in graphs:
        assert (rps[r].device_start_ns // US).tolist() == [45 if r == 0 else 15]
        assert (rps[r].device_end_ns // US).tolist() == [65]
        assert (rps[r].step_ns // US).tolist() == [100]


def test_fixing_the_late_rank_shrinks_the_job_step_by_its_lateness(late_rank: Trace) -> None:
    """Rank 0's host op before the launch takes X less: [0, 10]; launch at 10, arrival 15 = rank
    1's; both all-reduces end 15 + 20 = 35; both syncs return at 40; host 30 more: 70 = 100 − X."""
    w = simulate(late_rank, [tf.FixSlowRank(0)])
    assert (w.job_steps_ns(False) // US).tolist() == [100]
    assert [(r.predicted_ns // US).tolist() for r in w.ranks] == [[70], [70]]
    assert w.saved_ns() == X_US * US


def test_the_jobs_bound_is_the_rank_the_others_wait_for_before_and_after(tmp_path: Path) -> None:
    """Rank 1's host op (``aten::bmm``, 10) five times longer: it launches at 50 and arrives at 55,
    after rank 0 (45): rank 0 now waits 10, rank 1 none. Before, rank 1 waited 30 for rank 0. The
    job's bound is rank 0's before, rank 1's after; both all-reduces end 75, the syncs return 80, the
    host 30 more: 110."""
    trace = load_ranks([_rank(0, 10 + X_US), _rank(1, 10, op="aten::bmm")], tmp_path)
    w = simulate(trace, [tf.HostOverhead(5.0, tf.Select("^aten::bmm$"))])
    assert w.paced_by == (0, 1) and (w.bound_rank(False), w.bound_rank(True)) == (0, 1)
    assert (w.job_steps_ns(True) // US).tolist() == [110]
    assert simulate(trace, []).paced_by == (0, 0)


P2P = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"


def _p2p_rank(rank: int, host_us: int, op: str | None, peers: bool = True, world: int = 2) -> TraceBuilder:
    """``late_rank``'s schedule with a send (rank 0, to rank 1) and its receive (rank 1) in place of
    the all-reduce."""
    b = TraceBuilder(rank=rank, world_size=world)
    b.step(1, ts=0, dur=100)
    if op is not None:
        b.op(op, ts=0, dur=host_us)
    kind = "send" if rank == 0 else "recv"
    args: dict[str, object] = {"Process Group Name": "1", "Collective name": kind, "In msg nelems": 1024,
                               "Out msg nelems": 1024, "dtype": "Float", "Group size": 2}
    if peers:
        args["Dst Rank" if kind == "send" else "Src Rank"] = 1 - rank
    b.launch_kernel(P2P, launch_ts=host_us, launch_dur=2, ts=host_us + 5, dur=65 - host_us - 5, stream=20,
                    **kargs(args))
    b.add(ph="X", cat=b.RUNTIME_CAT, name="cudaStreamSynchronize", pid=b.pid, tid=b.tid, ts=host_us + 2,
          dur=70 - host_us - 2, args={})
    if op is not None:
        b.op("aten::add", ts=70, dur=30)
    return b


@pytest.mark.parametrize("peers", [True, False])
def test_a_receive_waits_for_its_send(tmp_path: Path, peers: bool) -> None:
    """Rank 0's send arrives at 45, rank 1's receive at 15 and ends with the send at 65 (transfer 20).
    Rank 0's host op (``aten::bmm``, 40) four times shorter: it launches at 10 and arrives at 15 with
    the receive; both end at 35, both syncs return at 40, the host 30 more: the job's step 100 → 70.
    Without the peers recorded the pair is not tied: the receive keeps its measured 50 (job: 100)."""
    trace = load_ranks([_p2p_rank(0, 10 + X_US, "aten::bmm", peers), _p2p_rank(1, 10, "aten::mm", peers)],
                       tmp_path)
    graphs = {r: step_graph(trace, r) for r in trace.rank_ids}
    e = job_edges(trace, graphs)
    assert (e is not None and e.p2p.tolist() == [True] and (e.transfer_ns // US).tolist() == [[20, 20]]) is peers
    assert _job_steps_us(trace) == [100]  # the identity replay
    rank_steps = [(r.predicted_ns // US).tolist() for r in simulate(trace, [tf.HostOverhead(0.25, tf.Select(
        "^aten::bmm$"))]).ranks]
    assert rank_steps == ([[70], [70]] if peers else [[70], [100]])


def test_a_rank_in_no_matched_pair_replays_untied(tmp_path: Path) -> None:
    """Ranks 0 and 1 as above, rank 2 with a kernel and no transfer: it is in no edge and replays on its
    own (it raised ValueError in ``_transfers``); the pair still ties 0 and 1 (job 100 → 70)."""
    third = TraceBuilder(rank=2, world_size=3)
    third.step(1, ts=0, dur=50)
    third.op("aten::mm", ts=0, dur=10)
    third.launch_kernel("gemm", launch_ts=10, launch_dur=2, ts=15, dur=20)
    trace = load_ranks([_p2p_rank(0, 10 + X_US, "aten::bmm", world=3), _p2p_rank(1, 10, "aten::mm", world=3), third],
                       tmp_path)
    graphs = {r: step_graph(trace, r) for r in trace.rank_ids}
    e = job_edges(trace, graphs)
    assert e is not None and e.ranks == (0, 1) and e.p2p.tolist() == [True]
    w = simulate(trace, [tf.HostOverhead(0.25, tf.Select("^aten::bmm$"))])
    assert [(r.rank, (r.predicted_ns // US).tolist()) for r in w.ranks] == [(0, [70]), (1, [70]), (2, [50])]


def test_the_job_replay_of_the_remedies_ties_the_pair_too(tmp_path: Path) -> None:
    """A job of sends and receives only (no group collective): the job replay of the standard remedies
    (``cluster.job_whatif``, from per-rank records) runs, tied by the pair, and says what
    ``stepscope whatif`` says for the same change. The host work is Python no op covers (graph
    capture removes it; a top-level op that launches nothing would be kept)."""
    from stepscope.analysis.bundle import analyze
    from stepscope.analysis.registry import JOB_WHATIF
    from stepscope.analysis.whatif.simulate import saving_ns

    trace = load_ranks([_p2p_rank(0, 10 + X_US, None), _p2p_rank(1, 10, None)], tmp_path)
    job = analyze(trace).cluster_result(JOB_WHATIF)
    assert job is not None and job.culprits == ()
    saved = job.remedy_saved_ns("graph-capture")
    assert saved is not None and saved > 0 and saved == saving_ns(trace, [tf.HostOverhead(0.0)])


def test_alone_the_victim_would_keep_waiting(late_rank: Trace) -> None:
    """Without the cross-rank edge rank 1's all-reduce keeps its measured 50 µs: fixing rank 0 only
    shortens rank 0's own step, the job's stays 100."""
    g = step_graph(late_rank, 1)
    assert (replay(g, Durations.measured(g)).step_ns // US).tolist() == [100]
    g0 = step_graph(late_rank, 0)
    alone = replay(g0, tf.FixSlowRank(0).change(late_rank, g0, Durations.measured(g0)))
    assert (alone.step_ns // US).tolist() == [70]


def test_a_slower_late_rank_makes_the_victim_wait_longer(late_rank: Trace) -> None:
    """The host op twice as long on both ranks (rank 0: 80, rank 1: 20): rank 0 launches at 80 and
    arrives last at 85; both all-reduces end 105, both syncs return 110, host 30 more: 140."""
    assert _job_steps_us(late_rank, tf.HostOverhead(2.0, tf.Select("aten::mm"))) == [140]


def test_other_ranks_keep_their_measured_arrivals_when_one_cannot_be_replayed(late_rank: Trace) -> None:
    """Replaying rank 1 only with the job's edges: rank 0's arrival stays the measured 45."""
    g = step_graph(late_rank, 1)
    e = job_edges(late_rank, {1: g})
    assert e is not None
    rp = replay_job({1: g}, {1: Durations.measured(g)}, e)[1]
    assert (rp.device_end_ns // US).tolist() == [65] and (rp.step_ns // US).tolist() == [100]


@pytest.fixture
def stream_wait(tmp_path: Path) -> Trace:
    """One rank, step [0, 70]. Stream 7: C launched [1, 2] → [6, 8] (latency 5); B launched [8, 10]
    → [50, 60]: it waited for A on stream 20 (launched [5, 6] → [10, 50]), an event wait. The
    typical latency is 5 (C, A; B's 42 is not typical); cudaStreamSynchronize [12, 65] waits for B."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=70)
    b.launch_kernel("C", launch_ts=1, launch_dur=1, ts=6, dur=2)
    b.launch_kernel("A", launch_ts=5, launch_dur=1, ts=10, dur=40, stream=20)
    b.launch_kernel("B", launch_ts=8, launch_dur=2, ts=50, dur=10)
    b.add(ph="X", cat=b.RUNTIME_CAT, name="cudaStreamSynchronize", pid=b.pid, tid=b.tid, ts=12, dur=53, args={})
    return b.load(tmp_path)


def test_a_kernel_that_waited_for_another_stream_moves_with_it(stream_wait: Trace) -> None:
    """A twice as fast: [10, 30]; B is ready at max(8 + 5, 30) = 30: [30, 40]; the sync returns at
    45, the host ends 5 later: 50."""
    g = step_graph(stream_wait, 0)
    names = [stream_wait.strings[int(n)] for n in stream_wait.events["name"][g.device.row]]
    b, a = names.index("B"), names.index("A")
    assert g.device.wait_on[b] == a and g.device.wait_on[a] == -1 and g.device.wait_gap_ns[b] == 0
    assert (replay(g, Durations.measured(g)).step_ns // US).tolist() == [70]
    w = simulate(stream_wait, [tf.ScaleDevice(tf.Select("^A$"), 0.5)])
    assert (w.ranks[0].predicted_ns // US).tolist() == [50]
    assert np.all(w.ranks[0].measured_ns == 70 * US)


def test_the_command_fixes_a_rank_and_refuses_one_not_in_the_trace(late_rank: Trace,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """``stepscope whatif RUN --fix-rank 0 --json``: the job's step 100 → 70 (above); rank 5: exit 2."""
    run = str(late_rank.source)
    with pytest.raises(SystemExit) as exc:
        main(["whatif", run, "--fix-rank", "0", "--json", "--no-cache"])
    out, _ = capsys.readouterr()
    assert exc.value.code in (0, None)
    job = json.loads(out)["job"]
    assert job["measured_mean_ms"] == pytest.approx(0.1) and job["predicted_mean_ms"] == pytest.approx(0.07)
    with pytest.raises(SystemExit) as exc:
        main(["whatif", run, "--fix-rank", "5", "--no-cache"])
    assert exc.value.code == 2 and "--fix-rank: no rank 5 in the trace" in capsys.readouterr().err


def test_a_remedy_on_every_rank_saves_what_the_job_replay_gives(tmp_path: Path) -> None:
    """``graph-capture`` (launch calls and host work at no time; the host work here is Python no op
    covers, which it removes — a top-level op that launches nothing keeps its time) on both ranks.
    Alone, each rank
    keeps its measured all-reduce: rank 0 launches at 0, arrives at 5, ends 5 + 20 = 25, its sync
    returns at 30, its host work is gone: 30; rank 1 arrives at 5 and keeps its measured 50: ends 55,
    step 60. The per-rank sum (the slowest step less each rank's own saving) says the job gains
    100 − max(30, 60) = 40. Tied, rank 1's all-reduce ends at the last arrival (5) + 20 = 25 too:
    both steps 30, the job gains 70. ``pinned-copies`` and ``loader-workers`` change nothing here:
    not replayed, 0 saved."""
    from stepscope.advisor.finding import Change, Finding, Severity
    from stepscope.advisor.ranking import group_across_ranks
    from stepscope.analysis.whatif.job_whatif import combine_job_whatif, job_record
    from stepscope.analysis.whatif.remedies import compute_remedies

    late_rank = load_ranks([_rank(0, 10 + X_US, None), _rank(1, 10, None)], tmp_path)
    alone = {r: compute_remedies(late_rank, r) for r in late_rank.rank_ids}
    graphs_off = {r: int(x.predicted_mean_ns[x.name.index("graph-capture")]) // US for r, x in alone.items()}
    assert graphs_off == {0: 30, 1: 60}
    j = combine_job_whatif({r: job_record(late_rank, r) for r in late_rank.rank_ids})
    assert j.measured_mean_ns == 100 * US and j.remedy_saved_ns("graph-capture") == 70 * US
    assert j.remedy_saved_ns("pinned-copies") == 0 and j.remedy_saved_ns("loader-workers") == 0
    found = [Finding("launch-bound", Severity.HIGH, r, (), int(x.saved_ns("graph-capture")), 100 * US, "replayed",
                     {"whatif_remedy": "graph-capture"}, Change("use-cuda-graphs")) for r, x in alone.items()]
    steps = {0: 100 * US, 1: 100 * US}
    per_rank_sum = group_across_ranks(found, steps, 10.0, 2.0)[0]
    assert per_rank_sum.est_gain_ns == 40 * US and "whatif_job_predicted_ms" not in per_rank_sum.evidence
    replays = {n: (j.measured_mean_ns, float(j.remedy_predicted_mean_ns[i])) for i, n in enumerate(j.remedy)}
    joint = group_across_ranks(found, steps, 10.0, 2.0, job_replays=replays)[0]
    assert joint.est_gain_ns == 70 * US and joint.ranks == (0, 1)
    assert (joint.evidence["whatif_job_measured_ms"], joint.evidence["whatif_job_predicted_ms"]) == (0.1, 0.03)
