"""Kernel launch overhead of one rank (HTA's CUDA kernel launch statistics and queue length).

Per kernel with a known launch call (runtime row linked by correlation id):

* ``cpu_launch_ns`` = duration of the launch call on the host (``cudaLaunchKernel`` ...);
* ``launch_delay_ns`` = kernel start − launch call end (time queued on the device);
* ``kernel_ns`` = kernel duration.

A *short* kernel runs for less time than its launch call took: the host cannot keep such kernels
flowing, the GPU starves (a sign for CUDA Graphs / fusion). A CUDA / HIP graph launch is one call
for all the kernels of the graph (``events.graph_node``): its call time is shared among them in
proportion to their run times, so they are short together exactly when the graph's kernels together
ran for less time than its launch call — a graph replay is one launch, never many short kernels.

*Queue length* of a stream at time t = GPU activities launched (launch call started) on it and not
yet finished; one step function per stream, with its maximum and its time-weighted mean inside the profiled steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import F64, I32, I64, pct, rank_rows, step_windows, tracks_by_stream, window_of
from stepscope.model.schema import GPU_KINDS, EventKind
from stepscope.model.trace import Trace
from stepscope.model.uniq import unique


@dataclass(frozen=True)
class QueueLength:
    """Queue length step functions of every stream, concatenated: segment i of stream k is
    ``ts_ns[offsets[k] + i]`` with value ``length[offsets[k] + i]`` until the next point."""

    stream: I64  # stream id per stream
    offsets: I64  # len(stream) + 1
    ts_ns: I64
    length: I64
    max_length: I64  # per stream
    mean_length: F64  # per stream, time-weighted over the steps

    def series(self, i: int) -> tuple[I64, I64]:
        """(change points, queue length after each) of the i-th stream."""
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.ts_ns[a:b], self.length[a:b]


@dataclass(frozen=True)
class LaunchResult:
    """Launch statistics of one rank (arrays aligned with ``rows``: the kernels with a launch)."""

    rank: int
    rows: I64
    launch_rows: I64
    step: I32
    cpu_launch_ns: I64
    launch_delay_ns: I64
    kernel_ns: I64
    queue: QueueLength
    graph_launches: int = 0  # graph launch calls among launch_rows (their kernels share the call)
    graph_kernels: int = 0  # kernels replayed by them

    @property
    def short_kernel_count(self) -> int:
        return int((self.kernel_ns < self.cpu_launch_ns).sum())

    @property
    def short_kernel_pct(self) -> float:
        return pct(self.short_kernel_count, len(self.rows))

    def percentile_ns(self, field: str, q: float) -> float:
        arr = getattr(self, field)
        return float(np.percentile(arr, q)) if len(arr) else 0.0


def compute_launch(trace: Trace, rank: int) -> LaunchResult:
    """Launch duration, launch delay and kernel time per kernel; queue length per stream."""
    ev = trace.events
    gpu = rank_rows(trace, rank, tuple(int(k) for k in GPU_KINDS))
    gpu = gpu[ev["launch"][gpu] >= 0]
    if len(gpu) == 0:
        raise NotApplicable("no GPU activity linked to a launch call")
    k = gpu[ev["kind"][gpu] == EventKind.KERNEL]
    lr = ev["launch"][k].astype(np.int64)
    wins = step_windows(trace, rank)
    win = window_of(wins, ev["ts_ns"][lr])
    step = np.where(win >= 0, wins.step[np.maximum(win, 0)], -1).astype(np.int32)
    launch_end = ev["ts_ns"][lr] + ev["dur_ns"][lr]
    graph = ev["graph_node"][k] >= 0
    return LaunchResult(
        rank=rank, rows=k, launch_rows=lr, step=step, cpu_launch_ns=_shared_call_ns(trace, k, lr, graph),
        launch_delay_ns=ev["ts_ns"][k] - launch_end, kernel_ns=ev["dur_ns"][k],
        queue=queue_length(trace, gpu, wins.start_ns, wins.end_ns),
        graph_launches=len(unique(lr[graph])), graph_kernels=int(graph.sum()))


def blocking_launch_calls(trace: Trace, rank: int) -> I64:
    """The rank's launch calls that returned after a kernel they launched had ended (launch delay ≤
    −kernel duration: ``CUDA_LAUNCH_BLOCKING=1``), without the rest of :func:`compute_launch`."""
    ev = trace.events
    k = rank_rows(trace, rank, (int(EventKind.KERNEL),))
    lr = ev["launch"][k].astype(np.int64)
    k, lr = k[lr >= 0], lr[lr >= 0]
    ended = ev["ts_ns"][k] + ev["dur_ns"][k] <= ev["ts_ns"][lr] + ev["dur_ns"][lr]
    return unique(lr[ended])


def _shared_call_ns(trace: Trace, k: I64, lr: I64, graph: npt.NDArray[np.bool_]) -> I64:
    """Each kernel's launch call time; a graph launch's shared among its kernels by their run time
    (evenly when they all took 0 ns)."""
    ev = trace.events
    out: I64 = ev["dur_ns"][lr].astype(np.int64)
    if not graph.any():
        return out
    g = np.flatnonzero(graph)
    calls, inv = np.unique(lr[g], return_inverse=True)
    run = ev["dur_ns"][k[g]].astype(np.float64)
    total = np.bincount(inv, weights=run, minlength=len(calls))[inv]
    count = np.bincount(inv, minlength=len(calls))[inv]
    share = np.where(total > 0, run / np.maximum(total, 1.0), 1.0 / count)
    out[g] = np.rint(ev["dur_ns"][lr[g]] * share).astype(np.int64)
    return out


def queue_length(trace: Trace, gpu: I64, win_start: I64, win_end: I64) -> QueueLength:
    """Per stream, the number of launched-but-unfinished activities over time."""
    ev = trace.events
    track = ev["track"][gpu]
    ids = tracks_by_stream(trace, track)
    pts: list[I64] = []
    vals: list[I64] = []
    offsets, mx, mean = [0], [], []
    for t in ids.tolist():  # per stream
        rows = gpu[track == t]
        start = ev["ts_ns"][ev["launch"][rows]]
        end = ev["ts_ns"][rows] + ev["dur_ns"][rows]
        p, level = intervals.concurrency(start, np.maximum(end, start))
        v: I64 = np.rint(level).astype(np.int64)
        pts.append(p)
        vals.append(v)
        offsets.append(offsets[-1] + len(p))
        mx.append(int(v.max()) if len(v) else 0)
        mean.append(_time_weighted_mean(p, v, win_start, win_end))
    return QueueLength(stream=trace.tracks["stream"][ids].astype(np.int64), offsets=np.array(offsets, np.int64),
                       ts_ns=np.concatenate(pts).astype(np.int64) if pts else np.zeros(0, np.int64),
                       length=np.concatenate(vals) if vals else np.zeros(0, np.int64),
                       max_length=np.array(mx, np.int64), mean_length=np.array(mean, np.float64))


def _time_weighted_mean(p: I64, v: I64, win_start: I64, win_end: I64) -> float:
    """Mean of a step function (0 outside its points) over the union of the windows (or its own span
    where the windows are absent or all empty, e.g. steps whose negative duration was clamped to 0)."""
    if len(p) < 2:
        return 0.0
    seg = intervals.union(win_start, win_end)
    if len(seg[0]) == 0:
        seg = intervals.union(p[:1], p[-1:])
    if len(seg[0]) == 0:
        return 0.0
    lo, hi = seg[0][0], seg[1][-1]
    inside = intervals.covered_in_windows(seg, np.clip(p[:-1], lo, hi), np.clip(p[1:], lo, hi))
    total = intervals.total(seg)
    return float((inside * v[:-1]).sum()) / total if total > 0 else 0.0
