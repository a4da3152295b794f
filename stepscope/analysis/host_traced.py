"""What the profiler traced of the host's time: launch calls, and the other ops, on the driving threads.

The critical path splits the host's time on the step's path into launch calls, other host ops and
*untraced* time — what no op covers: the loop's Python, I/O, garbage collection (a
``with_stack=True`` trace's Python frames are not ops, except a module's forward, ``nn.Module: X``,
which is the model's own host work). The ``move-loop-code`` what-if removes the untraced part; both
read the rows from here, so the verdict's untraced share and the remedy's saving are of one time.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis.common import I64, interval_set
from stepscope.analysis.modules import PREFIX as MODULE
from stepscope.model.schema import EventKind
from stepscope.model.steps import STEP_NAME
from stepscope.model.trace import Trace

LAUNCH_CALL = ("Launch", "MemcpyAsync", "MemsetAsync")  # GraphLaunch contains Launch
#: untraced time of which at least this share lies in stretches shorter than :data:`SHORT_GAP_NS` is many short
#: gaps between ops (the model's own Python per op), not blocks of loop code
SHORT_SHARE = 0.5
#: an untraced stretch shorter than this is Python between two ops (a dispatch, a few lines), not loop code
SHORT_GAP_NS = 500_000


def in_short_gaps(untraced_ns: float, short_ns: float) -> bool:
    """Whether untraced time lies mostly in short gaps between ops (``short_ns``: its time in stretches
    shorter than :data:`SHORT_GAP_NS`) rather than in blocks of loop code: the verdict's words,
    ``launch-bound``'s and ``host-outside-ops``' changes read it alike. (Reading the longest stretch
    against half the total had called three blocks of 8-13 ms beside 65 tiny gaps "many short gaps".)"""
    return untraced_ns > 0 and short_ns >= SHORT_SHARE * untraced_ns


def launch_and_op_rows(trace: Trace, driver: I64) -> tuple[I64, I64]:
    """Of the driver rows: the launch calls (runtime / driver calls that launch or copy), and every
    other row that traces host work (step markers and Python frames outside a module's forward aside)."""
    is_launch, traced = _masks(trace, driver)
    return driver[is_launch], driver[traced & ~is_launch]


def traced_rows(trace: Trace, driver: I64) -> I64:
    """The driver rows whose time is traced host work (launch calls and ops), in the driver rows' order."""
    return driver[_masks(trace, driver)[1]]


def _masks(trace: Trace, driver: I64) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Per driver row: is it a launch call; does it trace host work (neither a step marker nor a Python
    frame outside a module's forward — a launch call is one)."""
    ev, pool = trace.events, trace.strings
    name, kind = ev["name"][driver], ev["kind"][driver]
    is_launch = pool.mask(lambda s: any(m in s for m in LAUNCH_CALL))[name] & np.isin(
        kind, [EventKind.RUNTIME, EventKind.DRIVER])
    is_step = pool.mask(lambda s: bool(STEP_NAME.match(s)))[name]
    is_python = (kind == EventKind.PYTHON_FUNCTION) & ~pool.mask(lambda s: s.startswith(MODULE))[name]
    return is_launch, ~is_step & ~is_python


def freed_outside_ops_bytes(trace: Trace, rank: int, driver: I64, start: I64, end: I64) -> I64:
    """Per window, the bytes of host memory the rank freed outside every traced op (a profile with
    ``profile_memory=True`` records each free): big tensors dropped when the loop's locals go, whose
    pages go back to the system — time no op holds. Zeros where the trace recorded no memory events."""
    mem = trace.memory
    pick = np.flatnonzero((mem["rank"] == rank) & (mem["bytes"] < 0) & (mem["device_type"] == 0))
    out = np.zeros(len(start), np.int64)
    if len(pick) == 0 or len(start) == 0:
        return out
    ts = mem["ts_ns"][pick]
    outside = ~intervals.contains(interval_set(trace, traced_rows(trace, driver)), ts)
    win = np.searchsorted(start, ts, side="right") - 1
    ok = outside & (win >= 0) & (ts < end[np.maximum(win, 0)])
    np.add.at(out, win[ok], -mem["bytes"][pick][ok])
    return out
