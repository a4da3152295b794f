"""``pageable-memcpy``: host↔device copies from pageable memory (SPEC §6; Nsight ``cuda_memcpy_async``).

Detects: H2D / D2H copies inside steps whose host side is pageable memory (the memcpy analysis'
``pageable_copies``, from the copy's name ``Memcpy HtoD (Pageable -> Device)``), taking at least
``pageable_min_pct`` of the step. A pageable copy is staged through a driver buffer: it runs at a
fraction of the pinned bandwidth and cannot overlap with the host, even when issued with
``non_blocking=True``.

Gain: the steps replayed with the pageable copies pinned — half their device time, the host no
longer waiting for them (what-if ``pinned-copies``); a copy whose end nothing waited for gains
nothing. Without a replay: half the pageable copies' GPU time per step (pinned copies reach about
twice the bandwidth), plus nothing for the overlap they would gain — a conservative estimate.

The bandwidth the finding cites is their bytes over their time, the statistic of the memcpy
table's GB/s column; it decides nothing (the median copy's, shown beside it in the memcpy view,
falls between two sizes when small and large copies mix: nw0's 5.08 GB/s against 10.06).
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, per_step, replayed_saving, top_names
from stepscope.analysis.registry import MEMCPY

RULE_ID = "pageable-memcpy"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("copy",)  # the bounds its change shortens
NEEDS_HOST_TIMELINE = True  # copies come with the host timeline: not run on a summary-only trace


def detect(ctx: RuleContext) -> list[Finding]:
    res = ctx.result(MEMCPY)
    copies = res.pageable_copies
    time_ns = per_step(ctx, float(copies.time_ns))
    if not copies.count or ctx.pct_of_step(time_ns) < ctx.cfg.pageable_min_pct:
        return []
    n = max(len(ctx.steps), 1)
    bw = copies.bandwidth_gbps  # bytes / time, as the copies table: the median copy of a mix of sizes says little
    evidence = {"pageable_copies_per_step": round(copies.count / n, 1), "pageable_ms": ms(time_ns),
                "pageable_pct": round(ctx.pct_of_step(time_ns), 2), "bytes_per_step": copies.bytes_total // n,
                "bandwidth_gbps": round(bw, 2) if bw is not None else None,
                "copies": top_names(copies.names, per=n)}
    change = Change("pin-memory", {"pin_memory": True, "non_blocking": True})
    replayed = replayed_saving(ctx, "pinned-copies", evidence)
    if replayed is None:
        return [ctx.finding(RULE_ID, time_ns * 0.5, "pinned-bandwidth", evidence, change)]
    return [ctx.finding(RULE_ID, replayed, "replayed", evidence, change)]
