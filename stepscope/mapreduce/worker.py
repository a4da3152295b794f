"""What runs where a rank is read: the two map steps of the map-reduce path, on one rank file each.

1. :func:`scan_rank` reads the file (into the cache) and returns its :class:`RankFacts`: the rank,
   its communication kernels as records (:mod:`stepscope.analysis.comm_records`) and the
   facts the job shares (PyTorch? torch.compile?).
2. The driver matches the collectives across ranks; :func:`summarize_rank` re-opens the rank from
   the cache, gives its memo the job's facts (:meth:`~stepscope.analysis._memo.Memo.seed`), runs every
   per-rank analysis, the advisor's per-rank part, the rank's object of the §12 document and every
   cluster analysis's per-rank record, and returns them as a :class:`RankSummary` — its size grows
   with the rank's communication kernels and the document's tables, not with its events.
"""

from __future__ import annotations

import json
import pickle
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import msgspec

from stepscope.advisor.config import AdvisorConfig
from stepscope.advisor.engine import RankAdvice, rank_advice
from stepscope.analysis.bundle import Bundle, Memo, cluster_records, rank_results
from stepscope.analysis.comm_records import CommRecords, comm_records
from stepscope.analysis.common import I64
from stepscope.analysis.platform import uses_compile, uses_pytorch
from stepscope.analysis.stragglers import match_collectives, match_of_rank
from stepscope.ingest import load_rank_file, rank_file_key
from stepscope.ingest.empty import holds_nothing
from stepscope.ingest.step_records import with_given_step
from stepscope.model.diagnostics import Diagnostic
from stepscope.model.trace import Trace
from stepscope.report.json_out import clean, rank_object


@dataclass(frozen=True)
class RankFile:
    """Which file to read as which rank of which run, and where its cache lives."""

    file: str
    index: int  # its place in the run's files: the rank when neither its metadata nor its name gives one
    source: str  # the run (what diagnostics that are not the file's own name)
    span: str
    cache: str
    key: str | None = None  # its cache key, once map 1 has hashed the file (map 2 opens the entry by it)
    step_ms: float | None = None  # the step timed without the profiler (``--step-ms``), given to the rank


@dataclass(frozen=True)
class RankFacts:
    """The first map step's answer for one file."""

    rank: int
    world_size: int | None
    collectives: CommRecords
    pytorch: bool
    compiled: bool
    key: str = ""  # the file's cache key (:func:`~stepscope.ingest.rank_file_key`)
    empty: bool = False  # no event at all (:func:`~stepscope.ingest.empty.holds_nothing`)


@dataclass(frozen=True)
class JobFacts:
    """What a rank's analyses need from the other ranks: its collectives' match and the job's flags."""

    transfer_ns: I64  # aligned with the rank's collective records
    seen: I64
    method: str
    pytorch: bool
    compiled: bool


@dataclass(frozen=True)
class RankSummary:
    """The second map step's answer: everything the driver needs of one rank."""

    rank: int
    section: bytes  # the rank's object of the §12 document, compact JSON, zlib-compressed (:func:`unpack`)
    advice: RankAdvice
    cluster: dict[str, object]  # each cluster analysis's per-rank record (or its NotApplicable)
    diagnostics: tuple[Diagnostic, ...]
    world_size: int | None
    extra: object = None  # what the caller's ``extra(trace, rank)`` made of the rank (the server's views)

    @property
    def nbytes(self) -> int:
        """Its pickled size (what crosses to the driver)."""
        return len(pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL))


def pack(obj: Any) -> bytes:
    """A JSON object as compressed compact JSON: what a summary holds of the document (~10x smaller
    than the objects in memory)."""
    return zlib.compress(json.dumps(obj, separators=(",", ":"), allow_nan=False).encode(), 6)


def unpack(data: bytes) -> Any:
    return json.loads(zlib.decompress(data))


def indented(data: bytes) -> str:
    """A packed object as ``json.dumps(obj, indent=2)`` writes it one level deep in the document (4
    more spaces after each newline): the compact JSON re-indented by msgspec's formatter, which keeps
    every token as ``json`` wrote it — the same text, ~30x faster than decoding and encoding again."""
    text: bytes = msgspec.json.format(zlib.decompress(data), indent=2)
    return text.replace(b"\n", b"\n    ").decode()


def _load(task: RankFile) -> Trace:
    trace = load_rank_file(task.file, task.index, task.source, span=task.span, cache=Path(task.cache), key=task.key)
    return trace if task.step_ms is None else with_given_step(trace, task.step_ms)


def scan_rank(task: RankFile) -> RankFacts:
    """Map step 1: read the rank file (into the cache) and return its facts (its cache key among them)."""
    key = task.key or rank_file_key(task.file, task.index, task.span)
    trace = _load(replace(task, key=key))
    rank = trace.rank_ids[0]
    with Memo().active():
        return RankFacts(rank, trace.rank_info(rank).world_size, comm_records(trace, rank),
                         uses_pytorch(trace), uses_compile(trace), key, holds_nothing(trace))


def job_memo(trace: Trace, rank: int, job: JobFacts) -> Memo:
    """A memo for the one-rank ``trace`` holding the job's facts (its collectives' match, the job's
    flags), so that the rank's analyses and views give what they give in the whole run."""
    memo = Memo()
    memo.seed(uses_pytorch, trace, job.pytorch)
    memo.seed(uses_compile, trace, job.compiled)
    with memo.active():
        recs = comm_records(trace, rank)
        memo.seed(match_collectives, trace, match_of_rank(recs, job.transfer_ns, job.seen, job.method))
    return memo


def summarize_rank(task: RankFile, job: JobFacts, batch_size: int | None = None,
                   config: AdvisorConfig | None = None,
                   extra: Callable[[Trace, int], object] | None = None) -> RankSummary:
    """Map step 2: the rank's analyses, advice, document object and cluster records, with the job's
    facts in its memo (and ``extra(trace, rank)`` in that memo, when given)."""
    trace = _load(task)
    rank = trace.rank_ids[0]
    memo = job_memo(trace, rank, job)
    with memo.active():
        # one core per map task (a forked worker per core, a Ray task of num_cpus=1): one analysis at a time
        rr = rank_results(trace, rank, None, batch_size, side_by_side=False)
        bundle = Bundle(trace, {rank: rr}, batch_size=batch_size, memo=memo)
        section = pack(clean(rank_object(rr, trace)))
        advice = rank_advice(bundle, rank, config or AdvisorConfig())
        records = cluster_records(trace, rank)
        made = extra(trace, rank) if extra is not None else None
    return RankSummary(rank, section, advice, records, trace.diagnostics, trace.rank_info(rank).world_size, made)
