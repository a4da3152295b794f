"""Module view: nn.Module tree with host/device self and total time."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.modules import compute_modules
from tests.builders import TraceBuilder

US = 1000


def test_module_tree_times(tmp_path: Path) -> None:
    """Net_0 [0,100] ⊃ Linear_0 [10,50] ⊃ aten::linear [12,48] ⊃ launch → 30 µs kernel;
    Net_0 launches a 10 µs kernel itself at [60,62]."""
    b = TraceBuilder()
    b.op("nn.Module: Net_0", ts=0, dur=100, cat="python_function")
    b.op("nn.Module: Linear_0", ts=10, dur=40, cat="python_function")
    b.op("aten::linear", ts=12, dur=36)
    b.launch_kernel("k1", launch_ts=20, launch_dur=2, ts=200, dur=30)
    b.launch_kernel("k2", launch_ts=60, launch_dur=2, ts=240, dur=10)
    m = compute_modules(b.load(tmp_path), 0)
    assert m.name.tolist() == ["Net_0", "Linear_0"]
    assert m.parent.tolist() == ["", "Net_0"]
    assert m.depth.tolist() == [0, 1]
    assert (m.host_total_ns // US).tolist() == [100, 40]
    assert (m.host_self_ns // US).tolist() == [60, 40]
    assert (m.device_total_ns // US).tolist() == [40, 30]
    assert (m.device_self_ns // US).tolist() == [10, 30]


def test_without_modules(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("aten::add", ts=0, dur=5)
    with pytest.raises(NotApplicable, match="with_stack"):
        compute_modules(b.load(tmp_path), 0)
