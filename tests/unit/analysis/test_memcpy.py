"""Memory copies: direction, pageable vs pinned, sync vs async, bandwidth, small copies."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.advisor.engine import run_advisor
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.bundle import analyze
from stepscope.analysis.memcpy import compute_memcpy
from stepscope.report import texts
from tests.builders import TraceBuilder

MIB = 1 << 20


def test_groups_and_bandwidth(tmp_path: Path) -> None:
    """1 MiB pageable H2D async in 100 µs (10.48576 GB/s); 2 × 1000 B pinned H2D async in 1 µs each;
    a blocking 4 B D2H (cudaMemcpy) in 2 µs after the step."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=200)
    b.launch_kernel("Memcpy HtoD (Pageable -> Device)", 1, 2, 10, 100, runtime="cudaMemcpyAsync",
                    cat="gpu_memcpy", bytes=MIB)
    for ts in (120, 130):
        b.launch_kernel("Memcpy HtoD (Pinned -> Device)", ts - 5, 1, ts, 1, runtime="cudaMemcpyAsync",
                        cat="gpu_memcpy", bytes=1000)
    b.launch_kernel("Memcpy DtoH (Device -> Pageable)", 300, 5, 301, 2, runtime="cudaMemcpy",
                    cat="gpu_memcpy", bytes=4)
    r = compute_memcpy(b.load(tmp_path), 0)
    g = r.groups
    assert list(zip(g.direction, g.pageable, g.sync)) == [("h2d", "pageable", "async"), ("h2d", "pinned", "async"),
                                                          ("d2h", "pageable", "sync")]
    assert g.count.tolist() == [1, 2, 1]
    assert g.bytes_total.tolist() == [MIB, 2000, 4]
    assert g.time_ns.tolist() == [100_000, 2000, 2000]
    assert g.bandwidth_gbps.tolist() == pytest.approx([10.48576, 1.0, 0.002])
    assert g.small_count.tolist() == [0, 2, 1]
    assert r.step.tolist() == [1, 1, 1, -1]
    assert r.small_count == 3
    assert r.small_time_pct == pytest.approx(100 * 4000 / 104_000)
    # the advisor's evidence: H2D / D2H copies inside the one step (the D2H after it is left out)
    assert r.step_count == 1
    p, s = r.pageable_copies, r.small_copies
    assert (p.count, p.time_ns, p.bytes_total, p.mean_bytes) == (1, 100_000, MIB, MIB)
    assert p.median_bandwidth_gbps == pytest.approx(10.48576)
    assert p.names.top() == [("Memcpy HtoD (Pageable -> Device)", 1, 100_000.0)]
    assert (s.count, s.time_ns, s.bytes_total, s.mean_bytes) == (2, 2000, 2000, 1000)
    assert s.names.top() == [("Memcpy HtoD (Pinned -> Device)", 2, 2000.0)]


def test_no_copies_is_not_applicable(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.step(1, ts=0, dur=10)
    with pytest.raises(NotApplicable):
        compute_memcpy(b.load(tmp_path), 0)


def test_pageable_bandwidth_is_bytes_over_time_as_the_table(tmp_path: Path) -> None:
    """Two pageable H2D copies in one 200 µs step: 1 MiB in 100 µs (10.49 GB/s) and 256 B in 1 µs
    (0.26 GB/s). The table's GB/s is Σ bytes / Σ time = 1,048,832 B / 101 µs = 10.38 GB/s; the median
    copy's, 5.37 GB/s, is halfway between two sizes and neither. The finding cites the table's."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=200)
    b.launch_kernel("Memcpy HtoD (Pageable -> Device)", 1, 2, 10, 100, runtime="cudaMemcpyAsync",
                    cat="gpu_memcpy", bytes=MIB)
    b.launch_kernel("Memcpy HtoD (Pageable -> Device)", 120, 2, 130, 1, runtime="cudaMemcpyAsync",
                    cat="gpu_memcpy", bytes=256)
    bundle = analyze(b.load(tmp_path))
    r = compute_memcpy(bundle.trace, 0)
    want = (MIB + 256) / 101_000
    assert r.groups.bandwidth_gbps.tolist() == pytest.approx([want])
    assert r.pageable_copies.bandwidth_gbps == pytest.approx(want)
    assert r.pageable_copies.median_bandwidth_gbps == pytest.approx((MIB / 100_000 + 0.256) / 2)
    (f,) = [f for f in run_advisor(bundle).findings if f.rule == "pageable-memcpy"]
    assert f.evidence["bandwidth_gbps"] == 10.38 and "median_bandwidth_gbps" not in f.evidence
    assert "50.5% of the step, 10.38 GB/s: their bytes over their time)" in texts.found_text(f)
