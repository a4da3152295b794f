"""Terminal kernel view: top kernels by total time, duration histogram, collective kernels."""

from __future__ import annotations

import numpy as np
from rich.console import Console
from rich.table import Table

from stepscope.analysis.kernels import KernelView
from stepscope.report.platform_texts import is_npu
from stepscope.report.views._deep import short, us


def short_kernel(name: str, width: int = 48) -> str:
    """A long C++ kernel signature cut to its qualified name (``void ns::k<...>(...)`` → ``ns::k<…>``)."""
    n = name[5:] if name.startswith("void ") else name
    if len(n) > width:
        cut = min((i for i in (n.find("<"), n.find("(")) if i > 0), default=len(n))
        n = n[:cut] + ("<…>" if cut < len(n) and n[cut] == "<" else "")
    return short(n, width)


def _bps(v: float) -> str:
    return "-" if np.isnan(v) else f"{v:,.2f}"


#: the kernel table's columns of an NVIDIA / AMD GPU's parts: an Ascend NPU's kernels name no Tensor Core
#: and launch no grid of blocks on SMs
GPU_COLUMNS = ("TC", "blocks/SM", "occupancy %")


def render_kernels(k: KernelView, console: Console, top: int, platform: str = "cuda") -> None:
    """Top-N kernels by name; the duration histogram; NCCL/RCCL kernels with their collective."""
    t = Table(title=f"rank {k.rank}: top {min(top, len(k.by_name))} of {len(k.by_name)} kernels "
              f"(µs; total {k.total_kernel_ns / 1e6:,.3f} ms)", header_style="bold")
    gpu = not is_npu(platform)
    cols = [c for c in ("kernel", "calls", "total", "mean", "median", "min", "max", "std", *GPU_COLUMNS, "share %")
            if gpu or c not in GPU_COLUMNS]
    for col in cols:
        t.add_column(col, justify="left" if col == "kernel" else "right", no_wrap=True,
                     overflow="ellipsis", max_width=48 if col == "kernel" else None)
    b = k.by_name
    for i in range(min(top, len(b))):
        device = ("yes" if b.tc_used[i] else "", _bps(b.mean_blocks_per_sm[i]), _bps(b.mean_occupancy_pct[i]))
        t.add_row(short_kernel(str(b.name[i])), f"{b.calls[i]:,}", us(b.total_ns[i]), us(b.mean_ns[i]),
                  us(b.median_ns[i]), us(b.min_ns[i]), us(b.max_ns[i]), us(b.std_ns[i]),
                  *(device if gpu else ()), f"{b.share_pct[i]:.1f}")
    console.print(t)
    if k.occupancy_computed:
        console.print("[dim]blocks/SM and occupancy computed from launch shapes where the trace lacks them[/dim]")
    _histogram(k, console)
    _collectives(k, console, top)


def _histogram(k: KernelView, console: Console) -> None:
    nz = np.flatnonzero(k.hist_counts)
    if len(nz) == 0:
        return
    peak = int(k.hist_counts.max())
    lines = []
    for i in range(int(nz[0]), int(nz[-1]) + 1):
        lo = k.hist_edges_ns[i] / 1e3
        n = int(k.hist_counts[i])
        lines.append(f"  ≥{lo:>10,.0f} µs {'█' * max(int(40 * n / peak), 1 if n else 0)} {n:,}")
    console.print("kernel duration histogram:\n" + "\n".join(lines))


def _collectives(k: KernelView, console: Console, top: int) -> None:
    c = k.collectives
    if len(c.name) == 0:
        return
    t = Table(title=f"{len(c.name)} communication kernels (longest first)", header_style="bold")
    for col in ("kernel", "dur µs", "collective", "in elems", "out elems", "dtype", "group", "ranks"):
        t.add_column(col, no_wrap=True, overflow="ellipsis", max_width=40)
    for i in range(min(top, len(c.name))):
        t.add_row(short_kernel(str(c.name[i])), us(c.dur_ns[i]), str(c.collective[i]),
                  f"{c.in_nelems[i]:,}" if c.in_nelems[i] >= 0 else "?",
                  f"{c.out_nelems[i]:,}" if c.out_nelems[i] >= 0 else "?", str(c.dtype[i]),
                  f"{c.pg_name[i]} {c.pg_desc[i]}".strip(), str(c.pg_ranks[i]))
    console.print(t)
