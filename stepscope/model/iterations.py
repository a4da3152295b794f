"""Iterations of a rank without ``ProfilerStep`` markers, found from a host range that repeats.

A training or serving loop that was profiled without a schedule (an ``nsys`` capture, a trace of
``with profile():`` around the loop) often still marks each iteration: an NVTX range or a
``record_function`` such as ``train_step`` or ``iteration 12``. A rank's iterations are taken from
the **top-level** ranges (no host event around them on their thread) of one *family* on one thread:

* a family is one name repeated, or names that differ only by a trailing number when the rest says
  step or iteration (``step 3``, ``iter_4``);
* it needs at least :data:`MIN_ITERATIONS` ranges, the span from the first start to the last end
  must cover at least :data:`MIN_SPAN_SHARE` of the rank's events' span, and the ranges themselves
  at least :data:`MIN_BUSY_SHARE` of that span (a loop, not a few marks in a long trace);
* of the families that qualify, the one covering the most time is the loop.

Iteration *i* runs from the start of range *i* to the start of range *i + 1* (the loop's period,
as ``ProfilerStep#N`` does: what runs between two marked ranges, a DataLoader fetch say, belongs
to an iteration), the last one to its range's end. Steps are numbered by the trailing numbers when
every range has its own, else 0, 1, 2 … in time order. Without such a family the rank stays one
window, shown as the whole trace.
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt

from stepscope.model.diagnostics import DiagnosticsBuilder
from stepscope.model.masks import any_of
from stepscope.model.schema import GPU_KINDS, HOST_KINDS, STEP_COLUMNS, EventKind
from stepscope.model.strings import StringPool
from stepscope.model.table import Table

I64 = npt.NDArray[np.int64]
MIN_ITERATIONS = 3
MIN_SPAN_SHARE = 0.5
MIN_BUSY_SHARE = 0.3
_NUMBERED = re.compile(r"^(?P<base>.*?(?:step|iter|iteration|batch)\D*?)(?P<num>\d{1,9})$", re.IGNORECASE)
_DATALOADER = ("enumerate(DataLoader)#", "enumerate(DataPipe)#")


def iteration_steps(ev: Table, strings: StringPool, parent: npt.NDArray[np.int32], steps: Table,
                    diags: DiagnosticsBuilder) -> Table | None:
    """The steps table with the iterations of the ranks that have no steps added (None: none found)."""
    have = np.unique(steps["rank"]) if len(steps) else np.zeros(0, np.int32)
    cand = np.flatnonzero((ev["kind"] == EventKind.USER_ANNOTATION) & (parent < 0) & (ev["dur_ns"] > 0)
                          & ~np.isin(ev["rank"], have))
    if len(cand) == 0:
        return None
    fam, num = _families(strings, ev["name"][cand])
    keep = fam >= 0
    cand, fam, num = cand[keep], fam[keep], num[keep]
    rank = ev["rank"][cand]
    found = (_rank_loop(ev, cand[rank == r], fam[rank == r], num[rank == r])
             for r in np.unique(rank).tolist())  # per rank, not per event
    loops = [f for f in found if f is not None]
    if not loops:
        return None
    for rows, _ in loops:
        name = strings[int(ev["name"][rows[0]])]
        diags.add("steps-from-ranges", "info", f"rank {int(ev['rank'][rows[0]])}: no ProfilerStep; {len(rows)} "
                  f"iterations taken from the repeating range '{name[:80]}'", count=len(rows))
    return _with_rows(steps, ev, loops)


def _families(strings: StringPool, ids: npt.NDArray[np.int32]) -> tuple[I64, I64]:
    """Family code (-1: not a candidate) and trailing number (-1: none) of each id, per distinct name."""
    uniq, inv = np.unique(ids, return_inverse=True)
    codes: dict[str, int] = {}
    fam = np.full(len(uniq), -1, np.int64)
    num = np.full(len(uniq), -1, np.int64)
    for i, sid in enumerate(uniq.tolist()):  # distinct names only
        name = strings[int(sid)]
        if name.startswith(_DATALOADER) or name.startswith("ProfilerStep#"):
            continue
        m = _NUMBERED.match(name[:256])
        key = m.group("base") if m else name
        fam[i] = codes.setdefault(key, len(codes))
        num[i] = int(m.group("num")) if m else -1
    inv = np.asarray(inv).reshape(-1)
    return fam[inv], num[inv]


def _rank_loop(ev: Table, rows: I64, fam: I64, num: I64) -> tuple[I64, I64] | None:
    """The rows (in time order) and step numbers of the rank's loop family, or None."""
    if len(rows) < MIN_ITERATIONS:
        return None
    rank = int(ev["rank"][rows[0]])
    mine = np.flatnonzero(ev["rank"] == rank)
    kinds = [int(k) for k in (*HOST_KINDS, *GPU_KINDS)]
    mine = mine[any_of(ev["kind"][mine], kinds)]
    span = int((ev["ts_ns"][mine] + ev["dur_ns"][mine]).max() - ev["ts_ns"][mine].min())
    key = fam * (1 << 32) + ev["track"][rows].astype(np.int64)  # one family on one thread
    order = np.lexsort((ev["ts_ns"][rows], key))
    rows, fam, num, key = rows[order], fam[order], num[order], key[order]
    bounds = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1], [True]]))
    best: tuple[int, I64, I64] | None = None
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):  # per family, not per event
        grp = rows[lo:hi]
        busy = int(ev["dur_ns"][grp].sum())
        if len(grp) < MIN_ITERATIONS or span <= 0 or (best is not None and busy <= best[0]):
            continue
        first, last = int(ev["ts_ns"][grp[0]]), int(ev["ts_ns"][grp[-1]] + ev["dur_ns"][grp[-1]])
        if last - first < MIN_SPAN_SHARE * span or busy < MIN_BUSY_SHARE * (last - first):
            continue
        n = num[lo:hi]
        numbers = n if (n >= 0).all() and len(np.unique(n)) == len(n) else np.arange(len(grp), dtype=np.int64)
        best = (busy, grp, numbers)
    return None if best is None else (best[1], best[2])


def _with_rows(steps: Table, ev: Table, loops: list[tuple[I64, I64]]) -> Table:
    """``steps`` plus one row per iteration: start at its range, host end at the next range's start."""
    rows = np.concatenate([r for r, _ in loops])
    number = np.concatenate([n for _, n in loops])
    start = ev["ts_ns"][rows].astype(np.int64)
    own_end = start + ev["dur_ns"][rows]
    nxt = np.concatenate([np.append(ev["ts_ns"][r[1:]], ev["ts_ns"][r[-1]] + ev["dur_ns"][r[-1]]) for r, _ in loops])
    host_end = np.maximum(nxt.astype(np.int64), own_end)
    cols = {"rank": ev["rank"][rows], "step": number, "row": rows, "start_ns": start,
            "host_end_ns": host_end, "end_ns": host_end}
    merged = {k: np.concatenate([steps[k], v.astype(STEP_COLUMNS[k][0])]) for k, v in cols.items()}
    order = np.lexsort((merged["start_ns"], merged["rank"]))
    return Table(STEP_COLUMNS, {k: v[order] for k, v in merged.items()})
