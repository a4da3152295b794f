"""The step without the profiler's own cost: every op the profiler recorded cost the host some µs that
the unprofiled program does not spend.

PyTorch's profiler pays, for each op it records, its ``RecordFunction`` callbacks (the inputs' shapes
and types with ``record_shapes``) and CUPTI's callbacks on the runtime calls the op makes — host time
that lands in the recorded host timeline, inside the ops' spans and in the gaps between them. A step
whose host issues thousands of small ops can look host-bound with the profiler on and be GPU-bound
without it. Measured on real models captured on an H200 (``tests/data/h200_models``: the recorded
traces against the same programs timed without the profiler, two runs of 20 steps each), removing
:data:`EVENT_COST_NS` (8 µs) per recorded op reproduces the unprofiled step of every host-heavy case
within 7 %: GPT-2 bf16 training 72.9 / 82.2 ms recorded → 35.6 / 36.4 predicted, 34.0 measured; BERT
fine-tuning 80.0 → 28.3, 28.3 measured; GPT-2 decoding 439.6 → 204.7, 201.5 measured; ResNet-50
channels-last 49.4 / 41.5 → 29.8 / 30.0, 29.9 measured. The runtime and driver calls keep their
recorded time: a launch costs µs without a profiler too, so a host of launches keeps a floor (a BERT
inference trace of TraceLens', 4.4 ms recorded with 0.3 ms of kernels, stays host-bound). The cost
is the profiler's and the host's, not the model's: a constant calibrated on NVIDIA CUPTI traces,
applied there only (:func:`calibrated_for`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from stepscope.analysis.common import I64
from stepscope.analysis.platform import platform_of
from stepscope.analysis.sync import driver_rows
from stepscope.analysis.whatif.graph import SEG_HOST, StepGraph
from stepscope.analysis.whatif.replay import Durations
from stepscope.model.masks import any_of
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

#: the profiler's host cost per recorded op (aten op, annotation, Python frame), the CUPTI callbacks of
#: the runtime calls inside it included; calibrated on NVIDIA CUPTI traces with ``record_shapes``
EVENT_COST_NS = 8_000
RECORDED_KINDS = (EventKind.CPU_OP, EventKind.USER_ANNOTATION, EventKind.PYTHON_FUNCTION)


def calibrated_for(trace: Trace, rank: int) -> bool:
    """The per-event cost was measured on NVIDIA GPUs with CUPTI (PyTorch's CUDA profiler); ROCm's
    roctracer, Ascend's msprof and CPU-only runs were not measured."""
    return platform_of(trace, rank) == "cuda"


def recorded_ops(trace: Trace, rank: int) -> I64:
    """The ops the profiler recorded on the threads that drive the device (sorted rows)."""
    rows = driver_rows(trace, rank)
    out: I64 = rows[any_of(trace.events["kind"][rows], [int(k) for k in RECORDED_KINDS])]
    return out


@dataclass(frozen=True)
class WithoutProfiler:
    """Each op the profiler recorded costs ``cost_ns`` less: every host segment of host work is
    shortened by that cost times the recorded ops that start in it (never below 0); launch calls,
    DataLoader waits, blocking calls and host-run collectives keep their time (a launch costs µs
    without a profiler too; the others wait for someone else)."""

    cost_ns: int = EVENT_COST_NS
    name: str = field(default="unprofiled", init=False)

    def basis(self) -> str:
        return f"{self.cpu_basis()}; launch and blocking calls keep their time"

    def cpu_basis(self) -> str:
        return f"each op the profiler recorded costs {self.cost_ns / 1e3:g} µs less: the profiler's own cost per op"

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        t = g.host.t_ns
        if len(t) < 2 or self.cost_ns <= 0:
            return d
        starts = trace.events["ts_ns"][recorded_ops(trace, g.rank)]
        seg = np.searchsorted(t, starts, side="right") - 1
        seg = seg[(seg >= 0) & (seg < len(t) - 1)]
        count = np.bincount(seg, minlength=len(t) - 1)
        kind = g.host.seg_kind
        cut = np.where(kind == SEG_HOST, count * self.cost_ns, 0)
        return replace(d, host_seg_ns=np.maximum(d.host_seg_ns - cut, 0).astype(np.int64))
