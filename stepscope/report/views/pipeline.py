"""Terminal views of the pipeline stages (bubbles, imbalance) and of the all-to-all imbalance across ranks."""

from __future__ import annotations

import math

from rich.console import Console

from stepscope.analysis.all_to_all import AllToAll
from stepscope.analysis.pipeline import Pipeline
from stepscope.report.views._deep import ms, nbytes, pct, table

#: ranks named in "most routed bytes received" (the report and the web UI name as many)
TOP_RECEIVERS = 5


def render_pipeline(p: Pipeline, console: Console, top: int) -> None:
    pl, st = p.pipelines, p.stages
    for i in range(len(pl)):  # a few pipelines
        t = table(f"pipeline {i}: ranks {pl.ranks[i]} (stage order from {pl.order[i]}), "
                  f"{int(pl.step_count[i])} steps, ms per average step", "stage", "rank", "step", "busy", "other",
                  "bubble", "warm-up", "interior", "cool-down", "recv wait", "bubble %", right_from=1)
        for j in range(len(st)):  # stages of all pipelines, a few dozen
            if st.pipeline[j] != i:
                continue
            slowest = int(st.stage[j]) == int(pl.slowest_stage[i])
            t.add_row(str(st.stage[j]), str(st.rank[j]), ms(st.step_ns[j]), ms(st.busy_ns[j]), ms(st.other_ns[j]),
                      ms(st.bubble_ns[j]), ms(st.warmup_ns[j]), ms(st.interior_ns[j]), ms(st.cooldown_ns[j]),
                      ms(st.p2p_wait_ns[j]), pct(float(st.bubble_pct[j])), style="bold" if slowest else "")
        console.print(t)
        console.print(f"  slowest stage {int(pl.slowest_stage[i])}: busy {ms(pl.busy_max_ns[i])} ms against a mean of "
                      f"{ms(pl.busy_mean_ns[i])} ms (imbalance {pct(float(pl.imbalance_pct[i]))}); its bubble, on the "
                      f"critical path: {ms(pl.critical_bubble_ns[i])} ms per step "
                      f"({pct(float(pl.critical_bubble_pct[i]))} of the step)")


def _ratio(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:.2f}x"


def render_all_to_all(a: AllToAll, console: Console, top: int) -> None:
    r = a.ranks
    t = table(f"all-to-all across {len(r)} ranks, per average step (time spread {_ratio(a.time_spread)}, "
              f"routed bytes spread {_ratio(a.routed_in_spread)})", "rank", "ms", "dispatch ms", "combine ms",
              "count", "sent", "received", "routed in", "time / median", "routed / median", right_from=1)
    for i in range(len(r)):  # per rank
        t.add_row(str(r.rank[i]), ms(r.time_ns[i]), ms(r.dispatch_ns[i]), ms(r.combine_ns[i]), f"{r.count[i]:.1f}",
                  nbytes(float(r.bytes_out[i])), nbytes(float(r.bytes_in[i])), nbytes(float(r.routed_in_bytes[i])),
                  _ratio(float(r.time_vs_median[i])), _ratio(float(r.routed_in_vs_median[i])))
    console.print(t)
    if a.top_receivers:
        console.print(f"  most routed bytes received: ranks {', '.join(map(str, a.top_receivers[:TOP_RECEIVERS]))}")
    else:
        console.print("  the all-to-all ops record no sizes: only the times compare")
