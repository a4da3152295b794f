"""The what-if of a run held rank by rank (the map-reduce path, docs/scale.md): the prediction
:func:`~.simulate.simulate` makes on the run's whole trace, with one rank's model loaded at a time.

The job replay needs every rank at once, but not every rank's events: per rank it needs the step
graph, the durations with the changes applied, and the collective and send / receive records
(which tie the ranks).
So each rank is opened in turn (``open_rank``: its one-rank model, with the job's facts in its
memo, as a map-reduce view gets it), those are kept and its model let go; the job is replayed from
them; then each wanted rank is opened again to read its replayed trace with the critical-path
analysis. Every per-rank pass reads only the rank's own rows, so the answer is the whole trace's,
value for value (tested). ``--fix-rank`` needs the job's arrivals, which no one rank holds: they
are made from every rank's collective records first (one more pass over the ranks).

What the driver holds: the ranks' step graphs (they grow with the ranks' device activities and
host points, ~1/20 of the model) — not their events.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace

import numpy as np

from stepscope.analysis.arrivals import Arrivals, arrivals_of
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.collective_records import CollectiveRecords, collective_records
from stepscope.analysis.critical_path import CriticalPath, compute_critical_path
from stepscope.analysis.whatif.graph import StepGraph, step_graph
from stepscope.analysis.whatif.job import matched_edges, replay_job
from stepscope.analysis.whatif.p2p import P2PRecords, p2p_records
from stepscope.analysis.whatif.replay import Durations
from stepscope.analysis.whatif.simulate import (
    RankWhatIf,
    WhatIf,
    applied_durations,
    caveats,
    paced_by,
    replayed_trace,
    said_bases,
    samples_factor,
)
from stepscope.analysis.whatif.transforms import FixSlowRank, Transform
from stepscope.model.trace import Trace

#: rank → a context in which that rank's one-rank model is open (and its memo active)
RankOpener = Callable[[int], AbstractContextManager[Trace]]


def simulate_by_rank(rank_ids: Sequence[int], open_rank: RankOpener, transforms: Sequence[Transform],
                     ranks: Sequence[int] | None = None) -> WhatIf:
    """:func:`~.simulate.simulate` of the run whose ranks are ``rank_ids`` (see the module docstring)."""
    wanted = list(ranks if ranks is not None else rank_ids)
    multi = len(rank_ids) > 1
    arrivals = _job_arrivals(rank_ids, open_rank) if multi and _fixes(transforms) else None
    changes = [replace(t, arrivals=arrivals) if isinstance(t, FixSlowRank) else t for t in transforms]
    graphs: dict[int, StepGraph] = {}
    acted = np.zeros(len(changes), bool)  # per change: whether it changed anything on some rank
    durs: dict[int, Durations] = {}
    records: dict[int, CollectiveRecords] = {}
    sends: dict[int, P2PRecords] = {}
    before: dict[int, CriticalPath] = {}
    for r in rank_ids:  # one rank's model open at a time
        with open_rank(r) as trace:
            if multi:
                records[r], sends[r] = collective_records(trace, r), p2p_records(trace, r)
            try:
                graphs[r] = step_graph(trace, r)
            except NotApplicable:
                if r in wanted:
                    raise
                continue
            durs[r], changed = applied_durations(trace, graphs[r], changes)
            acted |= changed
            if r in wanted:
                before[r] = compute_critical_path(trace, r)
    if multi and arrivals is None:
        arrivals = _arrivals_of([records[r] for r in rank_ids])
    edges = matched_edges(arrivals, sends, graphs) if multi else None
    rps = replay_job(graphs, durs, edges)
    paced = paced_by(arrivals, edges, rps, wanted)
    out = []
    for r in wanted:
        g, rp = graphs[r], rps[r]
        with open_rank(r) as trace:
            after = compute_critical_path(replayed_trace(trace, g, rp), r)
        measured = g.steps.measured_end_ns - g.steps.measured_start_ns
        out.append(RankWhatIf(r, g.steps.step, measured, rp.step_ns, before[r], after))
    return WhatIf(said_bases(transforms, out), caveats(transforms, out, acted=tuple(acted.tolist())),
                  tuple(out), paced, samples_factor(transforms))


def _fixes(transforms: Sequence[Transform]) -> bool:
    return any(isinstance(t, FixSlowRank) for t in transforms)


def _job_arrivals(rank_ids: Sequence[int], open_rank: RankOpener) -> Arrivals | None:
    """The job's arrivals (what ``--fix-rank`` reads) from every rank's collective records."""
    records = []
    for r in rank_ids:  # per rank
        with open_rank(r) as trace:
            records.append(collective_records(trace, r))
    return _arrivals_of(records)


def _arrivals_of(records: Sequence[CollectiveRecords]) -> Arrivals | None:
    try:
        return arrivals_of(tuple(records))
    except NotApplicable:
        return None
