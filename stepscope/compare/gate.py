"""The CI gate: fail when NEW's average step is more than PCT % slower than BASE's.

``check_slower`` is pure and returns a :class:`GateResult` (data); the CLI turns a failed gate into
exit code 1 and prints ``reason``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GateResult:
    """Outcome of ``--fail-if-slower``: the two average steps, the change and the verdict."""

    threshold_pct: float
    base_step_ms: float
    new_step_ms: float
    change_pct: float  # (new − base) / base × 100; +inf when base is 0 and new is not
    passed: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"threshold_pct": self.threshold_pct, "base_step_ms": self.base_step_ms,
                "new_step_ms": self.new_step_ms,
                "change_pct": self.change_pct if math.isfinite(self.change_pct) else None,
                "passed": self.passed, "reason": self.reason}


def change_pct(base: float, new: float) -> float:
    """Relative change of ``new`` over ``base`` in %, +inf / 0 when ``base`` is 0."""
    if base > 0:
        return 100.0 * (new - base) / base
    return math.inf if new > 0 else 0.0


def check_slower(base_step_ms: float, new_step_ms: float, threshold_pct: float) -> GateResult:
    """Passed unless NEW's average step exceeds BASE's by more than ``threshold_pct`` percent."""
    ch = change_pct(base_step_ms, new_step_ms)
    passed = ch <= threshold_pct
    shown = f"{ch:+.1f} %" if math.isfinite(ch) else "+inf %"
    verdict = "more than" if not passed else "within"
    reason = (f"average step {base_step_ms:.1f} ms → {new_step_ms:.1f} ms ({shown}): "
              f"{verdict} the allowed {threshold_pct:g} % slowdown")
    return GateResult(threshold_pct, base_step_ms, new_step_ms, ch, passed, reason)
