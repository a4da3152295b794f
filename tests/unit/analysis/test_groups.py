"""``group_keys``: ``np.unique(axis=0, return_inverse=True)`` over key columns, by counting where
the columns' ranges are small and by sorting otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.analysis._groups import _group_by_sorting, group_keys


def test_group_keys_by_hand() -> None:
    (names, shapes), inv = group_keys(np.array([7, 3, 7, 3, 7]), np.array([-1, 2, -1, 0, 4]))
    assert names.tolist() == [3, 3, 7, 7] and shapes.tolist() == [0, 2, -1, 4]  # first column major
    assert inv.tolist() == [2, 1, 2, 0, 3]


@pytest.mark.parametrize(("seed", "width", "high"), [(1, 1, 50), (2, 2, 300), (3, 3, 40), (4, 2, 10**9), (5, 4, 9)])
def test_group_keys_match_numpy(seed: int, width: int, high: int) -> None:
    rng = np.random.default_rng(seed)
    cols = [rng.integers(-3, high, 4_000) for _ in range(width)]  # small ranges count, huge ones sort
    want_rows, want_inv = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
    got, inv = group_keys(*cols)
    assert np.array_equal(np.stack(got, axis=1), want_rows)
    assert np.array_equal(inv, np.asarray(want_inv).reshape(-1)) and inv.dtype == np.int64
    both = _group_by_sorting([np.asarray(c, np.int64) for c in cols])
    assert np.array_equal(both[1], inv) and all(np.array_equal(a, b) for a, b in zip(both[0], got, strict=True))


def test_group_keys_empty() -> None:
    (a, b), inv = group_keys(np.zeros(0, np.int32), np.zeros(0, np.int64))
    assert len(a) == len(b) == len(inv) == 0
