"""GPU work that zeroes gradients (PyTorch performance tuning guide: ``zero_grad(set_to_none=True)``).

The GPU activities of a rank inside its steps (kernels, copies, memsets) launched under an
``Optimizer.zero_grad#...`` annotation — the launching op or any op above it —: the memset / fill
kernels of ``zero_grad(set_to_none=False)``, which ``set_to_none=True`` (the default since PyTorch
2.0) replaces by freeing the gradients.

It also finds what the zeroing costs the next backward: each zeroed gradient's first accumulation
(``torch::autograd::AccumulateGrad``'s ``aten::add_``, which reads the zeros and writes the sum) —
with ``set_to_none=True`` the backward hands its gradient over instead, with no kernel. Per zeroing
``zero_grad`` call, the accumulations that launch device work after it, in time order, as many as it
zeroed tensors (its zeroing activities: one fill per tensor; a ``_foreach_zero_`` kernel zeroes many,
so there the count is short and the cost too). A second backward before the next ``zero_grad``
(gradient accumulation) accumulates whatever ``set_to_none`` says: its adds are not counted. Measured
on an H200 (``tests/data/h200_bounds/r16/zero_keep``): 1.6 GB of gradients zeroed cost 0.35 ms a
step, their accumulations 1.1 ms more.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stepscope.analysis._memo import per_rank
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import I64, ancestor_with, in_step_rows, kept_steps
from stepscope.analysis.named import NamedRows, named_rows
from stepscope.model.schema import GPU_KINDS
from stepscope.model.trace import Trace


def is_zero_grad(name: str) -> bool:
    return name.startswith("Optimizer.zero_grad")


def is_accumulate_grad(name: str) -> bool:
    return name == "torch::autograd::AccumulateGrad"


@dataclass(frozen=True)
class ZeroGradResult:
    """The GPU activities launched while zeroing gradients, inside the steps (totals over them)."""

    rank: int
    step_count: int  # steps the per-step numbers average over (0 without steps)
    activities: NamedRows
    accumulations: NamedRows  # the first accumulation into each zeroed gradient (its add kernels)


@per_rank
def compute_zero_grad(trace: Trace, rank: int) -> ZeroGradResult:
    """The rank's GPU activities under ``Optimizer.zero_grad`` inside its steps."""
    ev = trace.events
    g = in_step_rows(trace, rank, tuple(int(k) for k in GPU_KINDS))
    launcher = ev["op"][g].astype(np.int64)
    span = ancestor_with(trace, launcher, trace.strings.mask(is_zero_grad))
    under = span >= 0
    if not under.any():
        raise NotApplicable("no GPU work under Optimizer.zero_grad")
    acc = ancestor_with(trace, launcher, trace.strings.mask(is_accumulate_grad))
    first = np.isin(acc, _first_accumulations(trace, span[under], acc[acc >= 0]))
    return ZeroGradResult(rank, len(kept_steps(trace, rank)), named_rows(trace, g[under]),
                          named_rows(trace, g[first & (acc >= 0)]))


def _first_accumulations(trace: Trace, zeroing_span: I64, acc_calls: I64) -> I64:
    """The AccumulateGrad calls (host rows) that are a zeroed gradient's first accumulation: after each
    zeroing ``zero_grad`` span (one row per zeroing activity), the first as many calls as it has
    zeroing activities."""
    ev = trace.events
    spans, zeroed = np.unique(zeroing_span, return_counts=True)
    end = ev["ts_ns"][spans] + ev["dur_ns"][spans]
    by_end = np.argsort(end, kind="stable")
    end, zeroed = end[by_end], zeroed[by_end]
    calls = np.unique(acc_calls)
    calls = calls[np.argsort(ev["ts_ns"][calls], kind="stable")]
    span_of = np.searchsorted(end, ev["ts_ns"][calls], side="right") - 1  # the last span ended before it
    calls, span_of = calls[span_of >= 0], span_of[span_of >= 0]
    nth = np.arange(len(calls)) - np.searchsorted(span_of, span_of, side="left")  # calls since that span
    out: I64 = calls[nth < zeroed[span_of]]
    return out
