"""Exposed vs overlapped communication per rank and step on the shared multi-rank traces: against the
Ascend profiler's own per-rank ``step_trace_time.csv`` (Communication(Not Overlapped), Overlapped;
read with ``csv``), and, on DLRM, the JSON table equal number for number to every rank's
``distributed.steps``."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import stepscope
from stepscope.analysis.bundle import analyze
from stepscope.analysis.registry import EXPOSED_COMM
from stepscope.report import json_out

ASCEND = "ascend_msinsight/small_cnn_2rank_hccl_level1/text"


def _gold(run: Path, rank: int) -> dict[str, str]:
    with (run / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv").open() as fh:
        return next(csv.DictReader(fh))


def test_ascend_exposed_and_overlapped_equal_the_profilers_step_trace_time(shared_traces: Path) -> None:
    run = shared_traces / ASCEND
    e = analyze(stepscope.load(run), names=["exposed_comm"]).cluster_result(EXPOSED_COMM)
    assert e is not None
    s = e.steps
    assert s.rank.tolist() == [0, 1]
    for i, rank in enumerate(s.rank.tolist()):  # two ranks, one step each
        gold = _gold(run, rank)
        assert int(s.step[i]) == int(gold["Step"])
        assert float(s.exposed_ns[i]) / 1e3 == pytest.approx(float(gold["Communication(Not Overlapped)"]), rel=1e-3)
        assert float(s.overlapped_ns[i]) / 1e3 == pytest.approx(float(gold["Overlapped"]), rel=1e-3)
        assert float(s.comm_ns[i]) / 1e3 == pytest.approx(float(gold["Communication"]), rel=1e-3)


def test_dlrm_table_is_the_distributed_views_numbers(shared_traces: Path) -> None:
    doc = json_out.to_json(analyze(stepscope.load(shared_traces / "param_dlrm/dlrm_8rank_v100")))
    table = doc["cluster"]["exposed_comm"]["steps"]
    per_rank = [(r["rank"], s["step"], s["communication_ms"], s["overlap_ms"], s["step_ms"]) for r in doc["ranks"]
                for s in r["distributed"]["steps"]]
    assert [(r["rank"], r["step"], r["exposed_ms"], r["overlapped_ms"], r["step_ms"]) for r in table] == per_rank
    assert len(table) == 8 and all(r["exposed_ms"] > 0 for r in table)
