"""Fusion candidates of one rank (HTA frequent CUDA kernel patterns, MSA fusion advice, SPEC §5).

* **Short-kernel sequences**: per stream, runs of ``length`` consecutive kernels that are all
  shorter than ``short_ns`` (10 µs by default); identical name sequences are counted (windows
  overlap: a run of 4 short kernels holds 2 sequences of 3). Sequences seen at least
  ``min_count`` times are fusion candidates (torch.compile, a custom fused kernel, CUDA Graphs),
  ranked by their summed kernel time.
* **Optimizer**: kernels launched inside ``Optimizer.step#...`` annotations, per optimizer step.
  ``foreach_or_fused`` kernels (``multi_tensor_apply``, ``foreach``, ``fused``) vs single-tensor
  ``elementwise`` ones. Verdict ``many-small-kernels`` when an optimizer step launches at least
  ``min_optimizer_kernels`` kernels and most are single-tensor elementwise; ``foreach-or-fused``
  when most are multi-tensor; ``mixed`` otherwise; ``none`` without optimizer annotations.
* **Elementwise runs**: chains of unfused elementwise kernels on one stream, queued back to back on
  tensors of one size, and what fusing each into one pass would save
  (:mod:`stepscope.analysis.elementwise_runs`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from stepscope.analysis._groups import largest_first
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import I64, is_optimizer_step, launched_inside, optimizer_steps, pct, rank_rows
from stepscope.analysis.elementwise_runs import ElementwiseRuns, compute_elementwise_runs
from stepscope.analysis.named import NamedRows, named_rows
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace
from stepscope.model.uniq import unique, unique_rows

SHORT_NS = 10_000
FOREACH = re.compile(r"multi_tensor_apply|foreach|fused", re.IGNORECASE)
ELEMENTWISE = re.compile(r"elementwise|pointwise|unrolled|vectorized|CatArray|reduce_kernel", re.IGNORECASE)


@dataclass(frozen=True)
class KernelSequences:
    """Frequent sequences of short kernels, most summed time first."""

    names: list[tuple[str, ...]]
    count: I64
    time_ns: I64
    example_first_row: I64  # the first kernel of one occurrence


@dataclass(frozen=True)
class OptimizerKernels:
    """Kernels launched inside optimizer steps."""

    step_count: int  # optimizer.step annotations
    kernel_count: int
    time_ns: int
    foreach_count: int
    elementwise_count: int
    verdict: str  # many-small-kernels | foreach-or-fused | mixed | none
    kernels: NamedRows  # evidence: the kernels
    name: str  # the optimizer's class (``SGD`` of ``Optimizer.step#SGD.step``), "optimizer" when unknown

    @property
    def kernels_per_step(self) -> float:
        return self.kernel_count / self.step_count if self.step_count else 0.0

    @property
    def elementwise_pct(self) -> float:
        return pct(self.elementwise_count, self.kernel_count)


@dataclass(frozen=True)
class FusionResult:
    rank: int
    short_ns: int
    short_kernel_count: int
    short_kernel_time_ns: int
    kernel_count: int
    sequences: KernelSequences
    optimizer: OptimizerKernels
    elementwise: ElementwiseRuns


def compute_fusion(trace: Trace, rank: int, short_ns: int = SHORT_NS, length: int = 3, min_count: int = 3,
                   min_optimizer_kernels: int = 20) -> FusionResult:
    """Frequent short-kernel sequences and the optimizer's kernel make-up of a rank."""
    ev = trace.events
    k = rank_rows(trace, rank, (int(EventKind.KERNEL),))
    if len(k) == 0:
        raise NotApplicable("no kernels on this rank")
    short = ev["dur_ns"][k] < short_ns
    return FusionResult(
        rank=rank, short_ns=short_ns, short_kernel_count=int(short.sum()),
        short_kernel_time_ns=int(ev["dur_ns"][k][short].sum()), kernel_count=len(k),
        sequences=_sequences(trace, k, short_ns, length, min_count),
        optimizer=_optimizer(trace, rank, k, min_optimizer_kernels),
        elementwise=compute_elementwise_runs(trace, rank))


def _sequences(trace: Trace, k: I64, short_ns: int, length: int, min_count: int) -> KernelSequences:
    ev = trace.events
    order = np.lexsort((ev["ts_ns"][k], ev["track"][k]))  # by stream, then time
    k = k[order]
    n = len(k) - length + 1
    if n <= 0:
        return KernelSequences([], np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    ok = ev["dur_ns"][k] < short_ns
    same = ev["track"][k]
    valid = np.ones(n, bool)
    for j in range(length):  # window positions, vectorised over kernels
        valid &= ok[j:j + n] & (same[j:j + n] == same[:n])
    starts = np.flatnonzero(valid)
    grams = np.stack([ev["name"][k][starts + j] for j in range(length)], axis=1)
    time = sum(ev["dur_ns"][k][starts + j] for j in range(length))
    if len(starts) == 0:
        return KernelSequences([], np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    uniq, first, inv = unique_rows(grams)
    count = np.bincount(inv)
    t = np.bincount(inv, weights=time)
    keep = np.flatnonzero(count >= min_count)
    texts = trace.strings.decode(uniq[keep]) if len(keep) else np.zeros((0, length), object)
    o = largest_first(t[keep], ["\0".join(row) for row in texts.tolist()])  # per sequence, not per event
    keep, names = keep[o], texts[o]
    return KernelSequences(names=[tuple(str(x) for x in row) for row in names],
                           count=count[keep].astype(np.int64), time_ns=t[keep].astype(np.int64),
                           example_first_row=k[starts[first[keep]]])


def optimizer_name(trace: Trace) -> str:
    """``SGD`` from the trace's first ``Optimizer.step#SGD.step`` name (string-pool order); "optimizer"
    when there is none."""
    ids = np.flatnonzero(trace.strings.mask(is_optimizer_step)[:-1])
    if len(ids) == 0:
        return "optimizer"
    return trace.strings[int(ids[0])].split("#", 1)[1].split(".", 1)[0]


def _optimizer(trace: Trace, rank: int, k: I64, min_kernels: int) -> OptimizerKernels:
    ev, pool = trace.events, trace.strings
    opt = optimizer_steps(trace, rank)
    rows = k[launched_inside(trace, k, opt)]
    foreach = pool.mask(lambda s: bool(FOREACH.search(s)))[ev["name"][rows]]
    elementwise = pool.mask(lambda s: bool(ELEMENTWISE.search(s)))[ev["name"][rows]] & ~foreach
    steps = len(unique(ev["ts_ns"][opt]))
    n, nf, ne = len(rows), int(foreach.sum()), int(elementwise.sum())
    if steps == 0 or n == 0:
        verdict = "none"
    elif n / steps >= min_kernels and ne > n / 2:
        verdict = "many-small-kernels"
    elif nf > n / 2:
        verdict = "foreach-or-fused"
    else:
        verdict = "mixed"
    return OptimizerKernels(steps, n, int(ev["dur_ns"][rows].sum()), nf, ne, verdict, named_rows(trace, rows),
                            optimizer_name(trace))
