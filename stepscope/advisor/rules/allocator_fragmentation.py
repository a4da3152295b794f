"""``allocator-fragmentation``: the caching allocator holds far more than the tensors need, or churns
``cudaMalloc`` / ``cudaFree`` inside the step (SPEC §6).

Detects, from the caching_allocator analysis (the ``[memory]`` events' totals and the allocator
calls):

* fragmentation: at the peak of reserved memory, reserved − allocated ≥ ``fragmentation_min_bytes``
  and ≥ ``fragmentation_min_pct`` of reserved;
* churn: ``cudaMalloc`` / ``cudaFree`` / ``hipMalloc`` / ``hipFree`` calls inside steps take at least
  ``alloc_calls_min_pct`` of the step (``cudaFree`` also synchronises the device; ``empty_cache`` each
  step causes it).

Gain: the steps replayed with the allocator keeping its blocks (what-if ``keep-allocations``: its
calls take no time and ``cudaFree`` no longer waits for the device), so only the calls' time on the
critical path counts — ``cudaFree`` mostly waits for kernels that run anyway (an H200 step with
``empty_cache()``: 7.3 ms a step in the calls, 0.9 ms lost against the same step without it).
Without a replay: the allocator calls' host time per step. Fragmentation itself costs memory, not
time.
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import GIB, ms, per_step, replayed_saving, top_names
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.registry import CACHING_ALLOCATOR

RULE_ID = "allocator-fragmentation"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("host",)  # the bounds its change shortens


def detect(ctx: RuleContext) -> list[Finding]:
    res = ctx.result(CACHING_ALLOCATOR)
    if not res.has_memory_events and len(res.calls) == 0:
        raise NotApplicable(res.no_memory_reason)
    churn_ns = per_step(ctx, float(res.calls.total_ns))
    evidence: dict[str, object] = {"alloc_calls_per_step": round(len(res.calls) / max(len(ctx.steps), 1), 1),
                                   "alloc_calls_ms": ms(churn_ns), "alloc_calls": top_names(res.calls)}
    frag = False
    if res.has_memory_events:
        reserved, alloc = res.at_reserved_peak
        slack = int(reserved - alloc)
        frag_pct = 100.0 * slack / reserved if reserved > 0 else 0.0
        frag = slack >= ctx.cfg.fragmentation_min_bytes and frag_pct >= ctx.cfg.fragmentation_min_pct
        evidence.update(peak_reserved_gib=round(reserved / GIB, 3), allocated_at_peak_gib=round(alloc / GIB, 3),
                        unused_reserved_gib=round(slack / GIB, 3), unused_reserved_pct=round(frag_pct, 1))
    # without steps, start-up allocations cannot be told from per-step churn
    churn = bool(ctx.steps) and ctx.pct_of_step(churn_ns) >= ctx.cfg.alloc_calls_min_pct
    if not (frag or churn):
        return []
    evidence["signals"] = [s for s, on in (("fragmentation", frag), ("allocator-churn", churn)) if on]
    change = Change("allocator-config", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
    replayed = replayed_saving(ctx, "keep-allocations", evidence) if churn else None
    if replayed is not None:
        return [ctx.finding(RULE_ID, replayed, "replayed", evidence, change)]
    return [ctx.finding(RULE_ID, churn_ns if churn else 0.0, "allocator-call-time", evidence, change)]
