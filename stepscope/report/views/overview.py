"""Terminal overview (TB "Overview"): device, GPU efficiency numbers and the average step breakdown."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from stepscope.analysis.overview import Overview
from stepscope.report.views._deep import ms, nbytes
from stepscope.report.views.breakdown import breakdown_bar


def _pct(v: float | None, missing: str) -> str:
    return f"{v:.2f} %" if v is not None else f"[dim]n/a ({missing})[/dim]"


def _grid_note(o: Overview) -> str:
    """Which kernels the SM efficiency weighs, when some kernels have no grid (graph replays)."""
    if o.sm_efficiency_pct is None or o.grid_kernel_ns >= o.kernel_ns or not o.kernel_ns:
        return ""
    return f" (of the kernels with a known grid: {o.grid_kernel_ns / o.kernel_ns * 100:.1f} % of kernel time)"


def render_overview(o: Overview, console: Console, top: int) -> None:
    """Device, steps, GPU utilization / SM efficiency / occupancy / Tensor Cores, breakdown bar."""
    t = Table(title=f"rank {o.rank}: overview", show_header=False)
    t.add_column("what", style="bold")
    t.add_column("value")
    d = o.device
    if d is not None:
        cc = f", compute {d.compute_major}.{d.compute_minor}" if d.compute_major is not None else ""
        mem = f", {nbytes(d.total_memory_bytes)}" if d.total_memory_bytes else ""
        t.add_row("device", f"{d.name}{mem}{cc}, {d.sm_count or '?'} SMs")
    else:
        t.add_row("device", "[dim]no GPU activity in this trace[/dim]")
    bd = o.breakdown
    steps = "none (whole trace as one step)" if bd.step_count and bd.step[0] < 0 else f"{bd.step_count}"
    t.add_row("steps profiled", steps)
    t.add_row("average step time", f"{ms(bd.avg_step_ns)} ms ({bd.steps_per_s or 0:.2f} steps/s)")
    if bd.samples_per_s is not None:
        t.add_row("throughput", f"{bd.samples_per_s:,.1f} samples/s")
    t.add_row("GPU utilization", _pct(o.gpu_utilization_pct, "no kernels"))
    t.add_row("est. SM efficiency", _pct(o.sm_efficiency_pct, "no launch shapes") + _grid_note(o))
    occ_note = " (computed from launch shapes)" if o.occupancy_computed else ""
    t.add_row("est. achieved occupancy", _pct(o.achieved_occupancy_pct, "no launch shapes") + occ_note)
    tc_of = " (every kernel, by its name)" if o.tensor_core_pct is not None else ""  # not tensor_cores' eligible share
    t.add_row("kernel time on Tensor Cores", _pct(o.tensor_core_pct, "no kernels") + tc_of)
    if o.span_ns:
        t.add_row("GPU busy / span", f"{ms(o.busy_ns)} ms / {ms(o.span_ns)} ms")
    console.print(t)
    if bd.step_count:
        console.print(breakdown_bar(bd.avg_category_ns, bd.avg_step_ns))
