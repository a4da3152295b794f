"""Who arrives late at the collectives (the culprits), who waits for them (the victims), and why.

Input: every rank's :class:`~stepscope.analysis.collective_records.CollectiveRecords` (the one
per-rank function, :func:`~stepscope.analysis.collective_records.collective_records`); everything
here is a function of those records only, vectorised over collectives × ranks.

* **Matching**: the same collective is the n-th communication kernel of one (process group,
  collective type) on each rank (process group "" when the trace does not say).
* **Clocks**: a collective ends at about the same instant on every rank that takes part, so each
  rank's clock offset is the median over its collectives of (its end − the collective's median
  end); every time is shifted by it (no-op on one host, microseconds there).
* **Arrival** of a rank at a collective: the device start of its kernel (``enqueue_ns``: the host
  time of its launch, where linked). **Wait** = the last arrival − the rank's arrival; a rank's
  total (``wait_total_ns``) is the union of these intervals, like a culprit's lateness: collectives
  that wait together (gloo's asynchronous all-reduces) count once.
* **Lateness** of a collective = the last arrival − the second-to-last arrival: the time everyone
  else waited for the last rank alone, i.e. what the collective would start earlier by had that rank
  arrived with the others (not − the median arrival, which also counts the other ranks'
  spread). The last rank is named only when its lateness exceeds :data:`TIE_NS`.
* **Cause** of a lateness: the last rank's gap (from its previous collective's end, or its step
  start, to its arrival) against the second-to-last rank's: lateness = (the difference of the gaps'
  starts) + Σ (the difference of each critical-path part of the gaps). The positive terms, scaled
  to the lateness, are its causes: ``late_start`` (it began later: at its first collective in the
  trace, it started the step late, for reasons before the trace; a later collective's gap starts at
  the rank's previous collective's end, across its step boundary, so work at the end of the step
  before — a checkpoint — is that work's part, not a late start) and the parts compute,
  communication, copy, input, host.
* **Culprits**: ranks whose *net* lateness — their lateness less the others' lateness they waited
  for (``suffered_ns``: at the collectives another rank was last at) — sums to ≥
  :data:`CULPRIT_MIN_SHARE_PCT` % of all the collectives' lateness and ≥ :data:`CULPRIT_MIN_STEP_PCT` %
  of the job's time; their cause is their largest summed cause. In a balanced job the ranks take turns
  arriving last (two identical gloo ranks, each last at 3 of 6 all-reduces: 1.5 and 0.3 ms late a step):
  a rank's lateness is then mostly what it waits for the others', and only the net is its own (1.2 ms).
  **Victims**: the other ranks that waited for the culprits for at least half of the culprits' lateness.
  ``wait_on_culprits_ns`` is a rank's wait at collectives a culprit was
  last at, each capped by that collective's lateness (the part the culprit alone caused; the union of
  those intervals, so with two ranks it is the culprit's lateness); the rest of
  its wait is the spread of the others' arrivals (an early rank waits long without anyone being late).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis._memo import per_trace
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.collective_records import CollectiveRecords, collective_records
from stepscope.analysis.common import I64, pct
from stepscope.analysis.critical_path import PARTS
from stepscope.model.trace import Trace
from stepscope.model.uniq import unique_texts

B2 = npt.NDArray[np.bool_]
S = npt.NDArray[np.object_]
#: What a late arrival is charged to: a later start, then the critical-path parts of the gap.
CAUSES = ("late_start", *PARTS)
#: Arrivals closer than this are simultaneous (the kernels' ends agree across ranks to ~10 µs).
TIE_NS = 10_000
CULPRIT_MIN_SHARE_PCT = 20.0
CULPRIT_MIN_STEP_PCT = 1.0


@dataclass(frozen=True)
class Matched:
    """Collectives × ranks matrices (clock-aligned; -1 / False where a rank has no such kernel)."""

    ranks: I64
    coll_type: npt.NDArray[np.int8]
    pg: S
    bytes: I64
    present: B2
    arrival_ns: npt.NDArray[np.int64]
    enqueue_ns: npt.NDArray[np.int64]
    end_ns: npt.NDArray[np.int64]
    gap_start_ns: npt.NDArray[np.int64]
    gap_parts_ns: npt.NDArray[np.int64]  # (collective, rank, part)
    from_step_start: B2
    clock_offset_ns: I64
    job_step_ns: float  # the job's mean step: the slowest rank's mean window (job_steps_ns)
    step_count: int
    row: npt.NDArray[np.int64]  # each participant's kernel (event row of its trace), -1 absent


@dataclass(frozen=True)
class Arrivals:
    """Arrivals, waits, lateness and causes (see the module docstring). Per collective arrays are in
    order of the median arrival; ``(C, R)`` matrices have one column per entry of ``ranks``; times are
    totals over the trace (``step_count`` steps)."""

    m: Matched
    last_rank: I64  # (C,) rank id arriving last, -1 when within TIE_NS of the next
    lateness_ns: I64  # (C,)
    spread_ns: I64  # (C,) the last arrival − the mean arrival: what unequal work costs this collective
    wait_ns: npt.NDArray[np.int64]  # (C, R)
    cause_ns: npt.NDArray[np.int64]  # (C, len(CAUSES)) the lateness split by cause
    late_ns: I64  # (R,) the lateness it caused at the collectives it was last at (the union of their intervals)
    times_last: I64
    wait_total_ns: I64  # (R,) the union of its wait intervals
    wait_on_culprits_ns: I64
    rank_cause_ns: npt.NDArray[np.int64]  # (R, len(CAUSES))
    suffered_ns: I64  # (R,) the others' lateness it waited for: at collectives another rank was last at
    culprits: tuple[int, ...]
    victims: tuple[int, ...]
    culprit_cause: dict[int, str]

    @property
    def ranks(self) -> list[int]:
        return [int(r) for r in self.m.ranks]

    @property
    def collective_count(self) -> int:
        return len(self.lateness_ns)

    def in_trace_late_ns(self, rank: int) -> int:
        """The lateness of a rank that the trace explains (every cause but ``late_start``)."""
        i = self.ranks.index(rank)
        return int(self.rank_cause_ns[i, 1:].sum())

    def net_late_ns(self, rank: int) -> int:
        """What the others lost to the rank beyond what it lost to them: its lateness less the others'
        it waited for (in a job whose ranks take turns arriving last, about nothing)."""
        i = self.ranks.index(rank)
        return max(int(self.late_ns[i]) - int(self.suffered_ns[i]), 0)

    def in_trace_net_late_ns(self, rank: int) -> int:
        """The net lateness (:meth:`net_late_ns`) the trace explains: every cause but ``late_start``."""
        return max(self.in_trace_late_ns(rank) - int(self.suffered_ns[self.ranks.index(rank)]), 0)

    def late_pct_of_job(self, rank: int) -> float:
        return pct(float(self.late_ns[self.ranks.index(rank)]), self.m.job_step_ns * self.m.step_count)


@per_trace
def trace_records(trace: Trace) -> tuple[CollectiveRecords, ...]:
    return tuple(collective_records(trace, r) for r in trace.rank_ids)  # per rank


@per_trace
def compute_arrivals(trace: Trace) -> Arrivals:
    """Arrivals at the collectives of a multi-rank trace (NotApplicable for one rank or none matched);
    once per trace in an active memo (the what-if's edges, its pacing rank and ``--fix-rank`` read it)."""
    if len(trace.rank_ids) < 2:
        raise NotApplicable("single-rank trace: no arrivals to compare")
    return arrivals_of(trace_records(trace))


def arrivals_record(trace: Trace, rank: int) -> CollectiveRecords:
    """The registry's per-rank step (what a map worker sends back): the rank's collective records."""
    return collective_records(trace, rank)


def combine_arrivals(records: Mapping[int, CollectiveRecords]) -> Arrivals:
    """The registry's cross-rank step: :func:`compute_arrivals` from every rank's records."""
    if len(records) < 2:
        raise NotApplicable("single-rank trace: no arrivals to compare")
    return arrivals_of(tuple(records.values()))


def arrivals_of(records: tuple[CollectiveRecords, ...]) -> Arrivals:
    """The cross-rank step, from the per-rank records only (in any order: they are put in rank order)."""
    m = match(tuple(sorted(records, key=lambda r: r.rank)))  # one record per rank
    return _judge(m)


def match(records: tuple[CollectiveRecords, ...]) -> Matched:
    """Match the records of every rank into collectives × ranks matrices (see the module docstring)."""
    ranks = np.array([r.rank for r in records], np.int64)
    col = np.concatenate([np.full(len(r), i, np.int64) for i, r in enumerate(records)])
    cat = {f: np.concatenate([getattr(r, f) for r in records]) for f in
           ("start_ns", "end_ns", "enqueue_ns", "coll_type", "pg", "bytes", "gap_start_ns", "from_step_start")}
    parts = np.concatenate([r.gap_parts_ns for r in records]).reshape(-1, len(CAUSES) - 1)
    pg_names, pg = unique_texts(cat["pg"])
    ctype = cat["coll_type"].astype(np.int64)
    order = np.lexsort((cat["start_ns"], ctype, pg, col))
    grp = np.stack([col, pg, ctype])[:, order]
    new = np.ones(len(order), bool)
    new[1:] = (grp[:, 1:] != grp[:, :-1]).any(axis=0)
    first = np.maximum.accumulate(np.where(new, np.arange(len(order)), 0))
    nth = np.empty(len(order), np.int64)
    nth[order] = np.arange(len(order)) - first
    keys, inv = np.unique(np.stack([pg, ctype, nth]), axis=1, return_inverse=True)
    inv = inv.reshape(-1)
    present = np.zeros((keys.shape[1], len(ranks)), bool)
    present[inv, col] = True
    keep = present.sum(axis=1) >= 2
    if not keep.any():
        raise NotApplicable("no collective matched on two or more ranks")
    cat["row"] = np.concatenate([r.row for r in records])
    mats = {f: _matrix(cat[f], inv, col, present.shape) for f in
            ("start_ns", "end_ns", "enqueue_ns", "gap_start_ns", "row")}
    gap = np.zeros((*present.shape, parts.shape[1]), np.int64)
    gap[inv, col] = parts
    fis = np.zeros(present.shape, bool)
    fis[inv, col] = cat["from_step_start"]
    size = np.full(keys.shape[1], -1, np.int64)
    np.maximum.at(size, inv, cat["bytes"])
    offset = _clock_offsets(mats["end_ns"][keep], present[keep])
    shift = np.where(present, offset[None, :], 0)
    arrival = np.where(present, mats["start_ns"] - shift, -1)
    med = np.nanmedian(np.where(present, arrival, np.nan)[keep].astype(np.float64), axis=1)
    sel = np.flatnonzero(keep)[np.argsort(med, kind="stable")]
    enq = np.where(mats["enqueue_ns"] >= 0, mats["enqueue_ns"] - shift, -1)
    steps = [(r.step_end_ns - r.step_start_ns) for r in records]
    return Matched(ranks, keys[1, sel].astype(np.int8), pg_names.astype(object)[keys[0, sel]], size[sel],
                   present[sel], arrival[sel], enq[sel], (mats["end_ns"] - shift)[sel],
                   (mats["gap_start_ns"] - shift)[sel], gap[sel], fis[sel], offset,
                   job_mean_step_ns(steps), max(len(s) for s in steps),
                   mats["row"][sel])


def _matrix(values: npt.NDArray[np.int64], inv: I64, col: I64, shape: tuple[int, ...]) -> npt.NDArray[np.int64]:
    out = np.full(shape, -1, np.int64)
    out[inv, col] = values
    return out


def _clock_offsets(end_ns: npt.NDArray[np.int64], present: B2) -> I64:
    """Per rank: the median of (its end − the collective's median end) over the collectives it is in."""
    e = np.where(present, end_ns, np.nan).astype(np.float64)
    dev = e - np.nanmedian(e, axis=1, keepdims=True)  # every kept collective has two ranks or more
    has = present.any(axis=0)
    off = np.zeros(present.shape[1], np.float64)
    off[has] = np.nanmedian(dev[:, has], axis=0)
    return np.round(off).astype(np.int64)


def _new_lateness(lid: I64, second_t: I64, last_t: I64, named: npt.NDArray[np.bool_]) -> I64:
    """Per collective, the part of its lateness interval (second-to-last → last arrival) that no
    earlier collective its last rank was last at already covers: collectives that wait together
    (gloo's asynchronous all-reduces, one per DDP bucket, each waiting for the same late rank) are
    one wait, not one each — the others' time lost to the rank is the union of these intervals."""
    return np.where(named, intervals.uncovered_by_group(lid, second_t, last_t), 0)


def _judge(m: Matched) -> Arrivals:
    """Lateness, waits, causes, culprits and victims of matched collectives."""
    n_c, n_r = m.present.shape
    arr = np.where(m.present, m.arrival_ns, np.iinfo(np.int64).min)
    order = np.argsort(arr, axis=1, kind="stable")
    last_i, second_i = order[:, -1], order[:, -2]
    rows = np.arange(n_c)
    last_t, second_t = arr[rows, last_i], arr[rows, second_i]
    lateness = last_t - second_t
    named = lateness > TIE_NS
    wait = np.where(m.present, last_t[:, None] - m.arrival_ns, 0)
    offset = m.gap_start_ns[rows, last_i] - m.gap_start_ns[rows, second_i]
    excess = m.gap_parts_ns[rows, last_i] - m.gap_parts_ns[rows, second_i]
    terms = np.clip(np.column_stack([offset, excess]), 0, None).astype(np.float64)
    total = terms.sum(axis=1, keepdims=True)
    lid = np.where(named, last_i, n_r)  # n_r: nobody
    new = _new_lateness(lid, second_t, last_t, named)
    # each collective's causes, for the part of its lateness no earlier one of the rank's covered
    cause = np.where(named[:, None] & (total > 0), terms * new[:, None] / np.maximum(total, 1), 0.0)
    cause_ns = np.round(cause).astype(np.int64)
    late = np.bincount(lid, weights=np.where(named, new, 0), minlength=n_r + 1)[:n_r].astype(np.int64)
    times = np.bincount(lid, minlength=n_r + 1)[:n_r].astype(np.int64)
    rank_cause = np.zeros((n_r + 1, len(CAUSES)), np.int64)
    np.add.at(rank_cause, lid, cause_ns)
    all_late = float(late.sum())
    job = m.job_step_ns * m.step_count
    # net of the others' lateness it waited for: ranks that take turns arriving last (jitter) are none late
    others_last = named[:, None] & m.present & (np.arange(n_r)[None, :] != last_i[:, None])
    suffered = np.where(others_last, new[:, None], 0).sum(axis=0).astype(np.int64)
    net = late - suffered
    is_culprit = ((net > 0) & (net >= all_late * CULPRIT_MIN_SHARE_PCT / 100)
                  & (net >= job * CULPRIT_MIN_STEP_PCT / 100))
    by_culprit = named & is_culprit[np.minimum(lid, n_r - 1)] & (lid < n_r)
    wait_total, caused = _waits(m, second_t, last_t, by_culprit)
    culprit_late = float(late[is_culprit].sum())
    is_victim = ~is_culprit & (caused > 0) & (caused >= culprit_late / 2)
    culprits = tuple(int(r) for r in m.ranks[is_culprit])
    causes = {int(m.ranks[i]): CAUSES[int(np.argmax(rank_cause[i]))] for i in np.flatnonzero(is_culprit)}
    spread = np.round(wait.sum(axis=1) / m.present.sum(axis=1)).astype(np.int64)  # last − mean arrival
    return Arrivals(m, np.where(named, m.ranks[last_i], -1), lateness.astype(np.int64), spread,
                    wait.astype(np.int64),
                    cause_ns, late, times, wait_total, caused, rank_cause[:n_r], suffered,
                    culprits, tuple(int(r) for r in m.ranks[is_victim]), causes)


def _waits(m: Matched, second_t: I64, last_t: I64, by_culprit: B2) -> tuple[I64, I64]:
    """Per rank, its wait: the union of its wait intervals (its arrival → the last arrival), so
    collectives that wait together (gloo's asynchronous all-reduces) count once, as the lateness does;
    and the part on the culprits: the union over the collectives a culprit was last at of the
    intervals capped by the lateness (the second-to-last → the last arrival, where it came earlier)."""
    c, r = np.nonzero(m.present)
    total = intervals.union_length_by_group(r, m.arrival_ns[c, r], last_t[c], len(m.ranks))
    k = by_culprit[c]
    c, r = c[k], r[k]
    on = intervals.union_length_by_group(r, np.maximum(m.arrival_ns[c, r], second_t[c]), last_t[c], len(m.ranks))
    return total, on


def job_steps_ns(rank_steps: list[I64]) -> I64:
    """The job's step at each step index: the windows of the rank whose windows are longest on average
    over the steps every rank has (ranks without steps left out). A synchronous job runs at the pace of
    its slowest rank, and every rank's window holds its waits for the others, so over the steps each
    rank's mean window is the job's step (they differ by where each rank's steps begin): their largest
    is *the* job step (the verdict's, the arrivals', the job replay's). Not the largest window at each
    step index: when the slow rank changes from step to step, or a rank's wait falls in the step after
    the late rank's (a checkpoint at the end of a step), that counts one delay twice — a rank's long
    step and another's wait for it at the next index (two ranks of 62 ms steps, in 251 and 247 ms of
    wall time for 4 steps, had 81.9 ms as their steps' mean maximum)."""
    rows = [x for x in rank_steps if len(x)]
    if not rows:
        return np.zeros(0, np.int64)
    n = min(len(x) for x in rows)
    common = np.stack([x[:n] for x in rows]).astype(np.int64)
    out: I64 = common[int(np.argmax(common.sum(axis=1)))]
    return out


def job_mean_step_ns(rank_steps: list[I64]) -> float:
    """The job's mean step (of :func:`job_steps_ns`; 0 without steps)."""
    steps = job_steps_ns(rank_steps)
    return float(steps.mean()) if len(steps) else 0.0
