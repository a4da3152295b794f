"""The last repairs of one file's events, whatever reader made them: events at absurd times and exact
duplicates are dropped, each counted in the diagnostics.

* **Absurd times**: a start beyond ±2^62 ns (146 years from the time base) or a duration over 24 h.
  The Kineto reader drops such durations itself; a SQLite export can hold any int64 (an edited
  ``end`` of 2^63 − 1, a ``start`` of −2^63), and analyses that add and subtract times would
  overflow on them.
* **Exact duplicates**: an event identical to another in every column the model keeps (name,
  category, start, duration, track, and the arguments read: correlation, External id, shapes, grid
  …) is kept once — a trace written twice into one file, or one event emitted twice, counted
  twice every time and length it adds up to.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.model.diagnostics import DiagnosticsBuilder

Cols = dict[str, npt.NDArray[Any]]
MAX_DUR_NS = 24 * 3600 * 10**9
MAX_ABS_TS_NS = 1 << 62


def sanitize_events(events: Cols, diags: DiagnosticsBuilder, source: str) -> Cols:
    """``events`` (one file's, in (track, time) order) without absurd times and exact duplicates."""
    if not events or len(events["ts_ns"]) == 0:
        return events
    ts, dur = events["ts_ns"], events["dur_ns"]
    absurd = (ts >= MAX_ABS_TS_NS) | (ts <= -MAX_ABS_TS_NS) | (dur > MAX_DUR_NS) | (dur < 0)
    drop = absurd | _duplicates(events)
    n_absurd = int(absurd.sum())
    if n_absurd:
        i = int(np.argmax(absurd))
        diags.add("event-absurd-time", "error", f"an event starting at {int(ts[i]):,} ns lasting {int(dur[i]):,} ns "
                  "(beyond ±2^62 ns or longer than 24 h) was dropped", n_absurd, source=source)
    n_dup = int((drop & ~absurd).sum())
    if n_dup:
        diags.add("duplicate-events", "warning", "events identical to another (name, start, duration, track and "
                  "arguments) were read once", n_dup, source=source)
    if not drop.any():
        return events
    keep = ~drop
    return {k: v[keep] for k, v in events.items()}


def _duplicates(events: Cols) -> npt.NDArray[np.bool_]:
    """Every row identical to an earlier row in all columns (duplicates sit in one run of equal
    (track, start, duration), as the events are in that order: only such runs are compared)."""
    track, ts, dur = events["track"], events["ts_ns"], events["dur_ns"]
    n = len(ts)
    out = np.zeros(n, bool)
    same = (track[1:] == track[:-1]) & (ts[1:] == ts[:-1]) & (dur[1:] == dur[:-1])
    if not same.any():
        return out
    in_run = np.zeros(n, bool)
    in_run[1:] |= same
    in_run[:-1] |= same
    rows = np.flatnonzero(in_run)
    run = np.cumsum(np.concatenate([[True], ~same[rows[1:] - 1]]))
    cols = [run] + [_as_int64(events[k][rows]) for k in sorted(events)]
    table = np.ascontiguousarray(np.column_stack(cols))
    _, first = np.unique(table, axis=0, return_index=True)
    dup = np.ones(len(rows), bool)
    dup[first] = False
    out[rows[dup]] = True
    return out


def _as_int64(col: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    if col.dtype.kind == "f":
        return col.astype(np.float64).view(np.int64)
    return col.astype(np.int64)
