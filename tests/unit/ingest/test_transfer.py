"""``pack`` / ``unpack``: a chunk's tables cross to the main process as one buffer and come back equal,
as writeable views (string ids are remapped in place there)."""

from __future__ import annotations

import pickle

import numpy as np

from stepscope.ingest.assemble import FileTables, remap_strings
from stepscope.ingest.transfer import pack, unpack


def _tables() -> FileTables:
    events = {"name": np.array([2, 0, 1], np.int16), "ts_ns": np.array([5, 6, 7], np.int64),
              "flops": np.array([1.5, np.nan, 2.0]), "kind": np.array([1, 2, 3], np.int8),
              "_key": np.array([(1 << 32) | 0, (1 << 32) | 0, (1 << 32) | 2], np.int64)}
    tracks = {"_key": np.array([(1 << 32) | 0, (1 << 32) | 2], np.int64), "_host": np.array([True, False]),
              "_device": np.array([-1, 3], np.int64)}
    counters = {"ts_ns": np.zeros(0, np.int64), "name": np.zeros(0, np.int32)}
    return FileTables(events, tracks, {}, counters, {}, {(1, 0): 2})


def test_round_trip_through_pickle_keeps_every_column_and_type() -> None:
    ft = _tables()
    back = unpack(pickle.loads(pickle.dumps(pack(ft), 4)))
    for table in ("events", "tracks", "memory", "counters", "flows"):
        want, got = getattr(ft, table), getattr(back, table)
        assert list(got) == list(want)
        for k in want:
            assert got[k].dtype == want[k].dtype
            np.testing.assert_array_equal(got[k], want[k])
    assert back.thread_names == {(1, 0): 2}


def test_columns_are_aligned_writeable_views_of_one_buffer() -> None:
    packed = pack(_tables())
    back = unpack(packed)
    for col in (*back.events.values(), *back.tracks.values()):
        assert col.base is not None and col.flags.writeable and col.flags.aligned
    back.events["kind"][0] = 9  # written through to the buffer, neighbours untouched
    assert unpack(packed).events["kind"].tolist() == [9, 2, 3]
    assert unpack(packed).events["ts_ns"].tolist() == [5, 6, 7]


def test_remap_after_unpack_rewrites_ids_in_place() -> None:
    packed = pack(_tables())
    ids = np.array([10, 11, 12, -1], np.int32)  # local id i -> ids[i]; -1 stays -1
    ft = remap_strings(unpack(packed), ids)
    assert ft.events["name"].tolist() == [12, 10, 11]
    assert ft.events["_key"].tolist() == [(11 << 32) | 10, (11 << 32) | 10, (11 << 32) | 12]
    assert ft.thread_names == {(11, 10): 12}
