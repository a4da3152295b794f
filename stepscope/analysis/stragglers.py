"""Across ranks: waiting vs transferring in collectives, slow ranks and load imbalance.

* **Wait vs transfer** (MSA, HTA): the same collective is the n-th communication kernel of one
  (process group, collective type) on each rank. Its *transfer* time is the shortest duration any
  rank saw for it (that rank arrived last and only moved data); on every other rank the rest of
  the kernel's duration is *wait* (it arrived early and idled inside NCCL). With a single rank in
  the trace, the same collective is one with the same (group, type, size) across steps, and the
  transfer time is its shortest duration (``method = "same size across steps"``), a lower bound.
* **Slow ranks**: per rank and per average step, the work metrics kernel count, GPU compute time
  (∪ non-communication kernels) and step time. The default detector flags a rank whose metric
  exceeds the median of the ranks by more than ``threshold_pct`` *and* by more than ``robust_z``
  scaled median absolute deviations. Detectors are pluggable (:data:`Detector`).
* ``imbalance_pct`` = (max − mean) / mean of the per-rank GPU compute time per step (step time for
  CPU-only traces): how much longer the busiest rank works than the average one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from stepscope.analysis import intervals
from stepscope.analysis._memo import per_trace
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.comm import classify
from stepscope.analysis.common import F64, I64, interval_set, pct, rank_rows, step_windows
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace
from stepscope.model.uniq import unique

#: metrics by name (one value per rank, aligned with ``ranks``) → {rank: [metric names it is slow in]}
Detector = Callable[[dict[str, F64], list[int]], dict[int, list[str]]]
WORK_METRICS = ("kernel_count", "compute_ns", "step_ns")


@dataclass(frozen=True)
class CollectiveMatch:
    """Transfer / wait of every communication kernel of the trace (arrays aligned with ``rows``)."""

    rows: I64
    transfer_ns: I64
    wait_ns: I64
    ranks_seen: I64  # how many ranks hold the same collective
    method: str  # "min across ranks" | "same size across steps"


@per_trace
def match_collectives(trace: Trace) -> CollectiveMatch:
    """Wait / transfer split of every communication kernel (cached per trace object)."""
    return _match(trace)


def _match(trace: Trace) -> CollectiveMatch:
    cls = classify(trace)
    ev = trace.events
    rows = np.flatnonzero(cls.is_comm).astype(np.int64)
    rank = ev["rank"][rows].astype(np.int64)
    ctype = cls.coll_type[rows].astype(np.int64)
    pg = cls.pg_name[rows].astype(np.int64) + 1
    multi = len(unique(rank)) > 1
    if multi:
        order = np.lexsort((ev["ts_ns"][rows], ctype, pg, rank))
        grp = np.stack([rank, pg, ctype])[:, order]
        new = np.ones(len(order), bool)
        new[1:] = (grp[:, 1:] != grp[:, :-1]).any(axis=0)
        start = np.maximum.accumulate(np.where(new, np.arange(len(order)), 0))
        nth = np.empty(len(order), np.int64)
        nth[order] = np.arange(len(order)) - start
        key = np.stack([pg, ctype, nth])
    else:
        size = np.maximum(cls.in_bytes[rows], cls.out_bytes[rows])
        key = np.stack([pg, ctype, size])
    _, inv = np.unique(key, axis=1, return_inverse=True) if len(rows) else (None, np.zeros(0, np.int64))
    inv = np.asarray(inv).reshape(-1)
    dur = ev["dur_ns"][rows]
    best = np.full(int(inv.max()) + 1 if len(inv) else 0, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(best, inv, dur)
    seen = np.bincount(inv) if len(inv) else np.zeros(0, np.int64)
    transfer = best[inv] if len(inv) else np.zeros(0, np.int64)
    return CollectiveMatch(rows, transfer, dur - transfer, seen[inv].astype(np.int64) if len(inv) else seen,
                           "min across ranks" if multi else "same size across steps")


def default_detector(metrics: dict[str, F64], ranks: list[int], threshold_pct: float = 10.0,
                     robust_z: float = 3.0) -> dict[int, list[str]]:
    """Ranks above the median by > ``threshold_pct`` % and by > ``robust_z`` scaled MADs, per metric."""
    slow: dict[int, list[str]] = {}
    for name, vals in metrics.items():  # a handful of metrics
        med = float(np.median(vals))
        mad = 1.4826 * float(np.median(np.abs(vals - med)))
        excess = vals - med
        flag = (excess > abs(med) * threshold_pct / 100) & (excess > robust_z * mad)
        for i in np.flatnonzero(flag).tolist():  # only the flagged ranks
            slow.setdefault(ranks[i], []).append(name)
    return slow


@dataclass(frozen=True)
class ClusterResult:
    """Cross-rank verdict. Per-rank arrays are aligned with ``ranks``; times per average step."""

    ranks: list[int]
    kernel_count: F64
    compute_ns: F64
    step_ns: F64
    comm_ns: F64
    wait_ns: F64
    transfer_ns: F64
    slow_ranks: list[int]
    slow_reasons: dict[int, list[str]]
    excess_pct: dict[int, dict[str, float]]  # slow rank → metric → % above the median
    imbalance_pct: float
    wait_method: str
    verdict: str  # "balanced" | "imbalanced" | "single rank"

    @property
    def rank_count(self) -> int:
        return len(self.ranks)


def compute_cluster(trace: Trace, detector: Detector | None = None) -> ClusterResult:
    """Per-rank work metrics, wait/transfer, slow ranks and imbalance of a multi-rank trace."""
    ranks = list(trace.rank_ids)
    if len(ranks) < 2:
        raise NotApplicable("single-rank trace: no cross-rank comparison")
    match = match_collectives(trace)
    cols = [_rank_metrics(trace, r, match) for r in ranks]  # per rank
    m = {k: np.array([c[k] for c in cols], np.float64) for k in cols[0]}
    work = {k: m[k] for k in WORK_METRICS}
    slow = (detector or default_detector)(work, ranks)
    base = m["compute_ns"] if m["compute_ns"].max() > 0 else m["step_ns"]
    mean = float(base.mean())
    imbalance = pct(float(base.max()) - mean, mean)
    excess = {r: {k: pct(float(work[k][ranks.index(r)] - np.median(work[k])), float(np.median(work[k])))
                  for k in WORK_METRICS} for r in slow}
    return ClusterResult(
        ranks=ranks, kernel_count=m["kernel_count"], compute_ns=m["compute_ns"], step_ns=m["step_ns"],
        comm_ns=m["comm_ns"], wait_ns=m["wait_ns"], transfer_ns=m["transfer_ns"],
        slow_ranks=sorted(slow), slow_reasons=slow, excess_pct=excess, imbalance_pct=imbalance,
        wait_method=match.method, verdict="imbalanced" if slow else "balanced")


def _rank_metrics(trace: Trace, rank: int, match: CollectiveMatch) -> dict[str, float]:
    wins = step_windows(trace, rank)
    nwin = max(len(wins), 1)
    cls = classify(trace)
    kernels = rank_rows(trace, rank, (int(EventKind.KERNEL),))
    ts = trace.events["ts_ns"][kernels]
    pos = np.searchsorted(wins.start_ns, ts, side="right") - 1
    inside = (pos >= 0) & (ts < wins.end_ns[np.maximum(pos, 0)]) if len(wins) else np.zeros(len(ts), bool)
    kernels = kernels[inside]
    comm = cls.is_comm[kernels]
    comp = intervals.covered_in_windows(interval_set(trace, kernels[~comm]), wins.start_ns, wins.end_ns)
    mine = np.isin(match.rows, kernels[comm])
    return {"kernel_count": len(kernels) / nwin, "compute_ns": float(comp.sum()) / nwin,
            "step_ns": float(wins.dur_ns.sum()) / nwin,
            "comm_ns": float(trace.events["dur_ns"][kernels[comm]].sum()) / nwin,
            "wait_ns": float(match.wait_ns[mine].sum()) / nwin,
            "transfer_ns": float(match.transfer_ns[mine].sum()) / nwin}
