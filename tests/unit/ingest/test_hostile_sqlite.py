"""Hostile SQLite traces (issue 21): the Nsight Systems and Ascend database readers let
``sqlite3.OperationalError`` (text that is not UTF-8), ``DatabaseError`` (a malformed image),
``ValueError`` (text in an integer column) and ``TypeError`` (NULL in a required column) escape, and
an export with a kernel's start and end swapped gave negative kernel times without a word.

Each file is a hand-made, minimal export written to ``tmp_path``: a repairable value is repaired and
counted, an unreadable file is one :class:`TraceFormatError` naming it (exit code 2 on the CLI)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import stepscope
from stepscope.errors import TraceFormatError
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace
from tests.unit.ingest.helpers import assert_one_line_error
from tests.unit.ingest.test_bad_input import run_main

KERNEL_COLS = ("start, end, deviceId, streamId, correlationId, demangledName, registersPerThread, gridX, gridY, "
               "gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory")
#: two kernels of 100 and 200 ns, each launched by a runtime call on thread 7 of process 5
KERNELS = [(1000, 1100, 0, 7, 1, 1, 32, 4, 1, 1, 128, 1, 1, 0, 0),
           (2000, 2200, 0, 7, 2, 1, 32, 4, 1, 1, 128, 1, 1, 0, 0)]
RUNTIME = [(900, 950, (5 << 24) | 7, 1, 2), (1900, 1950, (5 << 24) | 7, 2, 2)]
STRINGS: list[tuple[int, object]] = [(1, "sgemm_kernel"), (2, "cudaLaunchKernel_v7000")]


def nsys_db(path: Path, kernels: Sequence[tuple[object, ...]] = KERNELS,
            runtime: Sequence[tuple[object, ...]] = RUNTIME,
            strings: Sequence[tuple[int, object]] = STRINGS) -> Path:
    """A minimal ``nsys export --type sqlite`` file (values as given: INTEGER columns keep text)."""
    con = sqlite3.connect(path)
    typed = ", ".join(c.strip() + " INTEGER" for c in KERNEL_COLS.split(","))
    con.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL ({typed})")
    con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, globalTid INTEGER, "
                "correlationId INTEGER, nameId INTEGER)")
    con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    con.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({', '.join('?' * 15)})", kernels)
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?)", runtime)
    for i, v in strings:  # bytes become TEXT that is not valid UTF-8
        con.execute("INSERT INTO StringIds VALUES (?, CAST(? AS TEXT))", (i, v))
    con.commit()
    con.close()
    return path


def _counts(trace: Trace) -> dict[str, int]:
    return {d.name: d.count for d in trace.diagnostics}


def _kernels(trace: Trace) -> np.ndarray:
    return np.flatnonzero(trace.events["kind"] == EventKind.KERNEL)


def test_a_well_formed_export_reads_without_repairs(tmp_path: Path) -> None:
    trace = stepscope.load(nsys_db(tmp_path / "ok.sqlite"), use_cache=False)
    k = _kernels(trace)
    assert trace.events["dur_ns"][k].tolist() == [100, 200]
    assert set(trace.names(trace.events["name"][k]).tolist()) == {"sgemm_kernel"}
    assert int(trace.events["grid_x"][k][0]) == 4
    assert _counts(trace) == {}


def test_swapped_kernel_start_and_end_are_repaired_and_counted(tmp_path: Path) -> None:
    """Issue 21: negative kernel times and a GPU busy time of 9.4 ms instead of 303.8 ms, no diagnostic."""
    swapped = [KERNELS[0], (2200, 2000, *KERNELS[1][2:])]
    trace = stepscope.load(nsys_db(tmp_path / "swapped.sqlite", kernels=swapped), use_cache=False)
    k = _kernels(trace)
    assert trace.events["ts_ns"][k].tolist() == [1000, 2000]
    assert trace.events["dur_ns"][k].tolist() == [100, 200]
    assert _counts(trace) == {"interval-inverted": 1}


def test_text_that_is_not_utf8_is_read_with_replacement_and_counted(tmp_path: Path) -> None:
    strings = [(1, b"sgemm_\xff\xfe"), STRINGS[1]]
    trace = stepscope.load(nsys_db(tmp_path / "utf8.sqlite", strings=strings), use_cache=False)
    assert set(trace.names(trace.events["name"][_kernels(trace)]).tolist()) == {"sgemm_\ufffd\ufffd"}
    assert _counts(trace) == {"sqlite-text-not-utf8": 1}


def test_text_in_integer_columns_reads_as_unknown_and_is_counted(tmp_path: Path) -> None:
    """``gridX = ''`` and a ``globalTid`` of text raised ValueError."""
    kernels = [(*KERNELS[0][:7], "", *KERNELS[0][8:]), KERNELS[1]]
    runtime = [(900, 950, "abc", 1, 2), RUNTIME[1]]
    trace = stepscope.load(nsys_db(tmp_path / "text.sqlite", kernels=kernels, runtime=runtime), use_cache=False)
    assert trace.events["grid_x"][_kernels(trace)].tolist() == [0, 4]
    assert len(trace.events) == 4
    assert _counts(trace) == {"sqlite-value-invalid": 2}


def test_null_in_a_required_column_drops_the_row_with_a_count(tmp_path: Path) -> None:
    """A NULL start raised TypeError."""
    kernels = [(None, *KERNELS[0][1:]), KERNELS[1]]
    trace = stepscope.load(nsys_db(tmp_path / "null.sqlite", kernels=kernels), use_cache=False)
    assert trace.events["dur_ns"][_kernels(trace)].tolist() == [200]
    assert _counts(trace) == {"sqlite-row-dropped": 1}


def _malformed(tmp_path: Path) -> Path:
    """A valid export whose table pages are overwritten with junk (the header page intact)."""
    path = nsys_db(tmp_path / "malformed.sqlite", kernels=KERNELS * 200)
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page : len(data)] = bytes(range(256)) * ((len(data) - page) // 256) + b"\x00" * ((len(data) - page) % 256)
    path.write_bytes(bytes(data))
    return path


def test_a_malformed_image_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _malformed(tmp_path)
    with pytest.raises(TraceFormatError) as info:
        stepscope.load(path, use_cache=False)
    assert path.name in str(info.value) and "\n" not in str(info.value)
    assert_one_line_error(run_main(["analyze", "--no-cache", str(path)], capsys), path)


# ---- Ascend profiler database ------------------------------------------------------------------

def ascend_db(path: Path, tasks: Sequence[tuple[object, ...]], strings: Sequence[tuple[int, object]]) -> Path:
    """A minimal ``ascend_pytorch_profiler_0.db``: device tasks (their type's string id) only."""
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE TASK (startNs INTEGER, endNs INTEGER, deviceId INTEGER, streamId INTEGER, "
                "connectionId INTEGER, taskType INTEGER, globalTaskId INTEGER)")
    con.execute("CREATE TABLE STRING_IDS (id INTEGER PRIMARY KEY, value TEXT)")
    con.executemany("INSERT INTO TASK VALUES (?, ?, ?, ?, ?, ?, ?)", tasks)
    for i, v in strings:
        con.execute("INSERT INTO STRING_IDS VALUES (?, CAST(? AS TEXT))", (i, v))
    con.commit()
    con.close()
    return path


ASCEND_TASKS = [(1000, 1100, 0, 3, 1, 1, 1), (2000, 2300, 0, 3, 2, 1, 2)]


def test_ascend_db_repairs_are_counted(tmp_path: Path) -> None:
    """Not UTF-8 (OperationalError), text in deviceId (ValueError), NULL start (TypeError), end < start."""
    tasks = [(1100, 1000, 0, 3, 1, 1, 1), (2000, 2300, "x", 3, 2, 1, 2), (None, 10, 0, 3, 3, 1, 3)]
    path = ascend_db(tmp_path / "ascend_pytorch_profiler_0.db", tasks, [(1, b"AI_\xffCORE")])
    trace = stepscope.load(path, use_cache=False)
    assert sorted(trace.events["dur_ns"].tolist()) == [100, 300]
    assert _counts(trace) == {"interval-inverted": 1, "sqlite-row-dropped": 1, "sqlite-text-not-utf8": 1,
                              "sqlite-value-invalid": 1}


def test_ascend_db_well_formed_has_no_repairs(tmp_path: Path) -> None:
    path = ascend_db(tmp_path / "ascend_pytorch_profiler_0.db", ASCEND_TASKS, [(1, "AI_CORE")])
    trace = stepscope.load(path, use_cache=False)
    assert sorted(trace.events["dur_ns"].tolist()) == [100, 300]
    assert _counts(trace) == {}


def test_a_damaged_schema_quoted_over_lines_is_still_one_line(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Fuzzing (issue 21): a flipped byte in a table's ``CREATE TABLE`` text, which nsys writes over
    several lines, made SQLite's message (it quotes the schema) a three-line error."""
    path = nsys_db(tmp_path / "t.sqlite")
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE ENUM_X (id INTEGER,\n    name TEXT,\n    label TEXT)")
    con.execute("PRAGMA writable_schema = ON")
    con.execute("UPDATE sqlite_master SET sql = 'CREATE TABLE ENUM_X (id INTEGER,\n    `name TEXT,\n    label TEXT)'"
                " WHERE name = 'ENUM_X'")
    con.commit()
    con.close()
    with pytest.raises(TraceFormatError) as info:
        stepscope.load(path, use_cache=False)
    assert "malformed database schema" in str(info.value) and "\n" not in str(info.value)
    assert_one_line_error(run_main(["analyze", "--no-cache", str(path)], capsys), path)


@pytest.mark.parametrize("start,end", [(1000, 2**63 - 1), (-(2**63), 1100), (1000, -(2**63))])
def test_absurd_interval_ends_drop_the_event_with_a_count(tmp_path: Path, start: int, end: int,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Fuzzing (issue 21): an edited export's end of 2^63 − 1 or start of −2^63 passed the reader,
    and the analyses overflowed (``OverflowError`` in ``intervals.union`` and the what-if replay).
    The event is dropped and counted; the other kernel (200 ns) is read as it is."""
    path = nsys_db(tmp_path / "t.sqlite", kernels=[(start, end, *KERNELS[0][2:]), KERNELS[1]])
    trace = stepscope.load(path, use_cache=False)
    k = _kernels(trace)
    assert trace.events["dur_ns"][k].tolist() == [200]
    assert _counts(trace)["event-absurd-time"] == 1
    res = run_main(["analyze", "--no-cache", "--json", str(path)], capsys)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("value", [b"\x00\xff", 7, None])
def test_a_blob_or_number_in_the_string_table_is_read_as_text(tmp_path: Path, value: object,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Fuzzing (issue 21): a BLOB in ``STRING_IDS.value`` came back as ``bytes`` and the step finder's
    regex raised TypeError on it. A BLOB or a number is read as text (a BLOB that is not UTF-8 with
    replacement characters, counted), NULL as no name; the two tasks are read either way."""
    path = ascend_db(tmp_path / "ascend_pytorch_profiler_0.db", ASCEND_TASKS, [(1, "AI_CORE")])
    con = sqlite3.connect(path)
    con.execute("UPDATE STRING_IDS SET value = ? WHERE id = 1", (value,))
    con.commit()
    con.close()
    trace = stepscope.load(path, use_cache=False)
    assert sorted(trace.events["dur_ns"].tolist()) == [100, 300]
    assert _counts(trace) == ({"sqlite-text-not-utf8": 1} if isinstance(value, bytes) else {})
    res = run_main(["analyze", "--no-cache", "--json", str(path)], capsys)
    assert res.returncode == 0, res.stderr


def test_a_schema_that_is_not_utf8_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Fuzzing (issue 21): a flipped byte made a table's schema text invalid UTF-8; SQLite's message
    quotes it, and Python raised UnicodeDecodeError decoding the message instead of DatabaseError."""
    path = nsys_db(tmp_path / "t.sqlite")
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE ENUM_X (id INTEGER)")
    con.execute("PRAGMA writable_schema = ON")
    bad = "CREATE TABL\xc5 ENUM_X (id INTEGER)".encode("latin-1").hex()  # 0xC5 in a token: not UTF-8
    con.execute(f"UPDATE sqlite_master SET sql = CAST(X'{bad}' AS TEXT) WHERE name = 'ENUM_X'")
    con.commit()
    con.close()
    with pytest.raises(TraceFormatError):
        stepscope.load(path, use_cache=False)
    assert_one_line_error(run_main(["analyze", "--no-cache", str(path)], capsys), path)


def _ascend_export(tmp_path: Path) -> tuple[Path, Path]:
    """A one-rank Ascend db export: ``rank0_ascend_pt/profiler_info_0.json`` beside
    ``ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db`` (a well-formed database)."""
    run = tmp_path / "rank0_ascend_pt"
    (run / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    (run / "profiler_info_0.json").write_text('{"config": {}, "rank_id": 0}')
    db = ascend_db(run / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db", ASCEND_TASKS, [(1, "AI_CORE")])
    return run, db


@pytest.mark.parametrize(("damage", "problem"), [
    ("header", "not a readable SQLite file"),  # no SQLite header: was read as JSON ("not a JSON trace")
    ("pages", "not a readable SQLite file"),  # the header intact, every page after it junk
    ("empty", "file is empty"),  # SQLite reads an empty file as an empty database
])
def test_a_damaged_ascend_db_beside_its_profiler_info_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               damage: str, problem: str) -> None:
    run, db = _ascend_export(tmp_path)
    assert stepscope.load(run, use_cache=False).event_count == 2  # the export as made reads
    data = db.read_bytes()
    db.write_bytes({"header": b"\0" * 100 + data[100:], "pages": data[:100] + bytes(range(256)) * 16,
                    "empty": b""}[damage])
    res = run_main(["analyze", "--no-cache", str(run)], capsys)
    assert_one_line_error(res, db)
    assert problem in res.stderr and "profiler_info" not in res.stderr


def test_an_ascend_export_without_its_db_names_the_output_directory(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The database deleted: was read through ``profiler_info_0.json`` ("no traceEvents array")."""
    run, db = _ascend_export(tmp_path)
    db.unlink()
    res = run_main(["analyze", "--no-cache", str(run)], capsys)
    assert_one_line_error(res, db.parent)
    assert "ascend_pytorch_profiler_*.db" in res.stderr and "profiler_info" not in res.stderr
