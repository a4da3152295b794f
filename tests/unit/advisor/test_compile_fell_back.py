"""Dynamo consulted but no compiled region run: the function runs eager under its ``torch.compile``
wrapper (``compile-fell-back``), told apart from compiled frames (one or two regions: a graph break) and
from compiling steps (``compile-in-step``'s). Hand-made CPU traces, times in µs, steps of 100 µs unless
said (step n at [100 (n-1), 100 n))."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.advisor.engine import run_advisor
from stepscope.analysis import profiler_cost
from stepscope.analysis.bundle import analyze
from stepscope.analysis.compiled import compute_compiled
from stepscope.analysis.dynamo_frames import DynamoFrames
from stepscope.model.trace import Trace
from stepscope.report import texts
from tests.builders import TraceBuilder

US = 1000
LOOKUP = "TorchDynamo Cache Lookup"


@pytest.fixture(autouse=True)
def _as_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Steps of a few recorded ops: keep the recorded step (no replay without the profiler's cost)."""
    monkeypatch.setattr(profiler_cost, "MIN_COST_SHARE", float("inf"))


def eager_step(b: TraceBuilder, t: int) -> None:
    """A fallen-back step at ``t``: the lookup 5-7, then eager ``aten::linear`` 10-40 (``aten::addmm``
    12-38 in it: self 4 and 26), ``aten::gelu`` 40-50 and the optimizer's ``aten::add_`` 80-90: 50 µs of
    ops outside every compiled range."""
    b.op(LOOKUP, t + 5, 2)
    b.op("aten::linear", t + 10, 30)
    b.op("aten::addmm", t + 12, 26)
    b.op("aten::gelu", t + 40, 10)
    b.op("aten::add_", t + 80, 10)


def compiled_step(b: TraceBuilder, t: int, regions: int = 1) -> None:
    """A compiled step at ``t``: per frame i < ``regions`` (30 µs apart), the lookup at 5+30i, its region
    ``Torch-Compiled Region: i/i`` 8-30 (+30i) holding ``CompiledFunction`` and ``aten::mm``; between the
    frames (a graph break) ``aten::item`` runs eager at 31."""
    for i in range(regions):
        s = t + 30 * i
        b.op(LOOKUP, s + 5, 2)
        b.op(f"Torch-Compiled Region: {i}/{i}", s + 8, 22)
        b.op("CompiledFunction", s + 9, 20)
        b.op("aten::mm", s + 10, 15)
        b.op("aten::item", s + 31, 1)
    b.op("aten::add_", t + 80, 10)


def build(tmp_path: Path, kinds: str, step_us: int = 100, long_eager_us: int | None = None) -> Trace:
    """One step per letter: ``e`` eager (fallen back), ``c`` compiled, ``b`` a graph break (two frames,
    two regions), ``p`` partial (a compiled frame, then a second lookup no region follows, at 60),
    ``k`` compiling (the lookup, then ``entire_frame_compile`` 10-60 and no region). An ``e`` step lasts
    ``long_eager_us`` where given."""
    b = TraceBuilder(device=None)
    t = 0
    for n, k in enumerate(kinds, start=1):
        dur = long_eager_us if (k == "e" and long_eager_us) else step_us
        b.step(n, ts=t, dur=dur)
        if k == "e":
            eager_step(b, t)
        elif k in "cb":
            compiled_step(b, t, regions=2 if k == "b" else 1)
        elif k == "p":
            compiled_step(b, t)
            b.op(LOOKUP, t + 60, 2)
        else:
            b.op(LOOKUP, t + 5, 2)
            b.op("entire_frame_compile", t + 10, 50)
        t += dur
    return b.load(tmp_path)


def frames(tmp_path: Path, kinds: str, **kw: int) -> DynamoFrames:
    return compute_compiled(build(tmp_path, kinds, **kw), 0).frames


def test_lookups_without_a_region_are_frames_run_eager_and_their_ops_named(tmp_path: Path) -> None:
    """Three fallen-back steps: 1 lookup, 0 regions, 1 eager frame each; the ops outside compiled ranges
    50 µs a step (addmm 26, gelu 10, add_ 10, linear's own 4), the lookup not among them."""
    f = frames(tmp_path, "eee")
    assert (f.lookups.tolist(), f.regions.tolist(), f.eager_frames.tolist()) == ([1] * 3, [0] * 3, [1] * 3)
    assert f.falling_back.all() and f.eager_ns_per_step == 50 * US
    assert [(n, c, t / US) for n, c, t in f.eager_ops.top(2)] == [("aten::addmm", 3, 78.0), ("aten::add_", 3, 30.0)]
    assert LOOKUP not in f.eager_ops.names


@pytest.mark.parametrize(("kinds", "lookups", "regions"), [("ccc", 1, 1), ("bbb", 2, 2)])
def test_a_compiled_frame_and_a_graph_break_run_no_frame_eager(tmp_path: Path, kinds: str, lookups: int,
                                                               regions: int) -> None:
    """Each lookup followed by its region (a graph break: two of each, ``aten::item`` eager between them)."""
    f = frames(tmp_path, kinds)
    assert f.lookups.tolist() == [lookups] * 3 and f.regions.tolist() == [regions] * 3
    assert f.eager_frames.tolist() == [0, 0, 0] and not f.falling_back.any() and len(f.eager_ops) == 0
    assert "compile-fell-back" not in {x.rule for x in run_advisor(analyze(build(tmp_path, kinds))).findings}


def test_a_second_lookup_without_its_region_is_one_frame_eager(tmp_path: Path) -> None:
    """Two lookups, one region a step: one frame runs eager beside the compiled one."""
    f = frames(tmp_path, "ppp")
    assert f.lookups.tolist() == [2] * 3 and f.regions.tolist() == [1] * 3 and f.eager_frames.tolist() == [1] * 3


def test_a_compiling_step_is_not_a_fallback(tmp_path: Path) -> None:
    """The lookup missed and the frame compiles (no region yet): compile-in-step's, not a fallback."""
    f = frames(tmp_path, "kkk")
    assert f.compiling.all() and f.eager_frames.tolist() == [0, 0, 0]
    rules = {x.rule for x in run_advisor(analyze(build(tmp_path, "kkk"))).findings}
    assert "compile-fell-back" not in rules and "compile-in-step" in rules


def test_the_finding_without_compiled_steps_states_no_gain(tmp_path: Path) -> None:
    adv = run_advisor(analyze(build(tmp_path, "eee")))
    f = next(x for x in adv.findings if x.rule == "compile-fell-back")
    assert f.est_gain_ns == 0 and f.basis == "eager-time-unknown" and f.change.key == "compile-the-frame"
    e = f.evidence
    assert (e["cache_lookups_per_step"], e["compiled_regions_per_step"], e["eager_frames_per_step"]) == (1, 0, 1)
    assert (e["steps_falling_back"], e["steady_steps"], e["eager_ops_ms"], e["eager_ops_pct"]) == (3, 3, 0.05, 50.0)
    assert e["top_eager_ops"][0] == {"name": "aten::addmm", "count": 3, "ms": 0.026}  # calls in all, ms a step
    assert "compiled regions run after them: 0" in texts.found_text(f)
    assert "cannot be read from a trace where they ran eager" in texts.basis_text(f)


def test_the_gain_is_measured_where_the_same_trace_has_compiled_steps(tmp_path: Path) -> None:
    """Steps c, c, e, e: the eager steps last 150 against the compiled steps' 100; falling back in 2 of the 4
    steady steps: (50 + 50) / 4 steps = 25 µs per average step."""
    adv = run_advisor(analyze(build(tmp_path, "ccee", long_eager_us=150)))
    f = next(x for x in adv.findings if x.rule == "compile-fell-back")
    assert f.basis == "compiled-steps-measured" and f.est_gain_ns == 25 * US
    assert (f.evidence["compiled_step_ms"], f.evidence["eager_step_ms"]) == (0.1, 0.15)


def test_one_eager_step_in_four_is_not_a_finding(tmp_path: Path) -> None:
    """Fewer than half of the steady steps falling back: not reported."""
    assert "compile-fell-back" not in {x.rule for x in run_advisor(analyze(build(tmp_path, "ccce"))).findings}


def test_without_region_ranges_only_a_step_with_no_compiled_range_runs_eager(tmp_path: Path) -> None:
    """An older PyTorch records no ``Torch-Compiled Region``: a lookup with ``CompiledFunction`` after it is
    a compiled frame; a lookup with nothing compiled in its step is an eager one."""
    b = TraceBuilder(device=None)
    b.step(1, ts=0, dur=100)
    b.op(LOOKUP, 5, 2)
    b.op("CompiledFunction", 8, 20)
    b.step(2, ts=100, dur=100)
    b.op(LOOKUP, 105, 2)
    b.op("aten::mm", 110, 20)
    f = compute_compiled(b.load(tmp_path), 0).frames
    assert f.regions.tolist() == [0, 0] and f.eager_frames.tolist() == [0, 1]
