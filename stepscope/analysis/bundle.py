"""Run the registered analyses over a trace: the one engine behind CLI, API, HTML and server."""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Concatenate, ParamSpec, TypeVar

from stepscope.analysis._memo import Memo
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.breakdown import StepBreakdown, with_batch_size
from stepscope.analysis.overview import Overview
from stepscope.analysis.platform import NO_DEVICE, has_device
from stepscope.analysis.registry import (
    BREAKDOWN,
    CLUSTER_ANALYSES,
    OVERVIEW,
    RANK_ANALYSES,
    ClusterAnalysis,
    RankAnalysis,
)
from stepscope.model.trace import Trace
from stepscope.runtime.tasks import memory_to_spare, run_calls

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")
#: a rank's analyses run side by side on threads from this size on (below, a thread costs more than it saves)
PARALLEL_ABOVE_EVENTS = 200_000
#: what running two analyses at once adds to the peak, per event of the trace (5 M events: +~450 MiB
#: measured, docs/benchmarks.md); with less memory available than twice that, they run one by one
PARALLEL_BYTES_PER_EVENT = 100


def _typed(key: RankAnalysis[T] | ClusterAnalysis[T], value: object) -> T | None:
    if value is None or isinstance(value, key.result):
        return value
    raise TypeError(f"the {key.name} result is a {type(value).__name__}, not a {key.result.__name__}")


@dataclass(frozen=True)
class RankResults:
    """Results of every per-rank analysis for one rank; ``skipped`` says why one could not run.

    Read a result with its registry entry, the typed key: ``rr.get(KERNELS)`` (None when it did not
    run) or ``rr.require(KERNELS)`` (NotApplicable with the reason when it did not).
    """

    rank: int
    results: Mapping[str, object] = field(default_factory=dict)
    skipped: Mapping[str, str] = field(default_factory=dict)

    def get(self, key: RankAnalysis[T]) -> T | None:
        return _typed(key, self.results.get(key.name))

    def require(self, key: RankAnalysis[T]) -> T:
        value = self.get(key)
        if value is None:
            raise NotApplicable(self.reason(key))
        return value

    def reason(self, key: RankAnalysis[object]) -> str:
        """Why ``key`` has no result on this rank."""
        return self.skipped.get(key.name, f"the {key.name} analysis did not run")


@dataclass(frozen=True)
class Bundle:
    """All analysis results of one trace, built in one step by :func:`analyze`.

    ``batch_size`` is the setting the results were made with (samples per step; the trace does not
    carry it). ``memo`` holds what the build's analyses shared (step windows, collective classes);
    later work over this bundle runs inside ``bundle.memo.active()`` to reuse it.
    """

    trace: Trace
    ranks: Mapping[int, RankResults]
    cluster: Mapping[str, object] = field(default_factory=dict)
    cluster_skipped: Mapping[str, str] = field(default_factory=dict)
    batch_size: int | None = None
    memo: Memo = field(default_factory=Memo, repr=False, compare=False)

    def rank(self, rank: int) -> RankResults:
        return self.ranks[rank]

    def cluster_result(self, key: ClusterAnalysis[T]) -> T | None:
        """The whole-trace result of ``key``, None when it did not run."""
        return _typed(key, self.cluster.get(key.name))

    def require_cluster(self, key: ClusterAnalysis[T]) -> T:
        value = self.cluster_result(key)
        if value is None:
            raise NotApplicable(self.cluster_skipped.get(key.name, f"the {key.name} analysis did not run"))
        return value


def analyze(trace: Trace, names: Iterable[str] | None = None, ranks: Iterable[int] | None = None, *,
            batch_size: int | None = None) -> Bundle:
    """Run the named analyses (all by default) on the chosen ranks (all by default).

    ``batch_size`` (samples per step) makes samples/s known wherever a step breakdown appears.
    """
    wanted = set(names) if names is not None else None
    memo = Memo()
    with memo.active():
        per_rank = {rank: rank_results(trace, rank, wanted, batch_size)
                    for rank in (ranks if ranks is not None else trace.rank_ids)}
        records = {rank: cluster_records(trace, rank, wanted) for rank in trace.rank_ids}
        cluster, cluster_skipped = combine_cluster_records(records, wanted)
    return Bundle(trace, per_rank, cluster, cluster_skipped, batch_size, memo)


def cluster_records(trace: Trace, rank: int, wanted: Iterable[str] | None = None) -> dict[str, object]:
    """Every (wanted) cluster analysis's per-rank record of ``rank`` — a NotApplicable where its
    ``per_rank`` raised one. The map-reduce path makes these where the rank is read."""
    out: dict[str, object] = {}
    chosen = set(wanted) if wanted is not None else None
    for c in CLUSTER_ANALYSES:
        if chosen is None or c.name in chosen:
            try:
                out[c.name] = c.per_rank(trace, rank)
            except NotApplicable as exc:
                out[c.name] = exc
    return out


def combine_cluster_records(records: Mapping[int, Mapping[str, object]], wanted: Iterable[str] | None = None
                            ) -> tuple[dict[str, object], dict[str, str]]:
    """The cluster results (and why any did not run) from every rank's records, in rank order."""
    chosen = set(wanted) if wanted is not None else None
    cluster: dict[str, object] = {}
    skipped: dict[str, str] = {}
    for c in CLUSTER_ANALYSES:
        if chosen is not None and c.name not in chosen:
            continue
        mine = {r: rec[c.name] for r, rec in records.items()}
        failed = [v for v in mine.values() if isinstance(v, NotApplicable)]
        if failed:
            skipped[c.name] = failed[0].reason
            continue
        _run(c.name, functools.partial(c.combine, mine), cluster, skipped)
    return cluster, skipped


def rank_results(trace: Trace, rank: int, wanted: set[str] | None = None, batch_size: int | None = None,
                 side_by_side: bool = True) -> RankResults:
    """Every (wanted) per-rank analysis of one rank (``summary`` always); on threads when the trace is
    large, there is memory to spare and ``side_by_side`` (a map-reduce worker, given one core, says no)."""
    results: dict[str, object] = {}
    skipped: dict[str, str] = {}
    chosen = [a for a in RANK_ANALYSES if wanted is None or a.name in wanted or a.name == "summary"]
    started = sorted(chosen, key=lambda a: -a.cost)  # the longest first; results in registry order
    n = trace.event_count
    outcomes = run_calls([functools.partial(a.compute, trace, rank) for a in started],
                         parallel=side_by_side and n >= PARALLEL_ABOVE_EVENTS
                         and memory_to_spare(2 * PARALLEL_BYTES_PER_EVENT * n))
    got_of = {a.name: got for a, got in zip(started, outcomes)}
    deviceless = not has_device(trace, rank)
    for a in chosen:
        got = got_of[a.name]
        if isinstance(got.error, NotApplicable):  # a CPU-only rank's device analyses: no device, whatever failed
            skipped[a.name] = NO_DEVICE if deviceless and a.device else got.error.reason
        elif got.error is not None:
            raise got.error
        else:
            results[a.name] = got.value
    if batch_size:
        _apply_batch_size(results, batch_size)
    return RankResults(rank, results, skipped)


def _apply_batch_size(results: dict[str, object], batch_size: int) -> None:
    """Samples/s in the step breakdown and in the overview's copy of it."""
    bd = results.get(BREAKDOWN.name)
    if isinstance(bd, StepBreakdown):
        results[BREAKDOWN.name] = with_batch_size(bd, batch_size)
    ov = results.get(OVERVIEW.name)
    if isinstance(ov, Overview):
        results[OVERVIEW.name] = dataclasses.replace(ov, breakdown=with_batch_size(ov.breakdown, batch_size))


def _run(name: str, call: Callable[[], object], results: dict[str, object], skipped: dict[str, str]) -> None:
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


__all__ = ["Bundle", "Memo", "RankResults", "analyze", "cluster_records", "combine_cluster_records", "rank_results",
           "with_bundle_memo"]
