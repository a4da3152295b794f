"""A clicked event's details and search by name, on a hand-made trace (times in µs → ×1000 ns).

Host thread: ProfilerStep#1 0-100 ⊃ outer 10-60 ⊃ inner 20-40. Launch calls at 22 (inside inner),
45 (inside outer only) and 70 (outside both) start gemm_a 50-70, gemm_b 75-80 and relu 85-90.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from builders import TraceBuilder, kargs

from stepscope.analysis.timeline_event import NoSuchEvent, event_details, search_events
from stepscope.errors import StepscopeError
from stepscope.model.trace import Trace

US = 1000


def _trace(tmp_path: Path) -> Trace:
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.op("outer", ts=10, dur=50, **kargs({"Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"],
                                          "Call stack": "train.py(10): step;model.py(5): forward"}))
    b.op("inner", ts=20, dur=20)
    b.launch_kernel("gemm_a", launch_ts=22, launch_dur=2, ts=50, dur=20,
                    **kargs({"grid": [4, 1, 1], "block": [128, 1, 1], "registers per thread": 32}))
    b.launch_kernel("gemm_b", launch_ts=45, launch_dur=2, ts=75, dur=5)
    b.launch_kernel("relu", launch_ts=70, launch_dur=2, ts=85, dur=5)
    return b.load(tmp_path)


def _row(trace: Trace, name: str) -> int:
    return int(np.flatnonzero(trace.events["name"] == trace.strings.find(name))[0])


def test_a_host_op_lists_the_gpu_work_launched_inside_it(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    d = event_details(trace, 0, _row(trace, "outer"))
    assert (d["name"], d["kind"]) == ("outer", "cpu_op")
    assert (d["ts_ns"], d["dur_ns"], d["end_ns"]) == (10 * US, 50 * US, 60 * US)
    assert d["self_ns"] == 50 * US - 20 * US - 2 * US  # inner and the launch call at 45 are its children
    assert [k["name"] for k in d["kernels"]] == ["gemm_a", "gemm_b"]  # relu's launch (70) is outside it
    assert d["kernel_count"] == 2 and d["kernel_ns"] == 25 * US
    assert d["input_dims"] == [[2, 3], [3, 4]] and d["input_types"] == ["float", "float"]
    assert d["call_stack"] == ["train.py(10): step", "model.py(5): forward"]
    assert [p["name"] for p in d["parents"]] == ["ProfilerStep#1"]
    assert d["launch"] is None and d["op"] is None and d["step"] == 1
    inner = event_details(trace, 0, _row(trace, "inner"))
    assert [k["name"] for k in inner["kernels"]] == ["gemm_a"]
    assert [p["name"] for p in inner["parents"]] == ["outer", "ProfilerStep#1"]


def test_a_kernel_names_its_launch_call_and_launching_op(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    d = event_details(trace, 0, _row(trace, "gemm_a"))
    assert d["kind"] == "kernel" and d["kernels"] == [] and d["parents"] == []
    assert d["launch"]["name"] == "cudaLaunchKernel" and d["launch"]["ts_ns"] == 22 * US
    assert d["op"]["name"] == "inner" and d["op"]["row"] == _row(trace, "inner")
    assert d["args"]["grid"] == [4, 1, 1] and d["args"]["block"] == [128, 1, 1] and d["args"]["regs"] == 32
    assert "corr" in d["args"] and "bytes" not in d["args"]  # unset columns are left out
    relu = event_details(trace, 0, _row(trace, "relu"))
    assert relu["op"] is None and relu["launch"]["ts_ns"] == 70 * US
    rt = event_details(trace, 0, d["launch"]["row"])  # the runtime call: its own kernel
    assert [k["row"] for k in rt["kernels"]] == [_row(trace, "gemm_a")]


def test_rows_that_are_not_events_of_the_rank(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    for row in (-1, len(trace.events) + 3):
        with pytest.raises(NoSuchEvent):
            event_details(trace, 0, row)


def test_search_by_name_any_case_in_start_order(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    found = search_events(trace, 0, "GEMM")
    assert found["total"] == 2 and found["total_dur_ns"] == 25 * US and not found["truncated"]
    assert found["matches"]["name"] == ["gemm_a", "gemm_b"] and found["matches"]["ts_ns"] == [50 * US, 75 * US]
    assert found["matches"]["row"] == [_row(trace, "gemm_a"), _row(trace, "gemm_b")]
    assert {n["name"]: n["count"] for n in found["names"]} == {"gemm_a": 1, "gemm_b": 1}
    page = search_events(trace, 0, "gemm", after_ns=60 * US)
    assert page["total"] == 2 and page["matches"]["name"] == ["gemm_b"] and page["skipped"] == 1
    first = search_events(trace, 0, "launch", limit=1)
    assert first["total"] == 3 and first["truncated"] and first["matches"]["ts_ns"] == [22 * US]
    back = search_events(trace, 0, "launch", before_ns=70 * US, limit=1)  # the last one before 70
    assert back["matches"]["ts_ns"] == [45 * US] and back["skipped"] == 1 and back["truncated"]
    assert search_events(trace, 0, "launch", before_ns=70 * US)["matches"]["ts_ns"] == [22 * US, 45 * US]
    assert search_events(trace, 0, "nothing like it")["total"] == 0
    with pytest.raises(StepscopeError):
        search_events(trace, 0, "  ")
