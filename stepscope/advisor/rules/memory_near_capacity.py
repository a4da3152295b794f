"""``memory-near-capacity``: peak reserved GPU memory is close to the device's capacity (SPEC §6).

Detects: the peak of the caching allocator's reserved memory (``[memory]`` events) is at least
``memory_capacity_pct`` of the device's total memory (``deviceProperties``). The run is one larger
batch or sequence away from an out-of-memory error, and cannot grow the batch to fill the GPU.

Gain: none in time (the finding is about headroom); reported with severity low and the numbers.
"""

from __future__ import annotations

import numpy as np

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._memory import device_memory
from stepscope.analysis.base import NotApplicable

RULE_ID = "memory-near-capacity"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ()  # the bounds its change shortens
GIB = float(1 << 30)


def detect(ctx: RuleContext) -> list[Finding]:
    dev = ctx.trace.device_of_rank(ctx.rank) if ctx.rank is not None else None
    if dev is None or not dev.total_memory_bytes:
        raise NotApplicable("the device's memory size is not in the trace")
    _, alloc, reserved = device_memory(ctx)
    peak = int(reserved.max())
    pct = 100.0 * peak / dev.total_memory_bytes
    if pct < ctx.cfg.memory_capacity_pct:
        return []
    evidence = {"peak_reserved_gib": round(peak / GIB, 3), "peak_allocated_gib": round(float(np.max(alloc)) / GIB, 3),
                "device_memory_gib": round(dev.total_memory_bytes / GIB, 3), "peak_pct_of_device": round(pct, 1),
                "device": dev.name}
    return [ctx.finding(RULE_ID, 0.0, "headroom-only", evidence, Change("reduce-memory", {}))]
