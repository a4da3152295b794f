"""The terminal views say what fits the trace: a native CUDA program without step markers
(CloverLeaf under Nsight Systems) reads "over the whole trace" and gets no PyTorch hints; a CPU-only
rank whose collectives run on the host (gloo) gets no GPU words and its communication shown."""

from __future__ import annotations

import io
import re
from functools import cache
from pathlib import Path

from stepscope import load
from stepscope.analysis.bundle import Bundle, analyze
from stepscope.analysis.common import step_windows, window_of
from stepscope.analysis.registry import CACHING_ALLOCATOR
from stepscope.analysis.whatif.simulate import simulate
from stepscope.analysis.whatif.transforms import DropSyncs
from stepscope.model.trace import Trace
from stepscope.report import terminal, whatif_view
from stepscope.report.console import terminal_console
from tests.conftest import SHARED_TRACES

CLOVER = "nsys_pipit/cloverleaf_cuda_a100"
#: what a trace without step markers never reads (its one window is no step, nor an average of steps)
PER_STEP = re.compile(r"per step|per average step|mean step|ms / step|steps/s|in the steps|\bstep -1\b|│ +-1 │")


@cache
def _trace(rel: str) -> Trace:
    return load(SHARED_TRACES / rel)


@cache
def _bundle(rel: str) -> Bundle:
    return analyze(_trace(rel))


def views_text(rel: str) -> str:
    out = io.StringIO()
    terminal.render(_bundle(rel), terminal_console(file=out, width=400))
    return out.getvalue()


def test_the_allocator_calls_are_those_in_the_window(shared_traces: Path) -> None:
    """The program's cudaMalloc of its whole problem, 240 ms before the 342 ms window, is set-up:
    counted it made "246.859 ms host time per step" of a window whose every call takes 0.9 ms."""
    trace = _trace(CLOVER)
    r = _bundle(CLOVER).rank(0).get(CACHING_ALLOCATOR)
    assert r is not None and r.step_count == 0
    ts = trace.events["ts_ns"][r.calls.rows]
    assert len(r.calls) == 73 and (window_of(step_windows(trace, 0), ts) >= 0).all()
    assert r.calls.total_ns / 1e6 < 1.0


def test_the_views_of_a_trace_without_steps_say_the_window(shared_traces: Path) -> None:
    text = views_text(CLOVER)
    assert not PER_STEP.findall(text), PER_STEP.findall(text)
    for said in ("synchronisation over the whole trace: 1591.0 blocking sync calls",
                 "pageable H2D / D2H copies in the window, over the whole trace: 279.0 copies, 9.391 ms",
                 "what-if, each remedy replayed (window 342.408 ms)", "│ window ", "342.408 ms (the whole trace)",
                 "(294.405 ms over the whole trace)", "the window's share is in the verdict"):
        assert said in text, said


def test_the_whatif_of_a_trace_without_steps_says_the_window(shared_traces: Path) -> None:
    out = io.StringIO()
    whatif_view.render(simulate(_trace(CLOVER), [DropSyncs()]), CLOVER, terminal_console(file=out, width=400))
    text = out.getvalue()
    assert not PER_STEP.findall(text), text
    assert "window 342.41 -> 307.70 ms (saves 34.71 ms)" in text and "│  all │" in text
    assert "the window (whole trace, no step markers), measured and predicted" in " ".join(text.split())
