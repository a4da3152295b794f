"""Static shapes as a what-if: cuDNN searches convolution algorithms once, not in every step.

A convolution call that searched (the convolutions analysis' ``searching``: cuDNN's
``cudnn.benchmark`` meeting a shape it has not cached) costs three things, and the remedy takes each:

* its **kernels**: one per algorithm tried — each takes ``1 / kernels`` of its time (one run);
* its **host time**: cuDNN builds and times every candidate on the host (execution plans, workspace
  allocations): the call takes what a call of the same op that did not search takes (their median;
  the median of the rank's convolution calls that did not search where the op has none; ``1 /
  kernels`` of its own time where no call did without searching). Measured on an H200
  (``tests/data/h200_bounds/r16/conv_search``): 140-680 ms a step on the host against 26 ms of trial kernels;
* its **waits**: cuDNN waits for each timed trial — those blocking calls no longer block.

The replay says what of it reaches the step.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import I64
from stepscope.analysis.convolutions import (
    CONV_SEARCH_MIN_KERNELS,
    CONV_SEARCH_OVER_MEDIAN,
    ConvCalls,
    compute_convolutions,
    inside_algo_search,
)
from stepscope.analysis.whatif.graph import SEG_HOST, SEG_LAUNCH, StepGraph
from stepscope.analysis.whatif.kernel_remedies import scale_rows
from stepscope.analysis.whatif.replay import Durations
from stepscope.model.trace import Trace

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class NoAlgoSearch:
    """The searching convolution calls run one algorithm: their kernels at ``1 / kernels`` of their
    time, their host time a call's that did not search, their waits for the trials gone."""

    min_kernels: int = CONV_SEARCH_MIN_KERNELS
    over_median: float = CONV_SEARCH_OVER_MEDIAN
    name: str = field(default="no-algo-search", init=False)
    device_part: ClassVar[str] = "cuDNN's convolution algorithm search on a GPU"

    def basis(self) -> str:
        return ("static shapes, so cuDNN searches convolution algorithms once: each call that tried many runs one "
                "(its kernels at 1 / their count of their time), takes the host time of a call that did not "
                "search, and no longer waits for the trials")

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        try:
            calls = compute_convolutions(trace, g.rank).calls
        except NotApplicable:
            return d
        searching = calls.searching(self.min_kernels, self.over_median)
        if not searching.any():
            return d
        per_kernel = searching[calls.kernel_call]
        d = scale_rows(g, d, calls.kernel_rows[per_kernel], 1.0 / calls.kernels[calls.kernel_call][per_kernel])
        d = replace(d, host_seg_ns=_settled_host(trace, g, d, calls, searching))
        dropped = inside_algo_search(trace, g.rank, g.syncs.row) & g.syncs.droppable
        return replace(d, sync_dropped=d.sync_dropped | dropped)


def _settled_host(trace: Trace, g: StepGraph, d: Durations, calls: ConvCalls, searching: npt.NDArray[np.bool_]) -> I64:
    """The host segments with the searching calls' launch and host work (the calls less their waits) at
    ``settled / measured`` of their time (:meth:`~stepscope.analysis.convolutions.ConvCalls.settled_host_ns`)."""
    ev = trace.events
    rows = calls.rows[searching]
    start = ev["ts_ns"][rows]
    own = ev["dur_ns"][rows].astype(np.float64) - _waits_inside(trace, g, start, start + ev["dur_ns"][rows])
    keep = np.divide(calls.settled_host_ns(searching), own, out=np.ones(len(rows)), where=own > 0)
    t = g.host.t_ns
    removed = _weighted_cover(start, start + ev["dur_ns"][rows], 1.0 - np.clip(keep, 0.0, 1.0), t[:-1], t[1:])
    length = (t[1:] - t[:-1]).astype(np.float64)
    share = np.divide(removed, length, out=np.zeros(len(length)), where=length > 0)
    share[(g.host.seg_kind != SEG_LAUNCH) & (g.host.seg_kind != SEG_HOST)] = 0.0
    out: I64 = np.round(d.host_seg_ns * (1.0 - share)).astype(np.int64)
    return out


def _waits_inside(trace: Trace, g: StepGraph, start: I64, end: I64) -> F64:
    """Per call ``[start, end)`` (disjoint), the time of the blocking calls that start inside it (the
    waits for the trials, which no longer block: the rest of the call is its host work)."""
    ev = trace.events
    t = ev["ts_ns"][g.syncs.row]
    order = np.argsort(start, kind="stable")
    k = np.searchsorted(start[order], t, side="right") - 1
    inside = (k >= 0) & (t < end[order][np.maximum(k, 0)])
    waits = np.zeros(len(start), np.float64)
    np.add.at(waits, order[k[inside]], ev["dur_ns"][g.syncs.row[inside]].astype(np.float64))
    return waits


def _weighted_cover(start: I64, end: I64, weight: F64, lo: I64, hi: I64) -> F64:
    """Per window ``[lo, hi)``: Σ weight × the time of the intervals inside it (intervals made disjoint
    in start order: a later one starts where the earlier ones end)."""
    order = np.argsort(start, kind="stable")
    s, e, w = start[order].astype(np.float64), end[order].astype(np.float64), weight[order]
    before = np.concatenate([[-np.inf], np.maximum.accumulate(e)[:-1]])
    s = np.maximum(s, before)
    e = np.maximum(e, s)
    cum = np.concatenate([[0.0], np.cumsum(w * (e - s))])

    def integral(x: npt.NDArray[np.int64]) -> F64:
        j = np.searchsorted(s, x, side="right") - 1
        k = np.maximum(j, 0)
        inside = w[k] * np.clip(x - s[k], 0.0, e[k] - s[k])
        out: F64 = np.where(j >= 0, cum[k] + inside, 0.0)
        return out

    return integral(hi) - integral(lo)
