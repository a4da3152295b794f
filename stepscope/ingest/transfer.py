"""A chunk's tables for the trip from a decoding worker to the main process: integers narrowed,
every column in one buffer, and that buffer, where it fits, in memory both processes share.

Pickling ~45 small arrays costs ~7 µs of Python per array on each side, more than copying their
bytes; one buffer and a small layout cost that once. The main process reads the columns as views
of the buffer (writeable, so string ids are remapped in place).

Sent through the pool's result pipe, a chunk's ~0.3-0.5 MB buffer is copied four times (pickle,
pipe, read, unpickle) and a worker waits on the pipe while the main process is busy (0.6-1 ms a
chunk measured on a 1 GB trace). A :class:`HandoverSlots` mapping, made before the workers fork,
holds one slot per job in flight: the worker packs straight into its job's slot, the pipe carries
the layout, and the main process copies the bytes out once.
"""

from __future__ import annotations

import mmap
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

    blob: npt.NDArray[np.uint8]  # empty while the bytes wait in a handover slot
    layout: tuple[tuple[str, str, str, int, int], ...]  # (table, column, dtype, byte offset, rows)
    thread_names: dict[tuple[int, int], int]
    slot: int = -1  # the handover slot that holds the bytes (-1: they are in ``blob``)
    nbytes: int = 0  # how many bytes of the slot


class HandoverSlots:
    """Equal slots of one anonymous shared mapping; made before the workers fork, so that each of
    them maps the same memory. The main process hands a free slot to each job it submits and takes
    it back once the result's bytes are copied out."""

    def __init__(self, count: int, slot_bytes: int) -> None:
        self.slot_bytes = slot_bytes
        self._mem = mmap.mmap(-1, count * slot_bytes)  # MAP_SHARED | MAP_ANONYMOUS: pages made on first touch
        self._free = list(range(count))

    def view(self, slot: int) -> npt.NDArray[np.uint8]:
        return np.frombuffer(self._mem, np.uint8, self.slot_bytes, slot * self.slot_bytes)

    def raw(self, slot: int, nbytes: int) -> memoryview:
        """The first ``nbytes`` of a slot as bytes (what a decompressed chunk is handed over in)."""
        start = slot * self.slot_bytes
        return memoryview(self._mem)[start : start + min(nbytes, self.slot_bytes)]

    def acquire(self) -> int:
        """A free slot, or -1 when every slot is taken (the job then sends its bytes by pipe)."""
        return self._free.pop() if self._free else -1

    def release(self, slot: int) -> None:
        if slot >= 0:
            self._free.append(slot)

    def collect(self, packed: PackedTables) -> PackedTables:
        """The packed tables with their bytes copied out of their slot into memory of their own."""
        if packed.slot < 0:
            return packed
        blob = self.view(packed.slot)[: packed.nbytes].copy()
        return PackedTables(blob, packed.layout, packed.thread_names)


_EMPTY = np.zeros(0, np.uint8)


def pack(ft: FileTables, slots: HandoverSlots | None = None, slot: int = -1) -> PackedTables:
    """The tables' columns copied into one buffer (one copy of each, as pickling them would make):
    handover slot ``slot`` of ``slots`` when given and big enough, else memory of its own."""
    cols = [(t, k, v) for t in TABLES for k, v in getattr(ft, t).items()]
    offsets = np.cumsum([0] + [-(-v.nbytes // ALIGN) * ALIGN for _, _, v in cols]).tolist()
    total = offsets[-1]
    in_slot = slots is not None and slot >= 0 and total <= slots.slot_bytes
    blob = slots.view(slot)[:total] if slots is not None and in_slot else np.empty(total, np.uint8)
    layout = []
    for (table, name, v), at in zip(cols, offsets):
        blob[at : at + v.nbytes].view(v.dtype)[:] = v
        layout.append((table, name, v.dtype.str, at, len(v)))
    if in_slot:
        return PackedTables(_EMPTY, tuple(layout), ft.thread_names, slot, total)
    return PackedTables(blob, tuple(layout), ft.thread_names)


def unpack(packed: PackedTables) -> FileTables:
    """The tables again, each column a view of the buffer (no copy); bytes in a handover slot must
    be collected first (:meth:`HandoverSlots.collect`)."""
    if packed.slot >= 0:
        raise ValueError("packed tables still in handover slot: collect them first")
    tables: dict[str, dict[str, npt.NDArray[Any]]] = {t: {} for t in TABLES}
    blob = packed.blob
    for table, name, dtype_str, offset, rows in packed.layout:
        dtype = np.dtype(dtype_str)
        tables[table][name] = blob[offset : offset + rows * dtype.itemsize].view(dtype)
    return FileTables(tables["events"], tables["tracks"], tables["memory"], tables["counters"],
                      tables["flows"], packed.thread_names)
