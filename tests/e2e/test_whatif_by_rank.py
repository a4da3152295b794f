"""The what-if of a run held rank by rank (``analysis.whatif.by_rank``, what ``stepscope serve`` runs on
a map-reduce run) gives the whole trace's answer, value for value, on the real 8-rank DLRM job."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import stepscope
from stepscope.analysis.whatif import transforms as tf
from stepscope.analysis.whatif.by_rank import simulate_by_rank
from stepscope.analysis.whatif.simulate import simulate
from stepscope.mapreduce.driver import load_rank, map_reduce
from stepscope.mapreduce.worker import job_memo
from stepscope.model.trace import Trace
from stepscope.report.whatif_view import whatif_dict

DLRM = Path(__file__).resolve().parents[3] / "shared" / "traces" / "param_dlrm" / "dlrm_8rank_v100"
pytestmark = pytest.mark.skipif(not DLRM.is_dir(), reason=f"shared traces not present ({DLRM})")

CHANGES = [
    [tf.LoaderWorkers(4)],
    [tf.DropSyncs(), tf.PinnedCopies()],
    [tf.HostOverhead(0.0), tf.OverlapComm()],
    [tf.ScaleDevice(tf.Select("gemm|Gemm"), 0.5)],
    [tf.FixSlowRank(7)],
    [tf.LoaderWorkers(2), tf.FixSlowRank(1)],
]


@pytest.mark.parametrize("changes", CHANGES, ids=lambda c: "+".join(t.name for t in c))
def test_rank_by_rank_is_the_whole_traces_what_if(changes: list[tf.Transform]) -> None:
    whole = stepscope.load(DLRM)
    mr = map_reduce(DLRM)
    opened: list[int] = []

    @contextmanager
    def open_rank(rank: int) -> Iterator[Trace]:
        trace = load_rank(mr, rank)
        assert trace.rank_ids == [rank]  # one rank's model at a time
        opened.append(rank)
        with job_memo(trace, rank, mr.jobs[rank]).active():
            yield trace

    ranks = sorted(mr.rank_files)
    expected = whatif_dict(simulate(whole, changes), "dlrm")
    got = whatif_dict(simulate_by_rank(ranks, open_rank, changes), "dlrm")
    assert got == expected
    fixes = any(isinstance(t, tf.FixSlowRank) for t in changes)
    assert len(opened) == (3 if fixes else 2) * len(ranks)
    if changes[-1] == tf.FixSlowRank(7):  # the fix moves the job (rank 7 is the culprit: 0.509 ms)
        assert expected["job"]["saved_mean_ms"] == 0.509
    part = whatif_dict(simulate_by_rank(ranks, open_rank, changes, ranks=[1, 3]), "dlrm")
    assert part == whatif_dict(simulate(whole, changes, ranks=[1, 3]), "dlrm")
