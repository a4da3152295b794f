"""Choose the steps of one side (``--base-steps`` / ``--new-steps``): a trace cut to those steps.

The analyses then run unchanged on the smaller trace. Events keep their row links: ``parent``,
``launch`` and ``op`` (and ``memory.op``, ``steps.row``) are renumbered into the kept rows, and a
link to a dropped row becomes ``-1``. Memory, counter and flow rows are kept when their time falls
inside a chosen step's (GPU-stretched) window on their rank.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt

from stepscope.errors import UsageError
from stepscope.model.table import Table
from stepscope.model.trace import Trace
from stepscope.model.uniq import unique

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

_EVENT_LINKS = ("parent", "launch", "op")


def parse_steps(spec: str | None) -> list[int] | None:
    """``"5-8,10"`` → ``[5, 6, 7, 8, 10]``; None or "" → None (all steps)."""
    if not spec:
        return None
    out: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            if sep:
                a, b = int(lo), int(hi)
                if b < a:
                    raise ValueError(part)
                out.extend(range(a, b + 1))
            else:
                out.append(int(part))
        except ValueError:
            raise UsageError(f"bad step selection {spec!r} (use e.g. 5-8,10)") from None
    return sorted(set(out))


def _remap(links: npt.NDArray[np.integer], new_index: I64) -> npt.NDArray[np.int32]:
    ok = links >= 0
    out = np.where(ok, new_index[np.where(ok, links, 0)], -1)
    return out.astype(np.int32)


def _in_windows(rank: npt.NDArray[np.integer], ts: I64, steps: Table) -> B:
    """Rows whose (rank, time) falls inside one of the kept steps' windows."""
    keep = np.zeros(len(ts), bool)
    for r in unique(steps["rank"]).tolist():  # per rank, not per row
        s = np.flatnonzero(steps["rank"] == r)
        s = s[np.argsort(steps["start_ns"][s], kind="stable")]
        starts, ends = steps["start_ns"][s], steps["end_ns"][s]
        rows = np.flatnonzero(rank == r)
        pos = np.searchsorted(starts, ts[rows], side="right") - 1
        ok = (pos >= 0) & (ts[rows] < ends[np.maximum(pos, 0)])
        keep[rows[ok]] = True
    return keep


def select_steps(trace: Trace, steps: list[int] | None) -> Trace:
    """The trace restricted to the given ProfilerStep numbers (all of them when None)."""
    if steps is None:
        return trace
    st = trace.steps
    chosen = np.isin(st["step"], np.asarray(steps, np.int32))
    have = sorted(set(st["step"].tolist()))
    if not chosen.any():
        raise UsageError(f"none of steps {steps} is in the trace {trace.source} (it has {have or 'no steps'})")
    missing = sorted(set(steps) - set(have))
    if missing:
        raise UsageError(f"steps {missing} are not in the trace {trace.source} (it has {have})")
    ev = trace.events
    keep = np.isin(ev["step"], np.asarray(steps, np.int32))
    new_index = np.cumsum(keep).astype(np.int64) - 1
    events = ev.take(keep)
    events = events.with_columns(**{c: _remap(events[c], new_index) for c in _EVENT_LINKS})
    kept_steps = st.take(chosen)
    kept_steps = kept_steps.with_columns(row=_remap(kept_steps["row"], new_index))
    mem = trace.memory.take(_in_windows(trace.memory["rank"], trace.memory["ts_ns"], kept_steps))
    mem = mem.with_columns(op=_remap(mem["op"], new_index))
    counters = trace.counters.take(_in_windows(trace.counters["rank"], trace.counters["ts_ns"], kept_steps))
    flows = trace.flows.take(_in_windows(trace.flows["rank"], trace.flows["ts_ns"], kept_steps))
    return dataclasses.replace(trace, events=events, steps=kept_steps, memory=mem, counters=counters,
                               flows=flows)
