"""The one classification of device activity: every GPU/NPU row is compute, communication, a copy
or a memset, decided here and nowhere else.

==============  ================================================================================
COMPUTE         a kernel that is not communication
COMMUNICATION   a kernel the communication classification (:mod:`stepscope.analysis.comm`) calls
                communication: a library family by name, or launched by a communication op
MEMCPY          a copy (its direction and memory kind are the model's ``copy_kind`` / ``pageable``)
MEMSET          a memset
==============  ================================================================================

The step breakdown, the kernel table, the distributed view, the step attribution (verdict), the
advisor, compare and the reports all read this array, so a kernel is communication everywhere or
nowhere.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np
import numpy.typing as npt

from stepscope.analysis._memo import per_trace
from stepscope.analysis.comm import classify
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace


class Activity(IntEnum):
    """What a device row does (NONE for host rows)."""

    NONE = 0
    COMPUTE = 1
    COMMUNICATION = 2
    MEMCPY = 3
    MEMSET = 4


@per_trace
def activity_of(trace: Trace) -> npt.NDArray[np.int8]:
    """One :class:`Activity` code per event row of the trace."""
    kind = trace.events["kind"]
    out = np.zeros(len(kind), np.int8)
    kernel = kind == EventKind.KERNEL
    comm = classify(trace).is_comm
    out[kernel & ~comm] = Activity.COMPUTE
    out[kernel & comm] = Activity.COMMUNICATION
    out[kind == EventKind.MEMCPY] = Activity.MEMCPY
    out[kind == EventKind.MEMSET] = Activity.MEMSET
    return out


def is_comm_row(trace: Trace) -> npt.NDArray[np.bool_]:
    """Per event row: a communication kernel (the same answer in every view)."""
    out: npt.NDArray[np.bool_] = activity_of(trace) == Activity.COMMUNICATION
    return out
