"""Turn decoded Kineto events (msgspec structs) into local numpy columns, split by phase.

Output tables use *local* string ids (``ChunkColumns.strings``); the assembler remaps them into
the trace's pool. ``ts`` is converted to int64 ns exactly: integers and fractional µs alike.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from itertools import chain
from operator import attrgetter, itemgetter
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from stepscope.ingest.normalize import KIND, Lut, phase_code
from stepscope.ingest.readers.interning import first_rows, intern_ids, intern_strings, ordered_strings, raw_ids, relabel
from stepscope.ingest.readers.jsonscan import scan_events
from stepscope.ingest.readers.kineto_decode import ChunkColumns
from stepscope.ingest.readers.kineto_values import dur_ns_of, floats_of, flow_ids, ints_of, ts_to_ns
from stepscope.model.masks import any_of
from stepscope.model.schema import EventKind

I64 = npt.NDArray[np.int64]
_NOGRID = (0, 0, 0)
FLOW_PHASES = [ord(c) for c in "sft"]  # flow start, end, step


#: args read per group of events (by kind); every other group gets the column's default
GROUP_FIELDS: dict[str, tuple[str, ...]] = {
    "gpu": ("ext_id", "ext_id_old", "correlation", "device", "stream", "grid", "block", "regs", "shmem",
            "blocks_per_sm", "occupancy", "nbytes"),
    "gpu_comm": ("ext_id", "ext_id_old", "correlation", "device", "stream", "grid", "block", "regs", "shmem",
                 "blocks_per_sm", "occupancy", "nbytes", "coll_name", "in_nelems", "out_nelems", "coll_dtype",
                 "group_size", "pg_name", "pg_desc", "pg_ranks", "src_rank", "dst_rank"),
    "runtime": ("ext_id", "ext_id_old", "correlation"),
    "op": ("ext_id", "ext_id_old", "input_dims", "input_dims_old", "input_types", "concrete", "call_stack", "seq",
           "fwd_tid", "flops"),
    "comm": ("ext_id", "ext_id_old", "input_dims", "input_dims_old", "input_types", "concrete", "call_stack", "seq",
             "fwd_tid", "flops", "coll_name", "in_nelems", "out_nelems", "coll_dtype", "group_size",
             "pg_name", "pg_desc", "pg_ranks", "src_rank", "dst_rank"),
    "memory": ("mem_bytes", "total_alloc", "total_reserved", "dev_type", "dev_id", "addr"),
    "counter": ("value",),
    "meta": ("label",),
}
#: output column ← (arg field, converter kind)
INT_FIELDS = {"ext_id": "ext_id", "ext_id_old": "ext_id_old", "correlation": "corr", "device": "device",
              "stream": "stream", "regs": "regs", "shmem": "shmem_bytes", "nbytes": "bytes", "seq": "seq",
              "fwd_tid": "fwd_tid", "in_nelems": "in_nelems", "out_nelems": "out_nelems",
              "group_size": "group_size", "mem_bytes": "mem_bytes", "total_alloc": "total_allocated",
              "total_reserved": "total_reserved", "dev_type": "device_type", "dev_id": "mem_device",
              "addr": "addr", "src_rank": "src_rank", "dst_rank": "dst_rank"}
FLOAT_FIELDS = {"blocks_per_sm": "blocks_per_sm", "occupancy": "occupancy_pct", "flops": "flops",
                "value": "value"}
STR_FIELDS = {"call_stack": "call_stack", "coll_name": "coll_name", "coll_dtype": "coll_dtype",
              "pg_name": "pg_name", "pg_desc": "pg_desc", "label": "label"}
RAW_FIELDS = {"input_dims": "input_dims", "input_dims_old": "input_dims_old", "input_types": "input_types",
              "concrete": "concrete_inputs", "pg_ranks": "pg_ranks"}


#: every arg column a chunk may carry: name -> (dtype, value when the arg is absent)
ARG_DEFAULTS: dict[str, tuple[Any, Any]] = {
    **{c: (np.int64, -1) for c in INT_FIELDS.values()}, "mem_bytes": (np.int64, 0), "addr": (np.int64, 0),
    **{c: (np.float64, np.nan) for c in FLOAT_FIELDS.values()},
    **{c: (np.int32, -1) for c in (*STR_FIELDS.values(), *RAW_FIELDS.values())},
    **{f"{d}_{a}": (np.int64, 0) for d in ("grid", "block") for a in "xyz"},
}


def arg_column(cols: dict[str, npt.NDArray[Any]], name: str, n: int) -> npt.NDArray[Any]:
    """An arg column of a chunk; a column no event of the chunk carried reads as all-absent."""
    got = cols.get(name)
    if got is not None:
        return got
    dtype, fill = ARG_DEFAULTS[name]
    return np.full(n, fill, dtype)


def arg_rows(cols: dict[str, npt.NDArray[Any]], name: str, rows: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
    """An arg column's values at ``rows`` (absent everywhere: its absent value, ``len(rows)`` times)."""
    got = cols.get(name)
    if got is not None:
        return np.take(got, rows)
    dtype, fill = ARG_DEFAULTS[name]
    return np.full(len(rows), fill, dtype)


class _LazyCols(dict[str, npt.NDArray[Any]]):
    """Arg columns created on first write, so a chunk ships only the columns its events carried."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def __missing__(self, name: str) -> npt.NDArray[Any]:
        col = arg_column({}, name, self.n)
        self[name] = col
        return col


#: args of a group that differ event by event (ids, sizes, samples); every other arg takes few
#: distinct values within a group (a kernel's launch configuration and stream, an op's shapes and call stack)
PER_EVENT_FIELDS = frozenset({"ext_id", "ext_id_old", "correlation", "seq", "mem_bytes", "total_alloc",
                              "total_reserved", "addr", "value"})


def args_columns(args: list[Any], groups: dict[str, npt.NDArray[np.int64]],
                 table: dict[str, int]) -> dict[str, npt.NDArray[Any]]:
    """Numpy columns of the args that matter, reading each group's fields only for its events."""
    cols = _LazyCols(len(args))
    for group, idx in groups.items():
        if len(idx) == 0:
            continue
        sub = _gather(args, idx)
        if None in sub:  # events without args keep the defaults
            keep = np.array([a is not None for a in sub])
            idx = idx[keep]
            sub = tuple(a for a in sub if a is not None)
        if sub:
            fields = GROUP_FIELDS[group]
            for f in fields:
                if f in PER_EVENT_FIELDS:
                    _store(cols, f, sub, idx, table)
            repeated = tuple(f for f in fields if f not in PER_EVENT_FIELDS)
            if repeated:
                _store_repeated(cols, repeated, sub, idx, table)
    for new, old in (("ext_id", "ext_id_old"), ("input_dims", "input_dims_old")):
        if old in cols:
            cols[new] = np.where(cols[new] >= 0, cols[new], cols.pop(old))
    return dict(cols)


def _gather(items: list[Any], idx: npt.NDArray[np.int64]) -> tuple[Any, ...]:
    """items[i] for i in idx, in C (itemgetter) rather than a Python loop."""
    if len(idx) == 1:
        return (items[int(idx[0])],)
    got: tuple[Any, ...] = itemgetter(*idx.tolist())(items)
    return got


def _store(cols: dict[str, npt.NDArray[Any]], f: str, sub: tuple[Any, ...], idx: npt.NDArray[np.int64],
           table: dict[str, int]) -> None:
    """Field ``f`` of the args structs ``sub`` into its column at rows ``idx`` (one C-level pass)."""
    get = attrgetter(f)
    if f in INT_FIELDS:
        cols[INT_FIELDS[f]][idx] = ints_of(map(get, sub), len(sub), lambda: list(map(get, sub)))
    elif f in FLOAT_FIELDS:
        cols[FLOAT_FIELDS[f]][idx] = floats_of(map(get, sub), len(sub), lambda: list(map(get, sub)))
    else:
        values = list(map(b"".__add__, map(get, sub))) if f in RAW_FIELDS else list(map(get, sub))
        _store_values(cols, f, values, np.arange(len(sub)), idx, table)


def _store_repeated(cols: dict[str, npt.NDArray[Any]], fields: tuple[str, ...], sub: tuple[Any, ...],
                    idx: npt.NDArray[np.int64], table: dict[str, int]) -> None:
    """Args that repeat within a group: one key per event (a tuple of the fields, hashed in C), each
    field converted once per distinct key and spread to the rows (~0.6 k keys in 3.5 k op events)."""
    first, rows = first_rows(_keys(fields, sub), len(sub))
    dense = relabel(first, rows, range(len(first)))
    for f, values in zip(fields, zip(*first)):
        _store_values(cols, f, list(values), dense, idx, table)


def _keys(fields: tuple[str, ...], sub: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    """Each struct's ``fields`` as a hashable tuple (raw JSON values as their bytes)."""
    if len(fields) > 1 and not RAW_FIELDS.keys() & set(fields):
        keys: Iterator[tuple[Any, ...]] = map(attrgetter(*fields), sub)
        return keys
    return zip(*(map(b"".__add__, map(attrgetter(f), sub)) if f in RAW_FIELDS else map(attrgetter(f), sub)
                 for f in fields))


def _store_values(cols: dict[str, npt.NDArray[Any]], f: str, values: list[Any], dense: npt.NDArray[Any],
                  idx: npt.NDArray[np.int64], table: dict[str, int]) -> None:
    """Distinct values of field ``f`` (raw ones as bytes), converted once, into rows ``idx`` (row k
    takes value ``dense[k]``)."""
    m = len(values)
    if f in INT_FIELDS:
        cols[INT_FIELDS[f]][idx] = ints_of(iter(values), m, lambda: values)[dense]
    elif f in FLOAT_FIELDS:
        cols[FLOAT_FIELDS[f]][idx] = floats_of(iter(values), m, lambda: values)[dense]
    elif f in STR_FIELDS:
        cols[STR_FIELDS[f]][idx] = intern_strings(values, table, m)[dense]
    elif f in RAW_FIELDS:
        compact = f.startswith("input_dims") or f == "concrete"  # numbers and short scalars: no spaces kept
        cols[RAW_FIELDS[f]][idx] = raw_ids(values, m, table, compact=compact, unquote=f == "pg_ranks")[dense]
    else:  # grid / block
        d3 = _dim3(values)[dense]
        for j, axis in enumerate("xyz"):
            cols[f"{f}_{axis}"][idx] = d3[:, j]


def _dim3(col: list[Any]) -> I64:
    """(x, y, z) launch dimensions; anything but three integers (a tuple as decoded, or a list) reads as (0, 0, 0)."""
    if col.count(None) == len(col):
        return np.zeros((len(col), 3), np.int64)
    if set(map(type, col)) <= {tuple, list} and set(map(len, col)) == {3}:  # every kernel's, as Kineto writes them
        with contextlib.suppress(ValueError, TypeError, OverflowError):
            return np.fromiter(chain.from_iterable(col), np.int64, 3 * len(col)).reshape(len(col), 3)
    try:  # the common case, absent or three integers, with the least Python per event
        fast = np.array([x or _NOGRID for x in col], np.int64)
        if fast.shape == (len(col), 3):
            return fast
    except (ValueError, TypeError, OverflowError):
        pass
    return np.array([x if _is_dim3(x) else _NOGRID for x in col], np.int64)  # odd values: checked one by one


def _is_dim3(x: Any) -> bool:
    return type(x) in (tuple, list) and len(x) == 3 and all(type(v) is int and -(2**63) <= v < 2**63 for v in x)


_COMM_NAME = re.compile(r"record_param_comms|nccl|^c10d|^gloo|hccl|rccl|allreduce|all_reduce|allgather|"
                        r"all_gather|reduce_scatter|reducescatter|alltoall|all_to_all|broadcast|sendrecv",
                        re.IGNORECASE)


def _is_comm_name(name: str) -> int:
    return int(bool(_COMM_NAME.search(name)))


COMM_NAME = Lut(_is_comm_name, np.bool_)


def event_groups(ph: npt.NDArray[np.int32], cat: npt.NDArray[np.int32], name: npt.NDArray[np.int32],
                 strings: list[str]) -> dict[str, npt.NDArray[np.int64]]:
    """Row indices of each args group, decided once per unique category / name string."""
    kind = KIND.table(strings)[cat]
    is_comm_name: npt.NDArray[np.bool_] = COMM_NAME.table(strings)[name].astype(bool, copy=False)
    mem_id = strings.index("[memory]") if "[memory]" in strings else -2
    x = ph == ord("X")
    gpu = x & any_of(kind, [EventKind.KERNEL, EventKind.MEMCPY, EventKind.MEMSET])
    rt = x & any_of(kind, [EventKind.RUNTIME, EventKind.DRIVER])
    other = x & ~gpu & ~rt
    return {"gpu": np.flatnonzero(gpu & ~is_comm_name), "gpu_comm": np.flatnonzero(gpu & is_comm_name),
            "runtime": np.flatnonzero(rt),
            "op": np.flatnonzero(other & ~is_comm_name), "comm": np.flatnonzero(other & is_comm_name),
            "memory": np.flatnonzero(any_of(ph, [ord("i"), ord("I")]) & (name == mem_id)),
            "counter": np.flatnonzero(ph == ord("C")), "meta": np.flatnonzero(ph == ord("M"))}


def events_to_columns(evs: list[Any], dropped: list[tuple[str, str]]) -> ChunkColumns:
    """All columns of a decoded chunk (every phase together; the assembler splits by ``ph``).

    Each field is read by its own C-level pass over the structs (``map(attrgetter)``): cheaper than
    one pass that builds a tuple per event and transposes them."""
    table: dict[str, int] = {}
    n = len(evs)
    if n == 0:
        return ChunkColumns(0, {}, [], dropped)

    def field(name: str) -> list[Any]:
        return list(map(attrgetter(name), evs))

    ts_ns, ts_ok, frac_max = ts_to_ns(field("ts"))
    cols = identity_columns(evs, table)
    cols.update(ts_ns=ts_ns, ts_ok=ts_ok, dur_ns=dur_ns_of(map(attrgetter("dur"), evs), n))
    cols["flow_id"] = _flow_id_column(evs, cols["ph"])
    strings = ordered_strings(table)
    groups = event_groups(cols["ph"], cols["cat"], cols["name"], strings)
    cols.update(args_columns(field("args"), groups, table))
    return ChunkColumns(n, cols, ordered_strings(table), dropped, frac_max)


#: what names an event's kind and thread: ~100 distinct keys in a chunk of 9 k Kineto events
IDENTITY = ("ph", "cat", "name", "pid", "tid")


def identity_columns(evs: list[Any], table: dict[str, int]) -> dict[str, npt.NDArray[Any]]:
    """Phase code, category, name, pid and tid of each event: one key per event (a tuple, hashed in
    C), each distinct key split into its columns once. Strings get ids in the order they are first
    met, column after column, as if each column were interned on its own."""
    first, rows = first_rows(map(attrgetter(*IDENTITY), evs), len(evs))
    m = len(first)
    dense = relabel(first, rows, range(m))
    ph, cat, name, pid, tid = zip(*first)
    return {"ph": phase_codes(list(ph))[dense], "cat": intern_strings(cat, table, m)[dense],
            "name": intern_strings(name, table, m)[dense], "pid": intern_ids(pid, table, m)[dense],
            "tid": intern_ids(tid, table, m)[dense]}


def _flow_id_column(evs: list[Any], ph: npt.NDArray[np.int32]) -> npt.NDArray[np.int64]:
    """Flow ids, read only from flow events (the only ones whose id is used; -1 elsewhere)."""
    rows = np.flatnonzero(any_of(ph, FLOW_PHASES))
    out = np.full(len(evs), -1, np.int64)
    if len(rows):
        out[rows] = flow_ids(list(map(attrgetter("id"), _gather(evs, rows))))
    return out


def phase_codes(phases: list[Any]) -> npt.NDArray[np.int32]:
    """Each event's phase as the code of its letter ("X" → 88; empty → 0), in C when every phase
    is one character, as Kineto writes them; otherwise once per distinct phase text."""
    try:
        return np.fromiter(map(ord, phases), np.int32, len(phases))
    except TypeError:
        local: dict[str, int] = {}
        ids = intern_strings(phases, local)
        return np.array([*map(phase_code, local), 0], np.int32)[ids]


class _CounterEvent(msgspec.Struct):
    ph: str = ""
    name: str = ""
    ts: int | float | str | None = None
    args: dict[str, Any] | None = None


_COUNTER_DECODER = msgspec.json.Decoder(list[_CounterEvent])


def add_counter_series(cols: dict[str, npt.NDArray[Any]], strings: list[str], buf: bytearray) -> None:
    """One counter row per numeric arg key ("<name>.<key>"; just "<name>" for "value"), read by a
    generic second decode of a chunk whose counter samples carry other keys (rare: only then)."""
    res = scan_events(bytes(buf[1:]))
    if len(res.starts) == 0:
        return
    body = b"[" + bytes(buf[1 + int(res.starts[0]) : 1 + int(res.ends[-1])]) + b"]"
    try:
        evs = [e for e in _COUNTER_DECODER.decode(body) if e.ph == "C" and e.args]
    except (msgspec.MsgspecError, UnicodeDecodeError, RecursionError):
        return
    rows = [(e.ts, e.name if k == "value" else f"{e.name}.{k}", float(v))
            for e in evs for k, v in (e.args or {}).items()  # per counter sample, not per event
            if isinstance(v, (int, float)) and not isinstance(v, bool)]
    table = {s: i for i, s in enumerate(strings)}
    ts, ok, _ = ts_to_ns(tuple(r[0] for r in rows)) if rows else (np.zeros(0, np.int64), np.zeros(0, bool), 0.0)
    cols["ctr_ts_ns"] = ts[ok]
    cols["ctr_name"] = intern_strings(tuple(r[1] for r in rows), table)[ok] if rows else np.zeros(0, np.int32)
    cols["ctr_value"] = np.array([r[2] for r in rows], np.float64)[ok] if rows else np.zeros(0)
    strings.extend(s for s, i in sorted(table.items(), key=lambda kv: kv[1]) if i >= len(strings))
