"""A larger batch: the work on the batch's tensors grows with it, the work per call does not.

What scales is found from the trace's recorded input shapes (``record_shapes=True``): an op holds
per-sample work when one of its tensor inputs has a dimension equal to the batch size now (the
forward's ``[32, 256]`` activations, the backward's gradients, the loss), and none when no input
has (the optimizer's per-parameter ops, ``aten::to`` on scalars). The DataLoader fetches F × the
samples per call. On that basis the change is an upper bound on what a larger batch costs: every
millisecond of such an op is taken as per-sample work, times F, though small ops run more
efficiently on larger tensors (a 64-row GEMM does twice a 32-row one's arithmetic in ~1.4 × its
time on the CPU pair of docs/whatif.md), which a trace at one batch size cannot show.

* Host: the share of each host segment covered by batch ops that compute on the CPU (no device
  work launched under them) — each instant counted for the innermost op recorded there, so an op's
  children without the batch dimension keep their time — takes F × its time; a segment inside a
  DataLoader call takes F × its time. A batch op that launches device work spends its host time
  dispatching and launching, a cost per call: kept, as are the launch calls.
* Device: kernels and copies launched by a batch op take F × their time.

The batch size is given (``--batch 32:64``): a dimension of that size is taken as the batch's. A
model dimension of the same size would be taken for it too (pick the change's sizes to see).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import I64, interval_set
from stepscope.analysis.hier import any_descendant
from stepscope.analysis.platform import NO_PYTORCH_OPS, hint_for
from stepscope.analysis.whatif.graph import SEG_HOST, SEG_INPUT, StepGraph
from stepscope.analysis.whatif.replay import Durations
from stepscope.model.masks import any_of
from stepscope.model.schema import HOST_KINDS
from stepscope.model.trace import Trace

B = npt.NDArray[np.bool_]


def _has_dim(text: str, size: int) -> bool:
    """Whether the JSON text of an op's ``Input Dims`` has a tensor dimension equal to ``size``."""
    try:
        dims = json.loads(text)
    except (ValueError, RecursionError):
        return False
    stack = [dims]
    while stack:
        x = stack.pop()
        if isinstance(x, list):
            stack.extend(x)
        elif type(x) is int and x == size:
            return True
    return False


def batch_ops(trace: Trace, rows: I64, batch_size: int) -> B:
    """Of the host events ``rows``: those with an input dimension of ``batch_size``."""
    ev = trace.events
    hit = trace.strings.mask(lambda s: s.startswith("[") and _has_dim(s, batch_size))
    return np.asarray(hit[ev["input_dims"][rows]], bool)


@dataclass(frozen=True)
class LargerBatch:
    """The batch ``factor`` × larger (``batch_size`` samples now): see the module docstring."""

    batch_size: int
    factor: float = 2.0
    name: str = field(default="larger-batch", init=False)

    def basis(self) -> str:
        return self._said(" and the device work they launch")

    def cpu_basis(self) -> str:
        return self._said("")

    def _said(self, launched: str) -> str:
        return (f"batch {self.batch_size} → {self.batch_size * self.factor:g}: ops on tensors with a dimension of "
                f"{self.batch_size} (their recorded input shapes){launched} take "
                f"{self.factor:g} × their time, the DataLoader fetches {self.factor:g} × the samples; an upper "
                "bound: larger tensors often run more efficiently")

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        ev = trace.events
        rows = np.flatnonzero((ev["rank"] == g.rank) & any_of(ev["kind"], [int(k) for k in HOST_KINDS]))
        if not (ev["input_dims"][rows] >= 0).any():
            raise NotApplicable("the trace has no input shapes " + hint_for(
                trace, "(capture with record_shapes=True)", f"({NO_PYTORCH_OPS})") +
                ": nothing says which work grows with the batch")
        batch = batch_ops(trace, rows, self.batch_size)
        op = ev["op"][g.device.row]  # the op that launched each device activity (its nearest CPU op)
        launched = np.zeros(len(ev), bool)
        launched[op[op >= 0]] = True
        on_cpu = ~any_descendant(ev["parent"], launched)[rows]
        share = _innermost_share(trace, g, rows, batch, on_cpu)
        seg = d.host_seg_ns.astype(np.float64)
        k = g.host.seg_kind
        grows = np.where(k == SEG_INPUT, 1.0, np.where(k == SEG_HOST, share, 0.0))
        seg *= 1.0 + grows * (self.factor - 1.0)
        by_batch = np.zeros(len(ev) + 1, bool)
        by_batch[rows[batch]] = True
        hit = by_batch[np.where(op >= 0, op, len(ev))]
        return replace(d.scaled(hit, self.factor), host_seg_ns=np.round(seg).astype(np.int64))


def _innermost_share(trace: Trace, g: StepGraph, rows: I64, batch: B, on_cpu: B) -> npt.NDArray[np.float64]:
    """Per host segment: the share of its length whose innermost host event is a batch op computing
    on the CPU (such an op's time less its children's that are not)."""
    ev = trace.events
    grows = batch & on_cpu
    parent = ev["parent"][rows]
    in_rows = np.zeros(len(ev) + 1, bool)
    in_rows[rows[grows]] = True
    under = in_rows[np.where(parent >= 0, parent, len(ev))]
    t = g.host.t_ns
    lo, hi = t[:-1], t[1:]
    covered = intervals.covered_in_windows(interval_set(trace, rows[grows]), lo, hi).astype(np.float64)
    carved = intervals.covered_in_windows(interval_set(trace, rows[under & ~grows]), lo, hi)
    own = np.maximum(covered - carved, 0.0)
    share: npt.NDArray[np.float64] = np.divide(own, hi - lo, out=np.zeros(len(own)), where=hi > lo)
    return np.minimum(share, 1.0)
