"""Terminal view of the Tensor-Core eligibility analysis."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.tensor_cores import TensorCoreResult
from stepscope.report.views._deep import ms, pct, print_names


def render_tensor_cores(r: TensorCoreResult, console: Console, top: int) -> None:
    n = max(r.step_count, 1)
    console.print(f"[bold]rank {r.rank}: Tensor Cores[/bold]: {pct(r.eligible_pct)} of kernel time "
                  f"({ms(r.kernel_ns / n)} ms per step) is launched by Tensor-Core eligible ops; "
                  f"{pct(r.tc_pct_of_eligible)} of that ran on Tensor Cores")
    if r.unlinked_ns > 0:  # graph replays: their kernels name no op, so none of them counts as eligible
        console.print(f"  eligible counts only kernels linked to the op that launched them: {ms(r.unlinked_ns / n)} ms "
                      f"per step ({pct(100.0 * r.unlinked_ns / r.kernel_ns)} of kernel time) is linked to none (graph "
                      "replays among them) and counted as not eligible; the overview's \"kernel time on Tensor "
                      "Cores\" weighs every kernel, by its name alone")
    if not len(r.non_tc_kernels):
        return
    types = f"; their input types: {', '.join(r.input_types)}" if r.input_types else ""
    console.print(f"  eligible kernels without Tensor Cores: {ms(r.non_tc_kernels.total_ns / n)} ms per step{types}")
    print_names(console, f"rank {r.rank}: eligible ops without Tensor Cores, by name", r.non_tc_ops, n, top, "op")
    print_names(console, f"rank {r.rank}: their kernels, by name", r.non_tc_kernels, n, top, "kernel")
