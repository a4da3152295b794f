"""The one classification table of communication: which GPU activity is a collective, of what type,
how big, and which host op launched it.

Every other analysis asks this module; none matches communication names on its own.

A GPU activity is communication when

1. its kernel name names a communication library or mechanism (``nccl``, ``rccl``, ``msccl``,
   ``hccl``/``hcom``, ``gloo``, ``c10d``, ``nvshmem``, symmetric memory / ``multimem``, DeepEP /
   pplx expert-parallel dispatch and combine) or a collective (``AllReduce``, ``all_gather``,
   ``cross_device_reduce`` ...), or
2. it is a kernel whose launch call's innermost enclosing op (the first ``cpu_op`` / annotation
   above it, Python frames skipped) is a communication op: a library op (``record_param_comms``,
   ``c10d::*``, ``nccl:*``, ``gloo:*``, ``hccl*``, ``ProcessGroup*``, ``_c10d_functional::*``) or
   any op or ``record_function`` range named for a collective or an expert-parallel phase
   (``all_to_all``, ``dispatch``, ``combine`` ...). Kernels of a library nobody listed are caught
   this way. Copies and memsets are never communication (a copy inside a c10d op is a copy).

Sizes come from, in order: the kernel's own collective args (PyTorch ≥ 2.1 writes them), the
nearest ancestor of its launch that carries them (``record_param_comms``), else the ``Input Dims``
and ``Input type`` of the ``nccl:*`` annotation that launched it (older traces).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from enum import IntEnum

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis._memo import per_trace
from stepscope.analysis.dims import MAX_NUMEL, numel, tensor_dims
from stepscope.model.masks import any_of
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]


class CollType(IntEnum):
    """Collective type of a communication activity (0 = not communication)."""

    NONE = 0
    ALLREDUCE = 1
    ALLGATHER = 2
    REDUCE_SCATTER = 3
    ALLTOALL = 4
    BROADCAST = 5
    REDUCE = 6
    SENDRECV = 7
    SEND = 8
    RECV = 9
    BARRIER = 10
    GATHER = 11
    SCATTER = 12
    OTHER = 13


#: Communication libraries, matched case-insensitively anywhere in a kernel name.
LIBRARY_PATTERN = re.compile(
    r"nccl|rccl|msccl|hccl|hcom_|gloo|c10d|nvshmem|multimem|symm_?mem|deep_?ep|pplx"
    r"|(?:intra|inter)node(?:_ll)?::(?:dispatch|combine|notify)", re.IGNORECASE)
#: Host ops that launch communication (the innermost op enclosing the launch call).
COMM_OP_PATTERN = re.compile(
    r"^(record_param_comms|c10d::|_?c10d_functional::|nccl:|rccl:|gloo:|hccl|hcom|ProcessGroup|P?MPI_|mpi:)"
    r"|(?<![a-z])(all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|dispatch|combine|nvshmem|symm_?mem)(?![a-z])",
    re.IGNORECASE)
#: Collective type from a name (kernel, op or ``Collective name`` arg), first match wins.
COLLECTIVE_PATTERNS: tuple[tuple[re.Pattern[str], CollType], ...] = tuple(
    (re.compile(p, re.IGNORECASE), t) for p, t in (
        (r"reduce_?scatter", CollType.REDUCE_SCATTER),
        (r"all_?gather|allgather", CollType.ALLGATHER),
        (r"all_?reduce|cross_device_reduce|one_shot_all|two_shot_all", CollType.ALLREDUCE),
        (r"all_?to_?all", CollType.ALLTOALL),
        (r"broadcast|bcast", CollType.BROADCAST),
        (r"send_?recv", CollType.SENDRECV),
        (r"barrier", CollType.BARRIER),
        (r"scatter", CollType.SCATTER),
        (r"gather", CollType.GATHER),
        (r"reduce", CollType.REDUCE),
        (r"(^|[^a-z])send", CollType.SEND),
        (r"(^|[^a-z])recv", CollType.RECV),
    ))
#: Bytes per element by dtype spelling (``Collective`` args and ``Input type``), lower case.
DTYPE_BYTES: dict[str, int] = {
    "float": 4, "float32": 4, "c10::float": 4, "int": 4, "int32": 4, "uint32": 4,
    "double": 8, "float64": 8, "long": 8, "long int": 8, "int64": 8, "uint64": 8,
    "half": 2, "float16": 2, "c10::half": 2, "bfloat16": 2, "c10::bfloat16": 2, "short": 2, "int16": 2,
    "byte": 1, "char": 1, "int8": 1, "uint8": 1, "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1,
}
_MAX_ANCESTORS = 6


@functools.lru_cache(maxsize=1 << 16)
def collective_of(name: str) -> int:
    """CollType code named by a kernel / op / collective name, OTHER when none is recognisable (a pure
    function of the name, remembered: a process that reads rank after rank sees the same names)."""
    for pat, t in COLLECTIVE_PATTERNS:
        if pat.search(name):
            return int(t)
    return int(CollType.OTHER)


@functools.lru_cache(maxsize=1 << 16)
def is_comm_kernel_name(name: str) -> bool:
    """Whether a kernel name alone says communication."""
    return bool(LIBRARY_PATTERN.search(name)) or collective_of(name) in (
        CollType.ALLREDUCE, CollType.ALLGATHER, CollType.REDUCE_SCATTER, CollType.ALLTOALL)


def is_comm_op_name(name: str) -> bool:
    return bool(COMM_OP_PATTERN.search(name))


def dtype_bytes(text: str) -> int:
    """Element size of a dtype spelling, or of the first entry of an ``Input type`` JSON list; -1 unknown."""
    t = text.strip()
    if t.startswith("["):
        try:
            first = json.loads(t)
            t = str(first[0]) if first else ""
        except (ValueError, IndexError, TypeError, RecursionError):
            return -1
    return DTYPE_BYTES.get(t.lower(), -1)


def dims_nelems(text: str) -> int:
    """Elements in an ``Input Dims`` JSON text: the sum over tensors of the product of dims; -1 if none."""
    dims = tensor_dims(text)
    total = min(sum(max(numel(d), 0) for d in dims), MAX_NUMEL) if dims is not None else 0
    return total if total > 0 else -1


@dataclass(frozen=True)
class CommClassification:
    """Communication facts per event row of a trace (every array has one entry per event).

    ============  =======  ================================================================
    is_comm       bool     GPU activity that is communication
    coll_type     int8     :class:`CollType` of comm GPU rows and comm host ops, 0 otherwise
    by_op         bool     comm only because of the launching op (custom collective kernel)
    comm_op       int32    comm GPU row → innermost communication host op of its launch, -1
    in_bytes      int64    comm GPU row → input size in bytes, -1 unknown
    out_bytes     int64    comm GPU row → output size in bytes, -1 unknown
    group_size    int32    comm GPU row → ranks in its process group, -1 unknown
    pg_name       int32    comm GPU row → process group name string id, -1 unknown
    ============  =======  ================================================================
    """

    is_comm: npt.NDArray[np.bool_]
    coll_type: npt.NDArray[np.int8]
    by_op: npt.NDArray[np.bool_]
    comm_op: I32
    in_bytes: I64
    out_bytes: I64
    group_size: I32
    pg_name: I32


@per_trace
def classify(trace: Trace) -> CommClassification:
    """The communication classification of a trace (computed once per trace object, then cached)."""
    return _classify(trace)


def _classify(trace: Trace) -> CommClassification:
    ev, pool = trace.events, trace.strings
    n = len(ev)
    kind, name = ev["kind"], ev["name"]
    op_kinds = any_of(kind, [EventKind.CPU_OP, EventKind.USER_ANNOTATION, EventKind.COMMUNICATION])
    host_comm = pool.mask(is_comm_op_name)[name] & op_kinds
    kernel = kind == EventKind.KERNEL
    by_name = kernel & pool.mask(is_comm_kernel_name)[name]
    launch = ev["launch"]
    by_op = np.zeros(n, bool)
    if host_comm.any():  # without a communication op no kernel is communication by its op
        krows = np.flatnonzero(kernel & ~by_name & (launch >= 0))
        enclosing = _first(_ancestors(ev["parent"], ev["parent"][launch[krows]]), op_kinds)
        by_op[krows] = (enclosing >= 0) & host_comm[np.maximum(enclosing, 0)]
    is_comm = by_name | by_op
    rows = np.flatnonzero(is_comm)
    anc = _ancestors(ev["parent"], np.where(launch[rows] >= 0, ev["parent"][np.maximum(launch[rows], 0)], -1))
    comm_op = np.full(n, -1, np.int32)
    comm_op[rows] = _first(anc, host_comm)
    coll_type = np.zeros(n, np.int8)
    ctype = pool.map(collective_of, np.int8, 0)
    coll_type[host_comm] = ctype[name[host_comm]]
    by_kernel = ctype[name[rows]]
    from_arg = ctype[ev["coll_name"][rows]]
    op_rows = comm_op[rows]
    from_op = np.where(op_rows >= 0, ctype[name[np.maximum(op_rows, 0)]], 0)
    specific_op = (from_op > 0) & (from_op != CollType.OTHER)
    best = np.where(from_arg > 0, from_arg, np.where(specific_op, from_op, by_kernel))
    coll_type[rows] = np.where(best > 0, best, int(CollType.OTHER))
    sizes = _sizes(trace, rows, anc, comm_op)
    return CommClassification(is_comm, coll_type, by_op, comm_op, *sizes)


def _ancestors(parent: I32, start: I32) -> I32:
    """(len(start), _MAX_ANCESTORS) matrix: start, its parent, grandparent ... (-1 past the root)."""
    out = np.full((len(start), _MAX_ANCESTORS), -1, np.int32)
    cur = start.astype(np.int32)
    for level in range(_MAX_ANCESTORS):  # a fixed number of levels, vectorised over rows
        out[:, level] = cur
        cur = np.where(cur >= 0, parent[np.maximum(cur, 0)], -1)
    return out


def _first(anc: I32, ok: npt.NDArray[np.bool_]) -> I32:
    """Per row of an ancestor matrix, the first ancestor for which ``ok`` holds, -1 when none."""
    good = (anc >= 0) & ok[np.maximum(anc, 0)]
    pos = good.argmax(axis=1)
    found = good[np.arange(len(anc)), pos] if len(anc) else np.zeros(0, bool)
    return np.where(found, anc[np.arange(len(anc)), pos], -1).astype(np.int32)


def _sizes(trace: Trace, rows: I64, anc: I32, comm_op: I32) -> tuple[I64, I64, I32, I32]:
    ev, pool = trace.events, trace.strings
    n = len(ev)
    in_b, out_b = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    gsize, pg = np.full(n, -1, np.int32), np.full(n, -1, np.int32)
    if len(rows) == 0:
        return in_b, out_b, gsize, pg
    has_args = ev["in_nelems"] >= 0
    src = np.where(has_args[rows], rows, _first(anc, has_args))
    ok = src >= 0
    s = np.maximum(src, 0)
    esize = pool.map(dtype_bytes, np.int64, -1)[ev["coll_dtype"][s]]
    in_b[rows] = np.where(ok & (esize > 0), ev["in_nelems"][s] * esize, -1)
    out_b[rows] = np.where(ok & (esize > 0), ev["out_nelems"][s] * esize, -1)
    gsize[rows] = np.where(ok, ev["group_size"][s], -1)
    pg[rows] = np.where(ok, ev["pg_name"][s], -1)
    dims_src = comm_op[rows]
    fallback = (in_b[rows] < 0) & (dims_src >= 0)
    d = np.maximum(dims_src, 0)
    nel = pool.map(dims_nelems, np.int64, -1)[ev["input_dims"][d]]
    tsize = pool.map(dtype_bytes, np.int64, -1)[ev["input_types"][d]]
    guess = np.where(fallback & (nel > 0) & (tsize > 0), nel * tsize, -1)
    in_b[rows] = np.where(fallback, guess, in_b[rows])
    out_b[rows] = np.where(fallback, guess, out_b[rows])
    return in_b, out_b, gsize, pg


@per_trace
def host_collective_mask(trace: Trace) -> npt.NDArray[np.bool_]:
    """Per event row: a host-side collective — a collective op on a host thread (``gloo:all_reduce``
    running on the CPU, a ``c10d`` op) or a communication event. While one runs, the host is inside
    communication: the critical path charges that time to communication, not to host work."""
    ev = trace.events
    host = any_of(ev["kind"], [EventKind.CPU_OP, EventKind.USER_ANNOTATION, EventKind.COMMUNICATION])
    mask: npt.NDArray[np.bool_] = host & ((classify(trace).coll_type > 0) | (ev["kind"] == EventKind.COMMUNICATION))
    return mask


def inside_host_collective(trace: Trace, rows: I64) -> npt.NDArray[np.bool_]:
    """Per host row: whether a host-side collective on its own thread encloses it — a call the
    communication library makes (gloo's stream synchronisations and copies around its CPU all-reduce),
    not one of the user's step."""
    ev = trace.events
    coll = host_collective_mask(trace)
    inside: npt.NDArray[np.bool_] = np.zeros(len(rows), bool)
    lo, hi = _collective_spans(trace)
    if len(lo) == 0:
        return inside  # no collective on any host thread: nothing to walk up
    ts = ev["ts_ns"][rows]
    pos = np.searchsorted(lo, ts, side="right") - 1
    maybe = np.flatnonzero((pos >= 0) & (ts <= hi[np.maximum(pos, 0)]))  # starts while one runs somewhere
    inside[maybe] = _first(_ancestors(ev["parent"], ev["parent"][rows[maybe]]), coll) >= 0
    return inside


@per_trace
def _collective_spans(trace: Trace) -> tuple[I64, I64]:
    """The union of the host-side collectives' spans over every thread (sorted, disjoint)."""
    rows = np.flatnonzero(host_collective_mask(trace))
    lo, hi = intervals.union(trace.events["ts_ns"][rows], trace.events["ts_ns"][rows] + trace.events["dur_ns"][rows])
    return lo, hi


def comm_rows(trace: Trace, rank: int) -> I64:
    """Rows of the communication GPU activities of one rank."""
    c = classify(trace)
    return np.flatnonzero(c.is_comm & (trace.events["rank"] == rank)).astype(np.int64)


def coll_type_name(code: int) -> str:
    return CollType(code).name.lower()
