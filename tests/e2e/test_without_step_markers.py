"""The same program profiled without ``ProfilerStep`` markers (``with profile():`` around the loop,
no ``prof.step()``) must get the same answer: the H200 captures in tests/data with their step
markers removed — iterations are then found from a repeating range, or the whole trace is one
window — keep their verdict and first finding, and the what-if's identity replay stays exact."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from stepscope import load
from stepscope.advisor.engine import run_advisor
from stepscope.analysis.bundle import analyze
from stepscope.analysis.whatif.graph import step_graph
from stepscope.analysis.whatif.replay import Durations, replay
from tests.builders import TraceBuilder

DATA = Path(__file__).resolve().parents[1] / "data" / "h200_bounds"
#: a CPU op the GPU idles under, copies on the compute stream, recompiling, pageable copies, a slow DataLoader
CASES = ["cpu_op", "r13/offload", "r13/recompile", "copy", "loader2"]


def without_steps(src: Path, out: Path) -> Path:
    """``src``'s trace files with every ``ProfilerStep#N`` event (host and device side) left out."""
    out.mkdir(parents=True)
    for f in src.glob("*.pt.trace.json*"):
        raw = gzip.decompress(f.read_bytes()) if f.name.endswith(".gz") else f.read_bytes()
        doc = json.loads(raw)
        doc["traceEvents"] = [e for e in doc["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")]
        (out / f.name.removesuffix(".gz")).write_text(json.dumps(doc))
    return out


@pytest.mark.parametrize("case", CASES)
def test_the_same_answer_without_step_markers(case: str, tmp_path: Path) -> None:
    marked = run_advisor(analyze(load(DATA / case)))
    trace = load(without_steps(DATA / case, tmp_path / "run"), use_cache=False)
    assert len(trace.steps) == 0
    bare = run_advisor(analyze(trace))
    assert bare.verdicts[0].bound == marked.verdicts[0].bound
    assert bare.findings[0].rule == marked.findings[0].rule, [f.rule for f in bare.findings[:3]]
    assert bare.findings[0].change.key == marked.findings[0].change.key


def test_the_whole_trace_window_replays_exactly(tmp_path: Path) -> None:
    """No step markers and no repeating range: one window, from the first host op (5 ms of CPU work
    before any kernel) to the last kernel's end; replayed unchanged, it comes back to the ns."""
    b = TraceBuilder()
    b.op("load_batch", ts=0, dur=5_000)
    for j in range(4):
        b.op("aten::mm", ts=5_100 + j * 100, dur=50)
        b.launch_kernel("volta_sgemm_128x64_nn", launch_ts=5_110 + j * 100, launch_dur=10, ts=5_200 + j * 1_000,
                        dur=1_000, grid=[160, 1, 1], block=[256, 1, 1])
    trace = b.load(tmp_path)
    g = step_graph(trace, 0)
    assert g.steps.whole_trace
    rp = replay(g, Durations.measured(g))
    assert (rp.start_ns[0], rp.end_ns[0]) == (0, 9_200_000)
    np.testing.assert_array_equal(rp.step_ns, g.steps.measured_end_ns - g.steps.measured_start_ns)
