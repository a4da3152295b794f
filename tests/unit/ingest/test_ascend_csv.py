"""The Ascend summaries reader (``kernel_details.csv`` and the files beside it) on small made-up
exports: steps, collectives, memory, and bad input (one-line errors naming the file, counted repairs)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import stepscope
from stepscope.errors import TraceFormatError
from stepscope.ingest import content_key
from stepscope.ingest.layout import resolve
from stepscope.ingest.readers.ascend_csv import device_steps
from stepscope.ingest.readers.protocol import input_files
from stepscope.model.schema import EventKind
from tests.unit.ingest.helpers import assert_one_line_error, run_cli

HEADER = "Step Id,Model ID,Task ID,Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us),Block Dim\n"
ROWS = [
    "1,4294967295,10,2,MatMul1,MatMulV2,AI_CORE,1700000000000100.5\t,10.25,8",
    "1,4294967295,11,2,Add1,Add,AI_VECTOR_CORE,1700000000000120.000\t,5,8",
    "1,4294967295,N/A,N/A,hcom_allReduce__1_0_1,hcom_allReduce_,HCCL,1700000000000130.001\t,40.5,0",
    "2,4294967295,12,2,MatMul1,MatMulV2,AI_CORE,1700000000000300.000\t,10,8",
    "2,4294967295,13,3,Add1,Add,AI_VECTOR_CORE,1700000000000305.000\t,2.5,8",
]
COMM = {"step1": {"p2p": {}, "collective": {
    "hcom_allReduce__1_0_1@123": {"Communication Time Info": {"Start Timestamp(us)": 1700000000000130.0,
                                                             "Elapse Time(ms)": 0.0405}},
    "Total Op Info": {"Communication Time Info": {"Elapse Time(ms)": 0.0405}}}}}
MATRIX = {"step1": {"p2p": {}, "collective": {"allreduce-total@123": {
    "0-1": {"Transport Type": "HCCS", "Transit Size(MB)": 2.0, "Transit Time(ms)": 0.1, "Bandwidth(GB/s)": 20.0,
            "Op Name": "hcom_allReduce__1_0_1"},
    "0-0": {"Transport Type": "LOCAL", "Transit Size(MB)": 1.0, "Transit Time(ms)": 0.01, "Bandwidth(GB/s)": 100.0}}}}}


def _export(root: Path, rows: list[str] | None = None, rank: int = 0, **files: str) -> Path:
    """A ``rank<N>_ascend_pt`` export with only summaries; ``files`` add or replace summary files."""
    out = root / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "kernel_details.csv").write_text(HEADER + "\n".join(ROWS if rows is None else rows) + "\n")
    (out / "communication.json").write_text(json.dumps(COMM))
    (out / "communication_matrix.json").write_text(json.dumps(MATRIX))
    (out.parent / f"profiler_info_{rank}.json").write_text(json.dumps({"rank_id": rank, "config": {
        "common_config": {"activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"]}}}))
    for name, text in files.items():
        (out / name.replace("__", ".")).write_text(text)
    return root


def test_kernels_collectives_and_steps(tmp_path: Path) -> None:
    t = stepscope.load(_export(tmp_path), use_cache=False)
    ev = t.events
    assert int((ev["kind"] == EventKind.KERNEL).sum()) == 5
    names = t.strings.decode(ev["name"])
    hccl = ev["ts_ns"][names == "hcom_allReduce__1_0_1"]
    assert hccl.tolist() == [1700000000000130001]
    assert ev["dur_ns"][names == "hcom_allReduce__1_0_1"].tolist() == [40500]
    assert sorted(ev["ts_ns"][names == "MatMul1"].tolist()) == [1700000000000100500, 1700000000000300000]
    tracks = {t.strings[n] for n in t.tracks["name"].tolist() if n >= 0}
    assert {"Stream 2", "Stream 3", "Group 123 Communication"} <= tracks
    st = t.steps
    assert st["step"].tolist() == [1, 2] and st["row"].tolist() == [-1, -1]
    assert st["start_ns"].tolist() == [1700000000000100500, 1700000000000300000]
    assert st["end_ns"].tolist() == [1700000000000170501, 1700000000000310000]
    assert sorted(set(ev["step"].tolist())) == [1, 2]
    info = t.rank_info(0)
    assert info.platform == "ascend" and info.metadata["framework"] == "pytorch"
    assert info.metadata["summary_only"].startswith("summary-only trace")
    assert "summary-only" in {d.name for d in t.diagnostics}


def test_collectives_come_from_communication_json_without_hccl_rows(tmp_path: Path) -> None:
    t = stepscope.load(_export(tmp_path, [r for r in ROWS if "hcom" not in r]), use_cache=False)
    names = t.strings.decode(t.events["name"])
    assert t.events["ts_ns"][names == "hcom_allReduce__1_0_1"].tolist() == [1700000000000130000]
    assert t.events["dur_ns"][names == "hcom_allReduce__1_0_1"].tolist() == [40500]


def test_a_row_without_a_usable_time_is_dropped_and_counted(tmp_path: Path) -> None:
    rows = [*ROWS, "2,1,14,2,Bad,Add,AI_CORE,not-a-time,3,8", "2,1,15,2,Bad2,Add,AI_CORE,1700000000000400,,8"]
    t = stepscope.load(_export(tmp_path, rows), use_cache=False)
    assert int((t.events["kind"] == EventKind.KERNEL).sum()) == 5
    diags = {d.name: d for d in t.diagnostics}
    assert diags["ascend-csv-row-dropped"].count == 2 and diags["ascend-csv-row-dropped"].severity == "error"
    assert diags["ascend-csv-bad-value"].count == 2


def test_a_missing_column_is_one_error_naming_the_file(tmp_path: Path) -> None:
    run = _export(tmp_path)
    csv = run / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    csv.write_text("Step Id,Name,Duration(us)\n1,a,1\n")
    with pytest.raises(TraceFormatError, match="no column Start Time") as exc:
        stepscope.load(run, use_cache=False)
    assert exc.value.path == str(csv)
    assert_one_line_error(run_cli("analyze", str(run), "--no-cache", cache_dir=tmp_path), csv)


def test_a_broken_csv_is_one_error_naming_the_file(tmp_path: Path) -> None:
    run = _export(tmp_path)
    csv = run / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    csv.write_text(HEADER + '1,2,3,4,"unclosed,Add,AI_CORE,1,2,3\n1,2\n')
    with pytest.raises(TraceFormatError, match="CSV") as exc:
        stepscope.load(run, use_cache=False)
    assert exc.value.path == str(csv)


def test_a_column_as_wide_as_gigabytes_is_one_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One cell of a million characters among a thousand rows: numpy's fixed-width text would make
    every row that wide (4 GB); refused in one line naming the file and column, never a MemoryError.
    (The budget is lowered here so the test does not need 4 GB to fail without the check.)"""
    from stepscope.ingest.readers import ascend_files

    monkeypatch.setattr(ascend_files, "MAX_COLUMN_BYTES", 64 << 20)
    rows = [ROWS[0].replace("MatMul1", "M" * 1_000_000)] + [ROWS[1]] * 1000
    run = _export(tmp_path, rows)
    csv = run / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    with pytest.raises(TraceFormatError, match="column 'Name' has a cell of 1,000,000 characters") as exc:
        stepscope.load(run, use_cache=False)
    assert exc.value.path == str(csv)


def test_a_header_field_past_the_csv_limit_is_one_error(tmp_path: Path) -> None:
    """A header cell of 200,000 characters (the csv module stops at 131,072): one line naming the
    file, never a ``_csv.Error`` traceback (found by the fuzz harness's long-cell mutation). The
    limit is the csv module's process-wide setting: set to its default here, whatever ran before."""
    import csv as csv_module

    run = _export(tmp_path)
    csv = run / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    csv.write_text(HEADER.replace("Name", "N" * 200_000) + "\n".join(ROWS) + "\n")
    before = csv_module.field_size_limit(131_072)
    try:
        with pytest.raises(TraceFormatError, match="not a readable CSV header") as exc:
            stepscope.load(run, use_cache=False)
    finally:
        csv_module.field_size_limit(before)
    assert exc.value.path == str(csv)
    assert_one_line_error(run_cli("analyze", str(run), "--no-cache", cache_dir=tmp_path), csv)


def test_a_damaged_summary_beside_it_is_a_warning(tmp_path: Path) -> None:
    run = _export(tmp_path, communication_matrix__json="{not json", operator_memory__csv="no,columns\n1,2\n")
    t = stepscope.load(run, use_cache=False)
    bad = [d for d in t.diagnostics if d.name == "ascend-summary-unreadable"]
    assert bad and bad[0].severity == "warning" and bad[0].count == 2
    assert "communication_matrix.json" in bad[0].example or "operator_memory.csv" in bad[0].example
    assert int((t.events["kind"] == EventKind.KERNEL).sum()) == 5


def test_memory_from_operator_memory_and_memory_record(tmp_path: Path) -> None:
    op_mem = ("Name,Size(KB),Allocation Time(us),Release Time(us),Allocation Total Allocated(MB),"
              "Allocation Total Reserved(MB),Release Total Allocated(MB),Release Total Reserved(MB),Device Type\n"
              "aten::empty,1024,1700000000000101\t,1700000000000201\t,1.0,2.0,0.0,2.0,NPU:0\n"
              "aten::add,0.5,1700000000000150\t,,1.00048828125,2.0,,,NPU:0\n")
    record = ("Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),Device Type\n"
              "PTA,1700000000000101\t,1.0,2.0,1.0,NPU:0\nAPP,1700000000000101\t,,4.0,,NPU:0\n")
    t = stepscope.load(_export(tmp_path, operator_memory__csv=op_mem, memory_record__csv=record), use_cache=False)
    m = t.memory
    assert m["bytes"].tolist() == [1048576, 512, -1048576]
    assert m["total_allocated"].tolist() == [1048576, 1049088, 0]
    assert m["addr"].tolist() == [1, 2, 1]  # the allocation's row: its release pairs with it
    names = set(t.strings.decode(t.counters["name"]).tolist())
    assert names == {"memory_record/PTA.Total Allocated(MB)", "memory_record/PTA.Total Reserved(MB)",
                     "memory_record/PTA.Total Active(MB)", "memory_record/APP.Total Reserved(MB)"}


def test_the_cache_key_covers_the_summaries_beside_it(tmp_path: Path) -> None:
    run = _export(tmp_path)
    files = resolve(run).files
    every = input_files(files)
    assert {Path(f).name for f in every} >= {"kernel_details.csv", "communication.json",
                                            "communication_matrix.json", "profiler_info_0.json"}
    before = content_key(every, "")
    (run / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "communication_matrix.json").write_text("{}")
    assert content_key(input_files(files), "") != before


def test_a_header_only_file_has_no_events(tmp_path: Path) -> None:
    t = stepscope.load(_export(tmp_path, []), use_cache=False)
    assert int((t.events["kind"] == EventKind.KERNEL).sum()) == 1  # the collective of communication.json
    assert len(t.steps) == 1


def test_device_steps_never_overlap() -> None:
    step = np.array([1, 1, 2, 2, -1])
    start = np.array([0, 10, 15, 40, 100])
    end = np.array([5, 30, 20, 50, 200])
    assert device_steps(step, start, end) == [(1, 0, 30), (2, 30, 50)]


def test_a_rank_directory_without_its_trace_is_said_not_dropped(tmp_path: Path) -> None:
    """Two ranks, rank 1's summaries gone (only its profiler_info json left): rank 0 is read and a
    warning names rank 1's directory — before, rank 1 vanished without a word; the same from the cache."""
    _export(tmp_path, rank=0)
    _export(tmp_path, rank=1)
    gone = tmp_path / "rank1_ascend_pt"
    for f in (gone / "ASCEND_PROFILER_OUTPUT").iterdir():
        f.unlink()
    for use_cache in (False, True, True):
        t = stepscope.load(tmp_path, use_cache=use_cache)
        assert t.rank_ids == [0] or list(t.rank_ids) == [0]
        (d,) = [d for d in t.diagnostics if d.name == "rank-without-trace"]
        assert d.severity == "warning" and "rank1_ascend_pt" in d.example
