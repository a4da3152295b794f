"""Walks up a parent-link forest, answers computed by hand."""

from __future__ import annotations

import numpy as np

from stepscope.model import tree

#        0           5
#       / \          |
#      1   4         6
#     / \            |
#    2   3           7
PARENT = np.array([-1, 0, 1, 1, 0, -1, 5, 6], np.int32)


def test_nearest_marked_ancestor() -> None:
    marked = np.array([True, False, False, True, False, False, True, False])
    rows = np.arange(8, dtype=np.int64)
    assert tree.nearest_marked_ancestor(PARENT, rows, marked).tolist() == [-1, 0, 0, 0, 0, -1, -1, 6]
    assert tree.nearest_marked_ancestor(PARENT, rows, marked, include_self=True).tolist() == [0, 0, 0, 3, 0, -1, 6, 6]
    some = np.array([7, 2], np.int64)
    assert tree.nearest_marked_ancestor(PARENT, some, marked).tolist() == [6, 0]
    assert tree.nearest_marked_ancestor(PARENT, some, np.zeros(8, bool)).tolist() == [-1, -1]


def test_depths() -> None:
    rows = np.arange(8, dtype=np.int64)
    assert tree.depths(PARENT, rows).tolist() == [0, 1, 2, 2, 1, 0, 1, 2]
    assert tree.depths(PARENT, np.array([3, 7, 0], np.int64)).tolist() == [2, 2, 0]
    assert tree.depths(PARENT, np.zeros(0, np.int64)).tolist() == []


def test_highest_ancestor_while_stops_below_the_first_that_fails() -> None:
    """0 ← 1 ← 2 ← 3 and 0 ← 4: from 3, climbing while ok (1, 2 are; 0 is not) ends at 1; from 4 its
    parent 0 is not ok: -1; from 2, its parent 1 is ok and 0 is not: 1; a root has no parent: -1."""
    from stepscope.model.tree import highest_ancestor_while

    parent = np.array([-1, 0, 1, 2, 0])
    ok = np.array([False, True, True, True, True])
    got = highest_ancestor_while(parent, np.array([3, 4, 2, 0], np.int64), ok)
    assert got.tolist() == [1, -1, 1, -1]
    assert highest_ancestor_while(parent, np.array([3], np.int64), np.ones(5, bool)).tolist() == [0]
