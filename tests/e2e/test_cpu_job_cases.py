"""Two real 2-rank CPU jobs (DDP over gloo; tests/data/cpu_jobs/<name>/source: the program, the harness
and each rank's own unprofiled timings; what an engineer concludes was written before stepscope read them):

* ``ckpt_2rank`` — rank 0 checkpoints (torch.save + fsync, ~45 ms) at the *end* of every 2nd step; rank 1
  waits for it at the first all-reduce of the next step. Both ranks run 4 steps in 251 / 247 ms: the
  job's step is ~62 ms (rank 0's windows 43.6, 84.4, 37.5, 85.5), not the 81.9 ms mean of the per-step
  maxima (rank 0's long steps 2 and 4 and rank 1's waits in steps 1 and 3 both counted).
* ``seqlen_2rank`` — a toy transformer with a random sequence length per rank per step (192/64, 64/192,
  32/256, 256/64 tokens): the slow rank moves (0, 1, 1, 0); each is last at 4 of 8 all-reduces. The job
  is bound by that imbalance, with no one rank to fix."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from stepscope import load
from stepscope.advisor.engine import Advice, run_advisor
from stepscope.analysis.bundle import Bundle, analyze
from stepscope.analysis.registry import ARRIVALS, CLUSTER, JOB_WHATIF
from stepscope.report import texts

DATA = Path(__file__).resolve().parents[1] / "data" / "cpu_jobs"


@cache
def run(name: str) -> tuple[Bundle, Advice]:
    b = analyze(load(DATA / name))
    return b, run_advisor(b)


def test_a_checkpoint_at_the_end_of_a_step_is_counted_once_in_the_jobs_step() -> None:
    """The job's step is rank 0's mean window, 62.75 ms (251.0 / 4), in the verdict, the arrivals and the
    job replay alike."""
    b, adv = run("ckpt_2rank")
    job = adv.verdicts[0]
    a = b.cluster_result(ARRIVALS)
    replay = b.cluster_result(JOB_WHATIF)
    assert a is not None and replay is not None
    assert job.rank is None and job.step_ns / 1e6 == pytest.approx(62.75, abs=0.01)
    assert round(a.m.job_step_ns) == job.step_ns == round(replay.measured_mean_ns)
    # every finding's job gain is of that step (to the ns: one is truncated, the verdict's rounded)
    assert all(abs(f.step_ns - job.step_ns) <= 1 for f in adv.findings)


def test_the_checkpoint_is_the_late_ranks_own_work_not_a_late_start() -> None:
    """Rank 0 is last at 5 of 8 all-reduces. Its first one (37.9 ms late) follows a checkpoint before the
    trace: a late start. The one after step 2's checkpoint (35.5 ms late) is measured from the all-reduce
    both ranks left together in step 2, across rank 0's step boundary: the checkpoint (host time outside
    every op) is its cause, 8.9 ms per step of the 20.8 — not 'it started the step late'."""
    _, adv = run("ckpt_2rank")
    (s,) = [f for f in adv.findings if f.rule == "straggler-rank"]
    assert s.rank == 0 and s.evidence["times_last"] == 5
    assert s.evidence["cause_ms"]["host"] == pytest.approx(8.89, abs=0.1)
    assert s.evidence["cause_ms"]["late_start"] == pytest.approx(11.88, abs=0.1)
    assert "its CPU work" in texts.found_text(s)


def test_a_moving_slow_rank_is_an_imbalance_without_a_culprit() -> None:
    """No culprit (each rank is last at 4 of 8, net of the other's lateness nobody is late), but the
    ranks wait for each other ~85 % of the 207.9 ms step: the job's verdict is imbalance, the slow rank
    moving; no straggler finding (fixing one rank does not help), and load-imbalance compares the work
    step by step (busiest ranks 0, 1, 1, 0), where the averages differ by 5 %."""
    b, adv = run("seqlen_2rank")
    job = adv.verdicts[0]
    assert job.bound == "imbalance" and job.set_by == "moving" and job.ranks == ()
    assert job.most_last == (4, 8) and job.excess_pct == pytest.approx(84.9, abs=1.0)
    assert job.varying_shapes_pct == pytest.approx(31, abs=1)
    text = texts.verdict_text(job)
    assert "the slow rank changes from step to step" in text and "rank the others wait for" not in text
    assert not [f for f in adv.findings if f.rule == "straggler-rank"]
    (li,) = [f for f in adv.findings if f.rule == "load-imbalance"]
    c = b.cluster_result(CLUSTER)
    assert c is not None and c.per_step and c.busiest_per_step.tolist() == [0, 1, 1, 0]
    assert li.basis == "imbalance-moving" and li.change.key == "balance-per-step"
    # each rank's work per step is its step less its communication on the path: the worker threads' all-reduces
    # only where its loop thread runs no op (analysis/host_comm.py)
    assert li.est_gain_ns / 1e6 == pytest.approx(81.4, abs=1.0)
    assert adv.findings[0].rule == "load-imbalance"  # it shortens the bound: first
