"""Read an Nsight Systems SQLite export (``nsys export --type sqlite``) into the canonical tables.

Kernels, memcpys and memsets become GPU activities on (device, stream) tracks; CUDA runtime calls
and NVTX ranges become host events on their threads; correlation ids link them as in Kineto.
Tables and columns differ across export schema versions, so each is read only when present.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.errors import TraceFormatError
from stepscope.ingest.assemble import FileTables
from stepscope.ingest.readers.batch import FileBatch
from stepscope.ingest.readers.sqlite_read import TraceDb, fetch, guarded, interval, string_ids
from stepscope.ingest.readers.sqlite_tables import (
    SQLITE_MAGIC,
    Cols,
    event_columns,
    open_sqlite,
    table_columns,
    track_key,
)
from stepscope.model.diagnostics import DiagnosticsBuilder
from stepscope.model.schema import EventKind, MemcpyKind
from stepscope.model.strings import StringPool
from stepscope.model.uniq import unique_texts

_VERSION_SUFFIX = re.compile(r"_v\d+$")
#: CUPTI copyKind → (MemcpyKind, Kineto-style direction label)
COPY_KINDS = {1: (MemcpyKind.H2D, "HtoD"), 2: (MemcpyKind.D2H, "DtoH"), 8: (MemcpyKind.D2D, "DtoD"),
              9: (MemcpyKind.H2H, "HtoH"), 10: (MemcpyKind.P2P, "PtoP"), 11: (MemcpyKind.H2D, "HtoD"),
              12: (MemcpyKind.D2H, "DtoH"), 13: (MemcpyKind.D2D, "DtoD")}
MEM_KINDS = {0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed"}


def is_nsys_sqlite(path: str) -> bool:
    """A SQLite file (by its first bytes); an unreadable file is not, and the Kineto reader reports it."""
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def sniff(path: str) -> bool:
    """A SQLite file (the Ascend database reader, asked first, claims its own)."""
    return is_nsys_sqlite(path)


def read(path: str, pool: StringPool, diags: DiagnosticsBuilder) -> FileBatch:
    return read_nsys(path, pool)


def read_nsys(path: str, pool: StringPool) -> FileBatch:
    """One SQLite export → a FileBatch with a single, already split part (repairs in ``batch.repairs``)."""
    con, tables = open_sqlite(path)
    try:
        if not {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME"} & tables:
            raise TraceFormatError("SQLite file without Nsight Systems CUPTI tables", path)
        return guarded(path, lambda: _read(path, con, tables, pool))
    finally:
        con.close()


def _read(path: str, con: TraceDb, tables: set[str], pool: StringPool) -> FileBatch:
    strings = _string_ids(con, tables)
    parts = [p for p in (_kernels(con, tables, strings, pool), _copies(con, tables, pool),
                         _memsets(con, tables, pool), _runtime(con, tables, strings, pool),
                         _nvtx(con, tables, strings, pool), _mpi(con, tables, strings, pool)) if p]
    events = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}
    batch = FileBatch(path, 0, meta=_meta(con, tables))
    batch.parts = [FileTables(events, {}, {}, {}, {}, {})]
    batch.n_events = len(events.get("ts_ns", []))
    batch.repairs = con.repair_list()
    return batch


def _string_ids(con: sqlite3.Connection, tables: set[str]) -> dict[int, str]:
    if "StringIds" not in tables:
        return {}
    return string_ids(con, "StringIds")


def _int32(col: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
    """An int64 column as int32; values beyond int32 read as unknown (-1)."""
    return np.where((col >= -(2**31)) & (col < 2**31), col, -1).astype(np.int32)


def _names(pool: StringPool, ids: npt.NDArray[Any], strings: dict[int, str],
           strip: bool = False) -> npt.NDArray[np.int32]:
    uniq, inv = np.unique(ids, return_inverse=True)
    text = [strings.get(int(i), str(i)) for i in uniq.tolist()]
    if strip:
        text = [_VERSION_SUFFIX.sub("", t) for t in text]
    return pool.intern_many(text)[inv]


def _gpu_base(con: sqlite3.Connection, table: str, cols: list[npt.NDArray[Any]], kind: EventKind, cat: str,
              pool: StringPool) -> Cols:
    start, end, dev, stream, corr = cols[:5]
    c = event_columns(len(start), kind, cat, pool)
    c["ts_ns"], c["dur_ns"] = interval(con, start, end, table)
    c["corr"], c["_device"], c["_stream"] = corr, dev, stream
    c["_key"] = track_key(pool, dev, stream)
    return c


def _kernels(con: sqlite3.Connection, tables: set[str], strings: dict[int, str], pool: StringPool) -> Cols:
    t = "CUPTI_ACTIVITY_KIND_KERNEL"
    if t not in tables:
        return {}
    have = table_columns(con, t)
    name_col = "demangledName" if "demangledName" in have else "shortName"
    shm = ("staticSharedMemory + dynamicSharedMemory" if "dynamicSharedMemory" in have else "0")
    q = (f"SELECT start, end, deviceId, streamId, correlationId, {name_col}, registersPerThread, gridX, gridY, "
         f"gridZ, blockX, blockY, blockZ, {shm} FROM {t}")
    cols = fetch(con, q, 14, t)
    name, regs, gx, gy, gz, bx, by, bz, shmem = cols[5:]
    if len(name) == 0:
        return {}
    c = _gpu_base(con, t, cols, EventKind.KERNEL, "kernel", pool)
    c["name"] = _names(pool, name, strings)
    c["regs"], c["shmem_bytes"] = _int32(regs), _int32(shmem)
    for col, arr in (("grid_x", gx), ("grid_y", gy), ("grid_z", gz), ("block_x", bx), ("block_y", by),
                     ("block_z", bz)):
        c[col] = np.maximum(_int32(arr), 0)  # an unusable dimension (-1) reads as unknown (0)
    return c


def _copies(con: sqlite3.Connection, tables: set[str], pool: StringPool) -> Cols:
    t = "CUPTI_ACTIVITY_KIND_MEMCPY"
    if t not in tables:
        return {}
    q = f"SELECT start, end, deviceId, streamId, correlationId, bytes, copyKind, srcKind, dstKind FROM {t}"
    cols = fetch(con, q, 9, t, nullable=(7, 8))
    nbytes, k, src, dst = cols[5:]
    if len(k) == 0:
        return {}
    c = _gpu_base(con, t, cols, EventKind.MEMCPY, "gpu_memcpy", pool)
    c["bytes"] = nbytes
    c["copy_kind"] = np.array([int(COPY_KINDS.get(x, (MemcpyKind.UNKNOWN, ""))[0]) for x in range(16)],
                              np.int8)[np.clip(k, 0, 15)]
    src_i = np.where(src < 0, 7, src)  # NULL: unknown (7)
    dst_i = np.where(dst < 0, 7, dst)
    unknown = (src_i == 7) & (dst_i == 7)
    c["pageable"] = np.where((src_i == 0) | (dst_i == 0), 1, np.where(unknown, -1, 0)).astype(np.int8)
    labels = [f"Memcpy {COPY_KINDS.get(a, (0, '?'))[1]} "
              f"({MEM_KINDS.get(b, 'Unknown')} -> {MEM_KINDS.get(d, 'Unknown')})"
              for a, b, d in zip(k.tolist(), src_i.tolist(), dst_i.tolist())]
    c["name"] = pool.intern_many(labels)
    return c


def _memsets(con: sqlite3.Connection, tables: set[str], pool: StringPool) -> Cols:
    t = "CUPTI_ACTIVITY_KIND_MEMSET"
    if t not in tables:
        return {}
    cols = fetch(con, f"SELECT start, end, deviceId, streamId, correlationId, bytes FROM {t}", 6, t)
    if len(cols[0]) == 0:
        return {}
    c = _gpu_base(con, t, cols, EventKind.MEMSET, "gpu_memset", pool)
    c["bytes"] = cols[5]
    c["name"] = np.full(len(cols[0]), pool.intern("Memset (Device)"), np.int32)
    return c


def _host(con: sqlite3.Connection, table: str, start: npt.NDArray[Any], end: npt.NDArray[Any],
          gtid: npt.NDArray[Any], kind: EventKind, cat: str, pool: StringPool) -> Cols:
    c = event_columns(len(start), kind, cat, pool)
    c["ts_ns"], c["dur_ns"] = interval(con, start, end, table)
    c["_key"] = track_key(pool, (gtid >> 24) & 0xFFFFFF, gtid & 0xFFFFFF)
    return c


def _runtime(con: sqlite3.Connection, tables: set[str], strings: dict[int, str], pool: StringPool) -> Cols:
    t = "CUPTI_ACTIVITY_KIND_RUNTIME"
    if t not in tables:
        return {}
    start, end, gtid, corr, name = fetch(con, f"SELECT start, end, globalTid, correlationId, nameId FROM {t}", 5, t,
                                         nullable=(3,))
    if len(start) == 0:
        return {}
    c = _host(con, t, start, end, gtid, EventKind.RUNTIME, "cuda_runtime", pool)
    c["corr"] = corr  # NULL: -1
    c["name"] = _names(pool, name, strings, strip=True)
    keep = _one_per_call(c["_key"], c["corr"], c["name"], c["dur_ns"])
    return {k: v[keep] for k, v in c.items()}


def _one_per_call(key: npt.NDArray[np.int64], corr: npt.NDArray[np.int64], name: npt.NDArray[np.int32],
                  dur: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Rows to keep, in table order: old exports record some calls twice (``cudaMemcpy`` and
    ``cudaMemcpy_v3020``, the same correlation id on the same thread); the longer row of each stays."""
    order = np.lexsort((-dur, name, corr, key))
    k, c, n = key[order], corr[order], name[order]
    first = np.ones(len(order), bool)
    first[1:] = (k[1:] != k[:-1]) | (c[1:] != c[:-1]) | (n[1:] != n[:-1]) | (c[1:] < 0)
    return np.sort(order[first])


def _nvtx(con: sqlite3.Connection, tables: set[str], strings: dict[int, str], pool: StringPool) -> Cols:
    if "NVTX_EVENTS" not in tables:
        return {}
    cols = table_columns(con, "NVTX_EVENTS")
    text = "COALESCE(text, CAST(textId AS TEXT))" if "textId" in cols else "text"
    q = (f"SELECT start, end, globalTid, {text} FROM NVTX_EVENTS "
         "WHERE end IS NOT NULL AND eventType IN (59, 60, 70, 71)")
    start, end, gtid, label = fetch(con, q, 4, "NVTX_EVENTS", text=(3,))
    if len(start) == 0:
        return {}
    c = _host(con, "NVTX_EVENTS", start, end, gtid, EventKind.USER_ANNOTATION, "user_annotation", pool)
    resolved = [_label(x, strings) for x in label.tolist()]  # per range: NVTX ranges are few
    c["name"] = pool.intern_many(resolved)
    return c


#: the tables of ``nsys --trace=mpi``: every MPI call on its thread (start, end, globalTid, textId)
MPI_TABLES = ("MPI_COLLECTIVES_EVENTS", "MPI_P2P_EVENTS", "MPI_START_WAIT_EVENTS", "MPI_OTHER_EVENTS")


def _mpi(con: sqlite3.Connection, tables: set[str], strings: dict[int, str], pool: StringPool) -> Cols:
    """MPI calls as host communication events: a thread inside ``MPI_Wait`` or ``MPI_Allreduce``
    waits for its peers, which the views and the critical path count as communication."""
    parts = []
    for t in (t for t in MPI_TABLES if t in tables):
        cols = table_columns(con, t)
        name_col = next((c for c in ("textId", "nameId", "text") if c in cols), None)
        if name_col is None or not {"start", "end", "globalTid"} <= set(cols):
            continue
        start, end, gtid, label = fetch(con, f"SELECT start, end, globalTid, {name_col} FROM {t} WHERE end IS NOT NULL",
                                        4, t, text=(3,))
        if len(start) == 0:
            continue
        c = _host(con, t, start, end, gtid, EventKind.COMMUNICATION, "mpi", pool)
        uniq, inv = unique_texts(label)
        c["name"] = pool.intern_many([_label(x, strings) for x in uniq.tolist()])[inv]
        parts.append(c)
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}


def _label(x: Any, strings: dict[int, str]) -> str:
    """An NVTX range's text, or the string its id (textId) names."""
    if isinstance(x, str) and x.isascii() and x.isdigit() and len(x) < 19:
        return strings.get(int(x), x)
    return str(x)


def _meta(con: sqlite3.Connection, tables: set[str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"format": "nsys-sqlite"}
    for t in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if t in tables:
            meta["export"] = dict(con.execute(f"SELECT name, value FROM {t}").fetchall())
    start_table = "TARGET_INFO_SESSION_START_TIME"
    if start_table in tables and "utcEpochNs" in table_columns(con, start_table):
        row = con.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()
        if row and isinstance(row[0], int):
            meta["baseTimeNanoseconds"] = row[0]
    if "TARGET_INFO_GPU" in tables:
        meta["deviceProperties"] = _devices(con)
    return meta


def _devices(con: sqlite3.Connection) -> list[dict[str, Any]]:
    con.row_factory = sqlite3.Row
    try:
        rows = [dict(r) for r in con.execute("SELECT * FROM TARGET_INFO_GPU")]
    finally:
        con.row_factory = None
    return [{"id": r.get("id", i), "name": r.get("name", ""), "totalGlobalMem": r.get("totalMemory"),
             "computeMajor": r.get("computeMajor"), "computeMinor": r.get("computeMinor"), "numSms": r.get("smCount"),
             "maxThreadsPerBlock": r.get("maxThreadsPerBlock"),
             "maxThreadsPerMultiprocessor": _product(r.get("maxWarpsPerSm"), r.get("threadsPerWarp")),
             "regsPerBlock": r.get("maxRegistersPerBlock"), "regsPerMultiprocessor": r.get("maxRegistersPerSm"),
             "warpSize": r.get("threadsPerWarp"), "sharedMemPerBlock": r.get("maxShmemPerBlock"),
             "sharedMemPerMultiprocessor": r.get("maxShmemPerSm"),
             "sharedMemPerBlockOptin": r.get("maxShmemPerBlockOptin")} for i, r in enumerate(rows)]


def _product(a: Any, b: Any) -> int | None:
    """a · b of two positive integers, else unknown (a text times an integer would repeat the text)."""
    ok = all(isinstance(v, int) and not isinstance(v, bool) and 0 < v < 2**31 for v in (a, b))
    return int(a) * int(b) if ok else None
