"""The last repairs of one file's events, whatever reader made them: events at absurd times are
dropped, counted in the diagnostics.

* **Absurd times**: a start beyond ±2^62 ns (146 years from the time base) or a duration over 24 h.
  The Kineto reader drops such durations itself; a SQLite export can hold any int64 (an edited
  ``end`` of 2^63 − 1, a ``start`` of −2^63), and analyses that add and subtract times would
  overflow on them.
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
    """``events`` (one file's, in (track, time) order) without absurd times."""
    if not events or len(events["ts_ns"]) == 0:
        return events
    ts, dur = events["ts_ns"], events["dur_ns"]
    absurd = (ts >= MAX_ABS_TS_NS) | (ts <= -MAX_ABS_TS_NS) | (dur > MAX_DUR_NS) | (dur < 0)
    drop = absurd
    n_absurd = int(absurd.sum())
    if n_absurd:
        i = int(np.argmax(absurd))
        diags.add("event-absurd-time", "error", f"an event starting at {int(ts[i]):,} ns lasting {int(dur[i]):,} ns "
                  "(beyond ±2^62 ns or longer than 24 h) was dropped", n_absurd, source=source)
    if not drop.any():
        return events
    keep = ~drop
    return {k: v[keep] for k, v in events.items()}

