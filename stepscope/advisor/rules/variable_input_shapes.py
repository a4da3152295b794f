"""``variable-input-shapes``: the same ops see different input shapes from step to step (SPEC §6).

Detects (needs ``record_shapes``): among ops that run in every profiled step, the share of calls
whose (op, input shapes) pair is *not* seen in every step is at least ``shape_variability_min_pct``.
Varying shapes (NLP batches padded to their longest sequence, variable image sizes) defeat
``cudnn.benchmark`` caches, CUDA Graphs and ``torch.compile`` (recompiles), and pad work.

Helper of our own: (name, shape) keys per step, counted with ``np.unique`` — no view returns them.

Gain: not estimated (depends on the padding removed); severity low, the shapes are the evidence.
"""

from __future__ import annotations

import numpy as np

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import compact_json, rank_rows
from stepscope.analysis.base import NotApplicable
from stepscope.model.schema import EventKind
from stepscope.model.uniq import unique

RULE_ID = "variable-input-shapes"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("host", "compute")  # the bounds its change shortens


def detect(ctx: RuleContext) -> list[Finding]:
    if len(ctx.steps) < 2:
        raise NotApplicable("needs two or more profiled steps")
    ev = ctx.trace.events
    rows = rank_rows(ctx, EventKind.CPU_OP)
    rows = rows[ev["input_dims"][rows] >= 0]
    if len(rows) == 0:
        raise NotApplicable("input shapes were not recorded (record_shapes=True)")
    nsteps = len(ctx.steps)
    name, step = ev["name"][rows].astype(np.int64), ev["step"][rows].astype(np.int64)
    key = name * (1 << 31) + ev["input_dims"][rows].astype(np.int64)
    in_steps = _distinct_steps(key, step)
    everywhere = _distinct_steps(name, step) == nsteps
    calls = everywhere.sum()
    varying = everywhere & (in_steps < nsteps)
    pct = 100.0 * float(varying.sum()) / calls if calls else 0.0
    if pct < ctx.cfg.shape_variability_min_pct:
        return []
    example = rows[np.flatnonzero(varying)[:1]]
    ex_name = int(ev["name"][example[0]])
    same = rows[(name == ex_name) & varying]
    shapes = unique(ev["input_dims"][same])[:4]
    evidence = {"varying_calls_pct": round(pct, 1), "steps": nsteps, "example_op": ctx.trace.strings[ex_name],
                "example_shapes": [compact_json(ctx.trace.strings[int(s)]) for s in shapes.tolist()]}
    return [ctx.finding(RULE_ID, 0.0, "not-estimated", evidence, Change("bucket-by-length", {}))]


def _distinct_steps(key: np.ndarray, step: np.ndarray) -> np.ndarray:
    """Per row, in how many distinct steps its key occurs (distinct (key, step) pairs via one lexsort)."""
    order = np.lexsort((step, key))
    k, s = key[order], step[order]
    first = np.ones(len(k), bool)
    first[1:] = (k[1:] != k[:-1]) | (s[1:] != s[:-1])
    keys, counts = np.unique(k[first], return_counts=True)
    out: np.ndarray = counts[np.searchsorted(keys, key)]
    return out
