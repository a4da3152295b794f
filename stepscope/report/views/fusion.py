"""Terminal view of the fusion-candidates analysis."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.fusion import FusionResult
from stepscope.report.views._deep import ms, pct, print_names, short, table


def render_fusion(r: FusionResult, console: Console, top: int) -> None:
    console.print(f"[bold]rank {r.rank}: fusion candidates[/bold]: {r.short_kernel_count:,} of {r.kernel_count:,} "
                  f"kernels are shorter than {r.short_ns / 1e3:.0f} µs ({ms(r.short_kernel_time_ns)} ms)")
    s = r.sequences
    if len(s.count):
        t = table(f"rank {r.rank}: frequent short-kernel sequences", "sequence", "count", "time ms")
        for i in range(min(top, len(s.count))):  # per sequence
            t.add_row(" → ".join(short(n, 45) for n in s.names[i]), f"{s.count[i]:,}", ms(s.time_ns[i]))
        console.print(t)
    o = r.optimizer
    if o.verdict != "none":
        console.print(f"  optimizer {o.name}: {o.kernels_per_step:.0f} kernels per optimizer step "
                      f"({ms(o.time_ns / max(o.step_count, 1))} ms), {pct(o.elementwise_pct)} single-tensor "
                      f"elementwise, {o.foreach_count} foreach/fused: [bold]{o.verdict}[/bold]")
        print_names(console, f"rank {r.rank}: optimizer kernels, by name", o.kernels, o.step_count, top, "kernel")
