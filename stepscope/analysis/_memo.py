"""A per-(trace, rank) memo so that views sharing an expensive base (step windows) compute it once.

Keyed by the trace object's identity and held through a weak reference, so a result never outlives
its trace and a different trace never sees it. Results are frozen, so sharing them is safe.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from stepscope.model.trace import Trace

R = TypeVar("R")
_STORE: dict[tuple[int, str, int], tuple[weakref.ref[Trace], Any]] = {}


def per_rank(fn: Callable[[Trace, int], R]) -> Callable[[Trace, int], R]:
    """Memoise ``fn(trace, rank)`` while ``trace`` is alive."""
    key_name = f"{fn.__module__}.{fn.__qualname__}"

    @wraps(fn)
    def wrapper(trace: Trace, rank: int) -> R:
        key = (id(trace), key_name, rank)
        hit = _STORE.get(key)
        if hit is not None and hit[0]() is trace:
            return hit[1]  # type: ignore[no-any-return]
        value = fn(trace, rank)

        def forget(_ref: weakref.ref[Trace], k: tuple[int, str, int] = key) -> None:
            _STORE.pop(k, None)

        _STORE[key] = (weakref.ref(trace, forget), value)
        return value

    return wrapper


def per_trace(fn: Callable[[Trace], R]) -> Callable[[Trace], R]:
    """Memoise a whole-trace pass ``fn(trace)`` while ``trace`` is alive (the ``per_rank`` memo, rank -1)."""

    def by_rank(trace: Trace, _rank: int) -> R:
        return fn(trace)

    by_rank.__module__, by_rank.__qualname__ = fn.__module__, fn.__qualname__  # the memo's key
    memo = per_rank(by_rank)

    @wraps(fn)
    def wrapper(trace: Trace) -> R:
        return memo(trace, -1)

    return wrapper
