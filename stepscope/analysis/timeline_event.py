"""One timeline event in full, and search by name: what the timeline shows when an event is clicked.

:func:`event_details` answers "what is this event": its name, kind, times, the track it is on, its
arguments (the model's columns that are set for it: correlation, External id, grid and block, bytes,
collective fields ...), its input shapes and types, its call stack and enclosing host events, the
launching op and runtime call of a GPU activity, and the GPU work it launched (directly for a runtime
call; for a host op or annotation, every GPU activity whose launch call lies inside it on its thread,
in launch order).

:func:`search_events` answers "where are the events whose name contains this text" on one rank:
case-insensitive substring match over the interned names (the pool is scanned, not the events), then
one vectorised lookup over the rank's events; matches in start order, a page at a time: the first
``limit`` starting at or after ``after_ns``, or the last ``limit`` starting before ``before_ns``.

Shapes (JSON)::

    details: {"rank", "row", "name", "kind", "cat", "ts_ns", "dur_ns", "end_ns", "self_ns", "track",
              "depth", "step", "args": {name: value}, "input_dims": [...] | null,
              "input_types": [...] | null, "concrete_inputs": [...] | null, "call_stack": [frame],
              "parents": [ref] (innermost first), "launch": ref | null, "op": ref | null,
              "kernels": [ref], "kernel_count": int, "kernel_ns": int}
    ref:     {"row", "name", "kind", "ts_ns", "dur_ns", "track"}
    search:  {"rank", "query", "total", "total_dur_ns", "after_ns", "before_ns",
              "skipped" (matches before the page), "truncated" (matches after it),
              "names": [{"name", "count"}],
              "matches": {"row": [..], "track": [..], "ts_ns": [..], "dur_ns": [..], "name": [..]}}
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis import timeline_index as tix
from stepscope.analysis._memo import per_rank
from stepscope.errors import StepscopeError
from stepscope.model.masks import any_of
from stepscope.model.schema import GPU_KINDS, EventKind, MemcpyKind
from stepscope.model.trace import Trace

I64 = npt.NDArray[np.int64]
KIND_NAMES = tuple(k.name.lower() for k in EventKind)
#: GPU activities listed under a host event (the count and total time cover all of them)
MAX_KERNELS = 200
#: enclosing host events listed
MAX_PARENTS = 64
#: distinct matched names listed by a search
MAX_NAMES = 20
#: integer argument columns shown when set (value != the column's fill value)
INT_ARGS = ("corr", "ext_id", "seq", "fwd_tid", "regs", "shmem_bytes", "bytes", "in_nelems", "out_nelems",
             "group_size", "graph_node", "capture_seq")
FLOAT_ARGS = ("blocks_per_sm", "occupancy_pct", "flops")
STR_ARGS = ("coll_name", "coll_dtype", "pg_name", "pg_desc", "pg_ranks", "capture_op")


class NoSuchEvent(StepscopeError):
    """The row is not an event of the rank's timeline."""


def _kind(code: int) -> str:
    return KIND_NAMES[code] if 0 <= code < len(KIND_NAMES) else "other"


def _ref(trace: Trace, row: int) -> dict[str, Any]:
    ev = trace.events
    return {"row": row, "name": trace.strings[int(ev["name"][row])], "kind": _kind(int(ev["kind"][row])),
            "ts_ns": int(ev["ts_ns"][row]), "dur_ns": int(ev["dur_ns"][row]), "track": int(ev["track"][row])}


def _json_text(trace: Trace, sid: int) -> Any:
    """A JSON-text column ("Input Dims" ...) parsed back; the raw text when it is not JSON; None when unset."""
    if sid < 0:
        return None
    text = trace.strings[sid]
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def _args(trace: Trace, row: int) -> dict[str, Any]:
    """The model's columns that are set for this event (absent ones left out)."""
    ev = trace.events
    out: dict[str, Any] = {}
    for col in INT_ARGS:
        v = int(ev[col][row])
        if v != -1:
            out[col] = v
    for col in FLOAT_ARGS:
        f = float(ev[col][row])
        if np.isfinite(f):
            out[col] = f
    for col in STR_ARGS:
        sid = int(ev[col][row])
        if sid >= 0:
            out[col] = trace.strings[sid]
    grid = [int(ev[c][row]) for c in ("grid_x", "grid_y", "grid_z")]
    block = [int(ev[c][row]) for c in ("block_x", "block_y", "block_z")]
    if any(grid) or any(block):
        out["grid"], out["block"] = grid, block
    if int(ev["copy_kind"][row]):
        out["copy_kind"] = MemcpyKind(int(ev["copy_kind"][row])).name
    if int(ev["pageable"][row]) >= 0:
        out["pageable"] = bool(ev["pageable"][row])
    return out


def _parents(trace: Trace, row: int) -> list[dict[str, Any]]:
    parent = trace.events["parent"]
    out: list[dict[str, Any]] = []
    p = int(parent[row])
    while p >= 0 and len(out) < MAX_PARENTS:  # walks up one chain: at most the nesting depth
        out.append(_ref(trace, p))
        p = int(parent[p])
    return out


@per_rank
def launched_by_track(trace: Trace, rank: int) -> tuple[I64, I64, I64]:
    """The rank's GPU activities that have a launch call, by the launch call's track, then start:
    (launch track, launch ts, GPU row)."""
    ev = trace.events
    sl = trace.rank_slice(rank)
    rows = np.arange(sl.start, sl.stop, dtype=np.int64)
    rows = rows[any_of(ev["kind"][sl], [int(k) for k in GPU_KINDS]) & (ev["launch"][sl] >= 0)]
    src = ev["launch"][rows].astype(np.int64)
    track, ts = ev["track"][src].astype(np.int64), ev["ts_ns"][src].astype(np.int64)
    order = np.lexsort((ts, track))
    return track[order], ts[order], rows[order]


def kernel_ranges(trace: Trace, rank: int, rows: I64) -> tuple[I64, I64]:
    """Per row, ``[lo, hi)`` into :func:`launched_by_track`'s arrays: the GPU work whose launch call starts
    inside the row on its thread (a runtime call: its own), in launch order; empty for GPU rows."""
    ev = trace.events
    track, ts, _gpu = launched_by_track(trace, rank)
    start = ev["ts_ns"][rows].astype(np.int64)
    end = start + np.maximum(ev["dur_ns"][rows].astype(np.int64), 1)
    own = ev["track"][rows].astype(np.int64)
    lo, hi = np.zeros(len(rows), np.int64), np.zeros(len(rows), np.int64)
    for t in np.unique(own).tolist():  # per distinct track: a few
        a, b = np.searchsorted(track, [t, t + 1], side="left")
        m = own == t
        lo[m] = a + np.searchsorted(ts[a:b], start[m], side="left")
        hi[m] = a + np.searchsorted(ts[a:b], end[m], side="left")
    gpu_row = np.isin(ev["kind"][rows], [int(k) for k in GPU_KINDS])
    hi[gpu_row] = lo[gpu_row]
    return lo, hi


def event_details(trace: Trace, rank: int, row: int) -> dict[str, Any]:
    """Everything about one event of ``rank`` (module docstring: the shape)."""
    sl = trace.rank_slice(rank)
    ev = trace.events
    if not sl.start <= row < sl.stop or int(ev["track"][row]) < 0:
        raise NoSuchEvent(f"row {row} is not an event on rank {rank}'s timeline")
    out = _ref(trace, row)
    cat = int(ev["cat"][row])
    lo, hi = kernel_ranges(trace, rank, np.array([row], np.int64))
    kernels = launched_by_track(trace, rank)[2][int(lo[0]):int(hi[0])]
    stack = int(ev["call_stack"][row])
    out.update({"rank": rank, "cat": trace.strings[cat] if cat >= 0 else None,
                "end_ns": out["ts_ns"] + out["dur_ns"], "self_ns": int(ev["self_ns"][row]),
                "depth": int(ev["depth"][row]), "step": int(ev["step"][row]), "args": _args(trace, row),
                "input_dims": _json_text(trace, int(ev["input_dims"][row])),
                "input_types": _json_text(trace, int(ev["input_types"][row])),
                "concrete_inputs": _json_text(trace, int(ev["concrete_inputs"][row])),
                "call_stack": [f for f in trace.strings[stack].split(";") if f] if stack >= 0 else [],
                "parents": _parents(trace, row),
                "launch": _ref(trace, int(ev["launch"][row])) if int(ev["launch"][row]) >= 0 else None,
                "op": _ref(trace, int(ev["op"][row])) if int(ev["op"][row]) >= 0 else None,
                "kernels": [_ref(trace, int(k)) for k in kernels[:MAX_KERNELS]],
                "kernel_count": len(kernels), "kernel_ns": int(ev["dur_ns"][kernels].sum())})
    return out


def name_mask(trace: Trace, query: str) -> npt.NDArray[np.bool_]:
    """Per string id (plus a trailing False for id -1): does the name contain ``query`` (any case)."""
    q = query.casefold()
    out = np.zeros(len(trace.strings) + 1, dtype=bool)
    out[:-1] = [q in s.casefold() for s in trace.strings.strings]  # per distinct string, not per event
    return out


def _page(ts: I64, after_ns: int | None, before_ns: int | None, limit: int) -> tuple[int, int]:
    """[lo, hi) of the sorted starts ``ts``: the first ``limit`` at or after ``after_ns`` (from the
    first when None), or the last ``limit`` before ``before_ns``."""
    if before_ns is None:
        lo = 0 if after_ns is None else int(np.searchsorted(ts, after_ns, side="left"))
        return lo, min(len(ts), lo + limit)
    hi = int(np.searchsorted(ts, before_ns, side="left"))
    return max(0, hi - limit), hi


def search_events(trace: Trace, rank: int, query: str, *, after_ns: int | None = None,
                  before_ns: int | None = None, limit: int = 2000) -> dict[str, Any]:
    """The rank's events whose name contains ``query`` (module docstring: the shape)."""
    if not query.strip():
        raise StepscopeError("search for what? the query is empty")
    ix = tix.rank_index(trace, rank)
    mask = name_mask(trace, query)
    hit = np.flatnonzero(mask[ix.name])
    hit = hit[np.lexsort((ix.track_pos[hit], ix.ts[hit]))]
    names, counts = np.unique(ix.name[hit], return_counts=True)
    top = np.argsort(-counts, kind="stable")[:MAX_NAMES]
    lo, hi = _page(ix.ts[hit], after_ns, before_ns, limit)
    shown = hit[lo:hi]
    rows = ix.rows[shown]
    ev = trace.events
    return {"rank": rank, "query": query, "total": len(hit), "total_dur_ns": int(ix.dur[hit].sum()),
            "after_ns": after_ns, "before_ns": before_ns, "skipped": lo, "truncated": hi < len(hit),
            "names": [{"name": trace.strings[int(names[i])], "count": int(counts[i])} for i in top],
            "matches": {"row": rows.tolist(), "track": ev["track"][rows].astype(np.int64).tolist(),
                        "ts_ns": ix.ts[shown].tolist(), "dur_ns": ix.dur[shown].tolist(),
                        "name": trace.strings.decode(ix.name[shown]).tolist()}}
