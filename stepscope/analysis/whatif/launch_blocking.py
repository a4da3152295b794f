"""``CUDA_LAUNCH_BLOCKING`` unset as a what-if: launch calls return at once again.

With ``CUDA_LAUNCH_BLOCKING=1`` (a debugging switch left on) every launch call returns only after its
kernel ended (the launch analysis: launch delay ≤ −kernel duration). Unset, such a call takes a normal
launch's :data:`NORMAL_LAUNCH_NS` and the host runs ahead while the kernel runs: the calls' host time
beyond that is gone, and the replay says what of it reaches the step — on a device-bound program the
kernels still take their time, so much of what the host waited is not saved.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np

from stepscope.analysis.launch import blocking_launch_calls
from stepscope.analysis.whatif.graph import StepGraph
from stepscope.analysis.whatif.replay import Durations
from stepscope.model.trace import Trace

#: a launch call's host time when it does not block (the cuda-launch-blocking rule's normal launch)
NORMAL_LAUNCH_NS = 5_000


@dataclass(frozen=True)
class NoLaunchBlocking:
    """Launch calls that returned after their kernel ended take :data:`NORMAL_LAUNCH_NS`."""

    normal_ns: int = NORMAL_LAUNCH_NS
    name: str = field(default="no-launch-blocking", init=False)
    device_part: ClassVar[str] = "a GPU's kernel launches under CUDA_LAUNCH_BLOCKING"

    def basis(self) -> str:
        return (f"CUDA_LAUNCH_BLOCKING unset: the launch calls that returned after their kernel ended take "
                f"{self.normal_ns / 1e3:g} µs, the host running ahead of the device")

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        calls = blocking_launch_calls(trace, g.rank)
        if len(calls) == 0:
            return d
        start = trace.events["ts_ns"][calls]
        end = start + trace.events["dur_ns"][calls]
        t = g.host.t_ns
        a = np.minimum(np.searchsorted(t, start), len(t) - 1)
        b = np.minimum(np.searchsorted(t, end), len(t) - 1)
        on_chain = (t[a] == start) & (t[b] == end) & (b > a)  # calls of the step's driving threads
        a, b, length = a[on_chain], b[on_chain], (end - start)[on_chain]
        count = b - a  # segments each call spans
        first = np.repeat(np.cumsum(count) - count, count)
        seg_idx = np.repeat(a, count) + np.arange(int(count.sum())) - first
        factor = np.repeat(np.minimum(1.0, self.normal_ns / np.maximum(length, 1)), count)
        seg = d.host_seg_ns.copy()
        seg[seg_idx] = np.round(seg[seg_idx] * factor).astype(np.int64)
        return replace(d, host_seg_ns=seg)
