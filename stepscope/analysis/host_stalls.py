"""The host thread stalled inside its ops: calls far slower than the same op on the same shapes.

An op run on the same input shapes does the same work; its own (self) time varies a little from call to
call. When the host thread that drives the step is kept off its core — another Python thread holding the
GIL (released every 5 ms by default, ``sys.getswitchinterval``), more busy threads than cores (intra-op
threads waiting at their barrier for one that is descheduled), other processes on the cores — the stall
lands inside whatever op the thread was in: an ``aten::expand`` (a metadata-only op, microseconds of work)
takes 8 ms, an ``aten::mm`` of 0.2 ms takes 4 ms. The profile records that time as the op's.

Per rank: the CPU ops of the driving host thread(s) inside the steps (a CPU-only rank's step-marker
threads; a device rank's :func:`~stepscope.analysis.sync.driver_rows`), ops inside the DataLoader or a
host-side collective aside (they wait for workers or other ranks by design), grouped by (name, input
dims, input types) — by name where shapes were not recorded. A call's **self** time (the op's own time,
its children's aside: a parent never counts its child's stall) against its group's median:

* a group is weighed from :data:`MIN_CALLS` calls (a median of fewer is no typical value); a
  metadata-only op (:data:`METADATA_OPS`: views, no data touched) in any group, its typical value at most
  :data:`METADATA_TYPICAL_NS`, since its work is microseconds whatever its shapes. Where the trace
  recorded no shapes (``record_shapes=False``) only those are weighed: one name covers calls of any size
  (Adam's ``aten::sqrt`` over a bias and over an embedding), so a name's median says nothing of one call;
* a call is *stalled* when its self time is at least :data:`STALL_TIMES` x the typical value and exceeds
  it by at least :data:`MIN_EXCESS_NS`: normal spread (a few x) and small noise never count;
* its *excess* is its self time beyond the typical value: time the thread lost, not work the op did.

On a CPU-only rank the driving thread is the step's path: the excess is what the step loses. On a
device rank a host stall costs the step only while the device has nothing to run: ``on_path_ns`` keeps
the share of the stalled calls' own time during which the rank's device was idle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis._groups import duration_stats, group_keys, largest_first
from stepscope.analysis._memo import per_rank
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.comm import host_collective_mask, inside_host_collective
from stepscope.analysis.common import (
    F64,
    I32,
    I64,
    Windows,
    ancestor_with,
    interval_set,
    rank_rows,
    step_windows,
    window_of,
)
from stepscope.analysis.gemm_dims import compact_json
from stepscope.analysis.host_comm import loop_threads
from stepscope.analysis.idle import is_dataloader_name
from stepscope.analysis.platform import has_device
from stepscope.analysis.sync import driver_rows
from stepscope.model.schema import GPU_KINDS, HOST_KINDS, EventKind
from stepscope.model.trace import Trace

#: calls of one (op, shapes) from which its median is its typical self time
MIN_CALLS = 4
#: a call is stalled from this multiple of its group's typical self time ...
STALL_TIMES = 10.0
#: ... and this much beyond it (ns): a scheduler's or the GIL's time slice is milliseconds
MIN_EXCESS_NS = 1_000_000
#: ops that only make a view (no data touched): microseconds of work on any shapes
METADATA_OPS = frozenset(f"aten::{n}" for n in (
    "expand", "expand_as", "view", "view_as", "_unsafe_view", "reshape", "_reshape_alias", "t", "transpose",
    "permute", "as_strided", "unsqueeze", "squeeze", "select", "slice", "narrow", "detach", "alias", "unbind",
    "split", "chunk", "diagonal", "movedim", "unflatten", "resolve_conj", "resolve_neg", "lift_fresh",
    "numpy_T", "split_with_sizes", "squeeze_", "unsqueeze_", "t_", "transpose_", "detach_"))
#: a metadata-only op's typical self time at most (ns), however few its calls
METADATA_TYPICAL_NS = 20_000
#: groups kept as evidence, most excess first
TOP_GROUPS = 10


@dataclass(frozen=True)
class StalledGroups:
    """The (op, input shapes) groups with stalled calls, most excess first."""

    name: tuple[str, ...]
    shapes: tuple[str, ...]  # the input dims, compacted ("" where not recorded)
    calls: I64  # calls of the group in the steps
    stalled: I64  # of them, stalled
    typical_ns: F64  # the group's typical self time (its median; a metadata op's at most METADATA_TYPICAL_NS)
    max_ns: I64  # its longest self time
    excess_ns: I64  # its stalled calls' excess, summed over the steps

    def __len__(self) -> int:
        return len(self.name)


@dataclass(frozen=True)
class HostStalls:
    """Per step window: the driving host thread's time lost inside its ops (stalled calls' excess)."""

    rank: int
    step: I32
    step_ns: I64
    excess_ns: I64  # the stalled calls' self time beyond their groups' typical one
    on_path_ns: I64  # of it, what the step loses (all of it on a CPU-only rank; device idle on a device rank)
    metadata_ns: I64  # of it, inside metadata-only ops (the clearest sign: no work to take that long)
    calls: int  # calls weighed (in groups of MIN_CALLS or more, and metadata ops)
    stalled_rows: I64  # the stalled calls (event rows, sorted)
    groups: StalledGroups
    has_device: bool
    shapes_recorded: bool  # grouped by input shapes (record_shapes=True), else by name only

    @property
    def stalled_calls(self) -> int:
        return len(self.stalled_rows)

    @property
    def on_path_pct(self) -> float:
        """The time lost on the path as % of the steps' time."""
        total = float(self.step_ns.sum())
        return 100.0 * float(self.on_path_ns.sum()) / total if total > 0 else 0.0

    def typical_on_path_ns(self) -> float:
        """The median over steps of the time lost on the path: a stall that recurs (a thread beside the loop,
        too many threads) is in most steps; one step's warm-up (a JIT's first runs) or evaluation is not."""
        return float(np.median(self.on_path_ns)) if len(self.on_path_ns) else 0.0

    @property
    def typical_pct(self) -> float:
        """:meth:`typical_on_path_ns` as % of the mean step."""
        mean = float(self.step_ns.mean()) if len(self.step_ns) else 0.0
        return 100.0 * self.typical_on_path_ns() / mean if mean > 0 else 0.0


@per_rank
def compute_host_stalls(trace: Trace, rank: int) -> HostStalls:
    """The driving host thread's stalled op calls in the steps (NotApplicable without host ops in steps)."""
    wins = step_windows(trace, rank)
    rows, win = _driving_ops(trace, rank, wins)
    if len(rows) == 0:
        raise NotApplicable("no host ops on the driving threads inside the steps")
    ev = trace.events
    shapes = bool((ev["input_dims"][rows] >= 0).any())
    launched = _launched(trace, rank, rows)
    (uniq_name, *_), inv = group_keys(ev["name"][rows], ev["input_dims"][rows], ev["input_types"][rows], launched)
    self_ns = ev["self_ns"][rows].astype(np.int64)
    stats = duration_stats(inv, self_ns, len(uniq_name))
    metadata = trace.strings.mask(lambda s: s in METADATA_OPS)[ev["name"][rows]]
    typical = np.where(metadata, np.minimum(stats.median_ns[inv], METADATA_TYPICAL_NS), stats.median_ns[inv])
    weighed = ((stats.calls[inv] >= MIN_CALLS) & shapes) | metadata
    excess = self_ns - typical
    stalled = weighed & (self_ns >= STALL_TIMES * typical) & (excess >= MIN_EXCESS_NS)
    n = len(wins)
    lost = np.where(stalled, excess, 0.0)
    excess_ns = np.rint(np.bincount(win, weights=lost, minlength=n)).astype(np.int64)
    meta_ns = np.rint(np.bincount(win, weights=np.where(metadata, lost, 0.0), minlength=n)).astype(np.int64)
    device = has_device(trace, rank)
    on_path = excess_ns if not device else np.rint(
        excess_ns * _device_idle_share(trace, rank, rows[stalled], wins)).astype(np.int64)
    groups = _groups(trace, np.stack([ev["name"][rows], ev["input_dims"][rows]]), inv, stats.calls, stalled, typical,
                     self_ns, lost)
    return HostStalls(rank, wins.step, wins.dur_ns, excess_ns, on_path, meta_ns, int(weighed.sum()),
                      np.sort(rows[stalled]), groups, device, shapes)


def _driving_ops(trace: Trace, rank: int, wins: Windows) -> tuple[I64, I64]:
    """The CPU ops of the threads that drive the step, inside its windows (and each one's window), those
    inside the DataLoader or a host-side collective aside. A CPU-only rank's step markers name its thread;
    a device rank's driving threads launch its work or wait for it."""
    ev = trace.events
    host = rank_rows(trace, rank, tuple(int(k) for k in HOST_KINDS))
    threads = loop_threads(trace, rank)
    driver = host[np.isin(ev["track"][host], threads)] if len(threads) and not has_device(trace, rank) \
        else driver_rows(trace, rank)
    ops = driver[ev["kind"][driver] == EventKind.CPU_OP]
    win = window_of(wins, ev["ts_ns"][ops])
    ops, win = ops[win >= 0], win[win >= 0]
    loader = ancestor_with(trace, ops, trace.strings.mask(is_dataloader_name)) >= 0
    keep = ~loader & ~host_collective_mask(trace)[ops] & ~inside_host_collective(trace, ops)
    return ops[keep], win[keep]


def _launched(trace: Trace, rank: int, rows: I64) -> I64:
    """Per op row: the device activities it launched itself (its own launch calls'): a call that launches
    other work than its group's (cuDNN's algorithm search: its trial kernels) does other work."""
    op = trace.events["op"][rank_rows(trace, rank, tuple(int(k) for k in GPU_KINDS))].astype(np.int64)
    op = np.sort(op[op >= 0])
    out: I64 = (np.searchsorted(op, rows, side="right") - np.searchsorted(op, rows, side="left")).astype(np.int64)
    return out


def _device_idle_share(trace: Trace, rank: int, stalled: I64, wins: Windows) -> F64:
    """Per window: the share of the stalled calls' own time (their children's aside) during which the
    rank's device ran nothing (1 where they hold no time)."""
    ev = trace.events
    host = rank_rows(trace, rank, tuple(int(k) for k in HOST_KINDS))
    children = host[np.isin(ev["parent"][host], stalled)]
    own = intervals.subtract(interval_set(trace, stalled), interval_set(trace, children))
    idle = intervals.subtract(own, interval_set(trace, rank_rows(trace, rank, tuple(int(k) for k in GPU_KINDS))))
    total = intervals.covered_in_windows(own, wins.start_ns, wins.end_ns).astype(np.float64)
    out: F64 = np.divide(intervals.covered_in_windows(idle, wins.start_ns, wins.end_ns), total,
                         out=np.ones(len(wins)), where=total > 0)
    return out


def _groups(trace: Trace, keys: I64, inv: I64, calls: I64, stalled: npt.NDArray[np.bool_], typical: F64,
            self_ns: I64, lost: F64) -> StalledGroups:
    """The groups with stalled calls (per group, not per event), most excess first, the top ones; ``keys``
    holds each call's name and input dims ids."""
    ng = len(calls)
    excess = np.bincount(inv, weights=lost, minlength=ng)
    count = np.bincount(inv, weights=stalled, minlength=ng).astype(np.int64)
    longest = np.zeros(ng, np.int64)
    np.maximum.at(longest, inv, self_ns)
    first = np.full(ng, len(inv), np.int64)
    np.minimum.at(first, inv, np.arange(len(inv)))
    hit = np.flatnonzero(count > 0)
    pool = trace.strings
    names = [str(s) for s in pool.decode(keys[0][first[hit]])]  # per group
    order = hit[largest_first(excess[hit], names)][:TOP_GROUPS]
    name_ids, dims = keys[0][first[order]], keys[1][first[order]]
    shapes = tuple(compact_json(str(s)) if d >= 0 else "" for s, d in
                   zip(pool.decode(np.maximum(dims, 0)), dims.tolist()))  # per group kept
    typ = np.zeros(ng)
    typ[inv] = typical
    return StalledGroups(tuple(str(s) for s in pool.decode(name_ids)), shapes, calls[order], count[order],
                         typ[order], longest[order], np.rint(excess[order]).astype(np.int64))
