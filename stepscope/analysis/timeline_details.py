"""Many events' details at once, as columns: what :func:`~.timeline_event.event_details` answers for
one clicked event, for every event of a few timeline windows (the standalone report carries them, so
that a click shows arguments, shapes, call stack, launching op and kernels without a server).

One row per event of ``rows`` (sorted, distinct; ``row_delta``: each row minus the one before, the
first minus 0), the columns aligned with them; a column that is unset for every row is left out. The
links are ``*_back``: the row minus the linked row (0: none, as no event links to itself; small
numbers mostly, negative where the linked row comes later). Texts are interned per column
(``{"strings": [...], "index": [...]}``, -1 for unset). Rows the details point at (enclosing events,
launch calls, ops, launched GPU work) that are not among ``rows`` are in ``refs`` with their name,
kind, times, track and parent::

    {"rank", "max_kernels", "max_parents", "row_delta": [int], "self_ns": [int],
     "parent_back": [int], "launch_back": [int], "op_back": [int],
     "cat" | "input_dims" | "input_types" | "concrete_inputs" | "call_stack": texts,
     "args": {name: [value | null] | {"at": [int], "values": [...]}},   # INT/FLOAT/STR_ARGS, grid, block,
                                                                      # copy_kind, pageable; "at": sparse
     "kernel_count": [int], "kernel_ns": [int], "kernel_first": [int],   # index into "launched", -1: none
     "launched": [int],            # GPU rows: each row's first MAX_KERNELS launched, in launch order
     "refs": {"row", "name": texts, "kind": texts, "ts_ns", "dur_ns", "track", "parent"}}

Each loop is over tracks, columns or nesting levels, never over events.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis.timeline_event import (
    FLOAT_ARGS,
    INT_ARGS,
    KIND_NAMES,
    MAX_KERNELS,
    MAX_PARENTS,
    STR_ARGS,
    kernel_ranges,
    launched_by_track,
)
from stepscope.model.schema import MemcpyKind
from stepscope.model.trace import Trace

I64 = npt.NDArray[np.int64]
_TEXTS = ("cat", "input_dims", "input_types", "concrete_inputs", "call_stack")


def texts(trace: Trace, ids: npt.NDArray[np.integer[Any]]) -> dict[str, list[Any]]:
    """A string-id column as ``{"strings": distinct texts, "index": position of each, -1 for unset}``."""
    uniq, index = np.unique(ids.astype(np.int64), return_inverse=True)
    known = uniq >= 0
    shift = np.cumsum(known) - 1  # positions among the set ids
    index = np.where(known[index], shift[index], -1)
    return {"strings": trace.strings.decode(uniq[known]).tolist(), "index": index.reshape(-1).tolist()}


def _nullable(values: npt.NDArray[Any], is_set: npt.NDArray[np.bool_]) -> Any:
    """A column set on most rows: its values, null where unset; else only the set cells,
    ``{"at": [positions], "values": [...]}`` (a kernel's arguments are unset on host events)."""
    if 2 * int(is_set.sum()) < len(is_set):
        return {"at": np.flatnonzero(is_set).tolist(), "values": values[is_set].tolist()}
    out = values.astype(object)  # Python ints, floats and texts, and None where unset
    out[~is_set] = None
    return out.tolist()


def _args(trace: Trace, rows: I64) -> dict[str, Any]:
    ev, out = trace.events, {}
    for col in INT_ARGS:
        v = ev[col][rows]
        if (v != -1).any():
            out[col] = _nullable(v, v != -1)
    for col in FLOAT_ARGS:
        f = ev[col][rows].astype(np.float64)
        if np.isfinite(f).any():
            out[col] = _nullable(f, np.isfinite(f))
    for col in STR_ARGS:
        sid = ev[col][rows]
        if (sid >= 0).any():
            out[col] = _nullable(trace.strings.decode(sid), sid >= 0)
    grid = np.stack([ev[c][rows] for c in ("grid_x", "grid_y", "grid_z")], axis=1).astype(np.int64)
    block = np.stack([ev[c][rows] for c in ("block_x", "block_y", "block_z")], axis=1).astype(np.int64)
    has = np.asarray(grid.any(axis=1) | block.any(axis=1))
    if has.any():
        out["grid"], out["block"] = _nullable(grid, has), _nullable(block, has)
    copy = ev["copy_kind"][rows].astype(np.int64)
    if copy.any():
        names = np.array([MemcpyKind(int(c)).name for c in np.unique(copy)], dtype=object)
        out["copy_kind"] = _nullable(names[np.searchsorted(np.unique(copy), copy)], copy != 0)
    page = ev["pageable"][rows]
    if (page >= 0).any():
        out["pageable"] = _nullable(np.asarray(page > 0), np.asarray(page >= 0))
    return out


def _ancestors(trace: Trace, rows: I64) -> I64:
    """The enclosing events of ``rows`` that are not among them (one step per nesting level)."""
    parent = trace.events["parent"]
    seen, extra = rows, np.zeros(0, np.int64)
    frontier = parent[rows].astype(np.int64)
    for _level in range(MAX_PARENTS):
        frontier = np.setdiff1d(frontier[frontier >= 0], seen)
        if not frontier.size:
            break
        extra = np.concatenate([extra, frontier])
        seen = np.union1d(seen, frontier)
        frontier = parent[frontier].astype(np.int64)
    return extra


def _kernels(trace: Trace, rank: int, rows: I64) -> tuple[dict[str, list[int]], I64]:
    """Per row: how many GPU activities it launched, their time, and where its first listed ones start in
    the carried ``launched`` rows."""
    lo, hi = kernel_ranges(trace, rank, rows)
    gpu = launched_by_track(trace, rank)[2]
    dur = trace.events["dur_ns"][gpu].astype(np.int64)
    cum = np.concatenate([[0], np.cumsum(dur)])
    listed = np.minimum(hi - lo, MAX_KERNELS)
    # the union of [lo, lo + listed): positions into launched_by_track's arrays, ascending
    starts = np.repeat(lo - np.cumsum(listed) + listed, listed)
    pos = np.unique(starts + np.arange(int(listed.sum()), dtype=np.int64))
    first = np.where(listed > 0, np.searchsorted(pos, lo), -1)
    return ({"kernel_count": (hi - lo).tolist(), "kernel_ns": (cum[hi] - cum[lo]).tolist(),
             "kernel_first": first.tolist(), "launched": gpu[pos].tolist()}, gpu[pos])


def _refs(trace: Trace, rows: I64) -> dict[str, Any]:
    ev = trace.events
    kinds = ev["kind"][rows].astype(np.int64)
    uniq, index = np.unique(kinds, return_inverse=True)
    return {"row": rows.tolist(), "name": texts(trace, ev["name"][rows]),
            "kind": {"strings": [KIND_NAMES[k] if 0 <= k < len(KIND_NAMES) else "other" for k in uniq.tolist()],
                     "index": index.reshape(-1).tolist()},
            "ts_ns": ev["ts_ns"][rows].tolist(), "dur_ns": ev["dur_ns"][rows].tolist(),
            "track": ev["track"][rows].tolist(), "parent": ev["parent"][rows].tolist()}


def details_table(trace: Trace, rank: int, rows: npt.NDArray[np.integer[Any]]) -> dict[str, Any]:
    """The details of every event of ``rows`` (events of ``rank``), as columns (module docstring)."""
    return _table(trace, rank, np.unique(np.asarray(rows, dtype=np.int64)).astype(np.int64))


def _table(trace: Trace, rank: int, rows: I64) -> dict[str, Any]:
    ev = trace.events
    out: dict[str, Any] = {"rank": rank, "max_kernels": MAX_KERNELS, "max_parents": MAX_PARENTS,
                           "row_delta": np.diff(rows, prepend=0).tolist(), "self_ns": ev["self_ns"][rows].tolist()}
    for col in ("parent", "launch", "op"):  # row - linked row: small numbers; 0: none
        linked = ev[col][rows].astype(np.int64)
        out[col + "_back"] = np.where(linked >= 0, rows - linked, 0).tolist()
    for col in _TEXTS:
        if (ev[col][rows] >= 0).any():
            out[col] = texts(trace, ev[col][rows])
    out["args"] = _args(trace, rows)
    kern, launched = _kernels(trace, rank, rows)
    out.update(kern)
    pointed = np.concatenate([_ancestors(trace, rows), launched, ev["launch"][rows], ev["op"][rows]]).astype(np.int64)
    out["refs"] = _refs(trace, np.setdiff1d(pointed[pointed >= 0], rows))
    return out
