"""``small-memcpy``: many tiny host↔device copies per step (Nsight memcpy rules; HTA memory bandwidth).

Detects: H2D / D2H copies under the memcpy analysis' small-size limit (64 KiB) inside steps (its
``small_copies``), at least ``small_memcpy_min_count_per_step`` of them per step, taking
``small_memcpy_min_pct`` of the step. Each copy pays a fixed latency (launch + DMA setup) that
dwarfs its transfer: batch them into one tensor, or keep the values on the device.

Gain: the steps replayed with the copies made as one (what-if ``batch-copies``): the top-level ops
that issue them take no host time, the copies no device time, and the waits inside those ops (a
pageable copy's wait for its stream) no longer block — the host's cost is what matters: 200
``torch.tensor(v, device="cuda")`` a step on an H200 (``tests/data/h200_bounds/r13/small_h2d``) spend
0.08 ms of device time and ~4 ms of host time in their ``aten::to``. Without a replay: half the
copies' GPU time per step.
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, per_step, replayed_saving, top_names
from stepscope.analysis.registry import MEMCPY

RULE_ID = "small-memcpy"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("host", "copy")  # the bounds its change shortens: the calls hold the host
NEEDS_HOST_TIMELINE = True  # copies come with the host timeline: not run on a summary-only trace


def detect(ctx: RuleContext) -> list[Finding]:
    res = ctx.result(MEMCPY)
    copies = res.small_copies
    n = max(len(ctx.steps), 1)
    count, time_ns = copies.count / n, per_step(ctx, float(copies.time_ns))
    if count < ctx.cfg.small_memcpy_min_count_per_step or ctx.pct_of_step(time_ns) < ctx.cfg.small_memcpy_min_pct:
        return []
    evidence = {"small_copies_per_step": round(count, 1), "small_copies_ms": ms(time_ns),
                "small_bytes_limit": int(res.small_bytes), "mean_bytes": copies.mean_bytes,
                "copies": top_names(copies.names, per=n)}
    change = Change("batch-small-copies", {"count_per_step": round(count)})
    replayed = replayed_saving(ctx, "batch-copies", evidence)
    if replayed is not None:
        return [ctx.finding(RULE_ID, replayed, "replayed", evidence, change)]
    return [ctx.finding(RULE_ID, time_ns * 0.5, "copy-latency", evidence, change)]
