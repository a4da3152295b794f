"""Steps: ProfilerStep#N spans per rank, and the step of every event: host events by time, GPU
activity by its launch's step, each step's end stretched to the end of the last GPU activity
launched in it (as the TensorBoard plugin does); GPU activity without a launch by time again.
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt

from stepscope.model.derive import match_keys, pack_track_time
from stepscope.model.masks import any_of
from stepscope.model.schema import GPU_KINDS, HOST_KINDS, STEP_COLUMNS, EventKind
from stepscope.model.strings import StringPool
from stepscope.model.table import Table
from stepscope.model.uniq import unique

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")


def find_steps(ev: Table, strings: StringPool) -> Table:
    """ProfilerStep#N host events → the steps table (one row per rank and N, by start time)."""
    num = strings.map(_step_number)
    host = any_of(ev["kind"], [EventKind.CPU_OP, EventKind.USER_ANNOTATION])
    rows = np.flatnonzero(host & (num[ev["name"]] >= 0))
    if len(rows) == 0:
        return Table.empty(STEP_COLUMNS)
    rank, step = ev["rank"][rows], num[ev["name"]][rows]
    order = np.lexsort((-ev["dur_ns"][rows], rank.astype(np.int64) * (1 << 32) + step))
    rows, rank, step = rows[order], rank[order], step[order]
    first = np.ones(len(rows), bool)
    first[1:] = (rank[1:] != rank[:-1]) | (step[1:] != step[:-1])
    rows = rows[first]
    rows = rows[np.lexsort((ev["ts_ns"][rows], ev["rank"][rows]))]
    start = ev["ts_ns"][rows]
    end = start + ev["dur_ns"][rows]
    return Table(STEP_COLUMNS, {"rank": ev["rank"][rows], "step": num[ev["name"]][rows], "row": rows,
                                "start_ns": start, "host_end_ns": end, "end_ns": end})


def _step_number(name: str) -> int:
    m = STEP_NAME.match(name)
    n = int(m.group(1)) if m else -1
    return n if n < 2**31 else -1  # beyond int32: not a step number any profiler writes


def assign_steps(ev: Table, steps: Table, launch: I32) -> tuple[I32, Table]:
    """Step of every event, and the steps with ``end_ns`` stretched over the GPU work they launched."""
    step_of = np.full(len(ev), -1, np.int32)
    if len(steps) == 0:
        return step_of, steps
    kind = ev["kind"]
    host = np.flatnonzero(any_of(kind, [int(k) for k in HOST_KINDS]))
    step_of[host] = _step_by_time(ev, host, steps, steps["host_end_ns"])
    gpu = any_of(kind, [int(k) for k in GPU_KINDS]) | (kind == EventKind.GPU_USER_ANNOTATION)
    launched = np.flatnonzero(gpu & (launch >= 0))
    step_of[launched] = step_of[launch[launched]]
    srow = _step_row(ev["rank"][launched], step_of[launched], steps)
    ok = srow >= 0
    done = launched[ok]
    end = steps["host_end_ns"].copy()
    np.maximum.at(end, srow[ok], ev["ts_ns"][done] + ev["dur_ns"][done])
    steps = steps.with_columns(end_ns=end)
    rest = np.flatnonzero(gpu & (launch < 0))
    step_of[rest] = _step_by_time(ev, rest, steps, end)
    return step_of, steps


def _step_by_time(ev: Table, rows: I64, steps: Table, end_ns: I64) -> I32:
    """Step number of each of ``rows`` whose start lies in [start, end) of a step of its rank, else -1."""
    label = _last_step_started(ev, rows, steps)
    if label is None:
        label = _last_step_started_by_search(ev, rows, steps)
    ts = ev["ts_ns"][rows]
    ok = label >= 0
    ok &= ts < end_ns[np.maximum(label, 0)]
    out = np.full(len(rows), -1, np.int32)
    out[ok] = steps["step"][label[ok]]
    return out


def _last_step_started(ev: Table, rows: I64, steps: Table) -> I64 | None:
    """Row in ``steps`` of the last step of its rank started at or before each row (-1: none yet),
    for rows in sort order (by track, then time): each track's run of rows is cut at every step
    start of its rank, one search per (track, step) instead of one per row. None when the rows are
    not in that order or their (track, time) do not pack into one int64."""
    n = len(rows)
    track = ev["track"][rows]
    packed = pack_track_time(track, ev["ts_ns"][rows], spare_bits=1)  # spare: a start after every row sorts last
    if packed is None or bool((packed.key[1:] < packed.key[:-1]).any()):
        return None
    run = np.flatnonzero(np.concatenate([[True], track[1:] != track[:-1]]))  # first row of each track's run
    first, count = _steps_of_rank(steps, ev["rank"][rows[run]])
    before = np.cumsum(count) - count  # steps listed for the runs before each run
    step_row = np.repeat(first - before, count) + np.arange(int(count.sum()))
    cut = np.searchsorted(packed.key, packed.at(np.repeat(track[run], count), steps["start_ns"][step_row]),
                          side="left")
    slot = np.arange(len(run)) + before  # each run's own slot, then one per step of its rank
    bounds = np.empty(len(run) + len(cut), np.int64)
    labels = np.empty(len(bounds), np.int64)
    bounds[slot], labels[slot] = run, -1
    step_slot = np.repeat(slot + 1 - before, count) + np.arange(len(cut))
    bounds[step_slot], labels[step_slot] = cut, step_row
    return np.repeat(labels, np.diff(np.append(bounds, n)))


def _steps_of_rank(steps: Table, ranks: npt.NDArray[np.int32]) -> tuple[I64, I64]:
    """First row and number of rows in ``steps`` (sorted by rank, then start) of each rank."""
    lo = np.searchsorted(steps["rank"], ranks, side="left")
    hi = np.searchsorted(steps["rank"], ranks, side="right")
    return lo.astype(np.int64), (hi - lo).astype(np.int64)


def _last_step_started_by_search(ev: Table, rows: I64, steps: Table) -> I64:
    """:func:`_last_step_started` for rows in any order: one binary search per row."""
    out = np.full(len(rows), -1, np.int64)
    rank, ts = ev["rank"][rows], ev["ts_ns"][rows]
    for r in unique(steps["rank"]).tolist():  # per rank, not per event
        s = np.flatnonzero(steps["rank"] == r)
        sub = np.flatnonzero(rank == r)
        pos = np.searchsorted(steps["start_ns"][s], ts[sub], side="right") - 1
        out[sub[pos >= 0]] = s[pos[pos >= 0]]
    return out


def _step_row(rank: npt.NDArray[np.int32], step: I32, steps: Table) -> I64:
    """Row in the steps table of each (rank, step), -1 when none."""
    keys = steps["rank"].astype(np.int64) * (1 << 32) + steps["step"]
    found = match_keys(keys, rank.astype(np.int64) * (1 << 32) + step)
    return np.where(step >= 0, found, -1)
