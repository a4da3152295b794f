"""``derive.nest``: parent, depth and self time of host events, against a plain stack walk, and the
count of events that overlap the previous one without nesting in it."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.model import derive
from stepscope.model.diagnostics import DiagnosticsBuilder
from stepscope.model.schema import EVENT_COLUMNS, EventKind
from stepscope.model.table import Table


def _events(track: list[int], ts: list[int], dur: list[int], kind: list[int] | None = None) -> Table:
    kinds = kind if kind is not None else [int(EventKind.CPU_OP)] * len(ts)
    ev = Table(EVENT_COLUMNS, {"track": np.array(track, np.int32), "ts_ns": np.array(ts, np.int64),
                               "dur_ns": np.array(dur, np.int64), "kind": np.array(kinds, np.int8)})
    return ev.take(derive.sort_order(ev))


def _reference(ev: Table) -> tuple[list[int], list[int], list[int]]:
    """Per row: the nearest earlier row on the same track that ends no earlier (a stack walk)."""
    parent, depth = [], []
    for i in range(len(ev)):
        j = i - 1
        while j >= 0 and ev["track"][j] == ev["track"][i]:
            if ev["ts_ns"][j] + ev["dur_ns"][j] >= ev["ts_ns"][i] + ev["dur_ns"][i]:
                break
            j = parent[j]  # the previous row does not contain i: neither does anything it contains
        found = j if j >= 0 and ev["track"][j] == ev["track"][i] else -1
        parent.append(found)
        depth.append(0 if found < 0 else depth[found] + 1)
    child = [0] * len(ev)
    for i, p in enumerate(parent):
        if p >= 0:
            child[p] += int(ev["dur_ns"][i])
    self_ns = [max(int(ev["dur_ns"][i]) - child[i], 0) for i in range(len(ev))]
    return parent, depth, self_ns


def test_a_hand_built_tree_on_two_tracks() -> None:
    # track 0: A [0, 100) holds B [10, 40) (which holds C [12, 20)) and D [50, 60); E [200, 210) a root
    # track 1: F [5, 50) holds G [6, 7)
    ev = _events([0, 0, 0, 0, 0, 1, 1], [0, 10, 12, 50, 200, 5, 6], [100, 30, 8, 10, 10, 45, 1])
    parent, depth, self_ns = derive.nest(ev, DiagnosticsBuilder())
    assert parent.tolist() == [-1, 0, 1, 0, -1, -1, 5]
    assert depth.tolist() == [0, 1, 2, 1, 0, 0, 1]
    assert self_ns.tolist() == [60, 22, 8, 10, 10, 44, 1]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_random_nested_intervals_match_a_stack_walk(seed: int) -> None:
    rng = np.random.default_rng(seed)
    track, ts, dur = [], [], []
    for t in range(3):
        stack_end, now = [], 0
        for _ in range(300):  # open, close and sibling moves make deep trees and long sibling runs
            now += int(rng.integers(0, 3))
            while stack_end and stack_end[-1] <= now:
                stack_end.pop()
            limit = stack_end[-1] if stack_end else now + 500
            length = int(rng.integers(0, max(1, limit - now) + 1))
            track.append(t), ts.append(now), dur.append(length)
            stack_end.append(now + length)
    ev = _events(track, ts, dur)
    parent, depth, self_ns = derive.nest(ev, DiagnosticsBuilder())
    ref_parent, ref_depth, ref_self = _reference(ev)
    assert parent.tolist() == ref_parent
    assert depth.tolist() == ref_depth
    assert self_ns.tolist() == ref_self


def test_partial_overlaps_are_counted_apart_for_python_frames() -> None:
    py, op = int(EventKind.PYTHON_FUNCTION), int(EventKind.CPU_OP)
    # track 0: op [0, 10) then op [5, 20) overlaps it; track 1: py [0, 10) then op [5, 20)
    ev = _events([0, 0, 1, 1], [0, 5, 0, 5], [10, 15, 10, 15], [op, op, py, op])
    diags = DiagnosticsBuilder()
    derive.nest(ev, diags)
    counts = {d.name: d.count for d in diags.freeze()}
    assert counts == {"events-overlap-on-thread": 1, "python-frame-overlaps-range": 1}


def test_depths_count_ancestors_from_the_parents_alone() -> None:
    parent = np.array([-1, 0, 1, 0, -1, 4, 2], np.int32)
    assert derive.nest_depths(parent).tolist() == [0, 1, 2, 1, 0, 1, 3]
    assert derive.nest_depths(np.zeros(0, np.int32)).tolist() == []
