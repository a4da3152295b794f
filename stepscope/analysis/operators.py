"""Operator view (SPEC §4, TB "Operator"): host ops by name and by name + input shapes.

Semantics follow the TB plugin:

* operators are ``cpu_op`` events, minus the wrappers TB leaves out (``ProfilerStep#``,
  ``enumerate(DataLoader)#…__next__``, ``Optimizer.*``, ``DataParallel.forward``,
  ``DistributedDataParallel.forward``);
* an op whose only child is an op of the same name is merged into it (autograd's
  ``_remove_dup_nodes``): one call, the parent's duration, both self times;
* host self = duration − children (ops, annotations, runtime calls); device self = GPU time
  (kernels, copies, sets) launched directly by the op; device total = also by its descendants;
* TC eligible = the op (or any op below it) is in the Tensor-Core op table or launched a
  Tensor-Core kernel; TC self / total % = Tensor-Core kernel time / device self / total time.

Scope: every op of the rank, inside steps or not (as TB).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis._groups import group_keys, largest_first
from stepscope.analysis._memo import per_rank
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.frames import TableResult
from stepscope.analysis.hier import any_descendant, sum_to_ancestors
from stepscope.analysis.platform import has_device
from stepscope.analysis.tensor_cores import tc_eligible_mask, tc_kernel_mask
from stepscope.model.masks import any_of
from stepscope.model.schema import GPU_KINDS, EventKind
from stepscope.model.trace import Trace

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]
S = npt.NDArray[np.object_]

EXCLUDED_OPS = ("DataParallel.forward", "DistributedDataParallel.forward")


def is_excluded_op(name: str) -> bool:
    """The wrappers TB does not list as operators."""
    return (name.startswith(("ProfilerStep#", "Optimizer.", "enumerate(DataPipe)#"))
            or (name.startswith("enumerate(DataLoader)#") and name.endswith(".__next__"))
            or name in EXCLUDED_OPS)


@dataclass(frozen=True)
class OperatorTable(TableResult):
    """Operators grouped by name (and input shapes when ``input_shape`` is set); times ns."""

    name: S
    input_shape: S  # "" when grouped by name only or when not recorded
    calls: I64
    host_self_ns: I64
    host_total_ns: I64
    device_self_ns: I64
    device_total_ns: I64
    tc_eligible: B
    tc_self_pct: F64
    tc_total_pct: F64
    call_stacks: I64  # distinct recorded call stacks

    def columns(self) -> dict[str, npt.NDArray[np.generic]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class CallStackTable(TableResult):
    """Operators by name + recorded call stack (only where ``with_stack`` recorded one)."""

    name: S
    call_stack: S
    calls: I64
    host_self_ns: I64
    device_self_ns: I64

    def columns(self) -> dict[str, npt.NDArray[np.generic]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class OperatorView:
    """The operator view of one rank."""

    rank: int
    by_name: OperatorTable
    by_name_shape: OperatorTable
    call_stacks: CallStackTable
    has_shapes: bool
    has_call_stacks: bool
    has_device: bool = True  # False: a CPU-only run (no device time, no Tensor Cores to speak of)


@dataclass(frozen=True)
class _RowStats:
    """Per event row (length n): what each counted op row contributes."""

    rows: I64  # counted op rows
    host_self: F64
    device_self: F64
    device_total: F64
    tc_self: F64
    tc_total: F64
    eligible: B


def _merge_targets(trace: Trace, ops: B) -> I64:
    """Row each op row counts as: itself, or the same-name parent it is merged into (chains resolved)."""
    ev = trace.events
    n = len(ev)
    parent = ev["parent"].astype(np.int64)
    node = any_of(ev["kind"], [EventKind.CPU_OP, EventKind.USER_ANNOTATION, EventKind.PYTHON_FUNCTION])
    has_p = node & (parent >= 0)
    children = np.bincount(parent[has_p], minlength=n)
    pc = np.maximum(parent, 0)
    merge = ops & (parent >= 0) & ops[pc] & (ev["name"] == ev["name"][pc]) & (children[pc] == 1)
    target = np.arange(n, dtype=np.int64)
    target[merge] = parent[merge]
    while True:  # resolve chains a→a→a by pointer jumping
        nxt = target[target]
        if np.array_equal(nxt, target):
            return target
        target = nxt


def _row_stats(trace: Trace, rank: int) -> _RowStats:
    ev = trace.events
    n = len(ev)
    pool = trace.strings
    ops = (ev["rank"] == rank) & (ev["kind"] == EventKind.CPU_OP) & ~pool.mask(is_excluded_op)[ev["name"]]
    target = _merge_targets(trace, ops)
    counted = np.flatnonzero(ops & (target == np.arange(n))).astype(np.int64)
    host_self = np.bincount(target[ops], weights=ev["self_ns"][ops], minlength=n).astype(np.float64)
    gpu = np.flatnonzero((ev["rank"] == rank) & any_of(ev["kind"], [int(k) for k in GPU_KINDS])
                         & (ev["op"] >= 0))
    dur = ev["dur_ns"][gpu].astype(np.float64)
    tc = tc_kernel_mask(pool)[ev["name"][gpu]] & (ev["kind"][gpu] == EventKind.KERNEL)
    owner = target[ev["op"][gpu]]
    dev_self = np.bincount(owner, weights=dur, minlength=n).astype(np.float64)
    tc_self = np.bincount(owner, weights=dur * tc, minlength=n).astype(np.float64)
    parent = ev["parent"]
    dev_total = sum_to_ancestors(parent, owner, dur, n)
    tc_total = sum_to_ancestors(parent, owner, dur * tc, n)
    eligible = ops & (tc_eligible_mask(pool)[ev["name"]] | (tc_self > 0))
    eligible = any_descendant(parent, eligible) & ops
    return _RowStats(counted, host_self, dev_self, dev_total, tc_self, tc_total, eligible)


def _table(trace: Trace, rs: _RowStats, inv: I64, groups: int, names: I32, shapes: S) -> OperatorTable:
    r = rs.rows
    ev = trace.events

    def total(w: npt.ArrayLike) -> F64:
        return np.bincount(inv, weights=w, minlength=groups).astype(np.float64)

    dev_self, dev_total = total(rs.device_self[r]), total(rs.device_total[r])
    host_self = total(rs.host_self[r])
    stack = ev["call_stack"][r].astype(np.int64)
    has = stack >= 0
    (pair_group, _), _ = group_keys(inv[has], stack[has])
    o = np.lexsort((-host_self, -dev_self))
    return OperatorTable(
        name=trace.strings.decode(names)[o], input_shape=shapes[o],
        calls=np.bincount(inv, minlength=groups).astype(np.int64)[o],
        host_self_ns=np.rint(host_self).astype(np.int64)[o],
        host_total_ns=np.rint(total(ev["dur_ns"][r])).astype(np.int64)[o],
        device_self_ns=np.rint(dev_self).astype(np.int64)[o],
        device_total_ns=np.rint(dev_total).astype(np.int64)[o],
        tc_eligible=(total(rs.eligible[r].astype(np.float64)) > 0)[o],
        tc_self_pct=np.where(dev_self > 0, total(rs.tc_self[r]) / np.maximum(dev_self, 1) * 100, 0.0)[o],
        tc_total_pct=np.where(dev_total > 0, total(rs.tc_total[r]) / np.maximum(dev_total, 1) * 100, 0.0)[o],
        call_stacks=np.bincount(pair_group, minlength=groups).astype(np.int64)[o])


def _call_stacks(trace: Trace, rs: _RowStats) -> CallStackTable:
    ev = trace.events
    r = rs.rows[ev["call_stack"][rs.rows] >= 0]
    (names, stacks), inv = group_keys(ev["name"][r], ev["call_stack"][r])
    g = len(names)
    host = np.bincount(inv, weights=rs.host_self[r], minlength=g)
    dev = np.bincount(inv, weights=rs.device_self[r], minlength=g)
    o = np.lexsort((-host, -dev))
    dec = trace.strings.decode
    return CallStackTable(name=dec(names[o].astype(np.int32)), call_stack=dec(stacks[o].astype(np.int32)),
                          calls=np.bincount(inv, minlength=g).astype(np.int64)[o],
                          host_self_ns=np.rint(host).astype(np.int64)[o],
                          device_self_ns=np.rint(dev).astype(np.int64)[o])


@per_rank
def compute_operators(trace: Trace, rank: int) -> OperatorView:
    """The operator view of one rank; NotApplicable when the rank recorded no host operators."""
    rs = _row_stats(trace, rank)
    if len(rs.rows) == 0:
        raise NotApplicable("no host operators (cpu_op events) in this trace")
    ev = trace.events
    (names,), inv = group_keys(ev["name"][rs.rows])
    empty = np.full(len(names), "", object)
    by_name = _table(trace, rs, inv, len(names), names.astype(np.int32), empty)
    (op_names, dims), inv2 = group_keys(ev["name"][rs.rows], ev["input_dims"][rs.rows])
    by_shape = _table(trace, rs, inv2, len(op_names), op_names.astype(np.int32),
                      trace.strings.decode(dims.astype(np.int32)))
    return OperatorView(rank=rank, by_name=by_name, by_name_shape=by_shape, call_stacks=_call_stacks(trace, rs),
                        has_shapes=bool((ev["input_dims"][rs.rows] >= 0).any()),
                        has_call_stacks=bool((ev["call_stack"][rs.rows] >= 0).any()) or _has_python_frames(trace, rank),
                        has_device=has_device(trace, rank))


def _has_python_frames(trace: Trace, rank: int) -> bool:
    """Whether ``with_stack=True`` recorded the stacks as Python frames (PyTorch 2.x), not as op args."""
    ev = trace.events
    return bool(((ev["kind"] == EventKind.PYTHON_FUNCTION) & (ev["rank"] == rank)).any())


__all__ = ["CallStackTable", "OperatorTable", "OperatorView", "compute_operators", "is_excluded_op",
           "largest_first"]
