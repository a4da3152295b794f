"""``compile-in-step``: ``torch.compile`` compiles inside the profiled steps — recompiling every step
(a new input shape with ``dynamic=False``, guards that fail), or a first compile a short warm-up left
in the profile.

Detects, from the compiled analysis' :class:`~stepscope.analysis.compilation.Compilation` (the
union of PyTorch's own compilation ranges: ``entire_frame_compile``, ``(dynamo_timed)`` phases,
Inductor's autotuning): compile time of at least ``compile_min_pct`` of the step.

The change: compiling in more than one step, or a recompiled graph (``Torch-Compiled Region: F/R``
with R > 0) running in them, is recompilation — mark the varying dimension dynamic, or pad to a few
fixed sizes; one compiling step is the profile's warm-up — profile after it.

Gain: the steps replayed without the compilation (what-if ``no-compile``: the host's time in the
ranges and the device work and syncs of autotuning removed); without a replay, the compile time per
step. An H200 MLP recompiled every step: 1,633 ms a step, 23.3 ms predicted (the compiled graph's
first runs, its lazy loading, stay), 3.0 ms measured with the batch dimension marked dynamic.
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, per_step, replayed_saving
from stepscope.analysis.registry import COMPILED

RULE_ID = "compile-in-step"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("host",)  # the bounds its change shortens
NEEDS_HOST_TIMELINE = True  # reads host ranges: not run on a summary-only trace


def detect(ctx: RuleContext) -> list[Finding]:
    comp = ctx.result(COMPILED).compilation
    if comp.total_ns == 0:  # the steps, or the whole trace as one window
        return []
    compile_ns = per_step(ctx, float(comp.total_ns))
    if ctx.pct_of_step(compile_ns) < ctx.cfg.compile_min_pct:
        return []
    evidence: dict[str, object] = {
        "compile_ms": ms(compile_ns), "compile_pct": round(ctx.pct_of_step(compile_ns), 1),
        "steps_compiling": comp.steps_with_compile if ctx.steps else None,  # none without step markers
        "steps": len(comp.step_ns) if ctx.steps else None,
        "recompile": comp.max_recompile if comp.max_recompile > 0 else None}
    change = Change("avoid-recompiles" if comp.recompiling else "profile-after-warmup", {})
    replayed = replayed_saving(ctx, "no-compile", evidence)
    if replayed is not None:
        return [ctx.finding(RULE_ID, replayed, "replayed", evidence, change)]
    return [ctx.finding(RULE_ID, compile_ns, "compile-time", evidence, change)]
