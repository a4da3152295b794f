"""Events decode into one struct per phase, each with the args stepscope reads from that phase;
an event of a phase outside the format (or of none) is kept with every arg; wrong types are dropped."""

from __future__ import annotations

import msgspec

from stepscope.ingest.readers.kineto_decode import FAST_DECODER, PRECISE_DECODER, decode_events

CHUNK = (b'[{"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 7, "ts": 10, "dur": 2,'
         b' "args": {"External id": 5, "correlation": 9, "grid": [1, 2, 3], "Bytes": 64}},'
         b' {"ph": "i", "name": "[memory]", "ts": 11, "args": {"Bytes": 512, "Device Id": 0, "Addr": 77}},'
         b' {"ph": "C", "name": "util", "ts": 12, "args": {"value": 0.5}},'
         b' {"ph": "M", "name": "thread_name", "args": {"name": "main"}},'
         b' {"ph": "B", "name": "b", "ts": 13, "args": {"anything": [1, {"x": 2}]}}]')


def test_each_phase_reads_its_own_args() -> None:
    x, mem, ctr, meta, begin = FAST_DECODER.decode(CHUNK)
    assert [e.ph for e in (x, mem, ctr, meta, begin)] == ["X", "i", "C", "M", "B"]
    assert (x.args.ext_id, x.args.correlation, x.args.grid) == (5, 9, (1, 2, 3))  # a tuple: hashable
    assert not hasattr(x.args, "mem_bytes")  # "Bytes" of a kernel is not a memory sample's size
    assert (mem.args.mem_bytes, mem.args.dev_id, mem.args.addr, mem.args.total_alloc) == (512, 0, 77, -1)
    assert ctr.args.value == 0.5 and meta.args.label == "main"
    assert isinstance(begin.args, msgspec.Raw)  # no phase of this kind is read: left undecoded


def test_precise_decoder_keeps_fractional_ts_as_text() -> None:
    (x,) = PRECISE_DECODER.decode(b'[{"ph": "X", "ts": 1712195495519689.047, "dur": 1}]')
    assert x.ts == "1712195495519689.047" and x.ph == "X"


def test_unknown_or_missing_phase_is_kept_and_wrong_types_dropped() -> None:
    evs, dropped = decode_events(b'[{"ph": "Z", "name": "odd", "args": {"External id": 3}}, {"name": "none"},'
                                 b' {"ph": "X", "name": "bad", "ts": [1]}, {"ph": "X", "name": "ok", "ts": 1}]',
                                 precise=False)
    assert [(e.ph, e.name) for e in evs] == [("Z", "odd"), ("", "none"), ("X", "ok")]
    assert evs[0].args.ext_id == 3
    assert [d[0] for d in dropped] == ["event-wrong-type"] and "bad" in dropped[0][1]
