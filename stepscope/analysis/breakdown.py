"""Step time breakdown and throughput, by the TensorBoard plugin's rules (SPEC §4).

Step boundaries (TB ``StepParser``): each ``ProfilerStep#N`` host span is stretched to the end of the
GPU work launched by runtime calls lying wholly inside it, and starts no earlier than the previous
step's (stretched) end; the first step starts after the GPU work launched before it, when that ends
before the step's own GPU work. A trailing step whose launched-GPU count is below 80 % of the one before
is dropped (the profiler likely missed its kernels). Without ``ProfilerStep`` the rank's host and
device extent is one window, starting at the first device activity when that activity was queued
behind work the trace does not show (:func:`_whole_trace_window`). Every view's step windows are these
(:func:`stepscope.analysis.common.step_windows`), so a step has one length everywhere.

Attribution: within the steps, categories are claimed in priority order
Kernel > Memcpy > Memset > Communication > Runtime > DataLoader > CPU Exec > Other, each taking only
the time no higher category took, so the categories of a step sum exactly to the step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis._memo import per_rank
from stepscope.analysis.activity import is_comm_row
from stepscope.analysis.frames import TableResult
from stepscope.model.masks import any_of
from stepscope.model.schema import GPU_KINDS, EventKind
from stepscope.model.trace import Trace

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]

CATEGORIES = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other")
COMM_OPS = ("nccl:", "gloo:", "c10d::", "hccl:", "rccl:")
TAIL_DROP_RATIO = 0.8
#: a device activity starting this long after its launch returned was queued behind other work
QUEUED_NS = 1_000_000


@dataclass(frozen=True)
class StepWindows(TableResult):
    """The TB step windows of one rank (ns). ``step`` is N of ProfilerStep#N, -1 for the whole trace."""

    step: I32
    start_ns: I64
    end_ns: I64
    host_start_ns: I64
    host_end_ns: I64
    launched_gpu_count: I64  # GPU activities launched inside each step's host span
    dropped_tail_steps: int

    def columns(self) -> dict[str, npt.NDArray[np.generic]]:
        return {"step": self.step, "start_ns": self.start_ns, "end_ns": self.end_ns,
                "host_start_ns": self.host_start_ns, "host_end_ns": self.host_end_ns,
                "launched_gpu_count": self.launched_gpu_count}

    @property
    def dur_ns(self) -> I64:
        return self.end_ns - self.start_ns


def is_dataloader(name: str) -> bool:
    """TB's DataLoader marker: ``enumerate(DataLoader)#...__next__`` or ``enumerate(DataPipe)#...``."""
    return (name.startswith("enumerate(DataLoader)#") and name.endswith(".__next__")) \
        or name.startswith("enumerate(DataPipe)#")


def _host_steps(trace: Trace, rank: int) -> tuple[I32, I64, I64]:
    st = trace.steps
    mine = np.flatnonzero(st["rank"] == rank)
    mine = mine[np.argsort(st["start_ns"][mine], kind="stable")]
    return st["step"][mine].astype(np.int32), st["start_ns"][mine], st["host_end_ns"][mine]


def _whole_trace_window(trace: Trace, rank: int) -> StepWindows:
    """A rank without ProfilerStep: one window from its first host or device event to its last.

    When the first device activity waited more than :data:`QUEUED_NS` after its launch, the device
    was busy with work the trace does not show (a window cut from a longer run): the window then
    starts at that activity, since the host time before it is not time the device waited for."""
    ev = trace.events
    mine = ev["rank"] == rank
    gpu = np.flatnonzero(mine & any_of(ev["kind"], [int(k) for k in GPU_KINDS]))
    host = np.flatnonzero(mine & any_of(ev["kind"], [EventKind.CPU_OP, EventKind.USER_ANNOTATION]))
    ts, end = ev["ts_ns"], ev["ts_ns"] + ev["dur_ns"]
    if len(gpu) + len(host) == 0:
        empty = np.zeros(0, np.int64)
        return StepWindows(np.zeros(0, np.int32), empty, empty, empty, empty, empty, 0)
    lo = int(ts[np.concatenate([gpu, host])].min())
    hi = int(end[np.concatenate([gpu, host])].max())
    if len(gpu):
        first = int(gpu[np.argmin(ts[gpu])])
        la = int(ev["launch"][first])
        if la >= 0 and int(ts[first]) - int(end[la]) > QUEUED_NS:
            lo = int(ts[first])
    one = np.array([lo], np.int64), np.array([hi], np.int64)
    return StepWindows(np.array([-1], np.int32), *one, *one, np.array([len(gpu)], np.int64), 0)


@per_rank
def tb_step_windows(trace: Trace, rank: int) -> StepWindows:
    """Step windows of a rank following the TB plugin (see the module docstring)."""
    step, hs, he = _host_steps(trace, rank)
    if len(step) == 0:
        return _whole_trace_window(trace, rank)
    n = len(step)
    gpu, pc, inside = launched_in_steps(trace, rank, hs, he)
    ev = trace.events
    g_ts, g_end = ev["ts_ns"][gpu], ev["ts_ns"][gpu] + ev["dur_ns"][gpu]
    count = np.bincount(pc[inside], minlength=n).astype(np.int64)[:n]
    dmin = np.full(n, np.iinfo(np.int64).max)
    dmax = np.full(n, np.iinfo(np.int64).min)
    np.minimum.at(dmin, pc[inside], g_ts[inside])
    np.maximum.at(dmax, pc[inside], g_end[inside])
    start, end = stretch_windows(hs, he, dmin, dmax, count, g_end[~inside])
    keep = _kept_steps(count) if count.any() else n
    return StepWindows(step[:keep], start[:keep], end[:keep], hs[:keep], he[:keep], count[:keep], n - keep)


def launched_in_steps(trace: Trace, rank: int, hs: I64, he: I64) -> tuple[I64, I64, npt.NDArray[np.bool_]]:
    """The rank's device rows, the host step each was launched in (clipped to 0) and whether its
    launch call lies wholly inside that step's host span (the work the step's window stretches over)."""
    ev = trace.events
    gpu = np.flatnonzero((ev["rank"] == rank) & any_of(ev["kind"], [int(k) for k in GPU_KINDS]))
    launch = ev["launch"][gpu].astype(np.int64)
    lt = ev["ts_ns"][np.maximum(launch, 0)]
    le = lt + ev["dur_ns"][np.maximum(launch, 0)]
    pos = np.searchsorted(hs, lt, side="right") - 1
    pc = np.maximum(pos, 0)
    inside = (launch >= 0) & (pos >= 0) & (lt >= hs[pc]) & (le <= he[pc]) if len(hs) else np.zeros(len(gpu), bool)
    return gpu, pc, inside


def stretch_windows(hs: I64, he: I64, dmin: I64, dmax: I64, count: I64, outside_end: I64) -> tuple[I64, I64]:
    """Stretch host steps over their GPU work; each starts no earlier than the previous one ends."""
    n = len(hs)
    start, end = hs.copy(), he.copy()
    if n == 0 or not count.any():
        return start, end
    prev = int(hs[0])
    if count[0] > 0:
        before = outside_end[outside_end < dmin[0]]
        if len(before):
            prev = max(prev, int(before.max()))
    for i in range(n):  # sequential by definition: each step starts where the previous one ended
        start[i] = max(prev, int(hs[i]))
        end[i] = max(int(he[i]), int(dmax[i])) if count[i] else max(int(he[i]), int(start[i]))
        end[i] = max(end[i], start[i])
        prev = int(end[i])
    return start, end


def _kept_steps(count: I64) -> int:
    """How many leading steps to keep: trailing steps that launched (almost) nothing are dropped."""
    n = len(count)
    if n <= 1:
        return n
    launched = np.flatnonzero(count > 0)
    last = int(launched[-1])
    keep = last + 1
    if last > 0 and count[last - 1] * TAIL_DROP_RATIO > count[last]:
        keep = last
    return keep


def role_masks(trace: Trace, rank: int) -> list[B]:
    """One event mask per category except "other", in priority order (see :data:`CATEGORIES`)."""
    ev, pool = trace.events, trace.strings
    kind, name = ev["kind"], ev["name"]
    mine = ev["rank"] == rank
    comm_kernel = is_comm_row(trace)
    dl = pool.mask(is_dataloader)[name]
    step_name = pool.mask(lambda s: s.startswith("ProfilerStep#"))[name]
    step_rows = trace.steps["row"][trace.steps["row"] >= 0]
    step_name[step_rows] = True  # the ranges that mark the steps (ProfilerStep#N, or a repeating range)
    comm_op = pool.mask(lambda s: s.startswith(COMM_OPS))[name]
    old_python = pool.mask(lambda s: s.strip().lower() == "python")[ev["cat"]]
    annotated = any_of(kind, [EventKind.CPU_OP, EventKind.USER_ANNOTATION]) | (
        (kind == EventKind.PYTHON_FUNCTION) & old_python)
    kernel = kind == EventKind.KERNEL
    return [
        mine & kernel & ~comm_kernel,
        mine & (kind == EventKind.MEMCPY),
        mine & (kind == EventKind.MEMSET),
        mine & ((kernel & comm_kernel) | (kind == EventKind.COMMUNICATION) | (annotated & comm_op)),
        mine & any_of(kind, [EventKind.RUNTIME, EventKind.DRIVER]),
        mine & any_of(kind, [EventKind.CPU_OP, EventKind.USER_ANNOTATION]) & dl,
        mine & annotated & ~dl & ~step_name & ~comm_op,
    ]


def attribute(trace: Trace, masks: list[B], start_ns: I64, end_ns: I64) -> I64:
    """Per window and category, the time each category claims by priority; shape (windows, categories)."""
    ev = trace.events
    ts, end = ev["ts_ns"], ev["ts_ns"] + ev["dur_ns"]
    free = intervals.union(start_ns, end_ns)
    out = np.zeros((len(start_ns), len(masks) + 1), np.int64)
    for i, m in enumerate(masks):
        claimed = intervals.intersect(free, intervals.union(ts[m], end[m]))
        out[:, i] = intervals.covered_in_windows(claimed, start_ns, end_ns)
        free = intervals.subtract(free, claimed)
    out[:, -1] = intervals.covered_in_windows(free, start_ns, end_ns)
    return out


@dataclass(frozen=True)
class StepBreakdown(TableResult):
    """Per-step wall time split into :data:`CATEGORIES` (ns), plus throughput.

    ============== ====================================================================
    step           ProfilerStep number (-1: the whole trace as one step)
    total_ns       step wall time (TB-stretched window)
    category_ns    (steps, 8) time per category, rows sum exactly to ``total_ns``
    reader_cost_ns DataLoader time per step (= category "dataloader")
    ============== ====================================================================
    """

    rank: int
    step: I32
    start_ns: I64
    end_ns: I64
    category_ns: I64
    dropped_tail_steps: int
    batch_size: int | None = None
    categories: tuple[str, ...] = CATEGORIES

    @property
    def total_ns(self) -> I64:
        return self.end_ns - self.start_ns

    @property
    def step_count(self) -> int:
        return len(self.step)

    @property
    def whole_trace(self) -> bool:
        """No step markers: the one window is the whole trace."""
        return bool(len(self.step)) and bool(self.step[0] < 0)

    @property
    def avg_step_ns(self) -> float:
        return float(self.total_ns.mean()) if len(self.step) else 0.0

    @property
    def avg_category_ns(self) -> F64:
        return self.category_ns.mean(axis=0) if len(self.step) else np.zeros(len(self.categories))

    @property
    def avg_category_pct(self) -> F64:
        avg = self.avg_step_ns
        return self.avg_category_ns / avg * 100.0 if avg > 0 else np.zeros(len(self.categories))

    @property
    def reader_cost_ns(self) -> I64:
        return self.category_ns[:, self.categories.index("dataloader")]

    @property
    def batch_cost_ns(self) -> I64:
        return self.total_ns

    @property
    def steps_per_s(self) -> float | None:
        return 1e9 / self.avg_step_ns if self.avg_step_ns > 0 else None

    @property
    def samples_per_s(self) -> float | None:
        sps = self.steps_per_s
        return sps * self.batch_size if sps is not None and self.batch_size else None

    def step_labels(self) -> list[str]:
        return [str(s) if s >= 0 else "all" for s in self.step.tolist()]

    def columns(self) -> dict[str, npt.NDArray[np.generic]]:
        cols: dict[str, npt.NDArray[np.generic]] = {"step": self.step, "total_ns": self.total_ns}
        for i, c in enumerate(self.categories):
            cols[f"{c}_ns"] = self.category_ns[:, i]
        return cols


@per_rank
def compute_breakdown(trace: Trace, rank: int) -> StepBreakdown:
    """The TB step time breakdown of one rank (throughput without a batch size; see :func:`with_batch_size`)."""
    win = tb_step_windows(trace, rank)
    cats = attribute(trace, role_masks(trace, rank), win.start_ns, win.end_ns)
    return StepBreakdown(rank, win.step, win.start_ns, win.end_ns, cats, win.dropped_tail_steps)


def with_batch_size(bd: StepBreakdown, batch_size: int | None) -> StepBreakdown:
    """The same breakdown, with samples/s known from the batch size."""
    return StepBreakdown(bd.rank, bd.step, bd.start_ns, bd.end_ns, bd.category_ns, bd.dropped_tail_steps,
                         batch_size)
