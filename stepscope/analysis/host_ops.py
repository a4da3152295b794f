"""Host ops that launch no GPU work while the GPU idles (msprof-analyze's "schedule" analysis; SPEC
§6 row heavy-host-op-no-gpu).

The top-level ops of a rank's steps (children of ``ProfilerStep#N``, Python frames of a
``with_stack=True`` trace between them left out, inside the kept steps; in a trace without step
markers, the ops under no other op) that launch no GPU activity anywhere below them — no runtime or
driver call, no op a GPU activity links to — and, per op name, the time the GPU was idle while they
ran (the op's span minus the union of the rank's GPU activity). DataLoader ranges are left out (the
breakdown's ``dataloader`` category) and so are ops that wait for the device (``aten::item``,
``aten::to``, copies: the sync analysis'). Typical: metrics computed with numpy or on CPU tensors,
checkpoint or log writing, Python-side preprocessing inside the loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from stepscope.analysis import intervals
from stepscope.analysis._groups import group_keys
from stepscope.analysis._memo import per_rank
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.breakdown import is_dataloader
from stepscope.analysis.common import F64, I64, B, in_step_rows, kept_steps, rank_rows
from stepscope.analysis.hier import any_descendant
from stepscope.model.schema import GPU_KINDS, EventKind
from stepscope.model.trace import Trace
from stepscope.model.tree import highest_ancestor_while, nearest_marked_ancestor

#: ops that wait for the device (``.item()``, ``.cpu()``, copies): the sync analysis' business
SYNC_OPS = re.compile(r"^aten::(item|_local_scalar_dense|to|_to_copy|copy_|cpu|tolist|nonzero|equal)$")


def _skipped(name: str) -> bool:
    return is_dataloader(name) or SYNC_OPS.match(name) is not None


@dataclass(frozen=True)
class HostOpsResult:
    """Per name (in string-id order), the top-level ops that launch no GPU work: calls and the GPU
    idle time inside them, totals over the steps."""

    rank: int
    step_count: int  # steps the per-step numbers average over (0 without steps)
    names: tuple[str, ...]
    calls: I64
    gpu_idle_ns: F64

    def by_idle(self) -> list[int]:
        """Indices of the names, most GPU idle time first."""
        return [int(i) for i in np.argsort(-self.gpu_idle_ns, kind="stable").tolist()]


def compute_host_ops(trace: Trace, rank: int) -> HostOpsResult:
    """The rank's top-level ops without GPU work and the GPU idle time inside them, by name."""
    ev = trace.events
    top = cpu_only_top_ops(trace, rank)
    gpu = rank_rows(trace, rank, tuple(int(k) for k in GPU_KINDS))
    busy = intervals.union(ev["ts_ns"][gpu], ev["ts_ns"][gpu] + ev["dur_ns"][gpu])
    start, end = ev["ts_ns"][top].astype(np.int64), (ev["ts_ns"][top] + ev["dur_ns"][top]).astype(np.int64)
    idle_ns = (end - start - intervals.covered_in_windows(busy, start, end)).astype(np.float64)
    (ids,), inv = group_keys(ev["name"][top])
    return HostOpsResult(rank, len(kept_steps(trace, rank)), tuple(str(s) for s in trace.strings.decode(ids)),
                         np.bincount(inv, minlength=len(ids)).astype(np.int64),
                         np.bincount(inv, weights=idle_ns, minlength=len(ids)).astype(np.float64))


@per_rank
def cpu_only_top_ops(trace: Trace, rank: int) -> I64:
    """The rank's top-level ops (children of ``ProfilerStep#N`` in the kept steps; without step
    markers, the ops under no other op) that launch no GPU work below them — CPU work a CUDA graph
    cannot capture — DataLoader ranges and ops that wait for the device left out."""
    ev = trace.events
    gpu = rank_rows(trace, rank, tuple(int(k) for k in GPU_KINDS))
    if len(gpu) == 0:
        raise NotApplicable("no GPU activity")
    top = _top_ops(trace, rank)
    launches = any_descendant(ev["parent"], _launching(trace, gpu))
    out: I64 = top[~launches[top] & ~trace.strings.mask(_skipped)[ev["name"][top]]]
    return out


def copy_only_ops_of(trace: Trace, rank: int, calls: I64) -> I64:
    """The distinct ops that issue these launch calls (of copies) and launch no kernel: per call, its
    highest enclosing op below the step whose calls launch no kernel anywhere below it —
    ``torch.tensor(v, device="cuda")``'s ``aten::to`` at the top of the step, or the ``aten::to``
    inside a forward; never an op that also runs the model (SD 3.5's ``model_inference`` wraps the
    whole step and its 7 small copies: making those copies as one removes them, not the step)."""
    ev = trace.events
    calls = calls[calls >= 0].astype(np.int64)
    kernels = rank_rows(trace, rank, (int(EventKind.KERNEL),))
    if len(calls) == 0:
        return np.zeros(0, np.int64)
    ok = ev["kind"] == EventKind.CPU_OP
    if len(kernels):
        ok &= ~any_descendant(ev["parent"], _launching(trace, kernels))
    ok[trace.steps["row"][trace.steps["rank"] == rank]] = False
    issuer = highest_ancestor_while(ev["parent"], calls, ok)
    return np.unique(issuer[issuer >= 0])


@per_rank
def _top_ops(trace: Trace, rank: int) -> I64:
    """The rank's top-level ops: children of ``ProfilerStep#N`` in the kept steps, or, in a trace
    without step markers (the whole trace one window), the ops under no other op. Python frames
    (``with_stack=True``) are transparent: an op under frames under the step is top-level."""
    ev, st = trace.events, trace.steps
    step_rows = st["row"][st["rank"] == rank]
    host = in_step_rows(trace, rank, (int(EventKind.CPU_OP), int(EventKind.USER_ANNOTATION)))
    above = nearest_marked_ancestor(ev["parent"], host, ev["kind"] != EventKind.PYTHON_FUNCTION)
    top: I64 = host[np.isin(above, step_rows)] if len(step_rows) else host[above < 0]
    return top


def _launching(trace: Trace, gpu: I64) -> B:
    """Host rows that launch GPU work: the calls GPU activities link to as their launch, and every op
    they link to — not every runtime call: ``cudaStreamIsCapturing``, ``cudaGetDevice`` launch
    nothing (a CPU Adam step asks whether a graph is being captured: an H200 capture's 24 ms CPU
    optimizer step read as launching GPU work)."""
    ev = trace.events
    op, launch = ev["op"][gpu], ev["launch"][gpu]
    if not (op >= 0).any() and not (launch >= 0).any():
        raise NotApplicable("GPU activity is not linked to the host ops that launched it")
    marked = np.zeros(len(ev), bool)
    marked[launch[launch >= 0]] = True
    marked[op[op >= 0]] = True
    return marked


@per_rank
def top_self_op(trace: Trace, rank: int) -> tuple[str, int]:
    """The op name holding the most host self time inside the rank's steps, and that time (ns); ("", 0)
    where the steps hold no op. On a CPU-only rank that is where the model's CPU work goes (one
    ``aten::sort`` a step can be most of it: the verdict names it)."""
    ev = trace.events
    ops = in_step_rows(trace, rank, (int(EventKind.CPU_OP),))
    if len(ops) == 0:
        return "", 0
    names, inv = np.unique(ev["name"][ops], return_inverse=True)
    self_ns = np.bincount(inv.ravel(), weights=ev["self_ns"][ops].astype(np.float64), minlength=len(names))
    i = int(np.argmax(self_ns))
    return str(trace.strings[int(names[i])]), int(self_ns[i])
