"""Cache entries written beside the work that follows the load, in one-shot commands.

Writing a parsed trace to the cache (``model/store.py``) takes ~0.9 s for 5 M events, and nothing
a one-shot command does next needs it: its analyses read the Trace in memory. Inside
:func:`deferred_cache_writes` (the CLI's one-shot commands run in it) ``load`` writes the entry on a
thread of its own while the analyses run, and the block's end waits for it, so the command still
leaves the entry written (atomically, as always) when it returns. Anywhere else (the Python API,
the server's threads) the entry is written before ``load`` returns, as before.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar

log = logging.getLogger(__name__)
#: the open block's process id and its writes; a process forked inside the block (``stepscope diff``'s
#: side workers) inherits the value but not the block's end, so it writes before going on
_PENDING: ContextVar[tuple[int, list[threading.Thread]] | None] = ContextVar("stepscope_cache_writes", default=None)


@contextlib.contextmanager
def deferred_cache_writes() -> Iterator[None]:
    """Cache entries written by ``load`` inside the block go on background threads; waited for at its end."""
    pending: list[threading.Thread] = []
    token = _PENDING.set((os.getpid(), pending))
    try:
        yield
    finally:
        _PENDING.reset(token)
        for thread in pending:
            thread.join()


def write_entry(write: Callable[[], None], what: str) -> None:
    """``write()`` now, or on a thread when inside :func:`deferred_cache_writes` (in the process that
    opened it); an OSError is logged (a cache that cannot be written costs the next run a parse)."""
    block = _PENDING.get()
    if block is None or block[0] != os.getpid():
        _logged(write, what)
        return
    pending = block[1]
    # daemon: an interrupted command exits at once; a killed write leaves a temporary directory,
    # which the next write removes (store.remove_orphans)
    thread = threading.Thread(target=_logged, args=(write, what), name="stepscope-cache-write", daemon=True)
    thread.start()
    pending.append(thread)


def _logged(write: Callable[[], None], what: str) -> None:
    try:
        write()
    except OSError as exc:
        log.info("could not write cache %s: %s", what, exc)
