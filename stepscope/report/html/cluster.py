"""The distributed section: per-rank stacked bars and step times, slow ranks marked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stepscope.report.html import svg
from stepscope.report.html.fmt import esc, fmt_ms, fmt_pct, num
from stepscope.report.html.sections import section

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
    slow = {int(x) for x in (cluster or {}).get("slow_ranks") or [] if num(x) is not None}
    parts = [_cluster_line(cluster, len(ranks))]
    if with_dist:
        cols = [f"rank {r.get('rank')}" + (" (slow)" if r.get("rank") in slow else "") for r in with_dist]
        layers = [svg.Series(k.removesuffix("_ms"), label, c,
                             [num(r["distributed"].get(k)) or 0.0 for r in with_dist])
                  for k, label, c in DIST_LAYERS]
        parts.append("<h3>Computation and communication per rank (average step)</h3>")
        parts.append(svg.legend([(s.label, s.color) for s in layers]))
        parts.append(svg.stacked_columns("rank-chart", cols, layers, label="per-rank split"))
    parts.append(_step_time_bars(ranks, slow))
    return section("distributed", "Distributed", "".join(parts),
                   "Per rank: where the average step goes; slow ranks hold the others back.")


def _cluster_line(cluster: Mapping[str, Any] | None, n_ranks: int) -> str:
    if cluster is None:
        return f'<p class="note">{n_ranks} ranks in this trace.</p>'
    slow = cluster.get("slow_ranks") or []
    slow_txt = ", ".join(str(s) for s in slow) if slow else "none"
    return (f'<p class="note" id="cluster-line">{esc(cluster.get("rank_count", n_ranks))} ranks · '
            f'slow ranks: {esc(slow_txt)} · load imbalance {esc(fmt_pct(cluster.get("imbalance_pct")))}</p>')


def _step_time_bars(ranks: Sequence[Mapping[str, Any]], slow: set[int]) -> str:
    items, colors = [], []
    for r in ranks:
        avg = num((r.get("overview") or {}).get("avg_step_ms"))
        if avg is not None:
            name = f"rank {r.get('rank')}" + (" (slow)" if r.get("rank") in slow else "")
            items.append((name, avg, f"{name}: average step {fmt_ms(avg, 2)}"))
            colors.append("#d6336c" if r.get("rank") in slow else "#4c78a8")
    if not items:
        return ""
    return ("<h3>Average step time per rank</h3>"
            + svg.hbars("rank-step-chart", items, color="#4c78a8", label="step time per rank", value_fmt="ms",
                                                    colors=colors))
