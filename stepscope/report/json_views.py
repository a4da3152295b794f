"""SPEC §12 per-rank JSON sections of the views: overview, steps, gpu, kernels, operators, memory,
modules, annotations, collective kernels. Every field is documented in docs/json.md; times are ms
unless the name says otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis.annotations import AnnotationTable
from stepscope.analysis.breakdown import CATEGORIES, StepBreakdown
from stepscope.analysis.bundle import RankResults
from stepscope.analysis.category_rules import CATEGORY_NAMES
from stepscope.analysis.gemm_shapes import GemmShapeTable
from stepscope.analysis.registry import (
    ANNOTATIONS,
    BREAKDOWN,
    KERNELS,
    MEMORY,
    MODULES,
    OP_CATEGORIES,
    OPERATORS,
    OVERVIEW,
)
from stepscope.model.trace import Trace

MS = 1e-6
US = 1e-3


def _ms(values: npt.ArrayLike) -> dict[str, float]:
    return {c: float(v) * MS for c, v in zip(CATEGORIES, np.asarray(values).tolist())}


def _overview(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    o = rr.get(OVERVIEW)
    if o is None:
        return None
    bd: StepBreakdown = o.breakdown
    return {"step_count": bd.step_count, "avg_step_ms": bd.avg_step_ns * MS,
            "gpu_utilization_pct": o.gpu_utilization_pct, "sm_efficiency_pct": o.sm_efficiency_pct,
            "achieved_occupancy_pct": o.achieved_occupancy_pct, "tensor_core_pct": o.tensor_core_pct,
            "grid_kernel_pct": o.grid_kernel_ns / o.kernel_ns * 100.0 if o.kernel_ns else None,
            "occupancy_computed": o.occupancy_computed, "breakdown_ms": _ms(bd.avg_category_ns),
            "breakdown_pct": dict(zip(CATEGORIES, bd.avg_category_pct.tolist())),
            "steps_per_s": bd.steps_per_s, "samples_per_s": bd.samples_per_s,
            "dropped_tail_steps": bd.dropped_tail_steps}


def _steps(rr: RankResults, trace: Trace) -> list[dict[str, Any]]:
    bd = rr.get(BREAKDOWN)
    if bd is None:
        return []
    return [{"step": label, "total_ms": float(total) * MS, "breakdown_ms": _ms(cats),
             "batch_cost_ms": float(total) * MS, "reader_cost_ms": float(reader) * MS}
            for label, total, cats, reader in zip(bd.step_labels(), bd.total_ns.tolist(), bd.category_ns,
                                                  bd.reader_cost_ns.tolist())]


def _gpu(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    o = rr.get(OVERVIEW)
    if o is None or o.span_ns == 0:
        return None
    return {"busy_ms": o.busy_ns * MS, "span_ms": o.span_ns * MS}


def _kernels(rr: RankResults, trace: Trace) -> list[dict[str, Any]]:
    k = rr.get(KERNELS)
    if k is None:
        return []
    t = k.by_name
    return [{"name": n, "calls": c, "total_ms": tot * MS, "mean_us": mean * US, "median_us": med * US,
             "min_us": mn * US, "max_us": mx * US, "std_us": sd * US, "tc_used": tc, "is_comm": comm,
             "mean_blocks_per_sm": bps, "mean_occupancy_pct": occ, "share_pct": share}
            for n, c, tot, mean, med, mn, mx, sd, tc, comm, bps, occ, share in zip(
                t.name.tolist(), t.calls.tolist(), t.total_ns.tolist(), t.mean_ns.tolist(), t.median_ns.tolist(),
                t.min_ns.tolist(), t.max_ns.tolist(), t.std_ns.tolist(), t.tc_used.tolist(), t.is_comm.tolist(),
                t.mean_blocks_per_sm.tolist(), t.mean_occupancy_pct.tolist(), t.share_pct.tolist())]


def _collectives(rr: RankResults, trace: Trace) -> list[dict[str, Any]]:
    k = rr.get(KERNELS)
    if k is None:
        return []
    c = k.collectives
    return [{"name": n, "dur_ms": d * MS, "collective": coll or None, "in_nelems": i if i >= 0 else None,
             "out_nelems": o if o >= 0 else None, "dtype": dt or None, "group_size": g if g >= 0 else None,
             "pg_name": pn or None, "pg_desc": pd or None, "pg_ranks": pr or None}
            for n, d, coll, i, o, dt, g, pn, pd, pr in zip(
                c.name.tolist(), c.dur_ns.tolist(), c.collective.tolist(), c.in_nelems.tolist(),
                c.out_nelems.tolist(), c.dtype.tolist(), c.group_size.tolist(), c.pg_name.tolist(),
                c.pg_desc.tolist(), c.pg_ranks.tolist())]


def _categories(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    v = rr.get(OP_CATEGORIES)
    if v is None:
        return None
    t, tl = v.table, v.tracelens
    return {"total_ms": v.total_ns * MS, "unattributed_ms": v.unattributed_ns * MS,
            "categories": [{"category": c, "ops": o, "activities": a, "time_ms": ns * MS, "share_pct": sh}
                           for c, o, a, ns, sh in zip(t.category.tolist(), t.ops.tolist(), t.activities.tolist(),
                                                      t.time_ns.tolist(), t.share_pct.tolist())],
            "steps": [{"step": int(s), "total_ms": float(row.sum()) * MS,
                       "time_ms": {c: float(ns) * MS for c, ns in zip(CATEGORY_NAMES, row.tolist())}}
                      for s, row in zip(v.step.tolist(), v.step_time_ns)],
            "tracelens": [{"category": c, "ops": o, "time_ms": ns * MS, "share_pct": sh}
                          for c, o, ns, sh in zip(tl.category.tolist(), tl.ops.tolist(), tl.time_ns.tolist(),
                                                  tl.share_pct.tolist())],
            "gemm": _gemm_rows(v.gemm)}


def _gemm_rows(g: GemmShapeTable) -> list[dict[str, Any]]:
    keys = ("name", "input_dims", "dtype", "batch", "m", "n", "k", "bias", "calls", "gflops", "data_moved_mb",
            "flops_per_byte", "tflops_mean", "tflops_median", "tbps_mean", "tbps_median")
    cols = g.columns()
    rows = [dict(zip(keys, vals)) for vals in zip(*(cols[k].tolist() for k in keys))]
    for row, total, mean, median in zip(rows, g.time_ns.tolist(), g.mean_time_ns.tolist(),
                                        g.median_time_ns.tolist()):  # per shape
        row.update(time_ms=total * MS, mean_us=mean * US, median_us=median * US)
    return rows


def _operators(rr: RankResults, trace: Trace) -> list[dict[str, Any]]:
    v = rr.get(OPERATORS)
    if v is None:
        return []
    t = v.by_name
    return [{"name": n, "calls": c, "host_self_ms": hs * MS, "host_total_ms": ht * MS,
             "device_self_ms": ds * MS, "device_total_ms": dt * MS, "tc_eligible": el,
             "tc_self_pct": tsp, "tc_total_pct": ttp}
            for n, c, hs, ht, ds, dt, el, tsp, ttp in zip(
                t.name.tolist(), t.calls.tolist(), t.host_self_ns.tolist(), t.host_total_ns.tolist(),
                t.device_self_ns.tolist(), t.device_total_ns.tolist(), t.tc_eligible.tolist(),
                t.tc_self_pct.tolist(), t.tc_total_pct.tolist())]


def _memory(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    m = rr.get(MEMORY)
    if m is None:
        return None
    devices = [{"device": c.device, "peak_allocated_bytes": c.peak_allocated_bytes,
                "peak_reserved_bytes": c.peak_reserved_bytes if c.peak_reserved_bytes >= 0 else None,
                "max_fragmentation_bytes": int(c.fragmentation_bytes.max()) if len(c.ts_ns) else 0,
                "events": len(c.ts_ns)} for c in m.curves]
    return {"devices": devices, "allocation_count": m.allocation_count, "free_count": m.free_count,
            "freed_count": m.freed_count, "addresses_recorded": m.addresses_recorded,
            "by_op": [{"name": n, "device": d, "self_increase_bytes": si, "total_increase_bytes": ti,
                       "alloc_count": ac, "alloc_bytes": ab, "free_count": fc}
                      for n, d, si, ti, ac, ab, fc in zip(
                          m.by_op.name.tolist(), m.by_op.device.tolist(), m.by_op.self_increase_bytes.tolist(),
                          m.by_op.total_increase_bytes.tolist(), m.by_op.alloc_count.tolist(),
                          m.by_op.alloc_bytes.tolist(), m.by_op.free_count.tolist())]}


def _modules(rr: RankResults, trace: Trace) -> list[dict[str, Any]] | None:
    t = rr.get(MODULES)
    if t is None:
        return None
    return [{"name": n, "parent": p or None, "depth": d, "calls": c, "host_total_ms": ht * MS,
             "host_self_ms": hs * MS, "device_total_ms": dt * MS, "device_self_ms": ds * MS}
            for n, p, d, c, ht, hs, dt, ds in zip(
                t.name.tolist(), t.parent.tolist(), t.depth.tolist(), t.calls.tolist(), t.host_total_ns.tolist(),
                t.host_self_ns.tolist(), t.device_total_ns.tolist(), t.device_self_ns.tolist())]


def _annotations(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    v = rr.get(ANNOTATIONS)
    if v is None:
        return None

    def rows(t: AnnotationTable, with_device: bool) -> list[dict[str, Any]]:
        return [{"name": n, "calls": c, "total_ms": tot * MS, "mean_ms": mean * MS,
                 **({"device_ms": d * MS} if with_device else {})}
                for n, c, tot, mean, d in zip(t.name.tolist(), t.calls.tolist(), t.total_ns.tolist(),
                                              t.mean_ns.tolist(), t.device_ns.tolist())]

    return {"host": rows(v.host, True), "gpu": rows(v.gpu, False)}


VIEW_RANK_SECTIONS: dict[str, Callable[[RankResults, Trace], Any]] = {
    "overview": _overview,
    "steps": _steps,
    "gpu": _gpu,
    "kernels": _kernels,
    "collective_kernels": _collectives,
    "categories": _categories,
    "operators": _operators,
    "memory": _memory,
    "modules": _modules,
    "annotations": _annotations,
}
