"""Launch links from flow events, where a trace's GPU activities carry no correlation id.

Kineto links a runtime call to the GPU work it launched twice: a ``correlation`` arg on both, and a
pair of flow events (``ph`` "s" on the call, "f" with ``bp: "e"`` on the GPU activity, one ``id``,
category ``ac2g``). A trace that went through a tool keeping the flows but not those args (or a
writer that only draws arrows) still says which call launched what. Where GPU activities lack a
correlation id, each flow pair whose start lies inside a runtime / driver call and whose finish lies
inside a GPU activity on their tracks gives both the same id — the call's own where it has one, else
a new one above every id of the trace — so :func:`stepscope.model.derive.link_launches` links them like
any other. Recorded ids are never changed. Vectorised per track (a rank has a handful).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stepscope.model.derive import rows_by_track
from stepscope.model.diagnostics import DiagnosticsBuilder
from stepscope.model.masks import any_of
from stepscope.model.schema import GPU_KINDS, EventKind
from stepscope.model.table import Table
from stepscope.model.uniq import unique

I64 = npt.NDArray[np.int64]
LAUNCH_KINDS = [int(EventKind.RUNTIME), int(EventKind.DRIVER)]
ID_MASK = (1 << 44) - 1  # the bits of a correlation id that :func:`stepscope.model.derive.link_launches` keys on


def correlations_from_flows(ev: Table, flows: Table, diags: DiagnosticsBuilder | None = None) -> I64 | None:
    """``ev["corr"]`` with the ids the flow pairs give (see the module docstring); None when no GPU
    activity lacks an id or no pair links one (the column stays as it is)."""
    corr = ev["corr"]
    gpu_kinds = [int(k) for k in GPU_KINDS]
    if len(flows) == 0 or not bool((any_of(ev["kind"], gpu_kinds) & (corr < 0)).any()):
        return None
    src, dst = _pairs(flows)
    if len(src) == 0:
        return None
    call = event_at(ev, LAUNCH_KINDS, flows["track"][src], flows["ts_ns"][src])
    work = event_at(ev, gpu_kinds, flows["track"][dst], flows["ts_ns"][dst])
    ok = (call >= 0) & (work >= 0)
    call, work = call[ok], work[ok]
    ok = corr[work] < 0  # only activities without a recorded id
    call, work = call[ok], work[ok]
    if len(work) == 0:
        return None
    calls, nth = np.unique(call, return_inverse=True)  # a call that launched several activities: one id
    base = int(np.max(np.where(corr >= 0, corr & ID_MASK, -1), initial=-1)) + 1  # above every id, as linked
    if base + len(calls) > ID_MASK:
        return None  # ids this large are not a profiler's: no new ones among them
    fresh = base + np.asarray(nth, np.int64).reshape(-1)
    ids = np.where(corr[call] >= 0, corr[call], fresh)  # the call's own id where it has one
    out: I64 = np.asarray(corr, np.int64).copy()
    out[call] = ids
    out[work] = ids
    if diags is not None:
        n = len(unique(work))
        diags.add("launch-linked-by-flow", "info", f"{n} GPU activities have no correlation id; linked to "
                  "their launch by the trace's flow events", n)
    return out


def _pairs(flows: Table) -> tuple[I64, I64]:
    """Rows of the flow starts and of their finishes: same rank, category and id, one start each."""
    ph, rank, cat, fid = flows["phase"], flows["rank"], flows["cat"], flows["flow_id"]
    starts = np.flatnonzero((ph == ord("s")) & (fid >= 0))
    ends = np.flatnonzero((ph == ord("f")) & (fid >= 0))
    if len(starts) == 0 or len(ends) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    keys = np.stack([rank[starts].astype(np.int64), cat[starts].astype(np.int64), fid[starts]], axis=1)
    queries = np.stack([rank[ends].astype(np.int64), cat[ends].astype(np.int64), fid[ends]], axis=1)
    _, first, counts = np.unique(keys, axis=0, return_index=True, return_counts=True)
    known = keys[first[counts == 1]]  # an id started twice on a rank says nothing sure
    both = np.concatenate([known, queries])
    _, inverse = np.unique(both, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    slot = np.full(int(inverse.max()) + 1, -1, np.int64)
    slot[inverse[:len(known)]] = starts[first[counts == 1]]
    src = slot[inverse[len(known):]]
    hit = src >= 0
    return src[hit], ends[hit]


def event_at(ev: Table, kinds: list[int], track: npt.NDArray[np.int32], ts: I64) -> I64:
    """For each (track, instant), the row of the event of ``kinds`` on that track that started last at
    or before it — of several starting then, the longest (a zero-length call beside the launch) — when
    it also ends at or after it (else -1); events in sort order (each track's rows one contiguous,
    time-ordered run, the longer first at one instant)."""
    out = np.full(len(ts), -1, np.int64)
    ev_ts, ev_end = ev["ts_ns"], ev["ts_ns"] + ev["dur_ns"]
    for q, rows in rows_by_track(ev, kinds, track):
        starts = ev_ts[rows]
        pos = np.searchsorted(starts, ts[q], side="right") - 1
        pos = np.searchsorted(starts, starts[np.maximum(pos, 0)], side="left") + np.where(pos >= 0, 0, -1)
        cand = rows[np.maximum(pos, 0)]
        out[q] = np.where((pos >= 0) & (ev_end[cand] >= ts[q]), cand, -1)
    return out
