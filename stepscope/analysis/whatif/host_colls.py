"""The collectives a rank's host runs (gloo, MPI on the CPU), as nodes of its what-if graph."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.collective_records import host_collective_rows
from stepscope.analysis.common import I64
from stepscope.analysis.host_comm import loop_threads
from stepscope.analysis.platform import has_device
from stepscope.model.trace import Trace


@dataclass(frozen=True)
class HostCollectives:
    """The collectives the host runs (gloo, MPI on the CPU), in time order: their rows and the host
    points of their start and end. Alone, a rank's replay keeps their measured lengths; the job
    replay (:mod:`.job`) ends each at its last participant's arrival plus its transfer. A collective
    that runs ``beside`` the loop (a CPU-only rank's, on a gloo worker thread: :mod:`~stepscope.analysis.host_comm`)
    does not hold the host chain while it runs: the loop waits for it from its first communication segment
    (``wait_pt``; -1 where none lies in its span), and its own work there takes its time."""

    row: I64
    start_pt: I64
    end_pt: I64
    beside: npt.NDArray[np.bool_]
    wait_pt: I64



def host_collectives(trace: Trace, rank: int, driver: I64, t: I64, comm_seg: npt.NDArray[np.bool_]) -> HostCollectives:
    """The rank's host-run collectives on its driver threads (the arrival analysis' own records)."""
    ev = trace.events
    rows = host_collective_rows(trace, rank)
    rows = rows[np.isin(rows, driver)]
    rows = rows[np.argsort(ev["ts_ns"][rows], kind="stable")]
    loop = loop_threads(trace, rank)
    beside = (~np.isin(ev["track"][rows], loop) if len(loop) and not has_device(trace, rank)
              else np.zeros(len(rows), bool))
    start, end = np.searchsorted(t, ev["ts_ns"][rows]), np.searchsorted(t, ev["ts_ns"][rows] + ev["dur_ns"][rows])
    return HostCollectives(rows, start, end, beside, np.where(beside, _wait_start(comm_seg, start, end), start))


def _wait_start(comm_seg: npt.NDArray[np.bool_], start: I64, end: I64) -> I64:
    """Per span of points [start, end): its first communication segment; -1 where it has none."""
    comm = np.flatnonzero(comm_seg)
    k = np.searchsorted(comm, start)
    first = comm[np.minimum(k, max(len(comm) - 1, 0))] if len(comm) else np.full(len(start), -1, np.int64)
    out: I64 = np.where((k < len(comm)) & (first < end), first, -1)
    return out
