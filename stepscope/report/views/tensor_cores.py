"""Terminal view of the Tensor-Core eligibility analysis (Matrix Cores on an AMD GPU: the platform's words)."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.tensor_cores import TensorCoreResult
from stepscope.report.platform_texts import dialect
from stepscope.report.views._deep import ms, pct, print_names


def render_tensor_cores(r: TensorCoreResult, console: Console, top: int, platform: str = "cuda") -> None:
    n = max(r.step_count, 1)
    console.print(dialect(f"[bold]rank {r.rank}: Tensor Cores[/bold]: {pct(r.eligible_pct)} of kernel time "
                          f"({ms(r.kernel_ns / n)} ms per step) is launched by Tensor-Core eligible ops; "
                          f"{pct(r.tc_pct_of_eligible)} of that ran on Tensor Cores", platform))
    if r.unlinked_ns > 0:  # graph replays: their kernels name no op, so none of them counts as eligible
        console.print(dialect(
            "  eligible counts only kernels linked to the op that launched them (a graph replay's are not): "
            f"{ms(r.unlinked_ns / n)} ms per step ({pct(100.0 * r.unlinked_ns / r.kernel_ns)} of kernel time) is "
            "linked to none and counted as not eligible; the overview's \"kernel time on Tensor Cores\" weighs "
            "every kernel, by its name alone", platform))
    if not len(r.non_tc_kernels):
        return
    types = f"; their input types: {', '.join(r.input_types)}" if r.input_types else ""  # the trace's words
    console.print(dialect(f"  eligible kernels without Tensor Cores: {ms(r.non_tc_kernels.total_ns / n)} ms per step",
                          platform) + types)
    print_names(console, dialect(f"rank {r.rank}: eligible ops without Tensor Cores, by name", platform),
                r.non_tc_ops, n, top, "op")
    print_names(console, f"rank {r.rank}: their kernels, by name", r.non_tc_kernels, n, top, "kernel")
