"""``allocator-fragmentation``: the caching allocator holds far more than the tensors need, or churns
``cudaMalloc`` / ``cudaFree`` inside the step (SPEC §6).

Detects, from the ``[memory]`` events' totals and the runtime calls:

* fragmentation: at the peak of reserved memory, reserved − allocated ≥ ``fragmentation_min_bytes``
  and ≥ ``fragmentation_min_pct`` of reserved;
* churn: ``cudaMalloc`` / ``cudaFree`` / ``hipMalloc`` / ``hipFree`` calls inside steps take at least
  ``alloc_calls_min_pct`` of the step (``cudaFree`` also synchronises the device; ``empty_cache`` each
  step causes it).

Gain: the allocator calls' host time per step (fragmentation itself costs memory, not time).
"""

from __future__ import annotations

import re

import numpy as np

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._memory import device_memory
from stepscope.advisor.rules._util import ms, per_step, rank_rows, top_names
from stepscope.analysis.base import NotApplicable
from stepscope.model.schema import EventKind

RULE_ID = "allocator-fragmentation"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("host",)  # the bounds its change shortens
ALLOC_CALL = re.compile(r"^(cuda|hip)(Malloc|Free)(Async)?$|^cuMem(Alloc|Free)|^cudaDeviceReset$")
GIB = float(1 << 30)


def detect(ctx: RuleContext) -> list[Finding]:
    trace = ctx.trace
    rt = rank_rows(ctx, EventKind.RUNTIME, EventKind.DRIVER)
    rt = rt[trace.strings.mask(lambda s: ALLOC_CALL.match(s) is not None)[trace.events["name"][rt]]]
    churn_ns = per_step(ctx, float(trace.events["dur_ns"][rt].sum()))
    evidence: dict[str, object] = {"alloc_calls_per_step": round(len(rt) / max(len(ctx.steps), 1), 1),
                                   "alloc_calls_ms": ms(churn_ns), "alloc_calls": top_names(trace, rt)}
    frag = False
    try:
        _, alloc, reserved = device_memory(ctx)
        i = int(np.argmax(reserved))
        slack = int(reserved[i] - alloc[i])
        frag_pct = 100.0 * slack / reserved[i] if reserved[i] > 0 else 0.0
        frag = slack >= ctx.cfg.fragmentation_min_bytes and frag_pct >= ctx.cfg.fragmentation_min_pct
        evidence.update(peak_reserved_gib=round(reserved[i] / GIB, 3), allocated_at_peak_gib=round(alloc[i] / GIB, 3),
                        unused_reserved_gib=round(slack / GIB, 3), unused_reserved_pct=round(frag_pct, 1))
    except NotApplicable:
        if len(rt) == 0:
            raise
    # without steps, start-up allocations cannot be told from per-step churn
    churn = bool(ctx.steps) and ctx.pct_of_step(churn_ns) >= ctx.cfg.alloc_calls_min_pct
    if not (frag or churn):
        return []
    evidence["signals"] = [s for s, on in (("fragmentation", frag), ("allocator-churn", churn)) if on]
    return [ctx.finding(RULE_ID, churn_ns if churn else 0.0, "allocator-call-time", evidence,
                        Change("allocator-config", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}))]
