"""§12 JSON section of the roofline analysis (documented in docs/json.md, ``roofline``): the device
and its peaks, per op shape and per kernel the FLOPs, bytes, rates and bound, per step the MFU, and
TraceLens's SDPA rows. NaN (unknown) values become null."""

from __future__ import annotations

from typing import Any

from stepscope.analysis.attention_shapes import AttentionShapeTable
from stepscope.analysis.bundle import RankResults
from stepscope.analysis.peaks import DTYPES, DevicePeak
from stepscope.analysis.registry import ROOFLINE
from stepscope.model.trace import Trace

MS = 1e-6
US = 1e-3


def _rows(cols: dict[str, Any], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    return [dict(zip(keys, vals)) for vals in zip(*(cols[k].tolist() for k in keys))]


def peak_dict(p: DevicePeak | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {"name": p.name, "tflops": dict(zip(DTYPES, p.tflops)), "bandwidth_tbps": p.bandwidth_tbps,
            "source": p.source, "note": p.note or None}


def sdpa_rows(a: AttentionShapeTable) -> list[dict[str, Any]]:
    keys = ("name", "input_dims", "dtype", "backward", "b", "n_q", "h_q", "n_kv", "h_kv", "d_qk", "d_v", "causal",
            "calls", "gflops", "data_moved_mb", "flops_per_byte", "tflops_mean", "tflops_median", "tbps_mean",
            "tbps_median")
    rows = _rows(a.columns(), keys)
    for row, total, mean, median in zip(rows, a.time_ns.tolist(), a.mean_time_ns.tolist(),
                                        a.median_time_ns.tolist()):  # per shape
        row.update(time_ms=total * MS, mean_us=mean * US, median_us=median * US)
    return rows


def roofline_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    v = rr.get(ROOFLINE)
    if v is None:
        return None
    ops = _rows(v.ops.columns(), ("name", "input_dims", "dtype", "kind", "recorded", "calls", "gflops", "mbytes",
                                  "tflops", "tbps", "intensity", "peak_tflops", "ridge", "bound", "roof_pct",
                                  "peak_pct"))
    for row, ns in zip(ops, v.ops.time_ns.tolist()):  # per op shape
        row["time_ms"] = ns * MS
        row["bound"] = row["bound"] or None
    kernels = _rows(v.kernels.columns(), ("name", "count", "gflops", "tflops", "tbps", "intensity", "peak_pct"))
    for row, ns in zip(kernels, v.kernels.time_ns.tolist()):  # per kernel name
        row["time_ms"] = ns * MS
    s = v.steps
    return {"device": v.device or None, "peak": peak_dict(v.peak),
            "unknown_device": v.peak is None, "mfu_pct": v.mfu_pct, "covered_pct": v.covered_pct,
            "steps": [{"step": st, "time_ms": ns * MS, "tflop": tf, "mfu_pct": m, "covered_pct": c}
                      for st, ns, tf, m, c in zip(s.step.tolist(), s.time_ns.tolist(), s.tflop.tolist(),
                                                  s.mfu_pct.tolist(), s.covered_pct.tolist())],
            "ops": ops, "kernels": kernels, "sdpa": sdpa_rows(v.sdpa)}


ROOFLINE_RANK_SECTIONS = {"roofline": roofline_section}
