"""All-to-all imbalance across ranks: expert-parallel (MoE) token exchange, and any other all-to-all.

**Which kernels** (the one classification, :mod:`.activity` / :mod:`.comm`): communication kernels of
type all-to-all (``ncclDevKernel_AllToAll``, the SendRecv kernels of an ``all_to_all`` /
``all_to_all_single`` op, ``record_param_comms`` "all_to_all"), and the expert-parallel dispatch /
combine kernels (DeepEP's ``intranode::dispatch`` / ``internode::combine``, pplx, or any
communication kernel whose name or launching op says dispatch / combine). Each is in one *phase*:
``dispatch``, ``combine`` (by its name or its op's), else ``all_to_all``.

**Per rank and step** (its step windows; :func:`all_to_all_record` is the per-rank step): the time
(the union of those kernels inside the window), the count, the bytes the rank *sends* (the op's
input size) and *receives* (its output size: for an ``all_to_all_single`` with uneven splits, the
tokens routed to this rank's experts), each op's size counted once however many kernels it launched.

**Across ranks** (:func:`combine_all_to_all`, on the steps every rank has, by ProfilerStep number):
per step the spread max / median of the ranks' time and received bytes and the rank that received
most (the hot expert rank) and took longest; per rank its means and the ratio to the median rank.
Time spread comes from the slowest peer (an all-to-all ends when the last rank's data arrives) and
from uneven bytes; a spread in *received bytes* is the routing imbalance itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis._memo import per_rank
from stepscope.analysis.activity import is_comm_row
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.comm import CollType, classify
from stepscope.analysis.common import I32, I64, interval_set, rank_rows, step_windows, window_of
from stepscope.analysis.frames import TableResult
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

F64 = npt.NDArray[np.float64]
PHASES = ("all_to_all", "dispatch", "combine")
_PHASE_RE = (re.compile(r"dispatch", re.IGNORECASE), re.compile(r"combine", re.IGNORECASE))


def phase_of(name: str) -> int:
    """Index in :data:`PHASES` of a kernel or op name: dispatch, combine, else 0 (all-to-all)."""
    for i, pat in enumerate(_PHASE_RE):
        if pat.search(name):
            return i + 1
    return 0


@dataclass(frozen=True)
class AllToAllRecord:
    """One rank's all-to-all kernels per step window (arrays aligned with ``step``)."""

    rank: int
    step: I32
    time_ns: I64  # union of the kernels inside the window
    phase_ns: I64  # (windows, PHASES): each phase's kernels' union inside the window
    count: I64
    bytes_out: I64  # (windows, PHASES): sent (ops' input sizes), known sizes only
    bytes_in: I64  # (windows, PHASES): received (ops' output sizes)
    sized: I64  # ops with a known size


@per_rank
def all_to_all_record(trace: Trace, rank: int) -> AllToAllRecord | None:
    """The rank's record (see the module docstring), None when it runs no all-to-all kernel."""
    ev, pool = trace.events, trace.strings
    cls = classify(trace)
    rows = rank_rows(trace, rank, (int(EventKind.KERNEL),))
    rows = rows[is_comm_row(trace)[rows]]
    op = cls.comm_op[rows]
    phase_k = pool.map(phase_of, np.int8, 0)[ev["name"][rows]]
    phase_o = np.where(op >= 0, pool.map(phase_of, np.int8, 0)[ev["name"][np.maximum(op, 0)]], 0)
    phase = np.where(phase_k > 0, phase_k, phase_o)
    keep = (cls.coll_type[rows] == CollType.ALLTOALL) | (phase > 0)
    rows, op, phase = rows[keep], op[keep], phase[keep]
    if len(rows) == 0:
        return None
    wins = step_windows(trace, rank)
    time = intervals.covered_in_windows(interval_set(trace, rows), wins.start_ns, wins.end_ns)
    by_phase = np.stack([intervals.covered_in_windows(interval_set(trace, rows[phase == p]), wins.start_ns,
                                                      wins.end_ns) for p in range(len(PHASES))], axis=1)
    win = window_of(wins, ev["ts_ns"][rows])
    n = len(wins)
    once = _first_of_each_op(op)  # an op's size counted once, on its first kernel
    sized = once & (win >= 0) & (cls.in_bytes[rows] >= 0)
    cell = win[sized] * len(PHASES) + phase[sized]  # (window, phase) of each sized op
    return AllToAllRecord(rank, wins.step.astype(np.int32), time.astype(np.int64), by_phase.astype(np.int64),
                          np.bincount(win[win >= 0], minlength=n).astype(np.int64),
                          _sum_by(cell, cls.in_bytes[rows][sized], n), _sum_by(cell, cls.out_bytes[rows][sized], n),
                          np.bincount(win[sized], minlength=n).astype(np.int64))


def _first_of_each_op(op: I32) -> npt.NDArray[np.bool_]:
    """True on each kernel without an op and on the first kernel of each op."""
    out = op < 0
    _, first = np.unique(op, return_index=True)
    out[first] = True
    return out


def _sum_by(cell: I64, values: I64, n: int) -> I64:
    """(windows, PHASES) sums of ``values`` by their cell (window × phases + phase)."""
    got: I64 = np.bincount(cell, weights=np.maximum(values, 0), minlength=n * len(PHASES)).round().astype(np.int64)
    return got.reshape(n, len(PHASES))


@dataclass(frozen=True)
class RankRows(TableResult):
    """One row per rank: means per step over the common steps, and the ratio to the median rank."""

    rank: I64
    time_ns: I64
    dispatch_ns: I64
    combine_ns: I64
    count: F64
    bytes_out: I64  # every phase
    bytes_in: I64  # every phase
    routed_in_bytes: I64  # received in all-to-all and dispatch (not combine): the tokens routed to the rank
    time_vs_median: F64
    routed_in_vs_median: F64  # NaN when no size is known

    def columns(self) -> dict[str, npt.NDArray[Any]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class StepRows(TableResult):
    """One row per common step: the spread across ranks."""

    step: I64
    time_max_ns: I64
    time_median_ns: I64
    time_spread: F64  # max / median
    slowest_rank: I64
    routed_in_max_bytes: I64
    routed_in_median_bytes: I64
    routed_in_spread: F64  # max / median (NaN without sizes)
    hottest_rank: I64  # received the most routed bytes (-1 without sizes)

    def columns(self) -> dict[str, npt.NDArray[Any]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class AllToAll:
    """The job's all-to-all imbalance (see the module docstring)."""

    ranks: RankRows
    steps: StepRows
    time_spread: float  # max / median of the ranks' mean time per step
    routed_in_spread: float  # max / median of the ranks' mean routed bytes received (NaN without sizes)
    top_receivers: tuple[int, ...]  # ranks by routed bytes received, most first (empty without sizes)


def compute_all_to_all(trace: Trace) -> AllToAll:
    return combine_all_to_all({r: all_to_all_record(trace, r) for r in trace.rank_ids})


def combine_all_to_all(records: Mapping[int, AllToAllRecord | None]) -> AllToAll:
    """The registry's cross-rank step, from every rank's :func:`all_to_all_record`."""
    got = [rec for rec in (records[r] for r in sorted(records)) if rec is not None]
    if len(got) < 2:
        raise NotApplicable("fewer than two ranks run all-to-all / expert-parallel dispatch or combine kernels")
    common = got[0].step
    for rec in got[1:]:  # per rank
        common = np.intersect1d(common, rec.step)
    if len(common) == 0:
        raise NotApplicable("the ranks with all-to-all kernels share no profiled step")
    picks = [_pick(rec.step, common) for rec in got]  # per rank
    mat = {k: np.stack([getattr(rec, k)[p] for rec, p in zip(got, picks)]) for k in
           ("time_ns", "phase_ns", "count", "bytes_out", "bytes_in", "sized")}  # (ranks, steps[, PHASES])
    mat["routed_in"] = mat["bytes_in"][:, :, :2].sum(axis=2)
    has_size = bool(mat["sized"].sum() > 0)
    ranks = np.array([rec.rank for rec in got], np.int64)
    rows = _rank_rows(ranks, mat, has_size)
    order = np.argsort(-rows.routed_in_bytes, kind="stable")
    return AllToAll(rows, _step_rows(common.astype(np.int64), ranks, mat, has_size),
                    _ratio(rows.time_ns.max(), np.median(rows.time_ns)),
                    _ratio(rows.routed_in_bytes.max(), np.median(rows.routed_in_bytes)) if has_size else float("nan"),
                    tuple(int(r) for r in ranks[order]) if has_size else ())


def _pick(step: I32, common: I32) -> I64:
    """Positions of the common steps in a rank's windows, in the common steps' order."""
    order = np.argsort(step, kind="stable")
    return order[np.searchsorted(step[order], common)].astype(np.int64)


def _ratio(a: float, b: float) -> float:
    return float(a) / float(b) if b > 0 else float("nan")


def _mean(x: npt.NDArray[Any]) -> I64:
    """Per rank, the mean over steps (axis 1), rounded to ns / bytes."""
    out: I64 = np.round(x.mean(axis=1)).astype(np.int64)
    return out


def _rank_rows(ranks: I64, mat: dict[str, npt.NDArray[Any]], has_size: bool) -> RankRows:
    t, routed = _mean(mat["time_ns"]), _mean(mat["routed_in"])
    med_t, med_b = float(np.median(t)), float(np.median(routed))
    nan = np.full(len(ranks), np.nan)
    return RankRows(ranks, t, _mean(mat["phase_ns"][:, :, 1]), _mean(mat["phase_ns"][:, :, 2]),
                    mat["count"].mean(axis=1), _mean(mat["bytes_out"].sum(axis=2)), _mean(mat["bytes_in"].sum(axis=2)),
                    routed, t / med_t if med_t > 0 else nan, routed / med_b if has_size and med_b > 0 else nan)


def _spread(x: npt.NDArray[Any]) -> tuple[I64, I64, F64]:
    """Per step (axis 1 of ranks × steps): max, median and max / median (NaN where the median is 0)."""
    top, med = x.max(axis=0), np.round(np.median(x, axis=0)).astype(np.int64)
    return top, med, np.where(med > 0, top / np.maximum(med, 1), np.nan)


def _step_rows(steps: I64, ranks: I64, mat: dict[str, npt.NDArray[Any]], has_size: bool) -> StepRows:
    t, b = mat["time_ns"], mat["routed_in"]
    b_max, b_med, b_spread = _spread(b)
    if not has_size:
        b_spread = np.full(len(steps), np.nan)
    return StepRows(steps, *_spread(t), ranks[t.argmax(axis=0)], b_max, b_med, b_spread,
                    ranks[b.argmax(axis=0)] if has_size else np.full(len(steps), -1, np.int64))
