"""Per-column numpy work spread over threads.

numpy releases the GIL while it gathers, copies and concatenates, so the column-by-column work at
the end of ingest (concatenating a file's chunks, putting a million-row table in time order) runs on
every core instead of one, once the decoding processes have finished with them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from stepscope.runtime.cores import usable_cores

K = TypeVar("K")
A = TypeVar("A")
B = TypeVar("B")
PARALLEL_ABOVE_CELLS = 2_000_000  # below this, starting work on threads costs more than it saves
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()  # submissions and release never interleave (the web UI loads on many threads)


def _threads() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(min(8, usable_cores()), thread_name_prefix="stepscope-col")
    return _pool


def _submit(fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Future[Any]]:
    with _pool_lock:
        pool = _threads()
        return [pool.submit(fn, x) for x in items]


def _results(fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
    return [f.result() for f in _submit(fn, items)]


def _forget_pool_in_child() -> None:
    """A forked child (``stepscope diff`` loads each side in one) has none of the parent's threads:
    it must start its own pool, not queue work on the parent's copy, which nothing would ever run."""
    global _pool
    _pool = None


os.register_at_fork(after_in_child=_forget_pool_in_child)


def release_threads() -> None:
    """Stop the idle column threads (a later call starts new ones): called before forking worker
    processes, so that they are forked from a process that runs no other thread of ours."""
    global _pool
    with _pool_lock:
        if _pool is not None:
            _pool.shutdown(wait=True)  # work already submitted still runs to the end
            _pool = None


def _worth_threads(cells: int) -> bool:
    """Enough work for threads to pay off, and more than one core to run them on."""
    return cells >= PARALLEL_ABOVE_CELLS and usable_cores() > 1


def map_columns(fn: Callable[[npt.NDArray[Any]], npt.NDArray[Any]], cols: Mapping[K, npt.NDArray[Any]],
                rows: int) -> dict[K, npt.NDArray[Any]]:
    """``{k: fn(v)}`` over the columns, on threads when the table is big enough to gain from it."""
    if not _worth_threads(rows * len(cols)):
        return {k: fn(v) for k, v in cols.items()}
    return dict(zip(cols, _results(fn, cols.values())))


def concat_columns(parts: Sequence[Mapping[str, npt.NDArray[Any]]], names: list[str],
                   fill: Callable[[str, int], npt.NDArray[Any]], order: npt.NDArray[np.int64] | None = None,
                   dtypes: Mapping[str, np.dtype[Any]] | None = None) -> dict[str, npt.NDArray[Any]]:
    """Each named column concatenated over ``parts`` (in ``dtypes[name]`` when given); a part without
    it contributes ``fill(name, n)``.

    With ``order``, each column is the concatenation's rows in that order (``concat[order]``), made
    column by column so that only one unordered copy exists at a time."""
    lengths = [len(next(iter(p.values()))) for p in parts]
    types = dtypes or {}
    scratch = threading.local()  # per thread: one buffer for the unordered copies, reused column after column

    def one(name: str) -> npt.NDArray[Any]:
        # a column some parts lack: filled once for the longest part, sliced for each part that lacks it
        absent = fill(name, max(lengths)) if any(name not in p for p in parts) else np.empty(0)
        cols = [p[name] if name in p else absent[:n] for p, n in zip(parts, lengths)]
        if order is None:
            return np.concatenate(cols, dtype=types.get(name))
        dtype = np.dtype(types.get(name) or np.result_type(*cols))
        cat = _scratch(scratch, sum(lengths) * dtype.itemsize).view(dtype)
        np.concatenate(cols, out=cat, casting="same_kind")
        return np.take(cat, order)  # ~40 % faster than ``cat[order]`` on a million rows

    if not _worth_threads(sum(lengths) * len(names)):
        return {name: one(name) for name in names}
    return dict(zip(names, _results(one, names)))


def _scratch(local: threading.local, nbytes: int) -> npt.NDArray[np.uint8]:
    """This thread's scratch bytes (at least ``nbytes``): fresh pages are costly to fault in, and the
    unordered copy of every column is needed only until its rows are gathered."""
    buf: npt.NDArray[np.uint8] | None = getattr(local, "buf", None)
    if buf is None or len(buf) < nbytes:
        buf = local.buf = np.empty(nbytes, np.uint8)
    return buf[:nbytes]


def run_both(first: Callable[[], A], second: Callable[[], B], rows: int) -> tuple[A, B]:
    """``(first(), second())``: the second on a thread while the first runs here, when ``rows`` is
    big enough for numpy's GIL-free stretches to overlap; independent derivations only."""
    if not _worth_threads(rows * 8):
        return first(), second()
    (later,) = _submit(lambda _: second(), [None])
    return first(), later.result()
