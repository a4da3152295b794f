"""Where each step's wall time goes on its critical path: the one attribution behind the verdict.

A step ends when its last device work ends, and device work waits for two things: the work before
it on its stream and its launch by the host. So the step's critical path runs on the device while
the device has work queued, and on the host while the device waits for the host. Per activity on
a stream (in start order) this is decided from the trace alone:

* an activity whose successor on the stream was launched only after it ended left the stream dry:
  the path reaches that successor through its launch on the host, so the activity's time was
  hidden under host work (it has slack) — as were the activities queued behind one another up to
  it (a burst the host had queued, then caught up with);
* an activity that is the last device work of its step, or at whose end the host sat blocked
  (``cudaStreamSynchronize``, ``.item()``, a synchronous ``cudaMemcpy``), is **on the device path**,
  and so is every activity queued behind one another up to it.

Walking forward from an activity over successors that were already queued when it ended, the first
activity that is one of these two decides.

Every instant of a step is then charged, in this order, to the first that holds:

==============  ==========================================================================
compute         an on-path compute kernel runs
communication   an on-path communication kernel runs (:mod:`.activity` decides which)
copy            an on-path copy or memset runs
input           the host is inside the DataLoader
communication   the host is inside a host-side collective (gloo on CPU, c10d waits)
copy            the host is blocked in a synchronous copy call
compute         device work was launched and has not started yet: the device has a queue, so the
                host is ahead and the device is what everything waits for (busy with earlier work,
                or with work from before the window); communication when that work is communication,
                copy when it is a host-device copy — by what the device runs meanwhile, else by what
                waits, kernels and copies both waiting split as the window's device time is
host            anything else: host ops, launch calls, Python between ops, untraced host time
==============  ==========================================================================

The parts of a step sum exactly to the step (the TensorBoard plugin's step windows, the same
windows as the step breakdown; the whole trace as one window when it has no step markers). Host
time is split further into launch calls, other host ops and untraced time, for the advisor — and
``torch.compile`` compiling (:mod:`.compilation`), which claims its time first: the launches and ops
inside a compilation are the compiler's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis._memo import per_rank
from stepscope.analysis.activity import Activity, activity_of
from stepscope.analysis.breakdown import tb_step_windows
from stepscope.analysis.common import I32, I64, interval_set, pct, rank_rows
from stepscope.analysis.compilation import compile_rows
from stepscope.analysis.host_comm import collectives_on_path
from stepscope.analysis.host_traced import SHORT_GAP_NS, freed_outside_ops_bytes, in_short_gaps, launch_and_op_rows
from stepscope.analysis.idle import is_dataloader_name
from stepscope.analysis.sync import blocking_calls, driver_rows
from stepscope.model.masks import any_of
from stepscope.model.schema import GPU_KINDS, HOST_KINDS, EventKind, MemcpyKind
from stepscope.model.trace import Trace

#: The parts of a step, in the order of :attr:`CriticalPath.parts_ns` columns.
PARTS = ("compute", "communication", "copy", "input", "host")
#: What the host side waits on, in the order of :attr:`CriticalPath.waits_ns` columns: the DataLoader,
#: a host-side collective, a blocking copy call, anything else (host work, launches, Python).
WAITS = ("input", "communication", "copy", "host")
#: A device busy less than this share of the step is starved: when its own compute is the largest
#: part, what it waits for bounds the step (the first thing to fix), not the compute.
DEVICE_STARVED_BELOW_PCT = 200.0 / 3.0
#: The host part split: inside launch calls, inside other host ops, no traced host activity.
HOST_PARTS = ("launch", "host_ops", "untraced", "compile")
Iv = intervals.Intervals
B = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class CriticalPath:
    """Per step, the critical-path time of each part (``parts_ns[i, j]``: step i, ``PARTS[j]``).

    ``whole_trace`` is true when the trace has no step markers and the one window is the whole trace.
    ``host_parts_ns`` splits the ``host`` column by :data:`HOST_PARTS`.
    ``device_busy_ns`` is the time any device activity ran inside each window (on the path or not).
    ``waits_ns`` is the host side of the path by :data:`WAITS` (its columns are inside ``parts_ns``).
    """

    rank: int
    step: I32
    start_ns: I64
    end_ns: I64
    parts_ns: npt.NDArray[np.int64]
    host_parts_ns: npt.NDArray[np.int64]
    device_busy_ns: I64
    waits_ns: npt.NDArray[np.int64]
    whole_trace: bool
    has_device: bool
    on_path_rows: I64  # the device activities on the path (sorted event rows)
    untraced_longest_ns: I64  # per window, the longest stretch of the host's untraced part (one block of
    #                           loop code, against the many short gaps of a model's Python between ops)
    #: per window, host memory freed outside every traced op (bytes; zeros without memory events)
    untraced_freed_bytes: I64
    #: per window, the untraced time in stretches shorter than :data:`~.host_traced.SHORT_GAP_NS` (a model's
    #: Python between its ops, not loop code)
    untraced_short_ns: I64

    def on_path_share(self, trace: Trace, rows: I64) -> float | None:
        """The share (0-1) of these device activities' time inside the windows that is on the path:
        what a speed-up on them can take off the step, to first order (the rest is hidden under
        host work); None when none of them runs inside a window."""
        ev = trace.events
        ts = ev["ts_ns"][rows]
        win = np.searchsorted(self.start_ns, ts, side="right") - 1
        inside = (win >= 0) & (ts < self.end_ns[np.maximum(win, 0)])
        total = float(ev["dur_ns"][rows[inside]].sum())
        on = inside & np.isin(rows, self.on_path_rows)
        return float(ev["dur_ns"][rows[on]].sum()) / total if total > 0 else None

    @property
    def step_ns(self) -> I64:
        return self.end_ns - self.start_ns

    @property
    def step_count(self) -> int:
        return len(self.step)

    @property
    def avg_step_ns(self) -> float:
        return float(self.step_ns.mean()) if len(self.step) else 0.0

    def share_pct(self) -> dict[str, float]:
        """Share of all steps' time on the critical path of each part."""
        total = float(self.step_ns.sum())
        return {p: pct(float(self.parts_ns[:, j].sum()), total) for j, p in enumerate(PARTS)}

    def untraced_in_gaps(self) -> bool:
        """The host's untraced time over the windows lies in many short gaps, not one block a step."""
        return in_short_gaps(float(self.host_parts_ns[:, HOST_PARTS.index("untraced")].sum()),
                             float(self.untraced_short_ns.sum()))

    def host_share_pct(self) -> dict[str, float]:
        total = float(self.step_ns.sum())
        return {p: pct(float(self.host_parts_ns[:, j].sum()), total) for j, p in enumerate(HOST_PARTS)}

    def device_busy_pct(self) -> float:
        return pct(float(self.device_busy_ns.sum()), float(self.step_ns.sum()))

    def wait_share_pct(self) -> dict[str, float]:
        total = float(self.step_ns.sum())
        return {w: pct(float(self.waits_ns[:, j].sum()), total) for j, w in enumerate(WAITS)}

    @property
    def bound(self) -> str:
        """What bounds the step: the largest part of the critical path, except that a starved
        device's compute yields to the largest thing the device waited for (see the docs)."""
        shares = self.share_pct()
        top = max(PARTS, key=lambda p: shares[p])
        busy = self.device_busy_pct()
        if top != "compute" or busy >= DEVICE_STARVED_BELOW_PCT:
            return top
        waits = self.wait_share_pct()
        if sum(waits.values()) < (100.0 - busy) / 2:  # it idled for work the trace does not show, not the host
            return top
        return max(WAITS, key=lambda w: waits[w])


@per_rank
def compute_critical_path(trace: Trace, rank: int) -> CriticalPath:
    """The critical-path attribution of every step of a rank (see the module docstring)."""
    start, end, step, whole = _windows(trace, rank)
    claims, driver, dev, on_path_rows = _rank_claims(trace, rank)
    parts, host_parts, waits, stretches = _attribute(trace, claims, driver, start, end)
    busy = intervals.covered_in_windows(interval_set(trace, dev), start, end)
    return CriticalPath(rank, step, start, end, parts, host_parts, busy, waits, whole, len(dev) > 0, on_path_rows,
                        stretches[:, 0], freed_outside_ops_bytes(trace, rank, driver, start, end), stretches[:, 1])


def attribute_windows(trace: Trace, rank: int, start: I64, end: I64) -> npt.NDArray[np.int64]:
    """The critical-path parts (:data:`PARTS` columns) of arbitrary sorted, disjoint windows of a rank,
    with the claims of its steps (which device work is on the path is decided on the step windows)."""
    claims, driver, _, _ = _rank_claims(trace, rank)
    parts, _, _, _ = _attribute(trace, claims, driver, start, end)
    return parts


@per_rank
def _rank_claims(trace: Trace, rank: int) -> tuple[list[Iv], I64, I64, I64]:
    """The claim sets of a rank, in claim order (see :func:`_attribute`), its driver rows, device rows
    and the device rows on the path (sorted)."""
    start, end, _, _ = _windows(trace, rank)
    dev = rank_rows(trace, rank, tuple(int(k) for k in GPU_KINDS))
    driver = driver_rows(trace, rank)
    blocking = _blocking_set(trace, driver)
    on_path = _on_path(trace, dev, blocking, start, end)
    act = activity_of(trace)[dev]
    is_comm = act == Activity.COMMUNICATION
    is_copy = (act == Activity.MEMCPY) | (act == Activity.MEMSET)
    is_compute = act == Activity.COMPUTE
    host_copy = is_copy & any_of(trace.events["copy_kind"][dev], [int(MemcpyKind.H2D), int(MemcpyKind.D2H)])
    mix = _device_mix(trace, dev, is_comm, host_copy)
    claims: list[Iv] = [
        interval_set(trace, dev[on_path & is_compute]),
        interval_set(trace, dev[on_path & is_comm]),
        interval_set(trace, dev[on_path & is_copy]),
        *_host_claims(trace, rank, driver),
        *_queued_claims(trace, dev, is_comm, host_copy, mix),
        _pending(trace, dev[is_comm]),
        *mix,
    ]
    return claims, driver, dev, np.sort(dev[on_path]).astype(np.int64)


def _queued_claims(trace: Trace, dev: I64, is_comm: B, host_copy: B, mix: list[Iv]) -> list[Iv]:
    """Work queued, not started, in claim order: the device busy with what it runs then (off the
    path), else the kind of what waits (a host-device copy waits as a copy; one within the device is
    device work); kernels and copies both waiting (behind work the trace does not hold, before the
    window) last, split as the window's own device time is (:func:`_attribute`)."""
    kernels_wait = _pending(trace, dev[~is_comm & ~host_copy])
    if not host_copy.any():  # nothing but device work waits
        return [_EMPTY, _EMPTY, kernels_wait, _EMPTY, _EMPTY]
    copies_wait = _pending(trace, dev[host_copy])
    computing, copying = mix
    pending = intervals.union(np.concatenate([kernels_wait[0], copies_wait[0]]),
                              np.concatenate([kernels_wait[1], copies_wait[1]]))
    return [intervals.intersect(pending, computing), intervals.intersect(pending, copying),
            intervals.subtract(kernels_wait, copies_wait), intervals.subtract(copies_wait, kernels_wait), pending]


def _device_mix(trace: Trace, dev: I64, is_comm: B, host_copy: B) -> list[Iv]:
    """The device's work and host-device copies (not claims: what splits a wait both of them share)."""
    if not host_copy.any():
        return [_EMPTY, _EMPTY]
    return [interval_set(trace, dev[~is_comm & ~host_copy]), interval_set(trace, dev[host_copy])]


_EMPTY: Iv = (np.zeros(0, np.int64), np.zeros(0, np.int64))


def _attribute(trace: Trace, claims: list[Iv], driver: I64, start: I64,
               end: I64) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], I64]:
    """Parts, host parts, waits and the untraced stretches (:func:`_stretches`) per window from the claim sets."""
    c, free = _claim(claims[:-2], start, end)
    host_parts, longest = _split_host(trace, driver, free, start, end)
    host = host_parts.sum(axis=1)
    computing, copying = (intervals.covered_in_windows(iv, start, end).astype(np.float64) for iv in claims[-2:])
    both_copy = np.round(c[10] * copying / np.maximum(computing + copying, 1.0)).astype(np.int64)
    parts = np.stack([c[0] + c[6] + c[8] + c[10] - both_copy, c[1] + c[4] + c[11],
                      c[2] + c[5] + c[7] + c[9] + both_copy, c[3], host], axis=1).reshape(len(start), len(PARTS))
    waits = np.stack([c[3], c[4], c[5], host], axis=1).reshape(len(start), len(WAITS))
    return parts, host_parts, waits, longest


def _windows(trace: Trace, rank: int) -> tuple[I64, I64, I32, bool]:
    """The step windows: the breakdown's, so every view shows one length per step, and without
    step markers its one window over the whole trace; the rank's timed events' span when the
    breakdown has no window (no host op nor device activity)."""
    wins = tb_step_windows(trace, rank)
    if len(wins.step):
        return wins.start_ns, wins.end_ns, wins.step, int(wins.step[0]) < 0
    ev = trace.events
    rows = rank_rows(trace, rank)
    timed = rows[ev["kind"][rows] != EventKind.INSTANT]
    if len(timed) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int32), True
    lo = int(ev["ts_ns"][timed].min())
    hi = int((ev["ts_ns"][timed] + ev["dur_ns"][timed]).max())
    return np.array([lo], np.int64), np.array([max(hi, lo)], np.int64), np.array([-1], np.int32), True


def _blocking_set(trace: Trace, driver: I64) -> Iv:
    """When a driving thread is blocked waiting for the device (sync calls, synchronous copies)."""
    ev = trace.events
    rt = driver[any_of(ev["kind"][driver], [EventKind.RUNTIME, EventKind.DRIVER])]
    return interval_set(trace, rt[blocking_calls(trace, rt)])


def _on_path(trace: Trace, dev: I64, blocking: Iv, start: I64, end: I64) -> B:
    """Per device row: whether its time is on the critical path (see the module docstring)."""
    ev = trace.events
    if len(dev) == 0:
        return np.zeros(0, bool)
    ts, fin = ev["ts_ns"][dev], ev["ts_ns"][dev] + ev["dur_ns"][dev]
    order = np.lexsort((ts, ev["track"][dev]))
    nxt = np.full(len(dev), -1, np.int64)
    same = ev["track"][dev][order][1:] == ev["track"][dev][order][:-1]
    nxt[order[:-1][same]] = order[1:][same]
    launch = ev["launch"][dev]
    launched_at = np.where(launch >= 0, ev["ts_ns"][np.maximum(launch, 0)], np.iinfo(np.int64).min)
    win = np.searchsorted(start, ts, side="right") - 1
    has_next = nxt >= 0
    n = np.maximum(nxt, 0)
    next_same_window = has_next & (win[n] == win) & (ts[n] < end[np.maximum(win, 0)])
    queued = next_same_window & (launched_at[n] < fin)
    sink = ~next_same_window | _inside(blocking, fin)
    decided = sink | ~queued  # walking forward over queued successors, the first of these decides
    pos = np.empty(len(dev), np.int64)
    pos[order] = np.arange(len(dev))
    decider_pos = np.flatnonzero(decided[order])  # each stream's last row is a sink, so runs end in-stream
    first = order[decider_pos[np.searchsorted(decider_pos, pos)]]
    out: B = sink[first]
    return out


def _inside(iv: Iv, t: I64) -> B:
    """Per instant: whether it lies inside the normalised interval set (ends included)."""
    k = np.searchsorted(iv[0], t, side="left") - 1
    ok = k >= 0
    return ok & (t <= iv[1][np.maximum(k, 0)]) if len(iv[0]) else np.zeros(len(t), bool)


def _host_claims(trace: Trace, rank: int, driver: I64) -> tuple[Iv, Iv, Iv]:
    """Host-side sets, in claim order: DataLoader, host-side collectives, blocking copy calls."""
    ev, pool = trace.events, trace.strings
    host = rank_rows(trace, rank, tuple(int(k) for k in HOST_KINDS))
    loader = host[pool.mask(is_dataloader_name)[ev["name"][host]]]
    rt = driver[any_of(ev["kind"][driver], [EventKind.RUNTIME, EventKind.DRIVER])]
    copy = rt[blocking_calls(trace, rt) & pool.mask(lambda s: "emcpy" in s)[ev["name"][rt]]]
    return interval_set(trace, loader), collectives_on_path(trace, rank, driver), interval_set(trace, copy)


def _pending(trace: Trace, dev: I64) -> Iv:
    """When these device rows were launched (the launch call returned) and had not started yet."""
    ev = trace.events
    launch = ev["launch"][dev]
    ok = launch >= 0
    lr = launch[ok]
    returned = ev["ts_ns"][lr] + ev["dur_ns"][lr]
    return intervals.union(returned, ev["ts_ns"][dev[ok]])


def _claim(claims: list[Iv], start: I64, end: I64) -> tuple[list[I64], Iv]:
    """Time each set claims per window, in order, each only where no earlier set did; and what is left."""
    free = intervals.union(start, end)
    parts: list[I64] = []
    for iv in claims:
        got = intervals.intersect(free, iv)
        parts.append(intervals.covered_in_windows(got, start, end))
        free = intervals.subtract(free, got)
    return parts, free


def _split_host(trace: Trace, driver: I64, free: Iv, start: I64, end: I64) -> tuple[npt.NDArray[np.int64], I64]:
    """The unclaimed time per window split into launch calls, other host ops (a module's forward
    included) and untraced time: the loop's Python, which no op covers (a ``with_stack=True`` trace's
    Python frames outside every module aside)."""
    launch_rows, op_rows = launch_and_op_rows(trace, driver)  # host_traced: the move-loop-code what-if's too
    launch = interval_set(trace, launch_rows)
    ops = interval_set(trace, op_rows)
    # torch.compile compiling claims first: the launches and ops inside it are the compiler's
    comp = compile_rows(trace)  # none on most traces: no set operation with the driver rows then
    got_compile = intervals.intersect(free, interval_set(trace, np.intersect1d(comp, driver))) if len(comp) \
        else intervals.EMPTY
    free = intervals.subtract(free, got_compile)
    got_launch = intervals.intersect(free, launch)
    rest = intervals.subtract(free, got_launch)
    got_ops = intervals.intersect(rest, ops)
    untraced = intervals.subtract(rest, got_ops)
    cols = [intervals.covered_in_windows(iv, start, end) for iv in (got_launch, got_ops, untraced, got_compile)]
    return np.stack(cols, axis=1).reshape(len(start), len(HOST_PARTS)), _stretches(untraced, start, end)


def _stretches(iv: Iv, start: I64, end: I64) -> npt.NDArray[np.int64]:
    """Per window (rows): the longest of the intervals inside it (clipped to it) and the time in those shorter
    than :data:`SHORT_GAP_NS`; 0 where none."""
    out = np.zeros((len(start), 2), np.int64)
    lo, hi = iv
    win = np.searchsorted(start, lo, side="right") - 1
    ok = win >= 0
    if ok.any():
        w = win[ok]
        length = np.maximum(np.minimum(hi[ok], end[w]) - np.maximum(lo[ok], start[w]), 0)
        np.maximum.at(out[:, 0], w, length)
        np.add.at(out[:, 1], w, np.where(length < SHORT_GAP_NS, length, 0))
    return out
