"""HTML sections of graph replays, compiled kernels and inference phases, from the JSON document."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stepscope.report.html.fmt import esc, fmt_int, fmt_ms, fmt_pct
from stepscope.report.html.tables import Col, ms, table

LAUNCH_COLS = (Col("launcher", "launched from", str, numeric=False), Col("kernels", "kernels", fmt_int),
               Col("gpu_ms", "GPU", ms), Col("cpu_us", "call µs", lambda v: f"{v:,.1f}"),
               Col("first_delay_ms", "first kernel after", ms), Col("captured_kernels", "named at capture", fmt_int))
CAPTURE_COLS = (Col("name", "op at capture", str, numeric=False), Col("calls", "calls", fmt_int),
                Col("kernels", "kernels", fmt_int),
                Col("ms", "GPU", ms))
GRAPH_COLS = (Col("name", "compiled graph", str, numeric=False), Col("calls", "calls", fmt_int),
              Col("kernels", "kernels", fmt_int), Col("triton_kernels", "Triton", fmt_int), Col("ms", "device", ms),
              Col("step_share_pct", "of step", fmt_pct))
TRITON_COLS = (Col("name", "kernel", str, numeric=False), Col("kind", "kind", str, numeric=False),
               Col("ops", "fused ops", str, numeric=False), Col("count", "count", fmt_int), Col("ms", "time", ms))
PHASE_COLS = (Col("phase", "phase", str, numeric=False), Col("steps", "steps", fmt_int),
              Col("tokens", "tokens", fmt_int), Col("device_span_ms", "device span", ms),
              Col("per_token_ms", "per token", lambda v: "–" if v is None else f"{v:.4f} ms"))


def _p(text: str) -> str:
    return f'<p class="note">{esc(text)}</p>'


def graphs_html(rank: Mapping[str, Any], rank_id: int) -> str:
    g = rank.get("graphs")
    if not isinstance(g, Mapping):
        return ""
    head = (f"{fmt_int(g.get('graph_launches'))} graph launches ran {fmt_int(g.get('graph_kernels'))} of "
            f"{fmt_int(g.get('gpu_activities'))} GPU activities, {fmt_ms(g.get('graph_gpu_ms'), 3)} "
            f"({fmt_pct(g.get('graph_gpu_pct'))} of GPU time); unattributed: {fmt_int(g.get('unattributed'))}.")
    body = _p(head) + table(f"graph-launches-r{rank_id}", LAUNCH_COLS, g.get("launches") or [])
    if g.get("has_capture"):
        body += table(f"graph-capture-r{rank_id}", CAPTURE_COLS, g.get("capture_ops") or [], share_key="ms")
    else:
        body += _p("No capture trace: graph kernels are attributed to their launch and the code around it, "
                   "not to the ops that recorded them.")
    return body


def compiled_html(rank: Mapping[str, Any], rank_id: int) -> str:
    c = rank.get("compiled")
    if not isinstance(c, Mapping):
        return ""
    head = (f"{fmt_int(c.get('triton_kernels'))} Triton kernels, {fmt_ms(c.get('triton_ms'), 3)} "
            f"({fmt_pct(c.get('triton_pct'))} of device time); {fmt_pct(c.get('in_graphs_pct'))} of device time "
            "inside compiled graphs.")
    kernels = [{**k, "ops": ", ".join(k.get("fused_ops") or [])} for k in c.get("kernels") or []]
    return (_p(head) + table(f"compiled-graphs-r{rank_id}", GRAPH_COLS, c.get("graphs") or [])
            + table(f"triton-r{rank_id}", TRITON_COLS, kernels, share_key="ms"))


def phases_html(rank: Mapping[str, Any], rank_id: int) -> str:
    p = rank.get("phases")
    if not isinstance(p, Mapping):
        return ""
    note = ("A mixed step ran prefill and decode requests in one forward: its time is not split."
            if any(r.get("phase") == "mixed" for r in p.get("phases") or []) else "")
    return table(f"phase-table-r{rank_id}", PHASE_COLS, p.get("phases") or []) + (_p(note) if note else "")
