"""``outdated-software``: the trace records an old CUDA runtime / driver or an old profiler schema (SPEC §6).

Detects, from the software analysis (the rank's metadata and the trace's categories):
``cuda_runtime_version`` below ``min_cuda_runtime``; a driver older than the runtime; the 2021
Kineto schema (categories ``Operator`` / ``Runtime`` / ``Kernel``: PyTorch ≤ 1.9). Newer CUDA /
cuDNN / PyTorch releases bring faster kernels (fused optimizers, SDPA, ``torch.compile``) with no
code change.

Gain: not estimated; severity low.
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.registry import SOFTWARE
from stepscope.analysis.software import version_text

RULE_ID = "outdated-software"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ()  # the bounds its change shortens


def detect(ctx: RuleContext) -> list[Finding]:
    sw = ctx.result(SOFTWARE)
    if not sw.has_versions:
        raise NotApplicable("no software versions in the trace metadata")
    runtime, driver, legacy = sw.cuda_runtime, sw.cuda_driver, sw.legacy_schema
    want = tuple(int(x) for x in ctx.cfg.min_cuda_runtime.split(".")[:2])
    issues = []
    if runtime is not None and runtime < want:
        issues.append("cuda-runtime-old")
    if runtime is not None and driver is not None and driver < runtime:
        issues.append("driver-older-than-runtime")
    if legacy:
        issues.append("legacy-profiler-schema")
    if not issues:
        return []
    evidence = {"issues": issues, "cuda_runtime": version_text(runtime), "cuda_driver": version_text(driver),
                "min_cuda_runtime": ctx.cfg.min_cuda_runtime,
                "schema": "Kineto 2021 (PyTorch <= 1.9)" if legacy else "current"}
    return [ctx.finding(RULE_ID, 0.0, "not-estimated", evidence,
                        Change("upgrade-software", {"min_cuda_runtime": ctx.cfg.min_cuda_runtime}))]
