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


@pytest.fixture
def merging(monkeypatch: pytest.MonkeyPatch) -> None:
    """The merged searches from a few thousand rows (in use they start at 2^18 needles)."""
    monkeypatch.setattr(intervals, "MERGE_MIN_NEEDLES", 4096)
    monkeypatch.setattr(intervals, "MERGE_MIN_HAY", 1024)


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("seed", range(4))
def test_sorted_searchsorted_merges_like_binary_search(side: str, seed: int, merging: None) -> None:
    rng = np.random.default_rng(seed)
    hay = np.sort(rng.integers(0, 3_000, int(rng.integers(5_000, 20_000))))  # many ties, both ways
    needles = np.sort(rng.integers(-10, 3_010, int(rng.integers(5_000, 20_000))))
    assert len(needles) >= intervals.MERGE_MIN_NEEDLES  # the merging path, not the fallback
    got = intervals.sorted_searchsorted(hay, needles, side)  # type: ignore[arg-type]
    assert np.array_equal(got, np.searchsorted(hay, needles, side=side))  # type: ignore[call-overload]


@pytest.mark.parametrize("seed", range(6))
def test_large_sets_match_a_bitmap(seed: int, merging: None) -> None:
    """Thousands of intervals: the merged searches and the piece spreading, pieces of one interval of
    ``a`` meeting many of ``b`` and the other way round."""
    rng = np.random.default_rng(100 + seed)
    span = 120_000
    a = _normalised(rng, int(rng.integers(4_000, 30_000)), span)
    wide = rng.integers(0, span, 600)
    b = intervals.union(wide, wide + rng.integers(0, 400, 600)) if seed % 2 else _normalised(rng, 20_000, span)
    n = span + 500
    for x, y in ((a, b), (b, a)):
        both, rest = intervals.intersect(x, y), intervals.subtract(x, y)
        assert np.array_equal(_bitmap(both, n), _bitmap(x, n) & _bitmap(y, n))
        assert np.array_equal(_bitmap(rest, n), _bitmap(x, n) & ~_bitmap(y, n))
        assert _is_normalised(both) and _is_normalised(rest)


def _union_lengths_by_bitmap(g: np.ndarray, s: np.ndarray, e: np.ndarray, groups: int, n: int) -> list[int]:
    out = []
    for k in range(groups):
        m = g == k
        out.append(int(_bitmap(intervals.union(s[m], e[m]), n).sum()))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_union_length_by_group_matches_a_bitmap(seed: int) -> None:
    rng = np.random.default_rng(seed)
    groups, n = int(rng.integers(1, 12)), 5_000
    g = rng.integers(0, groups, 3_000)
    s = rng.integers(0, 4_000, 3_000)
    e = s + rng.integers(-5, 300, 3_000)  # some empty and inverted intervals: they cover nothing
    want = _union_lengths_by_bitmap(g, s, e, groups, n)
    assert intervals.union_length_by_group(g, s, e, groups).tolist() == want
    safe = np.bincount(g, weights=intervals._uncovered_by_rank(g, s, e), minlength=groups)  # overflow-safe path
    assert safe.astype(np.int64).tolist() == want


def test_union_length_by_group_far_apart_times_take_the_safe_path() -> None:
    g = np.array([0, 1, 1, 0], np.int64)
    s = np.array([0, 2**61, 2**61 + 5, 10], np.int64)  # group × span would overflow int64
    e = np.array([20, 2**61 + 10, 2**61 + 20, 15], np.int64)
    assert intervals.union_length_by_group(g, s, e, 3).tolist() == [20, 20, 0]


def test_uncovered_by_group_is_each_intervals_new_part_in_input_order() -> None:
    """Group 0: [10, 30) first, [0, 20) starts earlier so it comes first (20 new), then [10, 30) adds
    10; [25, 26) is inside. Group 1: [5, 8) alone. Group 0's union is 30 = 20 + 10 + 0."""
    g = np.array([0, 1, 0, 0], np.int64)
    s = np.array([10, 5, 0, 25], np.int64)
    e = np.array([30, 8, 20, 26], np.int64)
    assert intervals.uncovered_by_group(g, s, e).tolist() == [10, 3, 20, 0]
    assert intervals._uncovered_by_rank(g, s, e).tolist() == [10, 3, 20, 0]


@pytest.mark.parametrize("sorted_windows", [True, False])
def test_covered_in_many_windows_matches_a_bitmap(sorted_windows: bool, merging: None) -> None:
    rng = np.random.default_rng(11)
    span = 60_000
    iv = _normalised(rng, 8_000, span)
    ws = rng.integers(-50, span, 6_000)
    ws = np.sort(ws) if sorted_windows else ws  # sorted: the merged searches; else binary ones
    we = ws + rng.integers(0, 90, len(ws))
    cum = np.concatenate([[0], np.cumsum(_bitmap(iv, span + 200))])
    want = cum[np.clip(we, 0, None)] - cum[np.clip(ws, 0, None)]
    assert np.array_equal(intervals.covered_in_windows(iv, ws, we), want)
