"""The job's verdict states the job's step in every case: the one the arrivals, the straggler finding
and the job replay state (at each step the slowest rank's window, averaged), or without matched
collectives the slowest rank's; the shares stay those of the rank it is built from, of that rank's
own window (``shares_rank``, ``shares_step_ms``)."""

from __future__ import annotations

from pathlib import Path

from stepscope.advisor.engine import run_advisor
from stepscope.analysis.bundle import analyze
from stepscope.report import texts
from tests.builders import TraceBuilder, load_ranks

US = 1000


def test_without_collectives_the_job_step_is_the_slowest_ranks(tmp_path: Path) -> None:
    """2 ranks, 2 steps, no collective: rank 0's steps last 10 ms, rank 1's 12 ms (a GEMM each, 4 / 6
    ms): the job's step is rank 1's 12 ms, said as the job's step (job_step_ms was null here)."""
    builders = []
    for rank, step in ((0, 10_000), (1, 12_000)):
        b = TraceBuilder(rank=rank, world_size=2)
        for i in range(2):
            t = i * 20_000
            b.step(i + 1, t, step)
            b.launch_kernel("volta_sgemm_128x64_nn", launch_ts=t + 10, launch_dur=5, ts=t + 100,
                            dur=step - 6_000)
        builders.append(b)
    advice = run_advisor(analyze(load_ranks(builders, tmp_path)))
    job = advice.verdicts[0]
    rank1 = next(v for v in advice.verdicts if v.rank == 1)
    assert job.rank is None and job.set_by == "slowest" and job.ranks == (1,)
    assert job.step_ns == job.job_step_ns == rank1.step_ns == 12_000 * US
    d = job.to_dict()
    assert (d["avg_step_ms"], d["job_step_ms"], d["shares_rank"], d["shares_step_ms"]) == (12.0, 12.0, 1, 12.0)
    assert "of the 12.0 ms step" in texts.verdict_text(job) and "set by its slowest rank (1)" in texts.verdict_text(job)
    assert rank1.to_dict()["job_step_ms"] is None and rank1.to_dict()["shares_rank"] == 1
