"""What the advisor hands out: findings as plain data (rule, severity, gain, evidence, change).

A :class:`Finding` carries no prose. The words a person reads (what the rule found, how the gain
was estimated, what to change) are looked up in :mod:`stepscope.report.texts` by the rule id, the
gain basis key and the change key, so that wording lives in one place (STYLE §5).

=============  ===========================================================================
field          meaning
=============  ===========================================================================
rule           stable kebab-case rule id (``dataloader-bound``); one docs page per id
severity       ``high`` (gain ≥ 10 % of the step), ``medium`` (≥ 2 %), ``low`` (below): set in one
               place, :func:`severity_for` via ``RuleContext.finding``, from config thresholds
rank           the rank the finding is about; None for a cluster-wide finding
steps          ProfilerStep numbers the evidence comes from (empty: the whole trace)
est_gain_ns    time per average step the change would save, ns (an estimate; see ``basis``)
step_ns        the average step time the gain is relative to, ns
basis          key of the estimate's method (texts.BASIS): how ``est_gain_ns`` was derived
evidence       numbers, and the events / ops / call sites behind them (JSON-ready values)
change         the concrete remedy: a key (texts.CHANGES) and its parameters
ranks          the ranks it holds for when grouped across a multi-rank run (``rank`` is then
               the rank with the largest gain, whose evidence it carries); empty otherwise
whole_trace    the trace has no step markers: figures are over the whole window, not per step
platform       what the advice is worded for: ``cuda`` | ``rocm`` | ``ascend`` | ``cpu`` and,
               after a ``+``, ``native`` for a program without PyTorch (``cuda+native``)
=============  ===========================================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Severity(str, Enum):
    """How much of the step a finding is worth."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def order(self) -> int:
        return {"high": 0, "medium": 1, "low": 2}[self.value]


@dataclass(frozen=True)
class Change:
    """A structured remedy: ``Change("set-num-workers", {"num_workers": 4})``."""

    key: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "params": dict(self.params)}


@dataclass(frozen=True)
class Finding:
    """One piece of advice, as data. See the module docstring for the fields."""

    rule: str
    severity: Severity
    rank: int | None
    steps: tuple[int, ...]
    est_gain_ns: int
    step_ns: int
    basis: str
    evidence: Mapping[str, Any]
    change: Change
    ranks: tuple[int, ...] = ()
    platform: str = "cuda"
    whole_trace: bool = False  # no step markers: the gain is over the whole trace, not per step
    addresses_bound: bool = False  # its change shortens what the (job's) verdict says bounds the step

    @property
    def est_gain_ms(self) -> float:
        return self.est_gain_ns / 1e6

    @property
    def est_gain_pct(self) -> float:
        return 100.0 * self.est_gain_ns / self.step_ns if self.step_ns > 0 else 0.0


@dataclass(frozen=True)
class NotRun:
    """A rule that could not run on this trace, and why (reported once, quietly)."""

    rule: str
    reason: str
    ranks: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "reason": self.reason, "ranks": list(self.ranks)}


def severity_for(gain_ns: float, step_ns: float, high_pct: float, medium_pct: float) -> Severity:
    """Severity from the gain's share of the step (thresholds from the config)."""
    pct = 100.0 * gain_ns / step_ns if step_ns > 0 else 0.0
    if pct >= high_pct:
        return Severity.HIGH
    if pct >= medium_pct:
        return Severity.MEDIUM
    return Severity.LOW
