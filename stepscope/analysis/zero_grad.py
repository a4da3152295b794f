"""GPU work that zeroes gradients (PyTorch performance tuning guide: ``zero_grad(set_to_none=True)``).

The GPU activities of a rank inside its steps (kernels, copies, memsets) launched under an
``Optimizer.zero_grad#...`` annotation — the launching op or any op above it —: the memset / fill
kernels of ``zero_grad(set_to_none=False)``, which ``set_to_none=True`` (the default since PyTorch
2.0) replaces by freeing the gradients.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stepscope.analysis._memo import per_rank
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import ancestor_with, in_step_rows, kept_steps
from stepscope.analysis.named import NamedRows, named_rows
from stepscope.model.schema import GPU_KINDS
from stepscope.model.trace import Trace


def is_zero_grad(name: str) -> bool:
    return name.startswith("Optimizer.zero_grad")


@dataclass(frozen=True)
class ZeroGradResult:
    """The GPU activities launched while zeroing gradients, inside the steps (totals over them)."""

    rank: int
    step_count: int  # steps the per-step numbers average over (0 without steps)
    activities: NamedRows


@per_rank
def compute_zero_grad(trace: Trace, rank: int) -> ZeroGradResult:
    """The rank's GPU activities under ``Optimizer.zero_grad`` inside its steps."""
    ev = trace.events
    g = in_step_rows(trace, rank, tuple(int(k) for k in GPU_KINDS))
    under = ancestor_with(trace, ev["op"][g].astype(np.int64), trace.strings.mask(is_zero_grad)) >= 0
    if not under.any():
        raise NotApplicable("no GPU work under Optimizer.zero_grad")
    return ZeroGradResult(rank, len(kept_steps(trace, rank)), named_rows(trace, g[under]))
