"""What the SQLite readers share (Nsight Systems exports, Ascend profiler databases).

Opening a database read-only (a :class:`~.sqlite_read.TraceDb`, which repairs and counts what it
reads; :func:`.sqlite_read.fetch` gives a query's result as numpy columns), listing its tables and
columns, and the event columns and track keys every SQLite reader fills the way the Kineto path does.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.errors import TraceFormatError
from stepscope.ingest.readers.sqlite_read import TraceDb, connect
from stepscope.model.schema import EventKind
from stepscope.model.strings import StringPool

SQLITE_MAGIC = b"SQLite format 3\x00"
Cols = dict[str, npt.NDArray[Any]]


def open_sqlite(path: str) -> tuple[TraceDb, set[str]]:
    """A read-only connection to a SQLite trace and its table names; TraceFormatError when unreadable."""
    try:
        con = connect(path)
    except sqlite3.DatabaseError as exc:
        raise TraceFormatError(f"not a readable SQLite file ({exc})", path) from None
    try:
        return con, table_names(con)
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # (SQLite quoting a schema that is not UTF-8)
        con.close()
        raise TraceFormatError(f"not a readable SQLite file ({exc})", path) from None


def table_names(con: sqlite3.Connection) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def table_columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in con.execute(f"PRAGMA table_info({table})")}


def event_columns(n: int, kind: EventKind, cat: str, pool: StringPool) -> Cols:
    """Defaults for every event column the assembler expects."""
    return {"ts_ns": np.zeros(n, np.int64), "dur_ns": np.zeros(n, np.int64), "name": np.full(n, -1, np.int32),
            "cat": np.full(n, pool.intern(cat), np.int32), "kind": np.full(n, int(kind), np.int8),
            "corr": np.full(n, -1, np.int64), "ext_id": np.full(n, -1, np.int64),
            "copy_kind": np.zeros(n, np.int8), "pageable": np.full(n, -1, np.int8),
            "bytes": np.full(n, -1, np.int64), "_device": np.full(n, -1, np.int64),
            "_stream": np.full(n, -1, np.int64), "_key": np.zeros(n, np.int64),
            **{f"{d}_{a}": np.zeros(n, np.int32) for d in ("grid", "block") for a in "xyz"},
            "regs": np.full(n, -1, np.int32), "shmem_bytes": np.full(n, -1, np.int32)}


def track_key(pool: StringPool, pid: npt.NDArray[Any], tid: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """Track key (pid string id, tid string id) as the Kineto path builds it."""
    pu, pinv = np.unique(pid, return_inverse=True)
    tu, tinv = np.unique(tid, return_inverse=True)
    pids = pool.intern_many([str(x) for x in pu.tolist()])[pinv].astype(np.int64)
    tids = pool.intern_many([str(x) for x in tu.tolist()])[tinv].astype(np.int64)
    return (pids << 32) | (tids & 0xFFFFFFFF)
