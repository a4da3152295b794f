"""Small vectorised helpers the rules share: a rank's rows inside its steps, per-step averages,
top-N names as evidence, and the nearest ancestor op with a property.

These compute only what no analysis result carries (each use is noted in the rule's docstring).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.advisor.context import RuleContext
from stepscope.analysis.named import NamedRows
from stepscope.analysis.registry import REMEDIES
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace
from stepscope.model.tree import nearest_marked_ancestor

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]
GIB = float(1 << 30)


def rank_rows(ctx: RuleContext, *kinds: EventKind, in_steps: bool = True) -> I64:
    """Rows of the context's rank of the given kinds; only inside steps when the rank has steps."""
    ev = ctx.trace.events
    mask = ev["rank"] == (ctx.rank if ctx.rank is not None else ev["rank"])
    if kinds:
        mask &= np.isin(ev["kind"], np.array([int(k) for k in kinds], np.int8))
    if in_steps and ctx.steps:
        mask &= np.isin(ev["step"], np.array(ctx.steps, np.int32))
    return np.flatnonzero(mask).astype(np.int64)


def step_divisor(ctx: RuleContext) -> int:
    """Number of steps totals are averaged over (1 for a trace without steps)."""
    return max(len(ctx.steps), 1)


def per_step(ctx: RuleContext, total_ns: float) -> float:
    """A total over the profiled steps → per average step."""
    return float(total_ns) / step_divisor(ctx)


def ms(ns: float) -> float:
    """ns → ms rounded for evidence."""
    return round(float(ns) / 1e6, 3)


def top_names(trace: Trace, rows: I64, weights: npt.ArrayLike | None = None, k: int = 5,
              name_col: str = "name", per: int = 1) -> list[dict[str, Any]]:
    """The ``k`` names with the largest summed weight (default: duration) among ``rows``, as evidence.

    Returns ``[{"name", "count", "ms"}]``; ``ms`` is divided by ``per`` (e.g. the step count).
    """
    if len(rows) == 0:
        return []
    ids = trace.events[name_col][rows].astype(np.int64)
    w = trace.events["dur_ns"][rows] if weights is None else np.asarray(weights, np.float64)
    uniq, inv = np.unique(ids, return_inverse=True)
    tot = np.bincount(inv, weights=w, minlength=len(uniq))
    cnt = np.bincount(inv, minlength=len(uniq))
    order = np.argsort(-tot, kind="stable")[:k]
    names = trace.strings.decode(uniq[order])
    return [{"name": str(n), "count": int(c), "ms": ms(t / max(per, 1))}
            for n, c, t in zip(names.tolist(), cnt[order].tolist(), tot[order].tolist())]


def top_named(named: NamedRows, per: int = 1, k: int = 5) -> list[dict[str, Any]]:
    """The ``k`` names of an analysis' evidence rows with the largest summed duration, as evidence:
    ``[{"name", "count", "ms"}]``, ``ms`` divided by ``per`` (e.g. the step count)."""
    return [{"name": n, "count": c, "ms": ms(t / max(per, 1))} for n, c, t in named.top(k)]


def op_rows_of(trace: Trace, rows: I64) -> I64:
    """The launching CPU op of GPU rows (``op`` column), -1 when unknown."""
    return trace.events["op"][rows].astype(np.int64)


def ancestor_with(trace: Trace, rows: I64, marked_names: B) -> I64:
    """For each row, the nearest host ancestor (itself included) whose name is marked, else -1."""
    ev = trace.events
    marked = marked_names[ev["name"]]
    ok = rows >= 0
    out = np.full(len(rows), -1, np.int64)
    if ok.any():
        out[ok] = nearest_marked_ancestor(ev["parent"], rows[ok], marked, include_self=True)
    return out


def first_example(trace: Trace, row: int) -> dict[str, Any]:
    """One event as evidence: name, ts (ms from the trace start), duration, step."""
    ev = trace.events
    return {"name": trace.strings[int(ev["name"][row])], "ts_ms": ms(ev["ts_ns"][row] - ev["ts_ns"].min()),
            "dur_ms": ms(ev["dur_ns"][row]), "step": int(ev["step"][row]), "row": int(row)}


def compact_json(text: str) -> str:
    """``Input Dims`` text as one short line (``[[1,141,512],[30522,512]]``); unchanged when not JSON."""
    try:
        return json.dumps(json.loads(text), separators=(",", ":"))
    except ValueError:
        return text


def replayed_saving(ctx: RuleContext, remedy: str, evidence: dict[str, Any]) -> float | None:
    """What the remedy saves on the rank's mean step, replayed (what-if), with its basis added to the
    evidence; None when the replay did not run (the rule keeps its own estimate then)."""
    r = ctx.optional(REMEDIES)
    if r is None or ctx.rank is None:
        return None
    i = r.name.index(remedy)
    evidence.update(whatif_remedy=remedy, whatif_basis=r.basis[i], whatif_measured_ms=ms(r.measured_mean_ns),
                    whatif_predicted_ms=ms(float(r.predicted_mean_ns[i])))
    return r.saved_ns(remedy)
