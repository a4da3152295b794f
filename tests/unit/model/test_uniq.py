"""``unique``: the same answer as ``np.unique`` for every dtype, by sorting for integer columns."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.model.uniq import stable_order, unique, unique_rows


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint16, np.uint64])
def test_integer_columns_match_numpy(dtype: type[np.generic]) -> None:
    values = np.array([5, 3, 5, 0, 9, 3, 3, 1], dtype=dtype)
    got = unique(values)
    assert got.tolist() == [0, 1, 3, 5, 9]
    assert got.dtype == np.dtype(dtype)


def test_high_cardinality_keys_match_numpy() -> None:
    rng = np.random.default_rng(7)
    keys = (rng.integers(0, 1 << 20, 200_000).astype(np.int64) << 32) | rng.integers(0, 4, 200_000)
    assert np.array_equal(unique(keys), np.unique(keys))


def test_edges_bool_empty_single_and_2d() -> None:
    assert unique(np.array([True, False, True])).tolist() == [False, True]
    assert unique(np.zeros(0, np.int64)).tolist() == []
    assert unique(np.array([4])).tolist() == [4]
    assert unique(np.array([[3, 1], [1, 2]])).tolist() == [1, 2, 3]  # flattened, as np.unique does
    assert unique([2, 2, -1]).tolist() == [-1, 2]


def test_floats_and_strings_keep_numpy_rules() -> None:
    got = unique(np.array([1.5, np.nan, 0.5, np.nan, 1.5]))
    assert got[:2].tolist() == [0.5, 1.5] and len(got) == 3 and np.isnan(got[2])  # one NaN, last
    assert unique(np.array(["b", "a", "b"])).tolist() == ["a", "b"]


def test_unique_rows_by_hand() -> None:
    rows = np.array([[2, 1], [0, 5], [2, 1], [0, 3], [-1, 7]], np.int32)
    uniq, first, inverse = unique_rows(rows)
    assert uniq.tolist() == [[-1, 7], [0, 3], [0, 5], [2, 1]]  # rows in lexicographic order
    assert first.tolist() == [4, 3, 1, 0]  # the first occurrence of each
    assert inverse.tolist() == [3, 2, 3, 1, 0]


@pytest.mark.parametrize(("seed", "width", "high"), [(1, 3, 5), (2, 4, 40_000), (3, 8, 1 << 30), (4, 1, 3)])
def test_unique_rows_match_numpy(seed: int, width: int, high: int) -> None:
    rng = np.random.default_rng(seed)
    rows = rng.integers(-high, high, (5_000, width)).astype(np.int64 if high > 1 << 20 else np.int32)
    rows[::3] = rows[1::3][: len(rows[::3])]  # plenty of repeats
    want = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    got = unique_rows(rows)
    for w, g in zip(want, got, strict=True):
        assert np.array_equal(np.asarray(w).reshape(g.shape), g)


@pytest.mark.parametrize(("span", "dtype"), [(40, np.int64), (70_000, np.int64), (200, np.int8), (5, np.uint32)])
def test_stable_order_is_a_stable_argsort(span: int, dtype: type[np.generic]) -> None:
    rng = np.random.default_rng(span)
    key = (rng.integers(0, span, 30_000) - (span // 2 if np.dtype(dtype).kind == "i" else 0)).astype(dtype)
    assert np.array_equal(stable_order(key), np.argsort(key, kind="stable"))  # radix (< 2^16 values) or not
    assert stable_order(np.zeros(0, np.int64)).tolist() == []
