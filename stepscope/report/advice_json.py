"""Findings and verdicts as JSON objects: the advisor's data with its words added here.

The advisor hands out plain data (:class:`~stepscope.advisor.finding.Finding`,
:class:`~stepscope.advisor.verdict.Verdict`); the sentences a person reads are looked up in
:mod:`stepscope.report.texts`. Every JSON output (``analyze --json``, ``advise --json``, the HTML
page, the server, ``diff``) builds its findings and verdicts with these functions, so prose lives
in one place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stepscope.advisor.finding import Finding
from stepscope.advisor.verdict import Verdict, verdicts
from stepscope.analysis.bundle import Bundle
from stepscope.report import texts


def finding_dict(f: Finding) -> dict[str, Any]:
    """The SPEC §12 ``findings`` item: the finding's data, its title, basis and advice in words."""
    return {
        "rule": f.rule,
        "severity": f.severity.value,
        "rank": f.rank,
        "ranks": list(f.ranks),
        "steps": list(f.steps),
        "est_gain_ms": round(f.est_gain_ms, 3),
        "est_gain_pct": round(f.est_gain_pct, 4),  # shown to 0.1: two roundings must not make 0.047 "0.1"
        "basis": texts.basis_text(f),
        "evidence": dict(f.evidence),
        "change": f.change.to_dict(),
        "title": texts.title_text(f),
        "advice": texts.advice_text(f),
        "addresses_bound": f.addresses_bound,
        "whole_trace": f.whole_trace,  # no step markers: the gain is a share of the one window, not of a step
    }


def verdict_dict(v: Verdict, addressed: bool | None = None, any_findings: bool = True) -> dict[str, Any]:
    """A ``verdicts`` item: the verdict's numbers and its sentence; ``addressed`` False (no finding
    shortens the bound: there are others, or none at all, ``any_findings``) adds the sentence that
    says so."""
    text = texts.verdict_text(v)
    if v.unprofiled_bound is not None:
        text += ". " + texts.unprofiled_text(v)
    if addressed is False and v.bound != "imbalance":
        text += ". " + texts.unaddressed_text(v, any_findings)
    return {**v.to_dict(), "text": text}


def verdict_dicts(vs: Sequence[Verdict], findings: Sequence[Finding]) -> list[dict[str, Any]]:
    """The verdicts as JSON objects, the first saying when none of ``findings`` addresses its bound
    (none at all included)."""
    addressed = any(f.addresses_bound for f in findings)
    return [verdict_dict(v, addressed if i == 0 else None, bool(findings)) for i, v in enumerate(vs)]


def verdict_section(bundle: Bundle, findings: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """The ``verdicts`` key of the JSON document: the job's (multi-rank), then one per rank; the
    first says when none of ``findings`` addresses its bound."""
    return verdict_items(verdicts(bundle), findings)


def verdict_items(vs: Sequence[Verdict], findings: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """:func:`verdict_section` from the verdicts themselves (the map-reduce path's job and rank verdicts)."""
    addressed = any(f.get("addresses_bound") for f in findings)
    return [verdict_dict(v, addressed if i == 0 else None, bool(findings)) for i, v in enumerate(vs)]
