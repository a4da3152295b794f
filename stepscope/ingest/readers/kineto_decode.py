"""Decode one chunk of Kineto trace events (a JSON array) into columns.

A chunk is decoded by msgspec into typed structs, one struct type per phase (picked by "ph"), each
with just the args stepscope reads from that phase's events; unknown keys are skipped in C.
Events whose values have the wrong types are decoded one by one and dropped with a count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

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
        "concrete": "Concrete Inputs",
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
        "src_rank": "Src Rank",
        "dst_rank": "Dst Rank",
        "mem_bytes": "Bytes",
        "total_alloc": "Total Allocated",
        "total_reserved": "Total Reserved",
        "dev_type": "Device Type",
        "dev_id": "Device Id",
        "addr": "Addr",
        "label": "name",
        "value": "value",
    },
):
    """The args keys stepscope uses; every other key is skipped by the decoder."""

    ext_id: int | str = -1
    ext_id_old: int | str = -1
    correlation: int | str = -1
    device: int | str = -1
    stream: int | str = -1
    grid: tuple[int, ...] | str | None = None  # tuples: hashable, so launch configs are read once per distinct one
    block: tuple[int, ...] | str | None = None
    regs: int | str = -1
    shmem: int | str = -1
    blocks_per_sm: float | str = NAN
    occupancy: float | str = NAN
    nbytes: int | str = -1
    input_dims: msgspec.Raw = msgspec.Raw()
    input_dims_old: msgspec.Raw = msgspec.Raw()
    input_types: msgspec.Raw = msgspec.Raw()
    concrete: msgspec.Raw = msgspec.Raw()
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
    src_rank: int | str = -1
    dst_rank: int | str = -1
    mem_bytes: int | str = 0
    total_alloc: int | str = -1
    total_reserved: int | str = -1
    dev_type: int | str = -1
    dev_id: int | str = -1
    addr: int | str = 0
    label: str | None = None
    value: float | str = NAN


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


#: the args each phase's events carry that stepscope reads (Kineto: ops, runtime calls and GPU
#: activity are "X", memory samples "i"); the events of every other phase leave their args undecoded
COMPLETE_ARGS = ("ext_id", "ext_id_old", "correlation", "device", "stream", "grid", "block", "regs", "shmem",
                 "blocks_per_sm", "occupancy", "nbytes", "input_dims", "input_dims_old", "input_types", "concrete",
                 "call_stack", "seq", "fwd_tid", "flops", "coll_name", "in_nelems", "out_nelems", "coll_dtype",
                 "group_size", "pg_name", "pg_desc", "pg_ranks", "src_rank", "dst_rank")
INSTANT_ARGS = ("mem_bytes", "total_alloc", "total_reserved", "dev_type", "dev_id", "addr")
ARGS_OF_PHASE = {"X": COMPLETE_ARGS, "i": INSTANT_ARGS, "I": INSTANT_ARGS, "C": ("value",), "M": ("label",)}
#: every phase of the Trace Event Format: each gets its own struct, picked by msgspec from "ph"
PHASES = "BEXiICbneSTpFstfPNODMVvRc()"


def _args_struct(phase: str, names: tuple[str, ...]) -> Any:
    """A struct of some of :class:`RawArgs`' fields: same keys, types and (the very same) defaults.

    A small struct per phase is what makes decoding cheap: msgspec fills in every absent field of
    every event, so a memory sample decoded into all of RawArgs would pay for 35 fields."""
    info = {f.name: f for f in msgspec.structs.fields(RawArgs)}
    return msgspec.defstruct(f"Args{phase}", [(n, info[n].type, info[n].default) for n in names], gc=False,
                             rename={n: info[n].encode_name for n in names})


def _phase_structs(base: type[msgspec.Struct]) -> tuple[Any, ...]:
    """One event struct per phase (tagged by "ph", readable as ``event.ph`` like :class:`RawEvent`)."""
    fields = {f.name: f for f in msgspec.structs.fields(base) if f.name not in ("ph", "args")}
    out = []
    for ph in PHASES:
        names = ARGS_OF_PHASE.get(ph)
        args: tuple[str, Any, Any] = (("args", _args_struct(ph, names) | None, None) if names is not None
                                      else ("args", msgspec.Raw, msgspec.Raw()))
        out.append(msgspec.defstruct(f"{base.__name__}_{ord(ph)}", [*((f.name, f.type, f.default)
                                     for f in fields.values()), args], gc=False, tag_field="ph", tag=ph,
                                     namespace={"ph": ph}))
    return tuple(out)


def _decoder(structs: tuple[Any, ...], many: bool, precise: bool) -> msgspec.json.Decoder[Any]:
    """A decoder of one event, or of a list of them, of any of ``structs`` (picked by "ph")."""
    union: Any = Union.__getitem__(structs)  # a union built at run time
    target = list.__class_getitem__(union) if many else union
    return msgspec.json.Decoder(target, float_hook=str if precise else None)


_FAST, _PRECISE = _phase_structs(RawEvent), _phase_structs(PreciseRawEvent)
FAST_DECODER = _decoder(_FAST, many=True, precise=False)
PRECISE_DECODER = _decoder(_PRECISE, many=True, precise=True)
FAST_ONE = _decoder(_FAST, many=False, precise=False)
PRECISE_ONE = _decoder(_PRECISE, many=False, precise=True)
ANY_PHASE_ONE = msgspec.json.Decoder(RawEvent)  # an event of a phase outside the format, or of none
ANY_PHASE_PRECISE_ONE = msgspec.json.Decoder(PreciseRawEvent, float_hook=str)


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
    """Decode a JSON array of events; on a type error, decode one by one and drop the bad ones.

    An event whose phase the format does not know (or that has none) is kept, decoded with every
    arg: the split counts and skips it as of an unknown phase."""
    decoder = PRECISE_DECODER if precise else FAST_DECODER
    try:
        return decoder.decode(buf), []
    except msgspec.ValidationError:
        pass
    one, any_phase = (PRECISE_ONE, ANY_PHASE_PRECISE_ONE) if precise else (FAST_ONE, ANY_PHASE_ONE)
    good: list[Any] = []
    dropped: list[tuple[str, str]] = []
    for raw in msgspec.json.decode(buf, type=list[msgspec.Raw]):
        try:
            good.append(_one_event(raw, one, any_phase))
        except msgspec.ValidationError as exc:
            dropped.append(("event-wrong-type", f"{exc}: {bytes(raw)[:160]!r}"))
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
            dropped.append(("event-malformed", f"{type(exc).__name__} {exc}: {bytes(raw)[:160]!r}"))
    return good, dropped


def _one_event(raw: msgspec.Raw, one: msgspec.json.Decoder[Any], any_phase: msgspec.json.Decoder[Any]) -> Any:
    try:
        return one.decode(raw)
    except msgspec.ValidationError:
        return any_phase.decode(raw)  # raises again when a field has the wrong type
