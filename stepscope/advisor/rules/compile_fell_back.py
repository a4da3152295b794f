"""``compile-fell-back``: Dynamo is consulted every step but no compiled region runs — the function runs
eager under its ``torch.compile`` wrapper, silently (Dynamo's recompile limit reached: guards that fail
on every call, such as a list the frame appends to or a Python scalar that changes; an error suppressed;
a construct it skips).

Detects, from the compiled analysis' :class:`~stepscope.analysis.dynamo_frames.DynamoFrames`: in at least
half of the steady steps (no compilation in them), ``TorchDynamo Cache Lookup`` calls that no
``Torch-Compiled Region`` follows (the lookups beyond the regions; where the trace has no region range,
a step's lookups with no compiled range at all). A graph break (two frames, two regions) is not one;
a step that compiles is :mod:`compile-in-step <.compile_in_step>`'s.

The change: find why with ``TORCH_LOGS=recompiles,graph_breaks``; take the data-dependent Python
(``.item()``, list appends, changing Python scalars) out of the compiled function or mark it
``torch.compiler.disable``; ``dynamic=True`` where shapes vary; raise
``torch._dynamo.config.recompile_limit`` only for a bounded set of variants.

Gain: what the eager ops would take compiled cannot be read from a trace where they ran eager. Where the
same trace has steady steps whose frames all compiled, the falling-back steps' excess over them
(measured); otherwise none is estimated (``eager-time-unknown``: the evidence gives the eager ops' time,
which compiled may shrink a lot or not at all). The CPU MLP of ``tests/data/cpu_cases/compile_fallback``: 1.9 ms
a step compiled, 1.8 ms eager — compiling that frame gains nothing measurable there; its warm-up cost
is 7 recompiles of ~230 ms each.
"""

from __future__ import annotations

from typing import Any

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, step_divisor, top_names
from stepscope.analysis.dynamo_frames import DynamoFrames
from stepscope.analysis.registry import COMPILED

RULE_ID = "compile-fell-back"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("host", "compute")  # the bounds its change shortens
NEEDS_HOST_TIMELINE = True  # reads host ops: not run on a summary-only trace


def detect(ctx: RuleContext) -> list[Finding]:
    f = ctx.result(COMPILED).frames
    back, steady = int(f.falling_back.sum()), int(f.steady.sum())
    if back == 0 or 2 * back < steady:
        return []
    evidence = _evidence(ctx, f)
    compiled_ns = f.mean_step_ns(f.compiled_steady)
    if compiled_ns > 0:  # steps that compiled the same frames, measured beside the ones that did not
        excess = float((f.step_ns[f.falling_back] - compiled_ns).clip(min=0).sum())
        evidence.update(compiled_step_ms=ms(compiled_ns), eager_step_ms=ms(f.mean_step_ns(f.falling_back)),
                        steps_compiled=int(f.compiled_steady.sum()))
        return [ctx.finding(RULE_ID, excess / step_divisor(ctx), "compiled-steps-measured", evidence, _CHANGE)]
    return [ctx.finding(RULE_ID, 0.0, "eager-time-unknown", evidence, _CHANGE)]


_CHANGE = Change("compile-the-frame", {})


def _evidence(ctx: RuleContext, f: DynamoFrames) -> dict[str, Any]:
    back = f.falling_back
    n = int(back.sum())
    eager_ns = f.eager_ns_per_step
    return {"steps_falling_back": n, "steady_steps": int(f.steady.sum()), "steps": len(f.step),
            "cache_lookups_per_step": round(float(f.lookups[back].mean()), 2),
            "compiled_regions_per_step": round(float(f.regions[back].mean()), 2),
            "eager_frames_per_step": round(float(f.eager_frames[back].mean()), 2),
            "eager_ops_ms": ms(eager_ns),
            "eager_ops_pct": round(100.0 * eager_ns / f.mean_step_ns(back), 1) if f.mean_step_ns(back) else 0.0,
            "top_eager_ops": (top := top_names(f.eager_ops, per=n, k=5)),
            "top_eager_ops_text": ", ".join(f"{t['name']} {t['ms']:.2f} ms" for t in top) or None}
