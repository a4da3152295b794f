"""Everything the UI asks about one run, computed once when the run is loaded and kept as JSON bytes.

:func:`analyse_run` is the only place the server calls the engine for a run: ``load`` →
``analyze`` → ``advise`` → the §12 document (``report.json_out.to_json``), plus the memory curves
(``report.series.memory_from_trace``) and each rank's time extent and step windows (for the
timeline's first view), and the timeline index and launch order of the first :data:`WARM_RANKS`
ranks (so that the first window and the first click are binary searches, not a 1 s index build on
a 1 GB trace).
Routes then only look these bytes up, as the TensorBoard plugin's routes looked up precomputed
results (STYLE §2).

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stepscope.advisor.engine import advise
from stepscope.analysis.breakdown import tb_step_windows
from stepscope.analysis.bundle import Bundle, analyze
from stepscope.analysis.timeline_event import launched_by_start
from stepscope.analysis.timeline_index import rank_index
from stepscope.model.trace import Trace
from stepscope.report.advice_json import finding_dict
from stepscope.report.json_out import clean, to_json
from stepscope.server.discover import RunEntry

Loader = Callable[[Path], Trace]
#: steps listed per rank in ``info`` (the timeline's step markers)
MAX_STEP_MARKERS = 5000
#: ranks whose timeline index is built with the run (the rest on their first window)
WARM_RANKS = 8


@dataclass(frozen=True)
class RunResults:
    """The precomputed answers for one run (see the module docstring)."""

    entry: RunEntry
    bundle: Bundle
    ranks: tuple[int, ...]
    doc: bytes
    rank_docs: dict[int, bytes]
    findings: bytes
    memory: dict[int, bytes]
    info: bytes
    extents: dict[int, tuple[int, int]]  # rank → (first start, last end), trace ns
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def trace(self) -> Trace:
        return self.bundle.trace


def dumps(obj: Any) -> bytes:
    """Compact JSON of plain data (numpy scalars and non-finite floats cleaned first)."""
    return json.dumps(clean(obj), separators=(",", ":"), allow_nan=False, default=str).encode()


def _findings(bundle: Bundle) -> list[dict[str, Any]]:
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


def _summary(entry: RunEntry, doc: dict[str, Any], ranks: Sequence[int]) -> dict[str, Any]:
    first = doc["ranks"][0] if doc.get("ranks") else {}
    ov = first.get("overview") or {}
    dev = first.get("device") or {}
    verdicts = doc.get("verdicts") or []
    return {"ranks": list(ranks), "device": dev.get("name"), "avg_step_ms": ov.get("avg_step_ms"),
            "step_count": ov.get("step_count"), "findings": len(doc.get("findings") or []),
            "verdict": verdicts[0].get("text") if verdicts else None, "bound": verdicts[0].get("bound") if verdicts
            else None}


def analyse_run(entry: RunEntry, loader: Loader) -> RunResults:
    """Load, analyse and advise one run, and render every answer the routes serve (once)."""
    trace = loader(entry.path)
    bundle = analyze(trace)
    with bundle.memo.active():
        return _results(entry, bundle)


def _results(entry: RunEntry, bundle: Bundle) -> RunResults:
    trace = bundle.trace
    doc = to_json(bundle, _findings(bundle))
    ranks = tuple(int(r["rank"]) for r in doc["ranks"])
    rank_docs = {r: dumps({**doc, "ranks": [obj]}) for r, obj in zip(ranks, doc["ranks"])}
    summary = _summary(entry, doc, ranks)
    summary["events"] = trace.event_count
    infos = [rank_info(trace, r) for r in ranks]
    for r in ranks[:WARM_RANKS]:  # per rank: memoised in the bundle's memo
        rank_index(trace, r)
        launched_by_start(trace, r)
    return RunResults(
        entry=entry, bundle=bundle, ranks=ranks, doc=dumps(doc), rank_docs=rank_docs,
        findings=dumps({"findings": doc.get("findings") or [], "verdicts": doc.get("verdicts") or []}),
        memory={r: dumps(memory_of(trace, r)) for r in ranks},
        info=dumps({"ranks": infos}), extents={i["rank"]: (i["start_ns"], i["end_ns"]) for i in infos},
        summary=summary)
