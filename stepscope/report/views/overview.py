"""Terminal overview (TB "Overview"): device, GPU efficiency numbers and the average step breakdown,
in the words of the rank's platform (an AMD GPU's CUs and Matrix Cores, an Ascend NPU's AI cores); a
rank without any device activity (a CPU-only run) shows no GPU rows."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from stepscope.analysis.overview import Overview
from stepscope.model.trace import DeviceInfo
from stepscope.report.platform_texts import dialect, is_npu
from stepscope.report.views._deep import ms, nbytes
from stepscope.report.views.breakdown import breakdown_bar


def _pct(v: float | None, missing: str) -> str:
    return f"{v:.2f} %" if v is not None else f"[dim]n/a ({missing})[/dim]"


def _grid_note(o: Overview) -> str:
    """Which kernels the SM efficiency weighs, when some kernels have no grid (graph replays)."""
    if o.sm_efficiency_pct is None or o.grid_kernel_ns >= o.kernel_ns or not o.kernel_ns:
        return ""
    return f" (of the kernels with a known grid: {o.grid_kernel_ns / o.kernel_ns * 100:.1f} % of kernel time)"


def device_text(d: DeviceInfo, platform: str) -> str:
    """Name, memory, architecture and SM count, in the platform's words, nothing the name already says:
    ``AMD GPU (gfx9.4, 304 CUs), 192.0 GiB`` (was ``..., compute 9.4, 304 SMs`` under a header of CUs)."""
    mem = f", {nbytes(d.total_memory_bytes)}" if d.total_memory_bytes else ""
    arch = ""
    if d.compute_major is not None:
        arch = (f"gfx{d.compute_major}.{d.compute_minor}" if d.vendor == "amd"
                else f"compute {d.compute_major}.{d.compute_minor}")
    count = dialect(f"{d.sm_count} SMs", platform) if d.sm_count else ""
    parts = [p for p in (arch, count) if p and p not in d.name]
    return d.name + mem + "".join(f", {p}" for p in parts)


def render_overview(o: Overview, console: Console, top: int, platform: str = "cuda") -> None:
    """Device, steps, GPU utilization / SM efficiency / occupancy / Tensor Cores, breakdown bar."""
    t = Table(title=f"rank {o.rank}: overview", show_header=False)
    t.add_column("what", style="bold")
    t.add_column("value")
    d = o.device
    if d is not None:
        t.add_row("device", device_text(d, platform))
    elif o.kernel_ns == 0 and o.busy_ns == 0:  # nothing of a device: a CPU-only run, no GPU rows
        t.add_row("device", "[dim]none (no device activity in this trace)[/dim]")
    else:
        t.add_row("device", "[dim]not described in the trace[/dim]")
    bd = o.breakdown
    if bd.whole_trace:  # no steps to count, average or run per second
        t.add_row("steps profiled", "none (no step markers)")
        t.add_row("window", f"{ms(bd.avg_step_ns)} ms (the whole trace)")
    else:
        t.add_row("steps profiled", f"{bd.step_count}")
        t.add_row("average step time", f"{ms(bd.avg_step_ns)} ms ({bd.steps_per_s or 0:.2f} steps/s)")
    if bd.samples_per_s is not None:
        t.add_row("throughput", f"{bd.samples_per_s:,.1f} samples/s")
    if d is not None or o.kernel_ns or o.busy_ns:
        for what, value in _efficiency(o, platform):
            t.add_row(dialect(what, platform), dialect(value, platform))
    console.print(t)
    if bd.step_count:
        console.print(breakdown_bar(bd.avg_category_ns, bd.avg_step_ns))


def _efficiency(o: Overview, platform: str = "cuda") -> list[tuple[str, str]]:
    """The GPU efficiency rows (label, value), in NVIDIA's words (the caller says them for the platform);
    no Tensor-Core row on an Ascend NPU (its kernels do not name the unit they ran on)."""
    occ_note = " (computed from launch shapes)" if o.occupancy_computed else ""
    tc_of = " (every kernel, by its name)" if o.tensor_core_pct is not None else ""  # not tensor_cores' eligible share
    rows = [("GPU utilization", _pct(o.gpu_utilization_pct, "no kernels")),
            ("est. SM efficiency", _pct(o.sm_efficiency_pct, "no launch shapes") + _grid_note(o)),
            ("est. achieved occupancy", _pct(o.achieved_occupancy_pct, "no launch shapes") + occ_note),
            ("kernel time on Tensor Cores", _pct(o.tensor_core_pct, "no kernels") + tc_of)]
    if is_npu(platform):
        rows.pop()
    if o.span_ns:
        rows.append(("GPU busy / span", f"{ms(o.busy_ns)} ms / {ms(o.span_ns)} ms"))
    return rows
