"""Launch configuration of one rank (Visual Profiler's guided analysis, SPEC §5).

A kernel whose grid has fewer blocks than the device has SMs leaves SMs idle for its whole run,
however well each block performs. Per kernel: blocks = grid x·y·z; *under-filled* when blocks <
:data:`MACHINE_SIZED` × SM count. A grid of at least three quarters of the SMs is sized to the
machine, not to the work: Hopper's persistent GEMMs (cuBLAS ``sm90_xmma_*``, ``nvjet_*``) launch
one block per usable SM and loop over their tiles, and a cluster shape that does not tile every SM
leaves a few out (an H200 capture: 112-128 blocks on 132 SMs for GEMMs of 2,048 tiles) — more work
adds no blocks to such a grid. Communication kernels are left out (NCCL sizes its grid by channels
on purpose).
Weighted by time: ``underfilled_time_pct`` = time of under-filled kernels / time of all
kernels with a recorded grid, and ``sm_fill_pct`` = Σ dur · min(1, blocks / SMs) / Σ dur, over the
kernels with a recorded grid; a graph replay's kernels record none and are left out
(``all_kernel_time_ns`` is the time of every kernel, grid or not, to say how much that leaves).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stepscope.analysis._memo import per_rank
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.comm import classify
from stepscope.analysis.common import F64, I64, B, kept_steps, pct, rank_rows
from stepscope.analysis.named import NamedRows, named_rows
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

#: a grid of at least this share of the SMs is sized to the machine (see the module docstring)
MACHINE_SIZED = 0.75


@dataclass(frozen=True)
class UnderfilledKernels:
    """Under-filled kernels grouped by name, most time first."""

    name: list[str]
    calls: I64
    time_ns: I64
    mean_blocks: F64
    example_row: I64


@dataclass(frozen=True)
class UnderfilledSet:
    """Under-filled kernels inside the steps (the whole trace without steps) of at least a duration:
    the evidence of the under-filled-grid finding. Totals over the steps."""

    count: int
    time_ns: float
    idle_sm_ns: float  # Σ duration × (1 − blocks / SMs): the SM time their grids leave idle
    mean_blocks: float
    names: NamedRows
    blocks: I64  # each kernel's blocks (``names.rows`` order)


@dataclass(frozen=True)
class LaunchConfigResult:
    """Grid sizes against the SM count of one rank's device."""

    rank: int
    sm_count: int
    kernel_count: int  # kernels with a recorded grid
    kernel_time_ns: int  # ... their time
    all_kernel_time_ns: int  # every kernel's time, with a grid or not (collectives left out)
    underfilled: NamedRows  # evidence: every under-filled kernel
    underfilled_blocks: I64  # their grids' blocks
    underfilled_in_step_mask: B  # whether each lies in a kept step (all True without steps)
    step_count: int  # steps the per-step numbers average over (0 without steps)
    underfilled_time_ns: int
    sm_fill_pct: float
    kernels: UnderfilledKernels

    @property
    def underfilled_rows(self) -> I64:
        return self.underfilled.rows

    @property
    def underfilled_time_pct(self) -> float:
        return pct(self.underfilled_time_ns, self.kernel_time_ns)

    def underfilled_in_step(self, min_dur_ns: float = 0.0) -> UnderfilledSet:
        """The under-filled kernels inside the steps lasting at least ``min_dur_ns``."""
        u = self.underfilled
        sel = self.underfilled_in_step_mask & (u.dur_ns >= min_dur_ns)
        dur = u.dur_ns[sel].astype(np.float64)
        blocks = self.underfilled_blocks[sel].astype(np.float64)
        return UnderfilledSet(count=int(sel.sum()), time_ns=float(dur.sum()),
                              idle_sm_ns=float((dur * (1.0 - blocks / self.sm_count)).sum()),
                              mean_blocks=float(blocks.mean()) if len(blocks) else 0.0, names=u.subset(sel),
                              blocks=self.underfilled_blocks[sel])


@per_rank
def compute_launch_config(trace: Trace, rank: int) -> LaunchConfigResult:
    """Kernels with fewer blocks than three quarters of the SMs, weighted by their time."""
    dev = trace.device_of_rank(rank)
    if dev is None or not dev.sm_count:
        raise NotApplicable("the SM count of the device is not in the trace")
    ev = trace.events
    k = rank_rows(trace, rank, (int(EventKind.KERNEL),))
    k = k[~classify(trace).is_comm[k]]  # collectives use few blocks (channels) by design
    blocks = ev["grid_x"][k].astype(np.int64) * ev["grid_y"][k] * ev["grid_z"][k]
    all_ns = int(ev["dur_ns"][k].sum())
    k, blocks = k[blocks > 0], blocks[blocks > 0]
    if len(k) == 0:
        raise NotApplicable("no kernel grid sizes in the trace")
    dur = ev["dur_ns"][k]
    under = blocks < MACHINE_SIZED * dev.sm_count
    fill = np.minimum(1.0, blocks / dev.sm_count)
    steps = kept_steps(trace, rank)
    in_steps = np.isin(ev["step"][k[under]], steps) if len(steps) else np.ones(int(under.sum()), bool)
    return LaunchConfigResult(
        rank=rank, sm_count=int(dev.sm_count), kernel_count=len(k), kernel_time_ns=int(dur.sum()),
        all_kernel_time_ns=all_ns, underfilled=named_rows(trace, k[under]),
        underfilled_blocks=blocks[under].astype(np.int64),
        underfilled_in_step_mask=in_steps, step_count=len(steps), underfilled_time_ns=int(dur[under].sum()),
        sm_fill_pct=pct(float((dur * fill).sum()), float(dur.sum())),
        kernels=_by_name(trace, k[under], blocks[under], dur[under]))


def _by_name(trace: Trace, rows: I64, blocks: I64, dur: I64) -> UnderfilledKernels:
    names = trace.events["name"][rows]
    uniq, first, inv = np.unique(names, return_index=True, return_inverse=True)
    calls = np.bincount(inv, minlength=len(uniq))
    time = np.bincount(inv, weights=dur, minlength=len(uniq))
    mean_blocks = np.bincount(inv, weights=blocks, minlength=len(uniq)) / np.maximum(calls, 1)
    text = trace.strings.decode(uniq)
    order = np.lexsort((np.argsort(np.argsort(text, kind="stable"), kind="stable"), -time))  # ties by name
    return UnderfilledKernels(name=[str(s) for s in text[order]],
                              calls=calls[order].astype(np.int64), time_ns=time[order].astype(np.int64),
                              mean_blocks=mean_blocks[order], example_row=rows[first[order]])
