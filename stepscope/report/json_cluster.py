"""§12 JSON sections ``cluster.arrivals``, ``cluster.slow_links``, ``cluster.job_whatif``,
``cluster.pipeline``, ``cluster.all_to_all`` and ``cluster.exposed_comm`` (documented in docs/json.md).

Per-rank and per-culprit times are ms per average step; per-collective times are ms of that one
collective, arrivals in ms from the trace's first matched arrival (clock-aligned).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from stepscope.analysis.arrivals import CAUSES, TIE_NS, Arrivals
from stepscope.analysis.comm import coll_type_name
from stepscope.analysis.registry import ALL_TO_ALL, ARRIVALS, EXPOSED_COMM, JOB_WHATIF, PIPELINE, SLOW_LINKS
from stepscope.analysis.slow_links import SLOW_FRACTION
from stepscope.analysis.whatif.remedies import REMEDY_OPTIONS

if TYPE_CHECKING:
    from stepscope.analysis.bundle import Bundle

MS = 1e6
#: collectives listed in the document (the first ones in time); ``collective_count`` says how many there are
MAX_COLLECTIVES = 256


def arrivals_section(bundle: Bundle) -> dict[str, Any] | None:
    a = bundle.cluster_result(ARRIVALS)
    if a is None:
        return None
    steps = max(a.m.step_count, 1)
    return {"step_count": a.m.step_count, "job_step_ms": a.m.job_step_ns / MS, "tie_us": TIE_NS / 1e3,
            "collective_count": a.collective_count, "culprits": _culprits(a, steps), "victims": list(a.victims),
            "ranks": _ranks(a, steps), "collectives": _collectives(a)}


def _role(a: Arrivals, rank: int) -> str:
    return "culprit" if rank in a.culprits else "victim" if rank in a.victims else "other"


def _culprits(a: Arrivals, steps: int) -> list[dict[str, Any]]:
    out = []
    for r in a.culprits:  # a handful
        i = a.ranks.index(r)
        out.append({"rank": r, "cause": a.culprit_cause[r], "times_last": int(a.times_last[i]),
                    "late_ms": float(a.late_ns[i]) / steps / MS, "in_trace_late_ms": a.in_trace_late_ns(r) / steps / MS,
                    "late_pct_of_step": round(a.late_pct_of_job(r), 2),
                    "cause_ms": {c: float(v) / steps / MS for c, v in zip(CAUSES, a.rank_cause_ns[i].tolist())}})
    return out


def _ranks(a: Arrivals, steps: int) -> list[dict[str, Any]]:
    cols = {"times_last": a.times_last.tolist(), "late": (a.late_ns / steps / MS).tolist(),
            "wait": (a.wait_total_ns / steps / MS).tolist(), "on": (a.wait_on_culprits_ns / steps / MS).tolist(),
            "off": (a.m.clock_offset_ns / 1e3).tolist()}
    return [{"rank": r, "role": _role(a, r), "times_last": int(cols["times_last"][i]), "late_ms": cols["late"][i],
             "wait_ms": cols["wait"][i], "wait_on_culprits_ms": cols["on"][i], "clock_offset_us": cols["off"][i]}
            for i, r in enumerate(a.ranks)]


def _collectives(a: Arrivals) -> list[dict[str, Any]]:
    m = a.m
    n = min(a.collective_count, MAX_COLLECTIVES)
    t0 = int(m.arrival_ns[m.present].min()) if m.present.any() else 0

    def rel(x: np.ndarray[Any, Any], ok: np.ndarray[Any, Any]) -> list[list[float | None]]:
        vals = np.where(ok, (x - t0) / MS, np.nan)[:n]
        return [[None if np.isnan(v) else round(float(v), 6) for v in row] for row in vals.tolist()]

    arrival, enqueue = rel(m.arrival_ns, m.present), rel(m.enqueue_ns, m.present & (m.enqueue_ns >= 0))
    end = rel(m.end_ns, m.present)
    wait = np.where(m.present, a.wait_ns / MS, np.nan)[:n].tolist()
    cause = (a.cause_ns[:n] / MS).tolist()
    return [{"index": i, "type": coll_type_name(int(m.coll_type[i])), "group": str(m.pg[i]),
             "bytes": int(m.bytes[i]), "last_rank": None if a.last_rank[i] < 0 else int(a.last_rank[i]),
             "lateness_ms": float(a.lateness_ns[i]) / MS, "spread_ms": float(a.spread_ns[i]) / MS,
             "arrival_ms": arrival[i], "enqueue_ms": enqueue[i], "end_ms": end[i],
             "wait_ms": [None if np.isnan(w) else w for w in wait[i]],
             "cause_ms": {c: v for c, v in zip(CAUSES, cause[i]) if v > 0}} for i in range(n)]


def slow_links_section(bundle: Bundle) -> dict[str, Any] | None:
    s = bundle.cluster_result(SLOW_LINKS)
    if s is None:
        return None
    cols = {k: v.tolist() for k, v in s.rows.columns().items()}
    rows = [{"source": cols["source"][i], "link": cols["link"][i], "kind": cols["kind"][i],
             "ranks": [int(x) for x in str(cols["ranks"][i]).split(",") if x], "count": cols["count"][i],
             "bytes": cols["bytes"][i], "time_ms": cols["time_ns"][i] / MS,
             "bandwidth_gbps": _num(cols["bandwidth_gbps"][i]), "class_median_gbps": _num(cols["class_median_gbps"][i]),
             "slow": bool(cols["slow"][i])} for i in range(len(s.rows))]
    return {"slow_fraction": SLOW_FRACTION, "links": rows, "slow": [r for r in rows if r["slow"]]}


def job_whatif_section(bundle: Bundle) -> dict[str, Any] | None:
    j = bundle.cluster_result(JOB_WHATIF)
    if j is None:
        return None
    return {"measured_mean_ms": j.measured_mean_ns / MS,
            "fixes": [{"rank": r, "basis": j.basis(r), "predicted_mean_ms": float(j.predicted_mean_ns[i]) / MS,
                       "saved_ms": float(j.fix_change_ns[i]) / MS,
                       "options": {"fix_rank": [r]}}
                      for i, r in enumerate(j.culprits)],
            "remedies": [{"remedy": n, "basis": j.remedy_basis(n),
                          "predicted_mean_ms": float(j.remedy_predicted_mean_ns[i]) / MS,
                          "saved_ms": float(j.remedy_change_ns[i]) / MS,  # signed
                          "options": dict(REMEDY_OPTIONS[n])}
                         for i, n in enumerate(j.remedy) if j.remedy_possible[i]]}


def _num(x: float) -> float | None:
    return None if not np.isfinite(x) else float(x)


def _rows(cols: dict[str, np.ndarray[Any, Any]], ms_keys: tuple[str, ...], n: int) -> list[dict[str, Any]]:
    """Table rows as objects: ``*_ns`` columns in ``ms_keys`` become ``*_ms``, NaN becomes null."""
    out = {k[:-3] + "_ms" if k in ms_keys else k: (v / MS if k in ms_keys else v).tolist() for k, v in cols.items()}
    return [{k: (_num(v[i]) if isinstance(v[i], float) else v[i]) for k, v in out.items()} for i in range(n)]


def pipeline_section(bundle: Bundle) -> dict[str, Any] | None:
    p = bundle.cluster_result(PIPELINE)
    if p is None:
        return None
    pc, sc, tc = p.pipelines.columns(), p.stages.columns(), p.steps.columns()
    pipes = _rows(pc, ("step_ns", "busy_max_ns", "busy_mean_ns", "critical_bubble_ns"), len(p.pipelines))
    for row in pipes:  # a few pipelines
        row["ranks"] = [int(x) for x in str(row["ranks"]).split(",")]
    return {"pipelines": pipes,
            "stages": _rows(sc, tuple(k for k in sc if k.endswith("_ns")), len(p.stages)),
            "steps": _rows(tc, tuple(k for k in tc if k.endswith("_ns")), len(p.steps))}


def all_to_all_section(bundle: Bundle) -> dict[str, Any] | None:
    a = bundle.cluster_result(ALL_TO_ALL)
    if a is None:
        return None
    rc, sc = a.ranks.columns(), a.steps.columns()
    return {"time_spread": _num(a.time_spread), "routed_in_spread": _num(a.routed_in_spread),
            "top_receivers": list(a.top_receivers),
            "ranks": _rows(rc, ("time_ns", "dispatch_ns", "combine_ns"), len(a.ranks)),
            "steps": _rows(sc, ("time_max_ns", "time_median_ns"), len(a.steps))}


def exposed_comm_section(bundle: Bundle) -> dict[str, Any] | None:
    """Per rank and step (ms of that step), and per rank summed over its steps: the distributed
    analysis's ``communication`` (exposed) and ``overlap`` — the same numbers as each rank's
    ``distributed.steps``."""
    e = bundle.cluster_result(EXPOSED_COMM)
    if e is None:
        return None
    keys = ("step_ns", "comm_ns", "exposed_ns", "overlapped_ns")
    ranks = _rows(e.ranks.columns(), keys, len(e.ranks))
    for row in ranks:  # per rank: no step
        del row["step"]
    return {"steps": _rows(e.steps.columns(), keys, len(e.steps)), "ranks": ranks}
