"""§12 JSON sections of the deep analyses (documented in docs/json.md, "Deep analyses").

Times are ms per average step unless a name says otherwise; per-step lists carry the step number.
Each builder takes one rank's results (or the bundle) and returns plain data or ``None``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis.critical_path import HOST_PARTS, PARTS
from stepscope.analysis.elementwise_runs import ElementwiseRuns
from stepscope.analysis.memcpy import CopySet
from stepscope.analysis.named import NamedRows
from stepscope.analysis.registry import (
    CLUSTER,
    COMM_MATRIX,
    CRITICAL_PATH,
    DISTRIBUTED,
    FUSION,
    IDLE,
    LAUNCH,
    LAUNCH_CONFIG,
    MEMCPY,
    PROFILER_COST,
    REMEDIES,
    SYNC,
)
from stepscope.analysis.whatif.remedies import REMEDY_OPTIONS
from stepscope.report.fmt import IMBALANCE_OF
from stepscope.report.json_cluster import (
    all_to_all_section,
    arrivals_section,
    exposed_comm_section,
    job_whatif_section,
    pipeline_section,
    slow_links_section,
)
from stepscope.report.verdict_texts import part_words

if TYPE_CHECKING:
    from stepscope.analysis.bundle import Bundle, RankResults
    from stepscope.model.trace import Trace

MS = 1e6
Num = npt.NDArray[np.int64] | npt.NDArray[np.float64]  # ns per step


def _avg_ms(arr: Num) -> float:
    return float(np.mean(arr)) / MS if len(arr) else 0.0


def _steps(step: npt.NDArray[np.int32] | npt.NDArray[np.int64], /, **cols: Num) -> list[dict[str, Any]]:
    """Per-step rows: ``cols`` are ns arrays (key gets ``_ms``) aligned with ``step``."""
    return [{"step": int(s), **{f"{k}_ms": float(v[i]) / MS for k, v in cols.items()}}
            for i, s in enumerate(step.tolist())]  # per step


def named_list(named: NamedRows, per: int, k: int = 10) -> list[dict[str, Any]]:
    """The top names of an analysis' evidence rows: ``name``, ``count`` and ``ms`` (summed duration
    divided by ``per``, the step count: what the advisor's findings list)."""
    return [{"name": n, "count": c, "ms": t / MS / max(per, 1)} for n, c, t in named.top(k)]


def distributed_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(DISTRIBUTED)
    if r is None:
        return None
    c = r.collectives
    return {
        "computation_ms": _avg_ms(r.computation_ns), "communication_ms": _avg_ms(r.communication_ns),
        "overlap_ms": _avg_ms(r.overlap_ns), "other_ms": _avg_ms(r.other_ns), "step_ms": _avg_ms(r.step_ns),
        "overlap_ratio_pct": r.overlap_ratio_pct, "wait_ms": _avg_ms(r.wait_ns),
        "transfer_ms": _avg_ms(r.transfer_ns), "wait_method": r.wait_method,
        "kernel_count": r.kernel_count, "comm_kernel_count": r.comm_kernel_count,
        "collectives": [{"type": c.coll_type[i], "process_group": c.pg_name[i] or None, "count": int(c.count[i]),
                         "bytes": int(c.bytes_total[i]), "time_ms": float(c.time_ns[i]) / MS,
                         "mean_latency_ms": float(c.mean_latency_ns[i]) / MS,
                         "algbw_gbps": float(c.algbw_gbps[i]), "busbw_gbps": float(c.busbw_gbps[i])}
                        for i in range(len(c.count))],  # per collective group
        "steps": _steps(r.step, step=r.step_ns, computation=r.computation_ns, communication=r.communication_ns,
                        overlap=r.overlap_ns, other=r.other_ns, wait=r.wait_ns, transfer=r.transfer_ns),
    }


def idle_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(IDLE)
    if r is None:
        return None
    idle = r.idle_ns
    steps = _steps(r.step, step=r.step_ns, idle=idle, host_wait=r.host_wait_ns, kernel_wait=r.kernel_wait_ns,
                   other=r.other_ns, host_wait_in_dataloader=r.host_wait_in_dataloader_ns)
    for i, row in enumerate(steps):  # per step
        row["host_wait_pct"] = 100 * float(r.host_wait_ns[i]) / float(idle[i]) if idle[i] else 0.0
        row["host_wait_in_dataloader_pct"] = (100 * float(r.host_wait_in_dataloader_ns[i]) / float(idle[i])
                                              if idle[i] else 0.0)
    return {
        "host_wait_ms": _avg_ms(r.host_wait_ns), "kernel_wait_ms": _avg_ms(r.kernel_wait_ns),
        "other_ms": _avg_ms(r.other_ns), "idle_ms": _avg_ms(idle),
        "host_wait_in_dataloader_ms": _avg_ms(r.host_wait_in_dataloader_ns),
        "kernel_wait_max_us": r.kernel_wait_max_ns / 1e3, "steps": steps,
        "streams": [{"stream": int(r.stream[i]), "gaps": int(r.stream_gap_count[i]),
                     "host_wait_ms": float(r.stream_host_wait_ns[i]) / MS,
                     "kernel_wait_ms": float(r.stream_kernel_wait_ns[i]) / MS,
                     "other_ms": float(r.stream_other_ns[i]) / MS} for i in range(len(r.stream))],
    }


def critical_path_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(CRITICAL_PATH)
    if r is None:
        return None
    parts = {c: r.parts_ns[:, j] for j, c in enumerate(PARTS)}
    words = part_words(r.has_device)
    return {"bound_by": r.bound, "part_words": words, "bound_text": words.get(r.bound, r.bound),
            "share_pct": r.share_pct(), "host_share_pct": r.host_share_pct(),
            "wait_share_pct": r.wait_share_pct(), "device_busy_pct": r.device_busy_pct(),
            "whole_trace": r.whole_trace, "avg_ms": {c: _avg_ms(v) for c, v in parts.items()},
            "host_avg_ms": {c: _avg_ms(r.host_parts_ns[:, j]) for j, c in enumerate(HOST_PARTS)},
            "steps": _steps(r.step, step=r.step_ns, **parts)}


def sync_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(SYNC)
    if r is None:
        return None
    n = max(len(r.step), 1)
    s = r.sites
    return {"sync_calls_per_step": float(r.sync_count.sum()) / n, "sync_ms": _avg_ms(r.sync_ns),
            "d2h_copies_per_step": float(r.d2h_count.sum()) / n, "d2h_ms": _avg_ms(r.d2h_ns),
            "sites": [{"what": s.what[i], "op": s.op[i] or None, "outer_op": s.top_op[i] or None,
                       "call_site": s.call_site[i] or None, "count": int(s.count[i]),
                       "time_ms": float(s.time_ns[i]) / MS} for i in range(len(s.count))]}


def _copy_set(c: CopySet, n: int) -> dict[str, Any]:
    return {"copies_per_step": c.count / n, "ms": c.time_ns / MS / n, "bytes_per_step": c.bytes_total // n,
            "mean_bytes": c.mean_bytes, "bandwidth_gbps": c.bandwidth_gbps,
            "median_bandwidth_gbps": c.median_bandwidth_gbps,
            "names": named_list(c.names, n)}


def memcpy_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(MEMCPY)
    if r is None:
        return None
    g, n = r.groups, max(r.step_count, 1)
    return {"small_bytes": r.small_bytes, "small_count": r.small_count, "small_time_pct": r.small_time_pct,
            "step_count": r.step_count, "pageable_copies": _copy_set(r.pageable_copies, n),
            "small_copies": _copy_set(r.small_copies, n),
            "groups": [{"direction": g.direction[i], "memory": g.pageable[i], "call": g.sync[i],
                        "count": int(g.count[i]), "bytes": int(g.bytes_total[i]),
                        "time_ms": float(g.time_ns[i]) / MS, "bandwidth_gbps": float(g.bandwidth_gbps[i]),
                        "small_count": int(g.small_count[i])} for i in range(len(g.count))]}


def launch_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(LAUNCH)
    if r is None:
        return None
    stats = {f: {f"p{q}_us": r.percentile_ns(f + "_ns", q) / 1e3 for q in (50, 90, 99)}
             for f in ("cpu_launch", "launch_delay", "kernel")}
    q = r.queue
    return {"kernel_count": len(r.rows), "short_kernel_count": r.short_kernel_count,
            "short_kernel_pct": r.short_kernel_pct, **stats, "graph_launches": r.graph_launches,
            "graph_kernels": r.graph_kernels,
            "queue": [{"stream": int(q.stream[i]), "max": int(q.max_length[i]), "mean": float(q.mean_length[i])}
                      for i in range(len(q.stream))]}


def launch_config_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(LAUNCH_CONFIG)
    if r is None:
        return None
    k, u = r.kernels, r.underfilled_in_step()
    n = max(r.step_count, 1)
    return {"sm_count": r.sm_count, "underfilled_time_pct": r.underfilled_time_pct, "sm_fill_pct": r.sm_fill_pct,
            "grid_kernel_ms": r.kernel_time_ns / MS, "kernel_ms": r.all_kernel_time_ns / MS,
            "kernels": [{"name": k.name[i], "calls": int(k.calls[i]), "time_ms": float(k.time_ns[i]) / MS,
                         "mean_blocks": float(k.mean_blocks[i])} for i in range(min(20, len(k.calls)))],
            "in_steps": {"count": u.count, "ms": u.time_ns / MS / n, "idle_sm_ms": u.idle_sm_ns / MS / n,
                         "mean_blocks": u.mean_blocks, "names": named_list(u.names, n)}}


def fusion_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(FUSION)
    if r is None:
        return None
    s, o = r.sequences, r.optimizer
    return {"short_us": r.short_ns / 1e3, "short_kernel_count": r.short_kernel_count,
            "kernel_count": r.kernel_count,
            "sequences": [{"kernels": list(s.names[i]), "count": int(s.count[i]), "time_ms": float(s.time_ns[i]) / MS}
                          for i in range(min(20, len(s.count)))],
            "optimizer": {"verdict": o.verdict, "steps": o.step_count, "kernels_per_step": o.kernels_per_step,
                          "elementwise_pct": o.elementwise_pct, "foreach_count": o.foreach_count,
                          "time_ms": o.time_ns / MS, "name": o.name,
                          "kernels": named_list(o.kernels, o.step_count)},
            "elementwise_runs": _elementwise_runs(r.elementwise)}


def _elementwise_runs(e: ElementwiseRuns) -> dict[str, Any]:
    steps = max(e.step_count, 1)
    return {"runs_per_step": e.run_count / steps, "time_ms": e.per_step_ns(e.time_ns) / MS,
            "fused_ms": e.per_step_ns(e.fused_ns) / MS, "saved_ms": e.per_step_ns(e.saved_ns) / MS,
            "example_ops": list(e.example_ops), "kernels": named_list(e.kernels, steps)}


def cluster_section(bundle: Bundle) -> dict[str, Any] | None:
    """The cross-rank verdict (null for one rank) and the communication matrix (where a profiler wrote one)."""
    r = bundle.cluster_result(CLUSTER)
    matrix = comm_matrix_section(bundle)
    if r is None:
        return {"comm_matrix": matrix} if matrix is not None else None
    return {"comm_matrix": matrix, "arrivals": arrivals_section(bundle), "slow_links": slow_links_section(bundle),
            "job_whatif": job_whatif_section(bundle),
            "pipeline": pipeline_section(bundle), "all_to_all": all_to_all_section(bundle),
            "exposed_comm": exposed_comm_section(bundle),
            "rank_count": r.rank_count, "slow_ranks": r.slow_ranks,
            "imbalance_pct": r.imbalance_pct, "imbalance_of": r.imbalance_of, "verdict": r.verdict,
            "wait_method": r.wait_method,
            "imbalance_words": IMBALANCE_OF.get(r.imbalance_of, r.imbalance_of),
            "ranks": [{"rank": rank, "kernel_count": float(r.kernel_count[i]), "compute_ms": r.compute_ns[i] / MS,
                       "step_ms": r.step_ns[i] / MS, "comm_ms": r.comm_ns[i] / MS, "wait_ms": r.wait_ns[i] / MS,
                       "transfer_ms": r.transfer_ns[i] / MS, "slow_in": r.slow_reasons.get(rank, []),
                       "host_ms": float(r.host_ns[i]) / MS if i < len(r.host_ns) else None,
                       "excess_pct": r.excess_pct.get(rank)} for i, rank in enumerate(r.ranks)]}


#: the document lists at most this many links and entries of the matrix, the largest: a job whose
#: all-to-all spans the world has ranks² links (1,024 ranks: 1 M, ~1 GB as JSON objects); the
#: typed result keeps every one, and ``links_total`` / ``entries_total`` say how many there are
MAX_DOC_LINKS = 10_000


def comm_matrix_section(bundle: Bundle) -> dict[str, Any] | None:
    m = bundle.cluster_result(COMM_MATRIX)
    if m is None:
        return None
    lk, e = m.links, m.entries
    links = range(min(len(lk), MAX_DOC_LINKS))  # the table is largest first
    entries = np.sort(np.argsort(-np.nan_to_num(e.size_mb), kind="stable")[:MAX_DOC_LINKS])  # the largest, as recorded
    return {"source": m.source, "ranks": list(m.ranks), "unplaced_kernels": m.unplaced_count,
            "unplaced_ms": m.unplaced_time_ns / MS, "links_total": len(lk), "entries_total": len(e),
            "links": [{"src": int(lk.src[i]), "dst": int(lk.dst[i]), "transport": str(lk.transport[i]),
                       "op": str(lk.op[i]), "basis": str(lk.basis[i]), "count": int(lk.count[i]),
                       "bytes": int(lk.bytes[i]), "time_ms": float(lk.time_ns[i]) / MS,
                       "bandwidth_gbps": float(lk.bandwidth_gbps[i])} for i in links],
            "entries": [{"rank": int(e.rank[i]), "step": str(e.step[i]), "kind": str(e.kind[i]), "op": str(e.op[i]),
                         "group": str(e.group[i]), "src": int(e.src[i]), "dst": int(e.dst[i]),
                         "transport": str(e.transport[i]), "size_mb": float(e.size_mb[i]),
                         "time_ms": float(e.time_ms[i]), "bandwidth_gbps": float(e.bandwidth_gbps[i]),
                         "op_name": str(e.op_name[i])} for i in entries.tolist()]}


def remedies_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(REMEDIES)
    if r is None:
        return None
    return {"measured_mean_ms": r.measured_mean_ns / MS,
            # (a remedy that cannot act on the rank — a device's alone on a CPU-only rank — is not listed)
            "remedies": [{"remedy": n, "basis": r.basis[i], "predicted_mean_ms": float(r.predicted_mean_ns[i]) / MS,
                          "saved_ms": float(r.change_ns[i]) / MS,  # signed
                          "options": dict(REMEDY_OPTIONS.get(n, {})),
                          "applies": bool(r.applies[i]) if r.applies else True,  # something in the trace to change
                          "unprofiled_predicted_mean_ms": None if r.unprofiled_predicted_ns is None
                          else float(r.unprofiled_predicted_ns[i]) / MS,
                          "unprofiled_saved_ms": None if r.unprofiled_predicted_ns is None
                          else (r.unprofiled_saved_ns(n) or 0.0) / MS}
                         for i, n in enumerate(r.name) if r.shown(i)],
            "unprofiled_mean_ms": None if r.unprofiled_mean_ns is None else r.unprofiled_mean_ns / MS}


def profiler_cost_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    p = rr.get(PROFILER_COST)
    if p is None:
        return None
    return {"event_cost_us": p.event_cost_ns / 1e3, "host_events_per_step": p.events_per_step,
            "recorded_step_ms": p.recorded_step_ns / MS, "bound": p.bound,
            "unprofiled_step_ms": None if p.unprofiled_step_ns is None else p.unprofiled_step_ns / MS,
            "unprofiled_bound": p.unprofiled_bound,
            "unprofiled_shares_pct": None if p.unprofiled_shares_pct is None else
            {k: round(v, 2) for k, v in p.unprofiled_shares_pct.items()},
            "cost_source": p.cost_source, "measured_steps": p.measured_steps,
            "measured_step_ms": None if p.measured_step_ns is None else p.measured_step_ns / MS,
            "low_cost_step_ms": None if p.low_cost_step_ns is None else p.low_cost_step_ns / MS}


#: per-rank §12 keys owned by the deep analyses
DEEP_RANK_SECTIONS = {
    "distributed": distributed_section, "idle": idle_section, "critical_path": critical_path_section,
    "sync": sync_section, "memcpy": memcpy_section, "launch": launch_section,
    "launch_config": launch_config_section, "fusion": fusion_section, "remedies": remedies_section,
    "profiler_cost": profiler_cost_section,
}
