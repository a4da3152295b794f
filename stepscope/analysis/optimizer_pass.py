"""What one fused pass of a CPU optimizer would cost, from the per-tensor loop's own ops.

A fused CPU optimizer (``aten::_fused_adam_`` and its kin, PyTorch ≥ 2.4) reads and writes each
parameter's arrays once: param, grad and the state (Adam's ``exp_avg``, ``exp_avg_sq``) read, param and
the state written — for Adam seven arrays of the parameters' size. It is memory-bound, so its time is
those bytes over the memory bandwidth the host reaches. The per-tensor loop measures that bandwidth
itself: its in-place elementwise ops on large tensors (``lerp_``, ``mul_``, ``addcmul_``,
``addcdiv_``, ``add_``) each read their tensor inputs and write the first, with nothing allocated —
bytes moved over their recorded time. Out-of-place ops (``sqrt``, ``div``) are left out: a fresh
buffer's page faults, not the memory's speed, make most of their time. So the estimate needs the
recorded shapes (``record_shapes=True``) and at least one large in-place op; elsewhere there is none.

A capture on a 2-core VM (a 19.3 M-parameter dense embedding with ``Adam``): the loop's in-place ops
moved 1.15 GB in 18.9 ms a step (61 GB/s); seven arrays of 19.3 M floats at that rate are 8.8 ms,
and ``Adam(fused=True)`` measured 10.2 ms against the loop's 112.1 ms.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.comm import dtype_bytes
from stepscope.analysis.dims import numel, tensor_dims
from stepscope.analysis.fusion import FOREACH
from stepscope.model.trace import Trace

#: arrays a fused kernel reads and writes per parameter element, by optimizer class (PyTorch's CPU
#: fused kernels: Adam / AdamW param, grad, exp_avg, exp_avg_sq read, three written; SGD with momentum
#: param, grad, momentum buffer read, two written; Adagrad param, grad, state_sum read, two written)
FUSED_ARRAYS = {"Adam": 7, "AdamW": 7, "SGD": 5, "Adagrad": 5}
#: the torch.optim classes with a multi-tensor (``foreach=True``) implementation; SparseAdam and LBFGS have none
FOREACH_OPTIMIZERS = frozenset({"Adadelta", "Adagrad", "Adam", "Adamax", "AdamW", "ASGD", "NAdam", "RAdam",
                                "RMSprop", "Rprop", "SGD"})


def multi_tensor_kwargs(optimizer: str) -> str | None:
    """What to pass a torch.optim class to step its parameters together: ``fused=True`` (where it has a fused
    kernel) or ``foreach=True``; None for a class with neither (SparseAdam: both keywords are a TypeError). An
    optimizer the trace does not name ("optimizer") gets the general advice."""
    if optimizer in FUSED_ARRAYS:
        return "fused=True) or foreach=True"
    if optimizer in FOREACH_OPTIMIZERS:
        return "foreach=True)"
    return None if optimizer[:1].isupper() else "fused=True) or foreach=True"


#: an in-place op on a tensor of at least this many elements times the memory, not the call's overhead
LARGE_NUMEL = 1 << 15


@dataclass(frozen=True)
class OptimizerPass:
    """The per-tensor loop's parameter elements and the bandwidth its large in-place ops reached."""

    param_elems: int  # elements of the parameters stepped, per optimizer step
    elem_bytes: int  # bytes per element of the parameters (their recorded dtype)
    inplace_bytes: int  # bytes the large in-place ops moved (all optimizer steps)
    inplace_ns: int  # their time

    @property
    def bytes_per_ns(self) -> float:
        return self.inplace_bytes / max(self.inplace_ns, 1)

    def fused_ns(self, arrays: int) -> float:
        """One pass over ``arrays`` arrays of the parameters' size at the loop's bandwidth."""
        return arrays * self.param_elems * self.elem_bytes / max(self.bytes_per_ns, 1e-9)


@dataclass(frozen=True)
class _Shapes:
    """Per distinct ``Input Dims`` / ``Input type`` pair: the first input's elements, how many inputs
    have as many, and its element size."""

    first_numel: npt.NDArray[np.int64]
    same_size_inputs: npt.NDArray[np.int64]
    elem_bytes: npt.NDArray[np.int64]


def _shapes(trace: Trace, dims_ids: npt.NDArray[np.int64], type_ids: npt.NDArray[np.int64]) -> _Shapes:
    """:class:`_Shapes` of each pair (a loop over the distinct pairs: a few per parameter shape)."""
    first, same, size = (np.full(len(dims_ids), -1, np.int64) for _ in range(3))
    for i, (d, t) in enumerate(zip(dims_ids.tolist(), type_ids.tolist())):
        dims = tensor_dims(trace.strings[d]) if d >= 0 else None
        if not dims:
            continue
        n = numel(dims[0])
        first[i] = n
        same[i] = sum(1 for x in dims if numel(x) == n)
        size[i] = dtype_bytes(trace.strings[t]) if t >= 0 else -1
    return _Shapes(first, same, size)


def optimizer_pass(trace: Trace, ops: npt.NDArray[np.int64], step_count: int) -> OptimizerPass | None:
    """The pass of the optimizer's own ops ``ops`` over ``step_count`` steps; None without recorded shapes
    or without a large single-tensor in-place op."""
    ev = trace.events
    names = ev["name"][ops]
    inplace = trace.strings.mask(lambda s: s.endswith("_") and not FOREACH.search(s))[names]
    ops, names = ops[inplace], names[inplace]
    if len(ops) == 0 or step_count <= 0:
        return None
    pairs, inv = np.unique(np.stack([ev["input_dims"][ops].astype(np.int64), ev["input_types"][ops].astype(np.int64)]),
                           axis=1, return_inverse=True)
    s = _shapes(trace, pairs[0], pairs[1])
    n, same, size = s.first_numel[inv.ravel()], s.same_size_inputs[inv.ravel()], s.elem_bytes[inv.ravel()]
    large = n >= LARGE_NUMEL
    if not large.any():
        return None
    # each op reads its inputs of the first one's size and writes the first
    moved = (same[large] + 1) * n[large] * np.where(size[large] > 0, size[large], 4)
    elems = _param_elems(names, np.maximum(n, 0)) // step_count
    return OptimizerPass(int(elems), int(np.median(np.where(size[large] > 0, size[large], 4))),
                         int(moved.sum()), int(ev["dur_ns"][ops[large]].sum()))


def _param_elems(names: npt.NDArray[np.int32], numel_of: npt.NDArray[np.int64]) -> int:
    """Elements stepped: per in-place op name, the elements of its first inputs, summed; the fewest of the
    names that touch the parameters' size (a per-tensor optimizer runs each of them once per parameter,
    some twice — SGD's ``add_`` on the momentum buffer and on the parameter), not counting names that
    touch only small tensors (the step counters)."""
    ids, inv = np.unique(names, return_inverse=True)
    per_name = np.bincount(inv.ravel(), weights=numel_of, minlength=len(ids))
    touching = per_name[per_name >= 0.01 * per_name.max()] if len(per_name) else per_name
    return int(touching.min()) if len(touching) else 0
