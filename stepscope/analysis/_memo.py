"""Memoisation within one bundle build: views that share an expensive base (step windows, the
collective classes) compute it once per build, and there is no global cache.

:func:`~stepscope.analysis.bundle.analyze` makes a :class:`Memo`, runs every analysis with it
active and keeps it in the :class:`~stepscope.analysis.bundle.Bundle`; work done later over the
same bundle (the advisor, the JSON document, timeline windows) runs inside ``bundle.memo.active()``
and reuses what the build computed. Outside an active memo a memoised function simply computes.
The active memo is held in a :class:`~contextvars.ContextVar`, so threads (the server's) never see
each other's; a memo lives exactly as long as its bundle. The analyses of one build may run on
several threads with the same memo (``runtime/tasks.py``): a pass asked for by two of them at once
is computed by the first, and the second waits for its value.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from functools import wraps
from typing import TypeVar, cast

from stepscope.model.trace import Trace

R = TypeVar("R")


class Memo:
    """The results of memoised passes of one build, keyed by (function, trace, rank)."""

    def __init__(self) -> None:
        self._store: dict[tuple[str, int, int], tuple[Trace, object]] = {}
        self._computing: dict[tuple[str, int, int], threading.RLock] = {}  # one lock per pass being computed
        self._lock = threading.Lock()  # guards ``_computing``

    def __len__(self) -> int:
        return len(self._store)

    @contextlib.contextmanager
    def active(self) -> Iterator[Memo]:
        """Memoised functions called inside this block (in this thread or task) use this memo."""
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)

    def get(self, name: str, trace: Trace, rank: int, compute: Callable[[], R]) -> R:
        key = (name, id(trace), rank)
        hit = self._store.get(key)
        if hit is not None and hit[0] is trace:
            return cast(R, hit[1])
        with self._lock:
            pass_lock = self._computing.setdefault(key, threading.RLock())
        with pass_lock:  # another thread computing this pass: wait for it (passes never ask for themselves)
            hit = self._store.get(key)
            if hit is not None and hit[0] is trace:
                return cast(R, hit[1])
            value = compute()
            self._store[key] = (trace, value)  # the trace is kept with it, so its id is not reused meanwhile
        return value

    def seed(self, fn: Callable[..., object], trace: Trace, value: object, rank: int = -1) -> None:
        """Set what the memoised pass ``fn`` (a :func:`per_trace` one, or :func:`per_rank` with
        ``rank``) gives for ``trace`` in this memo. The map-reduce path gives a one-rank trace the
        job's cross-rank facts this way (its collectives' match, whether the job is PyTorch)."""
        self._store[(f"{fn.__module__}.{fn.__qualname__}", id(trace), rank)] = (trace, value)


_ACTIVE: ContextVar[Memo | None] = ContextVar("stepscope_analysis_memo", default=None)


@contextlib.contextmanager
def memoised() -> Iterator[None]:
    """A memo for the block when none is active (a what-if outside a bundle build reads each pass once)."""
    if _ACTIVE.get() is not None:
        yield
        return
    with Memo().active():
        yield


def per_rank(fn: Callable[[Trace, int], R]) -> Callable[[Trace, int], R]:
    """Memoise ``fn(trace, rank)`` in the active memo (computed afresh when none is active)."""
    name = f"{fn.__module__}.{fn.__qualname__}"

    @wraps(fn)
    def wrapper(trace: Trace, rank: int) -> R:
        memo = _ACTIVE.get()
        if memo is None:
            return fn(trace, rank)
        return memo.get(name, trace, rank, lambda: fn(trace, rank))

    return wrapper


def shared(name: str, trace: Trace, rank: int, compute: Callable[[], R]) -> R:
    """``compute()`` once per (name, trace, rank) in the active memo (afresh when none is active);
    for passes keyed by more than the rank, ``name`` carries the rest of the key."""
    memo = _ACTIVE.get()
    return compute() if memo is None else memo.get(name, trace, rank, compute)


def per_trace(fn: Callable[[Trace], R]) -> Callable[[Trace], R]:
    """Memoise a whole-trace pass ``fn(trace)`` in the active memo (the ``per_rank`` memo, rank -1)."""
    name = f"{fn.__module__}.{fn.__qualname__}"

    @wraps(fn)
    def wrapper(trace: Trace) -> R:
        memo = _ACTIVE.get()
        if memo is None:
            return fn(trace)
        return memo.get(name, trace, -1, lambda: fn(trace))

    return wrapper
