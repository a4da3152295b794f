"""``sync-in-step``: the host blocks on the device inside the step (SPEC §6; Nsight ``cuda_api_sync``).

Detects: blocking sync calls (``cudaDeviceSynchronize`` / ``StreamSynchronize`` / ``EventSynchronize``,
blocking ``cudaMemcpy``) and D2H copies inside steps (sync analysis) whose host time is at least
``sync_min_pct`` of the average step. The usual causes are ``.item()``, ``.cpu()``, ``.tolist()``,
printing or logging a tensor every step; the sync analysis names the op and the Python call site.

What the host waits for decides the change: for queued kernels (the usual case) the sync itself is
what to remove; for the device-to-host copies themselves (their device time at least
``bulk_readback_min_pct`` of the blocked time: an offloaded optimizer, gradients or activations read
back in bulk) the host needs the data, so the change is to copy asynchronously and consume it piece
by piece while the rest copies (change ``overlap-device-to-host``); for calls that copy a host tensor
to the device synchronously (at least ``bulk_readback_min_pct`` of the blocked time: ``randn(...).to(dev)``
in the loop, a pageable ``hipMemcpyWithStream``) nothing is read back, so the change is to make the
tensor on the device or copy it from pinned memory without blocking (change ``async-copy-to-device``).

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
    change = _change(ctx, sync_ns, sites, evidence)
    replayed = replayed_saving(ctx, "drop-syncs", evidence)
    if replayed is None:
        return [ctx.finding(RULE_ID, max(gain, 0.0), "blocked-host-time", evidence, change)]
    return [ctx.finding(RULE_ID, replayed, "replayed", evidence, change)]


def _change(ctx: RuleContext, sync_ns: float, sites: list[dict[str, object]],
            evidence: dict[str, object]) -> Change:
    """``remove-step-sync`` when the host waits for queued work; ``overlap-device-to-host`` when it
    waits mostly for the device-to-host copies themselves (the data is what the host needs)."""
    res = ctx.result(SYNC)
    d2h_ns, d2h_bytes = res.avg_ns("d2h_ns"), res.avg_ns("d2h_bytes")
    on_copies_pct = 100.0 * d2h_ns / sync_ns if sync_ns > 0 else 0.0
    evidence.update(d2h_copy_ms=ms(d2h_ns), wait_on_copies_pct=round(min(on_copies_pct, 100.0), 1))
    if on_copies_pct >= ctx.cfg.bulk_readback_min_pct and d2h_bytes > 0:
        return Change("overlap-device-to-host", {"mb_per_step": round(d2h_bytes / 1e6, 1),
                                                 "gb_per_s": round(d2h_bytes / d2h_ns, 2)})
    to_device_pct = 100.0 * res.avg_ns("h2d_sync_ns") / sync_ns if sync_ns > 0 else 0.0
    evidence.update(in_copies_to_device_pct=round(min(to_device_pct, 100.0), 1))
    top = sites[0] if sites else {}
    where = {"call": top.get("call", ""), "op": top.get("op", ""), "call_site": top.get("call_site", "")}
    if to_device_pct >= ctx.cfg.bulk_readback_min_pct:  # the host writes, it reads nothing: no .item() to remove
        return Change("async-copy-to-device", where)
    return Change("remove-step-sync", where)
