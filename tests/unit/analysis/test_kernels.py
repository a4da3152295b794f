"""Kernel view: statistics by name and by launch shape, collectives, histogram."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.kernels import compute_kernels
from tests.builders import TraceBuilder

US = 1000


def build(tmp_path: Path) -> TraceBuilder:
    """kA: 10, 20, 60 µs (two launched by aten::mm, one by aten::add); kB: 50 µs; one NCCL all-reduce."""
    b = TraceBuilder()
    b.op("aten::mm", ts=0, dur=10)
    b.launch_kernel("kA", launch_ts=1, launch_dur=1, ts=100, dur=10, grid=[4, 1, 1], block=[128, 1, 1])
    b.launch_kernel("kA", launch_ts=3, launch_dur=1, ts=120, dur=20, grid=[4, 1, 1], block=[128, 1, 1])
    b.op("aten::add", ts=20, dur=10)
    b.launch_kernel("kA", launch_ts=21, launch_dur=1, ts=150, dur=60, grid=[4, 1, 1], block=[128, 1, 1])
    b.launch_kernel("kB", launch_ts=23, launch_dur=1, ts=300, dur=50)
    b.op("record_param_comms", ts=40, dur=10, **{"Collective name": "allreduce", "In msg nelems": 1000,
                                                 "Out msg nelems": 1000, "Process Group Ranks": "[0, 1]"})
    b.launch_kernel("ncclKernel_AllReduce_RING_LL_Sum_float", launch_ts=41, launch_dur=1, ts=400, dur=5)
    return b


def test_by_name_statistics(tmp_path: Path) -> None:
    k = compute_kernels(build(tmp_path).load(tmp_path), 0).by_name
    assert k.name.tolist()[:2] == ["kA", "kB"]
    assert k.calls.tolist()[:2] == [3, 1]
    assert k.total_ns[0] == 90 * US
    assert k.mean_ns[0] == 30 * US and k.median_ns[0] == 20 * US
    assert (k.min_ns[0], k.max_ns[0]) == (10 * US, 60 * US)
    assert k.std_ns[0] == pytest.approx(math.sqrt(1400 / 3) * US)
    assert k.share_pct[0] == pytest.approx(90 / 145 * 100)
    assert k.is_comm.tolist() == [False, False, True]


def test_by_launch_splits_by_operator(tmp_path: Path) -> None:
    t = compute_kernels(build(tmp_path).load(tmp_path), 0).by_launch
    rows = {(n, o): c for n, o, c in zip(t.name.tolist(), t.op_name.tolist(), t.calls.tolist())}
    assert rows[("kA", "aten::mm")] == 2 and rows[("kA", "aten::add")] == 1
    i = t.op_name.tolist().index("aten::mm")
    assert t.grid[i] == "[4, 1, 1]" and t.block[i] == "[128, 1, 1]"


def test_collectives_take_metadata_from_the_launching_op(tmp_path: Path) -> None:
    c = compute_kernels(build(tmp_path).load(tmp_path), 0).collectives
    assert len(c.name) == 1
    assert c.collective.tolist() == ["allreduce"]
    assert c.in_nelems.tolist() == [1000]
    assert c.pg_ranks.tolist() == ["[0, 1]"]


def test_histogram_counts_every_kernel(tmp_path: Path) -> None:
    k = compute_kernels(build(tmp_path).load(tmp_path), 0)
    assert k.hist_counts.sum() == 5
    assert k.hist_counts[np.searchsorted(k.hist_edges_ns, 50 * US, side="right") - 1] == 2  # 50 and 60 µs


def test_no_kernels_is_not_applicable(tmp_path: Path) -> None:
    b = TraceBuilder(device=None)
    b.op("aten::add", ts=0, dur=5)
    with pytest.raises(NotApplicable, match="no GPU kernels"):
        compute_kernels(b.load(tmp_path), 0)
