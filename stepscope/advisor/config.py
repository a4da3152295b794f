"""Every advisor threshold in one frozen dataclass, overridable from a TOML file or ``--set key=value``.

A TOML file holds the keys at the top level or under an ``[advisor]`` table (so the same keys fit in
``pyproject.toml`` as ``[tool.stepscope.advisor]``). Unknown keys and values of the wrong type are a
:class:`~stepscope.errors.StepscopeError` with the key named, never silently ignored.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stepscope.errors import StepscopeError


@dataclass(frozen=True)
class AdvisorConfig:
    """Thresholds of every rule (percentages are of the average step unless said otherwise)."""

    # severity of a finding from its estimated gain (SPEC §6): high only for a tenth of the step or more
    severity_high_pct: float = 10.0
    severity_medium_pct: float = 2.0
    # dataloader-bound
    dataloader_min_pct: float = 5.0
    dataloader_default_workers: int = 4
    # pageable-memcpy
    pageable_min_pct: float = 0.5
    # sync-in-step
    sync_min_pct: float = 1.0
    bulk_readback_min_pct: float = 50.0  # the copies' device time, % of the blocked time: the host needs the data
    # launch-bound
    host_wait_min_pct: float = 10.0
    short_kernel_min_share_pct: float = 30.0
    # small-memcpy
    small_memcpy_min_count_per_step: float = 50.0
    small_memcpy_min_pct: float = 1.0
    # small-kernel-optimizer
    optimizer_min_kernels_per_step: float = 30.0
    optimizer_fused_speedup: float = 3.0
    # no-tensor-cores
    tc_eligible_min_pct: float = 30.0
    tc_max_used_pct: float = 10.0
    tc_fp32_cuda_core_min_pct: float = 25.0  # or: FP32 matrix math on CUDA cores takes this % of kernel time
    amp_speedup: float = 0.0  # 0: the device's half-precision Tensor-Core peak over its FP32 / TF32 one (2 where
    #                           the device is unknown, analysis.peaks.amp_speedup); > 0: this speed-up
    # gemm-dims-not-multiple-of-8
    gemm_align: int = 8
    gemm_align_ampere: int = 64
    gemm_misaligned_min_pct: float = 1.0
    gemm_misaligned_recoverable: float = 0.5
    # channels-last
    channels_last_conv_gain: float = 0.1
    channels_last_min_conv_pct: float = 10.0
    # under-filled-grid
    underfill_min_pct: float = 5.0
    underfill_min_kernel_us: float = 10.0
    underfill_recoverable: float = 0.5
    # tf32-not-bf16: TF32 Tensor-Core kernel time, % of all kernel time
    tf32_min_pct: float = 10.0
    # unfused-elementwise: what fusing the runs saves, % of the step (after the critical-path share)
    elementwise_fusion_min_pct: float = 2.0
    # comm-not-overlapped
    comm_exposed_min_pct: float = 10.0
    # straggler-rank / load-imbalance; the job verdict "imbalance" needs the claimed culprits' lateness
    # to reach imbalance_min_pct of the job's step
    imbalance_min_pct: float = 10.0
    # ... and not dwarfed by another part of the culprit's step (one at least this many times the wait)
    imbalance_dwarfed_by: float = 2.0
    straggler_min_pct: float = 2.0  # a culprit's lateness explained in the trace, % of the job's step
    straggler_min_times_last: int = 2  # ... and it arrives last at this many collectives (consistently late)
    # the slow rank moves from step to step: no rank is last at more than this % of the late collectives (the job
    # verdict's "imbalance" without a culprit) / the busiest at more than this % of the steps (load-imbalance)
    moving_max_last_pct: float = 65.0
    # pipeline-bubble: the busiest stage's bubble, % of the step, and the share of it inside recv / send kernels
    pipeline_bubble_min_pct: float = 10.0
    pipeline_wait_min_share_pct: float = 25.0
    # allocator-fragmentation / allocator-churn
    fragmentation_min_pct: float = 30.0
    fragmentation_min_bytes: int = 1 << 30
    alloc_calls_min_pct: float = 1.0
    # memory-near-capacity
    memory_capacity_pct: float = 90.0
    # heavy-host-op-no-gpu
    host_op_min_pct: float = 5.0
    # host-outside-ops: a CPU-only step's time outside every recorded op, % of the step
    loop_code_min_pct: float = 10.0
    # host-stalled: the driving host thread's time lost inside its ops (stalled calls), % of the step
    host_stall_min_pct: float = 10.0
    # float64-ops: the float64 ops' time on the step's path, % of the step
    float64_min_pct: float = 5.0
    # cudnn-benchmark-off / conv-algo-search
    cudnn_fallback_min_pct: float = 10.0
    cudnn_benchmark_gain: float = 0.15
    conv_search_min_kernels: int = 12
    conv_search_over_median: float = 3.0
    # copy-bound: copies on the step's critical path, % of the step
    copy_bound_min_pct: float = 25.0
    # attention-math-fallback: what fused attention saves, % of the step (after the critical-path share)
    attention_fallback_min_pct: float = 2.0
    # compile-in-step: compile time, % of the step
    compile_min_pct: float = 5.0
    # variable-input-shapes
    shape_variability_min_pct: float = 50.0
    # outdated-software
    min_cuda_runtime: str = "11.8"
    # zero-grad-not-none
    zero_grad_min_pct: float = 0.5
    # cuda-launch-blocking
    blocking_launch_min_share_pct: float = 90.0

    def replace(self, **changes: Any) -> AdvisorConfig:
        return dataclasses.replace(self, **changes)


def _fields() -> dict[str, type]:
    return {f.name: type(getattr(AdvisorConfig(), f.name)) for f in dataclasses.fields(AdvisorConfig)}


def _coerce(key: str, value: Any) -> Any:
    fields = _fields()
    if key not in fields:
        raise StepscopeError(f"unknown advisor setting {key!r} (see docs/advisor.md for the list)")
    want = fields[key]
    try:
        if want is bool:
            return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")
        if want is int and isinstance(value, str):
            return int(float(value)) if "." in value or "e" in value.lower() else int(value, 0)
        return want(value)
    except (TypeError, ValueError) as exc:
        raise StepscopeError(f"advisor setting {key}: {value!r} is not a {want.__name__}") from exc


def _read_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        try:
            import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
        except ImportError as exc:
            raise StepscopeError("reading a TOML config on Python 3.10 needs `pip install tomli`") from exc
    try:
        with open(path, "rb") as fh:
            doc: dict[str, Any] = tomllib.load(fh)
    except OSError as exc:
        raise StepscopeError(f"cannot read advisor config {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise StepscopeError(f"advisor config {path} is not valid TOML: {exc}") from exc
    section = doc.get("tool", {}).get("stepscope", {}).get("advisor") or doc.get("advisor") or doc
    if not isinstance(section, dict):
        raise StepscopeError(f"advisor config {path}: expected a table of settings")
    return section


def parse_overrides(items: Iterable[str]) -> dict[str, str]:
    """``["key=value", ...]`` → dict; a malformed item is an error naming it."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise StepscopeError(f"--set expects key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def load_config(path: str | Path | None = None, overrides: Mapping[str, Any] | Iterable[str] = ()) -> AdvisorConfig:
    """Defaults, then the TOML file's settings, then the overrides (``--set``), each checked."""
    values: dict[str, Any] = {}
    if path is not None:
        values.update({k: _coerce(k, v) for k, v in _read_toml(Path(path)).items()})
    items = overrides if isinstance(overrides, Mapping) else parse_overrides(overrides)
    values.update({k: _coerce(k, v) for k, v in items.items()})
    return AdvisorConfig().replace(**values)
