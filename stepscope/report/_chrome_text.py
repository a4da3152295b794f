"""Vectorised chrome-trace JSON text: numpy columns → one JSON object per row, built in Arrow's C kernels.

Every row's text is the element-wise concatenation of string columns (``pyarrow.compute``): numbers
are cast to text by Arrow, strings are JSON-encoded once per *unique* string id (msgspec) and taken
by id, optional args become ``,"key":value`` pieces or "" per row. The joined column's data buffer
is then exactly the bytes to write, so no Python object is made per event.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import msgspec
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from stepscope.model.strings import StringPool

Part: TypeAlias = "pa.Array | str"  # a column of text, or one text for every row
I64 = npt.NDArray[np.int64]


class JsonStrings:
    """The trace's strings as JSON text (quoted and escaped), encoded once, taken by id (-1 → "")."""

    def __init__(self, pool: StringPool) -> None:
        enc = msgspec.json.Encoder()
        self.quoted = pa.array([enc.encode(s).decode() for s in pool.strings] + ['""'], pa.string())
        self.raw = pa.array([*pool.strings, "null"], pa.string())  # strings that already are JSON text
        self._last = len(pool.strings)

    @staticmethod
    def encode(s: str) -> str:
        """One string as JSON text."""
        return msgspec.json.encode(s).decode()

    def take(self, ids: npt.NDArray[np.integer], raw: bool = False) -> pa.Array:
        idx = np.where(ids >= 0, ids, self._last).astype(np.int64)
        return (self.raw if raw else self.quoted).take(pa.array(idx))


def ints(values: npt.ArrayLike) -> pa.Array:
    """Integers as text."""
    return pc.cast(pa.array(np.asarray(values, np.int64)), pa.string())


def floats(values: npt.ArrayLike) -> pa.Array:
    """Finite floats as their shortest text at their own precision (callers mask out NaN / inf)."""
    v = np.asarray(values)
    if v.dtype.kind != "f":
        v = v.astype(np.float64)
    return pc.cast(pa.array(np.where(np.isfinite(v), v, v.dtype.type(0))), pa.string())


def micros(ns: I64) -> pa.Array:
    """ns → µs text with every ns digit kept (``1234.567``; integers when whole; exact for any size)."""
    ns = np.asarray(ns, np.int64)
    mag = np.abs(ns)
    whole, frac = ints(mag // 1000), ints(mag % 1000)
    text = pc.if_else(pa.array(mag % 1000 == 0), whole,
                      join(whole, ".", pc.utf8_lpad(frac, width=3, padding="0")))
    return pc.if_else(pa.array(ns < 0), join("-", text), text)


def join(*parts: Part) -> pa.Array:
    """Element-wise concatenation (scalars broadcast)."""
    return pc.binary_join_element_wise(*parts, "")


def optional(mask: npt.NDArray[np.bool_], *parts: Part) -> Part:
    """The concatenation of ``parts`` — columns of the rows where ``mask`` holds only — at those
    rows, "" elsewhere (a plain "" when it never holds). Building only the present rows halves the
    cost of the sparse args."""
    n_on = int(mask.sum())
    if n_on == 0:
        return ""
    text = join(*parts) if any(not isinstance(p, str) for p in parts) else pa.array(["".join(parts)] * n_on)
    if n_on == len(mask):
        return text
    return pc.replace_with_mask(pa.array(np.full(len(mask), "", object), pa.string()), pa.array(mask), text)


def grid(x: npt.ArrayLike, y: npt.ArrayLike, z: npt.ArrayLike) -> pa.Array:
    """``[x, y, z]`` text."""
    return join("[", ints(x), ", ", ints(y), ", ", ints(z), "]")


def text_bytes(arr: pa.Array) -> bytes:
    """The concatenated text of a string column (its data buffer between the first and last offsets)."""
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    if len(arr) == 0:
        return b""
    if arr.null_count:
        arr = pc.fill_null(arr, "")
    offsets = np.frombuffer(arr.buffers()[1], np.int32)[arr.offset: arr.offset + len(arr) + 1]
    data = arr.buffers()[2]
    return data.to_pybytes()[int(offsets[0]): int(offsets[-1])] if data is not None else b""


def rows_text(parts: Sequence[Part], n: int) -> bytes:
    """Rows of text, each ``",\\n" + concat(parts)``: ready to append after an earlier event."""
    if n == 0:
        return b""
    cols: list[Any] = [",\n", *parts]
    if all(isinstance(p, str) for p in cols):
        return ("".join(cols) * n).encode()
    return text_bytes(join(*cols))
