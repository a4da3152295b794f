"""The distributed section: per-rank stacked bars and step times, the culprits marked (ranks late at the
collectives, ``cluster.arrivals``), their causes, who waits for them, and slow links."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stepscope.report.html import svg
from stepscope.report.html.fmt import esc, fmt_bytes, fmt_ms, fmt_pct, num
from stepscope.report.html.sections import section
from stepscope.report.html.tables import Col, table
from stepscope.report.texts import CAUSE_WORDS

#: distributed split per average step (TB plugin semantics: the four parts sum to the step)
DIST_LAYERS = (("computation_ms", "computation", "#4c78a8"), ("overlap_ms", "overlap", "#9ecae9"),
               ("communication_ms", "communication", "#72b7b2"), ("other_ms", "other", "#bab0ac"))


def distributed_html(doc: Mapping[str, Any]) -> str:
    """Per-rank bars when the run has several ranks or communication; '' otherwise."""
    ranks = [r for r in doc.get("ranks") or [] if isinstance(r, Mapping)]
    cluster = doc.get("cluster") if isinstance(doc.get("cluster"), Mapping) else None
    with_dist = [r for r in ranks if isinstance(r.get("distributed"), Mapping)]
    if len(ranks) < 2 and not with_dist:
        return ""
    slow = culprits_of(cluster)
    parts = [_cluster_line(cluster, len(ranks)), arrivals_html(cluster), slow_links_html(cluster)]
    if with_dist:
        cols = [f"rank {r.get('rank')}" + (" (culprit)" if r.get("rank") in slow else "") for r in with_dist]
        layers = [svg.Series(k.removesuffix("_ms"), label, c,
                             [num(r["distributed"].get(k)) or 0.0 for r in with_dist])
                  for k, label, c in DIST_LAYERS]
        parts.append("<h3>Computation and communication per rank (average step)</h3>")
        parts.append(svg.legend([(s.label, s.color) for s in layers]))
        parts.append(svg.stacked_columns("rank-chart", cols, layers, label="per-rank split"))
    parts.append(_step_time_bars(ranks, slow))
    return section("distributed", "Distributed", "".join(parts),
                   "Per rank: where the average step goes; culprits arrive late at the collectives and hold the "
                   "others back.")


def culprits_of(cluster: Mapping[str, Any] | None) -> set[int]:
    """The culprit ranks of the document's ``cluster.arrivals``."""
    arr = (cluster or {}).get("arrivals")
    items = arr.get("culprits") if isinstance(arr, Mapping) else None
    return {int(c["rank"]) for c in items or [] if isinstance(c, Mapping) and num(c.get("rank")) is not None}


RANK_COLS = (Col("rank", "rank", str, numeric=False), Col("role", "role", str, numeric=False),
             Col("times_last", "last at", str), Col("late_ms", "late ms", lambda v: fmt_ms(v, 3)),
             Col("wait_ms", "wait ms", lambda v: fmt_ms(v, 3)),
             Col("wait_on_culprits_ms", "waits on culprits ms", lambda v: fmt_ms(v, 3)))
LINK_COLS = (Col("link", "link", str, numeric=False), Col("kind", "kind", str, numeric=False),
             Col("bytes", "bytes", fmt_bytes), Col("time_ms", "time", lambda v: fmt_ms(v, 3)),
             Col("bandwidth_gbps", "GB/s", lambda v: f"{num(v) or 0:.2f}"),
             Col("class_median_gbps", "median GB/s", lambda v: f"{num(v) or 0:.2f}"))


def arrivals_html(cluster: Mapping[str, Any] | None) -> str:
    """Culprits with their causes, and every rank's lateness and wait (per average step)."""
    arr = (cluster or {}).get("arrivals")
    if not isinstance(arr, Mapping):
        return ""
    lines = []
    for c in arr.get("culprits") or []:
        causes = ", ".join(f"{CAUSE_WORDS.get(str(k), str(k))} {fmt_ms(v, 2)}" for k, v in
                           sorted((c.get("cause_ms") or {}).items(), key=lambda kv: -(num(kv[1]) or 0))
                           if (num(v) or 0) >= 0.005)
        lines.append(f'<li>rank {esc(c.get("rank"))} arrives last at {esc(c.get("times_last"))} of '
                     f'{esc(arr.get("collective_count"))} collectives, {esc(fmt_ms(c.get("late_ms"), 2))} per step '
                     f'after the next rank ({esc(fmt_pct(c.get("late_pct_of_step")))} of the step): {esc(causes)}</li>')
    head = (f'<ul id="culprits">{"".join(lines)}</ul>' if lines else
            '<p class="note" id="culprits">No culprit: no rank arrives late enough at the collectives to hold the '
            'others back.</p>')
    return ("<h3>Culprits and victims at the collectives (per average step)</h3>" + head
            + table("arrivals-table", RANK_COLS, list(arr.get("ranks") or [])))


def slow_links_html(cluster: Mapping[str, Any] | None) -> str:
    sl = (cluster or {}).get("slow_links")
    if not isinstance(sl, Mapping):
        return ""
    slow = list(sl.get("slow") or [])
    if not slow:
        return f'<p class="note" id="slow-links">No slow link among {len(sl.get("links") or [])} groups / links.</p>'
    return (f"<h3>Slow links (below {esc(sl.get('slow_fraction'))} × the median of their kind and size)</h3>"
            + table("slow-links", LINK_COLS, slow))


def _cluster_line(cluster: Mapping[str, Any] | None, n_ranks: int) -> str:
    if cluster is None:
        return f'<p class="note">{n_ranks} ranks in this trace.</p>'
    slow = sorted(culprits_of(cluster))
    slow_txt = ", ".join(str(s) for s in slow) if slow else "none"
    return (f'<p class="note" id="cluster-line">{esc(cluster.get("rank_count", n_ranks))} ranks · '
            f'culprits: {esc(slow_txt)} · load imbalance {esc(fmt_pct(cluster.get("imbalance_pct")))}</p>')


def _step_time_bars(ranks: Sequence[Mapping[str, Any]], slow: set[int]) -> str:
    items, colors = [], []
    for r in ranks:
        avg = num((r.get("overview") or {}).get("avg_step_ms"))
        if avg is not None:
            name = f"rank {r.get('rank')}" + (" (culprit)" if r.get("rank") in slow else "")
            items.append((name, avg, f"{name}: average step {fmt_ms(avg, 2)}"))
            colors.append("#d6336c" if r.get("rank") in slow else "#4c78a8")
    if not items:
        return ""
    return ("<h3>Average step time per rank</h3>"
            + svg.hbars("rank-step-chart", items, color="#4c78a8", label="step time per rank", value_fmt="ms",
                                                    colors=colors))
