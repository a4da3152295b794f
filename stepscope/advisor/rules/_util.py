"""What the rules share to word their evidence: per-step averages, ms rounding, the top names of an
analysis' evidence rows, the what-if saving of a remedy. Nothing here reads the trace: every number
comes from an analysis result (``tests/test_layers.py`` checks that rules never reach the trace).
"""

from __future__ import annotations

from typing import Any

from stepscope.advisor.context import RuleContext
from stepscope.analysis.named import NamedRows
from stepscope.analysis.peaks import DevicePeak, amp_speedup
from stepscope.analysis.registry import REMEDIES

GIB = float(1 << 30)

#: mixed precision's speed-up where the device (or its peaks) is unknown: conservative
UNKNOWN_DEVICE_AMP_SPEEDUP = 2.0


def step_divisor(ctx: RuleContext) -> int:
    """Number of steps totals are averaged over (1 for a trace without steps)."""
    return max(len(ctx.steps), 1)


def per_step(ctx: RuleContext, total_ns: float) -> float:
    """A total over the profiled steps → per average step."""
    return float(total_ns) / step_divisor(ctx)


def ms(ns: float) -> float:
    """ns → ms rounded for evidence."""
    return round(float(ns) / 1e6, 3)


def top_names(named: NamedRows, per: int = 1, k: int = 5) -> list[dict[str, Any]]:
    """The ``k`` names of an analysis' evidence rows with the largest summed duration, as evidence:
    ``[{"name", "count", "ms"}]``, ``ms`` divided by ``per`` (e.g. the step count)."""
    return [{"name": n, "count": c, "ms": ms(t / max(per, 1))} for n, c, t in named.top(k)]


def replayed_saving(ctx: RuleContext, remedy: str, evidence: dict[str, Any]) -> float | None:
    """What the remedy saves on the rank's mean step, replayed (what-if), with its basis added to the
    evidence; None when the replay did not run (the rule keeps its own estimate then)."""
    r = ctx.optional(REMEDIES)
    if r is None or ctx.rank is None:
        return None
    i = r.name.index(remedy)
    unprofiled = r.unprofiled_saved_ns(remedy)
    if unprofiled is not None and r.unprofiled_mean_ns is not None and r.unprofiled_predicted_ns is not None:
        # the rank was replayed without the profiler's own cost (analysis.profiler_cost): the saving is
        # measured from the step the program runs, not from the profiler's host
        evidence.update(whatif_remedy=remedy, whatif_measured_ms=ms(r.unprofiled_mean_ns),
                        whatif_predicted_ms=ms(float(r.unprofiled_predicted_ns[i])),
                        whatif_recorded_ms=ms(r.measured_mean_ns), whatif_basis=r.basis[i],
                        whatif_unprofiled_us=r.unprofiled_cost_ns / 1e3)
        return unprofiled
    evidence.update(whatif_remedy=remedy, whatif_basis=r.basis[i], whatif_measured_ms=ms(r.measured_mean_ns),
                    whatif_predicted_ms=ms(float(r.predicted_mean_ns[i])))
    return r.saved_ns(remedy)


def amp_speedup_for(ctx: RuleContext, peak: DevicePeak | None, from_dtype: str) -> float:
    """The speed-up mixed precision brings to ``from_dtype`` math: the config's ``amp_speedup`` when
    set (> 0), else the device's peak ratio (:func:`stepscope.analysis.peaks.amp_speedup`), else 2."""
    if ctx.cfg.amp_speedup > 0:
        return ctx.cfg.amp_speedup
    return amp_speedup(peak, from_dtype) or UNKNOWN_DEVICE_AMP_SPEEDUP


def on_path_share(ctx: RuleContext, kernel_set: str, evidence: dict[str, Any]) -> float:
    """The share (0-1) of a compute remedy's kernels' time that reaches the step (the critical
    path's first-order share of :mod:`stepscope.analysis.whatif.remedies`' kernel set), added to the evidence
    as ``on_path_pct``; 1.0 when the replay did not run (the rule's estimate is then unweighed)."""
    r = ctx.optional(REMEDIES)
    share = r.on_path_share(kernel_set) if r is not None and ctx.rank is not None else None
    if share is None:
        return 1.0
    evidence["on_path_pct"] = round(100.0 * share, 1)
    return share
