"""``derive.sort_order``: rows by (track, ts, longer first), packed-key fast path and fallback alike."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.model import derive
from stepscope.model.schema import EVENT_COLUMNS
from stepscope.model.table import Table


def _events(track: list[int], ts: list[int], dur: list[int]) -> Table:
    return Table(EVENT_COLUMNS, {"track": np.array(track, np.int32), "ts_ns": np.array(ts, np.int64),
                                 "dur_ns": np.array(dur, np.int64)})


def _reference(ev: Table) -> list[int]:
    rows = range(len(ev))
    return sorted(rows, key=lambda i: (int(ev["track"][i]), int(ev["ts_ns"][i]), -int(ev["dur_ns"][i]), i))


def test_ties_put_the_longer_event_first_and_keep_row_order_otherwise() -> None:
    # track 1: three events start at 100 (durations 5, 50, 5), one at 90; track 0: two at 100 (10, 20)
    ev = _events([1, 1, 0, 1, 0, 1], [100, 100, 100, 100, 100, 90], [5, 50, 10, 5, 20, 1])
    assert derive.sort_order(ev).tolist() == [4, 2, 5, 1, 0, 3]
    assert derive.sort_order(ev).tolist() == _reference(ev)


def test_times_too_far_apart_to_pack_use_the_general_sort() -> None:
    ev = _events([2, 0, 2, 0], [1 << 62, 5, 7, 5], [1, 3, 1, 9])
    assert derive._track_time_key(ev["track"], ev["ts_ns"]) is None
    assert derive.sort_order(ev).tolist() == [3, 1, 2, 0]


def test_negative_track_uses_the_general_sort() -> None:
    ev = _events([-1, 0, -1], [3, 1, 2], [1, 1, 1])
    assert derive._track_time_key(ev["track"], ev["ts_ns"]) is None
    assert derive.sort_order(ev).tolist() == [2, 0, 1]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_tables_match_a_plain_python_sort(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 400
    ev = _events(rng.integers(0, 5, n).tolist(), (rng.integers(0, 30, n) * 1000 + 1_700_000_000_000_000_000).tolist(),
                 rng.integers(0, 4, n).tolist())
    assert derive._track_time_key(ev["track"], ev["ts_ns"]) is not None
    assert derive.sort_order(ev).tolist() == _reference(ev)


def test_time_order_is_none_for_rows_already_in_order() -> None:
    """Ties already longer-first and equal (track, ts, dur) rows count as ordered; any step back does not."""
    track = np.array([0, 0, 0, 0, 1, 1], np.int32)
    ts = np.array([5, 5, 5, 9, 1, 2], np.int64)
    dur = np.array([9, 3, 3, 1, 7, 7], np.int64)
    assert derive.time_order(track, ts, dur) is None
    dur_swapped = np.array([3, 9, 3, 1, 7, 7], np.int64)  # the shorter of a tie first: reordered
    assert derive.time_order(track, ts, dur_swapped).tolist() == [1, 0, 2, 3, 4, 5]
    back = np.array([5, 5, 5, 9, 3, 2], np.int64)  # track 1 steps back in time
    assert derive.time_order(track, back, dur).tolist() == [0, 1, 2, 3, 5, 4]


def test_time_order_without_a_packed_key_is_none_only_for_the_identity() -> None:
    track = np.array([0, 0, 1], np.int32)
    ts = np.array([1, 1 << 62, 0], np.int64)  # too far apart to pack
    dur = np.ones(3, np.int64)
    assert derive._track_time_key(track, ts) is None
    assert derive.time_order(track, ts, dur) is None
    assert derive.time_order(track[::-1].copy(), ts, dur).tolist() == [2, 1, 0]


def test_empty_table() -> None:
    assert derive.sort_order(_events([], [], [])).tolist() == []


def test_take_fills_absent_columns_anew_and_gathers_the_rest() -> None:
    ev = _events([1, 0, 1], [30, 10, 20], [3, 1, 2])  # every other column is absent (filled)
    out = ev.take(np.array([1, 2, 0]))
    assert out["ts_ns"].tolist() == [10, 20, 30] and out["track"].tolist() == [0, 1, 1]
    assert out["parent"].tolist() == [-1, -1, -1] and out["name"].tolist() == [-1, -1, -1]
    masked = ev.take(np.array([True, False, True]))
    assert len(masked) == 2 and masked["dur_ns"].tolist() == [3, 2] and masked["parent"].tolist() == [-1, -1]
    # a column given later is gathered again, not refilled
    linked = ev.with_columns(parent=np.array([-1, 0, 0], np.int32)).take(np.array([2, 1]))
    assert linked["parent"].tolist() == [0, 0] and linked["depth"].tolist() == [0, 0]


def test_absent_columns_read_as_the_absent_value_and_cannot_be_written() -> None:
    ev = _events([0, 0], [1, 2], [1, 1])
    parent = ev["parent"]
    assert parent.tolist() == [-1, -1] and parent.dtype == EVENT_COLUMNS["parent"][0]
    assert parent.strides == (0,)  # one value, however many rows: no memory per row
    with pytest.raises(ValueError):
        parent[0] = 5  # a table is never changed in place
