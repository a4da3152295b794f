"""CUDA / HIP graph replays of one rank: which kernels each graph launch ran, who launched it, and —
when a capture trace was merged (``ingest/capture.py``) — which op recorded each node at capture.

A graph launch (``cudaGraphLaunch``, ``hipGraphLaunch``, ``cuGraphLaunch``) is one runtime call for
all the kernels of the graph; each of them carries the launch's correlation id, so the model links
every one to the launch (``events.launch``) and numbers it within the launch (``events.graph_node``).
The replay trace alone does not say which op made a node: that op ran once, at capture. Without a
capture trace a graph kernel is attributed to its launch and to the host code around it (the
*launcher*: the innermost CPU op, else the innermost Python frame, else the innermost annotation
around the launch call), never to a model op.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import I32, I64, pct, rank_rows, step_windows, window_of
from stepscope.analysis.named import NamedRows, named_rows
from stepscope.model.derive import is_graph_launch
from stepscope.model.schema import GPU_KINDS, EventKind
from stepscope.model.trace import Trace
from stepscope.model.tree import nearest_marked_ancestor


@dataclass(frozen=True)
class GraphLaunches:
    """One row per graph launch call (in time order)."""

    row: I64  # the launch call's event row
    name_id: I64  # the call's name, an index into ``names``
    launcher_id: I64  # innermost CPU op / Python frame / annotation around the call (into ``names``, -1 none)
    names: tuple[str, ...]
    step: I32
    ts_ns: I64  # the launch call's start
    cpu_ns: I64  # the launch call's duration on the host
    nodes: I64  # GPU activities it ran
    gpu_ns: I64  # their summed duration
    span_ns: I64  # first node's start to last node's end
    first_delay_ns: I64  # first node's start − the launch call's end
    captured_nodes: I64  # nodes named by their capture-time op

    def name(self, i: int) -> str:
        return self.names[int(self.name_id[i])]

    def launcher(self, i: int) -> str:
        return self.names[int(self.launcher_id[i])] if self.launcher_id[i] >= 0 else ""


@dataclass(frozen=True)
class GraphResult:
    """Graph replays of one rank, and what of its device work they hold."""

    rank: int
    launches: GraphLaunches
    gpu_activities: int  # every GPU activity of the rank
    gpu_ns: int
    graph_activities: int  # the ones replayed by a graph launch
    graph_gpu_ns: int
    unattributed: int  # GPU activities with neither a launch call nor an op, launched while the host was traced
    before_trace: int  # GPU activities launched before the host's events begin (no call can name them)
    captured: NamedRows  # graph activities with a capture-time op, named by that op
    captured_calls: I64  # per name of ``captured.names``: op instances (one per capture-time call per replay)
    has_capture: bool  # a capture trace was merged (some node has its capture-time op)

    @property
    def graph_gpu_pct(self) -> float:
        return pct(self.graph_gpu_ns, self.gpu_ns)

    def captured_top(self, k: int) -> list[tuple[str, int, int, float]]:
        """The ``k`` capture-time ops with the most device time: (name, op calls, kernels, ns)."""
        index = {n: i for i, n in enumerate(self.captured.names)}
        return [(n, int(self.captured_calls[index[n]]), c, t) for n, c, t in self.captured.top(k)]

    @property
    def captured_pct(self) -> float:
        """Share of graph activities named by their capture-time op."""
        return pct(len(self.captured), self.graph_activities)


def _launcher(trace: Trace, rows: I64) -> I64:
    """The innermost CPU op around each call, else the innermost Python frame that is not a bound
    C function (``<built-in method …>``), else the innermost annotation."""
    ev, pool = trace.events, trace.strings
    kind = ev["kind"]
    found = nearest_marked_ancestor(ev["parent"], rows, kind == EventKind.CPU_OP)
    py = (kind == EventKind.PYTHON_FUNCTION) & ~pool.mask(lambda s: s.startswith("<built-in"))[ev["name"]]
    for marked in (py, kind == EventKind.USER_ANNOTATION):
        todo = found < 0
        found[todo] = nearest_marked_ancestor(ev["parent"], rows[todo], marked)
    return found


def _orphans(trace: Trace, rank: int, gpu: I64) -> tuple[int, int]:
    """GPU activities with neither a launch call nor an op, split by when they were launched: a
    correlation id below every runtime/driver call's of the rank was issued before the host's
    events begin (kernels queued in the profiler's warm-up, delivered with the active window),
    so no call in the trace can name them; the rest are unattributed."""
    ev = trace.events
    orphan = gpu[(ev["launch"][gpu] < 0) & (ev["op"][gpu] < 0)]
    calls = rank_rows(trace, rank, (int(EventKind.RUNTIME), int(EventKind.DRIVER)))
    corr = ev["corr"][calls]
    corr = corr[corr >= 0]
    if len(orphan) == 0 or len(corr) == 0:
        return len(orphan), 0
    early = (ev["corr"][orphan] >= 0) & (ev["corr"][orphan] < corr.min())
    return int((~early).sum()), int(early.sum())


def compute_graphs(trace: Trace, rank: int) -> GraphResult:
    """Every graph launch of the rank with its nodes, launcher and capture-time ops."""
    ev = trace.events
    gpu = rank_rows(trace, rank, tuple(int(k) for k in GPU_KINDS))
    g = gpu[ev["graph_node"][gpu] >= 0]
    calls = rank_rows(trace, rank, (int(EventKind.RUNTIME), int(EventKind.DRIVER)))
    calls = calls[trace.strings.mask(is_graph_launch)[ev["name"][calls]]]
    if len(calls) == 0:
        raise NotApplicable("no CUDA / HIP graph launch (cudaGraphLaunch, hipGraphLaunch) in this trace")
    calls = calls[np.argsort(ev["ts_ns"][calls], kind="stable")]
    lr = ev["launch"][g].astype(np.int64)
    at = np.searchsorted(np.sort(calls), lr)
    idx = np.argsort(calls, kind="stable")[at]  # each node's launch as a position in ``calls``
    n = len(calls)
    dur, ts = ev["dur_ns"][g], ev["ts_ns"][g]
    first = np.full(n, np.iinfo(np.int64).max, np.int64)
    last = np.full(n, np.iinfo(np.int64).min, np.int64)
    np.minimum.at(first, idx, ts)
    np.maximum.at(last, idx, ts + dur)
    nodes = np.bincount(idx, minlength=n).astype(np.int64)
    call_end = ev["ts_ns"][calls] + ev["dur_ns"][calls]
    has = nodes > 0
    cap = ev["capture_op"][g] >= 0
    who = _launcher(trace, calls)
    wins = step_windows(trace, rank)
    win = window_of(wins, ev["ts_ns"][calls])
    ids = np.concatenate([ev["name"][calls], ev["name"][who[who >= 0]]])
    uniq, inv = np.unique(ids, return_inverse=True)
    inv = inv.reshape(-1).astype(np.int64)
    launcher_id = np.full(n, -1, np.int64)
    launcher_id[who >= 0] = inv[n:]
    launches = GraphLaunches(
        row=calls, name_id=inv[:n], launcher_id=launcher_id,
        names=tuple(str(s) for s in trace.strings.decode(uniq)),
        step=np.where(win >= 0, wins.step[np.maximum(win, 0)], -1).astype(np.int32),
        ts_ns=ev["ts_ns"][calls], cpu_ns=ev["dur_ns"][calls], nodes=nodes,
        gpu_ns=np.bincount(idx, weights=dur, minlength=n).astype(np.int64),
        span_ns=np.where(has, last - first, 0), first_delay_ns=np.where(has, first - call_end, 0),
        captured_nodes=np.bincount(idx, weights=cap, minlength=n).astype(np.int64))
    unattributed, before_trace = _orphans(trace, rank, gpu)
    captured = _by_capture_op(trace, g[cap], dur[cap]) if cap.any() else named_rows(trace, g[:0])
    pairs = np.unique(np.stack([captured.name, lr[cap], ev["capture_seq"][g[cap]].astype(np.int64)]), axis=1)
    calls_per = np.bincount(pairs[0], minlength=len(captured.names)).astype(np.int64)
    return GraphResult(rank=rank, launches=launches, gpu_activities=len(gpu), gpu_ns=int(ev["dur_ns"][gpu].sum()),
                       graph_activities=len(g), graph_gpu_ns=int(dur.sum()), unattributed=unattributed,
                       before_trace=before_trace,
                       captured=captured, captured_calls=calls_per, has_capture=bool(cap.any()))


def _by_capture_op(trace: Trace, rows: I64, dur: I64) -> NamedRows:
    ids = trace.events["capture_op"][rows]
    uniq, inv = np.unique(ids, return_inverse=True)
    return NamedRows(rows, dur.astype(np.int64), inv.astype(np.int64).reshape(-1),
                     tuple(str(s) for s in trace.strings.decode(uniq)))
