"""Distributed view of one rank: computation vs communication per step, overlap, collective stats.

Definitions (TB plugin distributed view, HTA comm/compute overlap):

* compute = ∪ of non-communication kernels; comm = ∪ of communication kernels (:mod:`.comm`);
  memcpy / memset are neither (they fall into *other*).
* Per step (``[start, end)`` stretched to its GPU work), four disjoint parts that sum to the step:
  ``computation_ns`` = |compute \\ comm|, ``communication_ns`` = |comm \\ compute|,
  ``overlap_ns`` = |compute ∩ comm|, ``other_ns`` = the rest (idle, copies).
* ``overlap_ratio_pct`` = |comm ∩ compute| / |comm| over all steps (HTA).
* Collectives: per communication kernel its type, size S = max(input, output) bytes, latency
  (kernel duration, waiting included), algorithm bandwidth S / t and bus bandwidth with the
  nccl-tests factors: all-reduce 2(n−1)/n; all-gather, reduce-scatter, all-to-all (n−1)/n;
  broadcast, reduce, send/recv 1. n = the process group size, else the world size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis._memo import per_rank
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.comm import CollType, classify, coll_type_name
from stepscope.analysis.common import F64, I32, I64, B, Windows, interval_set, pct, rank_rows, step_windows, window_of
from stepscope.analysis.platform import has_device
from stepscope.analysis.stragglers import match_collectives
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

Arr = npt.NDArray[Any]
_FULL = (CollType.ALLGATHER, CollType.REDUCE_SCATTER, CollType.ALLTOALL)


@dataclass(frozen=True)
class CollectiveStats:
    """Collectives grouped by (type, process group): one entry per group, largest time first."""

    coll_type: list[str]
    pg_name: list[str]
    count: I64
    bytes_total: I64  # Σ S over instances with a known size
    time_ns: I64  # Σ kernel duration
    mean_latency_ns: F64
    algbw_gbps: F64  # Σ S / Σ t over instances with a known size (NaN when none)
    busbw_gbps: F64


@dataclass(frozen=True)
class DistributedResult:
    """Computation / communication split of one rank, per step (arrays aligned with ``step``)."""

    rank: int
    world_size: int | None
    step: I32
    step_ns: I64
    computation_ns: I64
    communication_ns: I64
    overlap_ns: I64
    other_ns: I64
    overlap_ratio_pct: float
    wait_ns: I64  # per step: Σ waiting inside communication kernels (see :mod:`.stragglers`)
    transfer_ns: I64  # per step: Σ transfer time of communication kernels
    wait_method: str
    kernel_count: int  # kernels in the windows
    comm_kernel_count: int
    # one entry per communication kernel (rows into trace.events), in time order
    comm_rows: I64
    comm_type: I32  # CollType code
    comm_dur_ns: I64
    comm_bytes: I64  # S, -1 unknown
    comm_group_size: I32
    algbw_gbps: F64
    busbw_gbps: F64
    collectives: CollectiveStats

    def avg_ns(self, field: str) -> float:
        """Mean over steps of one of the per-step arrays."""
        arr = getattr(self, field)
        return float(np.mean(arr)) if len(arr) else 0.0


def bus_factor(coll_type: I32, group_size: I32) -> F64:
    """nccl-tests bus-bandwidth factor per collective (NaN when the group size is unknown)."""
    n = group_size.astype(np.float64)
    n = np.where(n > 0, n, np.nan)
    f = np.ones(len(coll_type))
    f = np.where(coll_type == CollType.ALLREDUCE, 2 * (n - 1) / n, f)
    f = np.where(np.isin(coll_type, [int(t) for t in _FULL]), (n - 1) / n, f)
    return np.asarray(f, np.float64)


@per_rank
def compute_distributed(trace: Trace, rank: int) -> DistributedResult:
    """Per-step computation / communication / overlap / other of one rank, plus collective stats."""
    cls = classify(trace)
    kernels = rank_rows(trace, rank, (int(EventKind.KERNEL),))
    is_comm = cls.is_comm[kernels]
    if not is_comm.any():
        raise NotApplicable("no communication kernels on this rank" if has_device(trace, rank) else
                            "no device on this rank: its collectives, if any, run on the host (the step breakdown's "
                            "Comm)")
    wins = step_windows(trace, rank)
    comp = interval_set(trace, kernels[~is_comm])
    comm = interval_set(trace, kernels[is_comm])
    split = _split(wins, comp, comm)
    comm_in = split[1] + split[2]
    in_win = _in_windows(trace, kernels, wins)
    crow = kernels[is_comm & in_win]
    world = trace.rank_info(rank).world_size
    per = _per_collective(trace, crow, world)
    wait, transfer, method = _wait_transfer(trace, crow, wins)
    return DistributedResult(
        rank=rank, world_size=world, step=wins.step, step_ns=wins.dur_ns,
        computation_ns=split[0], communication_ns=split[1], overlap_ns=split[2], other_ns=split[3],
        overlap_ratio_pct=pct(float(split[2].sum()), float(comm_in.sum())),
        wait_ns=wait, transfer_ns=transfer, wait_method=method,
        kernel_count=int(in_win.sum()), comm_kernel_count=len(crow), comm_rows=crow, **per,
        collectives=_group(trace, crow, per))


def _split(wins: Windows, comp: intervals.Intervals, comm: intervals.Intervals) -> tuple[I64, I64, I64, I64]:
    comp_in = intervals.covered_in_windows(comp, wins.start_ns, wins.end_ns)
    comm_in = intervals.covered_in_windows(comm, wins.start_ns, wins.end_ns)
    both = intervals.covered_in_windows(intervals.intersect(comp, comm), wins.start_ns, wins.end_ns)
    other = wins.dur_ns - comp_in - comm_in + both
    return comp_in - both, comm_in - both, both, other


def _wait_transfer(trace: Trace, rows: I64, wins: Windows) -> tuple[I64, I64, str]:
    match = match_collectives(trace)
    pos = np.searchsorted(match.rows, rows)
    win = window_of(wins, trace.events["ts_ns"][rows])
    wait = np.bincount(win, weights=match.wait_ns[pos], minlength=len(wins)).astype(np.int64)
    transfer = np.bincount(win, weights=match.transfer_ns[pos], minlength=len(wins)).astype(np.int64)
    return wait, transfer, match.method


def _in_windows(trace: Trace, rows: I64, wins: Windows) -> B:
    ts = trace.events["ts_ns"][rows]
    pos = np.searchsorted(wins.start_ns, ts, side="right") - 1
    return np.asarray((pos >= 0) & (ts < wins.end_ns[np.maximum(pos, 0)]))


def _per_collective(trace: Trace, rows: I64, world: int | None) -> dict[str, Arr]:
    cls = classify(trace)
    ctype = cls.coll_type[rows].astype(np.int32)
    dur = trace.events["dur_ns"][rows]
    size = np.maximum(cls.in_bytes[rows], cls.out_bytes[rows])
    group = cls.group_size[rows]
    group = np.where(group > 0, group, world if world else -1).astype(np.int32)
    known = (size >= 0) & (dur > 0)
    algbw = np.where(known, size / np.maximum(dur, 1), np.nan)  # bytes/ns == GB/s
    return {"comm_type": ctype, "comm_dur_ns": dur, "comm_bytes": size, "comm_group_size": group,
            "algbw_gbps": algbw, "busbw_gbps": algbw * bus_factor(ctype, group)}


def _group(trace: Trace, rows: I64, per: dict[str, Arr]) -> CollectiveStats:
    cls = classify(trace)
    pg = cls.pg_name[rows].astype(np.int64)
    key = per["comm_type"].astype(np.int64) * (1 << 32) + (pg + 1)
    uniq, inv = np.unique(key, return_inverse=True)
    dur, size = per["comm_dur_ns"], per["comm_bytes"]
    known = size >= 0
    count = np.bincount(inv, minlength=len(uniq))
    t = np.bincount(inv, weights=dur, minlength=len(uniq))
    bytes_known = np.bincount(inv, weights=np.where(known, size, 0), minlength=len(uniq))
    t_known = np.bincount(inv, weights=np.where(known, dur, 0), minlength=len(uniq))
    factor = np.bincount(inv, weights=np.where(known, per["busbw_gbps"] / np.where(
        per["algbw_gbps"] > 0, per["algbw_gbps"], np.nan) * dur, 0), minlength=len(uniq))
    algbw = np.where(t_known > 0, bytes_known / np.maximum(t_known, 1), np.nan)
    busbw = np.where(t_known > 0, algbw * factor / np.maximum(t_known, 1), np.nan)
    order = np.argsort(-t, kind="stable")
    names = trace.strings.decode(((uniq % (1 << 32)) - 1).astype(np.int64))
    return CollectiveStats(
        coll_type=[coll_type_name(int(c)) for c in (uniq // (1 << 32))[order]],
        pg_name=[str(s) for s in names[order]], count=count[order].astype(np.int64),
        bytes_total=bytes_known[order].astype(np.int64), time_ns=t[order].astype(np.int64),
        mean_latency_ns=(t / np.maximum(count, 1))[order], algbw_gbps=algbw[order], busbw_gbps=busbw[order])
