"""Interval algebra against a brute-force bitmap of covered nanoseconds."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.analysis import intervals


def _bitmap(iv: intervals.Intervals, n: int) -> np.ndarray:
    out = np.zeros(n, bool)
    for s, e in zip(iv[0].tolist(), iv[1].tolist(), strict=True):
        out[s:e] = True
    return out


def _normalised(rng: np.random.Generator, n: int, span: int) -> intervals.Intervals:
    s = rng.integers(0, span, n)
    return intervals.union(s, s + rng.integers(0, 8, n))


def _is_normalised(iv: intervals.Intervals) -> bool:
    s, e = iv
    return bool(np.all(e > s) and np.all(s[1:] > e[:-1]))


def test_intersect_by_hand() -> None:
    a = (np.array([0, 10, 20], np.int64), np.array([5, 15, 30], np.int64))
    b = (np.array([3, 30], np.int64), np.array([25, 40], np.int64))
    s, e = intervals.intersect(a, b)
    assert s.tolist() == [3, 10, 20] and e.tolist() == [5, 15, 25]
    touching = intervals.intersect((np.array([0]), np.array([5])), (np.array([5]), np.array([9])))
    assert len(touching[0]) == 0  # touching is not overlap


@pytest.mark.parametrize("seed", range(40))
def test_intersect_and_subtract_match_a_bitmap(seed: int) -> None:
    rng = np.random.default_rng(seed)
    span = 200
    a = _normalised(rng, int(rng.integers(0, 40)), span)
    b = _normalised(rng, int(rng.integers(0, 40)), span)
    both, rest = intervals.intersect(a, b), intervals.subtract(a, b)
    n = span + 10
    assert np.array_equal(_bitmap(both, n), _bitmap(a, n) & _bitmap(b, n))
    assert np.array_equal(_bitmap(rest, n), _bitmap(a, n) & ~_bitmap(b, n))
    assert _is_normalised(both) and _is_normalised(rest)
