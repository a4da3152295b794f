"""Terminal view of the convolutions analysis (MIOpen and Matrix Cores on an AMD GPU: the platform's words)."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.convolutions import ConvolutionResult
from stepscope.report.platform_texts import dialect, is_npu
from stepscope.report.views._deep import ms, pct, print_names


def render_convolutions(r: ConvolutionResult, console: Console, top: int, platform: str = "cuda") -> None:
    n = max(r.step_count, 1)
    # an Ascend NPU's kernels do not name the unit nor the algorithm a convolution ran with (its AI cores'
    # Cube runs every one): no Tensor-Core or library-fallback split there
    npu = is_npu(platform)
    split = "" if npu else (
        f"on Tensor Cores {ms(r.tc_conv.total_ns / n)} ms, cuDNN fallback algorithms "
        f"{ms(r.fallback.total_ns / n)} ms ({pct(r.fallback_pct)} of kernel time), ")
    console.print(dialect(
        f"[bold]rank {r.rank}: convolutions[/bold]: {pct(r.conv_pct)} of kernel time "
        f"({ms(r.conv.total_ns / n)} ms per step); {split}"
        f"layout transforms {ms(r.transforms.total_ns / n)} ms per step; {len(r.calls.kernels):,} calls, "
        f"at most {int(r.calls.kernels.max()) if len(r.calls.kernels) else 0} kernels per call", platform))
    lists = (("convolution kernels", r.conv), ("layout transforms", r.transforms)) if npu else (
        ("convolution kernels", r.conv), ("cuDNN fallback kernels", r.fallback),
        ("layout transforms", r.transforms), ("NCHW Tensor-Core convolutions", r.nchw_tc))
    for title, rows in lists:
        print_names(console, dialect(f"rank {r.rank}: {title}, by name", platform), rows, n, top, "kernel")
