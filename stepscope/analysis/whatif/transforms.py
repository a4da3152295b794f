"""The changes a what-if can make to a step graph: each turns measured durations into new ones.

Every transformation states its basis (the model behind the new durations) in one line, shown
beside its prediction; several apply in order, so combined fixes are replayed together.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import ClassVar, Protocol

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis.activity import Activity, activity_of
from stepscope.analysis.arrivals import Arrivals, compute_arrivals
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.caching_allocator import ALLOC_CALL
from stepscope.analysis.common import I64, interval_set, launched_inside, rank_rows
from stepscope.analysis.compilation import inside_compilation, rank_compile_rows
from stepscope.analysis.convolutions import algo_search_rows
from stepscope.analysis.host_ops import copy_only_ops_of, cpu_only_top_ops
from stepscope.analysis.memcpy import compute_memcpy
from stepscope.analysis.sync import not_the_steps
from stepscope.analysis.whatif.fix_rank import fix_rank_basis, fixed_durations
from stepscope.analysis.whatif.graph import SEG_COMM, SEG_HOST, SEG_LAUNCH, StepGraph
from stepscope.analysis.whatif.loader import LoaderWorkers as LoaderWorkers  # the DataLoader's model, named here too
from stepscope.analysis.whatif.replay import Durations
from stepscope.model.schema import HOST_KINDS, EventKind
from stepscope.model.trace import Trace

B = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Select:
    """Which events a transformation touches: a regex on their name or on the name of the op that
    launched them (searched, case-sensitive), and/or explicit event rows. Empty: every event."""

    pattern: str | None = None
    rows: tuple[int, ...] = ()

    def mask(self, trace: Trace, rows: I64) -> B:
        if self.pattern is None and not self.rows:
            return np.ones(len(rows), bool)
        out = np.isin(rows, np.asarray(self.rows, np.int64)) if self.rows else np.zeros(len(rows), bool)
        if self.pattern is not None:
            rx = re.compile(self.pattern)
            hit = trace.strings.mask(lambda s: rx.search(s) is not None)
            ev = trace.events
            op = ev["op"][rows]
            out |= hit[ev["name"][rows]] | ((op >= 0) & hit[ev["name"][np.maximum(op, 0)]])
        return out


@dataclass(frozen=True)
class DropSyncs:
    """Blocking calls (sync calls, synchronous copies) whose name or launching op matches no longer
    block: the host goes on after the call's own cost (``.item()`` removed or made asynchronous).
    A collective's own calls (gloo's stream syncs) and the compiler's (autotuning) are not the
    step's: they keep blocking."""

    select: Select = Select()
    name: str = field(default="drop-syncs", init=False)
    device_part: ClassVar[str] = "the host's waits for a GPU (its sync calls and synchronous copies)"

    def basis(self) -> str:
        what = f" matching {self.select.pattern!r}" if self.select.pattern else ""
        return f"blocking calls{what} cost only their own call: the host no longer waits for the device"

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        hit = self.select.mask(trace, g.syncs.row) & ~not_the_steps(trace, g.rank, g.syncs.row) & g.syncs.droppable
        return replace(d, sync_dropped=d.sync_dropped | hit)


@dataclass(frozen=True)
class ScaleDevice:
    """Device activities whose name or launching op matches take ``factor`` × their time
    (Tensor Cores / AMP, a fused kernel, a faster algorithm)."""

    select: Select = Select()
    factor: float = 0.5
    name: str = field(default="scale-device", init=False)
    device_part: ClassVar[str] = "a GPU's kernels and copies"

    def basis(self) -> str:
        what = f" matching {self.select.pattern!r}" if self.select.pattern else ""
        return f"device activities{what} take {self.factor:g} × their measured time"

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        return d.scaled(self.select.mask(trace, g.device.row), self.factor)


@dataclass(frozen=True)
class PinnedCopies:
    """Pageable host↔device copies from pinned memory: ``factor`` × their device time (pinned
    copies run at full bus bandwidth, commonly about twice pageable), and the host does not
    block on them (``non_blocking=True``)."""

    factor: float = 0.5
    name: str = field(default="pinned-copies", init=False)
    device_part: ClassVar[str] = "copies between the host and a GPU"

    def basis(self) -> str:
        return f"pageable copies pinned: {self.factor:g} × their device time, the host does not wait for them"

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        ev = trace.events
        rows = g.device.row
        pageable = (ev["kind"][rows] == EventKind.MEMCPY) & (ev["pageable"][rows] == 1)
        launch_of = ev["launch"][rows[pageable]]
        dropped = d.sync_dropped | (np.isin(g.syncs.row, launch_of[launch_of >= 0]) & g.syncs.droppable)
        return replace(d.scaled(pageable, self.factor), sync_dropped=dropped)


@dataclass(frozen=True)
class HostOverhead:
    """Launch calls and host work between them take ``factor`` × their time: everywhere (CUDA/HIP
    graphs, ``torch.compile``: the host replays a captured graph instead of launching op by op), or
    only inside host ops that match (a fused optimizer: ``Optimizer.step``). DataLoader and blocking
    calls are kept, and so, everywhere, is the time of the step's top-level ops that launch no device
    work (an SVD of a CPU tensor, numpy-backed metrics under an op), of ``torch.compile`` compiling and
    of cuDNN searching convolution algorithms: a graph captures device work only
    (:func:`~stepscope.analysis.host_ops.cpu_only_top_ops`), and no graph is captured while shapes change. On a
    rank that launches nothing (a CPU-only program) everywhere changes nothing: its host work is the
    model's own ops."""

    factor: float = 0.0
    select: Select = Select()
    name: str = field(default="host-overhead", init=False)

    @property
    def device_part(self) -> str | None:
        """Everywhere: the launches a CUDA / HIP graph captures (none on a CPU-only rank); inside ops: their host
        work (None)."""
        if self.select.pattern is not None or self.select.rows:
            return None
        return "a GPU's kernel launches (what a CUDA / HIP graph captures)"

    def cpu_basis(self) -> str:
        where = f" inside ops matching {self.select.pattern!r}" if self.select.pattern else " inside the ops chosen"
        return f"the host's work{where} takes {self.factor:g} × its time; the DataLoader is kept"

    def basis(self) -> str:
        where = f" inside ops matching {self.select.pattern!r}" if self.select.pattern else ""
        kept = "" if where else (", and so are top-level ops that launch no device work, compiling and "
                                 "convolution algorithm searches")
        return (f"launch calls and host work between them{where} take {self.factor:g} × their time; "
                f"the DataLoader and blocking calls are kept{kept}")

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        k = g.host.seg_kind
        share = ((k == SEG_LAUNCH) | (k == SEG_HOST)).astype(np.float64)
        if self.select.pattern is not None or self.select.rows:
            share *= _share_inside_ops(trace, g, self.select)
        elif not g.device.row.size:  # nothing launched: the host's work is the model's own ops, no graph holds it
            return d
        else:
            kept = np.union1d(np.union1d(_cpu_only_ops(trace, g.rank), rank_compile_rows(trace, g.rank)),
                              algo_search_rows(trace, g.rank))
            share *= 1.0 - share_inside_rows(trace, g, kept)
        seg = d.host_seg_ns.copy()
        hit = share > 0
        seg[hit] = np.round(seg[hit] * (1.0 - share[hit] * (1.0 - self.factor))).astype(np.int64)
        return replace(d, host_seg_ns=seg)


@dataclass(frozen=True)
class NoCompile:
    """``torch.compile`` compiling before the steps, not in them (no recompiles: the batch size marked
    dynamic, or fixed sizes): the host's time inside compilation ranges takes no time, and what the
    compiler launched and waited for (autotuning's benchmark runs and their syncs) goes with it."""

    name: str = field(default="no-compile", init=False)

    def basis(self) -> str:
        return f"{self.cpu_basis()}; the kernels and syncs of its autotuning go with it"

    def cpu_basis(self) -> str:
        return "the host's time inside torch.compile's compilation ranges takes no time"

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        rows = rank_compile_rows(trace, g.rank)
        if len(rows) == 0:
            return d
        k = g.host.seg_kind
        share = ((k == SEG_LAUNCH) | (k == SEG_HOST)) * share_inside_rows(trace, g, rows)
        seg = d.host_seg_ns.copy()
        seg = np.round(seg * (1.0 - share)).astype(np.int64)
        dropped = d.sync_dropped | inside_compilation(trace, g.syncs.row)
        return replace(d.scaled(launched_inside(trace, g.device.row, rows), 0.0), host_seg_ns=seg, sync_dropped=dropped)


@dataclass(frozen=True)
class BatchSmallCopies:
    """The step's small host↔device copies (the memcpy analysis' ``small_copies``, under 64 KiB)
    made as one: the ops that issue them and run no kernel (``torch.tensor(v, device="cuda")``'s
    ``aten::to``, a per-value ``.to(device)``: :func:`~stepscope.analysis.host_ops.copy_only_ops_of`)
    take no host time, the copies no device time, and the blocking calls inside those ops (a pageable
    copy's wait for the stream) no longer block."""

    name: str = field(default="batch-copies", init=False)
    device_part: ClassVar[str] = "small copies between the host and a GPU"

    def basis(self) -> str:
        return ("the ops that issue the small host-device copies (and run no kernel) take no host time, the copies no "
                "device time, and the waits inside those ops no longer block (the values built on the host, "
                "copied once)")

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        try:
            small = compute_memcpy(trace, g.rank).small_copies.names.rows
        except NotApplicable:  # no copies on the rank
            return d
        copies = np.isin(g.device.row, small)
        if not copies.any():
            return d
        ops = copy_only_ops_of(trace, g.rank, trace.events["launch"][g.device.row[copies]])
        if len(ops):  # (an empty Select is every event)
            d = HostOverhead(0.0, Select(rows=tuple(int(r) for r in ops))).change(trace, g, d)
        inside = intervals.contains(interval_set(trace, ops), trace.events["ts_ns"][g.syncs.row])
        return replace(d.scaled(copies, 0.0), sync_dropped=d.sync_dropped | (inside & g.syncs.droppable))


def _cpu_only_ops(trace: Trace, rank: int) -> I64:
    try:
        return cpu_only_top_ops(trace, rank)
    except NotApplicable:
        return np.zeros(0, np.int64)


def _share_inside_ops(trace: Trace, g: StepGraph, select: Select) -> npt.NDArray[np.float64]:
    rows = rank_rows(trace, g.rank, tuple(int(k) for k in HOST_KINDS))
    return share_inside_rows(trace, g, rows[select.mask(trace, rows)])


def share_inside_rows(trace: Trace, g: StepGraph, rows: I64) -> npt.NDArray[np.float64]:
    """Per host segment: the share of its measured length inside these host events. A segment is only
    cut where the device or the step needs a point, so on a CPU trace one segment holds the forward,
    backward and optimizer; only the matching part of it is scaled. A segment an earlier
    transformation changed is taken as changed evenly (exact after a change to all host work;
    approximate after one to other ops in the same segment)."""
    iv = interval_set(trace, rows)
    t = g.host.t_ns
    covered = intervals.covered_in_windows(iv, t[:-1], t[1:]).astype(np.float64)
    share: npt.NDArray[np.float64] = np.divide(covered, t[1:] - t[:-1], out=np.zeros(len(covered)),
                                               where=t[1:] > t[:-1])
    return share


#: the caching allocator's calls to the driver, as the caching_allocator analysis (and so
#: allocator-fragmentation's churn) counts them; ``cudaFree`` waits for the device (``sync.SYNC_PATTERN``)
ALLOCATOR_CALLS = ALLOC_CALL.pattern


@dataclass(frozen=True)
class KeepAllocations:
    """The caching allocator keeps its blocks (no ``torch.cuda.empty_cache()`` in the loop): its
    ``cudaMalloc`` / ``cudaFree`` calls take no time and no longer wait for the device — the same as
    ``--host-in ALLOCATOR_CALLS=0 --drop-syncs ALLOCATOR_CALLS``."""

    name: str = field(default="keep-allocations", init=False)
    device_part: ClassVar[str] = "a GPU's caching allocator (its cudaMalloc / cudaFree calls)"

    def basis(self) -> str:
        return "the allocator's cudaMalloc / cudaFree calls take no time and no longer wait for the device"

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        select = Select(ALLOCATOR_CALLS)
        return DropSyncs(select).change(trace, g, HostOverhead(0.0, select).change(trace, g, d))


#: the host annotation of an optimizer step (PyTorch's ``Optimizer.step#Adam.step``)
OPTIMIZER_STEP = r"^Optimizer\.step"
#: a fused / foreach optimizer's time against the per-tensor loop's, host and device (the advisor's
#: ``optimizer_fused_speedup`` default, 3); docs/whatif.md gives what an H200 pair measured
FUSED_OPTIMIZER_FACTOR = 1.0 / 3.0


@dataclass(frozen=True)
class OverlapComm:
    """Communication hidden under compute (the upper bound of overlapping it): communication kernels
    take ``factor`` × their time on their streams, and so does the host's time inside host-side
    collectives (gloo's all-reduce on the CPU)."""

    factor: float = 0.0
    name: str = field(default="overlap-comm", init=False)

    def basis(self) -> str:
        return (f"communication kernels and the host's time in collectives take {self.factor:g} × their time "
                "(fully overlapped with compute)")

    def cpu_basis(self) -> str:
        return (f"the host's time in collectives takes {self.factor:g} × its time (fully overlapped with the model's "
                "CPU work)")

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        comm = activity_of(trace)[g.device.row] == Activity.COMMUNICATION
        seg = d.host_seg_ns.copy()
        host = g.host.seg_kind == SEG_COMM
        seg[host] = np.round(seg[host] * self.factor).astype(np.int64)
        return replace(d.scaled(comm, self.factor), host_seg_ns=seg)




@dataclass(frozen=True)
class FixSlowRank:
    """A straggler fixed (:func:`~.fix_rank.fixed_durations`): ``rank`` arrives with the
    second-to-last rank at every collective it arrived last at; the other ranks' waits shrink as
    the job replay (:mod:`.job`) gives them."""

    rank: int
    name: str = field(default="fix-slow-rank", init=False)
    #: the job's arrivals, where the trace is one rank of the job (a run held rank by rank: .by_rank)
    arrivals: Arrivals | None = field(default=None, compare=False, repr=False)

    def basis(self) -> str:
        return fix_rank_basis(self.rank)

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        if g.rank != self.rank or (self.arrivals is None and len(trace.rank_ids) < 2):
            return d
        try:
            a = self.arrivals if self.arrivals is not None else compute_arrivals(trace)
        except NotApplicable:
            return d
        return fixed_durations(g, d, a, activity_of(trace)[g.device.row] == Activity.COMMUNICATION)


class Transform(Protocol):
    """A change to a step graph's durations: each transformation here, and the larger ones beside this
    module (``batch.py``, ``channels_last.py``, ``precision.py``, ``kernel_remedies.py``, ``unprofiled.py``,
    ``zero_grad.py``), states its basis in one line and turns durations into new ones."""

    @property
    def name(self) -> str: ...

    def basis(self) -> str: ...

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations: ...


def device_part(t: Transform) -> str | None:
    """What of a device's work a change acts on, where it acts on nothing else (its ``device_part``: Tensor-Core
    math, kernel grids, host-device copies, launches, device syncs), else None: on a trace without a device
    (a CPU-only run) such a change has nothing to act on, ever."""
    part = getattr(t, "device_part", None)
    return part if isinstance(part, str) else None


def basis_for(t: Transform, device: bool) -> str:
    """The change's basis as said for a trace with a device (``basis()``), or, without one, in a CPU-only
    program's terms where its basis names kernels or launches (its ``cpu_basis()``, where it has one)."""
    cpu = getattr(t, "cpu_basis", None)
    return str(cpu()) if not device and callable(cpu) else t.basis()
