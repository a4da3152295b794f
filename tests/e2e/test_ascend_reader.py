"""The Ascend reader against the profiler's own summary files of the same run (msinsight 2-rank)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import stepscope
from stepscope.analysis.bundle import analyze
from stepscope.analysis.registry import DISTRIBUTED
from stepscope.model.schema import EventKind

CASE = "ascend_msinsight/small_cnn_2rank_hccl_level1/text"


def _step_trace_time(run: Path, rank: int) -> dict[str, float]:
    path = run / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"
    with path.open() as fh:
        row = next(csv.DictReader(fh))
    return {k: float(v) for k, v in row.items() if k != "Step"}


def _kernel_rows(run: Path, rank: int) -> int:
    path = run / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    with path.open() as fh:
        return sum(1 for _ in csv.DictReader(fh))


@pytest.mark.parametrize("rank", [0, 1])
def test_overlap_matches_the_profilers_summary(shared_traces: Path, rank: int) -> None:
    run = shared_traces / CASE
    gold = _step_trace_time(run, rank)
    trace = stepscope.load(run, use_cache=False)
    dist = analyze(trace, names=["distributed"]).rank(rank).require(DISTRIBUTED)
    comm_not_overlapped_us = float(dist.communication_ns.mean()) / 1e3  # one step in this run
    overlapped_us = float(dist.overlap_ns.mean()) / 1e3
    computing_us = float((dist.computation_ns + dist.overlap_ns).mean()) / 1e3
    assert comm_not_overlapped_us == pytest.approx(gold["Communication(Not Overlapped)"], rel=0.01)
    assert overlapped_us == pytest.approx(gold["Overlapped"], rel=0.01)
    assert computing_us == pytest.approx(gold["Computing"], rel=0.01)


@pytest.mark.parametrize("rank", [0, 1])
def test_compute_tasks_are_the_kernel_details_rows(shared_traces: Path, rank: int) -> None:
    run = shared_traces / CASE
    trace = stepscope.load(run, use_cache=False)
    ev = trace.events
    tasks = (ev["rank"] == rank) & (ev["kind"] == EventKind.KERNEL)
    assert int(tasks.sum()) == _kernel_rows(run, rank)


def test_ranks_platform_and_links(shared_traces: Path) -> None:
    trace = stepscope.load(shared_traces / CASE, use_cache=False)
    assert trace.rank_ids == [0, 1]
    assert {r.platform for r in trace.ranks} == {"ascend"}
    ev = trace.events
    tasks = ev["kind"] == EventKind.KERNEL
    linked = (ev["op"] >= 0) & tasks
    assert linked.sum() > 0.5 * tasks.sum(), "most device tasks are tied to the op that launched them"
    assert len(trace.steps) == 2 and set(trace.steps["step"].tolist()) == {50}
    assert not [d for d in trace.diagnostics if d.severity == "error"]


def test_a_trace_view_whose_events_carry_no_args_still_links_by_flows(shared_traces: Path, tmp_path: Path) -> None:
    """Fuzzing (issue 21): rank 0's trace_view.json with every complete event's args removed made no
    ``ext_id`` column (the args columns are made when some event carries them) and the flow linking
    raised KeyError. The op → task flows carry the links: most tasks are still tied to their op."""
    import json

    src = shared_traces / CASE / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    doc = json.loads(src.read_text())
    events = doc if isinstance(doc, list) else doc["traceEvents"]
    for e in events:
        if e.get("ph") == "X":
            e.pop("args", None)
    dst = tmp_path / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    dst.parent.mkdir()
    dst.write_text(json.dumps(doc))
    ev = stepscope.load(dst, use_cache=False).events
    tasks = ev["kind"] == EventKind.KERNEL
    assert tasks.sum() > 0 and ((ev["op"] >= 0) & tasks).sum() > 0.5 * tasks.sum()
