"""Terminal view of the convolutions analysis."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.convolutions import ConvolutionResult
from stepscope.report.views._deep import ms, pct, print_names


def render_convolutions(r: ConvolutionResult, console: Console, top: int) -> None:
    n = max(r.step_count, 1)
    console.print(f"[bold]rank {r.rank}: convolutions[/bold]: {pct(r.conv_pct)} of kernel time "
                  f"({ms(r.conv.total_ns / n)} ms per step); on Tensor Cores {ms(r.tc_conv.total_ns / n)} ms, "
                  f"cuDNN fallback algorithms {ms(r.fallback.total_ns / n)} ms ({pct(r.fallback_pct)} of kernel time), "
                  f"layout transforms {ms(r.transforms.total_ns / n)} ms per step; {len(r.calls.kernels):,} calls, "
                  f"at most {int(r.calls.kernels.max()) if len(r.calls.kernels) else 0} kernels per call")
    print_names(console, f"rank {r.rank}: convolution kernels, by name", r.conv, n, top, "kernel")
    print_names(console, f"rank {r.rank}: cuDNN fallback kernels, by name", r.fallback, n, top, "kernel")
    print_names(console, f"rank {r.rank}: layout transforms, by name", r.transforms, n, top, "kernel")
    print_names(console, f"rank {r.rank}: NCHW Tensor-Core convolutions, by name", r.nchw_tc, n, top, "kernel")
