"""Decode one chunk of Kineto trace events (a JSON array) into columns.

A chunk is decoded by msgspec into typed structs (unknown keys are skipped in C), then turned
into numpy columns by transposing tuples in C; no per-field Python work per event beyond that.
Events whose values have the wrong types are decoded one by one and dropped with a count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy.typing as npt

NAN = float("nan")


class RawArgs(
    msgspec.Struct,
    gc=False,  # no reference cycles: keep millions of decoded structs out of the cyclic GC
    rename={
        "ext_id": "External id",
        "ext_id_old": "external id",
        "grid": "grid",
        "block": "block",
        "regs": "registers per thread",
        "shmem": "shared memory",
        "blocks_per_sm": "blocks per SM",
        "occupancy": "est. achieved occupancy %",
        "nbytes": "bytes",
        "input_dims": "Input Dims",
        "input_dims_old": "Input dims",
        "input_types": "Input type",
        "call_stack": "Call stack",
        "seq": "Sequence number",
        "fwd_tid": "Fwd thread id",
        "coll_name": "Collective name",
        "in_nelems": "In msg nelems",
        "out_nelems": "Out msg nelems",
        "coll_dtype": "dtype",
        "group_size": "Group size",
        "pg_name": "Process Group Name",
        "pg_desc": "Process Group Description",
        "pg_ranks": "Process Group Ranks",
        "mem_bytes": "Bytes",
        "total_alloc": "Total Allocated",
        "total_reserved": "Total Reserved",
        "dev_type": "Device Type",
        "dev_id": "Device Id",
        "addr": "Addr",
        "label": "name",
        "value": "value",
        "labels": "labels",
        "sort_index": "sort_index",
    },
):
    """The args keys stepscope uses; every other key is skipped by the decoder."""

    ext_id: int | str = -1
    ext_id_old: int | str = -1
    correlation: int | str = -1
    device: int | str = -1
    stream: int | str = -1
    grid: list[int] | str | None = None
    block: list[int] | str | None = None
    regs: int | str = -1
    shmem: int | str = -1
    blocks_per_sm: float | str = NAN
    occupancy: float | str = NAN
    nbytes: int | str = -1
    input_dims: msgspec.Raw = msgspec.Raw()
    input_dims_old: msgspec.Raw = msgspec.Raw()
    input_types: msgspec.Raw = msgspec.Raw()
    call_stack: str | None = None
    seq: int | str = -1
    fwd_tid: int | str = -1
    flops: float | str = NAN
    coll_name: str | None = None
    in_nelems: int | str = -1
    out_nelems: int | str = -1
    coll_dtype: str | None = None
    group_size: int | str = -1
    pg_name: str | None = None
    pg_desc: str | None = None
    pg_ranks: msgspec.Raw = msgspec.Raw()
    mem_bytes: int | str = 0
    total_alloc: int | str = -1
    total_reserved: int | str = -1
    dev_type: int | str = -1
    dev_id: int | str = -1
    addr: int | str = 0
    label: str | None = None
    value: float | str = NAN
    labels: str | None = None
    sort_index: int | str = -1


class RawEvent(msgspec.Struct, gc=False):
    """One chrome-trace event as Kineto writes it."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: int | float | str | None = None
    dur: float = -1.0
    id: int | str | None = None
    args: RawArgs | None = None


class PreciseRawEvent(msgspec.Struct, gc=False):
    """Same, with ``ts`` left as text when fractional, so ns digits survive large absolute times."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: Any = None
    dur: float = -1.0
    id: int | str | None = None
    args: RawArgs | None = None


FAST_DECODER = msgspec.json.Decoder(list[RawEvent])
PRECISE_DECODER = msgspec.json.Decoder(list[PreciseRawEvent], float_hook=str)
FAST_ONE = msgspec.json.Decoder(RawEvent)
PRECISE_ONE = msgspec.json.Decoder(PreciseRawEvent, float_hook=str)
EVENT_FIELDS = RawEvent.__struct_fields__


@dataclass
class ChunkColumns:
    """Columns of one decoded chunk: ``ph`` holds the phase letter's code, string columns (cat, name,
    pid, tid, args text) local ids into ``strings``."""

    n: int
    cols: dict[str, npt.NDArray[Any]]
    strings: list[str]
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (diagnostic name, example)
    float_ts_max: float = 0.0  # largest fractional |ts| seen (decides the precise decoder)


def decode_events(buf: bytes | memoryview, precise: bool) -> tuple[list[Any], list[tuple[str, str]]]:
    """Decode a JSON array of events; on a type error, decode one by one and drop the bad ones."""
    decoder = PRECISE_DECODER if precise else FAST_DECODER
    try:
        return decoder.decode(buf), []
    except msgspec.ValidationError:
        pass
    one = PRECISE_ONE if precise else FAST_ONE
    good: list[Any] = []
    dropped: list[tuple[str, str]] = []
    for raw in msgspec.json.decode(buf, type=list[msgspec.Raw]):
        try:
            good.append(one.decode(raw))
        except msgspec.ValidationError as exc:
            dropped.append(("event-wrong-type", f"{exc}: {bytes(raw)[:160]!r}"))
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
            dropped.append(("event-malformed", f"{type(exc).__name__} {exc}: {bytes(raw)[:160]!r}"))
    return good, dropped
