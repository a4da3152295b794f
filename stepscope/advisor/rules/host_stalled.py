"""``host-stalled``: the thread that drives the step is kept off its core inside its ops.

Detects: the host_stalls analysis' stalled op calls (:mod:`stepscope.analysis.host_stalls`): calls whose
own time is at least 10x that of the same op on the same input shapes and a millisecond beyond it — an
``aten::expand`` (a view, microseconds of work) of 8 ms, an ``aten::mm`` of 0.2 ms taking 4 ms. The work
did not grow: the thread waited for the GIL (another Python thread in the process), for a core (more busy
threads than cores: ``torch.set_num_threads`` above the physical cores, several processes' OpenMP pools) or
behind other processes. Fires where the time lost on the step's path is at least ``host_stall_min_pct``
of the step (the median over steps: a stall that recurs, not one step's warm-up).

Gain: that time (on a CPU-only rank the driving thread is the path; on a device rank the part of the
stalled calls' own time during which the device was idle). A lower bound: a stall under 10x its op's
typical time, or between ops, is not counted.

The change: move the other Python thread's work to a process (or release the GIL: vectorised numpy),
``torch.set_num_threads`` / ``OMP_NUM_THREADS`` at most the physical cores less the other busy threads,
and keep other processes off the cores (``taskset``, fewer jobs per machine).
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms
from stepscope.analysis.host_stalls import HostStalls
from stepscope.analysis.registry import HOST_STALLS

RULE_ID = "host-stalled"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("host",)  # the bounds its change shortens
NEEDS_HOST_TIMELINE = True  # reads host ops: not run on a summary-only trace


def detect(ctx: RuleContext) -> list[Finding]:
    hs = ctx.optional(HOST_STALLS)
    if hs is None or not hs.stalled_calls or not len(hs.groups):
        return []
    lost_ns = hs.typical_on_path_ns()
    lost_pct = round(ctx.pct_of_step(lost_ns), 1)
    if lost_pct < ctx.cfg.host_stall_min_pct:
        return []
    change = Change("unstall-host", {"lost_pct": lost_pct, "op": hs.groups.name[0]})
    return [ctx.finding(RULE_ID, lost_ns, "stalled-excess", _evidence(hs, lost_ns, lost_pct), change)]


def _evidence(hs: HostStalls, lost_ns: float, lost_pct: float) -> dict[str, object]:
    n = max(len(hs.step), 1)
    g = hs.groups
    view_ms = ms(float(hs.metadata_ns.sum()) / n) if hs.metadata_ns.any() else None  # none: the words left out
    return {"lost_ms": ms(lost_ns), "lost_pct": lost_pct, "stalled_calls_per_step": round(hs.stalled_calls / n, 1),
            "excess_ms": ms(float(hs.excess_ns.sum()) / n), "metadata_ms": view_ms,
            "per_step_lost_ms": [ms(v) for v in hs.on_path_ns.tolist()],
            "op": g.name[0], "op_shapes": g.shapes[0] or None, "op_typical_us": round(float(g.typical_ns[0]) / 1e3, 1),
            "op_max_ms": ms(float(g.max_ns[0])),
            "ops": [{"name": g.name[i], "shapes": g.shapes[i], "stalled": int(g.stalled[i]),
                     "typical_us": round(float(g.typical_ns[i]) / 1e3, 1), "max_ms": ms(float(g.max_ns[i])),
                     "lost_ms": ms(float(g.excess_ns[i]) / n)} for i in range(min(5, len(g)))]}  # top groups
