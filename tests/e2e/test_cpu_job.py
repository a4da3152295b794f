"""A real CPU job (tests/data/cpu_ddp_2rank: DDP over gloo, 2 ranks, one DataLoader each, captured
with torch.profiler): the collectives run on gloo's worker threads, and rank 0's slower DataLoader
makes rank 1 wait inside every all-reduce. What an engineer reads from the trace by hand — the
``gloo:all_reduce`` spans on both ranks — is what stepscope must conclude."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from stepscope import load
from stepscope.advisor.engine import Advice, run_advisor
from stepscope.analysis.arrivals import compute_arrivals
from stepscope.analysis.bundle import analyze
from stepscope.analysis.registry import BREAKDOWN
from stepscope.analysis.whatif.graph import step_graph
from stepscope.analysis.whatif.job import job_edges, replay_job
from stepscope.analysis.whatif.replay import Durations
from stepscope.report import texts

RUN = Path(__file__).resolve().parents[1] / "data" / "cpu_ddp_2rank"


def gloo_spans_us(rank: int) -> list[tuple[float, float]]:
    """The rank's ``gloo:all_reduce`` (start, end) in µs, read from its file with the json module."""
    (path,) = RUN.glob(f"worker{rank}.*.pt.trace.json.gz")
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    return sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name") == "gloo:all_reduce")


@cache
def advice() -> Advice:
    return run_advisor(analyze(load(RUN)))


def test_rank_0_arrives_last_at_every_all_reduce() -> None:
    """The all-reduces end within ~2 ms of each other on both ranks (one host, one clock; gloo's ring
    ends on each rank after its own last exchange); each starts on rank 1 first, by 4-27 ms."""
    s0, s1 = np.array(gloo_spans_us(0)), np.array(gloo_spans_us(1))
    assert len(s0) == len(s1) == 3
    assert np.abs(s0[:, 1] - s1[:, 1]).max() < 2_500  # µs
    late_us = s0[:, 0] - s1[:, 0]
    assert (late_us > 4_000).all()
    a = compute_arrivals(load(RUN))
    assert a.culprits == (0,) and a.culprit_cause[0] == "input" and a.victims == (1,)
    # µs: the clocks are aligned by the ends (±31 µs here)
    assert a.late_ns[a.ranks.index(0)] / 1e3 == pytest.approx(late_us.sum(), abs=300)


def test_the_job_is_bound_by_rank_0_and_its_data_loader_comes_first() -> None:
    v = advice().verdicts[0]
    assert v.rank is None and v.bound == "imbalance" and v.ranks == (0,) and v.causes == ("input",)
    rules = [f.rule for f in advice().findings]
    assert rules[0] == "dataloader-bound" and "straggler-rank" in rules
    straggler = next(f for f in advice().findings if f.rule == "straggler-rank")
    # the job replay ties the ranks at the gloo all-reduces, and the fix takes rank 0's lateness off
    # everything before them, its DataLoader included: the job gains about that lateness
    assert straggler.basis == "replayed"
    assert straggler.est_gain_ms == pytest.approx(straggler.evidence["in_trace_late_ms"], rel=0.1)


@pytest.mark.parametrize(("run", "tied"),
                         [("cpu_ddp_2rank", 6), ("cpu_jobs/skew", 16), ("h200_bounds/r6/gloo_ddp", 30)])
def test_identity_job_replay_through_the_gloo_collectives(run: str, tied: int) -> None:
    """Every rank replayed unchanged, tied at its gloo collectives (CPU jobs, and CUDA tensors
    reduced by gloo on an H200): every step comes back to the ns."""
    trace = load(RUN.parent / run)
    graphs = {r: step_graph(trace, r) for r in trace.rank_ids}
    e = job_edges(trace, graphs)
    assert e is not None and (e.hact >= 0).sum() == tied
    rps = replay_job(graphs, {r: Durations.measured(g) for r, g in graphs.items()}, e)
    for r, g in graphs.items():
        np.testing.assert_array_equal(rps[r].step_ns, g.steps.measured_end_ns - g.steps.measured_start_ns)


def test_one_job_step_everywhere() -> None:
    """The job's step is one number — the slower rank's mean window (44.39 ms; rank 0's 44.32) — in the
    verdict, the straggler's evidence and every job replay's measured step (3 steps here, in which
    rank 1's window is the longer one in some and rank 0's in others: the mean of the per-step
    maxima, 44.97 ms, counts rank 1's wait for rank 0 and rank 0's own long step both)."""
    trace = load(RUN)
    windows = [analyze(trace).rank(r).require(BREAKDOWN).total_ns for r in trace.rank_ids]
    job_ms = max(float(w.mean()) for w in windows) / 1e6
    assert float(np.max(np.stack(windows), axis=0).mean()) / 1e6 > job_ms + 0.1
    assert job_ms == pytest.approx(44.387, abs=1e-3)
    adv = advice()
    assert adv.verdicts[0].step_ns / 1e6 == pytest.approx(job_ms, abs=1e-3)
    straggler = next(f for f in adv.findings if f.rule == "straggler-rank")
    loader = next(f for f in adv.findings if f.rule == "dataloader-bound")
    assert straggler.evidence["job_step_ms"] == pytest.approx(job_ms, abs=1e-3)
    assert straggler.evidence["whatif_measured_ms"] == pytest.approx(job_ms, abs=1e-3)
    assert loader.evidence["whatif_job_measured_ms"] == pytest.approx(job_ms, abs=1e-3)


SKEW = Path(__file__).resolve().parents[1] / "data" / "cpu_jobs" / "skew"


def _spans(run: Path, rank: int) -> np.ndarray:
    (path,) = run.glob(f"worker{rank}.*.pt.trace.json.gz")
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    return np.array(sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name") == "gloo:all_reduce"))


def test_a_rank_with_more_work_is_the_jobs_straggler() -> None:
    """tests/data/cpu_jobs/skew (capture.py there): rank 1 does ~15 ms more CPU work a step before
    its backward. Its two all-reduces a step (one per DDP bucket) wait for it together: the time rank
    0 loses is the union of the lateness intervals, read by hand from the gloo spans — not their sum,
    which read "the others wait for it 118 % of the step"."""
    s0, s1 = _spans(SKEW, 0), _spans(SKEW, 1)
    assert len(s0) == len(s1) == 8 and (s1[:, 0] > s0[:, 0]).all()  # rank 1 last at every one
    lo, hi = s0[:, 0], s1[:, 0]
    union_us = float(hi[0] - lo[0])
    for i in range(1, len(lo)):  # in start order: each adds what the earlier ones do not cover
        union_us += max(0.0, hi[i] - max(lo[i], hi[:i].max()))
    a = compute_arrivals(load(SKEW))
    assert a.culprits == (1,) and a.culprit_cause[1] == "host"
    assert a.late_ns[a.ranks.index(1)] / 1e3 == pytest.approx(union_us, rel=0.02)
    assert a.late_ns[a.ranks.index(1)] / 1e3 < 0.8 * float((hi - lo).sum())  # the sum counted twice
    # rank 0's wait is the union of the same intervals (2 ranks: its arrival is the second-to-last),
    # so it equals rank 1's lateness: 35.3 ms a step, where the summed waits said 61.1 of a 51.1 ms step
    assert a.wait_total_ns[a.ranks.index(0)] == a.wait_on_culprits_ns[a.ranks.index(0)] == a.late_ns[a.ranks.index(1)]
    adv = run_advisor(analyze(load(SKEW)))
    v = adv.verdicts[0]
    assert v.bound == "imbalance" and v.ranks == (1,) and v.causes == ("host",)
    assert v.excess_pct is not None and 0 < v.excess_pct < 100
    assert v.to_dict()["job_step_ms"] == v.to_dict()["avg_step_ms"] == pytest.approx(a.m.job_step_ns / 1e6, abs=1e-6)
    assert adv.findings[0].rule in ("straggler-rank", "load-imbalance") and adv.findings[0].rank == 1
    assert "dataloader-bound" not in [f.rule for f in adv.findings]
    # said for a CPU job: its model's ops are its host work, and one rank waits
    assert "(its CPU work (its ops and the code around them))" in texts.verdict_text(v)
    straggler = next(f for f in adv.findings if f.rule == "straggler-rank")
    assert "Rank 0 waits for it." in texts.found_text(straggler)


def test_graph_capture_changes_nothing_on_a_cpu_only_job() -> None:
    """A CPU-only rank launches nothing: its host work is the model's own ops, which no CUDA graph
    holds (the replay cut every op on skew's ranks: 51.8 -> 10.8 ms). A change to chosen ops still
    applies. The front ends refuse graph capture there in one line (it models a GPU's launches)."""
    from click.testing import CliRunner

    from stepscope.analysis.whatif.simulate import simulate
    from stepscope.analysis.whatif.transforms import HostOverhead, Select
    from stepscope.cli import cli

    trace = load(RUN)
    w = simulate(trace, [HostOverhead(0.0)])
    assert w.mean_ns(True) == w.mean_ns(False)
    chosen = simulate(trace, [HostOverhead(0.5, Select("^Optimizer\\.step"))])
    assert chosen.mean_ns(True) < chosen.mean_ns(False)
    res = CliRunner().invoke(cli, ["whatif", str(RUN), "--remedy", "graph-capture"])
    assert "a GPU's kernel launches" in str(res.exception) and "ran on the CPU alone" in str(res.exception)
