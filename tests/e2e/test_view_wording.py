"""The terminal views say what fits the trace: a native CUDA program without step markers
(CloverLeaf under Nsight Systems) reads "over the whole trace" and gets no PyTorch hints; a CPU-only
rank whose collectives run on the host (gloo) gets no GPU words and its communication shown."""

from __future__ import annotations

from pathlib import Path

from stepscope import load
from stepscope.analysis.bundle import analyze
from stepscope.analysis.common import step_windows, window_of
from stepscope.analysis.registry import CACHING_ALLOCATOR

CLOVER = "nsys_pipit/cloverleaf_cuda_a100"


def test_the_allocator_calls_are_those_in_the_window(shared_traces: Path) -> None:
    """The program's cudaMalloc of its whole problem, 240 ms before the 342 ms window, is set-up:
    counted it made "246.859 ms host time per step" of a window whose every call takes 0.9 ms."""
    trace = load(shared_traces / CLOVER)
    r = analyze(trace, names=["caching_allocator"]).rank(0).get(CACHING_ALLOCATOR)
    assert r is not None and r.step_count == 0
    wins = step_windows(trace, 0)
    ts = trace.events["ts_ns"][r.calls.rows]
    assert len(r.calls) == 73 and (window_of(wins, ts) >= 0).all()
    assert r.calls.total_ns / 1e6 < 1.0
