"""Who caused a host event: its innermost op, its outermost op below the step, its Python call site.

Shared by the synchronisation and copy analyses. Walks the ``parent`` chain one level at a time,
vectorised over the queried rows (the loop is over nesting depth, not over events).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stepscope.analysis.common import I32, I64
from stepscope.model.schema import EventKind
from stepscope.model.steps import STEP_NAME
from stepscope.model.trace import Trace
from stepscope.model.uniq import unique

_OP_KINDS = (int(EventKind.CPU_OP), int(EventKind.USER_ANNOTATION))


@dataclass(frozen=True)
class CallSites:
    """Per queried row: ``op`` innermost CPU op, ``top_op`` outermost op below ``ProfilerStep#N``,
    ``stack`` the row whose ``call_stack`` is nearest (all -1 when none), ``site`` the index into
    ``site_names`` of the first user frame of that stack (-1 none)."""

    op: I32
    top_op: I32
    stack: I32
    site: I32
    site_names: tuple[str, ...]


def user_frame(stack: str) -> str:
    """The innermost frame of a ';'-separated call stack that is not inside torch or site-packages."""
    frames = [f.strip() for f in stack.split(";") if f.strip()]
    for f in frames:
        if "site-packages" not in f and "/torch/" not in f and "dist-packages" not in f:
            return f
    return frames[0] if frames else ""


def call_sites(trace: Trace, rows: I64) -> CallSites:
    """Innermost op, outermost op and Python call site of each row (a host event)."""
    ev, pool = trace.events, trace.strings
    kind, parent, stack_col = ev["kind"], ev["parent"], ev["call_stack"]
    is_op = np.isin(kind, _OP_KINDS) & ~pool.mask(lambda s: bool(STEP_NAME.match(s)))[ev["name"]]
    n = len(rows)
    op = np.full(n, -1, np.int32)
    top = np.full(n, -1, np.int32)
    stack = np.full(n, -1, np.int32)
    cur = rows.astype(np.int64)
    live = np.arange(n)
    while len(live):  # one nesting level per pass
        c = cur[live]
        hit_op = is_op[c]
        first = hit_op & (op[live] < 0) & (kind[c] == EventKind.CPU_OP)
        op[live[first]] = c[first]
        top[live[hit_op]] = c[hit_op]
        has_stack = (stack_col[c] >= 0) & (stack[live] < 0)
        stack[live[has_stack]] = c[has_stack]
        cur[live] = parent[c]
        live = live[cur[live] >= 0]
    site, names = _site_ids(trace, stack)
    return CallSites(op, top, stack, site, names)


def _site_ids(trace: Trace, stack_rows: I32) -> tuple[I32, tuple[str, ...]]:
    ev, pool = trace.events, trace.strings
    sid = np.where(stack_rows >= 0, ev["call_stack"][np.maximum(stack_rows, 0)], -1)
    uniq = unique(sid[sid >= 0])
    out = np.full(len(sid), -1, np.int32)
    if len(uniq) == 0:
        return out, ()
    frames = [user_frame(pool[int(u)]) for u in uniq.tolist()]  # per unique stack
    names, idx = np.unique(np.array(frames, dtype=object), return_inverse=True)
    out[sid >= 0] = np.asarray(idx).reshape(-1)[np.searchsorted(uniq, sid[sid >= 0])]
    return out, tuple(str(x) for x in names)
