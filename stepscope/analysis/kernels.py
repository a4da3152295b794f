"""Kernel view (SPEC §4, TB "Kernel", NSYS "cuda_gpu_kern_sum"): GPU kernels grouped by name, and by
name + launching operator + grid + block + registers + shared memory.

Scope: every kernel of the rank (like TB, not only those inside steps). ``share_pct`` is the share of
the rank's total kernel time. Mean blocks per SM and mean occupancy are weighted by kernel duration
(TB), from the trace's values or, where absent, from :mod:`stepscope.analysis.occupancy`.
Communication kernels (NCCL/RCCL) are listed with their collective metadata.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis._groups import duration_stats, group_keys, largest_first
from stepscope.analysis.activity import is_comm_row
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.frames import TableResult
from stepscope.analysis.occupancy import kernel_occupancy
from stepscope.analysis.tensor_cores import tc_kernel_mask
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]
S = npt.NDArray[np.object_]

#: Duration histogram bin edges, ns (1-2-5 steps from 1 µs to 10 s, plus 0).
HIST_EDGES_NS = np.array([0] + [int(m * 10**e) for e in range(3, 10) for m in (1, 2, 5)] + [10**10], np.int64)
COLLECTIVE_COLUMNS = ("coll_name", "in_nelems", "out_nelems", "coll_dtype", "group_size", "pg_name",
                      "pg_desc", "pg_ranks")


@dataclass(frozen=True)
class KernelTable(TableResult):
    """Kernels by name, largest total first (times ns)."""

    name: S
    calls: I64
    total_ns: I64
    mean_ns: F64
    median_ns: F64
    min_ns: I64
    max_ns: I64
    std_ns: F64
    tc_used: B
    is_comm: B
    mean_blocks_per_sm: F64
    mean_occupancy_pct: F64
    share_pct: F64

    def columns(self) -> dict[str, npt.NDArray[np.generic]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class KernelLaunchTable(TableResult):
    """Kernels by name + launching op + grid + block + registers + shared memory, largest first."""

    name: S
    op_name: S
    grid: S
    block: S
    regs_per_thread: I64
    shmem_bytes: I64
    calls: I64
    total_ns: I64
    mean_ns: F64
    min_ns: I64
    max_ns: I64
    mean_blocks_per_sm: F64
    mean_occupancy_pct: F64
    tc_used: B

    def columns(self) -> dict[str, npt.NDArray[np.generic]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class CollectiveKernels(TableResult):
    """Each communication kernel with its collective metadata, longest first (strings "" = unknown)."""

    name: S
    ts_ns: I64
    dur_ns: I64
    collective: S
    in_nelems: I64
    out_nelems: I64
    dtype: S
    group_size: I64
    pg_name: S
    pg_desc: S
    pg_ranks: S

    def columns(self) -> dict[str, npt.NDArray[np.generic]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class KernelView:
    """Everything the kernel view shows for one rank."""

    rank: int
    by_name: KernelTable
    by_launch: KernelLaunchTable
    collectives: CollectiveKernels
    hist_edges_ns: I64
    hist_counts: I64
    total_kernel_ns: int
    occupancy_computed: bool


def _weighted(inv: I64, values: F64, dur: I64, groups: int) -> F64:
    """Duration-weighted mean of ``values`` per group, over rows where the value is known."""
    ok = ~np.isnan(values)
    w = np.bincount(inv[ok], weights=dur[ok], minlength=groups)
    s = np.bincount(inv[ok], weights=values[ok] * dur[ok], minlength=groups)
    return np.where(w > 0, s / np.maximum(w, 1), np.nan)


def _comm_by_name(trace: Trace, rows: I64, ids: I32) -> B:
    """Per kernel name (``ids``, sorted): whether its rows are communication (any of them)."""
    pos = np.searchsorted(ids, trace.events["name"][rows])
    return np.bincount(pos, weights=is_comm_row(trace)[rows], minlength=len(ids)) > 0


def _by_name(trace: Trace, rows: I64, bps: F64, occ: F64) -> KernelTable:
    ev = trace.events
    (ids64,), inv = group_keys(ev["name"][rows])
    ids = ids64.astype(np.int32)
    dur = ev["dur_ns"][rows]
    st = duration_stats(inv, dur, len(ids))
    total = max(int(dur.sum()), 1)
    names = trace.strings.decode(ids)
    o = largest_first(st.total_ns, names)
    return KernelTable(
        name=names[o], calls=st.calls[o], total_ns=st.total_ns[o], mean_ns=st.mean_ns[o],
        median_ns=st.median_ns[o], min_ns=st.min_ns[o], max_ns=st.max_ns[o], std_ns=st.std_ns[o],
        tc_used=tc_kernel_mask(trace.strings)[ids][o], is_comm=_comm_by_name(trace, rows, ids)[o],
        mean_blocks_per_sm=_weighted(inv, bps, dur, len(ids))[o],
        mean_occupancy_pct=_weighted(inv, occ, dur, len(ids))[o], share_pct=st.total_ns[o] / total * 100.0)


def _dims(x: I64, y: I64, z: I64) -> S:
    out = np.empty(len(x), object)
    out[:] = [f"[{a}, {b}, {c}]" for a, b, c in zip(x.tolist(), y.tolist(), z.tolist())]
    return out


def _by_launch(trace: Trace, rows: I64, bps: F64, occ: F64) -> KernelLaunchTable:
    ev = trace.events
    op = ev["op"][rows]
    op_name = np.where(op >= 0, ev["name"][np.maximum(op, 0)], -1)
    cols = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "regs", "shmem_bytes")
    keys, inv = group_keys(ev["name"][rows], op_name, *[ev[c][rows] for c in cols])
    uniq = np.stack(keys, axis=1) if len(rows) else np.zeros((0, 10), np.int64)
    dur = ev["dur_ns"][rows]
    st = duration_stats(inv, dur, len(uniq))
    o = largest_first(st.total_ns)
    u = uniq[o]
    names = trace.strings.decode(u[:, 1].astype(np.int32))
    names[u[:, 1] < 0] = "N/A"
    return KernelLaunchTable(
        name=trace.strings.decode(u[:, 0].astype(np.int32)), op_name=names,
        grid=_dims(u[:, 2], u[:, 3], u[:, 4]), block=_dims(u[:, 5], u[:, 6], u[:, 7]),
        regs_per_thread=u[:, 8], shmem_bytes=u[:, 9], calls=st.calls[o], total_ns=st.total_ns[o],
        mean_ns=st.mean_ns[o], min_ns=st.min_ns[o], max_ns=st.max_ns[o],
        mean_blocks_per_sm=_weighted(inv, bps, dur, len(uniq))[o],
        mean_occupancy_pct=_weighted(inv, occ, dur, len(uniq))[o],
        tc_used=tc_kernel_mask(trace.strings)[u[:, 0].astype(np.int32)])


def collective_kernels(trace: Trace, rows: I64) -> CollectiveKernels:
    """Communication kernels with collective name, sizes and process group, longest first.

    The metadata is read from the kernel's own args, else from the CPU op that launched it
    (``record_param_comms`` / ``nccl:*``), which carries the same fields.
    """
    ev, pool = trace.events, trace.strings
    comm = rows[is_comm_row(trace)[rows]]
    comm = comm[np.argsort(-ev["dur_ns"][comm], kind="stable")]
    op = ev["op"][comm]
    vals: dict[str, I64] = {}
    for c in COLLECTIVE_COLUMNS:
        own = ev[c][comm].astype(np.int64)
        # TODO(lead): the Kineto reader fills the collective columns on cpu_op rows but not on kernel
        # rows (nccl_resnet_a100: kernel args carry "Collective name" etc.); fall back to the op.
        from_op = np.where(op >= 0, ev[c][np.maximum(op, 0)], -1).astype(np.int64)
        vals[c] = np.where(own >= 0, own, from_op)
    s = pool.decode
    return CollectiveKernels(
        name=s(ev["name"][comm]), ts_ns=ev["ts_ns"][comm], dur_ns=ev["dur_ns"][comm],
        collective=s(vals["coll_name"]), in_nelems=vals["in_nelems"], out_nelems=vals["out_nelems"],
        dtype=s(vals["coll_dtype"]), group_size=vals["group_size"], pg_name=s(vals["pg_name"]),
        pg_desc=s(vals["pg_desc"]), pg_ranks=s(vals["pg_ranks"]))


def compute_kernels(trace: Trace, rank: int) -> KernelView:
    """The kernel view of one rank; raises NotApplicable when the rank ran no kernels."""
    ev = trace.events
    rows = np.flatnonzero((ev["rank"] == rank) & (ev["kind"] == EventKind.KERNEL)).astype(np.int64)
    if len(rows) == 0:
        raise NotApplicable("no GPU kernels in this trace (CPU-only run, or profiled without CUDA activity)")
    occ = kernel_occupancy(trace, rows, trace.device_of_rank(rank))
    counts, _ = np.histogram(ev["dur_ns"][rows], bins=HIST_EDGES_NS)
    return KernelView(rank=rank, by_name=_by_name(trace, rows, occ.blocks_per_sm, occ.occupancy_pct),
                      by_launch=_by_launch(trace, rows, occ.blocks_per_sm, occ.occupancy_pct),
                      collectives=collective_kernels(trace, rows), hist_edges_ns=HIST_EDGES_NS,
                      hist_counts=counts.astype(np.int64), total_kernel_ns=int(ev["dur_ns"][rows].sum()),
                      occupancy_computed=bool(occ.computed.any()))
