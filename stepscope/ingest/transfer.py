"""A chunk's tables for the trip from a decoding worker to the main process: integers narrowed,
every column in one buffer.

Pickling ~45 small arrays costs ~7 µs of Python per array on each side, more than copying their
bytes; one buffer and a small layout cost that once. The main process reads the columns as views
of the buffer (writeable, so string ids are remapped in place).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.ingest.assemble import FileTables

TABLES = ("events", "tracks", "memory", "counters", "flows")
SENT_WIDE = ("ts_ns", "_key")  # never narrowed for transfer: their values never fit
ALIGN = 8  # every column starts on an 8-byte boundary of the buffer


def narrow_for_transfer(ft: FileTables) -> FileTables:
    """Integer columns in the smallest type that holds their values, for the trip from a worker to
    the main process (a third of the bytes); :func:`finish_file` widens them back as it concatenates."""
    for table in (ft.events, ft.memory, ft.flows, ft.counters):
        for k, v in table.items():
            if v.dtype.kind == "i" and v.dtype.itemsize > 1 and len(v) and k not in SENT_WIDE:
                table[k] = v.astype(_smallest_int(int(v.min()), int(v.max())), copy=False)
    return ft


def _smallest_int(lo: int, hi: int) -> type[np.signedinteger[Any]]:
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min <= lo and hi <= info.max:
            return dtype
    return np.int64


@dataclass(frozen=True)
class PackedTables:
    """Every column of a chunk's :class:`FileTables` in one byte array, and where each one lies."""

    blob: npt.NDArray[np.uint8]
    layout: tuple[tuple[str, str, str, int, int], ...]  # (table, column, dtype, byte offset, rows)
    thread_names: dict[tuple[int, int], int]


def pack(ft: FileTables) -> PackedTables:
    """The tables' columns copied into one buffer (one copy of each, as pickling them would make)."""
    cols = [(t, k, v) for t in TABLES for k, v in getattr(ft, t).items()]
    offsets = np.cumsum([0] + [-(-v.nbytes // ALIGN) * ALIGN for _, _, v in cols]).tolist()
    blob = np.empty(offsets[-1], np.uint8)
    layout = []
    for (table, name, v), at in zip(cols, offsets):
        blob[at : at + v.nbytes].view(v.dtype)[:] = v
        layout.append((table, name, v.dtype.str, at, len(v)))
    return PackedTables(blob, tuple(layout), ft.thread_names)


def unpack(packed: PackedTables) -> FileTables:
    """The tables again, each column a view of the buffer (no copy)."""
    tables: dict[str, dict[str, npt.NDArray[Any]]] = {t: {} for t in TABLES}
    blob = packed.blob
    for table, name, dtype_str, offset, rows in packed.layout:
        dtype = np.dtype(dtype_str)
        tables[table][name] = blob[offset : offset + rows * dtype.itemsize].view(dtype)
    return FileTables(tables["events"], tables["tracks"], tables["memory"], tables["counters"],
                      tables["flows"], packed.thread_names)
