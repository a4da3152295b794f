"""``unique_texts``: what ``np.unique(values.astype(str), return_inverse=True)`` gives, without a
fixed-width unicode array as wide as the longest text in every row."""

from __future__ import annotations

import tracemalloc

import numpy as np

from stepscope.model.uniq import unique_texts
from stepscope.server.standalone import _interned


def test_same_as_numpy_on_ordinary_texts() -> None:
    values = np.array(["b", "a", "", "b", "ç", None, "a"], dtype=object)
    distinct, inverse = unique_texts(values)
    want_distinct, want_inverse = np.unique(values.astype(str), return_inverse=True)
    assert distinct.tolist() == want_distinct.tolist() and inverse.tolist() == want_inverse.reshape(-1).tolist()
    assert distinct.dtype == object and inverse.dtype == np.int64


def _peak_mib(fn: object) -> float:
    tracemalloc.start()
    try:
        fn()  # type: ignore[operator]
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def test_one_long_text_costs_its_own_size_not_every_rows() -> None:
    """200 rows, one of a million characters: numpy's way takes 200 x 4 MB (800 MB)."""
    values = np.array(["x" * 1_000_000] + [f"op{i}" for i in range(199)], dtype=object)
    assert _peak_mib(lambda: unique_texts(values)) < 20


def test_a_timeline_windows_names_interned_in_bounded_memory() -> None:
    """The standalone report's window names (found by the fuzz harness: a 3 M-character name made
    5.7 GiB); the same strings and index as before."""
    names = ["x" * 1_000_000] + [f"op{i % 7}" for i in range(199)] + [None]
    assert _peak_mib(lambda: _interned(names)) < 20
    got = _interned(names)
    assert got["strings"] == sorted({"x" * 1_000_000, "", *(f"op{i}" for i in range(7))})
    assert [got["strings"][i] if i >= 0 else None for i in got["index"]] == names
