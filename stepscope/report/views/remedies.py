"""Terminal view of the what-if remedies: each standard remedy's predicted mean step."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.whatif.remedies import Remedies
from stepscope.report.views._deep import ms, table


def render_remedies(r: Remedies, console: Console, top: int) -> None:
    t = table(f"rank {r.rank}: what-if, each remedy replayed (mean step {ms(r.measured_mean_ns)} ms)",
              "remedy", "predicted ms", "saves ms", "basis")
    for i, name in enumerate(r.name):  # per remedy
        t.add_row(name, ms(float(r.predicted_mean_ns[i])), ms(float(r.change_ns[i])), r.basis[i])  # signed
    console.print(t)
