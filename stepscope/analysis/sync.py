"""Host–device synchronisation inside steps (Nsight Systems' sync analysis, SPEC §5).

* **Blocking sync calls**: runtime / driver calls that block the host until the device catches up:
  ``cuda|hip`` ``DeviceSynchronize``, ``StreamSynchronize``, ``EventSynchronize``, ``cuCtxSynchronize``,
  Ascend's ``aclrtSynchronizeDevice|Stream|Event`` (``...WithTimeout``: ``.item()`` on an NPU) and ``aclrtMemcpy``,
  blocking copies (``cudaMemcpy``, ``cudaMemcpy2D``, ``hipMemcpy``, ``hipMemcpyWithStream``,
  ``cuMemcpyDtoH`` ... — every memcpy call without ``Async``), ``cudaFree`` / ``hipFree`` /
  ``cuMemFree`` (a free waits for the device: ``torch.cuda.empty_cache()`` in the loop makes one per
  cached block; :func:`blocking_calls` counts them, this analysis leaves them to the allocator's
  churn), and the ``Async`` calls that launched
  a copy from the device into pageable memory: ``.cpu()`` of a tensor waits inside its
  ``cudaMemcpyAsync`` for the data. Time = the call's host duration. (A copy *from* pageable memory
  to the device blocks too — :func:`blocking_calls`, the what-if graph's definition — but that wait
  is the ``pageable-memcpy`` finding's: pinning the source removes it; the host reads nothing.)
* **Device-to-host copies** (``Memcpy DtoH``): the copy that feeds ``.item()``, ``.cpu()``,
  ``.tolist()`` or printing; time = the copy's GPU duration.

Calls a host-side collective makes (gloo's own stream synchronisations around its CPU all-reduce)
are the collective's, not the step's. Only events inside profiled steps count (the whole trace when
it has no steps). A sync call is a
host call: it belongs to the step whose *host* span (ProfilerStep#N) holds its start, not to the
step's window stretched over its device work — the ``cudaDeviceSynchronize`` the profiler itself
issues when it stops, after the last step's host span ended (in a trace without steps, after the
last host op and launch), belongs to no step. A D2H copy is
device work and belongs to the window it ran in. Each one is traced back to its innermost op (e.g.
``aten::_local_scalar_dense`` for ``.item()``), its outermost op below the step, and its Python call
site when stacks were recorded (:mod:`.callsite`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis._memo import per_rank, per_trace
from stepscope.analysis.breakdown import tb_step_windows
from stepscope.analysis.caching_allocator import ALLOC_CALL
from stepscope.analysis.callsite import call_sites
from stepscope.analysis.comm import inside_host_collective
from stepscope.analysis.common import I32, I64, Windows, rank_rows, step_windows, window_of
from stepscope.analysis.compilation import inside_compilation
from stepscope.analysis.convolutions import inside_algo_search
from stepscope.model.masks import any_of
from stepscope.model.schema import GPU_KINDS, HOST_KINDS, EventKind, MemcpyKind
from stepscope.model.trace import Trace

SYNC_PATTERN = re.compile(
    r"^(cuda|hip)(Device|Stream|Event)Synchronize|^cu(Ctx|Stream|Event)Synchronize"
    r"|^(cuda|hip)Memcpy(?!.*Async)|^cuMemcpy(?!.*Async)"
    r"|^(cuda|hip)Free$|^cuMemFree(_v2)?$"
    r"|(^|@)aclrtSynchronize(Device|Stream|Event)(WithTimeout)?$|(^|@)aclrtMemcpy(2d)?$")  # Ascend CANN


def is_sync_call(name: str) -> bool:
    return bool(SYNC_PATTERN.search(name))


def blocking_calls(trace: Trace, rows: I64) -> npt.NDArray[np.bool_]:
    """Which of these host calls block the host until the device catches up: the sync calls of
    :data:`SYNC_PATTERN`, and every call that launched a copy from or to **pageable** host memory —
    an ``Async`` copy in name only: CUDA stages it through a pinned buffer, so the call first waits
    for the work queued before it on its stream (host → device) or for the copy itself (device →
    host). nw4's input copy waits 36 ms in ``cudaMemcpyAsync`` for the previous step's kernels."""
    out: npt.NDArray[np.bool_] = trace.strings.mask(is_sync_call)[trace.events["name"][rows]]
    launches = _pageable_copy_launches(trace)
    if len(launches):
        out |= np.isin(rows, launches)
    return out


@per_rank
def driver_rows(trace: Trace, rank: int) -> I64:
    """Host rows of the threads that drive the device — that launch its work, or that block waiting
    for it (a sync call outside a host-side collective) — every host thread if none do. On a GPU
    the main thread does both; torch_npu launches from a task-queue thread while the main thread
    runs the ops and blocks in ``aclrtSynchronizeStream``: one chain, the threads hand work to
    one another (the critical path and the what-if graph read the same rows)."""
    ev = trace.events
    host = rank_rows(trace, rank, tuple(int(k) for k in HOST_KINDS))
    launch = ev["launch"][rank_rows(trace, rank, tuple(int(k) for k in GPU_KINDS))]
    threads = np.unique(ev["track"][launch[launch >= 0]])
    if len(threads) == 0:
        return host
    rt = host[any_of(ev["kind"][host], [EventKind.RUNTIME, EventKind.DRIVER])]
    waits = rt[trace.strings.mask(is_sync_call)[ev["name"][rt]] & ~np.isin(ev["track"][rt], threads)]
    waits = waits[~inside_host_collective(trace, waits)]
    return host[np.isin(ev["track"][host], np.union1d(threads, ev["track"][waits]))]


def _is_alloc_call(name: str) -> bool:
    return ALLOC_CALL.match(name) is not None


def host_reads(trace: Trace, rows: I64) -> npt.NDArray[np.bool_]:
    """Which of these host calls wait for the device before the host goes on: the sync calls of
    :data:`SYNC_PATTERN` and the calls that launched a copy from the device into pageable memory."""
    names = trace.events["name"][rows]
    # a free waits for the device too, but it is the allocator's churn (allocator-fragmentation's), not a read
    out: npt.NDArray[np.bool_] = trace.strings.mask(is_sync_call)[names] & ~trace.strings.mask(_is_alloc_call)[names]
    launches = _pageable_reads_launches(trace)
    if len(launches):
        out |= np.isin(rows, launches)
    return out


@per_trace
def _pageable_copy_launches(trace: Trace) -> I64:
    """The calls that launched a copy from or to pageable memory (one scan of the events per trace)."""
    return _launches_of(trace, False)


@per_trace
def _pageable_reads_launches(trace: Trace) -> I64:
    """The calls that launched a copy from the device into pageable memory."""
    return _launches_of(trace, True)


def _launches_of(trace: Trace, to_host_only: bool) -> I64:
    ev = trace.events
    copies = (ev["kind"] == EventKind.MEMCPY) & (ev["pageable"] == 1) & (ev["launch"] >= 0)
    if to_host_only:
        copies &= ev["copy_kind"] == MemcpyKind.D2H
    return np.unique(ev["launch"][copies]).astype(np.int64)


@dataclass(frozen=True)
class SyncSites:
    """Sync calls and D2H copies grouped by (what, op, top op, call site), most time first."""

    what: list[str]  # sync call name, or the D2H memcpy name
    op: list[str]
    top_op: list[str]
    call_site: list[str]
    count: I64
    time_ns: I64
    example_row: I64  # one event row of the group


@dataclass(frozen=True)
class SyncResult:
    """Synchronisation of one rank. Per-step arrays align with ``step``."""

    rank: int
    step: I32
    step_ns: I64
    sync_count: I64
    sync_ns: I64
    d2h_count: I64
    d2h_ns: I64
    d2h_bytes: I64
    h2d_sync_ns: I64  # the sync calls' time in calls that copy to the device (a synchronous copy of a host tensor)
    sync_rows: I64  # evidence: every sync call inside steps
    d2h_rows: I64  # evidence: every D2H copy inside steps
    sites: SyncSites

    def avg_ns(self, field: str) -> float:
        arr = getattr(self, field)
        return float(np.mean(arr)) if len(arr) else 0.0


def not_the_steps(trace: Trace, rank: int, rows: I64) -> npt.NDArray[np.bool_]:
    """Per host row of the rank: a call a host-side collective, a compilation or cuDNN's algorithm
    search makes (gloo's stream syncs, autotuning's device syncs, the waits for each timed trial): the
    library's or the compiler's, not the user's step's."""
    out: npt.NDArray[np.bool_] = (inside_host_collective(trace, rows) | inside_compilation(trace, rows)
                                  | inside_algo_search(trace, rank, rows))
    return out


def compute_sync(trace: Trace, rank: int) -> SyncResult:
    """Blocking sync calls and D2H copies of a rank inside its steps, with who caused them."""
    ev = trace.events
    wins = step_windows(trace, rank)
    rt = rank_rows(trace, rank, (int(EventKind.RUNTIME), int(EventKind.DRIVER)))
    sync = rt[host_reads(trace, rt) & ~not_the_steps(trace, rank, rt)]
    sync, sync_win = _inside(trace, sync, _host_spans(trace, rank, wins))
    cp = rank_rows(trace, rank, (int(EventKind.MEMCPY),))
    d2h = cp[ev["copy_kind"][cp] == MemcpyKind.D2H]
    launch = ev["launch"][d2h].astype(np.int64)
    d2h = d2h[(launch < 0) | ~not_the_steps(trace, rank, np.maximum(launch, 0))]
    d2h, d2h_win = _inside(trace, d2h, wins)
    nw = len(wins)

    def per_step(win: I64, weights: I64 | None = None) -> I64:
        return np.bincount(win, weights=weights, minlength=nw).astype(np.int64)

    return SyncResult(
        rank=rank, step=wins.step, step_ns=wins.dur_ns,
        sync_count=per_step(sync_win), sync_ns=per_step(sync_win, ev["dur_ns"][sync]),
        d2h_count=per_step(d2h_win), d2h_ns=per_step(d2h_win, ev["dur_ns"][d2h]),
        d2h_bytes=per_step(d2h_win, np.maximum(ev["bytes"][d2h], 0)),
        h2d_sync_ns=per_step(sync_win, np.where(_copies_to_device(trace, cp, sync), ev["dur_ns"][sync], 0)),
        sync_rows=sync, d2h_rows=d2h, sites=_sites(trace, sync, d2h))


def _copies_to_device(trace: Trace, copies: I64, calls: I64) -> npt.NDArray[np.bool_]:
    """Per call: it launched a host-to-device copy (``hipMemcpyWithStream`` of ``randn(...).to(dev)``)."""
    ev = trace.events
    h2d = copies[ev["copy_kind"][copies] == MemcpyKind.H2D]
    launch = ev["launch"][h2d]
    return np.isin(calls, launch[launch >= 0])


def _host_spans(trace: Trace, rank: int, wins: Windows) -> Windows:
    """The steps' host spans; without steps, the window up to the end of the rank's last host op or
    launch call (the profiler's own ``cudaDeviceSynchronize`` when it stops comes after them)."""
    if not wins.has_steps:
        return Windows(wins.step, wins.start_ns, np.minimum(wins.end_ns, _last_host_work_end(trace, rank)))
    tb = tb_step_windows(trace, rank)
    return Windows(wins.step, tb.host_start_ns.astype(np.int64), tb.host_end_ns.astype(np.int64))


def _inside(trace: Trace, rows: I64, wins: Windows) -> tuple[I64, I64]:
    win = window_of(wins, trace.events["ts_ns"][rows])
    keep = win >= 0
    return rows[keep], win[keep]


def _sites(trace: Trace, sync: I64, d2h: I64) -> SyncSites:
    ev, pool = trace.events, trace.strings
    launch = ev["launch"][d2h].astype(np.int64)
    host = np.concatenate([sync, np.where(launch >= 0, launch, d2h)])
    rows = np.concatenate([sync, d2h])
    cs = call_sites(trace, host)
    name = ev["name"]
    key = np.stack([name[rows].astype(np.int64), _name_or(name, cs.op), _name_or(name, cs.top_op),
                    cs.site.astype(np.int64)])
    if len(rows) == 0:
        return SyncSites([], [], [], [], np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    uniq, first, inv = np.unique(key, axis=1, return_index=True, return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    count = np.bincount(inv)
    time = np.bincount(inv, weights=ev["dur_ns"][rows]).astype(np.int64)
    order = np.argsort(-time, kind="stable")
    sites = np.array(("", *cs.site_names), dtype=object)
    return SyncSites(
        what=[str(s) for s in pool.decode(uniq[0][order])], op=[str(s) for s in pool.decode(uniq[1][order])],
        top_op=[str(s) for s in pool.decode(uniq[2][order])],
        call_site=[str(s) for s in sites[uniq[3][order] + 1]],
        count=count[order].astype(np.int64), time_ns=time[order], example_row=rows[first[order]])


def _name_or(name: I32, rows: I32) -> I64:
    return np.where(rows >= 0, name[np.maximum(rows, 0)], -1).astype(np.int64)


def _last_host_work_end(trace: Trace, rank: int) -> int:
    """The end of the rank's last host op or call that launched device work (max int64: none)."""
    ev = trace.events
    ops = rank_rows(trace, rank, (int(EventKind.CPU_OP), int(EventKind.USER_ANNOTATION)))
    launch = ev["launch"][rank_rows(trace, rank, tuple(int(k) for k in GPU_KINDS))]
    rows = np.concatenate([ops, launch[launch >= 0].astype(np.int64)])
    if len(rows) == 0:
        return int(np.iinfo(np.int64).max)
    return int((ev["ts_ns"][rows] + ev["dur_ns"][rows]).max())
