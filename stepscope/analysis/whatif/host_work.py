"""Host work moved off the step as a what-if: the heavy top-level ops that launch nothing.

The host_ops analysis' top-level ops of the steps that launch no GPU work (DataLoader ranges and ops
that wait for the device left out), by name; a name is heavy where the GPU idles inside its calls for
at least :data:`HOST_OP_MIN_PCT` of the mean step (the advisor's ``host_op_min_pct``). Its calls take
no host time — moved to a worker thread, to the GPU, or out of the step — and the replay says what
reaches the step: time the GPU spent idle behind them, less what other work then holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.host_ops import compute_host_ops, cpu_only_top_ops
from stepscope.analysis.whatif.graph import StepGraph
from stepscope.analysis.whatif.replay import Durations
from stepscope.analysis.whatif.transforms import HostOverhead, Select
from stepscope.model.trace import Trace

#: the advisor's ``host_op_min_pct`` default: GPU idle inside a name's calls, % of the mean step
HOST_OP_MIN_PCT = 5.0


@dataclass(frozen=True)
class MoveHostWork:
    """The heavy CPU-only top-level ops take no host time."""

    min_pct: float = HOST_OP_MIN_PCT
    name: str = field(default="move-host-work", init=False)
    device_part: ClassVar[str] = "host ops that leave a GPU idle"

    def basis(self) -> str:
        return (f"the step's top-level ops that launch nothing and idle the GPU ≥ {self.min_pct:g} % of the step "
                "moved off it (a worker thread, the GPU, or outside the step): their host time gone")

    def change(self, trace: Trace, g: StepGraph, d: Durations) -> Durations:
        try:
            res = compute_host_ops(trace, g.rank)
            top = cpu_only_top_ops(trace, g.rank)
        except NotApplicable:
            return d
        steps = g.steps.measured_end_ns - g.steps.measured_start_ns
        if len(steps) == 0 or len(top) == 0:
            return d
        per_step = res.gpu_idle_ns / max(res.step_count, 1)
        heavy = {n for n, v in zip(res.names, per_step.tolist()) if 100.0 * v / max(float(steps.mean()), 1.0)
                 >= self.min_pct}  # per name, not per event
        if not heavy:
            return d
        ids = np.unique(trace.events["name"][top])
        keep = np.array([str(s) in heavy for s in trace.strings.decode(ids)], bool)  # per name
        rows = top[np.isin(trace.events["name"][top], ids[keep])]
        return HostOverhead(0.0, Select(rows=tuple(rows.tolist()))).change(trace, g, d)
