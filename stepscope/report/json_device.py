"""§12 JSON sections of the device-side analyses (documented in docs/json.md, "Deep analyses"):
CUDA / HIP graph replays (``graphs``), torch.compile kernels (``compiled``) and inference phases
(``phases``). Times are totals over the trace in ms (these views are about what ran, not about an
average step); lists are cut to their top 20 rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stepscope.analysis.common import pct
from stepscope.analysis.phases import PHASES as PHASE_NAMES
from stepscope.analysis.registry import COMPILED, GRAPHS, PHASES
from stepscope.report.verdict_texts import dynamo_frames_text

if TYPE_CHECKING:
    from stepscope.analysis.bundle import RankResults
    from stepscope.analysis.dynamo_frames import DynamoFrames
    from stepscope.model.trace import Trace

MS = 1e6
TOP = 20


def graphs_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(GRAPHS)
    if r is None:
        return None
    g = r.launches
    order = sorted(range(len(g.row)), key=lambda i: -int(g.gpu_ns[i]))[:TOP]
    return {
        "graph_launches": len(g.row), "graph_kernels": r.graph_activities, "gpu_activities": r.gpu_activities,
        "graph_gpu_ms": r.graph_gpu_ns / MS, "gpu_ms": r.gpu_ns / MS, "graph_gpu_pct": r.graph_gpu_pct,
        "unattributed": r.unattributed, "launched_before_trace": r.before_trace,
        "has_capture": r.has_capture, "captured_pct": r.captured_pct,
        "launches": [{"name": g.name(i), "launcher": g.launcher(i), "step": int(g.step[i]),
                      "cpu_us": int(g.cpu_ns[i]) / 1e3, "kernels": int(g.nodes[i]), "gpu_ms": int(g.gpu_ns[i]) / MS,
                      "span_ms": int(g.span_ns[i]) / MS, "first_delay_ms": int(g.first_delay_ns[i]) / MS,
                      "captured_kernels": int(g.captured_nodes[i])} for i in order],
        "capture_ops": [{"name": n, "calls": calls, "kernels": c, "ms": t / MS}
                        for n, calls, c, t in r.captured_top(TOP)],
    }


def compiled_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(COMPILED)
    if r is None:
        return None
    g = r.graphs
    index = {n: i for i, n in enumerate(r.triton.names)}
    return {
        "triton_kernels": len(r.triton), "triton_ms": r.triton.total_ns / MS, "triton_pct": r.triton_pct,
        "triton_with_launch_op": r.triton_launch_op, "device_ms": r.device_ns / MS,
        "in_graphs_pct": r.in_graphs_pct,
        "compile_ms": r.compilation.total_ns / max(len(r.compilation.step_ns), 1) / MS,
        "compile_pct": pct(r.compilation.total_ns, int(r.compilation.step_ns.sum())),
        "steps_compiling": r.compilation.steps_with_compile, "max_recompile": r.compilation.max_recompile,
        **_frames(r.frames),
        "graphs": [{"name": g.name[i], "calls": int(g.calls[i]), "kernels": int(g.kernels[i]),
                    "triton_kernels": int(g.triton_kernels[i]), "ms": int(g.device_ns[i]) / MS,
                    "step_share_pct": g.step_share_pct[i]} for i in range(min(TOP, len(g.name)))],
        "kernels": [{"name": n, "kind": r.triton_kinds[index[n]], "fused_ops": list(r.triton_ops[index[n]]),
                     "count": c, "ms": t / MS} for n, c, t in r.triton.top(TOP)],
    }


def _frames(f: DynamoFrames) -> dict[str, Any]:
    """Dynamo's cache lookups and compiled regions a step, and the frames that run eager."""
    falling_back, steady = int(f.falling_back.sum()), int(f.steady.sum())
    return {"cache_lookups_per_step": f.lookups_per_step, "compiled_regions_per_step": f.regions_per_step,
            "eager_frames_per_step": f.eager_frames_per_step, "steps_falling_back": falling_back,
            "steady_steps": steady, "eager_ops_ms_per_step": f.eager_ns_per_step / MS,
            "frames_text": dynamo_frames_text(f.lookups_per_step, f.regions_per_step, f.eager_frames_per_step,
                                              falling_back, steady) + "." if f.lookups_per_step else None}


def phases_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(PHASES)
    if r is None:
        return None
    s = r.steps
    phases = []
    for p in PHASE_NAMES:  # prefill, decode, mixed
        rows = r.phase_rows(p)
        if len(rows) == 0:
            continue
        per = r.per_token_ns(p)
        phases.append({"phase": p, "steps": len(rows), "tokens": r.tokens(p) if r.tokens(p) >= 0 else None,
                       "time_ms": int(s.time_ns[rows].sum()) / MS, "device_ms": int(s.device_ns[rows].sum()) / MS,
                       "device_span_ms": int(s.device_span_ns[rows].sum()) / MS,
                       "per_token_ms": per / MS if per is not None else None})

    def known(v: int) -> int | None:
        return int(v) if v >= 0 else None

    return {"source": r.source, "phases": phases, "steps": [
        {"name": s.name[i], "phase": s.phase[i], "host_ms": int(s.host_ns[i]) / MS, "time_ms": int(s.time_ns[i]) / MS,
         "device_ms": int(s.device_ns[i]) / MS, "device_span_ms": int(s.device_span_ns[i]) / MS,
         "kernels": int(s.kernels[i]), "prefill_requests": known(s.prefill_requests[i]),
         "prefill_tokens": known(s.prefill_tokens[i]), "decode_requests": known(s.decode_requests[i]),
         "decode_tokens": known(s.decode_tokens[i])} for i in range(min(TOP * 5, len(s.name)))]}


#: per-rank §12 keys owned by the device-side analyses
DEVICE_RANK_SECTIONS = {"graphs": graphs_section, "compiled": compiled_section, "phases": phases_section}
