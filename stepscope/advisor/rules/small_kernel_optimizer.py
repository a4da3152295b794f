"""``small-kernel-optimizer``: the optimizer step is many small per-tensor kernels (SPEC §6; HTA/MSA fusion).

Detects: the fusion analysis' optimizer verdict ``many-small-kernels`` (an ``Optimizer.step#...``
annotation launches mostly single-tensor elementwise kernels) with at least
``optimizer_min_kernels_per_step`` kernels per optimizer step.

Gain: the steps replayed with a fused / foreach optimizer (what-if ``fused-optimizer``): the
optimizer step's host work (launching one kernel per op and tensor) and the kernels it launches take
a third of their time, each counted where it reaches the step's critical path — on a host-bound step
the host part is most of it (an H200 pair: 12-20 ms of host work per step in the per-tensor Adam,
1.1-1.3 ms fused; the kernels 0.7 ms). Without a replay: the optimizer kernels' GPU time per step ×
(1 − 1 / ``optimizer_fused_speedup``).

On a CPU-only rank (no kernels) it reads the cpu_optimizer analysis instead: an ``Optimizer.step`` that runs
at least 30 ops a step, most of their time single-tensor ones (PyTorch steps CPU parameters tensor by
tensor by default), is the finding, its gain the same replay (at least ``severity_medium_pct`` of the step).
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, per_step, replayed_saving, top_names
from stepscope.analysis.cpu_optimizer import CpuOptimizer
from stepscope.analysis.optimizer_pass import multi_tensor_kwargs
from stepscope.analysis.registry import CPU_OPTIMIZER, FUSION

RULE_ID = "small-kernel-optimizer"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("host", "compute")  # the bounds its change shortens
NEEDS_HOST_TIMELINE = True  # reads host ops, launches or annotations: not run on a summary-only trace


def detect(ctx: RuleContext) -> list[Finding]:
    cpu = ctx.optional(CPU_OPTIMIZER)
    if cpu is not None:  # a CPU-only rank: no kernels, its optimizer's ops
        return _on_the_cpu(ctx, cpu)
    opt = ctx.result(FUSION).optimizer
    if opt.verdict != "many-small-kernels" or opt.kernels_per_step < ctx.cfg.optimizer_min_kernels_per_step:
        return []
    kwargs = multi_tensor_kwargs(opt.name)
    if kwargs is None:  # SparseAdam, LBFGS: no multi-tensor step to switch to
        return []
    n = max(opt.step_count, 1)
    time_ns = opt.time_ns / n
    evidence = {"optimizer_steps": opt.step_count, "kernels_per_optimizer_step": round(opt.kernels_per_step, 1),
                "elementwise_pct": round(opt.elementwise_pct, 1), "optimizer_kernel_ms": ms(time_ns),
                "optimizer": opt.name, "kernels": top_names(opt.kernels, per=n),
                "fused_speedup": ctx.cfg.optimizer_fused_speedup}
    change = Change("fused-optimizer", {"optimizer": evidence["optimizer"], "kwargs": kwargs})
    replayed = replayed_saving(ctx, "fused-optimizer", evidence)
    if replayed is not None:
        return [ctx.finding(RULE_ID, replayed, "replayed", evidence, change)]
    gain = per_step(ctx, opt.time_ns) * (1.0 - 1.0 / max(ctx.cfg.optimizer_fused_speedup, 1.0))
    return [ctx.finding(RULE_ID, gain, "fused-optimizer-speedup", evidence, change)]


def _on_the_cpu(ctx: RuleContext, cpu: CpuOptimizer) -> list[Finding]:
    """A CPU-only rank whose optimizer steps tensor by tensor (PyTorch's default for CPU parameters): the
    fused-optimizer remedy replayed — what a fused / foreach step gives back of the step."""
    kwargs = multi_tensor_kwargs(cpu.name)
    if not cpu.per_tensor or kwargs is None:  # SparseAdam, LBFGS: no multi-tensor step to switch to
        return []
    n = max(cpu.step_count, 1)
    evidence = {"optimizer_steps": cpu.step_count, "ops_per_optimizer_step": round(cpu.ops_per_step, 1),
                "multi_tensor_pct": round(cpu.multi_tensor_pct, 1), "optimizer_host_ms": ms(cpu.time_ns / n),
                "optimizer": cpu.name, "ops": top_names(cpu.ops, per=n)}
    replayed = replayed_saving(ctx, "fused-optimizer", evidence)
    if replayed is None or ctx.pct_of_step(replayed) < ctx.cfg.severity_medium_pct:
        return []
    return [ctx.finding(RULE_ID, replayed, "replayed", evidence,
                        Change("fused-optimizer", {"optimizer": cpu.name, "kwargs": kwargs}))]
