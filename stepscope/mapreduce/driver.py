"""The driver of the map-reduce path: map every rank file to a summary, reduce the summaries to the
§12 document. The driver holds ranks × summaries, never a rank's events (docs/scale.md).

Steps: resolve the run's files → map 1 (:func:`~.worker.scan_rank`: read each file into the cache,
its collectives as records) → match the collectives across ranks (the same function as the
whole-model path) → map 2 (:func:`~.worker.summarize_rank`: each rank's analyses, advice and document
object, with the job's facts) → reduce: every cluster analysis's ``combine`` on the ranks' records,
the advisor's cross-rank step (cluster rules, the job's verdict, one finding per cause), the
document. Workers are the local engine's forked processes or Ray tasks (``engine``).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from stepscope.advisor.config import AdvisorConfig
from stepscope.advisor.engine import Advice, combine_advice
from stepscope.analysis.bundle import Bundle, combine_cluster_records
from stepscope.analysis.comm_records import match_records
from stepscope.errors import UsageError
from stepscope.ingest import cache_dir, load_rank_file
from stepscope.ingest.build import diagnose_ranks
from stepscope.ingest.empty import no_events_error
from stepscope.ingest.engines import RAY_TASK_RETRIES, check_engine, import_ray, ray_get, ray_session
from stepscope.ingest.layout import RunFiles, resolve, spans_note
from stepscope.ingest.step_records import with_given_step
from stepscope.mapreduce.worker import (
    JobFacts,
    RankFacts,
    RankFile,
    RankSummary,
    indented,
    scan_rank,
    summarize_rank,
    unpack,
)
from stepscope.model.diagnostics import DiagnosticsBuilder
from stepscope.model.schema import TABLE_SCHEMAS
from stepscope.model.strings import StringPool
from stepscope.model.table import Table
from stepscope.model.trace import RankInfo, Trace
from stepscope.report.advice_json import finding_dict, verdict_items
from stepscope.report.json_deep import cluster_section
from stepscope.report.json_out import document
from stepscope.runtime.cores import usable_cores
from stepscope.runtime.pool import fork_pool

R = TypeVar("R")
#: ``auto``: the map-reduce path for runs of more rank files than this, or more bytes
MAP_REDUCE_ABOVE_RANKS = 16
MAP_REDUCE_ABOVE_BYTES = 4 << 30


@dataclass(frozen=True)
class MapReduceResult:
    """The document (as its rank objects, compressed, and the rest), the advice it was made from, and
    what the summaries weighed (``measure``)."""

    head: dict[str, Any]  # the document with "ranks" empty
    sections: list[bytes]  # the rank objects, by rank (:func:`~.worker.unpack`)
    advice: Advice
    summary_bytes: dict[int, int]  # rank → pickled summary bytes (empty unless measured)
    rank_files: dict[int, RankFile]  # rank → its file, for :func:`load_rank`
    jobs: dict[int, JobFacts] = field(default_factory=dict)  # rank → the job's facts it was given (job_memo)
    extras: dict[int, object] = field(default_factory=dict)  # rank → what ``map_reduce(extra=...)`` made of it

    @property
    def document(self) -> dict[str, Any]:
        """The whole §12 document as objects (every rank decoded: for small runs and tests)."""
        return {**self.head, "ranks": [unpack(s) for s in self.sections]}

    def write_json(self, write: Callable[[str], object]) -> None:
        """Write the document as ``json.dumps(document, indent=2) + "\\n"`` writes it, one rank at a
        time, the rest as the encoder makes it (``iterencode``: the pieces ``dumps`` joins), so the
        whole text is never held (the head alone is tens of MB on hundreds of ranks: the matrix)."""
        marker, placed = json.dumps(_RANKS), False
        pieces: list[str] = []
        for chunk in json.JSONEncoder(indent=2, allow_nan=False).iterencode({**self.head, "ranks": _RANKS}):
            if not placed and chunk.endswith(marker):  # '"ranks": ' and the marker: the rank objects go here
                placed = True
                pieces.append(chunk[:-len(marker)])
                write("".join(pieces))
                pieces = []
                self._write_ranks(write)
                continue
            pieces.append(chunk)
            if len(pieces) >= 4096:
                write("".join(pieces))
                pieces = []
        write("".join(pieces) + "\n")

    def _write_ranks(self, write: Callable[[str], object]) -> None:
        if not self.sections:
            write("[]")
        for i, s in enumerate(self.sections):
            write(("[\n    " if i == 0 else ",\n    ") + indented(s))
        if self.sections:
            write("\n  ]")


_RANKS = "\u0000ranks\u0000"  # where the rank objects go in the head's text



def load_rank(result: MapReduceResult, rank: int, use_cache: bool = True) -> Trace:
    """One rank's whole model, for a view that needs events (timeline, drill-down): from the cache the
    map step wrote (read again when that cache was a temporary one), given the step the map step gave it."""
    t = result.rank_files[rank]
    trace = load_rank_file(t.file, t.index, t.source, span=t.span, use_cache=use_cache)
    return trace if t.step_ms is None else with_given_step(trace, t.step_ms)


def wants_map_reduce(path: str | Path, span: str | None = None, choice: bool | None = None) -> bool:
    """Whether to take the map-reduce path: ``choice`` when given, else a directory of more than
    :data:`MAP_REDUCE_ABOVE_RANKS` files or :data:`MAP_REDUCE_ABOVE_BYTES` bytes."""
    if choice is not None:
        return choice
    p = Path(path)
    if not p.is_dir():
        return False
    files = resolve(p, span).files
    return len(files) > MAP_REDUCE_ABOVE_RANKS or sum(os.path.getsize(f) for f in files) > MAP_REDUCE_ABOVE_BYTES


def map_reduce(path: str | Path, *, span: str | None = None, ranks: Sequence[int] | None = None,
               batch_size: int | None = None, use_cache: bool = True, engine: str = "local",
               ray_address: str | None = None, workers: int | None = None, config: AdvisorConfig | None = None,
               measure: bool = False, extra: Callable[[Trace, int], object] | None = None,
               step_ms: float | None = None) -> MapReduceResult:
    """The §12 document of the run at ``path`` through per-rank summaries (see the module docstring);
    the same document the whole-model path makes. ``extra(trace, rank)`` (a module-level function)
    runs in each rank's worker too, inside the rank's memo; its answers are the result's ``extras``.
    ``step_ms``: the step timed without the profiler (``--step-ms``), given to every rank as
    :func:`~stepscope.ingest.step_records.with_given_step` gives it to the whole model."""
    check_engine(engine, ray_address)
    source = str(Path(path))
    if not Path(path).exists() or not (Path(path).is_dir() or Path(path).is_file()):
        raise UsageError("the map-reduce path reads a trace file or run directory", path)
    run = resolve(path, span)
    with _cache(use_cache) as cache, _mapper(engine, ray_address, workers, len(run.files)) as run_map:
        tasks = [RankFile(f, i, source, run.span, str(cache), step_ms=step_ms) for i, f in enumerate(run.files)]
        facts = run_map(scan_rank, [(t,) for t in tasks])
        _check_ranks(facts, ranks, path)
        chosen = sorted((i for i, f in enumerate(facts) if ranks is None or f.rank in ranks),
                        key=lambda i: facts[i].rank)
        if all(facts[i].empty for i in chosen):  # as the whole-model load refuses it (ingest.empty)
            raise no_events_error(path, len(run.files), ranks)
        match = match_records({facts[i].rank: facts[i].collectives for i in chosen})
        pytorch, compiled = any(facts[i].pytorch for i in chosen), any(facts[i].compiled for i in chosen)
        jobs = [(replace(tasks[i], key=facts[i].key),  # map 2 opens map 1's cache entry without hashing again
                 JobFacts(match.transfer_ns[facts[i].rank], match.seen[facts[i].rank], match.method, pytorch, compiled),
                 batch_size, config, extra) for i in chosen]
        summaries = run_map(summarize_rank, jobs)
    result = _reduce(source, run, summaries, batch_size, config or AdvisorConfig(), measure)
    return replace(result, rank_files={facts[i].rank: replace(tasks[i], cache=str(cache_dir())) for i in chosen},
                   jobs={facts[i].rank: j[1] for i, j in zip(chosen, jobs)},
                   extras={s.rank: s.extra for s in summaries} if extra is not None else {})


def _check_ranks(facts: list[RankFacts], ranks: Sequence[int] | None, path: str | Path) -> None:
    have = [f.rank for f in facts]
    if len(set(have)) != len(have):
        raise UsageError("two rank files claim the same rank: analyse this run with --no-map-reduce", path)
    if ranks is not None and not set(ranks) & set(have):
        raise UsageError(f"none of the ranks {list(ranks)} is in this run (have {sorted(have)})", path)


def _reduce(source: str, run: RunFiles, summaries: list[RankSummary], batch_size: int | None,
            config: AdvisorConfig, measure: bool) -> MapReduceResult:
    """The cross-rank steps, on summaries only; the driver's bundle holds cluster results, no trace data."""
    cluster, skipped = combine_cluster_records({s.rank: s.cluster for s in summaries})
    bundle = Bundle(empty_trace(source), {}, cluster, skipped, batch_size)
    advice = combine_advice({s.rank: s.advice for s in summaries}, bundle, config)
    findings = [finding_dict(f) for f in advice.findings]
    diags = DiagnosticsBuilder(source=source)
    for s in summaries:  # by rank
        diags.extend(s.diagnostics)
    if len(run.spans) > 1:
        diags.add("multiple-spans", "info", spans_note(run), source=source)
    diagnose_ranks([RankInfo(s.rank, "", world_size=s.world_size) for s in summaries], diags)
    head = document(source, [], cluster_section(bundle), verdict_items(advice.verdicts, findings), findings,
                    [d.to_dict() for d in diags.freeze()])
    return MapReduceResult(head, [s.section for s in summaries], advice,
                           {s.rank: s.nbytes for s in summaries} if measure else {}, {})


def empty_trace(source: str) -> Trace:
    """A trace with no rank and no event: the driver's bundle carries cluster results only."""
    tables = {name: Table.empty(schema) for name, schema in TABLE_SCHEMAS.items()}
    return Trace(**tables, strings=StringPool(), ranks=(), diagnostics=(), source=source)


@contextmanager
def _cache(use_cache: bool) -> Iterator[Path]:
    """The cache the workers read the ranks into (a temporary one, removed after, without the cache)."""
    if use_cache:
        yield cache_dir()
        return
    tmp = Path(tempfile.mkdtemp(prefix="stepscope-mapreduce-"))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


Mapper = Callable[[Callable[..., R], list[tuple[Any, ...]]], list[R]]


@contextmanager
def _mapper(engine: str, ray_address: str | None, workers: int | None, n_files: int) -> Iterator[Mapper[Any]]:
    """Run a function over argument tuples in workers, results in order: forked processes, or Ray tasks."""
    if engine == "ray":
        ray = import_ray()
        with ray_session(ray, ray_address):
            def on_ray(fn: Callable[..., R], args: list[tuple[Any, ...]]) -> list[R]:
                task = ray.remote(num_cpus=1, max_retries=RAY_TASK_RETRIES, retry_exceptions=False)(fn)
                refs = [task.remote(*a) for a in args]
                return [ray_get(ray, r) for r in refs]
            yield on_ray
        return
    n = max(1, min(workers or usable_cores(), n_files))
    pool = fork_pool(n, None, None)
    try:
        def on_pool(fn: Callable[..., R], args: list[tuple[Any, ...]]) -> list[R]:
            futures = [pool.submit(fn, *a) for a in args]
            return [f.result() for f in futures]
        yield on_pool
    finally:
        pool.shutdown()
