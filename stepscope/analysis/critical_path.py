"""Critical path of each step of one rank, simplified and vectorised (HTA critical path, SPEC §5).

Model (documented in docs/analyses/critical_path.md). A step ends when its last GPU work ends, and
GPU work can only start once the host has launched it. So, walking the step in time:

* while the device runs anything, the critical path is on the **GPU**: it is ``gpu_compute`` when
  a non-communication activity (kernel, copy, memset) runs, else ``communication``;
* while the device is idle, the critical path is on the **host threads that launch GPU work**, and
  the time is charged, in this priority, to ``data_loading`` (inside a DataLoader event of the
  rank), ``launch_overhead`` (inside a launch / async-copy call: ``cudaLaunchKernel``,
  ``cudaMemcpyAsync`` ...), ``cpu`` (inside any other host event except the step annotation), or
  ``other`` (the host did nothing that was traced: Python between ops, untraced work).

Every instant of a step lands in exactly one category, so the six parts sum to the step. Unlike
HTA's graph-based critical path this ignores CPU time hidden behind busy GPU work and cross-stream
dependencies: it says what bounds the step, not which single chain of events does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis._common import I32, I64, interval_set, pct, rank_rows, step_windows
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.comm import classify
from stepscope.analysis.idle import is_dataloader_name
from stepscope.model.schema import GPU_KINDS, HOST_KINDS, EventKind
from stepscope.model.steps import STEP_NAME
from stepscope.model.trace import Trace
from stepscope.model.uniq import unique

CATEGORIES = ("gpu_compute", "communication", "data_loading", "launch_overhead", "cpu", "other")
LAUNCH_CALL = re.compile(r"Launch|MemcpyAsync|MemsetAsync|MemcpyWithStream", re.IGNORECASE)
Iv = intervals.Intervals


@dataclass(frozen=True)
class CriticalPathResult:
    """Per step, the time bound by each category (``parts_ns[i, j]``: step i, ``CATEGORIES[j]``).

    Evidence: the device-idle segments (``idle_start_ns`` / ``idle_end_ns``) with the category they
    were charged to (``idle_category``: index into ``CATEGORIES``).
    """

    rank: int
    step: I32
    step_ns: I64
    parts_ns: npt.NDArray[np.int64]
    idle_start_ns: I64
    idle_end_ns: I64
    idle_category: npt.NDArray[np.int8]

    def share_pct(self) -> dict[str, float]:
        """Share of all steps' time bound by each category."""
        total = float(self.step_ns.sum())
        return {c: pct(float(self.parts_ns[:, j].sum()), total) for j, c in enumerate(CATEGORIES)}

    @property
    def bound_by(self) -> str:
        """The category with the largest share."""
        shares = self.share_pct()
        return max(shares, key=lambda c: shares[c])


def compute_critical_path(trace: Trace, rank: int) -> CriticalPathResult:
    """What bounds each step of a rank: GPU compute, communication, data loading, launches, CPU."""
    ev = trace.events
    gpu = rank_rows(trace, rank, tuple(int(k) for k in GPU_KINDS))
    if len(gpu) == 0:
        raise NotApplicable("no GPU activity on this rank")
    wins = step_windows(trace, rank)
    comm = classify(trace).is_comm[gpu]
    busy = interval_set(trace, gpu)
    comm_only = intervals.subtract(interval_set(trace, gpu[comm]), interval_set(trace, gpu[~comm]))
    idle = intervals.subtract(intervals.union(wins.start_ns, wins.end_ns), busy)
    host = _host_sets(trace, rank, ev["launch"][gpu])
    pieces: list[Iv] = []
    rest = idle
    for s in host:  # data loading, launch overhead, cpu: in priority order
        pieces.append(intervals.intersect(rest, s))
        rest = intervals.subtract(rest, s)
    pieces.append(rest)

    def cov(iv: Iv) -> I64:
        return intervals.covered_in_windows(iv, wins.start_ns, wins.end_ns)

    comm_ns = cov(comm_only)
    parts = [cov(busy) - comm_ns, comm_ns, *(cov(p) for p in pieces)]
    seg_s = np.concatenate([p[0] for p in pieces])
    order = np.argsort(seg_s, kind="stable")
    cat = np.concatenate([np.full(len(p[0]), j + 2, np.int8) for j, p in enumerate(pieces)])
    return CriticalPathResult(rank=rank, step=wins.step, step_ns=wins.dur_ns, parts_ns=np.stack(parts, axis=1),
                              idle_start_ns=seg_s[order], idle_end_ns=np.concatenate([p[1] for p in pieces])[order],
                              idle_category=cat[order])


def _host_sets(trace: Trace, rank: int, launch: I32) -> tuple[Iv, Iv, Iv]:
    """Data-loading, launch-call and other host-activity sets of the threads that launch GPU work."""
    ev, pool = trace.events, trace.strings
    host = rank_rows(trace, rank, tuple(int(k) for k in HOST_KINDS))
    name = ev["name"][host]
    loader = host[pool.mask(is_dataloader_name)[name]]
    threads = unique(ev["track"][launch[launch >= 0]])
    on_thread = np.isin(ev["track"][host], threads)
    is_launch = pool.mask(lambda s: bool(LAUNCH_CALL.search(s)))[name] & np.isin(
        ev["kind"][host], [EventKind.RUNTIME, EventKind.DRIVER])
    is_step = pool.mask(lambda s: bool(STEP_NAME.match(s)))[name]
    return (interval_set(trace, loader), interval_set(trace, host[on_thread & is_launch]),
            interval_set(trace, host[on_thread & ~is_step]))
