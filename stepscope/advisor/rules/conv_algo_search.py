"""``conv-algo-search``: cuDNN searches convolution algorithms again in step after step (SPEC §6).

Detects: convolution op calls that each launch at least ``conv_search_min_kernels`` kernels, or half
that and ``conv_search_over_median`` times as many as the median call of the same op (one kernel per
algorithm tried: ``cudnn.benchmark = True`` meeting a shape it has not cached), in two or more
profiled steps. (A plain ``convolution_backward`` launches several kernels — data and weight
gradients, bias, split-K reductions — on every call; the comparison with the op's own median keeps
that from counting.) With static shapes the search runs once; seen every step, the shapes change
(variable sequence lengths / image sizes, a last partial batch).

Gain: the ``no-algo-search`` remedy replayed (:class:`~stepscope.analysis.whatif.algo_search.NoAlgoSearch`:
each searching call's kernels at 1 / their count of their time — the run that would remain without the
search —, its host time a call's that did not search, its waits for the trials gone): what reaches the
step. With other ``conv_search_*`` values than the defaults, or where the replay did not run: per step,
the larger of the searching calls' kernel time minus one kernel's share per call and their host time
beyond a call's that did not search (``search_host_ms``: it holds the waits for the trials).
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, per_step, replayed_saving
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.convolutions import CONV_SEARCH_MIN_KERNELS, CONV_SEARCH_OVER_MEDIAN
from stepscope.analysis.registry import CONVOLUTIONS
from stepscope.model.uniq import unique

RULE_ID = "conv-algo-search"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("host", "compute")  # the bounds its change shortens: the search is host work too
NEEDS_HOST_TIMELINE = True  # reads host ops, launches or annotations: not run on a summary-only trace


def detect(ctx: RuleContext) -> list[Finding]:
    if len(ctx.steps) < 2:
        raise NotApplicable("needs two or more profiled steps")
    c = ctx.optional(CONVOLUTIONS)
    if c is None:
        return []
    calls = c.calls
    searching = calls.searching(ctx.cfg.conv_search_min_kernels, ctx.cfg.conv_search_over_median)
    steps = unique(calls.step[searching])
    if len(steps[steps >= 0]) < 2:
        return []
    extra, host = calls.search_ns(searching), calls.search_host_ns(searching)
    evidence = {"searching_calls": int(searching.sum()), "steps_with_search": [int(s) for s in steps if s >= 0],
                "max_kernels_per_call": int(calls.kernels.max()), "search_ms": ms(per_step(ctx, extra)),
                "search_host_ms": ms(per_step(ctx, host)),
                "ops": sorted({calls.names[i] for i in calls.op[searching][:20].tolist()})}
    change = Change("static-shapes-for-benchmark", {})
    default = (ctx.cfg.conv_search_min_kernels, ctx.cfg.conv_search_over_median) == (CONV_SEARCH_MIN_KERNELS,
                                                                                    CONV_SEARCH_OVER_MEDIAN)
    replayed = replayed_saving(ctx, "no-algo-search", evidence) if default else None
    if replayed is not None:
        return [ctx.finding(RULE_ID, replayed, "replayed", evidence, change)]
    # the host's time in the calls includes its waits for the trials: the larger of the two, not their sum
    return [ctx.finding(RULE_ID, per_step(ctx, max(extra, host)), "search-time", evidence, change)]
