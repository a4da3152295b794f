"""Terminal view of the what-if remedies: each standard remedy's predicted mean step; a remedy with
nothing in the trace to change (no DataLoader call, no optimizer step) is named, not tabled; one that
cannot act on the rank at all (a change to a device's work, on a CPU-only rank) is not named."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.whatif.remedies import Remedies
from stepscope.report.views._deep import ms, table


def render_remedies(r: Remedies, console: Console, top: int) -> None:
    # a remedy that cannot act on the rank (a device's alone, on a CPU-only rank) is named nowhere
    shown = [i for i in range(len(r.name)) if r.shown(i) and (not r.applies or r.applies[i])]
    idle = ", ".join(n for i, n in enumerate(r.name) if i not in shown and r.shown(i))
    if not shown:
        console.print(f"[bold]rank {r.rank}: what-if[/bold]: no standard remedy has anything to change in this "
                      f"trace ({idle})")
        return
    unprofiled = r.unprofiled_predicted_ns
    extra = ("unprofiled: predicted ms", "saves ms") if unprofiled is not None else ()
    t = table(f"rank {r.rank}: what-if, each remedy replayed (mean step {ms(r.measured_mean_ns)} ms)",
              "remedy", "predicted ms", "saves ms", *extra, "basis")
    for i in shown:  # per remedy that has something to change
        more = (ms(float(unprofiled[i])), ms(r.unprofiled_saved_ns(r.name[i]) or 0.0)) if unprofiled is not None else ()
        t.add_row(r.name[i], ms(float(r.predicted_mean_ns[i])), ms(float(r.change_ns[i])), *more, r.basis[i])  # signed
    console.print(t)
    if r.unprofiled_mean_ns is not None:  # the findings' gains are these (analysis.profiler_cost)
        console.print(f"  unprofiled: the same remedies on the step without the profiler's own cost per recorded op "
                      f"({ms(r.unprofiled_mean_ns)} ms; the verdict says why): the advisor's gains")
    if idle:
        console.print(f"[dim]  left out, nothing in this trace for them to change: {idle}[/dim]")
