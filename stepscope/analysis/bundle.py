"""Run the registered analyses over a trace: the one engine behind CLI, API, HTML and server."""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Concatenate, ParamSpec, TypeVar

from stepscope.analysis._memo import Memo
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.breakdown import with_batch_size
from stepscope.analysis.registry import CLUSTER_ANALYSES, RANK_ANALYSES
from stepscope.model.trace import Trace

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class RankResults:
    """Results of every per-rank analysis for one rank; ``skipped`` says why one could not run."""

    rank: int
    results: Mapping[str, Any] = field(default_factory=dict)
    skipped: Mapping[str, str] = field(default_factory=dict)

    def get(self, name: str) -> Any:
        return self.results.get(name)


@dataclass(frozen=True)
class Bundle:
    """All analysis results of one trace, built in one step by :func:`analyze`.

    ``batch_size`` is the setting the results were made with (samples per step; the trace does not
    carry it). ``memo`` holds what the build's analyses shared (step windows, collective classes);
    later work over this bundle runs inside ``bundle.memo.active()`` to reuse it.
    """

    trace: Trace
    ranks: Mapping[int, RankResults]
    cluster: Mapping[str, Any] = field(default_factory=dict)
    cluster_skipped: Mapping[str, str] = field(default_factory=dict)
    batch_size: int | None = None
    memo: Memo = field(default_factory=Memo, repr=False, compare=False)

    def rank(self, rank: int) -> RankResults:
        return self.ranks[rank]


def analyze(trace: Trace, names: Iterable[str] | None = None, ranks: Iterable[int] | None = None, *,
            batch_size: int | None = None) -> Bundle:
    """Run the named analyses (all by default) on the chosen ranks (all by default).

    ``batch_size`` (samples per step) makes samples/s known wherever a step breakdown appears.
    """
    wanted = set(names) if names is not None else None
    memo = Memo()
    with memo.active():
        per_rank = {rank: _rank_results(trace, rank, wanted, batch_size)
                    for rank in (ranks if ranks is not None else trace.rank_ids)}
        cluster: dict[str, Any] = {}
        cluster_skipped: dict[str, str] = {}
        for name, cfn in CLUSTER_ANALYSES.items():
            if wanted is None or name in wanted:
                _run(name, functools.partial(cfn, trace), cluster, cluster_skipped)
    return Bundle(trace, per_rank, cluster, cluster_skipped, batch_size, memo)


def _rank_results(trace: Trace, rank: int, wanted: set[str] | None, batch_size: int | None) -> RankResults:
    results: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    for name, fn in RANK_ANALYSES.items():
        if wanted is None or name in wanted or name == "summary":
            _run(name, functools.partial(fn, trace, rank), results, skipped)
    if batch_size:
        _apply_batch_size(results, batch_size)
    return RankResults(rank, results, skipped)


def _apply_batch_size(results: dict[str, Any], batch_size: int) -> None:
    """Samples/s in the step breakdown and in the overview's copy of it."""
    bd = results.get("breakdown")
    if bd is not None:
        results["breakdown"] = with_batch_size(bd, batch_size)
    ov = results.get("overview")
    if ov is not None:
        results["overview"] = dataclasses.replace(ov, breakdown=with_batch_size(ov.breakdown, batch_size))


def _run(name: str, call: Callable[[], object], results: dict[str, Any], skipped: dict[str, str]) -> None:
    try:
        results[name] = call()
    except NotApplicable as exc:
        skipped[name] = exc.reason


def with_bundle_memo(fn: Callable[Concatenate[Bundle, P], R]) -> Callable[Concatenate[Bundle, P], R]:
    """Run ``fn(bundle, ...)`` inside ``bundle.memo.active()``, so that the shared passes it calls
    (step windows, collective classes, ...) are the ones the bundle's build computed."""

    @functools.wraps(fn)
    def wrapper(bundle: Bundle, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with bundle.memo.active():
            return fn(bundle, *args, **kwargs)

    return wrapper
