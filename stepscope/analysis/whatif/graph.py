"""The dependency graph of a rank's steps, built once from the model, for the what-if replay.

Three kinds of node, all from the trace alone:

* **Host points**: every instant at which something the device or the step depends on starts or
  ends on the threads that drive the device — runtime and driver calls, DataLoader calls,
  host-side collectives (gloo on the CPU), the ``ProfilerStep`` markers. The host is one chain
  through them (the threads of a PyTorch step hand
  work to one another; they do not launch concurrently): each *segment* between two points keeps
  its measured length unless a transformation changes it, and is labelled with what the host does
  in it (:data:`SEG_KINDS`).
* **Synchronisations**: a blocking call (``cudaStreamSynchronize``, ``.item()``'s copy, a synchronous
  ``cudaMemcpy`` …) returns after the device work it waited for. It waited for the latest device
  activity that had been launched when it was called and ended before it returned; it returns
  ``tail_ns`` after that activity, or after its own call when it waited for nothing.
  A launch call that waited for a free slot of a full launch queue is one too (:mod:`.queue_full`):
  it returned right after an activity's end, and returns so when the device's work changes.
* **Device activities**, per stream in order: one starts when both its launch has reached the
  device (the call's start + a latency) and the activity before it on its stream has ended (+ the
  measured gap). When the host had queued it before its predecessor ended, the stream bound it: the
  gap is measured and the latency is the rank's typical launch latency (the median over activities
  that found their stream idle). Otherwise its launch bound it: the latency is measured.

Measured values fill every edge, so re-timing the unchanged graph gives back the measured times
exactly (the identity replay); a transformation changes durations and the replay moves what
depends on them, and only that (:mod:`.replay`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis._memo import per_rank
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.breakdown import launched_in_steps, tb_step_windows
from stepscope.analysis.comm import host_collective_mask
from stepscope.analysis.common import I64, interval_set, rank_rows
from stepscope.analysis.host_comm import collectives_on_path
from stepscope.analysis.host_traced import LAUNCH_CALL
from stepscope.analysis.idle import is_dataloader_name
from stepscope.analysis.platform import no_host_timeline
from stepscope.analysis.sync import blocking_calls, driver_rows
from stepscope.analysis.whatif.host_colls import HostCollectives, host_collectives
from stepscope.analysis.whatif.queue_full import MIN_PENDING, long_launch_calls, pending_at, waited_for_the_queue
from stepscope.model.masks import any_of
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace
from stepscope.model.uniq import unique

#: What the host does in a segment, by precedence: blocked in a sync call, inside the DataLoader,
#: inside a host-side collective (gloo on the CPU), inside a launch call, anything else (ops,
#: Python, untraced time).
SEG_KINDS = ("sync", "input", "launch", "host", "comm")
#: an activity that starts at most this long after the previous one on its stream ended, launched
#: before that end, was queued behind it
QUEUED_GAP_NS = 50_000
SEG_SYNC, SEG_INPUT, SEG_LAUNCH, SEG_HOST, SEG_COMM = range(5)
_NONE = np.iinfo(np.int64).min // 4  # "no constraint" that survives additions


def gather(values: I64, idx: I64, fill: int) -> I64:
    """``values[idx]`` where ``idx >= 0``, ``fill`` elsewhere; an empty ``values`` gives ``fill``
    throughout (``np.where`` evaluates both sides, and ``values[0]`` of an empty array raises)."""
    if len(values) == 0:
        return np.full(len(idx), fill, np.int64)
    return np.where(idx >= 0, values[np.maximum(idx, 0)], fill)


@dataclass(frozen=True)
class HostChain:
    """The host points (sorted, distinct) and the segments between them (``len(t_ns) - 1``)."""

    t_ns: I64
    seg_kind: npt.NDArray[np.int8]
    seg_input_call: I64  # per segment: index of the DataLoader call it lies in, -1 outside


@dataclass(frozen=True)
class Syncs:
    """Blocking calls in time order, none inside another: their points, what they waited for."""

    row: I64  # event row of the call
    start_pt: I64
    end_pt: I64
    awaited: I64  # index into the device activities, -1: it waited for nothing
    tail_ns: I64  # from the awaited activity's end (or the call's start) to the call's return
    droppable: npt.NDArray[np.bool_]  # False: a launch call that waited for a full queue (no change drops it)


@dataclass(frozen=True)
class DeviceWork:
    """Device activities sorted by (stream, start): the rules that time each one."""

    row: I64
    stream: I64  # 0 .. streams-1
    dur_ns: I64
    launch_pt: I64  # host point of its launch call's start, -1: not launched from a traced call
    latency_ns: I64  # launch start → earliest start
    gap_ns: I64  # predecessor's end → earliest start
    start_ns: I64  # measured (used where nothing else anchors it)
    stream_first: I64  # index of each stream's first activity (``len(streams)+1`` bounds)
    wait_on: I64  # the activity on another stream it waited for (an event wait), -1 none
    wait_gap_ns: I64  # that activity's end → its start

    @property
    def end_ns(self) -> I64:
        return self.start_ns + self.dur_ns


@dataclass(frozen=True)
class StepNodes:
    """The step windows' anchors: host points of each kept step's marker, its device activities."""

    step: npt.NDArray[np.int32]
    host_start_pt: I64
    host_end_pt: I64
    work_step: I64  # per device activity: index of the step whose window stretches over it, -1 none
    outside_end_ns: I64  # ends of device work launched outside every step (the first step starts after)
    measured_start_ns: I64
    measured_end_ns: I64
    whole_trace: bool


@dataclass(frozen=True)
class StepGraph:
    rank: int
    host: HostChain
    syncs: Syncs
    device: DeviceWork
    steps: StepNodes
    host_colls: HostCollectives


@per_rank
def step_graph(trace: Trace, rank: int) -> StepGraph:
    """The what-if dependency graph of one rank (see the module docstring)."""
    missing = no_host_timeline(trace, rank)
    if missing:
        raise NotApplicable(f"the what-if replay needs the host chain: {missing}")
    ev = trace.events
    driver = driver_rows(trace, rank)
    rt = driver[any_of(ev["kind"][driver], [EventKind.RUNTIME, EventKind.DRIVER])]
    pool = trace.strings
    sync_rows = rt[blocking_calls(trace, rt)]
    launch_rows = rt[pool.mask(lambda s: any(m in s for m in LAUNCH_CALL))[ev["name"][rt]]]
    loader = driver[pool.mask(is_dataloader_name)[ev["name"][driver]]]
    comm = collectives_on_path(trace, rank, driver)  # a CPU rank's worker-thread collectives: beside no op
    wins = tb_step_windows(trace, rank)
    whole = not (len(wins.step) and int(wins.step[0]) >= 0)
    hs = wins.host_start_ns if not whole else np.zeros(0, np.int64)
    he = wins.host_end_ns if not whole else np.zeros(0, np.int64)
    gpu, pc, inside = launched_in_steps(trace, rank, hs, he)
    if whole:  # the one window's host ends, as the step breakdown draws it (its device ends are the activities')
        hs, he = _whole_window_host_ends(trace, rank, int(wins.start_ns[0]) if len(wins.start_ns) else 0)
    colls = driver[host_collective_mask(trace)[driver]]  # their own ends too: the job replay ties them
    t = _points(trace, np.concatenate([rt, colls]), loader, np.concatenate([hs, comm[0]]),
                np.concatenate([he, comm[1]]))
    device, order = _device_work(trace, gpu, t)
    queued = _queue_full(trace, launch_rows, device)  # launch calls that waited for a free queue slot
    sync_rows = np.union1d(sync_rows, queued)
    host = _host_chain(trace, t, sync_rows, loader, launch_rows, comm)
    syncs = _syncs(trace, sync_rows, t, device, queued)
    work_step = np.where(inside, pc, -1)[order]
    g_end = ev["ts_ns"][gpu] + ev["dur_ns"][gpu]
    steps = StepNodes(wins.step, np.searchsorted(t, hs), np.searchsorted(t, he), work_step,
                      g_end[~inside], wins.start_ns, wins.end_ns, whole)
    tied = host_collectives(trace, rank, driver, t, host.seg_kind == SEG_COMM)
    return StepGraph(rank, host, syncs, device, steps, tied)


def unlinked_device(g: StepGraph) -> bool:
    """The rank has device work and none of it is linked to a traced launch call (Ascend's
    trace_view layout): the replay keeps the device's measured times."""
    return bool(len(g.device.row)) and not bool((g.device.launch_pt >= 0).any())


def require_linked(g: StepGraph) -> None:
    """NotApplicable for a rank whose device work is linked to no launch (:func:`unlinked_device`): the
    device keeps its measured times there, so a host-side change would only shorten the host's span."""
    if unlinked_device(g):
        raise NotApplicable("no device work is linked to a launch call: the replay cannot move it")


def _whole_window_host_ends(trace: Trace, rank: int, window_start_ns: int) -> tuple[I64, I64]:
    """A rank without step markers: the first host op's start (unless the window starts later, at a
    device activity queued behind work before the trace) and the last host op's end — with the
    device activities, what bounds the window (:func:`~stepscope.analysis.breakdown.tb_step_windows`)."""
    ev = trace.events
    host = rank_rows(trace, rank, (int(EventKind.CPU_OP), int(EventKind.USER_ANNOTATION)))
    if len(host) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    lo, hi = int(ev["ts_ns"][host].min()), int((ev["ts_ns"][host] + ev["dur_ns"][host]).max())
    return np.array([lo] if window_start_ns <= lo else [], np.int64), np.array([hi], np.int64)


def _points(trace: Trace, rt: I64, loader: I64, hs: I64, he: I64) -> I64:
    ev = trace.events
    rows = np.concatenate([rt, loader])
    ts, end = ev["ts_ns"][rows], ev["ts_ns"][rows] + ev["dur_ns"][rows]
    return unique(np.concatenate([ts, end, hs, he]))


def _host_chain(trace: Trace, t: I64, sync_rows: I64, loader: I64, launch_rows: I64,
                comm: intervals.Intervals) -> HostChain:
    """Label each segment between consecutive points by :data:`SEG_KINDS` precedence."""
    n = max(len(t) - 1, 0)
    mid = t[:-1] + (t[1:] - t[:-1]) // 2 if n else np.zeros(0, np.int64)
    kind = np.full(n, SEG_HOST, np.int8)
    for k, iv in ((SEG_LAUNCH, interval_set(trace, launch_rows)), (SEG_COMM, comm),
                  (SEG_INPUT, interval_set(trace, loader)), (SEG_SYNC, interval_set(trace, sync_rows))):
        kind[_inside(iv, mid)] = k  # later kinds take precedence
    calls = interval_set(trace, loader)
    call = np.searchsorted(calls[0], mid, side="right") - 1
    in_call = (call >= 0) & (kind == SEG_INPUT)
    return HostChain(t, kind, np.where(in_call, call, -1).astype(np.int64))


def _inside(iv: intervals.Intervals, t: I64) -> npt.NDArray[np.bool_]:
    """Per instant (sorted): whether it lies inside the set."""
    if len(iv[0]) == 0:
        return np.zeros(len(t), bool)
    k = intervals.sorted_searchsorted(iv[0], t, "right") - 1
    return (k >= 0) & (t < iv[1][np.maximum(k, 0)])


def _device_work(trace: Trace, gpu: I64, t: I64) -> tuple[DeviceWork, I64]:
    """Device rows in (stream, start) order with the latency and gap that reproduce their starts."""
    ev = trace.events
    order = np.lexsort((ev["ts_ns"][gpu], ev["track"][gpu]))
    rows = gpu[order]
    track = ev["track"][rows]
    first = np.flatnonzero(np.concatenate([[True], track[1:] != track[:-1]])) if len(rows) else np.zeros(0, np.int64)
    starts_stream = np.zeros(len(rows), bool)
    starts_stream[first] = True
    stream = np.cumsum(starts_stream) - 1
    s, d = ev["ts_ns"][rows], ev["dur_ns"][rows]
    prev_end = np.full(len(rows), _NONE, np.int64)
    prev_end[1:] = (s + d)[:-1]
    prev_end[first] = _NONE
    launch = ev["launch"][rows].astype(np.int64)
    has = launch >= 0
    call_ts = ev["ts_ns"][np.maximum(launch, 0)]
    call_end = call_ts + ev["dur_ns"][np.maximum(launch, 0)]
    # queued behind the previous activity: launched before it ended and started as it ended (a copy
    # from pageable memory is launched by a call that blocks until after the copy: its start, right
    # at the previous end, says it waited for the stream, not for its launch)
    behind = (call_ts < prev_end) & (s - prev_end <= QUEUED_GAP_NS)
    # launched before the trace began (the device ran behind the host): queued as far as anyone knows,
    # so its measured gap is kept
    queued = (prev_end > _NONE) & (~has | (call_end < prev_end) | behind)
    latency = np.where(has, s - call_ts, 0)
    gap = np.where(prev_end > _NONE, s - prev_end, 0)
    gap = np.where(queued, np.maximum(gap, 0), np.minimum(gap, 0))
    launch_pt = np.where(has, np.searchsorted(t, call_ts), -1)
    bounds = np.append(first, len(rows)).astype(np.int64)
    typical = _typical_latency_of(latency[has & ~queued])
    # started later than its launch and its stream explain: it may have waited for another stream
    late = has & np.where(queued, gap > QUEUED_GAP_NS, latency > typical)
    floor = np.maximum(call_ts + typical, np.where(queued, prev_end, _NONE))
    wait_on = _stream_waits(s, d, stream, np.where(has, call_ts, np.iinfo(np.int64).max), late, floor)
    lat = np.where(queued | (wait_on >= 0), np.minimum(latency, typical), latency)
    gap = np.where(queued & (wait_on >= 0), 0, gap)
    wait_gap = np.where(wait_on >= 0, s - gather(s + d, wait_on, 0), 0)
    return DeviceWork(rows, stream.astype(np.int64), d.copy(), launch_pt, lat, gap, s.copy(), bounds,
                      wait_on, wait_gap), order


def _stream_waits(s: I64, d: I64, stream: I64, call_ts: I64, todo_mask: npt.NDArray[np.bool_], floor: I64) -> I64:
    """Per activity that started later than its launch and its stream explain (``todo_mask``): the
    activity on another stream, launched before it, that ended at most :data:`QUEUED_GAP_NS` before
    it started and after ``floor`` (its launch reached the device, its stream was free) — what it
    waited for (``cudaStreamWaitEvent``: a kernel consuming another stream's result, a collective
    waiting for the gradients). -1 none."""
    end = s + d
    by_end = np.argsort(end, kind="stable")
    end_sorted = end[by_end]
    out = np.full(len(s), -1, np.int64)
    todo = np.flatnonzero(todo_mask)
    pos = np.searchsorted(end_sorted, s[todo], side="right") - 1
    for _ in range(16):  # step back over the same stream's or later-launched activities
        keep = pos >= 0
        todo, pos = todo[keep], pos[keep]
        if len(todo) == 0:
            break
        cand = by_end[pos]
        e = end[cand]
        near = (e >= s[todo] - QUEUED_GAP_NS) & (e > floor[todo])
        ok = near & (stream[cand] != stream[todo]) & (call_ts[cand] < call_ts[todo])
        out[todo[ok]] = cand[ok]
        more = near & ~ok
        todo, pos = todo[more], pos[more] - 1
    return out


def _typical_latency_of(latency: I64) -> int:
    return int(np.median(latency)) if len(latency) else 0


def _syncs(trace: Trace, sync_rows: I64, t: I64, device: DeviceWork, queued: I64) -> Syncs:
    """Blocking calls in time order (one inside another dropped), each with the activity it waited for;
    the launch calls that waited for the queue (``queued``) are not the program's syncs: none drops them."""
    ev = trace.events
    rows = sync_rows[np.argsort(ev["ts_ns"][sync_rows], kind="stable")]
    a, b = ev["ts_ns"][rows], ev["ts_ns"][rows] + ev["dur_ns"][rows]
    keep = a >= np.concatenate([[np.iinfo(np.int64).min], np.maximum.accumulate(b)[:-1]])
    rows, a, b = rows[keep], a[keep], b[keep]
    awaited, tail = _waits(trace, device, a, b)
    return Syncs(rows, np.searchsorted(t, a), np.searchsorted(t, b), awaited, tail, ~np.isin(rows, queued))


def _waits(trace: Trace, device: DeviceWork, a: I64, b: I64) -> tuple[I64, I64]:
    """Per call [a, b]: the activity it waited for (:func:`_awaited`) and the time from that activity's
    end (or the call's start) to its return."""
    awaited = _awaited(trace, device, a, b)
    e = np.where(awaited >= 0, gather(device.end_ns, awaited, 0), a)
    return awaited, b - np.maximum(a, e)


def _queue_full(trace: Trace, launch_rows: I64, device: DeviceWork) -> I64:
    """The launch calls that waited for the device (:mod:`.queue_full`): long, and returning right after
    the end of an activity launched before them."""
    long = long_launch_calls(trace, launch_rows)
    if len(long) == 0 or len(device.row) == 0:
        return long[:0]
    ev = trace.events
    a = ev["ts_ns"][long]
    awaited, tail = _waits(trace, device, a, a + ev["dur_ns"][long])
    full = pending_at(_launched_at(trace, device), device.end_ns, a) >= MIN_PENDING
    out: I64 = long[waited_for_the_queue(awaited, tail) & full]
    return out


def _launched_at(trace: Trace, device: DeviceWork) -> I64:
    """Per device activity: when its launch call began (its own start where no traced call launched it)."""
    ev = trace.events
    launch = ev["launch"][device.row].astype(np.int64)
    out: I64 = np.where(launch >= 0, ev["ts_ns"][np.maximum(launch, 0)], device.start_ns)
    return out


def _awaited(trace: Trace, device: DeviceWork, a: I64, b: I64) -> I64:
    """Per call [a, b]: the latest-ending activity launched at or before a that ended by b (the call
    waits for the device work launched before it; work that ended after it returned was not waited
    for). When the host is made faster, a call that found that work done may have to wait for it.
    An activity no traced call launched (a layout without launch links: Ascend's trace_view) was
    launched by its start at the latest: one already running when the call began is waited for."""
    launched_at = _launched_at(trace, device)
    by_end = np.argsort(device.end_ns, kind="stable")
    end_sorted = device.end_ns[by_end]
    pos = np.searchsorted(end_sorted, b, side="right") - 1
    out = np.full(len(a), -1, np.int64)
    todo = np.flatnonzero(pos >= 0)
    for _ in range(64):  # step back over activities launched later; almost always the first fits
        if len(todo) == 0:
            break
        cand = by_end[pos[todo]]
        ok = launched_at[cand] <= a[todo]
        out[todo[ok]] = cand[ok]
        pos[todo] -= 1
        todo = todo[~ok & (pos[todo] >= 0)]
    return out
