"""What a load path may be besides a regular file or a directory, and what reading it may raise.

A pipe (a FIFO, ``stepscope analyze <(zcat t.json.gz)``) is read as a stream into a temporary file,
which is then read like any trace (gzip or not, JSON or SQLite); errors and the trace name the pipe.
A device (``/dev/zero``), a socket or any other special file is refused. An operating-system error
while reading (a file or directory without read permission ...) is one TraceFormatError naming it.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from stepscope.errors import StepscopeError, TraceFormatError
from stepscope.model.trace import Trace

COPY_BLOCK = 16 << 20


@contextmanager
def readable(path: Path) -> Iterator[Path]:
    """``path`` itself, or a temporary copy of what a pipe streams (removed on exit); stepscope errors
    about the copy are raised about ``path``; OSErrors become TraceFormatErrors naming their file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = stat.S_IFREG  # layout.resolve reports it
    except OSError as exc:
        raise unreadable(exc, path) from None
    if not stat.S_ISFIFO(mode):
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise TraceFormatError(f"{_kind(mode)}, not a trace file or directory", path)
        with _os_errors(path):
            yield path
        return
    with tempfile.TemporaryDirectory(prefix="stepscope-pipe-") as tmp:
        copy = Path(tmp) / (path.name or "pipe")
        with _os_errors(path), open(path, "rb") as src, open(copy, "wb") as dst:
            shutil.copyfileobj(src, dst, COPY_BLOCK)
        try:
            with _os_errors(path):
                yield copy
        except StepscopeError as exc:
            named = str(path) if exc.path is None or exc.path == str(copy) else exc.path
            raise type(exc)(exc.message, named) from None


@contextmanager
def _os_errors(path: Path) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise unreadable(exc, path) from None


def unreadable(exc: OSError, path: Path) -> TraceFormatError:
    """``exc`` as one line naming its file (``path`` when it names none)."""
    return TraceFormatError(f"cannot read it ({exc.strerror or type(exc).__name__})", exc.filename or path)


def _kind(mode: int) -> str:
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def renamed(trace: Trace, copy: Path, path: Path) -> Trace:
    """A trace read from a pipe's copy, its ranks' source naming the pipe."""
    if copy == path:
        return trace
    ranks = tuple(dataclasses.replace(r, source=str(path)) if r.source == str(copy) else r for r in trace.ranks)
    return dataclasses.replace(trace, ranks=ranks)
