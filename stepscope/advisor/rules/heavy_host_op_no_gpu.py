"""``heavy-host-op-no-gpu``: host ops inside the step launch no GPU work while the GPU idles (SPEC §6).

Detects: top-level ops of a step (direct children of ``ProfilerStep#N``; DataLoader excluded — that
is ``dataloader-bound`` — and so are ops that wait for the device such as ``aten::item``, which are
``sync-in-step``'s) that launch no GPU activity anywhere below them, and during which the GPU is
idle for at least ``host_op_min_pct`` of the step, summed per op name. Typical: metrics computed with
numpy / on CPU tensors, checkpoint or log writing, Python-side preprocessing inside the loop.

Helper of our own: "launches nothing" (no runtime call below the op) and the op ∩ GPU-idle time are
computed here with the interval algebra, vectorised.

Gain: the GPU idle time inside those ops per step — what moving them to the GPU, out of the step or
to a worker thread gives back.
"""

from __future__ import annotations

import re

import numpy as np

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, rank_rows
from stepscope.analysis import intervals
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.breakdown import is_dataloader
from stepscope.analysis.hier import any_descendant
from stepscope.model.schema import GPU_KINDS, EventKind

RULE_ID = "heavy-host-op-no-gpu"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("host",)  # the bounds its change shortens
#: ops that wait for the device (``.item()``, ``.cpu()``, copies): ``sync-in-step``'s business
SYNC_OPS = re.compile(r"^aten::(item|_local_scalar_dense|to|_to_copy|copy_|cpu|tolist|nonzero|equal)$")


def detect(ctx: RuleContext) -> list[Finding]:
    trace, ev = ctx.trace, ctx.trace.events
    st = trace.steps
    step_rows = st["row"][st["rank"] == ctx.rank]
    if len(step_rows) == 0:
        raise NotApplicable("no ProfilerStep annotations: top-level ops of a step are unknown")
    gpu = rank_rows(ctx, *GPU_KINDS, in_steps=False)
    if len(gpu) == 0:
        raise NotApplicable("no GPU activity")
    host = rank_rows(ctx, EventKind.CPU_OP, EventKind.USER_ANNOTATION)
    top = host[np.isin(ev["parent"][host], step_rows)]
    launches = any_descendant(ev["parent"], _launching(ctx, gpu))
    skip = trace.strings.mask(lambda s: is_dataloader(s) or SYNC_OPS.match(s) is not None)
    top = top[~launches[top] & ~skip[ev["name"][top]]]
    if len(top) == 0:
        return []
    busy = intervals.union(ev["ts_ns"][gpu], ev["ts_ns"][gpu] + ev["dur_ns"][gpu])
    idle_ns = _idle_inside(ev["ts_ns"][top], ev["ts_ns"][top] + ev["dur_ns"][top], busy)
    names, inv = np.unique(ev["name"][top], return_inverse=True)
    per_name = np.bincount(inv, weights=idle_ns, minlength=len(names)) / max(len(ctx.steps), 1)
    heavy = np.flatnonzero(100.0 * per_name / max(ctx.step_ns, 1) >= ctx.cfg.host_op_min_pct)
    if len(heavy) == 0:
        return []
    heavy = heavy[np.argsort(-per_name[heavy], kind="stable")]
    ops = [{"name": trace.strings[int(names[i])], "gpu_idle_ms": ms(per_name[i]),
            "calls": int((inv == i).sum())} for i in heavy[:5].tolist()]
    gain = float(per_name[heavy].sum())
    evidence = {"gpu_idle_in_ops_ms": ms(gain), "gpu_idle_in_ops_pct": round(ctx.pct_of_step(gain), 2), "ops": ops}
    return [ctx.finding(RULE_ID, gain, "gpu-idle-in-host-ops", evidence,
                        Change("move-host-work", {"op": ops[0]["name"]}))]


def _launching(ctx: RuleContext, gpu: np.ndarray) -> np.ndarray:
    """Host rows that launch GPU work: runtime/driver calls, and every op a GPU activity links to."""
    ev = ctx.trace.events
    op = ev["op"][gpu]
    if not (op >= 0).any() and not (ev["launch"][gpu] >= 0).any():
        raise NotApplicable("GPU activity is not linked to the host ops that launched it")
    marked = np.isin(ev["kind"], [int(EventKind.RUNTIME), int(EventKind.DRIVER)])
    marked[op[op >= 0]] = True
    return marked


def _idle_inside(start: np.ndarray, end: np.ndarray, busy: intervals.Intervals) -> np.ndarray:
    """Per interval, its length not covered by the busy set (ns)."""
    covered = intervals.covered_in_windows(busy, start.astype(np.int64), end.astype(np.int64))
    out: np.ndarray = (end - start - covered).astype(np.float64)
    return out
