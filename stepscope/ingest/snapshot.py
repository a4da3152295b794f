"""Read a ``torch.cuda.memory._dump_snapshot`` pickle — untrusted input — into ``AllocatorSnapshot``.

A snapshot is plain data (dicts, lists, tuples, str, int, float, bool, None), so it is read with an
``Unpickler`` whose ``find_class`` refuses every global: a pickle that names any class or function
(a ``__reduce__`` payload: ``os.system``, ``builtins.eval`` ...) is one ``TraceFormatError`` naming
the file, and nothing in it runs. The shape is checked too: a dict with a ``segments`` list.
"""

from __future__ import annotations

import logging
import os
import pickle
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from stepscope.errors import TraceFormatError
from stepscope.ingest.snapshot_stream import stream_snapshot
from stepscope.ingest.snapshot_vm import Fallback
from stepscope.model.snapshot import ACTIONS, BLOCK_STATES, AllocatorSnapshot, StackInterner
from stepscope.model.strings import StringPool

log = logging.getLogger(__name__)

#: plain types a snapshot may hold (what the restricted unpickler can build without a global)
PLAIN = (dict, list, tuple, str, int, float, bool, type(None))


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> NoReturn:
        raise pickle.UnpicklingError(f"it names {module}.{name}; a snapshot holds only plain data")


def load_plain(path: Path) -> Any:
    """The pickle's object, built only from plain types; a one-line TraceFormatError otherwise."""
    try:
        with open(path, "rb") as fh:
            if _is_empty(fh.fileno()):  # else pickle's "Ran out of input"
                raise TraceFormatError(f"{path}: the file is empty (0 bytes), not an allocator snapshot pickle")
            return _PlainUnpickler(fh).load()
    except OSError as exc:
        raise TraceFormatError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError,
            AttributeError, RecursionError, MemoryError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, EOFError):  # pickle's "Ran out of input"
            why = "it ends before the pickle does: empty or cut short"
        raise TraceFormatError(f"{path}: not a plain allocator snapshot pickle ({why}); refused") from None


def _is_empty(fd: int) -> bool:
    st = os.fstat(fd)
    return stat.S_ISREG(st.st_mode) and st.st_size == 0


def _stack(frames: Any, st: StackInterner) -> int:
    """The interned stack of a frames list (-1: none)."""
    if not isinstance(frames, list) or not frames:
        return -1
    return st.stack(tuple(st.frame(str(f.get("filename", "?")), int(f.get("line", 0) or 0), str(f.get("name", "?")))
                          for f in frames if isinstance(f, dict)))


def _segments(segs: list[Any], st: StackInterner) -> tuple[dict[str, Any], dict[str, Any]]:
    s_cols: dict[str, list[Any]] = {k: [] for k in ("device", "address", "total_size", "allocated_size",
                                                    "active_size", "requested_size", "stream", "is_large", "blocks")}
    b_cols: dict[str, list[Any]] = {k: [] for k in ("segment", "address", "size", "requested_size", "state", "stack")}
    for i, s in enumerate(segs):
        for k in s_cols:
            if k not in ("is_large", "blocks"):
                s_cols[k].append(int(s.get(k, -1) or 0))
        s_cols["is_large"].append(s.get("segment_type") == "large")
        blocks = s.get("blocks") or []
        s_cols["blocks"].append(len(blocks))
        for b in blocks:
            state = b.get("state")
            b_cols["segment"].append(i)
            for k in ("address", "size", "requested_size"):
                b_cols[k].append(int(b.get(k, 0) or 0))
            b_cols["state"].append(BLOCK_STATES.index(state) if state in BLOCK_STATES else -1)
            b_cols["stack"].append(_stack(b.get("frames"), st))
    return ({k: np.asarray(v, dtype=np.bool_ if k == "is_large" else np.int64) for k, v in s_cols.items()},
            {k: np.asarray(v, dtype=np.int64) for k, v in b_cols.items()})


def trace_columns(entries: list[Any], device: int, st: StackInterner) -> dict[str, Any]:
    """Columns (without ``site``) of one device's trace entries (dicts)."""
    cols: dict[str, list[int]] = {k: [] for k in ("device", "action", "addr", "size", "time_us", "stack")}
    for e in entries or []:
        action = e.get("action")
        cols["device"].append(device)
        cols["action"].append(ACTIONS.index(action) if action in ACTIONS else -1)
        for k in ("addr", "size", "time_us"):
            cols[k].append(int(e.get(k, 0) or 0))
        cols["stack"].append(_stack(e.get("frames"), st))
    return {k: np.asarray(v, dtype=np.int64) for k, v in cols.items()}


def assemble(path: Path, obj: Any, traces: list[dict[str, Any]], st: StackInterner) -> AllocatorSnapshot:
    """The snapshot from its segments (in ``obj``), its trace columns (device by device) and the interned stacks."""
    segments, blocks = _segments(obj["segments"], st)
    names = ("device", "action", "addr", "size", "time_us", "stack")
    trace = {k: np.concatenate([t[k] for t in traces]).astype(np.int64) if traces else np.zeros(0, np.int64)
             for k in names}
    repairs = repair_trace(trace)
    frames, offsets, flat, sites = st.columns()
    trace["site"] = np.where(trace["stack"] >= 0, sites[np.maximum(trace["stack"], 0)] if len(sites) else -1, -1)
    settings = obj.get("allocator_settings")
    return AllocatorSnapshot(str(path), segments, blocks, trace, st.strings, frames, offsets, flat,
                             settings if isinstance(settings, dict) else {}, repairs)


#: a trace entry's time (µs since the epoch) from here on is absurd (the year 2255), and past float64's exact integers
TIME_US_LIMIT = 2**53
#: what each of :func:`repair_trace`'s repairs means, for the reports
REPAIRS = {"trace-time-invalid": "a time below 0 or past the year 2255, read as the time of the entry before",
           "trace-size-negative": "a negative size, read as 0"}


def repair_trace(trace: dict[str, Any]) -> dict[str, int]:
    """Trace entries the allocator cannot have written, repaired in place and counted: a time below 0
    or past :data:`TIME_US_LIMIT` reads as the entry before it (the history is in time order; the
    first entries, as the first sound one), a negative size as 0."""
    repairs: dict[str, int] = {}
    t = trace["time_us"]
    bad = (t < 0) | (t >= TIME_US_LIMIT)
    if bad.any():
        good = np.flatnonzero(~bad)
        if len(good):
            prev = np.maximum.accumulate(np.where(bad, -1, np.arange(len(t))))
            trace["time_us"] = t[np.where(prev >= 0, prev, good[0])]
        else:
            trace["time_us"] = np.zeros(len(t), np.int64)
        repairs["trace-time-invalid"] = int(bad.sum())
    neg = trace["size"] < 0
    if neg.any():
        trace["size"] = np.where(neg, 0, trace["size"])
        repairs["trace-size-negative"] = int(neg.sum())
    return repairs


def _bad(path: Path, what: str) -> NoReturn:
    raise TraceFormatError(f"{path}: not an allocator snapshot ({what})")


def _streamed(p: Path) -> AllocatorSnapshot | None:
    """The snapshot read by the columnar streaming reader; None where it cannot (the caller reads it whole)."""
    st = StackInterner(StringPool())
    try:
        obj, regions = stream_snapshot(p, st)
    except (Fallback, EOFError, ValueError, IndexError, KeyError, TypeError, AttributeError, OverflowError,
            RecursionError, pickle.UnpicklingError) as exc:
        log.debug("%s: read whole (%s: %s)", p, type(exc).__name__, exc)
        return None
    _check_shape(p, obj)

    def columns() -> list[dict[str, Any]]:
        traces = []
        for d, entries in enumerate(obj.get("device_traces") or []):
            chunks = regions.get(id(entries))
            if not chunks:
                traces.append(trace_columns(entries, d, st))
                continue
            cols = {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}
            cols["device"] = np.full(len(cols["addr"]), d, np.int64)
            traces.append(cols)
        return traces

    return _assemble(p, obj, columns, st)


def _assemble(p: Path, obj: Any, columns: Callable[[], list[dict[str, Any]]], st: StackInterner) -> AllocatorSnapshot:
    try:
        return assemble(p, obj, columns(), st)
    except (AttributeError, TypeError, ValueError, OverflowError) as exc:
        _bad(p, f"an entry of the wrong shape: {type(exc).__name__}: {str(exc)[:200]}")


def _check_shape(p: Path, obj: Any) -> None:
    if not isinstance(obj, dict) or not isinstance(obj.get("segments"), list):
        _bad(p, "expected a dict with a 'segments' list, as torch.cuda.memory._snapshot() returns")
    if not isinstance(obj.get("device_traces") or [], list):
        _bad(p, "'device_traces' is not a list")


#: above this size a snapshot is streamed (bounded memory); below, the C unpickler is faster (docs/memory_snapshot.md)
STREAM_ABOVE_BYTES = 64 << 20


def read_snapshot(path: str | Path, stream: bool | None = None) -> AllocatorSnapshot:
    """Read a snapshot pickle (see the module docstring): streamed into columns (``snapshot_stream``) when it
    is larger than STREAM_ABOVE_BYTES (or ``stream``) and a framed (protocol >= 4) pickle of the usual shape,
    else whole with the restricted unpickler."""
    p = Path(path)
    if stream is None:
        try:
            stream = p.stat().st_size > STREAM_ABOVE_BYTES
        except OSError as exc:
            raise TraceFormatError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if stream:
        try:
            got = _streamed(p)
        except OSError as exc:
            raise TraceFormatError(f"{p}: cannot read: {exc.strerror or exc}") from None
        if got is not None:
            return got
    obj = load_plain(p)
    _check_shape(p, obj)
    st = StackInterner(StringPool())
    return _assemble(p, obj, lambda: [trace_columns(e, d, st) for d, e in enumerate(obj.get("device_traces") or [])],
                     st)
