"""Terminal view of the profiler's own cost: the rank's recorded ops and, where the host bounds its
step, that step replayed without their cost (:mod:`stepscope.analysis.profiler_cost`)."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.profiler_cost import ProfilerCost
from stepscope.report.views._deep import ms


def render_profiler_cost(p: ProfilerCost, console: Console, top: int) -> None:
    head = (f"[bold]rank {p.rank}: the profiler's own cost[/bold]: {p.events_per_step:,.0f} recorded ops a step "
            f"at {p.event_cost_ns / 1e3:.3g} µs each; recorded step {ms(p.recorded_step_ns)} ms, bound by {p.bound}")
    if p.measured_step_ns is not None:
        head += (f" (the cost measured on this machine: {p.measured_steps} steps timed without the profiler by "
                 f"`stepscope run`, {ms(p.measured_step_ns)} ms at the median)")
    if p.unprofiled_step_ns is None or p.unprofiled_bound is None:
        console.print(f"{head}; not replayed without it: its recorded ops cost under a tenth of the step at that "
                      "rate, or more than all of it")
        return
    said = "another bound: the verdict says so" if p.changes_bound else "the same bound"
    console.print(f"{head}; without it {ms(p.unprofiled_step_ns)} ms, bound by {p.unprofiled_bound} ({said})")
