"""``outdated-software``: the trace records an old CUDA runtime / driver or an old profiler schema (SPEC §6).

Detects, from the rank's metadata only: ``cuda_runtime_version`` below ``min_cuda_runtime``; a driver
older than the runtime; the 2021 Kineto schema (categories ``Operator`` / ``Runtime`` / ``Kernel``:
PyTorch ≤ 1.9). Newer CUDA / cuDNN / PyTorch releases bring faster kernels (fused optimizers, SDPA,
``torch.compile``) with no code change.

Gain: not estimated; severity low.
"""

from __future__ import annotations

from typing import Any

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.analysis.base import NotApplicable

RULE_ID = "outdated-software"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ()  # the bounds its change shortens
LEGACY_CATEGORIES = ("Operator", "Runtime", "Kernel")


def cuda_version(code: Any) -> tuple[int, int] | None:
    """12040 → (12, 4); None when absent or not a number."""
    try:
        v = int(code)
    except (TypeError, ValueError):
        return None
    return (v // 1000, (v % 1000) // 10) if v > 0 else None


def detect(ctx: RuleContext) -> list[Finding]:
    info = ctx.trace.rank_info(ctx.rank) if ctx.rank is not None else ctx.trace.ranks[0]
    meta = info.metadata
    runtime, driver = cuda_version(meta.get("cuda_runtime_version")), cuda_version(meta.get("cuda_driver_version"))
    legacy = all(ctx.trace.strings.find(c) >= 0 for c in LEGACY_CATEGORIES)
    if runtime is None and driver is None and not legacy:
        raise NotApplicable("no software versions in the trace metadata")
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
    evidence = {"issues": issues, "cuda_runtime": _fmt(runtime), "cuda_driver": _fmt(driver),
                "min_cuda_runtime": ctx.cfg.min_cuda_runtime,
                "schema": "Kineto 2021 (PyTorch <= 1.9)" if legacy else "current"}
    return [ctx.finding(RULE_ID, 0.0, "not-estimated", evidence,
                        Change("upgrade-software", {"min_cuda_runtime": ctx.cfg.min_cuda_runtime}))]


def _fmt(v: tuple[int, int] | None) -> str | None:
    return f"{v[0]}.{v[1]}" if v is not None else None
