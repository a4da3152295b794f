"""The macro answer per rank: what bounds this step — input, host, GPU compute, communication or copies.

The step time breakdown (TB priority rules, categories sum exactly to the step) is folded into five
stages, the seed articles' macro view:

==============  =====================================================
stage           breakdown categories
==============  =====================================================
input           dataloader
host            runtime + cpu_exec + other (host-side work the GPU waits for)
gpu_compute     kernel (computation kernels)
communication   communication (collectives not hidden under kernels)
memory_copies   memcpy + memset
==============  =====================================================

The bound is the stage with the largest share; the verdict keeps every share so a reader sees how
close the runner-up is. Wording lives in :mod:`stepscope.report.texts`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stepscope.advisor.context import rank_breakdown
from stepscope.analysis.bundle import Bundle

STAGES: dict[str, tuple[str, ...]] = {
    "input": ("dataloader",),
    "host": ("runtime", "cpu_exec", "other"),
    "gpu_compute": ("kernel",),
    "communication": ("communication",),
    "memory_copies": ("memcpy", "memset"),
}


@dataclass(frozen=True)
class Verdict:
    """One rank's bound and the share of the average step each stage takes (percent)."""

    rank: int
    bound: str
    step_ns: int
    shares_pct: dict[str, float]
    step_count: int

    def to_dict(self) -> dict[str, Any]:
        import stepscope.report.texts as texts

        return {"rank": self.rank, "bound": self.bound, "avg_step_ms": self.step_ns / 1e6,
                "step_count": self.step_count,
                "shares_pct": {k: round(v, 2) for k, v in self.shares_pct.items()},
                "text": texts.verdict_text(self)}


def verdict_of(bundle: Bundle, rank: int) -> Verdict | None:
    """The verdict of one rank, or None when its step breakdown did not run."""
    bd = rank_breakdown(bundle, rank)
    if bd is None or bd.step_count == 0 or bd.avg_step_ns <= 0:
        return None
    pct = dict(zip(bd.categories, (float(v) for v in bd.avg_category_pct)))
    shares = {stage: sum(pct.get(c, 0.0) for c in cats) for stage, cats in STAGES.items()}
    bound = max(shares, key=lambda s: shares[s])
    return Verdict(rank, bound, round(bd.avg_step_ns), shares, bd.step_count)


def verdicts(bundle: Bundle) -> tuple[Verdict, ...]:
    """Verdicts of every rank that has a breakdown, by rank."""
    out = (verdict_of(bundle, r) for r in sorted(bundle.ranks))
    return tuple(v for v in out if v is not None)


def verdict_section(bundle: Bundle) -> list[dict[str, Any]]:
    """The ``verdicts`` key of the JSON document: one object per rank with a breakdown."""
    return [v.to_dict() for v in verdicts(bundle)]
