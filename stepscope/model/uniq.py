"""Sorted distinct values of a column, by sorting.

numpy 2.3+ answers a plain ``np.unique`` through a hash table that is orders of magnitude slower than
sorting on high-cardinality integer columns (1.6 M int64 keys: 1.4 s against 18 ms with numpy
2.4), so the model, the analyses and the reports take distinct values through :func:`unique`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


def unique(values: npt.ArrayLike) -> npt.NDArray[Any]:
    """The sorted distinct values of ``values`` (flattened), as ``np.unique(values)`` returns them."""
    arr = np.asarray(values).ravel()
    if arr.dtype.kind not in "iub" or len(arr) < 2:
        return np.unique(arr)  # floats (NaN handling), strings, objects: numpy's own rules
    s = np.sort(arr, kind="stable")  # timsort: a trace's columns come in long sorted runs (~15x faster)
    keep = np.empty(len(s), bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def unique_rows(rows: npt.NDArray[np.integer]) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``np.unique(rows, axis=0, return_index=True, return_inverse=True)`` for a 2-D integer array, by
    sorting one int64 key per row: each column's values replaced by their rank among that column's
    distinct values, combined column by column (re-ranked when the product would overflow), so the
    key orders rows as numpy's lexicographic row order does (2.3 s → 0.3 s for 1.7 M rows of 4)."""
    arr = np.asarray(rows)
    n = arr.shape[0]
    key = np.zeros(n, np.int64)
    card = 1
    for j in range(arr.shape[1]):
        vals = unique(arr[:, j])
        if card * len(vals) >= 1 << 62:
            vals_k = unique(key)
            key, card = np.searchsorted(vals_k, key).astype(np.int64), len(vals_k)
        key = key * len(vals) + np.searchsorted(vals, arr[:, j])
        card *= len(vals)
    order = np.argsort(key, kind="stable")
    k = key[order]
    new = np.ones(n, bool)
    new[1:] = k[1:] != k[:-1]
    first = order[new].astype(np.int64)
    inverse = np.empty(n, np.int64)
    inverse[order] = np.cumsum(new) - 1
    return arr[first], first, inverse


def stable_order(key: npt.NDArray[np.integer]) -> npt.NDArray[np.intp]:
    """``np.argsort(key, kind="stable")``; keys spanning fewer than 2^16 values (lanes, tracks,
    codes) are sorted as uint16, which numpy radix-sorts in linear time (~7x faster on 1 M rows)."""
    k = np.asarray(key)
    if len(k) and k.dtype.kind in "iu":
        lo = int(k.min())
        if int(k.max()) - lo < 1 << 16:
            return np.argsort((k.astype(np.int64) - lo).astype(np.uint16), kind="stable")
    return np.argsort(k, kind="stable")


def unique_texts(values: npt.ArrayLike) -> tuple[npt.NDArray[np.object_], npt.NDArray[np.int64]]:
    """The sorted distinct texts of ``values`` (each value as ``str``) and each value's position among
    them: ``np.unique(values.astype(str), return_inverse=True)`` without its fixed-width unicode array,
    whose every row is as wide as the longest text (one 3 M-character name in a 509-row column made
    5.7 GiB). Hashing in C: ``str``, ``set`` and the lookups run over the column with ``map``."""
    texts = list(map(str, np.asarray(values, dtype=object).ravel().tolist()))
    distinct = sorted(set(texts))
    position = dict(zip(distinct, range(len(distinct))))
    out = np.empty(len(distinct), dtype=object)
    out[:] = distinct
    return out, np.fromiter(map(position.__getitem__, texts), np.int64, len(texts))
