"""Operator view: host/device self and total, same-name merge, exclusions, Tensor-Core columns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepscope.analysis.operators import OperatorTable, compute_operators
from tests.builders import TraceBuilder

US = 1000


def build() -> TraceBuilder:
    """aten::linear [0,100] ⊃ aten::addmm [10,60] ⊃ launch [20,25] of sgemm (30 µs);
    aten::linear also launches [70,72] a Tensor-Core kernel (10 µs) directly.
    aten::div [110,150] has one child aten::div [115,140] (merged). Optimizer.step#SGD.step is left out."""
    b = TraceBuilder()
    b.op("aten::linear", ts=0, dur=100, **{"Input Dims": [[8, 4], [4, 4]]})
    b.op("aten::addmm", ts=10, dur=50)
    b.launch_kernel("volta_sgemm_64x64_nn", launch_ts=20, launch_dur=5, ts=200, dur=30)
    b.launch_kernel("volta_h884gemm_64x64_nn", launch_ts=70, launch_dur=2, ts=240, dur=10)
    b.op("aten::div", ts=110, dur=40)
    b.op("aten::div", ts=115, dur=25)
    b.op("Optimizer.step#SGD.step", ts=160, dur=20)
    return b


def row(t: OperatorTable, name: str) -> dict[str, object]:
    i = t.name.tolist().index(name)
    return {k: v[i] for k, v in t.columns().items()}


def test_host_and_device_times(tmp_path: Path) -> None:
    t = compute_operators(build().load(tmp_path), 0).by_name
    lin, mm = row(t, "aten::linear"), row(t, "aten::addmm")
    assert (lin["calls"], lin["host_total_ns"], lin["host_self_ns"]) == (1, 100 * US, 48 * US)
    assert (lin["device_self_ns"], lin["device_total_ns"]) == (10 * US, 40 * US)
    assert (mm["host_self_ns"], mm["device_self_ns"], mm["device_total_ns"]) == (45 * US, 30 * US, 30 * US)
    assert t.name.tolist()[0] == "aten::addmm"  # largest device self first


def test_same_name_child_is_merged_and_wrappers_excluded(tmp_path: Path) -> None:
    t = compute_operators(build().load(tmp_path), 0).by_name
    div = row(t, "aten::div")
    assert (div["calls"], div["host_total_ns"], div["host_self_ns"]) == (1, 40 * US, 40 * US)
    assert "Optimizer.step#SGD.step" not in t.name.tolist()


def test_tensor_core_columns(tmp_path: Path) -> None:
    t = compute_operators(build().load(tmp_path), 0).by_name
    lin, mm, div = row(t, "aten::linear"), row(t, "aten::addmm"), row(t, "aten::div")
    assert lin["tc_eligible"] and mm["tc_eligible"] and not div["tc_eligible"]
    assert lin["tc_self_pct"] == pytest.approx(100.0)
    assert lin["tc_total_pct"] == pytest.approx(25.0)
    assert mm["tc_self_pct"] == 0.0


def test_grouping_by_input_shape(tmp_path: Path) -> None:
    v = compute_operators(build().load(tmp_path), 0)
    assert v.has_shapes and not v.has_call_stacks
    i = v.by_name_shape.name.tolist().index("aten::linear")
    assert json.loads(v.by_name_shape.input_shape[i]) == [[8, 4], [4, 4]]
