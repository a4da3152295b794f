"""The rank's device-memory curve from the ``[memory]`` events (helper of our own: the memory view's
result is not relied on here, only the trace's allocator totals)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stepscope.advisor.context import RuleContext
from stepscope.analysis.base import NotApplicable

I64 = npt.NDArray[np.int64]


def device_memory(ctx: RuleContext) -> tuple[I64, I64, I64]:
    """(ts_ns, total_allocated, total_reserved) of the rank's GPU allocator events, in time order."""
    mem = ctx.trace.memory
    sel = (mem["rank"] == ctx.rank) & (mem["device_type"] == 1) & (mem["total_reserved"] >= 0)
    if not sel.any():
        raise NotApplicable("no GPU memory events (profile_memory=True records them)")
    order = np.argsort(mem["ts_ns"][sel], kind="stable")
    return (mem["ts_ns"][sel][order], mem["total_allocated"][sel][order].astype(np.int64),
            mem["total_reserved"][sel][order].astype(np.int64))
