"""Read the Ascend PyTorch profiler's database export (``ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_N.db``).

The same run as the text export (``trace_view.json``, :mod:`stepscope.ingest.readers.ascend`), classified the
same way: ``TASK`` rows with a ``COMPUTE_TASK_INFO`` row are kernels on (device, stream) tracks,
``MEMCPY_ASYNC`` tasks are copies, stream control and HCCL sub-tasks are other device activity;
``COMMUNICATION_OP`` rows (the collectives, ``hcom_*``) are kernels on one track per group;
``CANN_API`` rows are runtime calls on a "CANN" process of their own (as in the text export, so they
never nest inside PyTorch ops); ``PYTORCH_API`` rows are host ops (``op``), queue events and Python
frames (``trace``). The connection ids tie them: runtime call ↔ task by ``corr``, host op ↔ task by
``ext_id`` (an op with several ``async_npu`` connections gets its smallest, and so do their tasks).
``NPU_OP_MEM`` allocations and releases become the memory table.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from stepscope.errors import TraceFormatError
from stepscope.ingest.assemble import FileTables
from stepscope.ingest.readers.ascend import CONTROL_TASKS, COPY_TASKS
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

DB_NAME = "ascend_pytorch_profiler"
#: PYTORCH_API.type (ENUM_API_TYPE) → event kind and raw category
HOST_TYPES = {50001: (EventKind.CPU_OP, "cpu_op"), 50002: (EventKind.OTHER, "queue"),
              50003: (EventKind.PYTHON_FUNCTION, "python_function"), 50004: (EventKind.USER_ANNOTATION, "mstx")}
COMM_STREAM_BASE = 1 << 20  # stream number of the first communication group's track
TID_MASK = 0xFFFFFFFF


def sniff(path: str) -> bool:
    return is_ascend_db(path)


def read(path: str, pool: StringPool, diags: DiagnosticsBuilder) -> FileBatch:
    return read_ascend_db(path, pool)


def is_ascend_db(path: str) -> bool:
    """An Ascend profiler database: named ``ascend_pytorch_profiler*.db`` (whatever it holds: a damaged
    one is refused as the database it should be, not read as JSON), or SQLite holding its tables."""
    named = Path(path).name.startswith(DB_NAME)
    if named and path.endswith(".db"):
        return True
    try:
        with open(path, "rb") as fh:
            if fh.read(16) != SQLITE_MAGIC:
                return False
    except OSError:
        return False
    if named:
        return True
    try:
        con, tables = open_sqlite(path)
    except TraceFormatError:
        return False
    con.close()
    return {"PYTORCH_API", "TASK"} <= tables


def read_ascend_db(path: str, pool: StringPool) -> FileBatch:
    """One database → a FileBatch with a single, already split part."""
    if os.path.getsize(path) == 0:  # SQLite would read it as an empty database
        raise TraceFormatError("file is empty", path)
    con, tables = open_sqlite(path)
    try:
        if not {"TASK", "STRING_IDS"} <= tables:
            raise TraceFormatError("SQLite file without the Ascend profiler's TASK / STRING_IDS tables", path)
        return guarded(path, lambda: _read(path, con, tables, pool))
    finally:
        con.close()


def _read(path: str, con: TraceDb, tables: set[str], pool: StringPool) -> FileBatch:
    strings = string_ids(con, "STRING_IDS")
    links = _op_connections(con, tables)
    parts = [p for p in (_tasks(con, tables, strings, links, pool), _collectives(con, tables, strings, links, pool),
                         _cann(con, tables, strings, pool), _pytorch(con, tables, strings, links, pool)) if p]
    events = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}
    batch = FileBatch(path, 0, meta=_meta(con, tables, strings))
    batch.parts = [FileTables(events, {}, _memory(con, tables, strings, pool), {}, {}, {})]
    batch.n_events = len(events.get("ts_ns", []))
    batch.repairs = con.repair_list()
    return batch


class Links(NamedTuple):
    """Op ↔ task connections: a PYTORCH_API.connectionId (a CONNECTION_IDS id) and a task-side
    connection id both map to the op's representative (smallest) ``async_npu`` connection id."""

    op_ids: npt.NDArray[np.int64]  # sorted
    op_rep: npt.NDArray[np.int64]
    task_ids: npt.NDArray[np.int64]  # sorted
    task_rep: npt.NDArray[np.int64]


def _op_connections(con: sqlite3.Connection, tables: set[str]) -> Links | None:
    if "CONNECTION_IDS" not in tables:
        return None
    cat = ("JOIN connectionCats k ON k.connectionId = c.connectionId AND k.cat = 'async_npu'"
           if "connectionCats" in tables else "")
    q = (f"WITH a AS (SELECT DISTINCT c.id AS id, c.connectionId AS cid FROM CONNECTION_IDS c {cat}), "
         "r AS (SELECT id, MIN(cid) AS rep FROM a GROUP BY id) "
         "SELECT a.id, a.cid, r.rep FROM a JOIN r USING (id) ORDER BY a.cid")
    ids, cid, rep = fetch(con, q, 3, "CONNECTION_IDS", required=(0, 1, 2))
    order = np.argsort(ids, kind="stable")
    return Links(ids[order], rep[order], cid, rep)


def _lookup(keys: npt.NDArray[np.int64], values: npt.NDArray[np.int64], q: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """``values`` at the first equal key of each query (``keys`` sorted), -1 when absent."""
    out = np.full(len(q), -1, np.int64)
    if len(keys) == 0 or len(q) == 0:
        return out
    qq = q.astype(np.int64)
    pos = np.minimum(np.searchsorted(keys, qq), len(keys) - 1)
    hit = keys[pos] == qq
    out[hit] = values[pos[hit]]
    return out


def _task_ext(links: Links | None, conn: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """External id of device work with connection ids ``conn``: its op's representative id."""
    if links is None:
        return np.full(len(conn), -1, np.int64)
    return _lookup(links.task_ids, links.task_rep, conn)


def _text(pool: StringPool, ids: npt.NDArray[Any], strings: dict[int, str]) -> npt.NDArray[np.int32]:
    uniq, inv = np.unique(ids, return_inverse=True)
    return pool.intern_many([strings.get(int(i), str(i)) for i in uniq.tolist()])[inv]


def _tasks(con: sqlite3.Connection, tables: set[str], strings: dict[int, str],
           links: Links | None, pool: StringPool) -> Cols:
    has_info = "COMPUTE_TASK_INFO" in tables
    info = "LEFT JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId" if has_info else ""
    name = "COALESCE(c.name, t.taskType)" if has_info else "t.taskType"
    compute = "c.globalTaskId IS NOT NULL" if has_info else "0"
    q = (f"SELECT t.startNs, t.endNs, t.deviceId, t.streamId, COALESCE(t.connectionId, -1), t.taskType, {name}, "
         f"{compute} FROM TASK t {info}")
    start, end, dev, stream, conn, ttype, label, is_compute = fetch(con, q, 8, "TASK")
    if len(start) == 0:
        return {}
    c = event_columns(len(start), EventKind.OTHER, "device_task", pool)
    c["ts_ns"], c["dur_ns"] = interval(con, start, end, "TASK")
    c["_device"], c["_stream"] = dev, stream
    c["_key"] = track_key(pool, np.char.add("NPU ", dev.astype(str)), stream)
    c["corr"] = conn
    c["ext_id"] = _task_ext(links, conn)
    c["name"] = _text(pool, label, strings)
    ttype_id = _text(pool, ttype, strings)
    control = pool.mask(lambda s: s in CONTROL_TASKS)[ttype_id]
    copy = pool.mask(lambda s: s in COPY_TASKS)[ttype_id]
    kernel = is_compute.astype(bool) & ~control & ~copy
    c["kind"] = np.where(kernel, int(EventKind.KERNEL),
                         np.where(copy, int(EventKind.MEMCPY), int(EventKind.OTHER))).astype(np.int8)
    c["copy_kind"] = np.where(copy, int(MemcpyKind.UNKNOWN), 0).astype(np.int8)
    return c


def _collectives(con: sqlite3.Connection, tables: set[str], strings: dict[int, str],
                 links: Links | None, pool: StringPool) -> Cols:
    """The collectives, one track per (device, group), named "Group <name> Communication"."""
    if "COMMUNICATION_OP" not in tables:
        return {}
    dev_sql = "(SELECT MIN(deviceId) FROM TASK)"
    q = f"SELECT opName, startNs, endNs, COALESCE(connectionId, -1), groupName, {dev_sql} FROM COMMUNICATION_OP"
    name, start, end, conn, group, dev = fetch(con, q, 6, "COMMUNICATION_OP", required=(1, 2), nullable=(5,))
    if len(start) == 0:
        return {}
    c = event_columns(len(start), EventKind.KERNEL, "communication", pool)
    c["ts_ns"], c["dur_ns"] = interval(con, start, end, "COMMUNICATION_OP")
    dev = np.maximum(dev, 0)  # NULL (no TASK rows): device 0
    groups, g_inv = np.unique(group, return_inverse=True)
    labels = np.array([f"Group {strings.get(int(g), str(g))} Communication" for g in groups.tolist()])
    c["_device"], c["_stream"] = dev, COMM_STREAM_BASE + g_inv.astype(np.int64)
    c["_key"] = track_key(pool, np.char.add("NPU ", dev.astype(str)), labels[g_inv])
    c["corr"] = conn
    c["ext_id"] = _task_ext(links, conn)
    c["name"] = _text(pool, name, strings)
    return c


def _host(con: sqlite3.Connection, table: str, cols: list[npt.NDArray[Any]], pid: npt.NDArray[Any] | None,
          kind: EventKind, cat: str, pool: StringPool) -> Cols:
    """Host events on threads from (start, end, globalTid, ...) columns; ``globalTid`` is pid << 32 | tid
    (``pid`` overrides the process label)."""
    start, end, g = cols[:3]
    c = event_columns(len(start), kind, cat, pool)
    c["ts_ns"], c["dur_ns"] = interval(con, start, end, table)
    c["_key"] = track_key(pool, g >> 32 if pid is None else pid, g & TID_MASK)
    return c


def _cann(con: sqlite3.Connection, tables: set[str], strings: dict[int, str], pool: StringPool) -> Cols:
    if "CANN_API" not in tables:
        return {}
    q = "SELECT startNs, endNs, globalTid, COALESCE(connectionId, -1), name FROM CANN_API"
    cols = fetch(con, q, 5, "CANN_API")
    conn, name = cols[3:]
    if len(conn) == 0:
        return {}
    c = _host(con, "CANN_API", cols, np.full(len(conn), "CANN"), EventKind.RUNTIME, "cann", pool)
    c["corr"] = conn
    c["name"] = _text(pool, name, strings)
    return c


def _pytorch(con: sqlite3.Connection, tables: set[str], strings: dict[int, str],
             links: Links | None, pool: StringPool) -> Cols:
    if "PYTORCH_API" not in tables:
        return {}
    q = ("SELECT CAST(startNs AS INTEGER), CAST(endNs AS INTEGER), globalTid, COALESCE(connectionId, -1), name, "
         "COALESCE(type, 50001) FROM PYTORCH_API")
    cols = fetch(con, q, 6, "PYTORCH_API")
    conn, name, typ = cols[3:]
    if len(conn) == 0:
        return {}
    c = _host(con, "PYTORCH_API", cols, None, EventKind.CPU_OP, "cpu_op", pool)
    for t, (kind, cat) in HOST_TYPES.items():  # a handful of types, vectorised within
        sel = typ == t
        c["kind"][sel], c["cat"][sel] = int(kind), pool.intern(cat)
    c["name"] = _text(pool, name, strings)
    if links is not None:
        c["ext_id"] = _lookup(links.op_ids, links.op_rep, conn)
    return c


def _memory(con: sqlite3.Connection, tables: set[str], strings: dict[int, str], pool: StringPool) -> Cols:
    """NPU_OP_MEM: +size at allocation, -size at release, on the allocating thread."""
    if "NPU_OP_MEM" not in tables:
        return {}
    q = "SELECT timestampNs, globalTid, type, addr, size, totalAllocate, totalReserve, deviceId FROM NPU_OP_MEM"
    ts, g, typ, addr, size, alloc, reserve, dev = fetch(con, q, 8, "NPU_OP_MEM", required=(0,))
    if len(ts) == 0:
        return {}
    typ_id = _text(pool, typ, strings)
    release = pool.mask(lambda s: s == "release")[typ_id]
    return {"ts_ns": ts, "_key": track_key(pool, g >> 32, g & TID_MASK),
            "device_type": np.ones(len(ts), np.int8), "device": np.where(np.abs(dev) < 2**31, dev, -1).astype(np.int32),
            "addr": addr, "bytes": np.where(release, -1, 1) * size, "total_allocated": alloc, "total_reserved": reserve}


def _meta(con: sqlite3.Connection, tables: set[str], strings: dict[int, str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"format": "ascend-db"}
    if "META_DATA" in tables:
        meta["export"] = dict(con.execute("SELECT name, value FROM META_DATA").fetchall())
    if "RANK_DEVICE_MAP" in tables:
        row = con.execute("SELECT rankId FROM RANK_DEVICE_MAP WHERE rankId >= 0 ORDER BY rankId").fetchone()
        if row and isinstance(row[0], int):
            meta["distributedInfo"] = {"rank": int(row[0]), "backend": "hccl"}
    if "NPU_INFO" in tables and {"id", "name"} <= table_columns(con, "NPU_INFO"):
        meta["deviceProperties"] = [{"id": i if isinstance(i, int) else None, "name": str(n), "vendor": "ascend"}
                                    for i, n in con.execute("SELECT id, name FROM NPU_INFO ORDER BY id")]
    if "STEP_TIME" in tables:
        meta["stepTime"] = [list(r) for r in con.execute("SELECT id, startNs, endNs FROM STEP_TIME")]
    return meta
