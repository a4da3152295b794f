"""Run the registered analyses over a trace: the one engine behind CLI, API, HTML and server."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.registry import CLUSTER_ANALYSES, RANK_ANALYSES
from stepscope.model.trace import Trace

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RankResults:
    """Results of every per-rank analysis for one rank; ``skipped`` says why one could not run."""

    rank: int
    results: dict[str, Any] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> Any:
        return self.results.get(name)


@dataclass(frozen=True)
class Bundle:
    """All analysis results of one trace."""

    trace: Trace
    ranks: dict[int, RankResults]
    cluster: dict[str, Any] = field(default_factory=dict)
    cluster_skipped: dict[str, str] = field(default_factory=dict)

    def rank(self, rank: int) -> RankResults:
        return self.ranks[rank]


def analyze(trace: Trace, names: Iterable[str] | None = None, ranks: Iterable[int] | None = None) -> Bundle:
    """Run the named analyses (all by default) on the chosen ranks (all by default)."""
    wanted = set(names) if names is not None else None
    per_rank: dict[int, RankResults] = {}
    for rank in ranks if ranks is not None else trace.rank_ids:
        rr = RankResults(rank)
        for name, fn in RANK_ANALYSES.items():
            if wanted is None or name in wanted or name == "summary":
                _run(name, lambda fn=fn, rank=rank: fn(trace, rank), rr.results, rr.skipped)
        per_rank[rank] = rr
    bundle = Bundle(trace, per_rank)
    for name, cfn in CLUSTER_ANALYSES.items():
        if wanted is None or name in wanted:
            _run(name, lambda cfn=cfn: cfn(trace, bundle), bundle.cluster, bundle.cluster_skipped)
    return bundle


def apply_batch_size(bundle: Bundle, batch_size: int | None) -> None:
    """Make samples/s known everywhere a step breakdown appears (the batch size is not in traces)."""
    if not batch_size:
        return
    import dataclasses

    from stepscope.analysis.breakdown import with_batch_size

    for rr in bundle.ranks.values():
        bd = rr.results.get("breakdown")
        if bd is not None:
            rr.results["breakdown"] = with_batch_size(bd, batch_size)
        ov = rr.results.get("overview")
        if ov is not None:
            rr.results["overview"] = dataclasses.replace(ov, breakdown=with_batch_size(ov.breakdown, batch_size))


def _run(name: str, call: Any, results: dict[str, Any], skipped: dict[str, str]) -> None:
    try:
        results[name] = call()
    except NotApplicable as exc:
        skipped[name] = exc.reason
