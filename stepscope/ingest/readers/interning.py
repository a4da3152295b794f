"""Local string ids for columns of decoded values: each value hashed once (in C), only the distinct
values looked up in the chunk's string table, texts of raw JSON values made once per process.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from itertools import count, repeat
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


def first_rows(values: Iterable[Any], n: int) -> tuple[dict[Any, int], I64]:
    """Each of ``n`` values' first row, and the distinct values (keys, in order of first appearance)
    with their first row: one hash lookup per value, all in C."""
    first: dict[Any, int] = {}
    return first, np.fromiter(map(first.setdefault, values, count()), np.int64, n)


def relabel(first: dict[Any, int], rows: I64, ids: Iterable[int]) -> npt.NDArray[np.int32]:
    """Each row's id, given one id per distinct value (in the order of ``first``'s keys)."""
    lut = np.empty(len(rows), np.int32)
    lut[np.fromiter(first.values(), np.int64, len(first))] = np.fromiter(ids, np.int32, len(first))
    return lut[rows]


def intern_strings(values: Iterable[Any], table: dict[str, int], n: int | None = None) -> npt.NDArray[np.int32]:
    """Local ids for a column of str/None (None → -1); ``n`` values (default: ``len(values)``).

    Each value is hashed once (in C); only the distinct values are looked up in ``table``."""
    if n is None:
        values = list(values)
        n = len(values)
    first, rows = first_rows(values, n)
    return relabel(first, rows, (-1 if s is None else table.setdefault(s, len(table)) for s in first))


def _json_string(text: str) -> str:
    if not text.startswith('"'):
        return text
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return text
    return value if isinstance(value, str) else text


def raw_ids(values: Iterable[bytes], n: int, table: dict[str, int], compact: bool,
            unquote: bool) -> npt.NDArray[np.int32]:
    """Local ids of ``n`` raw JSON texts (Input Dims ...) given as bytes; empty (absent) → -1. Only
    distinct texts are decoded, each once per process.

    ``compact`` drops all whitespace (for number-only values such as shapes), so equal shapes get
    one id however the file was formatted; ``unquote`` keeps a JSON string's text, not its quotes."""
    first, rows = first_rows(values, n)
    known = _RAW_TEXTS[(compact, unquote)]
    if len(known) > RAW_MEMO_LIMIT:
        known.clear()
    texts = list(map(known.get, first, repeat(_UNSEEN)))  # texts this process made before: looked up in C
    if _UNSEEN in texts:
        texts = [_raw_text(b, compact, unquote, known) if t is _UNSEEN else t for b, t in zip(first, texts)]
    return relabel(first, rows, (-1 if t is None else table.setdefault(t, len(table)) for t in texts))


_UNSEEN: Any = object()
RAW_MEMO_LIMIT = 1 << 16  # texts remembered per kind before starting over: bounded on traces of very many shapes
#: per process, the text made of each raw value (by how it is made): chunks repeat the same shapes
_RAW_TEXTS: dict[tuple[bool, bool], dict[bytes, str | None]] = {(c, u): {} for c in (False, True)
                                                                  for u in (False, True)}


def _raw_text(raw: bytes, compact: bool, unquote: bool, known: dict[bytes, str | None]) -> str | None:
    """The text stored for a raw JSON value (None for an absent one), remembered in ``known``."""
    text: str | None = None
    if raw:
        text = raw.decode("utf-8", "replace")
        if compact:
            text = "".join(text.split())
        elif unquote:  # a JSON string value ("[0, 1]" written as a string): keep the string, not its quotes
            text = _json_string(text)
        else:  # one text per value however the file was laid out (Kineto writes ["float", "int"])
            text = _canonical(text)
    known[raw] = text
    return text


def _canonical(text: str) -> str:
    """A JSON value's text as ``json.dumps`` lays it out (", " between items); unparsable text as it is."""
    if "\n" not in text and "  " not in text:
        return text  # already one line, as Kineto writes it
    try:
        return json.dumps(json.loads(text), ensure_ascii=False)
    except (ValueError, RecursionError):
        return text


def intern_ids(values: Iterable[Any], table: dict[str, int], n: int) -> npt.NDArray[np.int32]:
    """Local string ids of pid/tid values: 7 and "7" are the same thread, so ids go by the text."""
    first, rows = first_rows(values, n)
    return relabel(first, rows, (table.setdefault(str(v), len(table)) for v in first))


def ordered_strings(table: dict[str, int]) -> list[str]:
    strings = [""] * len(table)
    for s, i in table.items():
        strings[i] = s
    return strings
