"""The verdict in words (part of the one place for prose, :mod:`stepscope.report.texts`): what bounds
the step, the shares behind it, what delays a late rank, and the sentence said when no finding
shortens the bound — where the rank has no device (a CPU-only run), in its own words."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepscope.analysis.critical_path import PARTS
from stepscope.report.platform_texts import device_noun

if TYPE_CHECKING:
    from stepscope.advisor.verdict import Verdict

VERDICT_STAGES: dict[str, str] = {
    "input": "the input pipeline",
    "host": "the host (CPU work, launches)",
    "host-cpu-only": "the model's CPU work",
    "host-compiling": "torch.compile compiling on the host",
    "host-untraced": "the host's time outside every recorded op (the loop's Python, I/O, garbage collection)",
    "host-untraced-native": "the host's code between its traced calls",
    "host-untraced-gaps": "the host's Python between its ops (many short gaps: the per-op overhead)",
    "host-stalled": "the host thread stalled inside its ops (waiting for the GIL or a core: not the model's work)",
    "compute": "{device} compute",
    "communication": "communication",
    "copy": "memory copies",
    "imbalance": "imbalance between ranks",
}


#: what delays a culprit rank (stepscope.analysis.arrivals.CAUSES), in words
CAUSE_WORDS = {"late_start": "it started the step late (before the trace)", "compute": "its own GPU compute",
               "communication": "other communication", "copy": "copies", "input": "the input pipeline",
               "host": "its host (CPU ops, launches)"}
#: the same where the program has no device (CPU-only: its model's ops are its host work)
CPU_CAUSE_WORDS = {**CAUSE_WORDS, "host": "its CPU work (its ops and the code around them)"}


def cause_words(platform: str) -> dict[str, str]:
    return CPU_CAUSE_WORDS if platform.split("+")[0] == "cpu" else CAUSE_WORDS


#: the critical path's parts as its tables, the what-if and the web UI name them (the §12 document's
#: ``critical_path.part_words``, the what-if's ``job.part_words``)
PART_WORDS = {p: p for p in PARTS}
#: the same on a rank without a device (a CPU-only run): no device to compute or copy on (those parts are
#: always 0 there, left out), and its host is what its verdict calls it
CPU_PART_WORDS = {"communication": "communication", "input": "input", "host": VERDICT_STAGES["host-cpu-only"]}


def part_words(has_device: bool) -> dict[str, str]:
    """The critical path's parts shown, in their words (:data:`PART_WORDS`, :data:`CPU_PART_WORDS`)."""
    return dict(PART_WORDS if has_device else CPU_PART_WORDS)


#: the host share of a rank without a host timeline (a summary-only trace): the device idles, and
#: nothing in the trace says whether the host, the input or a wait kept it idle
NO_HOST_STAGE = "{device} idle (no host timeline to say why)"


def _stage(stage: str, device: str, host_timeline: bool = True, has_device: bool = True) -> str:
    """The part's words; the host of a rank without device work (CPU-only) is the CPU, not launches."""
    host = NO_HOST_STAGE if not host_timeline else VERDICT_STAGES["host-cpu-only"] if not has_device else None
    return (host if stage == "host" and host else VERDICT_STAGES.get(stage, stage)).format(device=device)


#: the compiled view of a rank without device time (a CPU-only run)
NO_DEVICE_COMPILED = ("no device time: the code Inductor generates for the CPU runs inside the host's ops (see the "
                      "operators view)")


def dynamo_frames_text(lookups: float, regions: float, eager: float, falling_back: int, steady: int) -> str:
    """The compiled view's line on Dynamo's frames: lookups and compiled regions a step, and the frames
    that run eager (``eager`` a step, in ``falling_back`` of the ``steady`` steps that do not compile)."""
    ran = f"Dynamo ran {lookups:g} cache lookup{'' if lookups == 1 else 's'} a step and "
    if falling_back == 0:
        return ran + f"{regions:g} compiled region{'' if regions == 1 else 's'}: the frames run compiled"
    where = f"(in {falling_back} of the {steady} steps that do not compile)"
    if regions == 0:
        return ran + f"no compiled region: the frame runs eager under its torch.compile wrapper {where}"
    return ran + (f"{regions:g} compiled region{'' if regions == 1 else 's'}: {eager:g} frame(s) a step run eager "
                  f"under the torch.compile wrapper {where}")


#: where to look when no finding shortens the bound itself, per bound
UNADDRESSED_HINT: dict[str, str] = {
    "compute": "start from the longest kernels (the kernels view: their time, Tensor-Core use and occupancy)",
    "communication": "see the distributed view (collective sizes, bandwidth, overlap with compute)",
    "copy": "see the memcpy view (the largest copies, their direction and memory kind)",
    "input": "see the DataLoader calls in the operators view",
    "host": "see the operators view by host self time",
}


#: the same where the rank has no device (a CPU-only run: its collectives run on the host, gloo)
CPU_UNADDRESSED_HINT: dict[str, str] = {
    "communication": "see the distributed view (the time inside the host's collectives, waiting for the other "
                     "ranks included) and, on a job, who arrives late at them",
    "input": UNADDRESSED_HINT["input"], "host": UNADDRESSED_HINT["host"],
}


def unaddressed_text(v: Verdict, any_findings: bool = True) -> str:
    """The sentence added to the verdict when no finding's change shortens its bound: the findings
    act on other parts of the path, or there is none (``any_findings`` False). The bound is that of
    the step without the profiler's own cost where it is another (the one the findings are ranked by)."""
    bound = v.unprofiled_bound or v.bound
    part = _host_part(v, v.shares_pct.get("host", 0.0))[0] if bound == "host" == v.bound else None
    stage = part or _stage(bound, device_noun(v.platform), v.host_timeline, v.has_device)
    hint = (UNADDRESSED_HINT if v.has_device else CPU_UNADDRESSED_HINT).get(bound)
    if bound == "host" and v.top_annotation:  # the user's own range holds most of it: start there
        hint = (f"start with record_function '{v.top_annotation}' ({v.top_annotation_pct:.0f}% of the step; the "
                "annotations view, and the operators inside it by host self time)")
    elif bound == "host" and v.top_op:  # one op holds most of it
        hint = f"start with {v.top_op} ({v.top_op_pct:.0f}% of the step in its own time; the operators view)"
    if not any_findings:
        return f"No finding shortens {stage}" + (f"; to shorten it, {hint}." if hint else ".")
    tail = f"; to shorten {stage} itself, {hint}" if hint else ""
    return f"No finding below shortens {stage}: they act on other parts of the path{tail}."


def verdict_text(v: Verdict) -> str:
    """``rank 0: bound by the input pipeline (33% of the 177.6 ms step; GPU busy 57%) — compute 54%, ...``.

    The device is named for the platform (GPU, NPU); a window without step markers is the whole trace.
    """
    device = device_noun(v.platform)
    window = "window (whole trace, no step markers)" if v.whole_trace else "step"
    who = "job" if v.rank is None else f"rank {v.rank}"
    if v.bound == "imbalance" and v.set_by == "moving":
        return _moving_text(v, window)
    if v.bound == "imbalance":
        ranks = ", ".join(str(r) for r in v.ranks)
        causes = "; ".join(cause_words(v.platform).get(c, c) for c in dict.fromkeys(v.causes)) or "their own work"
        return (f"{who}: bound by imbalance between ranks — rank{'s' if len(v.ranks) > 1 else ''} {ranks} "
                f"arrive{'' if len(v.ranks) > 1 else 's'} late at the collectives ({causes}); the others wait "
                f"for {'them' if len(v.ranks) > 1 else 'it'} {v.excess_pct or 0:.0f}% of the "
                f"{v.step_ns / 1e6:.1f} ms {window}")
    share = v.shares_pct.get(v.bound, 0.0)
    busy = (f"; {device} busy with kernels or copies {v.device_busy_pct:.0f}%"
            if v.device_busy_pct is not None else "")
    stage, part = _host_part(v, share) if v.bound == "host" else (None, share)
    stage = stage or _stage(v.bound, device, v.host_timeline, v.has_device)
    said = f"{part:.0f}%"
    if f"{part:.0f}" != f"{share:.0f}":  # the host's whole share beside the part that names it
        busy = f"; the host {share:.0f}%{busy}"
    named = (f"; {v.top_annotation_pct:.0f}% of it inside record_function '{v.top_annotation[:60]}'"
             if v.top_annotation else f"; {v.top_op_pct:.0f}% of it in {v.top_op[:60]}" if v.top_op else _waiting(v))
    head = f"{who}: bound by {stage} ({said} of the {v.step_ns / 1e6:.1f} ms {window}{_skew(v)}{named}{busy})"
    others = sorted(((s, p) for s, p in v.shares_pct.items() if s != v.bound), key=lambda sp: -sp[1])
    rest = ", ".join(f"{_stage(s, device, v.host_timeline, v.has_device)} {p:.0f}%" for s, p in others if p >= 0.5)
    if v.rank is None and v.ranks:
        head = _job_head(v, stage, said, window, busy)
    return f"{head} — {rest}" if rest else head


def _moving_text(v: Verdict, window: str) -> str:
    """The job's imbalance whose slow rank moves from step to step: no culprit, the ranks take turns."""
    most, named = v.most_last
    shapes = (f"; {v.varying_shapes_pct:.0f}% of the op calls see input shapes that change from step to step"
              if v.varying_shapes_pct else "")
    return (f"job: bound by imbalance between ranks — the slow rank changes from step to step (no rank is last at "
            f"more than {most} of the {named} collectives a rank is late at{shapes}); the ranks wait for each other "
            f"{v.excess_pct or 0:.0f}% of the {v.step_ns / 1e6:.1f} ms {window}")


#: a mean step this many times the median is one or a few steps' (an evaluation, a warm-up): said beside it
SKEWED_MEAN = 1.25


def _waiting(v: Verdict) -> str:
    """``; 40% of the step waiting there for rank 1 to arrive`` for a rank bound by communication that waits
    for the others, else ""."""
    if not v.waiting_pct:
        return ""
    who = (f"rank{'s' if len(v.waiting_for) > 1 else ''} {', '.join(map(str, v.waiting_for))}" if v.waiting_for
           else "the other ranks")
    return f"; {v.waiting_pct:.0f}% of the step waiting there for {who} to arrive"


def _skew(v: Verdict) -> str:
    """``; the median 21.9 ms: step 7 took 1,234.5 ms`` where the mean is far above the median, else ""."""
    if v.median_step_ns is None or v.step_count < 3 or v.step_ns < SKEWED_MEAN * v.median_step_ns:
        return ""
    return f"; the median {v.median_step_ns / 1e6:.1f} ms: step {v.slowest_step} took {v.slowest_step_ns / 1e6:,.1f} ms"


#: a host bound whose stalled part (the host thread kept waiting inside its ops) holds at least this share of
#: the step is named by it: the rest is the model's work, but that part is none of it and is fixed elsewhere
STALLED_MIN_PCT = 25.0


def _host_part(v: Verdict, share: float) -> tuple[str | None, float]:
    """A host bound most of which one part holds — the compiler, or time no op covers — or a quarter of which
    the thread lost stalled inside its ops: that part's words and share of the step (the host's whole share is
    said beside it), else (None, the host's share)."""
    if v.compiling_pct > share / 2:
        return VERDICT_STAGES["host-compiling"], v.compiling_pct
    untraced = v.untraced_pct > share / 2 and v.host_timeline
    if v.stalled_pct >= STALLED_MIN_PCT and (not untraced or v.stalled_pct >= v.untraced_pct):
        return VERDICT_STAGES["host-stalled"], v.stalled_pct
    if untraced:
        key = ("host-untraced-native" if v.platform.endswith("+native") else
               "host-untraced-gaps" if v.untraced_in_gaps else "host-untraced")
        return VERDICT_STAGES[key], v.untraced_pct
    return None, share


def _job_head(v: Verdict, stage: str, share: str, window: str, busy: str) -> str:
    """The job's verdict set by one rank: the job's step first; the shares are of that rank's own
    window, said apart where it is not the job's step (the waited-for rank's is shorter)."""
    by = (f"set by rank {v.ranks[0]}, the rank the others wait for at the collectives" if v.set_by == "waited-for"
          else f"set by its slowest rank ({v.ranks[0]})")
    if round(v.window_ns / 1e5) == round(v.step_ns / 1e5):  # its own window is the job's step: said once
        return f"job: bound by {stage} ({share} of the {v.step_ns / 1e6:.1f} ms {window}{busy}), {by}"
    return (f"job: bound by {stage} (the {v.step_ns / 1e6:.1f} ms {window}), {by} ({share} of its own "
            f"{v.window_ns / 1e6:.1f} ms {window}{busy})")


def unprofiled_text(v: Verdict) -> str:
    """Said after a verdict whose step, replayed without the profiler's own host cost, has another bound
    or is much shorter (``stepscope whatif --unprofiled`` shows that replay)."""
    if v.unprofiled_bound is None or v.unprofiled_step_ns is None:
        return ""
    device = device_noun(v.platform)
    stage = _stage(v.unprofiled_bound, device, v.host_timeline, v.has_device)
    cost_us = (v.event_cost_ns or 0) / 1e3
    measured = v.measured_unprofiled_step_ns
    source = "" if measured is None else (
        f", this machine's: the {measured / 1e6:.1f} ms step you timed without the profiler (--step-ms)"
        if v.cost_source == "given" else
        f", this machine's: the {v.measured_unprofiled_steps} steps `stepscope run` timed without the profiler "
        f"took {measured / 1e6:.1f} ms at the median")
    low = "" if v.low_cost_step_ns is None else (
        f" (~{v.low_cost_step_ns / 1e6:.1f} ms if it costs half that an op, as on some captures)")
    head = (f"Without the profiler's own cost ({cost_us:.3g} µs for each of the {v.host_events_per_step or 0:,.0f} "
            f"ops it recorded a step{source}) the step would be ~{v.unprofiled_step_ns / 1e6:.1f} ms{low}")
    if v.unprofiled_bound == v.bound:
        return (f"{head}, still bound by {stage} ({v.unprofiled_share_pct or 0:.0f}%); the replayed gains below "
                f"are from it, and the findings' shares are of it")
    act = ("the findings are ranked for it" if measured is not None
           else "time the step without the profiler (and give it: --step-ms) before acting on host findings")
    return f"{head} and bound by {stage} ({v.unprofiled_share_pct or 0:.0f}%): {act}; the findings' shares are of it"
