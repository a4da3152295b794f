"""Launch calls that waited for the device: the launch queue was full.

A CUDA / HIP stream holds a bounded number of pending launches (about a thousand). A host that runs
ahead of a busy device fills it, and from then on each launch call blocks until an earlier activity
ends and frees a slot: the call returns a few µs after a device activity's end, having waited for
it. As recorded that wait is host time inside the launch call; replayed as such, it would stay when the
device's work shrinks (mixed precision, channels-last), and a CUDA graph would "save" it. The what-if
graph treats such a call as what it is — a blocking call that waited for the device work it followed
(:mod:`~stepscope.analysis.whatif.graph`'s synchronisations), one no change can drop.

A launch call is taken for a queue-full wait where it lasted at least :data:`MIN_WAIT_NS` and
:data:`TYPICAL_TIMES` × the rank's median launch call, at least :data:`MIN_PENDING` activities were
launched and not finished when it was called, and it returned at most :data:`RETURN_NS` after the end
of a device activity launched before it was called (measured on an H200 and a V100: such calls return
5–13 µs after an activity's end, median, where typical launches take 5–8 µs, with hundreds of
activities pending; a slow launch on an idle device — DLRM's host-bound ranks — has none pending).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stepscope.analysis.common import I64
from stepscope.model.trace import Trace

MIN_WAIT_NS = 50_000
TYPICAL_TIMES = 10.0
RETURN_NS = 30_000
MIN_PENDING = 100


def pending_at(launched_ns: I64, end_ns: I64, t: I64) -> I64:
    """Per instant: the device activities launched by then (``launched_ns``) and not yet ended."""
    out: I64 = (np.searchsorted(np.sort(launched_ns), t, side="right")
                - np.searchsorted(np.sort(end_ns), t, side="right"))
    return out


def long_launch_calls(trace: Trace, launch_rows: I64) -> I64:
    """The launch calls long enough to have waited (see the module docstring), in row order."""
    if len(launch_rows) == 0:
        return launch_rows
    dur = trace.events["dur_ns"][launch_rows]
    limit = max(float(MIN_WAIT_NS), TYPICAL_TIMES * float(np.median(dur)))
    out: I64 = launch_rows[dur >= limit]
    return out


def waited_for_the_queue(awaited: I64, tail_ns: I64) -> npt.NDArray[np.bool_]:
    """Per long launch call (its awaited activity and the time from that activity's end to its return,
    as the graph's synchronisations measure them): whether it waited for a free slot of the queue."""
    out: npt.NDArray[np.bool_] = (awaited >= 0) & (tail_ns <= RETURN_NS)
    return out
