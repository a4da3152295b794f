"""The Ascend database reader (``ascend_pytorch_profiler_N.db``) against the profiler's own summary of
the same capture (``analysis.db`` ``StepTraceTime``) and against the text export of the same script.

The db and text folders hold two captures of one script (their timestamps and HCCL op ids differ):
the compute kernels agree to well under 1 %, but the first all-reduce waits for the other rank a
different time in each, so communication is compared with the db's own summary, not the text's.
"""

from __future__ import annotations

import csv
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import stepscope
from stepscope.analysis.bundle import analyze
from stepscope.analysis.comm import LIBRARY_PATTERN
from stepscope.analysis.registry import DISTRIBUTED
from stepscope.ingest.layout import resolve
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

CASE = "ascend_msinsight/small_cnn_2rank_hccl_level1"


@pytest.fixture
def db_trace(shared_traces: Path) -> Trace:
    return stepscope.load(shared_traces / CASE / "db", use_cache=False)


@pytest.fixture
def text_trace(shared_traces: Path) -> Trace:
    return stepscope.load(shared_traces / CASE / "text", use_cache=False)


def _db_summary(run: Path, rank: int) -> dict[str, float]:
    path = run / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "analysis.db"
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    con.row_factory = sqlite3.Row
    row = dict(con.execute("SELECT * FROM StepTraceTime").fetchone())
    con.close()
    return {k: float(v) for k, v in row.items() if k != "step"}


def _text_summary(run: Path, rank: int) -> dict[str, float]:
    path = run / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"
    with path.open() as fh:
        row = next(csv.DictReader(fh))
    return {k: float(v) for k, v in row.items() if k != "Step"}


def _kernels(trace: Trace, rank: int) -> tuple[np.ndarray, np.ndarray]:
    ev = trace.events
    rows = np.flatnonzero((ev["rank"] == rank) & (ev["kind"] == EventKind.KERNEL))
    comm = np.array([bool(LIBRARY_PATTERN.search(trace.strings[n])) for n in ev["name"][rows].tolist()], bool)
    return rows, comm


def _distributed_us(trace: Trace, rank: int) -> dict[str, float]:
    dist = analyze(trace, names=["distributed"]).rank(rank).require(DISTRIBUTED)
    return {"not_overlapped": float(dist.communication_ns.mean()) / 1e3,
            "overlapped": float(dist.overlap_ns.mean()) / 1e3,
            "computing": float((dist.computation_ns + dist.overlap_ns).mean()) / 1e3}


def test_layout_picks_the_profiler_db(shared_traces: Path) -> None:
    files = resolve(shared_traces / CASE / "db").files
    assert [Path(f).name for f in files] == ["ascend_pytorch_profiler_0.db", "ascend_pytorch_profiler_1.db"]


def test_ranks_platform_steps_links(db_trace: Trace) -> None:
    assert db_trace.rank_ids == [0, 1]
    assert {r.platform for r in db_trace.ranks} == {"ascend"}
    assert len(db_trace.steps) == 2 and set(db_trace.steps["step"].tolist()) == {50}
    ev = db_trace.events
    tasks = ev["kind"] == EventKind.KERNEL
    assert ((ev["op"] >= 0) & tasks).sum() > 0.9 * tasks.sum(), "device tasks are tied to the op that launched them"
    assert ((ev["launch"] >= 0) & tasks).sum() > 0.9 * tasks.sum(), "and to the CANN call that launched them"
    assert not [d for d in db_trace.diagnostics if d.severity == "error"]
    assert len(db_trace.memory) > 0 and (db_trace.memory["bytes"] > 0).any() and (db_trace.memory["bytes"] < 0).any()


@pytest.mark.parametrize("rank", [0, 1])
def test_matches_the_dbs_own_step_summary(shared_traces: Path, db_trace: Trace, rank: int) -> None:
    gold = _db_summary(shared_traces / CASE / "db", rank)
    got = _distributed_us(db_trace, rank)
    assert got["not_overlapped"] == pytest.approx(gold["communication_not_overlapped"], rel=0.01)
    assert got["overlapped"] == pytest.approx(gold["overlapped"], rel=0.01)
    assert got["computing"] == pytest.approx(gold["computing"], rel=0.01)
    rows, _ = _kernels(db_trace, rank)
    total_us = float(db_trace.events["dur_ns"][rows].sum()) / 1e3
    assert total_us == pytest.approx(gold["computing"] + gold["communication"], rel=0.01)


@pytest.mark.parametrize("rank", [0, 1])
def test_agrees_with_the_text_export(shared_traces: Path, db_trace: Trace, text_trace: Trace, rank: int) -> None:
    db_rows, db_comm = _kernels(db_trace, rank)
    tx_rows, tx_comm = _kernels(text_trace, rank)
    assert abs(len(db_rows) - len(tx_rows)) <= 2
    assert db_comm.sum() == tx_comm.sum() > 0, "the collectives are recognised as communication"
    dur_db, dur_tx = db_trace.events["dur_ns"][db_rows], text_trace.events["dur_ns"][tx_rows]
    assert dur_db[~db_comm].sum() == pytest.approx(dur_tx[~tx_comm].sum(), rel=0.01)
    gold = _text_summary(shared_traces / CASE / "text", rank)
    got = _distributed_us(db_trace, rank)
    assert got["overlapped"] == pytest.approx(gold["Overlapped"], rel=0.02)
    assert got["computing"] == pytest.approx(gold["Computing"], rel=0.02)
    assert got["not_overlapped"] == pytest.approx(gold["Communication(Not Overlapped)"], rel=0.05)  # two captures


@pytest.mark.parametrize("command", ["analyze", "advise"])
def test_cli_exits_zero(shared_traces: Path, command: str) -> None:
    done = subprocess.run([sys.executable, "-m", "stepscope", command, str(shared_traces / CASE / "db")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
