"""The advisor's findings of two runs, matched by rule id: resolved, new, still present.

Ranks are not part of the match (``--base-rank 0 --new-rank 3`` compares two chosen ranks), so a
rule found on the compared rank of each side is "still" present.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from stepscope.advisor.engine import advise
from stepscope.analysis.bundle import Bundle
from stepscope.report.advice_json import finding_dict

log = logging.getLogger(__name__)

RESOLVED, NEW, STILL = "resolved", "new", "still"


@dataclass(frozen=True)
class FindingChange:
    """One rule on either side: its status and each side's finding (as ``Finding.to_dict()``)."""

    rule: str
    status: str  # resolved | new | still
    base: dict[str, Any] | None
    new: dict[str, Any] | None

    @property
    def gain_diff_ms(self) -> float:
        b = float(self.base.get("est_gain_ms", 0.0)) if self.base else 0.0
        n = float(self.new.get("est_gain_ms", 0.0)) if self.new else 0.0
        return n - b

    def to_dict(self) -> dict[str, Any]:
        shown = self.new if self.new is not None else self.base
        assert shown is not None
        return {**shown, "status": self.status, "rule": self.rule,
                "base_est_gain_ms": self.base.get("est_gain_ms") if self.base else None,
                "new_est_gain_ms": self.new.get("est_gain_ms") if self.new else None,
                "base_severity": self.base.get("severity") if self.base else None,
                "new_severity": self.new.get("severity") if self.new else None}


def findings_of(bundle: Bundle, rank: int) -> list[dict[str, Any]]:
    """The advisor's findings about ``rank`` (and cluster-wide ones), as JSON objects."""
    found = advise(bundle)
    return [finding_dict(f) for f in found if f.rank is None or f.rank == rank]


def compare_findings(base: list[dict[str, Any]], new: list[dict[str, Any]]) -> tuple[FindingChange, ...]:
    """Match by rule id (the largest-gain finding of a rule per side); new first, then still, resolved."""
    b = _by_rule(base)
    n = _by_rule(new)
    out = [FindingChange(r, NEW, None, n[r]) for r in n if r not in b]
    out += [FindingChange(r, STILL, b[r], n[r]) for r in n if r in b]
    out += [FindingChange(r, RESOLVED, b[r], None) for r in b if r not in n]
    return tuple(out)


def _by_rule(found: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for f in sorted(found, key=lambda f: -float(f.get("est_gain_ms", 0.0))):  # one per finding, not event
        out.setdefault(str(f.get("rule")), f)
    return out
