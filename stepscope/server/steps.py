"""A run's answers at a step timed without the profiler: ``step_ms`` (docs/serve.md#the-step-without-the-profiler).

``stepscope serve --step-ms MS`` gives every run served that step (:func:`~.results.analyse_run`,
:func:`~.results.analyse_ranks`), as ``--step-ms`` gives it to the one trace of a command. A request's
``step_ms`` (the document, ``findings``, ``POST …/whatif``) asks for the run at another step:
:func:`restepped` makes those answers from the run's answers at the serve-level step — the run is not
read again: a run analysed whole is analysed again from its model given the step
(:func:`~stepscope.ingest.step_records.with_given_step`), a map-reduce run goes through the map-reduce
path again with the step (each rank from the parse cache). Only the document and the findings
change (the profiler's cost per op, the verdict's step without the profiler, the findings' gains and
order, the remedies replayed on that step); the runs list, ``info``, ``memory``, the timeline and
the diff are the run's at the serve-level step.

:func:`own_cost_us` is the profiler's cost per op the run's answers measured (from a step log or the
given step), what a what-if's ``"unprofiled": true`` removes (``stepscope whatif --unprofiled``
without a value).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import replace
from typing import Any

import numpy as np

from stepscope.analysis.bundle import analyze
from stepscope.analysis.whatif.options import refuse_calibrated_cost_without_device
from stepscope.analysis.whatif.unprofiled import EVENT_COST_NS
from stepscope.ingest.step_records import with_given_step
from stepscope.server.ranks import WholeRun
from stepscope.server.results import RunResults, document_of, findings_answer, split_head, summary_of

#: the profiler's cost per op said so when a rank's cost was measured (``profiler_cost.cost_source``)
MEASURED_SOURCES = ("measured", "given")


def restepped(base: RunResults, step_ms: float) -> RunResults:
    """The run's answers with ``step_ms`` given (see the module docstring): ``base``'s, with the document,
    the findings, the headline numbers and (whole runs) the bundle the what-if replays made again."""
    if base.bundle is not None:
        bundle = analyze(with_given_step(base.bundle.trace, step_ms))
        with bundle.memo.active():
            doc, _, sections = document_of(bundle)
        return _answered(base, doc, sections, bundle=bundle, models=WholeRun(bundle))
    from stepscope.mapreduce.driver import map_reduce
    from stepscope.mapreduce.worker import unpack

    mr = map_reduce(base.entry.path, step_ms=step_ms)
    ranks = tuple(sorted(mr.rank_files))  # the summaries' order
    first = [unpack(mr.sections[0])] if mr.sections else []
    return _answered(base, {**mr.head, "ranks": first}, dict(zip(ranks, mr.sections)), advice=mr.advice)


def _answered(base: RunResults, doc: dict[str, Any], sections: dict[int, bytes], **kw: Any) -> RunResults:
    """``base`` with the document ``doc`` (its ``ranks`` as ``sections``) and what is made of it."""
    summary = {**summary_of(base.entry, doc, base.ranks), "events": base.summary.get("events")}
    return replace(base, head=split_head(doc), sections=sections, findings=findings_answer(doc), summary=summary,
                   **kw)


def own_cost_us(res: RunResults) -> float:
    """The profiler's cost per recorded op (µs) the run's ranks measured — from a step log or the given
    step, the median over the ranks that have one (``analysis.profiler_cost.measured_cost_us``, read from
    their ``profiler_cost`` sections) —, else the calibrated cost; a usage error on a CPU-only run that
    measured none (the calibrated cost is a CUDA host's)."""
    costs = []
    for rank in res.ranks:
        section = json.loads(zlib.decompress(res.sections[rank])).get("profiler_cost") or {}
        if section.get("cost_source") in MEASURED_SOURCES:
            costs.append(float(section["event_cost_us"]))
    measured = float(np.median(costs)) if costs else None
    refuse_calibrated_cost_without_device(True, measured, not res.summary.get("cpu_only", False), EVENT_COST_NS / 1e3)
    return measured if measured is not None else EVENT_COST_NS / 1e3
