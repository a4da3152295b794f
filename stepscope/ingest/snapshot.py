"""Read a ``torch.cuda.memory._dump_snapshot`` pickle — untrusted input — into ``AllocatorSnapshot``.

A snapshot is plain data (dicts, lists, tuples, str, int, float, bool, None), so it is read with an
``Unpickler`` whose ``find_class`` refuses every global: a pickle that names any class or function
(a ``__reduce__`` payload: ``os.system``, ``builtins.eval`` ...) is one ``TraceFormatError`` naming
the file, and nothing in it runs. The shape is checked too: a dict with a ``segments`` list.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from stepscope.errors import TraceFormatError
from stepscope.model.snapshot import ACTIONS, BLOCK_STATES, AllocatorSnapshot
from stepscope.model.strings import StringPool

#: plain types a snapshot may hold (what the restricted unpickler can build without a global)
PLAIN = (dict, list, tuple, str, int, float, bool, type(None))


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> NoReturn:
        raise pickle.UnpicklingError(f"it names {module}.{name}; a snapshot holds only plain data")


def load_plain(path: Path) -> Any:
    """The pickle's object, built only from plain types; a one-line TraceFormatError otherwise."""
    try:
        with open(path, "rb") as fh:
            return _PlainUnpickler(fh).load()
    except OSError as exc:
        raise TraceFormatError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError,
            AttributeError, RecursionError, MemoryError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TraceFormatError(f"{path}: not a plain allocator snapshot pickle ({why}); refused") from None


def _frames_text(frames: Any) -> tuple[str, str]:
    """(whole stack, first frame outside site-packages) of a frames list."""
    if not isinstance(frames, list) or not frames:
        return "", ""
    text = [f"{f.get('filename', '?')}:{f.get('line', '?')} {f.get('name', '?')}" for f in frames
            if isinstance(f, dict)]
    site = next((t for t, f in zip(text, frames) if "site-packages" not in str(f.get("filename", ""))),
                text[0] if text else "")
    return ";".join(text), site


def _segments(segs: list[Any], pool: StringPool) -> tuple[dict[str, Any], dict[str, Any]]:
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
            b_cols["stack"].append(pool.intern(_frames_text(b.get("frames"))[0]))
    return ({k: np.asarray(v, dtype=np.bool_ if k == "is_large" else np.int64) for k, v in s_cols.items()},
            {k: np.asarray(v, dtype=np.int64) for k, v in b_cols.items()})


def _trace(traces: list[Any], pool: StringPool) -> dict[str, Any]:
    cols: dict[str, list[int]] = {k: [] for k in ("device", "action", "addr", "size", "time_us", "stack", "site")}
    for device, entries in enumerate(traces):
        for e in entries or []:
            stack, site = _frames_text(e.get("frames"))
            action = e.get("action")
            cols["device"].append(device)
            cols["action"].append(ACTIONS.index(action) if action in ACTIONS else -1)
            for k in ("addr", "size", "time_us"):
                cols[k].append(int(e.get(k, 0) or 0))
            cols["stack"].append(pool.intern(stack))
            cols["site"].append(pool.intern(site))
    return {k: np.asarray(v, dtype=np.int64) for k, v in cols.items()}


def _bad(path: Path, what: str) -> NoReturn:
    raise TraceFormatError(f"{path}: not an allocator snapshot ({what})")


def read_snapshot(path: str | Path) -> AllocatorSnapshot:
    """Read a snapshot pickle (see the module docstring)."""
    p = Path(path)
    obj = load_plain(p)
    if not isinstance(obj, dict) or not isinstance(obj.get("segments"), list):
        _bad(p, "expected a dict with a 'segments' list, as torch.cuda.memory._snapshot() returns")
    traces = obj.get("device_traces") or []
    if not isinstance(traces, list):
        _bad(p, "'device_traces' is not a list")
    pool = StringPool()
    try:
        segments, blocks = _segments(obj["segments"], pool)
        trace = _trace(traces, pool)
    except (AttributeError, TypeError, ValueError, OverflowError) as exc:
        _bad(p, f"an entry of the wrong shape: {type(exc).__name__}: {str(exc)[:200]}")
    settings = obj.get("allocator_settings")
    return AllocatorSnapshot(str(p), segments, blocks, trace, pool, settings if isinstance(settings, dict) else {})
