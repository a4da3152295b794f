"""First summary of one rank: event counts by kind, steps, GPU busy time and span."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stepscope.analysis import intervals
from stepscope.model.masks import any_of
from stepscope.model.schema import GPU_KINDS, EventKind, TrackKind
from stepscope.model.trace import Trace


@dataclass(frozen=True)
class Summary:
    """Counts and GPU extent of one rank.

    ``gpu_busy_ns`` = |∪ kernel, memcpy, memset intervals|; ``gpu_span_ns`` = last GPU activity end −
    first GPU activity start; both over the GPU work launched inside the profiled steps when there are
    steps (SPEC §12, as TraceLens counts it), the whole trace otherwise.
    """

    rank: int
    event_counts: dict[str, int]
    step_count: int
    steps: list[int]
    gpu_busy_ns: int
    gpu_span_ns: int
    gpu_event_count: int
    memory_event_count: int
    counter_sample_count: int
    thread_count: int
    stream_count: int


def compute_summary(trace: Trace, rank: int) -> Summary:
    ev = trace.events
    mine = ev["rank"] == rank
    kinds = np.bincount(ev["kind"][mine].astype(np.int64), minlength=len(EventKind))
    counts = {k.name.lower(): int(kinds[int(k)]) for k in EventKind if kinds[int(k)]}
    steps = trace.steps["step"][trace.steps["rank"] == rank]
    gpu = mine & any_of(ev["kind"], [int(k) for k in GPU_KINDS])
    if len(steps):  # GPU work launched inside the profiled steps (work queued before them is not)
        launched = ev["launch"] >= 0
        gpu &= (ev["step"] >= 0) & (launched if (gpu & launched).any() else True)
    start, end = ev["ts_ns"][gpu], ev["ts_ns"][gpu] + ev["dur_ns"][gpu]
    busy = intervals.total(intervals.union(start, end))
    span = int(end.max() - start.min()) if len(start) else 0
    tr = trace.tracks["rank"] == rank
    return Summary(rank=rank, event_counts=counts, step_count=len(steps), steps=[int(s) for s in steps],
                   gpu_busy_ns=busy, gpu_span_ns=span, gpu_event_count=int(gpu.sum()),
                   memory_event_count=int((trace.memory["rank"] == rank).sum()),
                   counter_sample_count=int((trace.counters["rank"] == rank).sum()),
                   thread_count=int((tr & (trace.tracks["kind"] == TrackKind.CPU_THREAD)).sum()),
                   stream_count=int((tr & (trace.tracks["kind"] == TrackKind.GPU_STREAM)).sum()))
