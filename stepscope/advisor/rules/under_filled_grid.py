"""``under-filled-grid``: heavy kernels launch fewer blocks than the GPU has SMs (SPEC §6; Visual Profiler).

Detects: kernels inside steps of at least ``underfill_min_kernel_us`` whose grid has fewer blocks
than three quarters of the SMs (launch configuration analysis, ``underfilled_in_step``; a larger
grid is sized to the machine: Hopper's persistent GEMMs) take at least
``underfill_min_pct`` of kernel time. Such a kernel leaves ``1 − blocks / SMs`` of the GPU idle for
its whole run. The finding's sentence names the ``underfill_min_kernel_us`` floor (evidence
``min_kernel_us``): the launch-configuration view's share counts every under-filled kernel, however
short, so it is larger.

Gain: the ``fill-sms`` remedy replayed (:class:`~stepscope.analysis.whatif.kernel_remedies.FillSms`: each
of those kernels takes ``1 − (1 − blocks / SMs) × underfill_recoverable`` of its time — a larger batch,
fusion or a split-K / stream-K kernel fills part, not all, of the idle SMs): what reaches the step. With
other ``underfill_*`` values than the defaults, or where the replay did not run: Σ duration × (1 −
blocks / SMs) per step × ``underfill_recoverable`` × their share of the step's critical path.
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, on_path_share, per_step, replayed_saving, top_names
from stepscope.analysis.registry import LAUNCH_CONFIG
from stepscope.analysis.whatif.kernel_remedies import UNDERFILL_MIN_KERNEL_US, UNDERFILL_RECOVERABLE

RULE_ID = "under-filled-grid"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("compute",)  # the bounds its change shortens


def detect(ctx: RuleContext) -> list[Finding]:
    res = ctx.result(LAUNCH_CONFIG)
    u = res.underfilled_in_step(ctx.cfg.underfill_min_kernel_us * 1e3)
    pct = 100.0 * u.time_ns / res.kernel_time_ns if res.kernel_time_ns else 0.0
    if u.count == 0 or pct < ctx.cfg.underfill_min_pct:
        return []
    n = max(len(ctx.steps), 1)
    evidence = {"sm_count": res.sm_count, "min_kernel_us": ctx.cfg.underfill_min_kernel_us,
                "underfilled_kernel_pct": round(pct, 2),
                "underfilled_ms": ms(per_step(ctx, u.time_ns)),
                "idle_sm_ms": ms(per_step(ctx, u.idle_sm_ns)), "sm_fill_pct": round(res.sm_fill_pct, 1),
                "mean_blocks": round(u.mean_blocks, 1), "kernels": top_names(u.names, per=n)}
    change = Change("fill-the-gpu", {"sm_count": res.sm_count})
    default = (ctx.cfg.underfill_min_kernel_us, ctx.cfg.underfill_recoverable) == (UNDERFILL_MIN_KERNEL_US,
                                                                                 UNDERFILL_RECOVERABLE)
    replayed = replayed_saving(ctx, "fill-sms", evidence) if default else None
    if replayed is not None:
        return [ctx.finding(RULE_ID, replayed, "replayed", evidence, change)]
    gain = per_step(ctx, u.idle_sm_ns) * ctx.cfg.underfill_recoverable
    gain *= on_path_share(ctx, "fill-sms", evidence)  # only what reaches the step counts
    return [ctx.finding(RULE_ID, gain, "idle-sm-share", evidence, change)]
