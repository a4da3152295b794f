"""Op categories: every GPU activity and every operator that launched one in one category — GEMM,
attention, convolution, elementwise, normalisation, reduction, communication, memory, other —
with time, share and count per rank and per step.

A device row (kernel, copy, memset) takes, first match wins:

1. **communication** / **memory** when :mod:`stepscope.analysis.activity` calls it a communication
   kernel / a copy or memset (the one classification of device activity, shared by every view);
2. the category its **launching operator's name** names (the op is the innermost CPU op around the
   launch, ``events["op"]``; families in :data:`~stepscope.analysis.category_rules.OP_FAMILIES`) —
   for a kernel replayed from a CUDA / HIP graph, the op that launched it at capture instead
   (``events["capture_op"]``, when a capture trace was merged: docs/analyses/graphs.md);
3. the category its **kernel name** names (:data:`~stepscope.analysis.category_rules.KERNEL_FAMILIES`);
4. **other**.

An operator that launched device work takes the category its name names, else the category of the
largest part of its device time. ``time_ns`` sums the rows' durations; ``activities`` counts rows;
``ops`` counts launching operators (rows without one — GPU work launched before the profiler
started, say — are in ``unattributed_ns`` and in the time, not in ``ops``).

The same launchers grouped the way TraceLens groups them are in :attr:`CategoryView.tracelens`
(:mod:`stepscope.analysis.categories_tracelens`). Scope: every device row of the rank, inside
steps or not (as the kernel view).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis._groups import group_keys
from stepscope.analysis._memo import per_trace
from stepscope.analysis.activity import Activity, activity_of
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.categories_tracelens import TraceLensTable, tracelens_table
from stepscope.analysis.category_rules import CATEGORY_NAMES, Category, kernel_family, op_family
from stepscope.analysis.common import rank_rows
from stepscope.analysis.frames import TableResult
from stepscope.analysis.gemm_shapes import GemmShapeTable, gemm_shapes
from stepscope.model.schema import GPU_KINDS
from stepscope.model.strings import matchable
from stepscope.model.trace import Trace
from stepscope.model.uniq import unique

I8 = npt.NDArray[np.int8]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
S = npt.NDArray[np.object_]
N_CATEGORIES = len(Category)


@dataclass(frozen=True)
class CategoryTable(TableResult):
    """One row per category (all nine), most time first."""

    category: S
    ops: I64  # launching operators in the category
    activities: I64  # device rows (kernels, copies, memsets)
    time_ns: I64
    share_pct: F64  # of the rank's device time

    def columns(self) -> dict[str, npt.NDArray[np.generic]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class CategoryView:
    """The op categories of one rank."""

    rank: int
    table: CategoryTable
    step: I32  # the rank's profiled steps
    step_time_ns: I64  # (steps, categories): device time per step and category, Category order
    total_ns: int  # device time of the rank
    unattributed_ns: int  # device time without a launching operator (nor a capture-time op)
    tracelens: TraceLensTable  # the launchers as TraceLens groups them
    gemm: GemmShapeTable  # the GEMM calls per shape: FLOPs, bytes, achieved rates

    def step_total_ns(self) -> I64:
        out: I64 = self.step_time_ns.sum(axis=1)
        return out


def name_codes(trace: Trace, ids: I32, classify: Callable[[str], int], default: int) -> I8:
    """Per string id (index with a name column): ``classify`` of each of the distinct ``ids`` (their
    first ``MATCH_PREFIX`` characters), ``default`` for every other string — only the names that
    matter are classified."""
    out = np.full(len(trace.strings) + 1, default, np.int8)
    ids = unique(ids[ids >= 0])
    out[ids] = [classify(matchable(trace.strings[int(i)])) for i in ids.tolist()]  # per distinct name
    return out


@per_trace
def row_categories(trace: Trace) -> I8:
    """One :class:`Category` code per event row; -1 for rows that are not device activity."""
    ev = trace.events
    act = activity_of(trace)
    device = act != Activity.NONE
    op = ev["op"]
    launched = device & (op >= 0)
    op_codes = name_codes(trace, ev["name"][op[launched]], op_family, -1)
    out = name_codes(trace, ev["name"][device], kernel_family, Category.OTHER)[ev["name"]]
    op_cat = op_codes[ev["name"]]
    by_op = op_cat[np.where(launched, op, 0)]
    named = launched & (by_op >= 0)
    out[named] = by_op[named]
    cap = ev["capture_op"]
    captured = device & (cap >= 0)
    if captured.any():  # graph nodes: the op that launched them at capture, not the one around the replay
        by_cap = name_codes(trace, cap[captured], op_family, -1)[np.where(captured, cap, -1)]
        by_kernel = name_codes(trace, ev["name"][captured], kernel_family, Category.OTHER)[ev["name"]]
        out[captured] = np.where(by_cap[captured] >= 0, by_cap[captured], by_kernel[captured])
    out[act == Activity.COMMUNICATION] = Category.COMMUNICATION
    out[(act == Activity.MEMCPY) | (act == Activity.MEMSET)] = Category.MEMORY
    out[~device] = -1
    return out


def launcher_categories(trace: Trace, rows: I64, row_cat: I8) -> tuple[I64, I8]:
    """The operators that launched ``rows`` (device rows, ``row_cat`` their categories) and each one's
    category: the one its name names, else the category of the largest part of its rows' time (the
    lower code on a tie)."""
    ev = trace.events
    has = ev["op"][rows] >= 0
    rows, row_cat = rows[has], row_cat[has]
    if len(rows) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int8)
    (ops, cats), inv = group_keys(ev["op"][rows], row_cat)
    time = np.bincount(inv, weights=ev["dur_ns"][rows], minlength=len(ops))
    order = np.lexsort((cats, -time, ops))
    first = np.ones(len(order), bool)
    first[1:] = ops[order][1:] != ops[order][:-1]
    launchers, major = ops[order][first], cats[order][first].astype(np.int8)
    named = name_codes(trace, ev["name"][launchers], op_family, -1)[ev["name"][launchers]]
    return launchers, np.where(named >= 0, named, major).astype(np.int8)


def _table(counts: I64, activities: I64, time: I64) -> CategoryTable:
    total = max(int(time.sum()), 1)
    o = np.argsort(-time, kind="stable")
    names = np.array(CATEGORY_NAMES, dtype=object)
    return CategoryTable(category=names[o], ops=counts[o], activities=activities[o], time_ns=time[o],
                         share_pct=time[o] / total * 100.0)


def _per_step(trace: Trace, rank: int, rows: I64, cat: I8) -> tuple[I32, I64]:
    st = trace.steps
    steps = np.unique(st["step"][st["rank"] == rank]).astype(np.int32)
    step_of = trace.events["step"][rows]
    ok = np.isin(step_of, steps)
    key = np.searchsorted(steps, step_of[ok]).astype(np.int64) * N_CATEGORIES + cat[ok]
    time = np.bincount(key, weights=trace.events["dur_ns"][rows][ok], minlength=len(steps) * N_CATEGORIES)
    return steps, np.rint(time).astype(np.int64).reshape(len(steps), N_CATEGORIES)


def compute_categories(trace: Trace, rank: int) -> CategoryView:
    """The op categories of one rank; NotApplicable when it ran no device work."""
    rows = rank_rows(trace, rank, tuple(int(k) for k in GPU_KINDS))
    if len(rows) == 0:
        raise NotApplicable("no GPU activity in this trace (CPU-only run, or profiled without device activity)")
    ev = trace.events
    cat = row_categories(trace)[rows].astype(np.int64)
    dur = ev["dur_ns"][rows]
    time = np.rint(np.bincount(cat, weights=dur, minlength=N_CATEGORIES)).astype(np.int64)
    activities = np.bincount(cat, minlength=N_CATEGORIES).astype(np.int64)
    _, op_cat = launcher_categories(trace, rows, cat.astype(np.int8))
    ops = np.bincount(op_cat.astype(np.int64), minlength=N_CATEGORIES).astype(np.int64)
    step, step_time = _per_step(trace, rank, rows, cat.astype(np.int8))
    orphan = (ev["op"][rows] < 0) & (ev["capture_op"][rows] < 0)
    return CategoryView(rank=rank, table=_table(ops, activities, time), step=step, step_time_ns=step_time,
                        total_ns=int(dur.sum()), unattributed_ns=int(dur[orphan].sum()),
                        tracelens=tracelens_table(trace, rows), gemm=gemm_shapes(trace, rows))
