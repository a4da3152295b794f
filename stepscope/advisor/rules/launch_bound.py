"""``launch-bound``: the GPU waits for the host to launch work (SPEC §6; HTA idle time & launch stats).

Detects: GPU idle time classified *host-wait* (idle analysis: the next kernel's launch call began
after the gap began) outside DataLoader periods and host-side collectives is at least
``host_wait_min_pct`` of the step. The DataLoader part belongs to ``dataloader-bound``, the host's
time in collectives (gloo on the CPU) to ``comm-not-overlapped``, its time compiling to
``compile-in-step``. The launch analysis says whether kernels are
*short* (shorter than their launch call): then launches themselves are the limit (CUDA Graphs,
``torch.compile``); otherwise Python / CPU work between launches is.

Gain: the steps replayed with launch calls and the host work between them taking no time (what-if
``graph-capture``, the upper bound of graph capture), so only host time on the critical path counts —
for the ``move-python-off-path`` change, with the host's time outside every op taking none (what-if
``move-loop-code``: graphs would not remove it, and moving it leaves the launches);
the step's top-level ops that launch no device work keep their time (``heavy-host-op-no-gpu``'s).
Without a replay: the median over steps of the host-wait idle time outside the DataLoader (the
median, so one disturbed step — warm-up, a hiccup — does not drive it) — what taking the host off
the critical path gives back.

A trace whose device work is linked to no launch call (Ascend text exports: the CANN API events
are in the db layout only) has no gap the idle analysis can call host-wait; there the critical
path's host part (median over steps; the input part is its own) measures the same thing, so the
two layouts of one profile say the same (the db's host-wait 33 ms, the text's host part 41 ms).

The change is CUDA Graphs / ``torch.compile`` when short kernels are common and the launch calls
and the ops that make them — what a graph captures — outweigh the Python between ops on the critical
path (an H200 batch-32 inference of a 24-layer MLP spent 52 % of its host path in ops, 20 % in
launch calls: graph replay took its step from 33.5 to 10.6 ms), else less host work per step — and,
when most of the
host's time on the path lies outside every traced op and mostly in one stretch a step (a block of
loop code: metrics, logging, data handling; an H200 capture spent 10 ms a step in numpy after a
``.cpu()``), moving that code out of the step: neither graphs nor compile remove it. A model's own
Python between its ops is many short gaps (and inside ``nn.Module`` frames where stacks were
recorded): that stays ``reduce-host-work``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, replayed_saving
from stepscope.analysis.critical_path import PARTS
from stepscope.analysis.registry import CRITICAL_PATH, IDLE, KV_CACHE, LAUNCH, PROFILER_COST, SOFTWARE

RULE_ID = "launch-bound"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("host",)  # the bounds its change shortens
NEEDS_HOST_TIMELINE = True  # reads host ops, launches or annotations: not run on a summary-only trace


def detect(ctx: RuleContext) -> list[Finding]:
    per, basis = _host_wait_per_step(ctx)
    if len(per) == 0:
        return []
    wait_ns = float(np.median(per))  # robust to one disturbed step (warm-up, a hiccup)
    if ctx.pct_of_step(wait_ns) < ctx.cfg.host_wait_min_pct:
        return []
    evidence: dict[str, object] = {
        "host_wait_ms": ms(wait_ns), "host_wait_pct": round(ctx.pct_of_step(wait_ns), 2),
        "mean_host_wait_ms": ms(float(per.mean())), "per_step_host_wait_ms": [ms(v) for v in per.tolist()]}
    short_pct = 0.0
    launch = ctx.optional(LAUNCH)
    if launch is not None and len(launch.rows):
        short_pct = launch.short_kernel_pct
        evidence.update(short_kernel_pct=round(short_pct, 1), kernels=len(launch.rows),
                        median_launch_us=round(launch.percentile_ns("cpu_launch_ns", 50) / 1e3, 2),
                        median_kernel_us=round(launch.percentile_ns("kernel_ns", 50) / 1e3, 2))
    cp = ctx.optional(CRITICAL_PATH)
    launches_dominate, untraced_pct = True, 0.0
    if cp is not None and len(cp.step):
        evidence["critical_path_pct"] = {k: round(v, 1) for k, v in cp.share_pct().items()}
        host = cp.host_share_pct()
        evidence["host_path_pct"] = {k: round(v, 1) for k, v in host.items()}
        # what a graph captures (the launch calls and the ops around them) against Python between ops
        launches_dominate = host["launch"] + host["host_ops"] >= host["untraced"]
        if host["untraced"] > host["launch"] + host["host_ops"] and not cp.untraced_in_gaps():
            untraced_pct = host["untraced"]
    unprofiled = ctx.optional(PROFILER_COST)
    if unprofiled is not None and unprofiled.unprofiled_step_ns is not None and unprofiled.unprofiled_shares_pct:
        # the wait above is the recording's: say what of it the program itself leaves (the verdict's step)
        evidence["unprofiled_host_path_ms"] = ms(unprofiled.unprofiled_step_ns
                                                 * unprofiled.unprofiled_shares_pct.get("host", 0.0) / 100.0)
    compiled = ctx.result(SOFTWARE).compiled
    evidence["compiled"] = compiled
    if untraced_pct:
        change = Change("move-python-off-path", {"untraced_pct": round(untraced_pct, 1)})
    elif compiled:
        change = Change("graph-capture-compiled", {"short_kernel_pct": round(short_pct), **_growing(ctx)})
    elif short_pct >= ctx.cfg.short_kernel_min_share_pct and launches_dominate:
        change = Change("cuda-graphs-or-compile", {"short_kernel_pct": round(short_pct), **_growing(ctx)})
    else:
        change = Change("reduce-host-work", {})
    remedy = "graph-capture" if change.key != "move-python-off-path" else "move-loop-code"  # the change's own
    replayed = replayed_saving(ctx, remedy, evidence) if basis == "host-wait-idle" else None
    if replayed is None:
        return [ctx.finding(RULE_ID, wait_ns, basis, evidence, change)]
    return [ctx.finding(RULE_ID, replayed, "replayed", evidence, change)]


def _host_wait_per_step(ctx: RuleContext) -> tuple[npt.NDArray[np.float64], str]:
    """Per step, the device's wait for the host outside the DataLoader, and the basis it is read on:
    the idle analysis's host-wait gaps, or the critical path's host part when no device activity is
    linked to a launch call (no gap can be told host-wait then)."""
    if ctx.optional(LAUNCH) is None:
        cp = ctx.optional(CRITICAL_PATH)
        if cp is not None and cp.has_device and len(cp.step):
            return cp.parts_ns[:, PARTS.index("host")].astype(np.float64), "host-on-path"
    idle = ctx.result(IDLE)
    waits = (idle.host_wait_ns - idle.host_wait_in_dataloader_ns - idle.host_wait_in_comm_ns
             - idle.host_wait_in_compile_ns)
    return waits.astype(np.float64), "host-wait-idle"


def _growing(ctx: RuleContext) -> dict[str, object]:
    """A tensor grown by concatenation every call (a KV cache): its shape and lengths, which a graph capture
    must first make fixed (:mod:`stepscope.analysis.kv_cache`); nothing where none grows."""
    kv = ctx.optional(KV_CACHE)
    if kv is None:
        return {}
    return {"growing_cache": kv.cache_shape, "cache_lengths": f"{kv.shortest}-{kv.longest}"}
