"""The versioned JSON contract of ``stepscope analyze --json`` (SPEC §12; every field in docs/json.md).

Each per-rank key is produced by one function in ``RANK_SECTIONS`` from that rank's results, so
an analysis adds its part by adding one entry. A section whose analysis did not run is ``null``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stepscope.analysis.bundle import Bundle, RankResults, with_bundle_memo
from stepscope.analysis.platform import platform_of
from stepscope.analysis.registry import SUMMARY
from stepscope.model.trace import Trace
from stepscope.report.advice_json import verdict_section
from stepscope.report.json_deep import DEEP_RANK_SECTIONS, cluster_section
from stepscope.report.json_device import DEVICE_RANK_SECTIONS
from stepscope.report.json_evidence import EVIDENCE_RANK_SECTIONS
from stepscope.report.json_roofline import ROOFLINE_RANK_SECTIONS
from stepscope.report.json_views import VIEW_RANK_SECTIONS

SCHEMA_VERSION = "1"

RankSection = Callable[[RankResults, Trace], Any]


def _device(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    dev = trace.device_of_rank(rr.rank)
    if dev is None:
        return None
    return {"name": dev.name, "sm_count": dev.sm_count, "index": dev.index,
            "total_memory_bytes": dev.total_memory_bytes,
            "compute_capability": (f"{dev.compute_major}.{dev.compute_minor}"
                                   if dev.compute_major is not None else None), "vendor": dev.vendor}


def _gpu(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    s = rr.get(SUMMARY)
    if s is None or s.gpu_event_count == 0:
        return None
    return {"busy_ms": s.gpu_busy_ns / 1e6, "span_ms": s.gpu_span_ns / 1e6}


def _events(rr: RankResults, trace: Trace) -> dict[str, int] | None:
    s = rr.get(SUMMARY)
    return dict(s.event_counts) if s is not None else None


#: §12 per-rank keys → builder. Views and deep analyses add their keys here.
RANK_SECTIONS: dict[str, RankSection] = {
    "device": _device,
    # cuda | rocm | ascend | cpu (a CPU-only run: the front ends leave the device's views and columns out), +native
    "platform": lambda rr, trace: platform_of(trace, rr.rank),
    "event_counts": _events,
    "gpu": _gpu,  # replaced by the overview's (launched-in-steps) busy/span when the overview ran
    **VIEW_RANK_SECTIONS,  # overview, steps, gpu, kernels, operators, memory, modules, annotations
    **ROOFLINE_RANK_SECTIONS,  # FLOPs, bytes, bound and MFU per op shape (json_roofline.py)
    **DEEP_RANK_SECTIONS,  # distributed, idle and the other deep analyses (json_deep.py)
    **DEVICE_RANK_SECTIONS,  # graph replays, compiled kernels, inference phases (json_device.py)
    **EVIDENCE_RANK_SECTIONS,  # the evidence the advisor weighs: tensor cores, convolutions, ... (json_evidence.py)
}

#: keys every rank object must carry even before their analysis exists (value null / [])
REQUIRED_RANK_KEYS: dict[str, Any] = {"device": None, "overview": None, "steps": [], "gpu": None, "kernels": [],
                      "operators": [], "distributed": None, "idle": None}

ClusterSection = Callable[[Bundle], Any]
CLUSTER_SECTIONS: dict[str, ClusterSection] = {
    "cluster": cluster_section,
    "verdicts": verdict_section,  # advisor: what bounds each rank's step (docs/advisor.md)
}


@with_bundle_memo
def to_json(bundle: Bundle, findings: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The whole §12 document for one analysed trace."""
    trace = bundle.trace
    ranks = [rank_object(rr, trace) for _, rr in sorted(bundle.ranks.items())]
    return document(trace.source, ranks, cluster_section(bundle), verdict_section(bundle, findings), findings,
                    [d.to_dict() for d in trace.diagnostics])


def rank_object(rr: RankResults, trace: Trace) -> dict[str, Any]:
    """One rank's object of the document (its sections from its results; what a map worker sends back)."""
    obj: dict[str, Any] = {"rank": rr.rank, **REQUIRED_RANK_KEYS}
    for key, fn in RANK_SECTIONS.items():
        obj[key] = fn(rr, trace)
    obj["skipped"] = dict(rr.skipped)
    return obj


def document(source: str, ranks: list[dict[str, Any]], cluster: Any, verdicts: list[dict[str, Any]],
             findings: Sequence[dict[str, Any]], diagnostics: list[dict[str, object]]) -> dict[str, Any]:
    """The document from its parts: the rank objects (by rank), the cluster section, the verdicts,
    the findings and the diagnostics (the whole-model and the map-reduce paths both end here)."""
    doc: dict[str, Any] = clean({
        "schema_version": SCHEMA_VERSION,
        "source": source,
        "ranks": ranks,
        "cluster": cluster,
        "verdicts": verdicts,
        "findings": list(findings),
        "diagnostics": diagnostics,
    })
    return doc


def clean(obj: Any) -> Any:
    """Plain JSON types: numpy scalars → Python, NaN/inf → null, tuples → lists."""
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [clean(v) for v in obj.tolist()]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj
