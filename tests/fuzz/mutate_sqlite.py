"""Mutations of SQLite trace files (Nsight Systems exports, Ascend profiler databases): value edits in
any table and column (NULL, text in an integer column, invalid UTF-8, absurd numbers, swapped
intervals), deleted or duplicated rows, dropped tables and renamed columns, then sometimes damage to
the file's bytes (flips, truncation)."""

from __future__ import annotations

import random
import shutil
import sqlite3
from pathlib import Path
from typing import Any

#: tables the trace readers are known to read; most edits go there, the rest anywhere
KNOWN_TABLES = {
    "StringIds", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS", "TARGET_INFO_GPU",
    "TARGET_INFO_CUDA_STREAM", "ThreadNames", "ProcessStreams", "OSRT_API", "TARGET_INFO_SESSION_START_TIME",
    "META_DATA_EXPORT", "ENUM_CUDA_MEMCPY_OPER", "ENUM_CUDA_MEM_KIND", "PROCESSES", "TARGET_INFO_SYSTEM_ENV",
    "TASK", "STRING_IDS", "COMPUTE_TASK_INFO", "COMMUNICATION_OP", "CANN_API", "PYTORCH_API", "CONNECTION_IDS",
    "connectionCats", "NPU_OP_MEM", "NPU_INFO", "SESSION_TIME_INFO", "RANK_DEVICE_MAP", "STEP_TIME", "META_DATA",
    "HOST_INFO", "ENUM_API_TYPE", "COMMUNICATION_TASK_INFO", "NPU_MEM", "MEMORY_RECORD", "OP_MEMORY"}

BAD_UTF8 = "CAST(X'C3FF28FE' AS TEXT)"
VALUES = ["NULL", "''", "'abc'", "'12'", "' 7 '", BAD_UTF8, "X'00FF'", "-1", "0", "-9223372036854775808",
          "9223372036854775807", "4611686018427387904", "1.5", "1e308", "-1e308", "'NaN'", "1e999", "2147483648",
          "(random())"]


def _tables(con: sqlite3.Connection) -> list[str]:
    rows = con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").fetchall()
    return [r[0] for r in rows]


def _columns(con: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]


def _pick_table(rng: random.Random, con: sqlite3.Connection) -> str | None:
    tables = _tables(con)
    known = [t for t in tables if t in KNOWN_TABLES]
    pool = known if known and rng.random() < 0.85 else tables
    return rng.choice(pool) if pool else None


def _rows_where(rng: random.Random, con: sqlite3.Connection, table: str) -> str:
    n = con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
    if n == 0 or rng.random() < 0.15:
        return ""
    k = rng.choice([1, 1, 2, 5, max(1, n // 10), n])
    return f" WHERE rowid IN (SELECT rowid FROM \"{table}\" ORDER BY random() LIMIT {k})"


def edit_values(rng: random.Random, con: sqlite3.Connection, table: str) -> str:
    col = rng.choice(_columns(con, table) or ["x"])
    value = rng.choice(VALUES)
    con.execute(f'UPDATE OR IGNORE "{table}" SET "{col}" = {value}{_rows_where(rng, con, table)}')
    return f"{table}.{col}={value}"


def swap_interval(rng: random.Random, con: sqlite3.Connection, table: str) -> str:
    cols = _columns(con, table)
    known = (("start", "end"), ("startNs", "endNs"), ("timestamp", "end"))
    pairs = [(a, b) for a, b in known if a in cols and b in cols]
    if not pairs:
        return edit_values(rng, con, table)
    a, b = rng.choice(pairs)
    how = rng.choice(["swap", "negative", "same", "huge"])
    expr = {"swap": f'"{a}" = "{b}", "{b}" = "{a}"', "negative": f'"{a}" = -"{a}", "{b}" = -"{b}"',
            "same": f'"{b}" = "{a}"', "huge": f'"{b}" = 9223372036854775807'}[how]
    con.execute(f'UPDATE OR IGNORE "{table}" SET {expr}{_rows_where(rng, con, table)}')
    return f"{table}.{a}/{b}:{how}"


def delete_rows(rng: random.Random, con: sqlite3.Connection, table: str) -> str:
    con.execute(f'DELETE FROM "{table}"{_rows_where(rng, con, table)}')
    return f"{table}:delete"


def duplicate_rows(rng: random.Random, con: sqlite3.Connection, table: str) -> str:
    cols = ", ".join(f'"{c}"' for c in _columns(con, table))
    con.execute(f'INSERT OR IGNORE INTO "{table}" ({cols}) SELECT {cols} FROM "{table}"{_rows_where(rng, con, table)}')
    return f"{table}:duplicate"


def drop_table(rng: random.Random, con: sqlite3.Connection, table: str) -> str:
    con.execute(f'DROP TABLE "{table}"')
    return f"{table}:drop"


def rename_column(rng: random.Random, con: sqlite3.Connection, table: str) -> str:
    col = rng.choice(_columns(con, table) or ["x"])
    con.execute(f'ALTER TABLE "{table}" RENAME COLUMN "{col}" TO "{col}_x"')
    return f"{table}.{col}:rename"


EDITS = [edit_values, swap_interval, delete_rows, duplicate_rows, drop_table, rename_column]
EDIT_WEIGHTS = [8, 3, 2, 2, 1, 1]


def damage_bytes(rng: random.Random, path: Path) -> str:
    data = bytearray(path.read_bytes())
    if len(data) < 128:  # already cut short by an earlier mutation
        path.write_bytes(bytes(data[: rng.randrange(len(data) + 1)]))
        return "bytes:truncate"
    op = rng.choice(["flip", "flip", "truncate", "zero-page", "header"])
    if op == "flip":
        for _ in range(rng.randint(1, 16)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif op == "truncate":
        del data[rng.randrange(16, len(data)):]
    elif op == "zero-page":
        page = 4096 * rng.randrange(max(1, len(data) // 4096))
        data[page:page + 4096] = bytes(min(4096, len(data) - page))
    else:
        data[rng.randrange(16, 100)] = rng.randrange(256)
    path.write_bytes(bytes(data))
    return f"bytes:{op}"


def mutate_sqlite(rng: random.Random, src: Path, dst: Path) -> str:
    """Copy ``src`` to ``dst`` and damage the copy; returns what was done."""
    shutil.copyfile(src, dst)
    what: list[Any] = []
    if rng.random() < 0.85:
        try:
            what += _edit(rng, dst)
        except sqlite3.DatabaseError as exc:  # a file already damaged by an earlier mutation
            what.append(f"unedited({type(exc).__name__})")
    if rng.random() < 0.2:
        what.append(damage_bytes(rng, dst))
    return ",".join(what)


def _edit(rng: random.Random, path: Path) -> list[str]:
    what = []
    con = sqlite3.connect(path)
    try:
        for _ in range(rng.choice([1, 1, 2, 3])):
            table = _pick_table(rng, con)
            if table is None:
                break
            edit = rng.choices(EDITS, EDIT_WEIGHTS)[0]
            try:
                what.append(edit(rng, con, table))
            except sqlite3.Error as exc:  # a constraint, a view: that edit is skipped
                what.append(f"{table}:skipped({type(exc).__name__})")
        con.commit()
    finally:
        con.close()
    return what
