"""§12 JSON sections of the analyses behind the advisor's evidence (documented in docs/json.md,
"Evidence analyses"): the numbers a finding cites, per rank, whether or not a rule fires.

Times are ms per average step unless a name says otherwise; name lists are the top 10 by time
(``name``, ``count``, ``ms`` per step), as in a finding's evidence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stepscope.analysis.registry import (
    CACHING_ALLOCATOR,
    CONVOLUTIONS,
    CPU_OPTIMIZER,
    DATALOADER,
    FP64,
    GEMM_DIMS,
    HOST_OPS,
    HOST_STALLS,
    INPUT_SHAPES,
    KV_CACHE,
    SOFTWARE,
    TENSOR_CORES,
    ZERO_GRAD,
)
from stepscope.analysis.software import version_text
from stepscope.report.json_deep import MS, named_list

if TYPE_CHECKING:
    from stepscope.analysis.bundle import RankResults
    from stepscope.analysis.cpu_optimizer import CpuOptimizer
    from stepscope.model.trace import Trace


def dataloader_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(DATALOADER)
    if r is None:
        return None
    n = max(r.step_count, 1)
    return {"loading": r.loading, "events_per_step": len(r.calls) / n, "ms": r.calls.total_ns / MS / n,
            "events": named_list(r.calls, n)}


def tensor_cores_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(TENSOR_CORES)
    if r is None:
        return None
    n = max(r.step_count, 1)
    return {"kernel_ms": r.kernel_ns / MS / n, "eligible_ms": r.eligible_ns / MS / n,
            "unlinked_kernel_ms": r.unlinked_ns / MS / n, "eligible_kernel_pct": r.eligible_pct,
            "tensor_core_pct_of_eligible": r.tc_pct_of_eligible,
            "eligible_non_tc_ms": r.non_tc_kernels.total_ns / MS / n,
            "non_tc_kernels": named_list(r.non_tc_kernels, n), "non_tc_ops": named_list(r.non_tc_ops, n),
            "input_types": list(r.input_types)}


def convolutions_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(CONVOLUTIONS)
    if r is None:
        return None
    n, c = max(r.step_count, 1), r.calls
    sets = {"kernels": r.conv, "tensor_core_kernels": r.tc_conv, "nchw_tensor_core_kernels": r.nchw_tc,
            "fallback_kernels": r.fallback, "layout_transforms": r.transforms}
    return {"kernel_ms": r.kernel_ns / MS / n, "conv_kernel_pct": r.conv_pct,
            "fallback_conv_kernel_pct": r.fallback_pct,
            **{key: {"ms": v.total_ns / MS / n, "names": named_list(v, n)} for key, v in sets.items()},
            "calls": len(c.kernels), "max_kernels_per_call": int(c.kernels.max()) if len(c.kernels) else 0}


def gemm_dims_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(GEMM_DIMS)
    if r is None:
        return None
    n = max(r.step_count, 1)
    return {"kernel_ms": r.kernel_ns / MS / n, "calls_per_step": len(r.op) / n,
            "gemm_kernel_ms": int(r.call_kernel_ns.sum()) / MS / n,
            "shapes": [{"op": s.op, "dims": s.dims, "n": s.n if s.n >= 0 else None, "k": s.k if s.k >= 0 else None,
                        "half": s.half, "calls": s.calls, "ms": s.kernel_ns / MS / n}
                       for s in r.shapes()[:20]]}  # per distinct shape


def host_ops_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(HOST_OPS)
    if r is None:
        return None
    n = max(r.step_count, 1)
    return {"gpu_idle_ms": float(r.gpu_idle_ns.sum()) / MS / n,
            "ops": [{"name": r.names[i], "calls": int(r.calls[i]), "gpu_idle_ms": float(r.gpu_idle_ns[i]) / MS / n}
                    for i in r.by_idle()[:20]]}  # per op name


def zero_grad_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(ZERO_GRAD)
    if r is None:
        return None
    n = max(r.step_count, 1)
    return {"kernels_per_step": len(r.activities) / n, "ms": r.activities.total_ns / MS / n,
            "kernels": named_list(r.activities, n)}


def caching_allocator_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(CACHING_ALLOCATOR)
    if r is None:
        return None
    n = max(r.step_count, 1)
    out: dict[str, Any] = {"device_memory_bytes": r.device_memory_bytes, "alloc_calls_per_step": len(r.calls) / n,
                           "alloc_calls_ms": r.calls.total_ns / MS / n, "alloc_calls": named_list(r.calls, n),
                           "memory_events": len(r.reserved_bytes), "peak_reserved_bytes": None,
                           "allocated_at_peak_bytes": None, "peak_allocated_bytes": None}
    if r.has_memory_events:
        reserved, alloc = r.at_reserved_peak
        out.update(peak_reserved_bytes=int(reserved), allocated_at_peak_bytes=int(alloc),
                   peak_allocated_bytes=int(r.allocated_bytes.max()))
    return out


def input_shapes_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(INPUT_SHAPES)
    if r is None:
        return None
    v = r.varying_ops
    return {"steps": r.step_count, "calls": r.calls, "varying_calls": r.varying_calls,
            "varying_calls_pct": r.varying_pct, "example_op": r.example_op, "example_shapes": list(r.example_shapes),
            "varying_ops": [{"name": v.name[i], "calls": int(v.calls[i]), "shapes": int(v.shapes[i])}
                            for i in range(min(20, len(v.name)))]}  # per op name


def software_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(SOFTWARE)
    if r is None:
        return None
    return {"cuda_runtime": version_text(r.cuda_runtime), "cuda_driver": version_text(r.cuda_driver),
            "legacy_schema": r.legacy_schema, "pytorch": r.pytorch, "compiled": r.compiled}


def cpu_optimizer_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(CPU_OPTIMIZER)
    if r is None:
        return None
    n = max(r.step_count, 1)
    return {"optimizer": r.name, "steps": r.step_count, "ops_per_step": r.ops_per_step,
            "multi_tensor_pct": r.multi_tensor_pct, "per_tensor": r.per_tensor, "ms_per_step": r.time_ns / MS / n,
            "ops": named_list(r.ops, n), "memory_pass": _memory_pass(r)}


def _memory_pass(r: CpuOptimizer) -> dict[str, Any] | None:
    """The loop's memory pass and the fused step it gives (null: no shapes or no large in-place op)."""
    p = r.memory_pass
    if p is None:
        return None
    fused = r.fused_step_ns
    return {"param_elems": p.param_elems, "elem_bytes": p.elem_bytes, "gb_per_s": p.bytes_per_ns,
            "fused_ms_per_step": fused / MS if fused is not None else None, "fused_factor": r.fused_factor}


def host_stalls_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(HOST_STALLS)
    if r is None:
        return None
    n = max(len(r.step), 1)
    g = r.groups
    return {"calls": r.calls, "stalled_calls": r.stalled_calls, "shapes_recorded": r.shapes_recorded,
            "excess_ms": float(r.excess_ns.sum()) / MS / n, "on_path_ms": float(r.on_path_ns.sum()) / MS / n,
            "on_path_pct": r.on_path_pct, "typical_on_path_ms": r.typical_on_path_ns() / MS,
            "typical_pct": r.typical_pct,
            "metadata_ms": float(r.metadata_ns.sum()) / MS / n,
            "per_step": [{"step": int(s), "step_ms": d / MS, "excess_ms": e / MS, "on_path_ms": o / MS}
                         for s, d, e, o in zip(r.step.tolist(), r.step_ns.tolist(), r.excess_ns.tolist(),
                                               r.on_path_ns.tolist())],  # per step
            "groups": [{"name": g.name[i], "shapes": g.shapes[i], "calls": int(g.calls[i]),
                        "stalled": int(g.stalled[i]), "typical_us": float(g.typical_ns[i]) / 1e3,
                        "max_ms": int(g.max_ns[i]) / MS, "excess_ms": int(g.excess_ns[i]) / MS / n}
                       for i in range(len(g))]}  # the top groups


def kv_cache_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(KV_CACHE)
    if r is None:
        return None
    n = max(r.step_count, 1)
    return {"families": r.families, "cat_calls_per_step": r.calls_per_step, "cat_ms_per_step": r.host_ns / MS / n,
            "device_ms_per_step": r.device_ns / MS / n, "shortest": r.shortest, "longest": r.longest,
            "cache_shape": r.cache_shape}


def fp64_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(FP64)
    if r is None:
        return None
    n = max(r.step_count, 1)
    return {"calls_per_step": r.calls_per_step, "host_self_ms_per_step": r.host_self_ns / MS / n,
            "device_ms_per_step": r.device_ns / MS / n, "on_path_ms_per_step": r.on_path_ns / MS,
            "ops": named_list(r.ops, n)}


#: per-rank §12 keys owned by the evidence analyses
EVIDENCE_RANK_SECTIONS = {
    "dataloader": dataloader_section, "tensor_cores": tensor_cores_section, "convolutions": convolutions_section,
    "gemm_dims": gemm_dims_section, "host_ops": host_ops_section, "zero_grad": zero_grad_section,
    "caching_allocator": caching_allocator_section, "input_shapes": input_shapes_section, "software": software_section,
    "cpu_optimizer": cpu_optimizer_section, "host_stalls": host_stalls_section, "kv_cache": kv_cache_section,
    "fp64": fp64_section,
}
