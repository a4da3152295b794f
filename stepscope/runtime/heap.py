"""Big temporary arrays from the heap instead of fresh mappings, for a streaming reader's chunks.

glibc serves an allocation above its mmap threshold (dynamic, at most 32 MiB) with a fresh
mapping, returned to the kernel when freed: a reader that makes and drops arrays of 50-100 MB per
chunk page-faults all of them in again, chunk after chunk (the 1 GB allocator-snapshot read spent
22.8 of its 60.6 CPU seconds in the kernel). Inside ``heap_for_big_arrays()`` they come from the
heap and freed memory is kept for the next chunk (measured on a 104 MB snapshot: system time 2.2 s
-> 0.6 s, peak RSS unchanged). The analyses make and drop arrays of 20-40 MB per column pass the
same way (5 M events: their system time ~3 s -> ~1.2 s), so one-shot CLI commands run inside it
(``stepscope.cli``); ``stepscope.load`` alone does not (on the 1 GB trace it cut 0.3 s of system
time but raised the parse's peak RSS from 450 to 491 MiB, past half the file). On leaving,
glibc's defaults are set back and the heap trimmed. A no-op where the C library is not glibc.

The heap is glibc's main arena: a thread gets an arena of its own, whose heaps are at most 64 MiB,
so a thread's big array is a fresh mapping whatever the threshold. A one-shot command's analyses
run on threads (:mod:`stepscope.runtime.tasks`), so it calls :func:`threads_share_the_heap` at import
(5 M events, cold analyse, docs/benchmarks.md: peak RSS 3.1 -> 2.5 GiB, system time 6.1 -> 3.8 s).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
from collections.abc import Callable, Iterator

from stepscope.runtime.counted import CountedSetting

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
_DEFAULT_BYTES = 128 << 10  # glibc's initial mmap and trim thresholds


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


_SETTING = CountedSetting()  # process-wide: set by the first open block, set back by the last


@contextlib.contextmanager
def heap_for_big_arrays() -> Iterator[None]:
    """Big arrays from the heap, freed memory kept, inside this block (nested and threaded blocks
    included: the settings are process-wide, set by the first block and set back by the last)."""
    libc = _libc()
    if libc is None:
        yield
        return
    with _SETTING.held(lambda: _keep_freed(libc)):
        yield


def _keep_freed(libc: ctypes.CDLL) -> Callable[[], None]:
    libc.mallopt(_M_MMAP_THRESHOLD, 1 << 30)
    libc.mallopt(_M_TRIM_THRESHOLD, (1 << 31) - 1)

    def back() -> None:
        libc.mallopt(_M_MMAP_THRESHOLD, _DEFAULT_BYTES)
        libc.mallopt(_M_TRIM_THRESHOLD, _DEFAULT_BYTES)
        libc.malloc_trim(0)

    return back


def threads_share_the_heap() -> None:
    """Every thread started from now on allocates from the main arena (glibc's ``M_ARENA_MAX`` of
    1), so the heap mode holds for big arrays made on threads too. For the life of the process:
    glibc fixes its arena limit the first time a thread needs an arena, so this is for one-shot
    processes (the CLI's), called before their first thread. A no-op where the C library is not glibc."""
    libc = _libc()
    if libc is not None:
        libc.mallopt(_M_ARENA_MAX, 1)
