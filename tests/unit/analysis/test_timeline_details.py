"""Many events' details as columns (what the standalone report carries): read back row by row the way
static/details.js does, they equal :func:`event_details` of each row — on the hand-made trace of
test_timeline_event (every row, and a subset whose parents and launch calls are left out) and on the
real H100 run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import stepscope
from stepscope.analysis.timeline_details import details_table
from stepscope.analysis.timeline_event import event_details
from stepscope.model.trace import Trace
from tests.unit.analysis.test_timeline_event import _row, _trace

DATA = Path(__file__).resolve().parents[2] / "data"


def _text(col: dict[str, Any] | None, i: int) -> str | None:
    return None if col is None or col["index"][i] < 0 else col["strings"][col["index"][i]]


def _cell(col: Any, i: int) -> Any:
    if isinstance(col, list):
        return col[i]
    return dict(zip(col["at"], col["values"])).get(i)


def _json(t: str | None) -> Any:
    if t is None:
        return None
    try:
        return json.loads(t)
    except ValueError:
        return t


def read_back(table: dict[str, Any], trace: Trace, row: int) -> dict[str, Any]:
    """static/details.js in Python (names and times of the rows themselves from the trace, as the
    report's windows give them to the app)."""
    table = json.loads(json.dumps(table))  # what the page parses
    rows = np.cumsum(table["row_delta"]).tolist()
    i = rows.index(row)
    refs = {r: j for j, r in enumerate(table["refs"]["row"])}
    ev = trace.events

    def ref(x: int) -> dict[str, Any]:
        if x in refs:
            j, r = refs[x], table["refs"]
            return {"row": x, "name": _text(r["name"], j), "kind": _text(r["kind"], j), "ts_ns": r["ts_ns"][j],
                    "dur_ns": r["dur_ns"][j], "track": r["track"][j]}
        assert x in rows, f"row {x} is neither carried nor a ref"
        full = event_details(trace, 0, x)
        return {k: full[k] for k in ("row", "name", "kind", "ts_ns", "dur_ns", "track")}

    def parent(x: int) -> int:
        if x in refs:
            return int(table["refs"]["parent"][refs[x]])
        back = table["parent_back"][rows.index(x)]
        return x - back if back else -1

    parents, p = [], parent(row)
    while p >= 0 and len(parents) < table["max_parents"]:
        parents.append(ref(p))
        p = parent(p)
    first, count = table["kernel_first"][i], table["kernel_count"][i]
    listed = [] if first < 0 else table["launched"][first:first + min(count, table["max_kernels"])]
    stack = _text(table.get("call_stack"), i)
    args = {k: _cell(c, i) for k, c in table["args"].items()}
    out = {**ref(row), "rank": table["rank"], "cat": _text(table.get("cat"), i), "self_ns": table["self_ns"][i],
           "end_ns": int(ev["ts_ns"][row] + ev["dur_ns"][row]), "depth": int(ev["depth"][row]),
           "step": int(ev["step"][row]), "args": {k: v for k, v in args.items() if v is not None},
           "input_dims": _json(_text(table.get("input_dims"), i)),
           "input_types": _json(_text(table.get("input_types"), i)),
           "concrete_inputs": _json(_text(table.get("concrete_inputs"), i)),
           "call_stack": [f for f in stack.split(";") if f] if stack else [], "parents": parents,
           "launch": ref(row - table["launch_back"][i]) if table["launch_back"][i] else None,
           "op": ref(row - table["op_back"][i]) if table["op_back"][i] else None,
           "kernels": [ref(k) for k in listed], "kernel_count": count, "kernel_ns": table["kernel_ns"][i]}
    return out


def _same(trace: Trace, rows: list[int]) -> dict[str, Any]:
    table = details_table(trace, 0, np.array(rows))
    for row in rows:
        assert read_back(table, trace, row) == json.loads(json.dumps(event_details(trace, 0, row))), row
    return table


def test_every_row_of_the_hand_made_trace(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    rows = np.flatnonzero(trace.events["track"] >= 0).tolist()
    table = _same(trace, rows)
    assert table["refs"]["row"] == []  # everything pointed at is carried
    assert table["kernel_count"][rows.index(_row(trace, "outer"))] == 2
    # outer's kernels (gemm_a, gemm_b) contain inner's (gemm_a): carried once
    assert len(table["launched"]) == 3


def test_a_subset_points_at_rows_it_does_not_carry(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    inner, gemm_b = _row(trace, "inner"), _row(trace, "gemm_b")
    table = _same(trace, [inner, gemm_b])
    names = {_text(table["refs"]["name"], j) for j in range(len(table["refs"]["row"]))}
    # inner's parents, its kernel, gemm_b's launch call and op
    assert {"outer", "ProfilerStep#1", "gemm_a", "cudaLaunchKernel"} <= names
    assert "inner" not in names and "gemm_b" not in names


def test_arguments_shapes_and_stacks_of_a_subset() -> None:
    """The real H100 run: its step's events in full (kernels with grid/block and occupancy, ops with
    shapes), the sparse argument columns read back, every row equal to event_details."""
    if not (DATA / "h100_cuda_train" / "base").exists():
        pytest.skip("tests/data/h100_cuda_train is absent")
    trace = stepscope.load(DATA / "h100_cuda_train" / "base")
    ev = trace.events
    step = np.flatnonzero((ev["step"] == int(np.unique(ev["step"][ev["step"] >= 0])[1])) & (ev["track"] >= 0))
    table = _same(trace, step.tolist())
    assert any(isinstance(c, dict) for c in table["args"].values())  # some argument column is sparse
    assert "grid" in table["args"] and "input_dims" in table
