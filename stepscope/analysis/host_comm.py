"""Where a CPU-only rank's host-run collectives hold its step, and where they run beside it.

A gloo job on the CPU runs its collectives on the process group's worker threads: DDP hands each
gradient bucket to them during the backward and the training loop's thread goes on computing the
next buckets' gradients. The loop's thread waits for communication only where it is not running
ops of its own while a collective is in flight (DDP's finalize waiting for the last bucket, a
blocking ``dist.all_reduce`` / ``barrier`` on the loop's thread, or an idle loop thread in a job that
does nothing but communicate). So on a CPU-only rank whose steps are marked, the collectives' time on
the step's path is: the collectives on the loop's threads (the threads holding the step markers),
and the other threads' collectives where no op of the loop's threads runs. Counting every thread's
collective time (what a rank with a device, whose collectives run on its driving thread, has)
called 135 ms of a 256 ms step "communication with no computation beside it" on a symmetric
3-rank DDP job whose loop thread ran ops for 232 ms of it (an outside capture, 2026-11-28).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis.comm import host_collective_mask
from stepscope.analysis.common import I64, interval_set, rank_rows
from stepscope.analysis.platform import has_device
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

#: host rows that are the loop thread's own work (not its step markers, Python frames or collectives)
_WORK_KINDS = (int(EventKind.CPU_OP), int(EventKind.USER_ANNOTATION))


def loop_threads(trace: Trace, rank: int) -> npt.NDArray[np.int32]:
    """The tracks holding the rank's step markers (its training loop's threads); empty without markers."""
    st = trace.steps
    rows = st["row"][(st["rank"] == rank) & (st["row"] >= 0)].astype(np.int64)
    out: npt.NDArray[np.int32] = np.unique(trace.events["track"][rows]).astype(np.int32)
    return out


def collectives_on_path(trace: Trace, rank: int, driver: I64) -> intervals.Intervals:
    """The rank's host-run collectives (among ``driver``, its driving rows) as an interval set: all of them
    on a rank with a device or without step markers; on a CPU-only rank, those on its loop's threads
    and the other threads' ones where the loop's threads run no op of their own."""
    comm = driver[host_collective_mask(trace)[driver]]
    loop = loop_threads(trace, rank)
    if len(comm) == 0 or len(loop) == 0 or has_device(trace, rank):
        return interval_set(trace, comm)
    ev = trace.events
    on_loop = np.isin(ev["track"][comm], loop)
    if on_loop.all():
        return interval_set(trace, comm)
    own = interval_set(trace, comm[on_loop])
    beside = intervals.subtract(interval_set(trace, comm[~on_loop]), loop_work(trace, rank, loop))
    return intervals.union(np.concatenate([own[0], beside[0]]), np.concatenate([own[1], beside[1]]))


def loop_work(trace: Trace, rank: int, loop: npt.NDArray[np.int32]) -> intervals.Intervals:
    """When the loop's threads run ops or annotated work of their own (not their step markers, and not
    their collectives: a collective on the loop's thread is a wait there, not work)."""
    ev = trace.events
    rows = rank_rows(trace, rank, _WORK_KINDS)
    rows = rows[np.isin(ev["track"][rows], loop)]
    markers = trace.steps["row"][trace.steps["row"] >= 0].astype(np.int64)
    rows = rows[~np.isin(rows, markers) & ~host_collective_mask(trace)[rows]]
    return interval_set(trace, rows)
