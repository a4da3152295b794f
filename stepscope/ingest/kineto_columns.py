"""Turn decoded Kineto events (msgspec structs) into local numpy columns, split by phase.

Output tables use *local* string ids (``ChunkColumns.strings``); the assembler remaps them into
the trace's pool. ``ts`` is converted to int64 ns exactly: integers and fractional µs alike.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt
import pyarrow as pa

from stepscope.ingest.kineto_decode import EMPTY_ARGS, ChunkColumns

I64 = npt.NDArray[np.int64]
_NOGRID = (0, 0, 0)


def ts_to_ns(ts: tuple[Any, ...]) -> tuple[I64, npt.NDArray[np.bool_], float]:
    """µs timestamps (int, float or decimal text) → int64 ns, a validity mask, and max |fractional ts|."""
    arr = np.array(ts)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64) * 1000, np.ones(len(arr), bool), 0.0
    if arr.dtype.kind == "f":
        ok = np.isfinite(arr)
        return _float_us_to_ns(np.where(ok, arr, 0.0)), ok, _max_fractional(arr)
    return _mixed_us_to_ns(ts)


def _float_us_to_ns(arr: npt.NDArray[np.float64]) -> I64:
    whole = np.floor(arr)
    return whole.astype(np.int64) * 1000 + np.round((arr - whole) * 1000).astype(np.int64)


def _max_fractional(arr: npt.NDArray[np.float64]) -> float:
    """Largest |ts| written as a float: beyond ~2e12 µs float64 can no longer hold every ns digit."""
    fin = arr[np.isfinite(arr)]
    return float(np.abs(fin).max()) if len(fin) else 0.0


def _mixed_us_to_ns(ts: tuple[Any, ...]) -> tuple[I64, npt.NDArray[np.bool_], float]:
    """Rare path: ints, floats, decimal strings and missing values mixed in one chunk."""
    n = len(ts)
    out = np.zeros(n, np.int64)
    ok = np.zeros(n, bool)
    is_str = np.fromiter((type(x) is str for x in ts), bool, n)
    is_num = np.fromiter((type(x) in (int, float) for x in ts), bool, n)
    if is_num.any():
        nums = np.array([x for x, m in zip(ts, is_num) if m], dtype=np.float64)
        out[is_num] = _float_us_to_ns(nums)
        ok[is_num] = True
    if is_str.any():
        ns, good = decimal_us_to_ns([x for x, m in zip(ts, is_str) if m])
        out[is_str] = ns
        ok[np.flatnonzero(is_str)[good]] = True
    return out, ok, 0.0


def decimal_us_to_ns(texts: list[str]) -> tuple[I64, npt.NDArray[np.bool_]]:
    """Exact ns from decimal µs text ("1712195495519689.047"); unparsable entries → invalid."""
    arr = np.char.strip(np.array(texts, dtype=str))
    parts = np.char.partition(arr, ".")
    whole, frac = parts[:, 0], np.char.ljust(parts[:, 2], 3, "0").astype("<U3")
    good = np.char.isdigit(np.char.lstrip(whole, "-")) & (np.char.isdigit(frac) | (frac == "000"))
    w = np.where(good, whole, "0").astype(np.int64)
    f = np.where(good, frac, "0").astype(np.int64)
    neg = np.char.startswith(whole, "-")
    ns = w * 1000 + np.where(neg, -f, f)
    bad = ~good
    if bad.any():  # exponent notation or junk: fall back to float parsing
        for i in np.flatnonzero(bad):
            try:
                ns[i] = round(float(arr[i]) * 1000)
                good[i] = np.isfinite(float(arr[i]))
            except ValueError:
                good[i] = False
    return ns, good


def intern_strings(values: Any, table: dict[str, int]) -> npt.NDArray[np.int32]:
    """Local ids for a column of str/None (None → -1), hashing in Arrow's C code."""
    if values.count(None) == len(values):
        return np.full(len(values), -1, np.int32)
    arr = pa.array(values, pa.string())
    enc = arr.dictionary_encode()
    local = enc.dictionary.to_pylist()
    remap = np.array([table.setdefault(s, len(table)) for s in local] + [-1], dtype=np.int32)
    idx = enc.indices.fill_null(len(local)).to_numpy(zero_copy_only=False)
    return remap[idx]


def intern_raw(values: tuple[Any, ...], table: dict[str, int]) -> npt.NDArray[np.int32]:
    """Local ids of the JSON text of raw values (Input Dims ...); only unique texts are decoded."""
    raw = [bytes(v) or None for v in values]
    if raw.count(None) == len(raw):
        return np.full(len(values), -1, np.int32)
    arr = pa.array(raw, pa.binary())
    enc = arr.dictionary_encode()
    local = [b.decode("utf-8", "replace") for b in enc.dictionary.to_pylist()]
    remap = np.array([table.setdefault(s, len(table)) for s in local] + [-1], dtype=np.int32)
    idx = enc.indices.fill_null(len(local)).to_numpy(zero_copy_only=False)
    return remap[idx]


def _ints(col: tuple[Any, ...]) -> I64:
    """Integer column; text values that hold an integer are parsed, anything else becomes -1."""
    if col.count(-1) == len(col):
        return np.full(len(col), -1, np.int64)
    try:
        return np.array(col, dtype=np.int64)
    except (OverflowError, ValueError, TypeError):
        return np.array([_to_int(x) for x in col], np.int64)


def _to_int(x: Any) -> int:
    if isinstance(x, int):
        return x if abs(x) < 2**63 else -1
    if isinstance(x, str):
        try:
            return int(x.strip())
        except ValueError:
            return -1
    return -1


def _floats(col: tuple[Any, ...]) -> npt.NDArray[np.float64]:
    first = col[0] if col else None
    if type(first) is float and first != first and sum(1 for x in col if x is first) == len(col):
        return np.full(len(col), np.nan)
    try:
        return np.array(col, dtype=np.float64)
    except (ValueError, TypeError):
        return np.array([_to_float(x) for x in col], np.float64)


def _to_float(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


def args_columns(args: tuple[Any, ...], table: dict[str, int]) -> dict[str, npt.NDArray[Any]]:
    """Numpy columns of the args that matter, for every event of the chunk."""
    filled = [a if a is not None else EMPTY_ARGS for a in args]
    (ext_id, ext_old, corr, device, stream, grid, block, regs, shmem, bps, occ, nbytes,
     dims, dims_old, types, stack, seq, fwd_tid, flops, coll, in_n, out_n, dtype, gsize,
     pg_name, pg_desc, pg_ranks, mem_bytes, total_alloc, total_res, dev_type, dev_id, addr,
     label, value, labels, sort_index) = zip(*map(msgspec.structs.astuple, filled))
    ext = _ints(ext_id)
    g, b = _dim3(grid), _dim3(block)
    dims_id = intern_raw(dims, table)
    dims_old_id = intern_raw(dims_old, table)
    return {
        "ext_id": np.where(ext >= 0, ext, _ints(ext_old)), "corr": _ints(corr),
        "device": _ints(device), "stream": _ints(stream),
        "grid_x": g[:, 0], "grid_y": g[:, 1], "grid_z": g[:, 2],
        "block_x": b[:, 0], "block_y": b[:, 1], "block_z": b[:, 2],
        "regs": _ints(regs), "shmem_bytes": _ints(shmem),
        "blocks_per_sm": _floats(bps), "occupancy_pct": _floats(occ),
        "bytes": _ints(nbytes), "input_dims": np.where(dims_id >= 0, dims_id, dims_old_id),
        "input_types": intern_raw(types, table), "call_stack": intern_strings(stack, table),
        "seq": _ints(seq), "fwd_tid": _ints(fwd_tid), "flops": _floats(flops),
        "coll_name": intern_strings(coll, table), "in_nelems": _ints(in_n), "out_nelems": _ints(out_n),
        "coll_dtype": intern_strings(dtype, table), "group_size": _ints(gsize),
        "pg_name": intern_strings(pg_name, table), "pg_desc": intern_strings(pg_desc, table),
        "pg_ranks": intern_raw(pg_ranks, table),
        "mem_bytes": _ints(mem_bytes), "total_allocated": _ints(total_alloc),
        "total_reserved": _ints(total_res), "device_type": _ints(dev_type), "mem_device": _ints(dev_id),
        "addr": _ints(addr), "label": intern_strings(label, table), "value": _floats(value),
        "labels": intern_strings(labels, table), "sort_index": _ints(sort_index),
    }


def _dim3(col: tuple[Any, ...]) -> I64:
    if col.count(None) == len(col):
        return np.zeros((len(col), 3), np.int64)
    return np.array([x if type(x) is list and len(x) == 3 else _NOGRID for x in col], dtype=np.int64)


def events_to_columns(evs: list[Any], dropped: list[tuple[str, str]]) -> ChunkColumns:
    """All columns of a decoded chunk (every phase together; the assembler splits by ``ph``)."""
    table: dict[str, int] = {}
    n = len(evs)
    if n == 0:
        return ChunkColumns(0, {}, [], dropped)
    ph, cat, name, pid, tid, ts, dur, fid, args = zip(*map(msgspec.structs.astuple, evs))
    ts_ns, ts_ok, frac_max = ts_to_ns(ts)
    cols: dict[str, npt.NDArray[Any]] = {
        "ph": intern_strings(ph, table), "cat": intern_strings(cat, table),
        "name": intern_strings(name, table),
        "pid": intern_strings(list(map(str, pid)), table), "tid": intern_strings(list(map(str, tid)), table),
        "ts_ns": ts_ns, "ts_ok": ts_ok,
        "dur_ns": np.round(np.array(dur, dtype=np.float64) * 1000).astype(np.int64),
        "flow_id": _flow_ids(fid),
    }
    cols.update(args_columns(args, table))
    strings = [""] * len(table)
    for s, i in table.items():
        strings[i] = s
    return ChunkColumns(n, cols, strings, dropped, frac_max)


def _flow_ids(fid: tuple[Any, ...]) -> I64:
    try:
        return np.array([x if type(x) is int else -1 for x in fid], dtype=np.int64)
    except OverflowError:
        return np.full(len(fid), -1, np.int64)
