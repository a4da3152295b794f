"""Annotation view: host annotations with the GPU time launched inside, GPU annotation ranges."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.analysis.annotations import compute_annotations
from stepscope.analysis.base import NotApplicable
from tests.builders import TraceBuilder

US = 1000


def test_host_and_gpu_annotations(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("forward", ts=0, dur=50, cat="user_annotation")
    b.op("forward", ts=60, dur=30, cat="user_annotation")
    b.op("aten::mm", ts=5, dur=10)
    b.launch_kernel("k", launch_ts=6, launch_dur=2, ts=100, dur=20)
    b.gpu("forward", ts=100, dur=35, cat="gpu_user_annotation")
    v = compute_annotations(b.load(tmp_path), 0)
    assert v.host.name.tolist() == ["forward"]
    assert (v.host.calls[0], v.host.total_ns[0], v.host.device_ns[0]) == (2, 80 * US, 20 * US)
    assert (v.host.min_ns[0], v.host.max_ns[0]) == (30 * US, 50 * US)
    assert v.gpu.total_ns.tolist() == [35 * US]


def test_without_annotations(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("aten::add", ts=0, dur=5)
    with pytest.raises(NotApplicable, match="record_function"):
        compute_annotations(b.load(tmp_path), 0)
