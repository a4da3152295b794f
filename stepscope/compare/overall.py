"""The overall rows of a diff, per average step: the step, its TB breakdown and the MSA split.

Categories, in order:

* ``step``: average step time (the breakdown view's TB step windows);
* every breakdown key (``kernel`` … ``other``), averaged over the steps;
* msprof-analyze's split of the step: ``computing`` = time any computation kernel runs (the union
  of non-communication kernels, overlapped communication included), ``communication_not_overlapped``
  = time only communication kernels run, ``free`` = the rest of the step (idle device, copies,
  host work). The three sum to ``step``.

Where the distributed analysis ran (the rank has communication kernels), computing =
computation + overlap and communication_not_overlapped = communication of its per-step split.
Without communication kernels, computing is the breakdown's ``kernel`` category (the union of
kernels in the step, which has the highest priority there) and communication_not_overlapped is 0.
msprof-analyze divides a whole-trace device span; we divide the average step, so that the split
and the breakdown describe the same time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from stepscope.analysis.bundle import RankResults
from stepscope.analysis.registry import BREAKDOWN, DISTRIBUTED
from stepscope.compare.gate import change_pct

MS = 1e6
SPLIT = ("computing", "communication_not_overlapped", "free")


class Delta:
    """Derived numbers of a BASE → NEW pair of ms values (shared by overall rows and narrative items)."""

    base_ms: float
    new_ms: float

    @property
    def diff_ms(self) -> float:
        return self.new_ms - self.base_ms

    @property
    def ratio(self) -> float | None:
        return self.new_ms / self.base_ms if self.base_ms > 0 else None

    @property
    def change_pct(self) -> float:
        return change_pct(self.base_ms, self.new_ms)


@dataclass(frozen=True)
class OverallRow(Delta):
    """One category per average step, ms."""

    category: str
    base_ms: float
    new_ms: float


@dataclass(frozen=True)
class SideOverall:
    """One run's average-step numbers: step, breakdown categories, MSA split (ms) and where it came from."""

    step_ms: float
    step_count: int
    categories: dict[str, float]
    split: dict[str, float]
    split_source: str  # "distributed" | "breakdown"
    per_step: list[dict[str, Any]]  # {"step", "total_ms", "breakdown_ms": {...}} per step


def side_overall(rr: RankResults) -> SideOverall:
    """Average-step numbers of one rank's results (requires the breakdown view)."""
    bd = rr.require(BREAKDOWN)
    cats = {c: float(v) / MS for c, v in zip(bd.categories, bd.avg_category_ns)}
    step_ms = bd.avg_step_ns / MS
    dist = rr.get(DISTRIBUTED)
    if dist is not None and len(dist.step):
        computing = float(np.mean(dist.computation_ns + dist.overlap_ns)) / MS
        comm = float(np.mean(dist.communication_ns)) / MS
        source = "distributed"
    else:
        computing, comm, source = cats.get("kernel", 0.0), 0.0, "breakdown"
    split = {"computing": computing, "communication_not_overlapped": comm,
             "free": max(step_ms - computing - comm, 0.0)}
    per_step = [{"step": int(s), "total_ms": float(t) / MS,
                 "breakdown_ms": {c: float(v) / MS for c, v in zip(bd.categories, row)}}
                for s, t, row in zip(bd.step.tolist(), bd.total_ns.tolist(), bd.category_ns)]
    return SideOverall(step_ms, bd.step_count, cats, split, source, per_step)


def overall_rows(base: SideOverall, new: SideOverall) -> tuple[OverallRow, ...]:
    """step, the breakdown keys (union of both sides, base order first), then the MSA split."""
    keys = list(base.categories) + [k for k in new.categories if k not in base.categories]
    rows = [OverallRow("step", base.step_ms, new.step_ms)]
    rows += [OverallRow(k, base.categories.get(k, 0.0), new.categories.get(k, 0.0)) for k in keys]
    rows += [OverallRow(k, base.split[k], new.split[k]) for k in SPLIT]
    return tuple(rows)
