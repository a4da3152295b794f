"""The Nsight Systems SQLite reader against pipit's reference CSVs of the same export."""

from __future__ import annotations

import csv
import re
import shutil
import sqlite3
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import stepscope
from stepscope.model.schema import EventKind, MemcpyKind

CASE = "nsys_pipit/cloverleaf_cuda_a100"


def _enter_leave_totals(path: Path, name_of: str = "Name") -> dict[str, tuple[int, int]]:
    """Per name: (count, summed Leave − Enter ns) from an Enter/Leave CSV."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    with path.open() as fh:
        for row in csv.DictReader(fh):
            if row["Event Type"] != "Enter":
                continue
            dur = int(row["_matching_timestamp"]) - int(row["Timestamp (ns)"])
            out[row[name_of]][0] += 1
            out[row[name_of]][1] += dur
    return {k: (v[0], v[1]) for k, v in out.items()}


def test_gpu_activities_match_reference(shared_traces: Path) -> None:
    trace = stepscope.load(shared_traces / CASE, use_cache=False)
    gold = _enter_leave_totals(shared_traces / CASE / "expected" / "cloverleaf_gpu_trace.csv")
    ev = trace.events
    kernels = ev["kind"] == EventKind.KERNEL
    for name, (count, total_ns) in gold.items():
        if "memcpy" in name.lower():
            continue
        # the reference lists CUPTI's short names; stepscope keeps the demangled name, like Kineto
        mine = kernels & trace.strings.mask(lambda s, n=name: f"::{n}<" in s)[ev["name"]]
        assert (int(mine.sum()), int(ev["dur_ns"][mine].sum())) == (count, total_ns), name
    copies = ev["kind"] == EventKind.MEMCPY
    gold_h2d = sum(v[1] for k, v in gold.items() if k.upper().endswith("HTOD"))
    mine_h2d = copies & (ev["copy_kind"] == MemcpyKind.H2D)
    assert gold_h2d > 0
    assert int(ev["dur_ns"][mine_h2d].sum()) == gold_h2d
    assert int(trace.gpu_mask().sum()) == sum(v[0] for v in gold.values())


def test_runtime_calls_match_reference(shared_traces: Path) -> None:
    trace = stepscope.load(shared_traces / CASE, use_cache=False)
    gold = _enter_leave_totals(shared_traces / CASE / "expected" / "cloverleaf-cuda_api_trace.csv")
    ev = trace.events
    runtime = ev["kind"] == EventKind.RUNTIME
    names = trace.names(ev["name"])
    for raw, (count, _total_ns) in gold.items():
        name = re.sub(r"_v\d+$", "", raw)
        mine = runtime & (names == name)
        if not mine.any():  # driver-API calls (cu*) are not in the runtime table of the export
            continue
        assert int(mine.sum()) == count, raw
    sync = runtime & (names == "cudaDeviceSynchronize")
    c, t = gold["cudaDeviceSynchronize_v3020"]
    assert (int(sync.sum()), int(ev["dur_ns"][sync].sum())) == (c, t)


def _with_old_schema_duplicates(src: Path, dst: Path) -> int:
    """A copy of the export where every ``cudaMemcpy_v3020`` call is recorded a second time as
    ``cudaMemcpy`` with the same correlation id, thread and times, as old nsys exports do."""
    shutil.copy(src, dst)
    con = sqlite3.connect(dst)
    try:
        (new_id,) = con.execute("SELECT MAX(id) + 1 FROM StringIds").fetchone()
        con.execute("INSERT INTO StringIds (id, value) VALUES (?, 'cudaMemcpy')", (new_id,))
        cols = [r[1] for r in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_RUNTIME)")]
        picked = ", ".join("?" if c == "nameId" else c for c in cols)
        n = con.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME ({', '.join(cols)}) SELECT {picked} FROM "
                        "CUPTI_ACTIVITY_KIND_RUNTIME WHERE nameId = (SELECT id FROM StringIds WHERE "
                        "value = 'cudaMemcpy_v3020')", (new_id,)).rowcount
        con.commit()
    finally:
        con.close()
    return int(n)


def test_old_schema_duplicated_runtime_calls_count_once(shared_traces: Path, tmp_path: Path) -> None:
    src = next((shared_traces / CASE).glob("*.sqlite"))
    assert _with_old_schema_duplicates(src, tmp_path / "old.sqlite") == 279
    trace = stepscope.load(tmp_path / "old.sqlite", use_cache=False)
    ev = trace.events
    memcpy = (ev["kind"] == EventKind.RUNTIME) & (trace.names(ev["name"]) == "cudaMemcpy")
    assert int(memcpy.sum()) == 279
    assert int((ev["kind"] == EventKind.RUNTIME).sum()) == 3048  # pipit's reference: 3,048 CUDA API calls
    copies = np.flatnonzero(ev["kind"] == EventKind.MEMCPY)
    assert (ev["launch"][copies] >= 0).all() and len(np.unique(ev["launch"][copies])) == len(copies)


def test_links_devices_and_no_diagnostics(shared_traces: Path) -> None:
    trace = stepscope.load(shared_traces / CASE, use_cache=False)
    gpu = trace.gpu_mask()
    assert np.all(trace.events["launch"][gpu] >= 0), "every GPU activity is linked to its runtime call"
    dev = trace.device_of_rank(0)
    assert dev is not None and dev.name == "NVIDIA A100-SXM4-80GB" and dev.sm_count == 108
    assert not [d for d in trace.diagnostics if d.severity == "error"]


def test_corrupt_sqlite_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "junk.sqlite"
    bad.write_bytes(b"SQLite format 3\x00" + b"\x07" * 500)
    with pytest.raises(stepscope.StepscopeError, match=r"junk\.sqlite"):
        stepscope.load(bad, use_cache=False)


def _with_mpi_calls(src: Path, dst: Path, calls: list[tuple[str, int, int]]) -> int:
    """A copy of the export with ``nsys --trace=mpi`` tables holding ``calls`` (name, start, end) on
    the thread that makes the CUDA runtime calls; returns that thread's globalTid."""
    shutil.copy(src, dst)
    con = sqlite3.connect(dst)
    try:
        (gtid,) = con.execute("SELECT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY globalTid "
                              "ORDER BY COUNT(*) DESC LIMIT 1").fetchone()
        (base,) = con.execute("SELECT MAX(id) + 1 FROM StringIds").fetchone()
        names = sorted({c[0] for c in calls})
        con.executemany("INSERT INTO StringIds (id, value) VALUES (?, ?)", [(base + i, n) for i, n in enumerate(names)])
        for table in ("MPI_COLLECTIVES_EVENTS", "MPI_P2P_EVENTS"):
            con.execute(f"CREATE TABLE {table} (start INT NOT NULL, end INT NOT NULL, globalTid INT, textId INT)")
        for name, start, end in calls:
            table = "MPI_COLLECTIVES_EVENTS" if "reduce" in name.lower() else "MPI_P2P_EVENTS"
            con.execute(f"INSERT INTO {table} VALUES (?, ?, ?, ?)", (start, end, gtid, base + names.index(name)))
        con.commit()
    finally:
        con.close()
    return int(gtid)


def _largest_device_gap(src: Path) -> tuple[int, int]:
    """The longest stretch inside the run with no kernel, copy or memset on any stream (ns)."""
    con = sqlite3.connect(src)
    try:
        rows = sorted(con.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL SELECT start, end "
                                  "FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchall())
    finally:
        con.close()
    best, reach = (0, 0), rows[0][1]
    for start, end in rows[1:]:  # a test may walk the rows: the product must not
        if start - reach > best[1] - best[0]:
            best = (reach, start)
        reach = max(reach, end)
    return best


def test_mpi_calls_are_host_communication(shared_traces: Path, tmp_path: Path) -> None:
    from stepscope.analysis.breakdown import compute_breakdown
    src = next((shared_traces / CASE).glob("*.sqlite"))
    lo, hi = _largest_device_gap(src)
    assert hi - lo > 1_000_000  # cloverleaf has a 1 ms+ stretch with the GPU idle
    # the device is idle there, and communication outranks runtime calls: the calls are all communication
    q = (hi - lo) // 10
    calls = [("MPI_Allreduce", lo + q, lo + 3 * q), ("MPI_Waitall", lo + 4 * q, lo + 8 * q),
             ("MPI_Isend", lo + 8 * q + 10, lo + 9 * q)]
    _with_mpi_calls(src, tmp_path / "mpi.sqlite", calls)
    before = compute_breakdown(stepscope.load(src, use_cache=False), 0)
    trace = stepscope.load(tmp_path / "mpi.sqlite", use_cache=False)
    ev = trace.events
    mpi = np.flatnonzero(ev["kind"] == EventKind.COMMUNICATION)
    assert sorted(trace.names(ev["name"][mpi]).tolist()) == ["MPI_Allreduce", "MPI_Isend", "MPI_Waitall"]
    total = sum(end - start for _, start, end in calls)
    assert int(ev["dur_ns"][mpi].sum()) == total
    after = compute_breakdown(trace, 0)
    assert int(after.columns()["communication_ns"][0]) - int(before.columns()["communication_ns"][0]) == total
    assert int(after.columns()["total_ns"][0]) == int(before.columns()["total_ns"][0])
