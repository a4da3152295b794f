"""Slow links: process groups (or rank-to-rank links) whose bandwidth is far below the others'.

Two sources, both judged the same way — a row is slow when its bandwidth is below
:data:`SLOW_FRACTION` × the median of the rows of the same kind and size class (sizes within a
factor of 2: ``floor(log2(bytes))``), with at least two rows in the class to compare:

* **collectives** (any multi-rank trace): the matched collectives of the arrival analysis
  (:mod:`stepscope.analysis.arrivals`), per (process group, collective type, size class): bytes,
  *transfer* time (the collective's median end − its last arrival: the time the data moved once
  everyone was there, so a late rank does not make a link look slow) and bus bandwidth
  (bytes / transfer × the NCCL bus factor of the type for the group's size, so groups of different
  sizes compare).
* **matrix** (Ascend ``communication_matrix.json``, :mod:`stepscope.analysis.comm_matrix`): per
  rank-to-rank link and transport, the profiler's bytes, time and bandwidth; the kind is the
  transport (HCCS, RDMA, ...), local copies left out.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis.arrivals import Arrivals, combine_arrivals
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.collective_records import CollectiveRecords, collective_records
from stepscope.analysis.comm import coll_type_name
from stepscope.analysis.comm_matrix import CommMatrix, combine_ascend, matrix_record
from stepscope.analysis.distributed import bus_factor
from stepscope.analysis.frames import TableResult
from stepscope.model.trace import Trace
from stepscope.model.uniq import unique_texts

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
S = npt.NDArray[np.object_]
SLOW_FRACTION = 0.5


@dataclass(frozen=True)
class LinkRows(TableResult):
    """One row per group (collectives) or link (matrix); ``slow`` marks the ones far below their class."""

    source: S  # "collectives" | "matrix"
    link: S  # "group 0 (ranks 0-3)" | "0->1"
    kind: S  # collective type, or the transport
    ranks: S  # the ranks of the group, "0,1,2,3", or "src,dst"
    count: I64  # collectives (or matrix entries) summed
    bytes: I64
    time_ns: I64
    bandwidth_gbps: F64
    class_median_gbps: F64
    slow: npt.NDArray[np.bool_]

    def columns(self) -> dict[str, npt.NDArray[Any]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class SlowLinks:
    rows: LinkRows

    @property
    def slow(self) -> LinkRows:
        keep = np.flatnonzero(self.rows.slow)
        return LinkRows(**{k: v[keep] for k, v in self.rows.columns().items()})


#: A rank's record: its collective records (:mod:`.arrivals`) and its communication matrix (or None).
LinksRecord = tuple[CollectiveRecords, dict[str, Any] | None]


def compute_slow_links(trace: Trace) -> SlowLinks:
    """Groups and links of a multi-rank trace, the slow ones marked (NotApplicable without either)."""
    return combine_slow_links({r: links_record(trace, r) for r in trace.rank_ids})


def links_record(trace: Trace, rank: int) -> LinksRecord:
    """The registry's per-rank step: what the arrivals and the communication matrix read of the rank."""
    return collective_records(trace, rank), matrix_record(trace, rank)


def combine_slow_links(records: Mapping[int, LinksRecord]) -> SlowLinks:
    """The registry's cross-rank step, from every rank's :func:`links_record`."""
    parts: list[dict[str, npt.NDArray[Any]]] = []
    with contextlib.suppress(NotApplicable):
        parts.append(collective_links(combine_arrivals({r: c for r, (c, _) in records.items()})))
    with contextlib.suppress(NotApplicable):
        parts.append(matrix_links(combine_ascend({r: m for r, (_, m) in records.items()})))
    parts = [p for p in parts if len(p["bytes"])]
    if not parts:
        raise NotApplicable("no matched collectives or communication matrix to compare links")
    cols = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    med, slow = _judge(cols["kind"], cols["bytes"], cols["count"], cols["bandwidth_gbps"])
    return SlowLinks(LinkRows(**cols, class_median_gbps=med, slow=slow))


def collective_links(a: Arrivals) -> dict[str, npt.NDArray[Any]]:
    """Per (group, type, size class) of the matched collectives: bytes, transfer time, bus bandwidth."""
    m = a.m
    n = m.present.sum(axis=1)
    end = np.where(m.present, m.end_ns, 0).astype(np.float64)
    med_end = np.nanmedian(np.where(m.present, end, np.nan), axis=1)
    last = np.where(m.present, m.arrival_ns, np.iinfo(np.int64).min).max(axis=1)
    transfer = np.maximum(np.round(med_end - last), 0).astype(np.int64)
    ok = (m.bytes > 0) & (transfer > 0)
    size_class = np.floor(np.log2(np.maximum(m.bytes, 1))).astype(np.int64)
    sets, set_of = np.unique(m.present, axis=0, return_inverse=True)
    set_of = set_of.reshape(-1)
    set_names = np.array([",".join(str(r) for r in m.ranks[row]) for row in sets], dtype=object)  # distinct sets
    members = set_names[set_of]
    key = np.stack([unique_texts(m.pg)[1], m.coll_type.astype(np.int64),
                    size_class, set_of.astype(np.int64)])[:, ok]
    if key.shape[1] == 0:
        return {"bytes": np.zeros(0, np.int64)}
    _, first, inv = np.unique(key, axis=1, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    idx = np.flatnonzero(ok)[first]
    nbytes = np.bincount(inv, weights=m.bytes[ok]).astype(np.int64)
    t = np.bincount(inv, weights=transfer[ok]).astype(np.int64)
    factor = bus_factor(m.coll_type[idx].astype(np.int32), n[idx].astype(np.int32))
    bw = nbytes / np.maximum(t, 1) * factor
    names = np.array([f"group {g or '?'} ({_ranks(r)})" for g, r in zip(m.pg[idx], members[idx])], dtype=object)
    kinds = np.array([coll_type_name(int(c)) for c in m.coll_type[idx]], dtype=object)
    return {"source": np.full(len(idx), "collectives", dtype=object), "link": names, "kind": kinds,
            "ranks": members[idx], "count": np.bincount(inv).astype(np.int64), "bytes": nbytes, "time_ns": t,
            "bandwidth_gbps": bw}


def matrix_links(matrix: CommMatrix) -> dict[str, npt.NDArray[Any]]:
    """The communication matrix's rank-to-rank links (local copies left out)."""
    lt = matrix.links
    keep = (lt.src != lt.dst) & (lt.time_ns > 0) & (lt.bytes > 0)
    src, dst = lt.src[keep], lt.dst[keep]
    pairs = np.array([f"{s},{d}" for s, d in zip(src.tolist(), dst.tolist())], dtype=object)  # per link
    return {"source": np.full(len(src), "matrix", dtype=object),
            "link": np.array([f"{s}->{d}" for s, d in zip(src.tolist(), dst.tolist())], dtype=object),
            "kind": lt.transport[keep].astype(object), "ranks": pairs, "count": np.ones(len(src), np.int64),
            "bytes": lt.bytes[keep], "time_ns": lt.time_ns[keep], "bandwidth_gbps": lt.bandwidth_gbps[keep]}


def _judge(kind: S, nbytes: I64, count: I64, bw: F64) -> tuple[F64, npt.NDArray[np.bool_]]:
    """Per row: the median bandwidth of its (kind, size class) and whether it is below SLOW_FRACTION of it."""
    per_op = np.maximum(nbytes // np.maximum(count, 1), 1)
    cls = np.stack([unique_texts(kind)[1],
                    np.floor(np.log2(per_op)).astype(np.int64)])
    _, inv = np.unique(cls, axis=1, return_inverse=True)
    inv = inv.reshape(-1)
    order = np.lexsort((bw, inv))
    size = np.bincount(inv)
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    lo, hi = start + (size - 1) // 2, start + size // 2  # the middle one or two of each class
    med_cls = (bw[order][lo] + bw[order][hi]) / 2
    med = med_cls[inv]
    return med, (size[inv] >= 2) & (bw < SLOW_FRACTION * med)


def _ranks(members: str) -> str:
    rs = [int(x) for x in members.split(",") if x]
    if len(rs) > 2 and rs == list(range(rs[0], rs[-1] + 1)):
        return f"ranks {rs[0]}-{rs[-1]}"
    return "ranks " + ", ".join(str(r) for r in rs)
