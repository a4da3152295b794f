"""Across ranks: wait vs transfer, the pluggable slow-rank detector, load imbalance."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.distributed import compute_distributed
from stepscope.analysis.stragglers import compute_cluster, default_detector, match_collectives
from tests.builders import TraceBuilder, load_ranks

US = 1000
NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float"


def three_ranks(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Step [0,100] on each rank; one all-reduce ending at 90 on every rank.

    rank 0: compute [0,10], all-reduce [30,90] (60 µs); rank 1: 4 kernels busy [0,60], all-reduce
    [70,90] (20 µs: it arrived last); rank 2: compute [0,12], all-reduce [40,90] (50 µs).
    transfer = 20 everywhere; wait = 40, 0, 30.
    """
    builders = []
    for rank, (compute, start) in enumerate([([(0, 10)], 30), ([(0, 15), (15, 15), (30, 15), (45, 15)], 70),
                                             ([(0, 12)], 40)]):
        b = TraceBuilder(rank=rank, world_size=3)
        b.step(1, ts=0, dur=100)
        for i, (ts, dur) in enumerate(compute):
            b.launch_kernel(f"k{i}", launch_ts=0, launch_dur=0.5, ts=ts, dur=dur)
        b.launch_kernel(NCCL, launch_ts=1, launch_dur=1, ts=start, dur=90 - start, stream=20)
        builders.append(b)
    return load_ranks(builders, tmp_path)


def test_wait_and_transfer_of_the_same_collective(tmp_path: Path) -> None:
    trace = three_ranks(tmp_path)
    m = match_collectives(trace)
    assert m.method == "min across ranks"
    ranks = trace.events["rank"][m.rows]
    assert m.transfer_ns.tolist() == [20 * US] * 3
    assert dict(zip(ranks.tolist(), m.wait_ns.tolist())) == {0: 40 * US, 1: 0, 2: 30 * US}
    assert compute_distributed(trace, 0).wait_ns.tolist() == [40 * US]


def test_slow_rank_and_imbalance(tmp_path: Path) -> None:
    r = compute_cluster(three_ranks(tmp_path))
    assert r.ranks == [0, 1, 2]
    assert r.kernel_count.tolist() == [2, 5, 2]
    assert r.compute_ns.tolist() == [10 * US, 60 * US, 12 * US]
    assert r.slow_ranks == [1]
    assert r.slow_reasons == {1: ["kernel_count", "compute_ns"]}
    assert r.verdict == "imbalanced"
    assert r.imbalance_pct == pytest.approx(100 * (60 - 82 / 3) / (82 / 3))
    assert r.wait_ns.tolist() == [40 * US, 0, 30 * US]


def test_detector_is_pluggable(tmp_path: Path) -> None:
    r = compute_cluster(three_ranks(tmp_path), detector=lambda metrics, ranks: {})
    assert (r.slow_ranks, r.verdict) == ([], "balanced")


def test_default_detector_needs_both_a_relative_and_a_robust_excess() -> None:
    ranks = [0, 1, 2, 3]
    assert default_detector({"x": np.array([100.0, 101, 99, 105])}, ranks) == {}  # +5 %: not slow
    assert default_detector({"x": np.array([100.0, 100, 100, 130])}, ranks) == {3: ["x"]}
    noisy = np.array([100.0, 60, 140, 112])  # +12 % but within the spread of the ranks
    assert default_detector({"x": noisy}, ranks) == {}


def test_one_rank_is_not_a_cluster(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.step(1, ts=0, dur=10)
    with pytest.raises(NotApplicable):
        compute_cluster(b.load(tmp_path))
