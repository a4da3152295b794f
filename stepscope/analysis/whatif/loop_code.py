"""The loop's own code moved off the step as a what-if: the host's time outside every traced op.

The critical path's *untraced* host time (:mod:`stepscope.analysis.host_traced`): what no op the
profiler recorded covers on the threads that drive the step — the training loop's Python, I/O
(``torch.save`` of a checkpoint, logging), garbage collection. Moved out of the step (every N steps,
on another thread, ``gc.freeze()`` after setup), it takes no time; ops, launch calls, the DataLoader,
blocking calls and collectives keep theirs, and the replay says what reaches the step.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from stepscope.analysis.host_traced import traced_rows
from stepscope.analysis.sync import driver_rows
from stepscope.analysis.whatif.graph import SEG_HOST, StepGraph
from stepscope.analysis.whatif.replay import Durations
from stepscope.analysis.whatif.transforms import share_inside_rows
from stepscope.model.trace import Trace


@dataclass(frozen=True)
class MoveLoopCode:
    """The host's time outside every recorded op takes no time."""

    name: str = field(default="move-loop-code", init=False)

    def basis(self) -> str:
        return ("the host's time outside every op the profiler recorded (the loop's Python, I/O, garbage "
                "collection) moved off the step; ops, launch calls, the DataLoader, blocking calls and "
                "collectives keep their time")

    def cpu_basis(self) -> str:
        return ("the host's time outside every op the profiler recorded (the loop's Python, I/O, garbage "
                "collection) moved off the step; ops, the DataLoader and collectives keep their time")

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        host = g.host.seg_kind == SEG_HOST
        if not host.any():
            return d
        inside = share_inside_rows(trace, g, traced_rows(trace, driver_rows(trace, g.rank)))
        outside = np.where(host, 1.0 - inside, 0.0)
        hit = outside > 1e-9
        if not hit.any():
            return d
        seg = d.host_seg_ns.copy()
        seg[hit] = np.round(seg[hit] * (1.0 - outside[hit])).astype(np.int64)
        return replace(d, host_seg_ns=seg)
