"""Independent calls run side by side on threads, each in a copy of the caller's context.

The analyses of a rank read the same model and never write it; most of their time is numpy work
that releases the GIL (sorts, searches, gathers over million-row columns), so on a large trace two
of them run at once on two cores. Each call runs in a copy of the caller's :mod:`contextvars`
context, so the active analysis memo (``analysis/_memo.py``, thread-safe) is the caller's.
Calls are independent: what one shares with another goes through the memo, which computes each
shared pass once however many threads ask for it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

from stepscope.runtime.cores import usable_cores

T = TypeVar("T")
MAX_THREADS = 4  # past this the GIL-held stretches of the analyses (Python per group) serialise them anyway
MEMINFO = "/proc/meminfo"


def memory_available_bytes() -> int | None:
    """What the kernel says could be allocated without swapping (``MemAvailable``); None where unknown."""
    try:
        with open(MEMINFO, encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def memory_to_spare(extra_bytes: int) -> bool:
    """Whether ``extra_bytes`` more would still fit in available memory (True where unknown)."""
    free = memory_available_bytes()
    return free is None or free > extra_bytes


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """What one call gave: its value, or the exception it raised (``error``)."""

    value: T | None = None
    error: BaseException | None = None


def _outcome(call: Callable[[], T]) -> Outcome[T]:
    try:
        return Outcome(call())
    except Exception as exc:  # handed back to the caller, which decides what an exception means
        return Outcome(error=exc)


def run_calls(calls: Sequence[Callable[[], T]], parallel: bool) -> list[Outcome[T]]:
    """Every call's outcome, in the order of ``calls``; on threads (one per core, at most
    :data:`MAX_THREADS`) when ``parallel`` and there is more than one core, else one after another."""
    threads = min(MAX_THREADS, usable_cores(), len(calls))
    if not parallel or threads < 2:
        return [_outcome(c) for c in calls]
    pool = ThreadPoolExecutor(threads, thread_name_prefix="stepscope-analysis")
    try:
        futures = [pool.submit(contextvars.copy_context().run, _outcome, c) for c in calls]
        return [f.result() for f in futures]
    finally:  # interrupted (Ctrl-C): the calls not started yet are dropped, the running ones finish
        pool.shutdown(wait=True, cancel_futures=True)
