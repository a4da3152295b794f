"""The communication matrix of a job: rank × rank traffic, as the profiler recorded it per link.

Source: the Ascend profiler's ``communication_matrix.json`` of every rank (read into the rank's
metadata by the reader, :mod:`stepscope.ingest.readers.ascend_summaries`), with or without
``trace_view.json``. Each rank's file lists, per step, per collective/p2p op type and group
(``allreduce-top1@<group>``, ``allreduce-middle@...``, ``allreduce-total@...``) and per link
``"src-dst"``: the transport (HCCS, RDMA, PCIE, SIO, LOCAL), transit size (MB = 10^6 bytes), transit
time (ms) and bandwidth (GB/s) — the profiler's numbers, kept as they are in :class:`MatrixEntries`.

:class:`LinkTable` is the matrix itself: per (src, dst, transport) link, the bytes and time summed
over the steps and op types of the ``*-total`` entries (the profiler's total over every op of a
type; the top/middle/bottom entries are single ops, already inside the total), bandwidth = bytes /
time. A file without ``*-total`` entries has every entry summed instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.comm_links import RankLinks, combine_links, rank_links
from stepscope.analysis.frames import TableResult
from stepscope.model.trace import Trace

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
S = npt.NDArray[np.object_]
META_KEY = "ascend_comm_matrix"
TEXT_FIELDS = ("step", "kind", "op", "group", "transport", "op_name")
NUMBER_FIELDS = ("size_mb", "time_ms", "bandwidth_gbps")
KINETO_SOURCE = "point-to-point and all-to-all kernels"


@dataclass(frozen=True)
class MatrixEntries(TableResult):
    """Every entry of the ranks' matrices as recorded: the rank whose file holds it, the step
    (``step50``), ``collective`` or ``p2p``, the op type key and group, the link, and its numbers."""

    rank: I32
    step: S
    kind: S
    op: S
    group: S
    src: I32
    dst: I32
    transport: S
    size_mb: F64
    time_ms: F64
    bandwidth_gbps: F64
    op_name: S

    def columns(self) -> dict[str, npt.NDArray[Any]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class LinkTable(TableResult):
    """Rank × rank: one row per (src, dst, transport, op, basis), largest traffic first."""

    src: I32
    dst: I32
    transport: S  # the profiler's (HCCS, RDMA ...); "" where not recorded (Kineto)
    bytes: I64
    time_ns: I64
    bandwidth_gbps: F64  # bytes / time (NaN when no time)
    op: S  # "" (the profiler's totals over every op type) | "p2p" | "all_to_all"
    basis: S  # how the cell's peer is known: "profiler" | "recorded" | "group" | "world" (:mod:`.comm_links`)
    count: I64  # entries (profiler) or ops (Kineto) summed

    def columns(self) -> dict[str, npt.NDArray[Any]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class CommMatrix:
    """The job's communication matrix (see the module docstring)."""

    source: str  # where the numbers come from
    ranks: tuple[int, ...]  # the ranks whose files (or kernels) were read
    entries: MatrixEntries  # the profiler's entries (empty for a Kineto matrix)
    links: LinkTable
    unplaced_count: int = 0  # Kineto p2p / all-to-all kernels whose peer no field names
    unplaced_time_ns: int = 0


#: A rank's part: the profiler's matrix (its metadata) and its Kineto p2p / all-to-all entries.
MatrixRecord = tuple[dict[str, Any] | None, RankLinks | None]


def matrix_record(trace: Trace, rank: int) -> dict[str, Any] | None:
    """The matrix the rank's profiler wrote (its metadata), None when it carries none."""
    m = trace.rank_info(rank).metadata.get(META_KEY)
    return m if isinstance(m, dict) and m.get("src") else None


def comm_matrix_record(trace: Trace, rank: int) -> MatrixRecord:
    """The registry's per-rank step: the profiler's matrix, else the rank's Kineto entries."""
    m = matrix_record(trace, rank)
    return m, (rank_links(trace, rank) if m is None else None)


def compute_comm_matrix(trace: Trace) -> CommMatrix:
    """The job's matrix (NotApplicable when no rank carries one and none runs a p2p / all-to-all kernel)."""
    return combine_comm_matrix({r: comm_matrix_record(trace, r) for r in trace.rank_ids})


def combine_comm_matrix(records: Mapping[int, MatrixRecord]) -> CommMatrix:
    """The cross-rank part: the profiler's matrices where any rank carries one, else the Kineto cells."""
    if any(m is not None for m, _ in records.values()):
        return combine_ascend({r: m for r, (m, _) in records.items()})
    cells = combine_links({r: k for r, (_, k) in records.items()})
    if cells is None or not len(cells.src):
        raise NotApplicable("no communication matrix in this trace (no communication_matrix.json, and no "
                            "point-to-point or all-to-all kernel with a known peer)")
    n = len(cells.src)
    links = LinkTable(cells.src, cells.dst, np.full(n, "", dtype=object), cells.bytes, cells.time_ns,
                      cells.bandwidth_gbps, cells.op, cells.basis, cells.count)
    ranks = tuple(r for r, (_, k) in records.items() if k is not None)
    empty = MatrixEntries(**{f: np.zeros(0, np.int32 if f in ("rank", "src", "dst") else
                                         np.float64 if f in NUMBER_FIELDS else object)
                             for f in MatrixEntries.__dataclass_fields__})
    return CommMatrix(KINETO_SOURCE, ranks, empty, links, cells.unplaced_count, cells.unplaced_time_ns)


def combine_ascend(records: Mapping[int, dict[str, Any] | None]) -> CommMatrix:
    """The profiler's matrices: every rank's entries, and the links summed over them."""
    per_rank = [(r, m) for r, m in records.items() if m is not None]
    if not per_rank:
        raise NotApplicable("no communication matrix in this trace (the Ascend profiler's communication_matrix.json)")
    counts = [len(m["src"]) for _, m in per_rank]
    cols: dict[str, npt.NDArray[Any]] = {"rank": np.repeat([r for r, _ in per_rank], counts).astype(np.int32)}
    for f in TEXT_FIELDS:
        cols[f] = np.array([str(x) for _, m in per_rank for x in m[f]], dtype=object)
    for f in ("src", "dst"):
        cols[f] = np.concatenate([np.asarray(m[f], np.int64) for _, m in per_rank]).astype(np.int32)
    for f in NUMBER_FIELDS:
        cols[f] = np.concatenate([np.asarray(m[f], np.float64) for _, m in per_rank])
    entries = MatrixEntries(**cols)
    return CommMatrix("Ascend profiler communication_matrix.json", tuple(r for r, _ in per_rank), entries,
                      _links(entries))


def _links(e: MatrixEntries) -> LinkTable:
    op = e.op.astype(str)
    total = np.char.endswith(op, "-total") if len(op) else np.zeros(0, bool)
    use = total | ~np.isin(e.rank, np.unique(e.rank[total]))  # per rank: its own file decides
    names, tid = np.unique(e.transport[use].astype(str), return_inverse=True)
    key = np.stack([e.src[use].astype(np.int64), e.dst[use].astype(np.int64), tid.astype(np.int64)], axis=1)
    uniq, inv = np.unique(key.reshape(-1, 3), axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    nbytes = np.round(np.bincount(inv, weights=np.nan_to_num(e.size_mb[use]) * 1e6, minlength=len(uniq)))
    time_ns = np.round(np.bincount(inv, weights=np.nan_to_num(e.time_ms[use]) * 1e6, minlength=len(uniq)))
    nbytes, time_ns = nbytes.astype(np.int64), time_ns.astype(np.int64)
    order = np.lexsort((uniq[:, 1], uniq[:, 0], -nbytes))
    bw = np.where(time_ns > 0, nbytes / np.maximum(time_ns, 1), np.nan)  # bytes/ns == GB/s
    m = len(uniq)
    count = np.bincount(inv, minlength=m).astype(np.int64)
    return LinkTable(uniq[order, 0].astype(np.int32), uniq[order, 1].astype(np.int32),
                     names.astype(object)[uniq[order, 2]], nbytes[order], time_ns[order], bw[order],
                     np.full(m, "", dtype=object), np.full(m, "profiler", dtype=object), count[order])
