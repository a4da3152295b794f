"""A pool of forked worker processes whose results come back without the workers waiting.

Workers are forked (Linux: no re-import, the parent's read-only state is shared), from a process
that runs none of our column threads (:func:`~stepscope.runtime.parallel.release_threads`), and
the executor's result pipe is enlarged so that a worker can hand over a chunk's tables (~0.5 MB)
and go on to its next job before the main process reads them: a Linux pipe holds 64 KiB unless
asked for more.

The executor does not expose its result pipe; :func:`roomy_result_pipe` reads it from the
executor's ``_result_queue._writer`` — the one place stepscope reaches into the standard
library's internals. It is best effort: where that attribute or the fcntl call is missing, the
pool works as before, only with the default pipe.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import TypeVar

from stepscope.runtime.parallel import release_threads

A = TypeVar("A")
RESULT_PIPE_BYTES = 1 << 20  # the most an unprivileged process may ask for (/proc/sys/fs/pipe-max-size)
F_SETPIPE_SZ = 1031  # Linux's fcntl command (named in the fcntl module from Python 3.10 on Linux only)


def fork_pool(workers: int, initializer: Callable[[A], object] | None, arg: A) -> ProcessPoolExecutor:
    """``workers`` forked processes (threads released first), each started with ``initializer(arg)``
    when one is given, with a roomy result pipe. The workers are forked here, not at the first job:
    by then the caller may run a thread of its own (the gzip reader's), and a process is forked
    safely only while it runs one thread."""
    release_threads()
    ctx = get_context("fork")
    pool = (ProcessPoolExecutor(workers, mp_context=ctx) if initializer is None
            else ProcessPoolExecutor(workers, mp_context=ctx, initializer=initializer, initargs=(arg,)))
    roomy_result_pipe(pool)
    pool.submit(int).result()  # a fork-context executor forks every worker at its first job
    return pool


def roomy_result_pipe(pool: ProcessPoolExecutor) -> None:
    """Enlarge the executor's result pipe to :data:`RESULT_PIPE_BYTES` where the system allows it."""
    writer = getattr(getattr(pool, "_result_queue", None), "_writer", None)
    with contextlib.suppress(ImportError, AttributeError, OSError, ValueError):
        import fcntl  # POSIX only

        fcntl.fcntl(writer.fileno(), getattr(fcntl, "F_SETPIPE_SZ", F_SETPIPE_SZ), RESULT_PIPE_BYTES)  # type: ignore[union-attr]
