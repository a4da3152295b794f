"""``any_of``: the mask np.isin gives, for the small code lists phases and kinds use."""

from __future__ import annotations

import numpy as np

from stepscope.model.masks import any_of
from stepscope.model.schema import EventKind


def test_any_of_equals_isin_on_phase_codes_and_kinds() -> None:
    rng = np.random.default_rng(7)
    ph = rng.choice(np.array([0, 67, 77, 88, 102, 105, 115, 600], np.int32), 5000)
    for codes in ([ord("s"), ord("f"), ord("t")], [ord("X")], [], [600, 0]):
        assert (any_of(ph, codes) == np.isin(ph, codes)).all(), codes
    kind = rng.integers(-1, 14, 5000).astype(np.int8)
    kinds = [EventKind.RUNTIME, EventKind.DRIVER]
    assert (any_of(kind, kinds) == np.isin(kind, [int(k) for k in kinds])).all()


def test_any_of_by_hand() -> None:
    got = any_of(np.array([88, 105, 73, 88, 300], np.int16), [ord("i"), ord("I"), 1000])
    assert got.tolist() == [False, True, True, False, False]
    assert any_of(np.array([1, 2, 3], np.int8), [300]).tolist() == [False, False, False]  # beyond int8: no match
    assert any_of(np.zeros((2, 2), np.int8), [0]).shape == (2, 2)
