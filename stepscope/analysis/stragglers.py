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
* ``imbalance_pct`` = the mean over the steps every rank has of (the busiest rank's work − the average
  rank's work at that step), / the mean work: per-rank GPU compute time per step (a CPU-only rank's host
  work; else the step time: ``imbalance_of`` says which): how much longer the busiest rank works than the
  average one, *step by step* — where the busiest rank changes from step to step (random sequence
  lengths: 192 / 64 tokens on two ranks, then 64 / 192), the ranks' averages are equal while every step
  waits for one of them (``busiest_per_step``). Step by step only where the work itself changes from step
  to step: some rank's op calls see input shapes that vary across its steps (``varying_shapes_pct`` ≥
  :data:`VARYING_MIN_PCT`, :mod:`.input_shapes`); with the same shapes at every step, per-step differences
  are the machine's (three ranks sharing two cores take turns being slow), and the averages are compared.
  It is no verdict on the job: ranks that wait for a late one at the collectives have equal steps
  (cluster.arrivals says who is late, and why).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from stepscope.analysis import intervals
from stepscope.analysis._memo import per_trace
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.comm import classify
from stepscope.analysis.comm_records import CommRecords, comm_records, match_records
from stepscope.analysis.common import F64, I64, interval_set, pct, rank_rows, step_windows
from stepscope.analysis.critical_path import PARTS, compute_critical_path
from stepscope.analysis.input_shapes import compute_input_shapes
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

#: metrics by name (one value per rank, aligned with ``ranks``) → {rank: [metric names it is slow in]}
Detector = Callable[[dict[str, F64], list[int]], dict[int, list[str]]]
WORK_METRICS = ("kernel_count", "compute_ns", "step_ns")
#: a rank whose every-step ops see varying input shapes in at least this % of their calls does different work
#: from step to step: the ranks' work is compared step by step
VARYING_MIN_PCT = 10.0


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
    """The per-rank records of every rank, matched across ranks (the map-reduce path's two steps)."""
    recs = {r: comm_records(trace, r) for r in trace.rank_ids}
    m = match_records(recs)
    if not recs:
        empty = np.zeros(0, np.int64)
        return CollectiveMatch(empty, empty, empty, empty, m.method)
    rows = np.concatenate([x.rows for x in recs.values()])
    order = np.argsort(rows, kind="stable")
    transfer = np.concatenate([m.transfer_ns[r] for r in recs])[order]
    dur = np.concatenate([x.dur_ns for x in recs.values()])[order]
    seen = np.concatenate([m.seen[r] for r in recs])[order]
    return CollectiveMatch(rows[order], transfer, dur - transfer, seen, m.method)


def match_of_rank(records: CommRecords, transfer_ns: I64, seen: I64, method: str) -> CollectiveMatch:
    """The match of a one-rank trace from the job's matching of its records (what the map-reduce path
    seeds that trace's memo with, so its per-rank analyses see the job's wait / transfer)."""
    return CollectiveMatch(records.rows, transfer_ns, records.dur_ns - transfer_ns, seen, method)


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
    imbalance_of: str  # what imbalance_pct compares: "compute" (GPU compute time) | "host" (a CPU-only job's host
    #                   work on its steps' critical path) | "step" (neither)
    wait_method: str
    verdict: str  # "balanced" | "imbalanced": whether the detector flags ranks with more work (slow_ranks)
    host_ns: F64 = dataclasses.field(default_factory=lambda: np.zeros(0))  # a CPU-only rank's host work per step
    #: per step every rank has: the busiest rank's work − the average rank's (of ``imbalance_of``), and the busiest
    step_excess_ns: F64 = dataclasses.field(default_factory=lambda: np.zeros(0))
    busiest_per_step: I64 = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    varying_shapes_pct: float | None = None  # the most of a rank's op calls whose shapes vary across steps
    #: the work is compared step by step: per-step work is known and some rank's input shapes vary
    per_step: bool = False

    @property
    def excess_ns(self) -> float:
        """The busiest rank's work over the average rank's, per step (step by step where ``per_step``)."""
        if self.per_step:
            return float(self.step_excess_ns.mean())
        return float(self.work_ns.max() - self.work_ns.mean()) if len(self.work_ns) else 0.0

    @property
    def work_ns(self) -> F64:
        """What the ranks' work is compared on (``imbalance_of``): GPU compute, else host work, else the step."""
        return {"compute": self.compute_ns, "host": self.host_ns}.get(self.imbalance_of, self.step_ns)

    @property
    def rank_count(self) -> int:
        return len(self.ranks)


@dataclass(frozen=True)
class ClusterRecord:
    """A rank's part of :func:`compute_cluster`: its metrics per average step and the wait method."""

    metrics: dict[str, float]
    wait_method: str
    #: per step window: its GPU compute, host work (a CPU-only rank's) and step time (``_ns`` keys as in ``metrics``)
    step_work_ns: dict[str, I64] = dataclasses.field(default_factory=dict)


def cluster_record(trace: Trace, rank: int) -> ClusterRecord:
    """The per-rank step of :func:`compute_cluster` (what a map worker sends back)."""
    match = match_collectives(trace)
    metrics, per_step = _rank_metrics(trace, rank, match)
    return ClusterRecord(metrics, match.method, per_step)


def compute_cluster(trace: Trace, detector: Detector | None = None) -> ClusterResult:
    """Per-rank work metrics, wait/transfer, slow ranks and imbalance of a multi-rank trace."""
    return combine_cluster({r: cluster_record(trace, r) for r in trace.rank_ids}, detector)


def combine_cluster(records: Mapping[int, ClusterRecord], detector: Detector | None = None) -> ClusterResult:
    """The cross-rank step of :func:`compute_cluster`, from the ranks' records (in rank order)."""
    ranks = list(records)
    if len(ranks) < 2:
        raise NotApplicable("single-rank trace: no cross-rank comparison")
    cols = [records[r].metrics for r in ranks]  # per rank
    m = {k: np.array([c[k] for c in cols], np.float64) for k in cols[0]}
    work = {k: m[k] for k in WORK_METRICS}
    slow = (detector or default_detector)(work, ranks)
    of = "compute" if m["compute_ns"].max() > 0 else "host" if m["host_ns"].max() > 0 else "step"
    step_excess, busiest = _per_step_excess([records[r].step_work_ns.get(f"{of}_ns") for r in ranks], ranks)
    varying = [v for v in m.get("varying_shapes_pct", np.zeros(0)).tolist() if v >= 0]
    per_step = bool(len(step_excess)) and max(varying, default=0.0) >= VARYING_MIN_PCT
    base = m[f"{of}_ns"]
    mean = float(base.mean())
    imbalance = pct(float(step_excess.mean()) if per_step else float(base.max()) - mean, mean)
    excess = {r: {k: pct(float(work[k][ranks.index(r)] - np.median(work[k])), float(np.median(work[k])))
                  for k in WORK_METRICS} for r in slow}
    return ClusterResult(
        ranks=ranks, kernel_count=m["kernel_count"], compute_ns=m["compute_ns"], step_ns=m["step_ns"],
        comm_ns=m["comm_ns"], wait_ns=m["wait_ns"], transfer_ns=m["transfer_ns"],
        slow_ranks=sorted(slow), slow_reasons=slow, excess_pct=excess, imbalance_pct=imbalance,
        imbalance_of=of, wait_method=records[ranks[0]].wait_method, verdict="imbalanced" if slow else "balanced",
        host_ns=m["host_ns"], step_excess_ns=step_excess, busiest_per_step=busiest,
        varying_shapes_pct=max(varying) if varying else None, per_step=per_step)


def _per_step_excess(work: list[I64 | None], ranks: list[int]) -> tuple[F64, I64]:
    """Per step every rank has (by index): the busiest rank's work − the mean rank's, and the busiest rank
    (empty where a rank has no per-step work)."""
    if not work or any(w is None or not len(w) for w in work):
        return np.zeros(0), np.zeros(0, np.int64)
    n = min(len(w) for w in work if w is not None)
    w = np.stack([np.asarray(x[:n], np.float64) for x in work if x is not None])  # (R, n)
    busiest: I64 = np.asarray(ranks, np.int64)[np.argmax(w, axis=0)]
    excess: F64 = w.max(axis=0) - w.mean(axis=0)
    return excess, busiest


def _host_work_ns(trace: Trace, rank: int) -> I64:
    """A rank without kernels (a CPU-only job): its host work in each step on its critical path — its own work,
    without its waits in the collectives or the DataLoader (its step window holds those too)."""
    try:
        cp = compute_critical_path(trace, rank)
    except NotApplicable:
        return np.zeros(0, np.int64)
    host: I64 = cp.parts_ns[:, PARTS.index("host")].astype(np.int64)
    return host


def _rank_metrics(trace: Trace, rank: int, match: CollectiveMatch) -> tuple[dict[str, float], dict[str, I64]]:
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
    host = _host_work_ns(trace, rank) if len(kernels) == 0 else np.zeros(0, np.int64)
    per_step = {"compute_ns": np.asarray(comp, np.int64), "host_ns": host, "step_ns": wins.dur_ns.astype(np.int64)}
    return {"kernel_count": len(kernels) / nwin, "compute_ns": float(comp.sum()) / nwin,
            "host_ns": float(host.sum()) / max(len(host), 1),
            "step_ns": float(wins.dur_ns.sum()) / nwin,
            "comm_ns": float(trace.events["dur_ns"][kernels[comm]].sum()) / nwin,
            "wait_ns": float(match.wait_ns[mine].sum()) / nwin,
            "transfer_ns": float(match.transfer_ns[mine].sum()) / nwin,
            "varying_shapes_pct": _varying_shapes_pct(trace, rank)}, per_step


def _varying_shapes_pct(trace: Trace, rank: int) -> float:
    """The % of the rank's every-step op calls whose input shapes vary across its steps (-1: unknown)."""
    try:
        return compute_input_shapes(trace, rank).varying_pct
    except NotApplicable:
        return -1.0
