"""The Ascend text export without ``trace_view.json`` (summaries only) against the profiler's own
numbers of the same run: ``step_trace_time.csv``, ``communication_matrix.json``, and the same
kernels read through ``trace_view.json``.

The run is a copy of ``ascend_msinsight/small_cnn_2rank_hccl_level1/text`` made in a temporary
directory with every ``trace_view.json`` left out (never a copy in the repository).
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import stepscope
from stepscope.advisor.engine import run_advisor
from stepscope.advisor.rules import ALL_RULES
from stepscope.analysis.bundle import Bundle, analyze
from stepscope.analysis.registry import COMM_MATRIX, DISTRIBUTED, KERNELS, MEMORY, REMEDIES
from stepscope.ingest.layout import resolve
from stepscope.model.trace import Trace
from stepscope.report import texts
from stepscope.report.json_out import to_json
from tests.conftest import SHARED_TRACES

CASE = SHARED_TRACES / "ascend_msinsight" / "small_cnn_2rank_hccl_level1" / "text"
OUT = "ASCEND_PROFILER_OUTPUT"


@pytest.fixture(scope="module")
def summary_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The text export copied without its trace_view.json files."""
    if not CASE.is_dir():
        pytest.skip(f"real traces not found at {CASE}")
    run = tmp_path_factory.mktemp("ascend_summaries") / "text"
    shutil.copytree(CASE, run, ignore=shutil.ignore_patterns("trace_view.json"))
    return run


@pytest.fixture(scope="module")
def summary_trace(summary_run: Path) -> Trace:
    return stepscope.load(summary_run, use_cache=False)


@pytest.fixture(scope="module")
def summary_bundle(summary_trace: Trace) -> Bundle:
    return analyze(summary_trace)


def _profiler_split(rank: int) -> dict[str, float]:
    with (CASE / f"rank{rank}_ascend_pt" / OUT / "step_trace_time.csv").open() as fh:
        row = next(csv.DictReader(fh))
    return {k: float(v) for k, v in row.items() if k != "Step"}


def test_the_layout_reads_kernel_details_when_trace_view_is_absent(summary_run: Path) -> None:
    files = resolve(summary_run).files
    assert [Path(f).name for f in files] == ["kernel_details.csv"] * 2
    assert [Path(f).name for f in resolve(CASE).files] == ["trace_view.json"] * 2


@pytest.mark.parametrize("rank", [0, 1])
def test_the_split_equals_the_profilers_step_trace_time(summary_bundle: Bundle, rank: int) -> None:
    """Computing / communication not overlapped / overlapped / free / stage within 0.1 % (measured:
    within 0.0003 %; the CSV rounds every start and duration to 1 ns)."""
    d = summary_bundle.rank(rank).require(DISTRIBUTED)
    gold = _profiler_split(rank)
    ours = {"Computing": d.computation_ns + d.overlap_ns, "Communication(Not Overlapped)": d.communication_ns,
            "Overlapped": d.overlap_ns, "Free": d.other_ns, "Stage": d.step_ns}
    assert list(d.step) == [int(_step_of(rank))]
    for key, ns in ours.items():
        assert float(ns[0]) / 1e3 == pytest.approx(gold[key], rel=1e-3, abs=0.05), key


def _step_of(rank: int) -> str:
    with (CASE / f"rank{rank}_ascend_pt" / OUT / "step_trace_time.csv").open() as fh:
        return next(csv.DictReader(fh))["Step"]


def test_kernels_equal_those_read_through_trace_view(summary_bundle: Bundle) -> None:
    """The same kernels, call for call; times within the CSV's rounding (1 ns per kernel)."""
    full = analyze(stepscope.load(CASE, use_cache=False), names=["kernels"])
    for rank in (0, 1):
        a, b = full.rank(rank).require(KERNELS).by_name, summary_bundle.rank(rank).require(KERNELS).by_name
        calls_a, calls_b = dict(zip(a.name, a.calls)), dict(zip(b.name, b.calls))
        assert calls_a == calls_b
        total_b = dict(zip(b.name, b.total_ns))
        for name, total in zip(a.name, a.total_ns):
            assert abs(int(total) - int(total_b[name])) <= calls_a[name], name
        assert dict(zip(a.name, a.is_comm)) == dict(zip(b.name, b.is_comm))


def _matrix_json(rank: int) -> dict[tuple[object, ...], tuple[object, ...]]:
    doc = json.loads((CASE / f"rank{rank}_ascend_pt" / OUT / "communication_matrix.json").read_text())
    return {(rank, step, kind, op, link): (v["Transport Type"], v["Transit Size(MB)"], v["Transit Time(ms)"],
                                          v["Bandwidth(GB/s)"], v.get("Op Name", ""))
            for step, kinds in doc.items() for kind, ops in kinds.items() for op, links in ops.items()
            for link, v in links.items()}


@pytest.mark.parametrize("layout", ["summaries", "trace_view"])
def test_the_matrix_equals_communication_matrix_json(layout: str, summary_bundle: Bundle) -> None:
    bundle = summary_bundle if layout == "summaries" else analyze(stepscope.load(CASE, use_cache=False),
                                                                  names=["comm_matrix"])
    m = bundle.require_cluster(COMM_MATRIX)
    e = m.entries
    got = {(int(e.rank[i]), e.step[i], e.kind[i], f"{e.op[i]}@{e.group[i]}", f"{e.src[i]}-{e.dst[i]}"):
           (e.transport[i], e.size_mb[i], e.time_ms[i], e.bandwidth_gbps[i], e.op_name[i]) for i in range(len(e))}
    assert got == {**_matrix_json(0), **_matrix_json(1)}
    assert m.ranks == (0, 1)
    link = {(int(s), int(d), str(t)): int(b) for s, d, t, b in zip(m.links.src, m.links.dst, m.links.transport,
                                                                     m.links.bytes)}
    assert link[(0, 1, "HCCS")] == 61_210_624  # allreduce-total 0-1: 61.210624 MB


def test_summary_only_is_a_diagnostic_and_in_the_json(summary_trace: Trace, summary_bundle: Bundle) -> None:
    only = [d for d in summary_trace.diagnostics if d.name == "summary-only"]
    assert len(only) == 2 and all("no host timeline" in d.example for d in only)
    assert {r.platform for r in summary_trace.ranks} == {"ascend"}
    assert summary_trace.rank_ids == [0, 1]
    doc = to_json(summary_bundle)
    assert "summary-only" in {d["name"] for d in doc["diagnostics"]}
    assert len(doc["cluster"]["comm_matrix"]["entries"]) == 96


def test_host_side_rules_report_not_run_with_the_reason(summary_bundle: Bundle) -> None:
    advice = run_advisor(summary_bundle)
    host_rules = {r.RULE_ID for r in ALL_RULES if getattr(r, "NEEDS_HOST_TIMELINE", False)}
    assert {"dataloader-bound", "launch-bound", "sync-in-step", "heavy-host-op-no-gpu"} <= host_rules
    not_run = {n.rule: n.reason for n in advice.not_run}
    for rule in host_rules:
        assert "summary-only" in not_run[rule] and "no host timeline" in not_run[rule]
    assert not [f for f in advice.findings if f.rule in host_rules]
    assert [f.rule for f in advice.findings] == ["comm-not-overlapped"]
    assert summary_bundle.rank(0).get(REMEDIES) is None
    assert "host chain" in summary_bundle.rank(0).skipped["remedies"]
    for v in advice.verdicts:
        assert not v.host_timeline and v.bound == "communication"
        assert "no host timeline to say why" in texts.verdict_text(v)


def test_memory_comes_from_operator_memory_csv(summary_bundle: Bundle) -> None:
    with (CASE / "rank0_ascend_pt" / OUT / "operator_memory.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    released = sum(1 for r in rows if r["Release Time(us)"].strip())
    mem = summary_bundle.rank(0).require(MEMORY)
    allocs = mem.allocations
    assert len(allocs.size_bytes) == len(rows)
    assert int((allocs.free_ts_ns >= 0).sum()) == released
    assert int(np.max(mem.curves[0].allocated_bytes)) == round(max(
        float(r["Allocation Total Allocated(MB)"]) for r in rows) * 2**20)
