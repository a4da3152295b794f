"""DataLoader workers replayed (``stepscope whatif --workers``, the ``loader-workers`` remedy).

What a DataLoader call measures depends on how the trace loaded its batches (the dataloader analysis
reads it from the iterator's name):

* **in the main process** (``num_workers=0``, ``_SingleProcessDataLoaderIter``): each call is the
  whole fetch of its batch (reading, decoding, collating). With N workers the batch is made while
  the step runs: the call waits ``max(0, fetch / N − the rest of its step)``.
* **in worker processes** (``_MultiProcessingDataLoaderIter``): each call is what is left of a wait
  for workers that already exist — not the cost of a batch. The workers deliver a batch every *P*
  (the loader's period); a step waits for its batch when the rest of the step (its time outside
  the calls) is shorter than P. P is the one period that gives the measured mean step: the mean
  over the steps holding calls of ``max(rest, P)`` equals their mean step (their rest plus their
  waits). Where every step waits for its workers P is the mean step; where they keep ahead, the
  waits are the main process taking a ready batch, and P is bounded only (at most the smallest
  rest). A batch costs a worker ``C = FROM × P`` (FROM: the workers the trace ran with, which the
  trace does not record: given by the user as ``--workers FROM:TO``); with TO workers one comes every
  ``C / TO``, so each step waits ``max(0, P × FROM / TO − its rest)``. Only the ratio FROM / TO
  counts: twice the workers and each sample half as costly replay alike — which is how the
  remedy replays a loader with workers, whose count it does not know. FROM = TO is today's setup:
  nothing changes.

The rest of a step is its measured time less its calls', less the host time the changes before this
one removed from it (``--unprofiled`` first: the loop is faster and waits longer for the same workers).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import I64
from stepscope.analysis.dataloader import multi_process_loading
from stepscope.analysis.whatif.graph import SEG_INPUT, StepGraph
from stepscope.analysis.whatif.replay import Durations
from stepscope.model.trace import Trace

F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]

#: the one-line answer to ``--workers N`` on a trace whose loader already has workers
GIVE_FROM = ("this trace's DataLoader already runs worker processes (multi-process loading) and the trace does not "
             "record how many: give --workers FROM:TO, FROM the num_workers it ran with (e.g. --workers 2:4)")
#: the answer to ``--workers FROM:TO`` (FROM > 0) on a trace that loads in the main process
NO_WORKERS_YET = ("this trace's DataLoader loads in the main process (num_workers=0): give --workers N "
                  "(or --workers 0:N)")
#: the answer to ``--workers 0:N`` on a trace whose loader has workers
FROM_AT_LEAST_1 = ("this trace's DataLoader already runs worker processes (multi-process loading): FROM is the "
                   "num_workers it ran with, at least 1")


@dataclass(frozen=True)
class LoaderWorkers:
    """``workers`` DataLoader workers (see the module docstring). ``from_workers``: those the trace ran
    with (None: 0 where it loads in the main process, else refused — unless ``times_if_running``, the
    remedy's 2: where the loader already has workers, a batch's time divided by that many)."""

    workers: int = 4
    from_workers: int | None = None
    times_if_running: int | None = None
    name: str = field(default="loader-workers", init=False)

    @property
    def todays(self) -> bool:
        """``--workers 2:2``: the count the trace ran with, which changes nothing by design."""
        return self.from_workers == self.workers

    def basis(self) -> str:
        if self.todays:
            return f"{self.workers} → {self.workers} DataLoader workers: the count the trace ran with, nothing changes"
        if self.from_workers:
            return running_basis(self.from_workers / self.workers, f"{self.from_workers} → {self.workers}")
        single = (f"{self.workers} DataLoader workers: each call waits max(0, its fetch time / {self.workers}"
                  " − the rest of its step)")
        if self.from_workers is None and self.times_if_running is not None:
            return (f"{single} where the loader runs in the main process; where it already has workers, "
                    f"{running_basis(1 / self.times_if_running, 'its')}")
        return single

    def basis_on(self, trace: Trace, rank: int) -> str:
        """The basis for this rank's loading (the remedy says which of its two models it replays)."""
        if self.from_workers is None and self.times_if_running is not None and multi_process_loading(trace, rank):
            return running_basis(1 / self.times_if_running, "its")
        return LoaderWorkers(self.workers, self.from_workers).basis()

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        kind, call = g.host.seg_kind, g.host.seg_input_call
        inp = (kind == SEG_INPUT) & (call >= 0)
        if not inp.any():
            return d
        ratio = self._ratio(multi_process_loading(trace, g.rank))
        if ratio is None:
            return _single_process(g, d, inp, self.workers)
        return d if ratio == 1 else _with_workers(g, d, inp, ratio)

    def _ratio(self, multi: bool) -> float | None:
        """FROM / TO where the trace's loader has workers; None: it has none (the single-process model)."""
        if not multi:
            if self.from_workers:
                raise NotApplicable(NO_WORKERS_YET)
            return None
        if self.from_workers == 0:
            raise NotApplicable(FROM_AT_LEAST_1)
        if self.from_workers is None:
            if self.times_if_running is None:
                raise NotApplicable(GIVE_FROM)
            return 1 / self.times_if_running
        return self.from_workers / self.workers


def running_basis(ratio: float, what: str) -> str:
    """The basis of the model for a loader with workers, its period times ``ratio`` (FROM / TO); ``what``:
    "FROM → TO", or "its" for the remedy (the time per batch divided, whatever the count)."""
    if what == "its":
        head = (f"the DataLoader's time per batch × {ratio:g} ({1 / ratio:g} × its workers on free cores, or each "
                f"sample {1 / ratio:g} × cheaper)")
    else:
        head = f"{what} DataLoader workers (the loader already has workers)"
    return (f"{head}: each step waits max(0, P × {ratio:g} − the rest of its step), P the period its batches "
            "arrive at now (from the measured mean step)")


def _single_process(g: StepGraph, d: Durations, inp: B, workers: int) -> Durations:
    """Each call a whole fetch: it waits ``max(0, fetch / workers − the rest of its step)``."""
    kind, call = g.host.seg_kind, g.host.seg_input_call
    n_calls = int(call.max()) + 1
    fetch = np.bincount(call[inp], weights=d.host_seg_ns[inp], minlength=n_calls)
    first_seg = np.full(n_calls, len(kind), np.int64)
    np.minimum.at(first_seg, call[inp], np.flatnonzero(inp))
    step_ns = _step_of_points(g, g.host.t_ns[np.minimum(first_seg, len(g.host.t_ns) - 1)])
    new = np.maximum(0.0, fetch / max(workers, 1) - np.maximum(step_ns - fetch, 0.0))
    factor = np.divide(new, fetch, out=np.zeros(n_calls), where=fetch > 0)
    seg = d.host_seg_ns.copy()
    seg[inp] = np.round(seg[inp] * factor[call[inp]]).astype(np.int64)
    return replace(d, host_seg_ns=seg)


def _step_of_points(g: StepGraph, t: I64) -> F64:
    """Measured length of the step window each instant falls in (the whole span when none)."""
    st = g.steps
    start, end = st.measured_start_ns, st.measured_end_ns
    if len(start) == 0:
        return np.zeros(len(t))
    k = np.clip(np.searchsorted(start, t, side="right") - 1, 0, len(start) - 1)
    return (end - start)[k].astype(np.float64)


def _with_workers(g: StepGraph, d: Durations, inp: B, ratio: float) -> Durations:
    """Each step's calls (a loader with workers) wait ``max(0, P × ratio − its rest)`` together, each call
    its share of that (the module docstring)."""
    t = g.host.t_ns
    start, end = g.steps.measured_start_ns, g.steps.measured_end_ns
    if len(start) == 0:
        start, end = t[:1], t[-1:]
    n = len(start)
    k = np.clip(np.searchsorted(start, t[:-1], side="right") - 1, 0, n - 1)  # each segment's step
    measured, now = np.diff(t).astype(np.float64), d.host_seg_ns.astype(np.float64)
    wait = np.bincount(k[inp], weights=now[inp], minlength=n).astype(np.float64)
    rest = np.maximum((end - start) - np.bincount(k[inp], weights=measured[inp], minlength=n), 0.0)
    removed = np.bincount(k[~inp], weights=(measured - now)[~inp], minlength=n)  # host time the changes before took out
    has = np.bincount(k[inp], minlength=n) > 0
    period = loader_period_ns(rest[has], wait[has])
    new = np.maximum(0.0, period * ratio - np.maximum(rest - removed, 0.0))
    factor = np.divide(new, wait, out=np.zeros(n), where=wait > 0)
    seg = d.host_seg_ns.copy()
    seg[inp] = np.round(seg[inp] * factor[k[inp]]).astype(np.int64)
    return replace(d, host_seg_ns=seg)


def loader_period_ns(rest_ns: F64, wait_ns: F64) -> float:
    """The period P at which batches reach the steps: ``mean(max(rest, P)) = mean(rest + wait)``.

    ``mean(max(rest, P))`` grows piecewise linearly with P, through the sorted rests; where the waits are
    all 0 (the workers keep ahead) the answer is the smallest rest, the largest P that changes nothing."""
    xs = np.sort(rest_ns)
    target = float(np.mean(rest_ns + wait_ns))
    if target >= xs[-1]:
        return target
    at_x = (np.arange(1, len(xs) + 1) * xs + (xs.sum() - np.cumsum(xs))) / len(xs)  # mean(max(rest, x_j))
    return float(np.interp(target, at_x, xs))
