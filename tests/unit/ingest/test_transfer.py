"""``pack`` / ``unpack``: a chunk's tables cross to the main process as one buffer and come back equal,
as writeable views (string ids are remapped in place there)."""

from __future__ import annotations

import multiprocessing
import pickle

import numpy as np
import pytest

from stepscope.ingest.assemble import FileTables, remap_strings
from stepscope.ingest.transfer import HandoverSlots, PackedTables, pack, unpack


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


def test_packed_into_a_handover_slot_and_collected_round_trip() -> None:
    slots = HandoverSlots(2, 1 << 12)
    slot = slots.acquire()
    packed = pack(_tables(), slots, slot)
    assert packed.slot == slot and len(packed.blob) == 0  # nothing but the layout to pickle
    assert len(pickle.dumps(packed, 4)) < 1000
    with pytest.raises(ValueError, match="collect"):
        unpack(packed)
    back = unpack(slots.collect(packed))
    slots.view(slot)[:] = 0  # the slot is free for the next job: the collected bytes are a copy
    slots.release(slot)
    np.testing.assert_array_equal(back.events["ts_ns"], [5, 6, 7])
    assert back.events["_key"].tolist() == _tables().events["_key"].tolist()
    assert back.tracks["_device"].tolist() == [-1, 3] and back.events["ts_ns"].flags.writeable


def test_tables_bigger_than_a_slot_or_without_one_travel_in_their_own_buffer() -> None:
    slots = HandoverSlots(1, 64)
    for packed in (pack(_tables(), slots, slots.acquire()), pack(_tables(), slots, -1), pack(_tables())):
        assert packed.slot == -1 and len(packed.blob) > 64
        assert slots.collect(packed) is packed
        assert unpack(packed).events["name"].tolist() == [2, 0, 1]


def test_slots_are_handed_out_once_until_released() -> None:
    slots = HandoverSlots(2, 16)
    got = {slots.acquire(), slots.acquire()}
    assert got == {0, 1} and slots.acquire() == -1  # all taken: the job goes by pipe
    slots.release(1)
    slots.release(-1)  # a job that had no slot gives nothing back
    assert slots.acquire() == 1 and slots.acquire() == -1


def test_a_forked_worker_packs_into_the_slot_the_parent_reads() -> None:
    slots = HandoverSlots(1, 1 << 12)
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=_pack_in_child, args=(slots,))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    layout = pack(_tables()).layout  # the same tables pack to the same layout
    back = unpack(slots.collect(PackedTables(np.zeros(0, np.uint8), layout, {}, 0, slots.slot_bytes)))
    assert back.events["ts_ns"].tolist() == [5, 6, 7] and back.events["name"].tolist() == [2, 0, 1]


def _pack_in_child(slots: HandoverSlots) -> None:
    pack(_tables(), slots, 0)
