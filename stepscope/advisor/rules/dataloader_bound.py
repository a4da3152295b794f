"""``dataloader-bound``: the step waits for its input batch (SPEC §6 row 1; TB plugin, Paddle, Ascend).

Detects: the step breakdown's DataLoader category — time inside ``DataLoader.__next__`` with no
kernel, copy, memset, communication or runtime call running — is at least ``dataloader_min_pct`` of the
average step. That category *is* "GPU idle while the host is in the DataLoader" by construction.

Gain: the steps replayed with the what-if ``loader-workers`` remedy, so only input time on the critical
path counts: a loader without workers given 4 (each call then waits ``max(0, fetch / 4 − rest of its
step)``); a loader with workers — its calls are waits for them, not fetches, and the trace does not say
how many there are — its time per batch halved (twice the workers on free cores, or each sample half as
costly: each step waits ``max(0, P / 2 − rest)``, P the period its batches arrive at, from the measured
mean step; :mod:`stepscope.analysis.whatif.loader`). Without a replay, the exposed input time per
average step. Workers share the host's CPU cores with the main process, which can slow its remaining
work: the gain is an upper bound, and on a CPU-only rank (the workers take the cores the model computes
on) its basis says so. Where the waits come in bursts (``keep-workers``, below) the gain is the bursts'
waits above the other steps' median wait, per average step (basis ``burst-waits``): keeping the workers
stops their restarts, which a faster loader would not.

The change: workers for a single-process loader; where a quarter of the steps hold three quarters of
the waits (a multi-process loader's epoch starts: its workers started again for each epoch's iterator),
``persistent_workers=True``; else, the loader already having workers, more of them where cores are free
or cheaper samples (cached decoded samples, fewer small files, cheaper augmentation) — cheaper samples
first on a CPU-only rank.

Evidence: per-step DataLoader time, the DataLoader events (dataloader analysis; their names say
single- or multi-process loading), the GPU host-wait inside DataLoader periods (idle analysis, when
it ran).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stepscope.advisor.context import RuleContext, rank_breakdown
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, per_step, replayed_saving, top_names
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.breakdown import StepBreakdown
from stepscope.analysis.registry import DATALOADER, IDLE

RULE_ID = "dataloader-bound"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("input",)  # the bounds its change shortens
NEEDS_HOST_TIMELINE = True  # reads host ops, launches or annotations: not run on a summary-only trace


def breakdown_of(ctx: RuleContext) -> StepBreakdown:
    """The rank's step breakdown (its own analysis, else the overview's copy)."""
    bd = None if ctx.rank is None else rank_breakdown(ctx.bundle, ctx.rank)
    if bd is None:
        raise NotApplicable("the step time breakdown did not run")
    if bd.step_count == 0 or bd.avg_step_ns <= 0:
        raise NotApplicable("no steps to break down")
    return bd


def detect(ctx: RuleContext) -> list[Finding]:
    bd = breakdown_of(ctx)
    col = bd.categories.index("dataloader")
    dl_ns = float(bd.avg_category_ns[col])
    pct = 100.0 * dl_ns / bd.avg_step_ns
    if pct < ctx.cfg.dataloader_min_pct:
        return []
    loader = ctx.optional(DATALOADER)
    n = max(len(ctx.steps), 1)
    events = top_names(loader.calls, per=n) if loader is not None else []
    loading = loader.loading if loader is not None else "unknown"
    evidence = {
        "dataloader_ms": ms(dl_ns), "dataloader_pct": round(pct, 2), "avg_step_ms": ms(bd.avg_step_ns),
        "per_step_dataloader_ms": [ms(v) for v in bd.category_ns[:, col].tolist()],
        "steps": [int(s) for s in bd.step.tolist()], "dataloader_events": events,
        "dataloader_event_ms": ms(per_step(ctx, float(loader.calls.total_ns) if loader is not None else 0.0)),
        "loading": loading,
    }
    idle = ctx.optional(IDLE)
    if idle is not None and len(idle.step):
        evidence["gpu_host_wait_in_dataloader_ms"] = ms(float(np.mean(idle.host_wait_in_dataloader_ns)))
    few = _few_steps_hold_it(bd.category_ns[:, col].astype(np.float64))
    if loading != "multi-process":
        change = Change("set-num-workers", {"num_workers": ctx.cfg.dataloader_default_workers,
                                            "pin_memory": True, "persistent_workers": True})
    elif few is not None:  # the waits come in bursts: an epoch's first batches, its workers started again
        change = Change("keep-workers", {"steps_waiting": few[0], "steps": len(bd.step), "share_pct": few[1]})
        excess_ns = _burst_excess_ns(bd.category_ns[:, col].astype(np.float64), few[0])
        evidence["burst_excess_ms"] = ms(excess_ns)
        return [ctx.finding(RULE_ID, excess_ns, "burst-waits", evidence, change)]
    else:
        change = Change("speed-up-input-pipeline", {"prefetch_factor": 4, "persistent_workers": True})
    gain = replayed_saving(ctx, "loader-workers", evidence)
    if gain is None:
        return [ctx.finding(RULE_ID, dl_ns, "exposed-input-time", evidence, change)]
    return [ctx.finding(RULE_ID, gain, "replayed", evidence, change)]


#: the DataLoader's waits come in bursts when this share of them lies in a quarter of the steps (at least 4)
BURST_SHARE = 0.75


def _few_steps_hold_it(per_step_ns: npt.NDArray[np.float64]) -> tuple[int, float] | None:
    """(steps, % of the waits) where a quarter of the steps hold :data:`BURST_SHARE` of the DataLoader's
    waits — an epoch's first batches, the workers started again for each epoch's iterator — else None."""
    total = float(per_step_ns.sum())
    if len(per_step_ns) < 4 or total <= 0:
        return None
    k = max(len(per_step_ns) // 4, 1)
    top = float(np.sort(per_step_ns)[::-1][:k].sum())
    return (k, round(100.0 * top / total, 1)) if top >= BURST_SHARE * total else None


def _burst_excess_ns(per_step_ns: npt.NDArray[np.float64], k: int) -> float:
    """Per average step, what the ``k`` steps holding the bursts wait beyond the other steps' median wait:
    what keeping the workers across epochs saves (their restart waits go; the others' steady waits stay)."""
    order = np.argsort(per_step_ns)[::-1]
    steady = float(np.median(per_step_ns[order[k:]])) if len(order) > k else 0.0
    return float(np.maximum(per_step_ns[order[:k]] - steady, 0.0).sum()) / len(per_step_ns)
