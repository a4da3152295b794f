"""The what-if prediction as a JSON section and in the terminal (one source: :func:`whatif_dict`)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from stepscope.analysis.whatif.simulate import WhatIf
from stepscope.report import json_out
from stepscope.report.console import said
from stepscope.report.platform_texts import window_words
from stepscope.report.verdict_texts import part_words
from stepscope.report.views._deep import step_label


def _ms(ns: float) -> float:
    return round(ns / 1e6, 3)


def whatif_dict(w: WhatIf, source: str) -> dict[str, Any]:
    """The prediction: the changes' bases, the job's steps before/after, each rank's steps, bounds."""
    measured, predicted = w.job_steps_ns(False), w.job_steps_ns(True)
    steps = w.ranks[0].step.tolist() if w.ranks else []
    device = not w.ranks or any(r.before.has_device for r in w.ranks)
    doc: dict[str, Any] = json_out.clean({
        "schema_version": json_out.SCHEMA_VERSION, "source": source,
        "changes": list(w.bases),
        "caveats": list(w.caveats),
        "job": {
            "measured_mean_ms": _ms(w.mean_ns(False)), "predicted_mean_ms": _ms(w.mean_ns(True)),
            "measured_median_ms": _ms(w.median_ns(False)), "predicted_median_ms": _ms(w.median_ns(True)),
            "saved_mean_ms": _ms(w.saved_ns()),
            "samples_per_step_factor": w.samples_factor,
            "throughput_change_pct": round(w.throughput_change_pct(), 2),
            "bound_before": w.bound(False), "bound_after": w.bound(True),
            "bound_rank_before": w.bound_rank(False) if len(w.ranks) > 1 else None,
            "bound_rank_after": w.bound_rank(True) if len(w.ranks) > 1 else None,
            "paced_by_before": w.paced_by[0], "paced_by_after": w.paced_by[1],
            # the parts shown, in their words (a CPU-only job: no device parts, its host as its verdict says it)
            "part_words": part_words(device),
            "critical_path_pct_before": {k: round(v, 4) for k, v in w.share_pct(False).items()},
            "critical_path_pct_after": {k: round(v, 4) for k, v in w.share_pct(True).items()},
            "steps": [{"step": int(s), "measured_ms": _ms(float(m)), "predicted_ms": _ms(float(p))}
                      for s, m, p in zip(steps, measured.tolist(), predicted.tolist())],
        },
        "ranks": [{"rank": r.rank, "bound_before": r.before.bound if r.before.step_count else None,
                   "bound_after": r.after.bound if r.after.step_count else None,
                   "steps": [{"step": int(s), "measured_ms": _ms(float(m)), "predicted_ms": _ms(float(p))}
                             for s, m, p in zip(r.step.tolist(), r.measured_ns.tolist(), r.predicted_ns.tolist())]}
                  for r in w.ranks],
    })
    return doc


def render(w: WhatIf, source: str, console: Console) -> None:
    """The prediction in the terminal; a trace without step markers in its words (one window: no
    "mean step", no step -1), as its findings and views say them."""
    doc = whatif_dict(w, source)
    whole = bool(doc["job"]["steps"]) and all(s["step"] < 0 for s in doc["job"]["steps"])
    with said(console, window_words(whole)):
        _render(doc, source, console, whole)


def _render(doc: dict[str, Any], source: str, console: Console, whole: bool) -> None:
    job = doc["job"]
    console.rule(f"[bold]stepscope whatif[/bold] {source}")
    for basis in doc["changes"]:
        console.print(f"change: {basis}")
    for caveat in doc["caveats"]:
        console.print(f"[yellow]caveat[/yellow]: {caveat}", highlight=False)
    what = "the window (whole trace, no step markers)" if whole else "step time"
    table = Table(title=f"{what}, measured and predicted (slowest rank)")
    for col in ("step", "measured ms", "predicted ms", "saved ms"):
        table.add_column(col, justify="right")
    for s in job["steps"]:
        table.add_row(step_label(s["step"]), f"{s['measured_ms']:,.2f}", f"{s['predicted_ms']:,.2f}",
                      f"{s['measured_ms'] - s['predicted_ms']:,.2f}")
    console.print(table)
    saved = job["saved_mean_ms"]
    effect = f"saves {saved:,.2f} ms" if saved >= 0 else f"adds {-saved:,.2f} ms"  # a larger batch adds
    median = "" if whole else (f"; median {job['measured_median_ms']:,.2f} -> "  # one window: no median
                               f"{job['predicted_median_ms']:,.2f} ms")
    console.print(f"mean step {job['measured_mean_ms']:,.2f} -> {job['predicted_mean_ms']:,.2f} ms "
                  f"({effect}){median}")
    if job["samples_per_step_factor"] != 1:
        console.print(f"samples per step x{job['samples_per_step_factor']:g}: samples/s "
                      f"{job['throughput_change_pct']:+,.1f} % (mean step)")
    before, after = job["critical_path_pct_before"], job["critical_path_pct_after"]
    words = job.get("part_words") or {k: k for k in before}
    parts = ", ".join(f"{words[k]} {before[k]:.0f} -> {after[k]:.0f} %" for k in before if k in words)
    console.print(f"bound by {bound_text(job, 'before')} now; after this, bound by {bound_text(job, 'after')} "
                  f"({parts})")


def bound_text(job: dict[str, Any], when: str) -> str:
    """``host`` on one rank; ``host (rank 7, the rank the others wait for)`` or ``(rank 3, the slowest)``
    on a job."""
    rank = job.get(f"bound_rank_{when}")
    bound = str(job[f"bound_{when}"])
    bound = str((job.get("part_words") or {}).get(bound, bound))
    if rank is None:
        return bound
    why = "the rank the others wait for" if job.get(f"paced_by_{when}") is not None else "the slowest"
    return f"{bound} (rank {rank}, {why})"
