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
