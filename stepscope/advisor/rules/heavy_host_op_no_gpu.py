"""``heavy-host-op-no-gpu``: host ops inside the step launch no GPU work while the GPU idles (SPEC §6).

Detects: top-level ops of a step (direct children of ``ProfilerStep#N``, or of nothing in a trace
without step markers; DataLoader excluded — that
is ``dataloader-bound`` — and so are ops that wait for the device such as ``aten::item``, which are
``sync-in-step``'s) that launch no GPU activity anywhere below them, and during which the GPU is
idle for at least ``host_op_min_pct`` of the step, summed per op name. Typical: metrics computed with
numpy / on CPU tensors, checkpoint or log writing, Python-side preprocessing inside the loop.

The host_ops analysis finds those ops ("launches nothing": no runtime call below the op) and the
GPU idle time inside them per op name; the rule weighs each name against the step.

Gain: the ``move-host-work`` remedy replayed (:class:`~stepscope.analysis.whatif.host_work.MoveHostWork`:
those ops take no host time — moved to the GPU, out of the step or to a worker thread): what reaches the
step. With another ``host_op_min_pct`` than the default, or where the replay did not run: the GPU idle
time inside those ops per step. The change is ``move-host-work``, or ``cpu-optimizer-step`` when the
heaviest op is an optimizer step on the CPU (an offloaded optimizer: run it on the GPU, or overlap it
with the next step's device work — no thread or DataLoader worker can take it).
"""

from __future__ import annotations

import numpy as np

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, replayed_saving
from stepscope.analysis.registry import HOST_OPS
from stepscope.analysis.whatif.host_work import HOST_OP_MIN_PCT

RULE_ID = "heavy-host-op-no-gpu"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("host",)  # the bounds its change shortens
NEEDS_HOST_TIMELINE = True  # reads host ops, launches or annotations: not run on a summary-only trace


def detect(ctx: RuleContext) -> list[Finding]:
    res = ctx.result(HOST_OPS)
    per_name = res.gpu_idle_ns / max(len(ctx.steps), 1)
    heavy = np.flatnonzero(100.0 * per_name / max(ctx.step_ns, 1) >= ctx.cfg.host_op_min_pct)
    if len(heavy) == 0:
        return []
    heavy = heavy[np.argsort(-per_name[heavy], kind="stable")]
    ops = [{"name": res.names[i], "gpu_idle_ms": ms(per_name[i]), "calls": int(res.calls[i])}
           for i in heavy[:5].tolist()]
    gain = float(per_name[heavy].sum())
    evidence = {"gpu_idle_in_ops_ms": ms(gain), "gpu_idle_in_ops_pct": round(ctx.pct_of_step(gain), 2), "ops": ops}
    # an optimizer stepping on the CPU (an offloaded Adam) is not work for a thread or the DataLoader
    key = "cpu-optimizer-step" if str(ops[0]["name"]).startswith("Optimizer.step") else "move-host-work"
    change = Change(key, {"op": ops[0]["name"]})
    replayed = replayed_saving(ctx, "move-host-work", evidence) if ctx.cfg.host_op_min_pct == HOST_OP_MIN_PCT else None
    if replayed is not None:
        return [ctx.finding(RULE_ID, replayed, "replayed", evidence, change)]
    return [ctx.finding(RULE_ID, gain, "gpu-idle-in-host-ops", evidence, change)]
