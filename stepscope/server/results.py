"""Everything the UI asks about one run, computed once when the run is loaded and kept as JSON bytes.

:func:`analyse_run` is the only place the server calls the engine for a run: ``load`` →
``analyze`` → ``advise`` → the §12 document (``report.json_out.to_json``), plus the memory curves
(``report.series.memory_from_trace``) and each rank's time extent and step windows (for the
timeline's first view), and the timeline index and launch order of the first :data:`WARM_RANKS`
ranks (so that the first window and the first click are binary searches, not a 1 s index build on
a 1 GB trace).
Routes then only look these bytes up, as the TensorBoard plugin's routes looked up precomputed
results (STYLE §2).

:func:`analyse_ranks` makes the same answers through the map-reduce path (docs/scale.md): each
rank read and analysed alone in a worker process, which also computes the rank's memory curves,
extent and step windows (:func:`rank_extras`); the server keeps the document and these, never the
events. Views that need events get a rank model from ``models`` (:mod:`.ranks`).

======================  ========================================================================
``doc``                 the whole §12 document (``stepscope analyze --json``)
``rank_docs[r]``        the same document with ``ranks`` cut to rank ``r``
``findings``            ``{"findings": [...], "verdicts": [...]}``
``memory[r]``           ``{"rank": r, "curves": [{device, ts_ms, allocated_mb, reserved_mb}]}``
``info``                ``{"ranks": [{rank, start_ns, end_ns, steps: [{step, start_ns, end_ns}]}]}``
``summary``             a few headline numbers for the runs list (a dict, not bytes)
======================  ========================================================================
"""

from __future__ import annotations

import dataclasses
import json
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stepscope.advisor.engine import Advice, advise
from stepscope.analysis.breakdown import tb_step_windows
from stepscope.analysis.bundle import Bundle, analyze
from stepscope.analysis.timeline_event import launched_by_track
from stepscope.analysis.timeline_index import rank_index
from stepscope.ingest.step_records import with_given_step
from stepscope.model.trace import Trace
from stepscope.report.advice_json import finding_dict
from stepscope.report.json_out import clean, to_json
from stepscope.server.discover import RunEntry
from stepscope.server.ranks import LOADED_RANKS, LazyRanks, RankModels, WholeRun

Loader = Callable[[Path], Trace]
#: steps listed per rank in ``info`` (the timeline's step markers)
MAX_STEP_MARKERS = 5000
#: ranks whose timeline index is built with the run (the rest on their first window)
WARM_RANKS = 8


@dataclass(frozen=True)
class RunResults:
    """The precomputed answers for one run (see the module docstring)."""

    entry: RunEntry
    bundle: Bundle | None  # the whole model's results; None for a map-reduce run
    models: RankModels  # a rank's model, for the views that need events
    ranks: tuple[int, ...]
    head: tuple[bytes, bytes]  # the document's JSON before and after its "ranks" list
    sections: dict[int, bytes]  # rank → its object of the document, compact JSON, zlib-compressed
    findings: bytes
    memory: dict[int, bytes]
    info: bytes
    extents: dict[int, tuple[int, int]]  # rank → (first start, last end), trace ns
    summary: dict[str, Any] = field(default_factory=dict)
    advice: Advice | None = None  # a map-reduce run's advice (its findings, for a diff)

    @property
    def trace(self) -> Trace:
        """The whole model (runs analysed whole; a map-reduce run holds none: use ``models``)."""
        if self.bundle is None:
            raise ValueError(f"{self.entry.label} was analysed by map-reduce: it holds no whole model")
        return self.bundle.trace

    @property
    def doc(self) -> bytes:
        """The whole §12 document (``stepscope analyze --json``, compact)."""
        body = b",".join(zlib.decompress(self.sections[r]) for r in self.ranks)
        return self.head[0] + b"[" + body + b"]" + self.head[1]

    def rank_doc(self, rank: int) -> bytes:
        """The document with ``ranks`` cut to ``rank``."""
        return self.head[0] + b"[" + zlib.decompress(self.sections[rank]) + b"]" + self.head[1]


_RANKS = "\u0000ranks\u0000"


def split_head(doc: dict[str, Any]) -> tuple[bytes, bytes]:
    """The compact JSON of ``doc`` before and after the value of its ``ranks`` key."""
    before, after = dumps({**doc, "ranks": _RANKS}).split(json.dumps(_RANKS).encode(), 1)
    return before, after


def dumps(obj: Any) -> bytes:
    """Compact JSON of plain data (numpy scalars and non-finite floats cleaned first)."""
    return json.dumps(clean(obj), separators=(",", ":"), allow_nan=False, default=str).encode()


def findings_of(bundle: Bundle) -> list[dict[str, Any]]:
    return [finding_dict(f) for f in advise(bundle)]


def memory_of(trace: Trace, rank: int) -> dict[str, Any]:
    from stepscope.report.series import memory_from_trace

    return {"rank": rank, "curves": [dataclasses.asdict(c) for c in memory_from_trace(trace, rank)]}


def rank_info(trace: Trace, rank: int) -> dict[str, Any]:
    """The rank's time extent (first start, last end of its events, trace ns) and its step windows."""
    ev = trace.events
    sl = trace.rank_slice(rank)
    ts, dur = ev["ts_ns"][sl], ev["dur_ns"][sl]
    start = int(ts.min()) if len(ts) else 0
    end = int((ts + np.maximum(dur, 0)).max()) if len(ts) else 1
    w = tb_step_windows(trace, rank)  # the breakdown's windows: one length per step in every view
    rows = np.flatnonzero(w.step >= 0)[:MAX_STEP_MARKERS]
    steps = [{"step": int(s), "start_ns": int(a), "end_ns": int(b)}
             for s, a, b in zip(w.step[rows], w.start_ns[rows], w.end_ns[rows])]
    return {"rank": rank, "start_ns": start, "end_ns": max(end, start + 1), "steps": steps}


def summary_of(entry: RunEntry, doc: dict[str, Any], ranks: Sequence[int]) -> dict[str, Any]:
    """The runs list's headline numbers of the run, from its document (its first rank's object at least)."""
    first = doc["ranks"][0] if doc.get("ranks") else {}
    ov = first.get("overview") or {}
    dev = first.get("device") or {}
    verdicts = doc.get("verdicts") or []
    job = verdicts[0] if verdicts and verdicts[0].get("rank") is None else None
    # a multi-rank run: the job's step, the number its verdict states (not the first rank's window)
    step = job.get("avg_step_ms") if job is not None else ov.get("avg_step_ms")
    cpu_only = bool(doc.get("ranks")) and all(str(r.get("platform", "")).split("+")[0] == "cpu" for r in doc["ranks"])
    return {"ranks": list(ranks), "device": dev.get("name"), "cpu_only": cpu_only, "avg_step_ms": step,
            "step_count": ov.get("step_count"), "findings": len(doc.get("findings") or []),
            "verdict": verdicts[0].get("text") if verdicts else None, "bound": verdicts[0].get("bound") if verdicts
            else None}


def analyse_run(entry: RunEntry, loader: Loader, step_ms: float | None = None) -> RunResults:
    """Load, analyse and advise one run, and render every answer the routes serve (once); ``step_ms``: the
    step timed without the profiler (``serve --step-ms``), given to the trace (``with_given_step``)."""
    trace = loader(entry.path)
    if step_ms is not None:
        trace = with_given_step(trace, step_ms)
    bundle = analyze(trace)
    with bundle.memo.active():
        return _results(entry, bundle)


def document_of(bundle: Bundle) -> tuple[dict[str, Any], tuple[int, ...], dict[int, bytes]]:
    """The bundle's document (with its findings), its ranks, and each rank's object compressed (a section)."""
    doc = to_json(bundle, findings_of(bundle))
    ranks = tuple(int(r["rank"]) for r in doc["ranks"])
    return doc, ranks, {r: zlib.compress(dumps(obj), 6) for r, obj in zip(ranks, doc["ranks"])}


def findings_answer(doc: dict[str, Any]) -> bytes:
    """The ``findings`` route's answer: the document's findings and verdicts."""
    return dumps({"findings": doc.get("findings") or [], "verdicts": doc.get("verdicts") or []})


def _results(entry: RunEntry, bundle: Bundle) -> RunResults:
    trace = bundle.trace
    doc, ranks, sections = document_of(bundle)
    summary = summary_of(entry, doc, ranks)
    summary["events"] = trace.event_count
    infos = [rank_info(trace, r) for r in ranks]
    for r in ranks[:WARM_RANKS]:  # per rank: memoised in the bundle's memo
        rank_index(trace, r)
        launched_by_track(trace, r)
    return RunResults(
        entry=entry, bundle=bundle, models=WholeRun(bundle), ranks=ranks, head=split_head(doc), sections=sections,
        findings=findings_answer(doc), memory={r: dumps(memory_of(trace, r)) for r in ranks},
        info=dumps({"ranks": infos}), extents={i["rank"]: (i["start_ns"], i["end_ns"]) for i in infos},
        summary=summary)


@dataclass(frozen=True)
class RankExtras:
    """What a map-reduce worker computes for the server besides the rank's summary."""

    info: dict[str, Any]  # :func:`rank_info`
    memory: bytes  # :func:`memory_of`, as JSON
    events: int
    tracks: int


def rank_extras(trace: Trace, rank: int) -> RankExtras:
    """A rank's extent, step windows and memory curves, and its model's size (in its worker)."""
    return RankExtras(rank_info(trace, rank), dumps(memory_of(trace, rank)), trace.event_count, len(trace.tracks))


def analyse_ranks(entry: RunEntry, loaded_ranks: int = LOADED_RANKS, step_ms: float | None = None) -> RunResults:
    """The run's answers through the map-reduce path (see the module docstring); ``loaded_ranks``
    rank models kept loaded at most; ``step_ms`` as :func:`analyse_run` takes it."""
    from stepscope.mapreduce.driver import map_reduce
    from stepscope.mapreduce.worker import unpack

    mr = map_reduce(entry.path, extra=rank_extras, step_ms=step_ms)
    extras = {r: _extras(x) for r, x in mr.extras.items()}
    ranks = tuple(sorted(mr.rank_files))  # the summaries' order
    summary = summary_of(entry, {**mr.head, "ranks": [unpack(mr.sections[0])] if ranks else []}, ranks)
    summary["events"] = sum(x.events for x in extras.values())
    infos = [extras[r].info for r in ranks]
    models = LazyRanks(mr, {r: (x.events, x.tracks) for r, x in extras.items()}, loaded_ranks)
    return RunResults(
        entry=entry, bundle=None, models=models,
        ranks=ranks, head=split_head(mr.head), sections=dict(zip(ranks, mr.sections)),
        findings=dumps({"findings": mr.head.get("findings") or [], "verdicts": mr.head.get("verdicts") or []}),
        memory={r: extras[r].memory for r in ranks}, info=dumps({"ranks": infos}),
        extents={i["rank"]: (i["start_ns"], i["end_ns"]) for i in infos}, summary=summary, advice=mr.advice)


def _extras(x: object) -> RankExtras:
    assert isinstance(x, RankExtras)
    return x
