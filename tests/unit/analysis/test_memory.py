"""Memory view: curves, peaks, fragmentation, allocation lifetimes, per-op increase."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.memory import compute_memory
from tests.builders import TraceBuilder

US = 1000


def build() -> TraceBuilder:
    """aten::empty [5,25] allocates 100 B (addr 1, t=10) and 50 B (addr 2, t=20); addr 1 freed at 30.
    Allocated after each: 100, 150, 50; reserved 200 throughout."""
    b = TraceBuilder()
    b.op("aten::empty", ts=5, dur=20)
    b.memory(10, 100, 100, 200, addr=1)
    b.memory(20, 50, 150, 200, addr=2)
    b.memory(30, -100, 50, 200, addr=1)
    return b


def test_curves_peaks_and_fragmentation(tmp_path: Path) -> None:
    m = compute_memory(build().load(tmp_path), 0)
    (c,) = m.curves
    assert c.device == "GPU0"
    assert c.allocated_bytes.tolist() == [100, 150, 50]
    assert (c.peak_allocated_bytes, c.peak_reserved_bytes) == (150, 200)
    assert c.fragmentation_bytes.tolist() == [100, 50, 150]


def test_cpu_memory_is_called_cpu_in_every_view(tmp_path: Path) -> None:
    """Kineto writes CPU allocations as device type 0, device id -1: "CPU", never "GPU1048575"."""
    from stepscope.report.series import memory_from_trace

    b = build()
    b.memory(12, 64, 64, 64, addr=7, device_type=0, device=-1)
    b.memory(14, 32, 96, 96, addr=8, device_type=0, device=-1)
    trace = b.load(tmp_path)
    m = compute_memory(trace, 0)
    assert sorted(c.device for c in m.curves) == ["CPU", "GPU0"]
    assert set(m.allocations.device.tolist()) == {"CPU", "GPU0"}
    assert set(m.by_op.device.tolist()) <= {"CPU", "GPU0"}
    assert [c.device for c in memory_from_trace(trace, 0)] == ["GPU0", "CPU"]


def test_allocation_lifetimes(tmp_path: Path) -> None:
    a = compute_memory(build().load(tmp_path), 0).allocations
    got = sorted(zip(a.size_bytes.tolist(), a.lifetime_ns.tolist(), a.op_name.tolist()))
    assert got == [(50, -1, "aten::empty"), (100, 20 * US, "aten::empty")]


def test_per_op_increase(tmp_path: Path) -> None:
    o = compute_memory(build().load(tmp_path), 0).by_op
    i = o.name.tolist().index("aten::empty")
    assert (o.self_increase_bytes[i], o.alloc_count[i], o.alloc_bytes[i]) == (150, 2, 150)
    j = o.name.tolist().index("(outside any op)")
    assert (o.self_increase_bytes[j], o.free_count[j]) == (-100, 1)


def test_without_memory_events(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("aten::add", ts=0, dur=5)
    with pytest.raises(NotApplicable, match="profile_memory=True"):
        compute_memory(b.load(tmp_path), 0)


def test_memory_samples_without_any_event(tmp_path: Path) -> None:
    """Fuzzing (issue 21): a trace of [memory] samples only (its events damaged away) raised
    IndexError naming each allocation's op. One 4096-byte allocation, no op."""
    b = TraceBuilder()
    b.memory(10, 4096, total_allocated=4096, total_reserved=1 << 20)
    mv = compute_memory(b.load(tmp_path), 0)
    assert mv.allocations.size_bytes.tolist() == [4096]
    assert mv.allocations.op_name.tolist() == [""]


def test_absurd_sizes_sum_within_int64_without_a_warning(tmp_path: Path) -> None:
    """Fuzz (seed 27, cases 930 and 7,017): three allocations of 2^62 bytes under one op summed past
    int64 as floats, and casting the sum back printed a RuntimeWarning on stderr. The sums now stop
    at int64's largest value."""
    import warnings

    b = TraceBuilder()
    b.op("aten::empty", ts=5, dur=20)
    for i in range(3):
        b.memory(10 + i, 2**62, 2**62, 2**62, addr=1 + i)
    trace = b.load(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = compute_memory(trace, 0)
    (empty,) = [i for i, n in enumerate(m.by_op.name) if n == "aten::empty"]
    assert int(m.by_op.alloc_bytes[empty]) >= 2**63 - 2**11 and int(m.by_op.alloc_count[empty]) == 3
