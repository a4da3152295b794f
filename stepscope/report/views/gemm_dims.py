"""Terminal view of the GEMM dimensions analysis."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.gemm_dims import GemmDimsResult
from stepscope.report.views._deep import ms, short, table


def render_gemm_dims(r: GemmDimsResult, console: Console, top: int) -> None:
    n = max(r.step_count, 1)
    console.print(f"[bold]rank {r.rank}: GEMM dimensions[/bold]: {len(r.op) / n:,.1f} GEMM calls per step with "
                  f"recorded shapes, their kernels {ms(int(r.call_kernel_ns.sum()) / n)} ms of "
                  f"{ms(r.kernel_ns / n)} ms kernel time per step")
    t = table(f"rank {r.rank}: GEMM calls by shape", "op", "input dims", "N", "K", "half", "calls", "ms / step",
              right_from=2)
    for s in r.shapes()[:top]:  # per distinct shape
        t.add_row(s.op, short(s.dims, 50), str(s.n) if s.n >= 0 else "?", str(s.k) if s.k >= 0 else "?",
                  "yes" if s.half else "no", f"{s.calls:,}", ms(s.kernel_ns / n))
    console.print(t)
