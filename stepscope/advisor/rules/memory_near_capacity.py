"""``memory-near-capacity``: peak reserved GPU memory is close to the device's capacity (SPEC §6).

Detects: the peak of the caching allocator's reserved memory (caching_allocator analysis, from the
``[memory]`` events) is at least ``memory_capacity_pct`` of the device's total memory
(``deviceProperties``). The run is one larger batch or sequence away from an out-of-memory error,
and cannot grow the batch to fill the GPU.

Gain: none in time (the finding is about headroom); reported with severity low and the numbers.
"""

from __future__ import annotations

import numpy as np

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import GIB
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.platform import NO_DEVICE
from stepscope.analysis.registry import CACHING_ALLOCATOR

RULE_ID = "memory-near-capacity"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ()  # the bounds its change shortens


def detect(ctx: RuleContext) -> list[Finding]:
    res = ctx.result(CACHING_ALLOCATOR)
    capacity = res.device_memory_bytes
    if not capacity:
        raise NotApplicable(NO_DEVICE if ctx.platform.startswith("cpu") else "the device's memory size is not in "
                            "the trace")
    if not res.has_memory_events:
        raise NotApplicable(res.no_memory_reason)
    peak = int(res.reserved_bytes.max())
    pct = 100.0 * peak / capacity
    if pct < ctx.cfg.memory_capacity_pct:
        return []
    evidence = {"peak_reserved_gib": round(peak / GIB, 3),
                "peak_allocated_gib": round(float(np.max(res.allocated_bytes)) / GIB, 3),
                "device_memory_gib": round(capacity / GIB, 3), "peak_pct_of_device": round(pct, 1),
                "device": res.device}
    return [ctx.finding(RULE_ID, 0.0, "headroom-only", evidence, Change("reduce-memory", {}))]
