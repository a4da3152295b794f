"""A trace from PyTorch's CUPTI-monitor profiler backend (tests/data/cupti_monitor, README there):
read as any Kineto JSON, one window for the whole trace in every view."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stepscope import load
from stepscope.advisor.engine import run_advisor
from stepscope.analysis.breakdown import compute_breakdown
from stepscope.analysis.bundle import analyze
from stepscope.analysis.critical_path import compute_critical_path
from stepscope.model.schema import EventKind
from stepscope.report.texts import verdict_text

TRACE = Path(__file__).resolve().parents[1] / "data" / "cupti_monitor" / "h200_mlp.json.gz"


def test_every_kernel_is_linked_to_its_launch() -> None:
    t = load(TRACE)
    ev = t.events
    k = ev["kind"] == EventKind.KERNEL
    assert int(k.sum()) == 60
    assert (ev["launch"][k] >= 0).all() and (ev["op"][k] >= 0).all()


def test_one_window_length_in_the_breakdown_the_path_and_the_verdict() -> None:
    """No numbered ProfilerStep: one window, the same in the breakdown and the critical path
    (the verdict's 'window' was the device's 107.9 ms span against the breakdown's 189.2 ms)."""
    t = load(TRACE)
    bd, cp = compute_breakdown(t, 0), compute_critical_path(t, 0)
    assert cp.whole_trace and bd.step.tolist() == [-1]
    assert (cp.start_ns.tolist(), cp.end_ns.tolist()) == (bd.start_ns.tolist(), bd.end_ns.tolist())
    assert int(cp.parts_ns.sum()) == int(bd.total_ns.sum())
    assert 189.1 < bd.total_ns[0] / 1e6 < 189.3
    verdict_ms = f"{float(np.sum(bd.total_ns)) / 1e6:.1f} ms window"
    advice = run_advisor(analyze(t))
    texts = [verdict_text(v) for v in advice.verdicts]
    assert any(verdict_ms in text for text in texts), texts
    assert all(f.est_gain_pct <= 100 for f in advice.findings)
