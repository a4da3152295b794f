"""``pipeline-bubble``: the busiest pipeline stage sits idle in every step, waiting for its neighbours.

Detects: a pipeline of the pipeline analysis (:mod:`stepscope.analysis.pipeline`) whose *critical
bubble* — per step, the idle time of its busiest stage (window − compute − other device work) — is at
least ``pipeline_bubble_min_pct`` % of the step, and whose busiest stage spends at least
``pipeline_wait_min_share_pct`` % of that idle time inside recv / send kernels (so the idle is the
pipeline's fill and drain, not the host or the input pipeline).

Gain: the critical bubble per step. The step cannot be shorter than the busiest stage's work; every
instant it sits idle in the step is on the critical path, and a schedule with a smaller bubble (more
micro-batches, interleaved virtual stages, a zero-bubble schedule) removes it — at most all of it.
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms
from stepscope.analysis.registry import PIPELINE

RULE_ID = "pipeline-bubble"
SCOPE = "cluster"
ADDRESSES: tuple[str, ...] = ("communication", "imbalance")  # the bounds its change shortens


def detect(ctx: RuleContext) -> list[Finding]:
    p = ctx.result(PIPELINE)
    pl, st = p.pipelines, p.stages
    out: list[Finding] = []
    for i in range(len(pl)):  # a few pipelines
        gain = float(pl.critical_bubble_ns[i])
        j = int(((st.pipeline == i) & (st.stage == pl.slowest_stage[i])).argmax())  # the busiest stage's row
        bubble = float(st.bubble_ns[j])
        if float(pl.critical_bubble_pct[i]) < ctx.cfg.pipeline_bubble_min_pct or bubble <= 0:
            continue
        if 100.0 * float(st.p2p_wait_ns[j]) / bubble < ctx.cfg.pipeline_wait_min_share_pct:
            continue
        mine = st.pipeline == i
        evidence = {"pipeline_ranks": [int(r) for r in st.rank[mine]], "order": str(pl.order[i]),
                    "stage_count": int(pl.stage_count[i]), "steps": int(pl.step_count[i]),
                    "slowest_stage": int(pl.slowest_stage[i]), "slowest_rank": int(st.rank[j]),
                    "critical_bubble_ms": ms(gain), "critical_bubble_pct": round(float(pl.critical_bubble_pct[i]), 1),
                    "warmup_ms": ms(st.warmup_ns[j]), "cooldown_ms": ms(st.cooldown_ns[j]),
                    "interior_ms": ms(st.interior_ns[j]), "p2p_wait_ms": ms(st.p2p_wait_ns[j]),
                    "busy_ms": ms(st.busy_ns[j]), "imbalance_pct": round(float(pl.imbalance_pct[i]), 1),
                    "per_stage_bubble_ms": {str(int(s)): ms(b) for s, b in zip(st.stage[mine], st.bubble_ns[mine])},
                    "p2p_per_step": round(float(st.p2p_per_step[j]), 1)}
        out.append(ctx.finding(RULE_ID, min(gain, float(ctx.step_ns)) if ctx.step_ns > 0 else gain,
                               "critical-bubble", evidence,
                               Change("shrink-pipeline-bubble", {"stages": int(pl.stage_count[i])})))
    return out
