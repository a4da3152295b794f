"""Vectorised group-by statistics over a duration column (calls, total, mean, median, min, max, std)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class GroupStats:
    """Per-group duration statistics, ns; index = group id of :func:`duration_stats`' ``inverse``."""

    calls: I64
    total_ns: I64
    mean_ns: F64
    median_ns: F64
    min_ns: I64
    max_ns: I64
    std_ns: F64


def duration_stats(inverse: npt.NDArray[np.integer], dur_ns: I64, groups: int) -> GroupStats:
    """Statistics of ``dur_ns`` per group (``inverse`` = group of each row, 0..groups-1)."""
    inv = np.asarray(inverse, np.int64)
    calls = np.bincount(inv, minlength=groups).astype(np.int64)
    total = np.bincount(inv, weights=dur_ns, minlength=groups)
    safe = np.maximum(calls, 1)
    mean = total / safe
    sq = np.bincount(inv, weights=dur_ns.astype(np.float64) ** 2, minlength=groups)
    std = np.sqrt(np.maximum(sq / safe - mean**2, 0.0))
    order = np.lexsort((dur_ns, inv))
    sorted_dur = dur_ns[order]
    first = np.concatenate([[0], np.cumsum(calls)[:-1]])
    lo = first + (safe - 1) // 2
    hi = first + safe // 2
    n = len(sorted_dur)
    median = np.where(calls > 0, (sorted_dur[np.minimum(lo, n - 1)] + sorted_dur[np.minimum(hi, n - 1)]) / 2.0,
                      0.0) if n else np.zeros(groups)
    mn = np.where(calls > 0, sorted_dur[np.minimum(first, max(n - 1, 0))], 0) if n else np.zeros(groups, np.int64)
    last = first + safe - 1
    mx = np.where(calls > 0, sorted_dur[np.minimum(last, max(n - 1, 0))], 0) if n else np.zeros(groups, np.int64)
    return GroupStats(calls, np.rint(total).astype(np.int64), mean, median, np.asarray(mn, np.int64),
                      np.asarray(mx, np.int64), std)


def largest_first(total: npt.ArrayLike, names: npt.ArrayLike | None = None) -> I64:
    """Order of groups by descending total; equal totals by ``names`` (texts: the same order however
    the file ordered its events, which decides the string ids), else stable."""
    neg = -np.asarray(total, np.float64)
    if names is None or len(neg) < 2:
        return np.argsort(neg, kind="stable").astype(np.int64)
    _, text_rank = np.unique(np.asarray(names, object), return_inverse=True)
    return np.lexsort((np.asarray(text_rank).reshape(-1), neg)).astype(np.int64)


def group_keys(*cols: npt.ArrayLike) -> tuple[list[I64], I64]:
    """Group rows by several integer key columns (a fast ``np.unique(axis=0)``).

    Returns the unique key columns (sorted lexicographically, first column major) and each row's group.
    Where the columns' value ranges multiply to a small number (string ids, codes), each row's
    combined key indexes a table of that size: counted, never sorted."""
    arrs = [np.asarray(c, np.int64) for c in cols]
    n = len(arrs[0]) if arrs else 0
    if n == 0:
        return [a[:0] for a in arrs], np.zeros(0, np.int64)
    lows = [int(a.min()) for a in arrs]
    spans = [int(a.max()) - lo + 1 for a, lo in zip(arrs, lows)]
    size = 1
    for span in spans:
        size *= span
    if size > 2 * n + (1 << 16):
        return _group_by_sorting(arrs)
    key = np.zeros(n, np.int64)
    for a, lo, span in zip(arrs, lows, spans):  # first column major: the key orders rows as lexsort does
        key *= span
        key += a - lo
    present = np.zeros(size, bool)
    present[key] = True
    uniq = np.flatnonzero(present)
    slot = np.zeros(size, np.int64)
    slot[uniq] = np.arange(len(uniq))
    out: list[I64] = []
    rest = uniq.astype(np.int64)
    for lo, span in zip(lows[::-1], spans[::-1]):
        out.append(rest % span + lo)
        rest //= span
    return out[::-1], slot[key]


def _group_by_sorting(arrs: list[I64]) -> tuple[list[I64], I64]:
    n = len(arrs[0])
    order = np.lexsort(arrs[::-1])
    new = np.zeros(n, bool)
    new[0] = True
    for a in arrs:
        s = a[order]
        new[1:] |= s[1:] != s[:-1]
    gid_sorted = np.cumsum(new) - 1
    inv = np.empty(n, np.int64)
    inv[order] = gid_sorted
    first = order[new]
    return [a[first] for a in arrs], inv
