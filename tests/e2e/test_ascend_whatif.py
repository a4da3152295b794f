"""The what-if replay on a real Ascend job (2 NPUs, HCCL; ``ascend_msinsight/small_cnn_2rank_hccl_level1``).

torch_npu launches from a task-queue thread while the main thread runs the ops and blocks in
``aclrtSynchronizeStreamWithTimeout`` (``loss.item()``: 91.7 ms of rank 0's 156 ms step, waiting
for the HCCL all-reduce). The profiler's database links each device task to its launch; its
trace_view text export of the same run does not.

* text layout: nothing ties the device to the host, so a host-side change can only move the host —
  graph capture predicted 155.99 -> 5.52 ms before (the window collapsed to the host's span, though
  the all-reduce alone transfers for ~100 ms a step); now the device keeps its times and the replay
  says so, and the advisor's remedies are not replayed there.
* db layout: rank 1 arrives 3.5 ms late at the first all-reduce (it started its step late); fixing
  it let rank 0's device work end 3.5 ms earlier but its step did not move (the main thread's sync,
  on a thread that launches nothing, was not in the host chain): it now saves what rank 0 waited.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import stepscope
from stepscope.analysis.arrivals import compute_arrivals
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.sync import is_sync_call
from stepscope.analysis.whatif.graph import step_graph
from stepscope.analysis.whatif.remedies import compute_remedies
from stepscope.analysis.whatif.simulate import UNLINKED_CAVEAT, simulate
from stepscope.analysis.whatif.transforms import FixSlowRank, HostOverhead
from stepscope.model.trace import Trace

CASE = "ascend_msinsight/small_cnn_2rank_hccl_level1"


@pytest.fixture
def text_trace(shared_traces: Path) -> Trace:
    return stepscope.load(shared_traces / CASE / "text")


@pytest.fixture
def db_trace(shared_traces: Path) -> Trace:
    return stepscope.load(shared_traces / CASE / "db")


@pytest.mark.parametrize(("name", "blocks"), [
    ("AscendCL@aclrtSynchronizeStreamWithTimeout", True), ("aclrtSynchronizeDevice", True),
    ("aclrtSynchronizeEvent", True), ("aclrtMemcpy", True), ("AscendCL@aclrtMemcpyAsync", False),
    ("aclrtStreamWaitEvent", False), ("aclnnInplaceCopy", False)])
def test_ascend_sync_calls_block(name: str, blocks: bool) -> None:
    assert is_sync_call(name) is blocks


def test_text_layout_keeps_the_device_in_place(text_trace: Trace) -> None:
    w = simulate(text_trace, [HostOverhead(0.0)])
    measured, predicted = w.mean_ns(False), w.mean_ns(True)
    assert measured == pytest.approx(155.99e6, rel=1e-3)
    # the host may shorten only what it does after its sync returns: a few ms, never the all-reduce
    assert predicted > 0.95 * measured
    assert UNLINKED_CAVEAT in w.caveats
    with pytest.raises(NotApplicable):
        compute_remedies(text_trace, 0)


def test_db_layout_chains_the_main_threads_syncs(db_trace: Trace) -> None:
    g = step_graph(db_trace, 0)
    names = {db_trace.strings[int(db_trace.events["name"][r])] for r in g.syncs.row}
    assert "aclrtSynchronizeStreamWithTimeout" in names
    assert UNLINKED_CAVEAT not in simulate(db_trace, [HostOverhead(0.5)]).caveats


def test_db_layout_fixing_the_late_rank_saves_what_rank_0_waited(db_trace: Trace) -> None:
    a = compute_arrivals(db_trace)
    assert a.culprits == (1,)
    late_ms = float(a.late_ns[a.ranks.index(1)]) / 1e6
    assert late_ms == pytest.approx(3.52, abs=0.05)
    w = simulate(db_trace, [FixSlowRank(1)])
    saved_ms = (w.mean_ns(False) - w.mean_ns(True)) / 1e6
    assert saved_ms == pytest.approx(late_ms, abs=0.3)


def test_the_job_replay_runs_only_where_the_device_is_linked(text_trace: Trace, db_trace: Trace) -> None:
    """The report's job what-if on the text layout said dropping the syncs saved 57.9 ms of 156: the
    window had shrunk to the host's span. It is not run there; the db layout's is."""
    from stepscope.analysis.bundle import analyze
    from stepscope.analysis.registry import JOB_WHATIF

    assert analyze(text_trace).cluster_result(JOB_WHATIF) is None
    assert analyze(db_trace).cluster_result(JOB_WHATIF) is not None
