"""``stepscope demo``: capture an input-bound training run, diagnose it, apply the fix, measure.

1. Train the demo CNN (:mod:`stepscope.collect.demo_workload`) with ``num_workers=0``: the heavy
   per-sample preprocessing runs in the training process, so each step waits for its batch.
2. Read the trace back and diagnose it (:func:`_diagnose`).
3. Rerun with the advised fix, ``num_workers=2, persistent_workers=True``.
4. Show the measured step timing before/after and the trace comparison (:func:`_compare`).

Both runs use one intra-op torch thread, so the two cores of a small machine are shared the same
way in both and the only change is where the preprocessing runs. Timings exclude the profiled
window (profiler overhead) and everything before it (start-up).

``_diagnose`` and ``_compare`` are the presentation hooks: plain text from the trace for now,
to be replaced by the advisor and the diff.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from stepscope.collect.demo_workload import DemoConfig, train
from stepscope.collect.profiler import import_torch
from stepscope.collect.step_timer import StepRecord, StepSummary, summarise_records

if TYPE_CHECKING:
    from stepscope.model.trace import Trace

BASELINE = DemoConfig(num_workers=0)
FIXED = DemoConfig(num_workers=2, persistent_workers=True)

Echo = Callable[[str], None]


@dataclass(frozen=True)
class DemoRun:
    """One measured training run of the demo."""

    label: str
    trace_dir: Path
    records: tuple[StepRecord, ...]
    summary: StepSummary  # over the steps after the profiled window
    wall_s: float


@dataclass(frozen=True)
class DemoResult:
    """Both runs, and the whole demo's wall time."""

    before: DemoRun
    after: DemoRun
    wall_s: float

    @property
    def speedup(self) -> float:
        """ips after / ips before."""
        return self.after.summary.ips / self.before.summary.ips if self.before.summary.ips else 0.0

    def to_dict(self) -> dict[str, object]:
        """Plain data for ``--json``."""
        def run(r: DemoRun) -> dict[str, object]:
            s = r.summary
            return {"label": r.label, "trace_dir": str(r.trace_dir), "wall_s": r.wall_s,
                    "ips": s.ips, "batch_cost_s": s.mean_batch_cost_s,
                    "reader_cost_s": s.mean_reader_cost_s, "steps_measured": s.steps}
        return {"before": run(self.before), "after": run(self.after),
                "speedup": self.speedup, "wall_s": self.wall_s}


@dataclass(frozen=True)
class TraceStats:
    """What the placeholder diagnosis reads from a trace: per profiled step, in ms."""

    steps: int
    step_ms: float
    dataloader_ms: float

    @property
    def dataloader_share(self) -> float:
        return self.dataloader_ms / self.step_ms if self.step_ms > 0 else 0.0


def trace_stats(trace_dir: Path) -> TraceStats:
    """Mean step time and mean DataLoader time per step of the traces in ``trace_dir``."""
    import stepscope

    return stats_of(stepscope.load(trace_dir))


def stats_of(trace: Trace) -> TraceStats:
    """Profiled steps, mean step and mean DataLoader time of a trace, from the step breakdown of
    every rank (its step windows and DataLoader category, as every view shows them)."""
    from stepscope.analysis.breakdown import compute_breakdown

    bds = [compute_breakdown(trace, r) for r in trace.rank_ids]
    bds = [b for b in bds if b.step_count and b.step[0] >= 0]
    n = sum(b.step_count for b in bds)
    if n == 0:
        return TraceStats(0, 0.0, 0.0)
    step_ms = float(np.concatenate([b.total_ns for b in bds]).mean()) / 1e6
    dl_ms = float(np.concatenate([b.reader_cost_ns for b in bds]).mean()) / 1e6
    return TraceStats(n, step_ms, dl_ms)


def _diagnose(trace_dir: Path) -> str:
    """The advisor's verdict and top findings on one run, worded by the report layer."""
    from stepscope.advisor.engine import advise
    from stepscope.advisor.verdict import verdicts
    from stepscope.analysis.bundle import analyze
    from stepscope.ingest import load
    from stepscope.report import texts

    bundle = analyze(load(trace_dir, use_cache=False))
    lines = ["Diagnosis: " + texts.verdict_text(v) for v in verdicts(bundle)]
    for i, f in enumerate(advise(bundle)[:3], 1):
        gain = f"~{f.est_gain_ns / 1e6:.1f} ms/step" if f.est_gain_ns else ""
        lines.append(f"  {i}. [{f.severity.value}] {texts.title_text(f)} {gain}")
        lines.append(f"     {texts.found_text(f)}")
        lines.append(f"     change: {texts.change_text(f)}")
    return "\n".join(lines) if lines else "Diagnosis: no profiled step in the trace."


def _compare(base_dir: Path, new_dir: Path) -> str:
    """What changed between the two traces: the diff engine's narrative and step breakdown."""
    from stepscope.analysis.bundle import analyze
    from stepscope.compare.diff import compare
    from stepscope.compare.narrative import word
    from stepscope.ingest import load

    result = compare(analyze(load(base_dir, use_cache=False)), analyze(load(new_dir, use_cache=False)))
    step = result.row("step")
    lines = ["Trace comparison (profiled steps, stepscope diff):",
             _row("mean step", step.base_ms, step.new_ms, "ms")]
    for cat in ("dataloader", "cpu_exec", "runtime", "kernel"):
        r = next((r for r in result.overall if r.category == cat), None)
        if r is not None and (r.base_ms or r.new_ms):
            lines.append(_row(f"{cat} per step", r.base_ms, r.new_ms, "ms"))
    lines += ["  " + w for w in word([c for c in result.narrative if c.kind != "step"])]  # the mean step: above
    return "\n".join(lines)


def _row(name: str, before: float, after: float, unit: str) -> str:
    change = f"{(after - before) / before:+.0%}" if before else "n/a"
    return f"  {name:<22} {before:>9.2f} -> {after:>9.2f} {unit:<9} ({change})"


def _timing_table(before: StepSummary, after: StepSummary) -> str:
    """StepTimer numbers before/after, measured outside the profiled window."""
    return "\n".join([
        f"Step timer ({before.steps} / {after.steps} steps after the profiled window):",
        _row("ips", before.ips, after.ips, "images/s"),
        _row("batch_cost", before.mean_batch_cost_s * 1e3, after.mean_batch_cost_s * 1e3, "ms"),
        _row("reader_cost", before.mean_reader_cost_s * 1e3, after.mean_reader_cost_s * 1e3, "ms"),
    ])


def _run(cfg: DemoConfig, trace_dir: Path, echo: Echo) -> DemoRun:
    echo(f"Training {cfg.steps} steps with DataLoader({cfg.label}) ...")
    t0 = time.perf_counter()
    records = train(cfg, trace_dir, log=lambda line: echo(f"  {line}"))
    wall = time.perf_counter() - t0
    o = cfg.options
    skip = o.skip_first + o.wait + o.warmup + o.active
    summary = summarise_records(records[skip:])
    echo(f"  -> {summary.format('images')}  [{wall:.1f} s, traces in {trace_dir}]")
    (trace_dir.parent / f"steps_{trace_dir.name}.json").write_text(
        json.dumps([r.to_dict() for r in records], indent=1))
    return DemoRun(cfg.label, trace_dir, records, summary, wall)


def run_demo(out_dir: Path, echo: Echo = print, steps: int = 40) -> DemoResult:
    """Run the whole demo into ``out_dir`` (``before/``, ``after/`` trace dirs + step records)."""
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")  # the profiler's own chatter is not the demo
    os.environ.setdefault("KINETO_LOG_LEVEL", "5")
    torch = import_torch()
    t0 = time.perf_counter()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        echo("1/3  Baseline: heavy per-sample preprocessing in the training process")
        before = _run(replace(BASELINE, steps=steps), out_dir / "before", echo)
        echo(_diagnose(before.trace_dir))
        echo("2/3  Rerun with the advised fix")
        after = _run(replace(FIXED, steps=steps), out_dir / "after", echo)
    finally:
        torch.set_num_threads(threads)
    echo("3/3  Measured effect")
    echo(_timing_table(before.summary, after.summary))
    echo(_compare(before.trace_dir, after.trace_dir))
    result = DemoResult(before, after, time.perf_counter() - t0)
    echo(f"ips x{result.speedup:.2f}; demo took {result.wall_s:.1f} s")
    return result
