"""``sync-in-step``: the host blocks on the device inside the step (SPEC §6; Nsight ``cuda_api_sync``).

Detects: blocking sync calls (``cudaDeviceSynchronize`` / ``StreamSynchronize`` / ``EventSynchronize``,
blocking ``cudaMemcpy``) and D2H copies inside steps (sync analysis) whose host time is at least
``sync_min_pct`` of the average step. The usual causes are ``.item()``, ``.cpu()``, ``.tolist()``,
printing or logging a tensor every step; the sync analysis names the op and the Python call site.

Gain: the steps replayed with the blocking calls no longer blocking (what-if ``drop-syncs``): the
host queues the next kernels instead of waiting, and what that gives back is what the step loses.
Without a replay: the host time blocked per step, capped by the GPU host-wait idle of the step.
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, replayed_saving
from stepscope.analysis.registry import IDLE, SYNC

RULE_ID = "sync-in-step"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("host", "copy")  # the bounds its change shortens
NEEDS_HOST_TIMELINE = True  # reads host ops, launches or annotations: not run on a summary-only trace


def detect(ctx: RuleContext) -> list[Finding]:
    res = ctx.result(SYNC)
    sync_ns = res.avg_ns("sync_ns")
    if ctx.pct_of_step(sync_ns) < ctx.cfg.sync_min_pct:
        return []
    idle = ctx.optional(IDLE)
    gain = sync_ns
    if idle is not None and len(idle.step):
        host_wait = (idle.host_wait_ns - idle.host_wait_in_dataloader_ns - idle.host_wait_in_comm_ns
                     - idle.host_wait_in_compile_ns)
        gain = min(gain, float(host_wait.mean()))
    s = res.sites
    sites = [{"call": s.what[i], "op": s.op[i], "top_op": s.top_op[i], "call_site": s.call_site[i],
              "count": int(s.count[i]), "ms": ms(s.time_ns[i])} for i in range(min(5, len(s.what)))]
    evidence = {"sync_ms": ms(sync_ns), "sync_pct": round(ctx.pct_of_step(sync_ns), 2),
                "sync_calls_per_step": round(res.avg_ns("sync_count"), 1),
                "d2h_copies_per_step": round(res.avg_ns("d2h_count"), 1), "sites": sites}
    top = sites[0] if sites else {}
    change = Change("remove-step-sync", {"call": top.get("call", ""), "op": top.get("op", ""),
                                         "call_site": top.get("call_site", "")})
    replayed = replayed_saving(ctx, "drop-syncs", evidence)
    if replayed is None:
        return [ctx.finding(RULE_ID, max(gain, 0.0), "blocked-host-time", evidence, change)]
    return [ctx.finding(RULE_ID, replayed, "replayed", evidence, change)]
