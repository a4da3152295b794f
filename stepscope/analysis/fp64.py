"""Ops on float64 tensors: double precision where the model computes in float32.

A float64 tensor in a float32 model is almost always an accident: ``torch.from_numpy`` keeps numpy's
default float64, ``torch.tensor`` of Python floats with ``dtype=torch.float64``, a ``.double()`` or
``.to(torch.float64)`` for a "numerically safe" loss. Every op on it then runs at half the elements per
vector register and per byte of memory traffic on a CPU, and on a GPU at the device's FP64 rate (half the
FP32 rate on a data-centre GPU, 1/32-1/64 on others). Read from the recorded input types
(``record_shapes=True``): the ops in the steps with a ``double`` input, their own (self) host time, and the
device time of the work they launched.

An outside capture (2026-11-28, ``tests/data/cpu_cases/fp64_loss``): an MLP whose cross-entropy ran on the
logits cast to float64 — 231.7 ms a step recorded, the same program in float32 91.4 ms.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from stepscope.analysis._memo import per_rank
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import I64, in_step_rows, launched_by
from stepscope.analysis.critical_path import compute_critical_path
from stepscope.analysis.dims import numel, tensor_dims
from stepscope.analysis.named import NamedRows, named_rows
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

#: an op on a float64 tensor counts from this many elements in it (a 0-dim double — a Python float made a
#: tensor — costs its dispatch, which float32 would not shorten)
MIN_NUMEL = 1024


def _has_double(types_text: str) -> bool:
    """Whether an ``Input type`` list names ``double`` at all (a float64 tensor, or a Python float argument)."""
    return '"double"' in types_text


def _double_tensor(dims_text: str, types_text: str) -> bool:
    """Whether an input typed ``double`` is a tensor of at least :data:`MIN_NUMEL` elements (a Python float
    argument is typed ``double`` too, with no dimensions: ``x * 0.5`` on a bf16 tensor)."""
    dims = tensor_dims(dims_text) if dims_text else None
    try:
        types = json.loads(types_text)
    except (ValueError, RecursionError):
        return False
    if dims is None or not isinstance(types, list):
        return False
    return any(t == "double" and d and numel(d) >= MIN_NUMEL for t, d in zip(types, dims))


@dataclass(frozen=True)
class Float64Ops:
    """The rank's ops on float64 tensors in its steps."""

    rank: int
    step_count: int
    ops: NamedRows  # by name, their self time
    host_self_ns: int  # their own host time (children aside)
    device_rows: I64  # the device work they launched
    device_ns: int
    #: their time on the step's critical path, per step: on a CPU-only rank their own host time (the host is the
    #: path), on a device rank the device time of their work on the path
    on_path_ns: float

    @property
    def calls_per_step(self) -> float:
        return len(self.ops) / max(self.step_count, 1)


@per_rank
def compute_fp64(trace: Trace, rank: int) -> Float64Ops:
    """The rank's float64 ops in its steps (NotApplicable without recorded input types, or without any)."""
    ev = trace.events
    in_steps = in_step_rows(trace, rank, (int(EventKind.CPU_OP),))
    ops = in_steps[ev["input_types"][in_steps] >= 0]
    if len(ops) == 0:
        raise NotApplicable("no input types recorded")
    ops = ops[trace.strings.mask(_has_double)[ev["input_types"][ops]]]
    pairs, inv = np.unique(np.stack([ev["input_dims"][ops].astype(np.int64), ev["input_types"][ops].astype(np.int64)]),
                           axis=1, return_inverse=True)
    large = np.array([_double_tensor(trace.strings[int(d)] if d >= 0 else "", trace.strings[int(t)])
                      for d, t in zip(pairs[0].tolist(), pairs[1].tolist())], bool)
    ops = ops[large[inv.ravel()]] if len(ops) else ops
    if len(ops) == 0:
        raise NotApplicable("no op on a float64 tensor in the steps")
    steps = len(np.unique(ev["step"][in_steps]))
    dev = launched_by(trace, rank, ops)
    named = named_rows(trace, ops, dur_ns=ev["self_ns"][ops])
    host_ns, device_ns = int(ev["self_ns"][ops].sum()), int(ev["dur_ns"][dev].sum())
    return Float64Ops(rank, steps, named, host_ns, dev, device_ns, _on_path_ns(trace, rank, dev, host_ns, device_ns)
                      / max(steps, 1))


def _on_path_ns(trace: Trace, rank: int, dev: I64, host_ns: int, device_ns: int) -> float:
    """Their time on the critical path over the steps (see :attr:`Float64Ops.on_path_ns`)."""
    try:
        cp = compute_critical_path(trace, rank)
    except NotApplicable:
        return float(host_ns)
    if not cp.has_device:
        return float(host_ns)
    share = cp.on_path_share(trace, dev) if len(dev) else None
    return device_ns * (share or 0.0)
