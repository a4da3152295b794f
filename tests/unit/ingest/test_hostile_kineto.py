"""Hostile Kineto JSON (issue 21): values that crashed the reader, and silent repairs that must be
counted. Every input is hand-made and small, written to ``tmp_path``."""

from __future__ import annotations

from pathlib import Path

import pytest

import stepscope
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder


def _counts(trace: Trace) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in trace.diagnostics:
        out[d.name] = out.get(d.name, 0) + d.count
    return out


@pytest.mark.parametrize("rank", [2**31, 2**40, 2**63, -(2**63) - 1])
def test_rank_beyond_int32_is_reported_and_the_file_name_used(tmp_path: Path, rank: int) -> None:
    """``distributedInfo.rank`` of 2^40 / 2^63 raised OverflowError in ``build._offset``."""
    b = TraceBuilder(rank=rank, world_size=2)
    b.op("a", 0, 5)
    trace = stepscope.load(b.write(tmp_path / "worker3.json"), use_cache=False)
    assert trace.rank_ids == [3]
    assert _counts(trace).get("rank-out-of-range") == 1


def test_absurd_rank_in_a_file_name_falls_back_to_the_file_order(tmp_path: Path) -> None:
    b = TraceBuilder(device=None)
    b.op("a", 0, 5)
    trace = stepscope.load(b.write(tmp_path / f"rank{'9' * 200}.json"), use_cache=False)
    assert trace.rank_ids == [0]


def test_absurd_world_size_counts_the_missing_ranks_without_listing_them(tmp_path: Path) -> None:
    """world_size 2^63 with two rank files: the missing ranks are counted, not enumerated."""
    run = tmp_path / "run"
    run.mkdir()
    for r in (0, 1):
        b = TraceBuilder(rank=r, world_size=2**63)
        b.op("a", 0, 5)
        b.write(run / f"worker{r}.json")
    trace = stepscope.load(run, use_cache=False)
    assert trace.rank_ids == [0, 1]
    missing = [d for d in trace.diagnostics if d.name == "ranks-missing"]
    assert len(missing) == 1 and missing[0].count >= 2**62
    assert "missing 2, 3, 4" in missing[0].example
