"""What-if on real traces: the identity replay gives back every measured step, and measured
before/after pairs are predicted within 15 % (docs/whatif.md explains the means outside it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope import load
from stepscope.analysis.whatif import transforms as tf
from stepscope.analysis.whatif.graph import step_graph
from stepscope.analysis.whatif.job import job_edges, replay_job
from stepscope.analysis.whatif.replay import Durations, replay
from stepscope.analysis.whatif.simulate import WhatIf, simulate

DATA = Path(__file__).resolve().parents[1] / "data"
IDENTITY = ["kineto_tb_plugin/resnet50_num_workers_0", "kineto_tb_plugin/resnet50_num_workers_4",
            "hta/ns_resolution_v100_ddp", "hta/nccl_resnet_a100_rank0_of2", "hta/amd_mi250_minitoy",
            "hta/triton_example_a100", "param_dlrm/dlrm_8rank_v100", "tracelens/h100_bert_small_inference",
            "tracelens/h100_qwen1.5_0.5b_inference", "ascend_msinsight/small_cnn_2rank_hccl_level1/text",
            "nsys_pipit/cloverleaf_cuda_a100", "tracelens/xdit_sd3.5_torch_compile_mi300x"]


@pytest.mark.parametrize("rel", IDENTITY)
def test_identity_replay_reproduces_every_step(shared_traces: Path, rel: str) -> None:
    trace = load(shared_traces / rel)
    for rank in trace.rank_ids:
        g = step_graph(trace, rank)
        measured = g.steps.measured_end_ns - g.steps.measured_start_ns
        predicted = replay(g, Durations.measured(g)).step_ns
        assert len(measured) > 0
        np.testing.assert_allclose(predicted, measured, rtol=0.01)


def _error_pct(w: WhatIf, after: WhatIf, median: bool) -> float:
    pred = w.median_ns(True) if median else w.mean_ns(True)
    real = after.median_ns(False) if median else after.mean_ns(False)
    return abs(pred - real) / real * 100


def test_num_workers_0_to_4_predicted(shared_traces: Path) -> None:
    """nw0 with 4 workers vs the nw4 capture: the median step within 15 % (mean: see docs/whatif.md)."""
    before = load(shared_traces / "kineto_tb_plugin/resnet50_num_workers_0")
    after = load(shared_traces / "kineto_tb_plugin/resnet50_num_workers_4")
    w, real = simulate(before, [tf.LoaderWorkers(4)]), simulate(after, [])
    assert _error_pct(w, real, median=True) < 15
    assert w.bound(False) == "input" and w.bound(True) == real.bound(False) == "compute"


def test_h100_base_to_fixed_predicted() -> None:
    """The planted problems fixed together (8 workers, pinned copies, no per-step .item(), fused SGD)."""
    before, after = load(DATA / "h100_cuda_train/base"), load(DATA / "h100_cuda_train/fixed")
    changes = [tf.LoaderWorkers(8), tf.PinnedCopies(), tf.DropSyncs(tf.Select("_local_scalar_dense")),
               tf.HostOverhead(0.5, tf.Select(r"^Optimizer\.step"))]
    w, real = simulate(before, changes), simulate(after, [])
    assert _error_pct(w, real, median=True) < 15
    assert w.bound(True) == real.bound(False) == "host"


MULTI_RANK = ["param_dlrm/dlrm_8rank_v100", "ascend_msinsight/small_cnn_2rank_hccl_level1/text"]


@pytest.mark.parametrize("rel", MULTI_RANK)
def test_identity_job_replay_reproduces_every_step(shared_traces: Path, rel: str) -> None:
    """Every rank replayed together, tied by the matched collectives: every step comes back exactly."""
    trace = load(shared_traces / rel)
    graphs = {r: step_graph(trace, r) for r in trace.rank_ids}
    e = job_edges(trace, graphs)
    assert e is not None and e.act.shape[1] == len(trace.rank_ids)
    rps = replay_job(graphs, {r: Durations.measured(g) for r, g in graphs.items()}, e)
    for r, g in graphs.items():
        np.testing.assert_array_equal(rps[r].step_ns, g.steps.measured_end_ns - g.steps.measured_start_ns)


def test_dlrm_rank_7_fixed(shared_traces: Path) -> None:
    """Rank 7 arrives with the second-to-last rank at collectives 0-3 (1.30 ms of lateness): the
    victims wait less, the job's step goes 18.711 → 18.202 ms. Not 1.30 ms less: ranks 2 and 6
    become the last at collective 1 (docs/analyses/job_whatif.md)."""
    w = simulate(load(shared_traces / "param_dlrm/dlrm_8rank_v100"), [tf.FixSlowRank(7)])
    assert w.mean_ns(False) / 1e6 == pytest.approx(18.711, abs=0.001)
    assert w.mean_ns(True) / 1e6 == pytest.approx(18.202, abs=0.002)
    saved = {r.rank: float(r.saved_ns[0]) / 1e6 for r in w.ranks}
    assert saved[7] == pytest.approx(1.156, abs=0.002)  # its own window: its work before collectives 0-3
    assert all(saved[v] == pytest.approx(0.509, abs=0.002) for v in (0, 1, 3, 4, 5))  # their waits shrink


def test_dlrm_job_bound_is_the_verdicts_before_and_moves_after(shared_traces: Path) -> None:
    """The what-if's job bound is the rank the others wait for, as the job verdict reads it (rank 7,
    host), not the slowest window's (rank 3, which waits at the collectives); rank 7 fixed, rank 2
    waits least (it becomes last at collective 1, above)."""
    from stepscope.advisor.engine import run_advisor
    from stepscope.analysis.bundle import analyze

    trace = load(shared_traces / "param_dlrm/dlrm_8rank_v100")
    job = run_advisor(analyze(trace)).verdicts[0]
    assert job.rank is None and job.set_by == "waited-for" and job.ranks == (7,)
    same = simulate(trace, [])
    assert same.paced_by == (7, 7) and same.bound(False) == same.bound(True) == job.bound == "host"
    slowest = max(same.ranks, key=lambda r: r.before.avg_step_ns).rank
    assert slowest != 7
    w = simulate(trace, [tf.FixSlowRank(7)])
    assert w.paced_by == (7, 2) and w.bound_rank(False) == 7 and w.bound_rank(True) == 2
