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
from stepscope.ingest.readers.sqlite_tables import (
    SQLITE_MAGIC,
    Cols,
    event_columns,
    fetch_columns,
    open_sqlite,
    table_columns,
    track_key,
)
from stepscope.model.diagnostics import DiagnosticsBuilder
from stepscope.model.schema import EventKind, MemcpyKind
from stepscope.model.strings import StringPool

_VERSION_SUFFIX = re.compile(r"_v\d+$")
#: CUPTI copyKind → (MemcpyKind, Kineto-style direction label)
COPY_KINDS = {1: (MemcpyKind.H2D, "HtoD"), 2: (MemcpyKind.D2H, "DtoH"), 8: (MemcpyKind.D2D, "DtoD"),
              9: (MemcpyKind.H2H, "HtoH"), 10: (MemcpyKind.P2P, "PtoP"), 11: (MemcpyKind.H2D, "HtoD"),
              12: (MemcpyKind.D2H, "DtoH"), 13: (MemcpyKind.D2D, "DtoD")}
MEM_KINDS = {0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed"}


def is_nsys_sqlite(path: str) -> bool:
    with open(path, "rb") as fh:
        return fh.read(16) == SQLITE_MAGIC


def sniff(path: str) -> bool:
    """A SQLite file (the Ascend database reader, asked first, claims its own)."""
    return is_nsys_sqlite(path)


def read(path: str, pool: StringPool, diags: DiagnosticsBuilder) -> FileBatch:
    return read_nsys(path, pool)


def read_nsys(path: str, pool: StringPool) -> FileBatch:
    """One SQLite export → a FileBatch with a single, already split part."""
    con, tables = open_sqlite(path)
    if not {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME"} & tables:
        con.close()
        raise TraceFormatError("SQLite file without Nsight Systems CUPTI tables", path)
    strings = _string_ids(con, tables)
    parts = [p for p in (_kernels(con, tables, strings, pool), _copies(con, tables, pool),
                         _memsets(con, tables, pool), _runtime(con, tables, strings, pool),
                         _nvtx(con, tables, strings, pool)) if p]
    events = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}
    batch = FileBatch(path, 0, meta=_meta(con, tables))
    batch.parts = [FileTables(events, {}, {}, {}, {}, {})]
    batch.n_events = len(events.get("ts_ns", []))
    con.close()
    return batch


def _string_ids(con: sqlite3.Connection, tables: set[str]) -> dict[int, str]:
    if "StringIds" not in tables:
        return {}
    return dict(con.execute("SELECT id, value FROM StringIds").fetchall())


def _names(pool: StringPool, ids: npt.NDArray[Any], strings: dict[int, str],
           strip: bool = False) -> npt.NDArray[np.int32]:
    uniq, inv = np.unique(ids, return_inverse=True)
    text = [strings.get(int(i), str(i)) for i in uniq.tolist()]
    if strip:
        text = [_VERSION_SUFFIX.sub("", t) for t in text]
    return pool.intern_many(text)[inv]


def _gpu_base(start: npt.NDArray[Any], end: npt.NDArray[Any], dev: npt.NDArray[Any], stream: npt.NDArray[Any],
              corr: npt.NDArray[Any], kind: EventKind, cat: str, pool: StringPool) -> Cols:
    c = event_columns(len(start), kind, cat, pool)
    c["ts_ns"], c["dur_ns"] = start.astype(np.int64), (end - start).astype(np.int64)
    c["corr"], c["_device"], c["_stream"] = corr.astype(np.int64), dev.astype(np.int64), stream.astype(np.int64)
    c["_key"] = track_key(pool, dev, stream)
    return c


def _kernels(con: sqlite3.Connection, tables: set[str], strings: dict[int, str], pool: StringPool) -> Cols:
    t = "CUPTI_ACTIVITY_KIND_KERNEL"
    if t not in tables:
        return {}
    cols = table_columns(con, t)
    name_col = "demangledName" if "demangledName" in cols else "shortName"
    shm = ("staticSharedMemory + dynamicSharedMemory" if "dynamicSharedMemory" in cols else "0")
    q = (f"SELECT start, end, deviceId, streamId, correlationId, {name_col}, registersPerThread, gridX, gridY, "
         f"gridZ, blockX, blockY, blockZ, {shm} FROM {t}")
    start, end, dev, stream, corr, name, regs, gx, gy, gz, bx, by, bz, shmem = fetch_columns(con, q, 14)
    if len(start) == 0:
        return {}
    c = _gpu_base(start, end, dev, stream, corr, EventKind.KERNEL, "kernel", pool)
    c["name"] = _names(pool, name, strings)
    for col, arr in (("regs", regs), ("shmem_bytes", shmem), ("grid_x", gx), ("grid_y", gy), ("grid_z", gz),
                     ("block_x", bx), ("block_y", by), ("block_z", bz)):
        c[col] = arr.astype(np.int32)
    return c


def _copies(con: sqlite3.Connection, tables: set[str], pool: StringPool) -> Cols:
    t = "CUPTI_ACTIVITY_KIND_MEMCPY"
    if t not in tables:
        return {}
    q = f"SELECT start, end, deviceId, streamId, correlationId, bytes, copyKind, srcKind, dstKind FROM {t}"
    start, end, dev, stream, corr, nbytes, kind, src, dst = fetch_columns(con, q, 9)
    if len(start) == 0:
        return {}
    c = _gpu_base(start, end, dev, stream, corr, EventKind.MEMCPY, "gpu_memcpy", pool)
    c["bytes"] = nbytes.astype(np.int64)
    k = kind.astype(np.int64)
    c["copy_kind"] = np.array([int(COPY_KINDS.get(x, (MemcpyKind.UNKNOWN, ""))[0]) for x in range(16)],
                              np.int8)[np.clip(k, 0, 15)]
    src_i = np.where(src == None, 7, src).astype(np.int64)  # noqa: E711 (object array from SQL NULLs)
    dst_i = np.where(dst == None, 7, dst).astype(np.int64)  # noqa: E711
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
    start, end, dev, stream, corr, nbytes = fetch_columns(
        con, f"SELECT start, end, deviceId, streamId, correlationId, bytes FROM {t}", 6)
    if len(start) == 0:
        return {}
    c = _gpu_base(start, end, dev, stream, corr, EventKind.MEMSET, "gpu_memset", pool)
    c["bytes"] = nbytes.astype(np.int64)
    c["name"] = np.full(len(start), pool.intern("Memset (Device)"), np.int32)
    return c


def _host(start: npt.NDArray[Any], end: npt.NDArray[Any], gtid: npt.NDArray[Any], kind: EventKind, cat: str,
          pool: StringPool) -> Cols:
    c = event_columns(len(start), kind, cat, pool)
    c["ts_ns"], c["dur_ns"] = start.astype(np.int64), np.maximum(end - start, 0).astype(np.int64)
    g = gtid.astype(np.int64)
    c["_key"] = track_key(pool, (g >> 24) & 0xFFFFFF, g & 0xFFFFFF)
    return c


def _runtime(con: sqlite3.Connection, tables: set[str], strings: dict[int, str], pool: StringPool) -> Cols:
    t = "CUPTI_ACTIVITY_KIND_RUNTIME"
    if t not in tables:
        return {}
    sql = f"SELECT start, end, globalTid, correlationId, nameId FROM {t}"
    start, end, gtid, corr, name = fetch_columns(con, sql, 5)
    if len(start) == 0:
        return {}
    c = _host(start, end, gtid, EventKind.RUNTIME, "cuda_runtime", pool)
    c["corr"] = np.where(corr == None, -1, corr).astype(np.int64)  # noqa: E711 (object array from SQL NULLs)
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
    start, end, gtid, label = fetch_columns(con, q, 4)
    if len(start) == 0:
        return {}
    c = _host(start, end, gtid, EventKind.USER_ANNOTATION, "user_annotation", pool)
    resolved = [strings.get(int(x), x) if isinstance(x, str) and x.isdigit() else str(x) for x in label.tolist()]
    c["name"] = pool.intern_many(resolved)
    return c


def _meta(con: sqlite3.Connection, tables: set[str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"format": "nsys-sqlite"}
    for t in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if t in tables:
            meta["export"] = dict(con.execute(f"SELECT name, value FROM {t}").fetchall())
    start_table = "TARGET_INFO_SESSION_START_TIME"
    if start_table in tables and "utcEpochNs" in table_columns(con, start_table):
        row = con.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()
        if row and row[0] is not None:
            meta["baseTimeNanoseconds"] = int(row[0])
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
             "maxThreadsPerMultiprocessor": (r["maxWarpsPerSm"] * r["threadsPerWarp"]
                                             if r.get("maxWarpsPerSm") and r.get("threadsPerWarp") else None),
             "regsPerBlock": r.get("maxRegistersPerBlock"), "regsPerMultiprocessor": r.get("maxRegistersPerSm"),
             "warpSize": r.get("threadsPerWarp"), "sharedMemPerBlock": r.get("maxShmemPerBlock"),
             "sharedMemPerMultiprocessor": r.get("maxShmemPerSm"),
             "sharedMemPerBlockOptin": r.get("maxShmemPerBlockOptin")} for i, r in enumerate(rows)]
