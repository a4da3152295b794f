"""Terminal views of the arrivals at the collectives (culprits, victims, causes), of slow links, and of
the job replayed with each culprit fixed."""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Console

from stepscope.analysis.arrivals import CAUSES, Arrivals
from stepscope.analysis.comm import coll_type_name
from stepscope.analysis.slow_links import SLOW_FRACTION, SlowLinks
from stepscope.analysis.whatif.job_whatif import JobWhatIf
from stepscope.report.texts import CAUSE_WORDS
from stepscope.report.views._deep import gbps, ms, nbytes, table

CAUSE_LABELS = {"late_start": "late start", "compute": "compute", "communication": "other comm",
                "copy": "copies", "input": "input", "host": "host"}


def render_arrivals(a: Arrivals, console: Console, top: int, words: Mapping[str, str] = CAUSE_WORDS) -> None:
    """The arrivals table and each culprit's cause (in ``words``: a CPU-only job's host is its model's ops)."""
    steps = max(a.m.step_count, 1)
    t = table(f"arrivals at {a.collective_count} collectives (ms per average step)", "rank", "role", "last at",
              "late ms", "waits for the last arrival ms", "of it on culprits ms", right_from=2)
    for i, rank in enumerate(a.ranks):  # per rank
        role = "culprit" if rank in a.culprits else "victim" if rank in a.victims else ""
        t.add_row(str(rank), role, f"{int(a.times_last[i])}", ms(a.late_ns[i] / steps), ms(a.wait_total_ns[i] / steps),
                  ms(a.wait_on_culprits_ns[i] / steps), style="bold red" if role == "culprit" else "")
    console.print(t)
    for r in a.culprits:  # a handful
        i = a.ranks.index(r)
        parts = ", ".join(f"{CAUSE_LABELS[c]} {ms(v / steps)}" for c, v in zip(CAUSES, a.rank_cause_ns[i].tolist())
                          if v >= 5_000)
        console.print(f"  culprit rank {r}: {words[a.culprit_cause[r]]}; last at {int(a.times_last[i])} of "
                      f"{a.collective_count}, {ms(a.late_ns[i] / steps)} ms late per step ({parts})")
    if not a.culprits:
        console.print("  no culprit: no rank arrives late enough at the collectives to hold the others back")
    _render_collectives(a, console, top)


def _render_collectives(a: Arrivals, console: Console, top: int) -> None:
    late = [int(i) for i in a.lateness_ns.argsort()[::-1][:top] if a.last_rank[i] >= 0]  # the latest first
    if not late:
        return
    t = table(f"latest collectives (top {len(late)})", "#", "type", "bytes", "last rank", "lateness ms",
              "cause", right_from=2)
    for i in late:  # top rows
        cause = CAUSES[int(a.cause_ns[i].argmax())] if a.cause_ns[i].any() else "-"
        t.add_row(str(i), coll_type_name(int(a.m.coll_type[i])), nbytes(float(a.m.bytes[i])), str(a.last_rank[i]),
                  ms(a.lateness_ns[i]), CAUSE_LABELS.get(cause, cause))
    console.print(t)


def render_slow_links(s: SlowLinks, console: Console, top: int) -> None:
    rows = s.rows
    slow = s.slow
    t = table(f"slow links: {len(slow)} of {len(rows)} below {SLOW_FRACTION:g} x the median of their kind and size",
              "link", "kind", "bytes", "time ms", "GB/s", "median GB/s", right_from=2)
    for i in range(min(top, len(slow))):  # top rows
        t.add_row(str(slow.link[i]), str(slow.kind[i]), nbytes(float(slow.bytes[i])), ms(slow.time_ns[i]),
                  gbps(float(slow.bandwidth_gbps[i])), gbps(float(slow.class_median_gbps[i])))
    if len(slow):
        console.print(t)
    else:
        console.print(f"  no slow link among {len(rows)} groups / links")


def render_job_whatif(j: JobWhatIf, console: Console, top: int) -> None:
    t = table(f"the job replayed with each culprit fixed (measured mean step {ms(j.measured_mean_ns)} ms)",
              "rank", "predicted mean ms", "saved ms", right_from=1)
    for i, r in enumerate(j.culprits[:top]):  # a handful of culprits
        t.add_row(str(r), ms(float(j.predicted_mean_ns[i])), ms(float(j.fix_change_ns[i])))
    if j.culprits:
        console.print(t)
    t = table("the job replayed with each standard remedy on every rank", "remedy", "predicted mean ms", "saved ms",
              right_from=1)
    for i, n in enumerate(j.remedy):  # a handful of remedies
        if not j.remedy_possible[i]:  # a change to a device's work alone, on a job without a device
            continue
        t.add_row(n, ms(float(j.remedy_predicted_mean_ns[i])), ms(float(j.remedy_change_ns[i])))  # signed
    console.print(t)
