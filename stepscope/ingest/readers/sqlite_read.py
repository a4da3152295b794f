"""How the SQLite readers (Nsight Systems, Ascend) read a file they cannot trust (beside
:mod:`.sqlite_tables`, which opens it through :func:`connect`): a read-only connection that repairs
and counts what it reads, the fetch of a query's columns, and the boundary that turns any other
failure of a hostile file into one :class:`TraceFormatError` naming it.

Repairs (each counted, with an example, into the file's diagnostics): text that is not UTF-8 is read
with replacement characters; an integer column holding text, a REAL or NULL reads as -1 (a row
without a usable start or end is dropped); an interval whose end precedes its start is swapped.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from stepscope.errors import TraceFormatError
from stepscope.ingest.readers.batch import Repair

I64 = npt.NDArray[np.int64]
T = TypeVar("T")
#: what else a hostile SQLite file raises while read (malformed pages, values of the wrong type)
READ_ERRORS = (sqlite3.Error, ValueError, TypeError, OverflowError, KeyError, IndexError)


class TraceDb(sqlite3.Connection):
    """A connection whose text is decoded leniently and whose reads record their repairs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.repairs: dict[str, list[Any]] = {}  # name → [severity, count, example]
        self.text_factory = self._text

    def repair(self, name: str, severity: str, example: str, count: int = 1) -> None:
        if count <= 0:
            return
        item = self.repairs.setdefault(name, [severity, 0, example])
        item[1] += count

    def repair_list(self) -> list[Repair]:
        """(name, severity, example, count) of every repair, for the file's diagnostics."""
        return [(name, str(v[0]), str(v[2]), int(v[1])) for name, v in self.repairs.items()]

    def _text(self, raw: bytes) -> str:
        try:
            return raw.decode()
        except UnicodeDecodeError:
            self.repair("sqlite-text-not-utf8", "warning",
                        f"text that is not UTF-8 read with replacement characters: {raw[:60]!r}")
            return raw.decode("utf-8", "replace")


def connect(path: str) -> TraceDb:
    """A read-only, immutable connection (sqlite3.DatabaseError when the file is not SQLite)."""
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True, factory=TraceDb)
    assert isinstance(con, TraceDb)
    return con


def guarded(path: str, read: Callable[[], T]) -> T:
    """``read()``, with what a malformed or hostile file makes it raise as one TraceFormatError."""
    try:
        return read()
    except READ_ERRORS as exc:
        raise TraceFormatError(f"unreadable SQLite trace ({type(exc).__name__}: {_one_line(exc)})", path) from None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:200] or type(exc).__name__


def fetch(con: sqlite3.Connection, sql: str, ncols: int, table: str, required: Sequence[int] = (0, 1),
          text: Sequence[int] = (), nullable: Sequence[int] = ()) -> list[npt.NDArray[Any]]:
    """The columns of a query; every column but ``text`` as int64 (see :func:`as_ints`). Rows where a
    ``required`` column is unusable are dropped; other unusable values read as -1, counted unless the
    column is ``nullable`` and the value NULL."""
    rows = con.execute(sql).fetchall()
    if not rows:
        return [np.zeros(0, np.int64) for _ in range(ncols)]
    raw = list(zip(*rows))
    cols: list[npt.NDArray[Any]] = [np.array(c) for c in raw]
    keep = np.ones(len(rows), bool)
    for i in range(ncols):
        if i in text:
            continue
        cols[i], bad = as_ints(raw[i], allow_null=i in nullable)
        if i in required:
            keep &= ~bad
        elif bad.any() and isinstance(con, TraceDb):
            con.repair("sqlite-value-invalid", "warning",
                       f"{table}: a value that is not an integer (text, REAL or NULL) read as -1", int(bad.sum()))
    if not keep.all():
        if isinstance(con, TraceDb):
            con.repair("sqlite-row-dropped", "error", f"{table}: a row without a usable start or end was dropped",
                       int((~keep).sum()))
        cols = [c[keep] for c in cols]
    return cols


def as_ints(values: Sequence[Any], allow_null: bool = False) -> tuple[I64, npt.NDArray[np.bool_]]:
    """An int64 column and where its values were unusable (read as -1): text that is not an integer,
    REAL values that are not finite or beyond int64, blobs, NULL (unless ``allow_null``)."""
    if set(map(type, values)) <= {int}:  # what exports hold: the types checked and the array made in C
        try:
            return np.array(values, np.int64), np.zeros(len(values), bool)
        except OverflowError:
            pass
    ints = [_int_or_none(x) for x in values]  # text, REAL or NULL values: rare, one by one
    bad = np.fromiter((v is None for v in ints), bool, len(ints))
    out = np.array([-1 if v is None else v for v in ints], np.int64)
    if allow_null:
        bad &= np.fromiter((x is not None for x in values), bool, len(values))
    return out, bad


def _int_or_none(x: Any) -> int | None:
    if isinstance(x, (bool, int)):
        return int(x) if -(2**63) <= x < 2**63 else None
    if isinstance(x, float):
        return int(x) if math.isfinite(x) and abs(x) < 9.2e18 else None
    if isinstance(x, str):
        try:
            v = int(x.strip())
        except ValueError:
            return None
        return v if -(2**63) <= v < 2**63 else None
    return None


def string_ids(con: sqlite3.Connection, table: str) -> dict[int, str]:
    """The id → text table of an export (``StringIds``, ``STRING_IDS``). A BLOB or a number where
    text belongs is read as text (a BLOB not UTF-8 with replacement characters, counted); a row
    without an integer id or with NULL text is left out."""
    rows = con.execute(f"SELECT id, CAST(value AS TEXT) FROM {table}").fetchall()
    return {i: v for i, v in rows if isinstance(i, int) and isinstance(v, str)}


def interval(con: sqlite3.Connection, start: I64, end: I64, table: str) -> tuple[I64, I64]:
    """(start, duration) of [start, end) intervals; one whose end precedes its start is swapped and
    counted (an edited export's kernels gave negative times and a wrong GPU busy time)."""
    inverted = end < start
    if inverted.any():
        if isinstance(con, TraceDb):
            con.repair("interval-inverted", "warning", f"{table}: end before start, the two swapped",
                       int(inverted.sum()))
        start, end = np.where(inverted, end, start), np.where(inverted, start, end)
    return start, end - start
