"""Decompress a gzip trace into chunks that end at event boundaries, off the main thread.

``tensorboard_trace_handler(use_gzip=True)`` writes ``.json.gz``, so this is the common case, and the
one stage of a gzip read that is serial: the decoding workers wait for the chunks it cuts. Three
things keep it from being the bottleneck:

* **ISA-L** (``pip install isal``, the ``gzip`` extra) or **zlib-ng** when installed: ``igzip`` /
  ``gzip_ng`` inflate ~3x faster than zlib, and their readers decompress straight into our buffer
  (``readinto``) with the GIL released. Without either, CPython's zlib (which releases the GIL
  too) does the same work, slower.
* **A producer thread** (:func:`threaded`) decompresses and cuts while the main thread submits
  chunks and collects the workers' results, so the two overlap instead of taking turns.
* **One copy per chunk**: inflated bytes land in a reused buffer; each chunk is copied out once.

Damaged files read exactly as before: the fast readers stop at junk after the last member or a cut
stream, and the rest is read again by the zlib path (:func:`_inflate`), which salvages what a cut
stream holds and counts junk bytes after the last member (``gzip -d`` semantics), skipping what
the fast reader already delivered.
"""

from __future__ import annotations

import importlib
import os
import queue
import re
import threading
import zlib
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, TypeVar

from stepscope.ingest.readers.jsonscan import event_separator

T = TypeVar("T")
GZIP_MAGIC = b"\x1f\x8b"
PIECE_BYTES = 4 << 20  # one inflate call's output at most
#: the fast gzip readers, best first: (module, what the README calls it)
FAST_READERS = (("isal.igzip", "isal"), ("zlib_ng.gzip_ng", "zlib-ng"))


def _fast_module() -> tuple[Any, str] | tuple[None, str]:
    for name, label in FAST_READERS:
        try:
            return importlib.import_module(name), label
        except ImportError:
            continue
    return None, "zlib"


FAST, BACKEND = _fast_module()
#: the fast readers' own error classes (ISA-L's lives in its ``igzip_lib``, not in ``igzip``)
FAST_ERROR_CLASSES = (("isal.igzip_lib", "IsalError"), ("zlib_ng.zlib_ng", "error"))


def _fast_errors() -> tuple[type[BaseException], ...]:
    out: list[type[BaseException]] = []
    for module, name in FAST_ERROR_CLASSES:
        try:
            cls = getattr(importlib.import_module(module), name, None)
        except ImportError:
            continue
        if isinstance(cls, type) and issubclass(cls, BaseException):
            out.append(cls)
    return tuple(out)


#: what the fast readers raise on a damaged stream (the zlib path then takes over)
FAST_ERRORS: tuple[type[BaseException], ...] = (EOFError, ValueError, zlib.error, OSError, *_fast_errors())


def _inflate(fh: BinaryIO, skipped: Callable[[int], None]) -> Iterator[bytes]:
    """Decompressed pieces of at most ~4 MiB each with zlib, member after member; a corrupt or cut
    stream ends quietly (salvage); ``skipped`` is told how many bytes after the last member start none."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    pending = b""
    while True:
        if not pending:
            pending = fh.read(1 << 20)
            if not pending:
                try:
                    tail = d.flush()
                except zlib.error:
                    tail = b""
                yield tail
                return
        try:
            out = d.decompress(pending, PIECE_BYTES)
        except zlib.error:
            return
        pending = d.unconsumed_tail
        yield out
        if d.eof:
            rest = d.unused_data + fh.read(max(0, len(GZIP_MAGIC) - len(d.unused_data)))
            if not rest.startswith(GZIP_MAGIC):  # the end, or junk after the last member
                left = len(rest) + os.fstat(fh.fileno()).st_size - fh.tell()
                if left:
                    skipped(left)
                return
            d, pending = zlib.decompressobj(16 + zlib.MAX_WBITS), rest


class _SlowReader:
    """``readinto`` over :func:`_inflate` of a file, after its first ``skip`` decompressed bytes."""

    def __init__(self, path: str, skip: int, skipped: Callable[[int], None]) -> None:
        self._fh = open(path, "rb")  # noqa: SIM115 - closed when the stream ends
        self._pieces = _inflate(self._fh, skipped)
        self._left = memoryview(b"")
        self._skip = skip

    def readinto(self, out: memoryview) -> int:
        while not len(self._left):
            piece = next(self._pieces, None)
            if piece is None:
                self._fh.close()
                return 0
            cut = min(len(piece), self._skip)
            self._skip -= cut
            self._left = memoryview(piece)[cut:]
        n = min(len(out), len(self._left))
        out[:n] = self._left[:n]
        self._left = self._left[n:]
        return n


class _FastReader:
    """``readinto`` with ISA-L / zlib-ng; on a damaged stream the zlib path goes on from where it stopped."""

    def __init__(self, path: str, skipped: Callable[[int], None]) -> None:
        self._path, self._skipped = path, skipped
        self._fh = FAST.open(path, "rb") if FAST is not None else None
        self._slow: _SlowReader | None = None if FAST is not None else _SlowReader(path, 0, skipped)
        self._done = 0

    def readinto(self, out: memoryview) -> int:
        if self._slow is not None:
            return self._slow.readinto(out)
        try:
            n = int(self._fh.readinto(out))  # type: ignore[union-attr]
        except FAST_ERRORS as exc:
            if isinstance(exc, OSError) and exc.errno is not None:
                raise  # the system's error (no permission ...), not the file's content
            self._fh.close()  # type: ignore[union-attr]
            self._slow = _SlowReader(self._path, self._done, self._skipped)
            return self._slow.readinto(out)
        if n == 0:
            self._fh.close()  # type: ignore[union-attr]
            self._count_padding()
        self._done += n
        return n

    def _count_padding(self) -> None:
        """The fast readers skip zero bytes after the last member quietly; the zlib path counts them
        as junk. A file that ends in a zero byte not explained by its (single) member's length field
        is read once more by the zlib path, which counts them (a small file, or a rare one)."""
        with open(self._path, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - 4))
            tail = fh.read(4)
        if tail[-1:] != b"\0" or int.from_bytes(tail, "little") == self._done % (1 << 32):
            return
        slow, scratch = _SlowReader(self._path, self._done, self._skipped), bytearray(1 << 20)
        while slow.readinto(memoryview(scratch)):
            pass


def gzip_filler(path: str, skipped: Callable[[int], None]) -> Callable[[memoryview], int]:
    """``fill(buffer) -> bytes written (0 at the end)``: the decompressed file, fast where it can be."""
    return _FastReader(path, skipped).readinto


def cut_chunks(fill: Callable[[memoryview], int], skip: int, chunk_bytes: int) -> Iterator[tuple[bytes, bool]]:
    """(chunk, is_last) of roughly ``chunk_bytes`` each, every one but the last ending just before
    an event's '{' (the separator is learnt from the first MiB), after the first ``skip`` bytes."""
    buf = bytearray(chunk_bytes + (2 << 20))
    filled = 0
    sep: re.Pattern[bytes] | None = None
    while True:
        if filled == len(buf):
            buf.extend(bytes(len(buf) // 2))  # no cut found yet: a huge event, grow
        with memoryview(buf) as mv:
            got = fill(mv[filled:])
        if got == 0:
            yield bytes(buf[:filled]), True
            return
        drop = min(skip, got)  # the file's head before the events array
        if drop:
            buf[filled : filled + got - drop] = buf[filled + drop : filled + got]
            skip -= drop
        filled += got - drop
        if sep is None and filled > (1 << 20):
            sep = event_separator(bytes(buf[: 1 << 20]))
        while sep is not None and filled >= chunk_bytes + (1 << 20):
            m = sep.search(buf, chunk_bytes, filled)
            if m is None:
                break
            cut = m.end() - 1
            with memoryview(buf) as mv:
                chunk = bytes(mv[:cut])
                mv[: filled - cut] = mv[cut:filled]
            filled -= cut
            yield chunk, False


def threaded(items: Iterator[T], depth: int = 2) -> Iterator[T]:
    """``items`` made by a thread of their own, at most ``depth`` ahead of the consumer; an error
    there is raised here, and a consumer that stops early stops the thread."""
    q: queue.Queue[tuple[str, Any]] = queue.Queue(depth)
    stop = threading.Event()

    def put(item: tuple[str, Any]) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(("item", item)):
                    return
            put(("end", None))
        except BaseException as exc:  # handed to the consumer, which raises it
            put(("error", exc))

    worker = threading.Thread(target=produce, name="stepscope-gzip", daemon=True)
    worker.start()
    try:
        while True:
            kind, value = q.get()
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()
        worker.join()
