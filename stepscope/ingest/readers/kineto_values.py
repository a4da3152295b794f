"""Scalar value conversions for decoded Kineto events: µs timestamps to exact int64 ns, durations,
lenient integer / float columns (numbers written as text are parsed, junk reads as absent).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
US_LIMIT = 9e15  # |µs| from here on: the ns value would overflow int64


def ts_to_ns(ts: Sequence[Any]) -> tuple[I64, npt.NDArray[np.bool_], float]:
    """µs timestamps (int, float or decimal text) → int64 ns, a validity mask, and max |fractional ts|.

    Anything else (a list, an object, a bool, an integer whose ns overflow int64) is invalid."""
    try:
        arr = np.array(ts)
    except (ValueError, TypeError, OverflowError):  # lists of unequal length, ...
        return _mixed_us_to_ns(ts)
    if arr.ndim != 1 or arr.dtype.kind not in "iuf":  # lists of one length make a 2-D array
        return _mixed_us_to_ns(ts)
    if arr.dtype.kind in "iu":
        if len(arr) and (int(arr.min()) <= -US_LIMIT or int(arr.max()) >= US_LIMIT):
            return _mixed_us_to_ns(ts)
        return arr.astype(np.int64) * 1000, np.ones(len(arr), bool), 0.0
    ok = np.isfinite(arr) & (np.abs(arr) < US_LIMIT)  # beyond this the ns value overflows int64
    return _float_us_to_ns(np.where(ok, arr, 0.0)), ok, _max_fractional(arr)


def _float_us_to_ns(arr: npt.NDArray[np.float64]) -> I64:
    whole = np.floor(arr)
    return whole.astype(np.int64) * 1000 + np.round((arr - whole) * 1000).astype(np.int64)


def _max_fractional(arr: npt.NDArray[np.float64]) -> float:
    """Largest |ts| written as a float: beyond ~2e12 µs float64 can no longer hold every ns digit."""
    fin = arr[np.isfinite(arr)]
    return float(np.abs(fin).max()) if len(fin) else 0.0


def _mixed_us_to_ns(ts: Sequence[Any]) -> tuple[I64, npt.NDArray[np.bool_], float]:
    """Rare path: ints, floats, decimal strings and missing values mixed in one chunk."""
    n = len(ts)
    out = np.zeros(n, np.int64)
    ok = np.zeros(n, bool)
    is_str = np.fromiter((type(x) is str for x in ts), bool, n)
    is_num = np.fromiter((type(x) in (int, float) for x in ts), bool, n)
    if is_num.any():
        nums = np.array([_to_float(x) for x, m in zip(ts, is_num) if m], dtype=np.float64)
        good = np.isfinite(nums) & (np.abs(nums) < US_LIMIT)
        out[is_num] = _float_us_to_ns(np.where(good, nums, 0.0))
        ok[is_num] = good
    if is_str.any():
        ns, good = decimal_us_to_ns([x for x, m in zip(ts, is_str) if m])
        out[is_str] = ns
        ok[np.flatnonzero(is_str)[good]] = True
    return out, ok, 0.0


def decimal_us_to_ns(texts: list[str]) -> tuple[I64, npt.NDArray[np.bool_]]:
    """Exact ns from decimal µs text ("1712195495519689.047"); unparsable entries → invalid."""
    arr = np.char.strip(np.array(texts, dtype=str))
    parts = np.char.partition(arr, ".")
    whole, frac = parts[:, 0], np.char.ljust(parts[:, 2], 3, "0").astype("<U3")
    good = (np.char.isdigit(np.char.lstrip(whole, "-")) & (np.char.isdigit(frac) | (frac == "000"))
            & (np.char.str_len(whole) <= 16))  # more digits would overflow int64 ns
    w = np.where(good, whole, "0").astype(np.int64)
    f = np.where(good, frac, "0").astype(np.int64)
    neg = np.char.startswith(whole, "-")
    ns = w * 1000 + np.where(neg, -f, f)
    bad = ~good
    if bad.any():  # exponent notation or junk: fall back to float parsing
        for i in np.flatnonzero(bad):
            try:
                us = float(arr[i])
            except ValueError:
                good[i] = False
                continue
            good[i] = bool(np.isfinite(us) and abs(us) < US_LIMIT)
            ns[i] = round(us * 1000) if good[i] else 0
    return ns, good


def ints_of(values: Iterator[Any], n: int, again: Callable[[], list[Any]]) -> I64:
    """Integer column from an iterator of ``n`` values, converted in C; on a value that is not an
    integer the column is read again (``again()``) through the lenient :func:`ints`."""
    try:
        return np.fromiter(values, np.int64, n)
    except (OverflowError, ValueError, TypeError):
        return ints(again())


def floats_of(values: Iterator[Any], n: int, again: Callable[[], list[Any]]) -> npt.NDArray[np.float64]:
    """Float column from an iterator of ``n`` values (see :func:`ints_of`)."""
    try:
        return np.fromiter(values, np.float64, n)
    except (OverflowError, ValueError, TypeError):
        return floats(again())


def ints(col: Sequence[Any]) -> I64:
    """Integer column; text values that hold an integer are parsed, anything else becomes -1."""
    if col.count(-1) == len(col):
        return np.full(len(col), -1, np.int64)
    try:
        return np.array(col, dtype=np.int64)
    except (OverflowError, ValueError, TypeError):
        return np.array([_to_int(x) for x in col], np.int64)


def _to_int(x: Any) -> int:
    if isinstance(x, int):
        return x if abs(x) < 2**63 else -1
    if isinstance(x, str):
        try:
            return int(x.strip())
        except ValueError:
            return -1
    return -1


def floats(col: Sequence[Any]) -> npt.NDArray[np.float64]:
    first = col[0] if col else None
    if type(first) is float and first != first and sum(1 for x in col if x is first) == len(col):
        return np.full(len(col), np.nan)
    try:
        return np.array(col, dtype=np.float64)
    except (ValueError, TypeError, OverflowError):
        return np.array([_to_float(x) for x in col], np.float64)


def _to_float(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError, OverflowError):
        return float("nan")


def dur_ns_of(dur: Iterator[float], n: int) -> I64:
    """µs durations → ns; non-finite values become -1 µs (reported as missing), huge ones are capped
    far above the 24 h limit so that they are reported and dropped as absurd."""
    us = np.fromiter(dur, np.float64, n)
    us = np.where(np.isfinite(us), np.clip(us, -9e12, 9e12), -1.0)
    return np.round(us * 1000).astype(np.int64)


def flow_ids(fid: Sequence[Any]) -> I64:
    """Flow ids; anything but an integer (absent, text) reads as -1."""
    n = len(fid)
    if fid.count(None) == n:
        return np.full(n, -1, np.int64)
    if set(map(type, fid)) <= {int, type(None)}:
        try:  # None → -1, an int → itself, all in C
            return np.fromiter(map(_NONE_AS_MINUS_ONE.get, fid, fid), np.int64, n)
        except OverflowError:
            pass
    return np.array([x if type(x) is int and abs(x) < 2**63 else -1 for x in fid], dtype=np.int64)


_NONE_AS_MINUS_ONE = {None: -1}
