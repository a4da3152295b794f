"""The small parts of a snapshot pickle (segments, settings, annotations), read by the pure-Python
unpickler driven op by op, while the allocation history is skipped for the columnar reader.

``FrameReader`` serves the pickle's bytes with the FRAME headers left out, from any position;
``PlainVM`` is ``pickle._Unpickler`` with ``find_class`` refused (no global can be named, so
nothing can be called: the same guarantee as the restricted C unpickler), a memo that counts its
own indices (so that the history's memoised objects, read elsewhere, keep the numbering) and a
``run_to(pos)`` that stops before a given byte. References into the skipped history resolve to
the strings it held (``resolve``); anything else is ``Fallback``.
"""

from __future__ import annotations

import bisect
import pickle
from collections.abc import Callable
from typing import IO, Any, ClassVar


class Fallback(Exception):
    """The columnar reader cannot read this pickle; the restricted unpickler reads it whole."""


class FrameReader:
    def __init__(self, fh: IO[bytes], frames: list[tuple[int, int]]) -> None:
        self.fh, self.frames = fh, frames
        self.starts = [s for s, _ in frames]
        self.pos = frames[0][0] if frames else 0
        self._k, self._data = -1, b""

    def _frame(self, pos: int) -> int:
        k = bisect.bisect_right(self.starts, pos) - 1
        if k < 0 or pos >= self.frames[k][1]:
            k += 1  # at the end of a frame: the next one
            if k >= len(self.frames):
                return -1
            self.pos = pos = self.frames[k][0]
        if k != self._k:
            s, e = self.frames[k]
            self.fh.seek(s)
            self._k, self._data = k, self.fh.read(e - s)
        return k

    def read(self, n: int) -> bytes:
        out = b""
        while n > 0:
            k = self._frame(self.pos)
            if k < 0:
                break
            off = self.pos - self.frames[k][0]
            got = self._data[off:off + n]
            out += got
            self.pos += len(got)
            n -= len(got)
        return out

    def readline(self) -> bytes:
        raise Fallback("a text opcode")  # only the text protocol's ops (GLOBAL, INT ...) read lines

    def readinto(self, buf: Any) -> int:
        raise Fallback("an out-of-band buffer")


class _Memo(dict[int, Any]):
    def __init__(self, resolve: Callable[[int], Any]) -> None:
        super().__init__()
        self.resolve = resolve

    def __missing__(self, key: int) -> Any:
        return self.resolve(key)


class PlainVM(pickle._Unpickler):
    dispatch: ClassVar[dict[int, Any]] = dict(pickle._Unpickler.dispatch)

    def __init__(self, reader: FrameReader, resolve: Callable[[int], Any]) -> None:
        super().__init__(reader)
        self.reader = reader
        self.memo: dict[int, Any] = _Memo(resolve)
        self.count = 0  # the next memo index
        self.result: Any = None
        self.done = False
        self._unframer = pickle._Unframer(reader.read, reader.readline)  # type: ignore[attr-defined]
        self.read, self.readline = self._unframer.read, self._unframer.readline
        self.readinto = self._unframer.readinto
        self.metastack: list[Any] = []
        self.stack: list[Any] = []
        self.append = self.stack.append
        self.proto = 4

    def find_class(self, module: str, name: str) -> Any:
        raise Fallback(f"it names {module}.{name}")  # the restricted unpickler refuses it with its one line

    def load_memoize(self) -> None:
        self.memo[self.count] = self.stack[-1]
        self.count += 1

    dispatch[pickle.MEMOIZE[0]] = load_memoize

    def run_to(self, pos: int | None) -> None:
        """Execute opcodes until the reader is at byte ``pos`` (None: until STOP)."""
        while not self.done and (pos is None or self.reader.pos < pos):
            key = self.read(1)
            if not key:
                raise EOFError("the pickle ends before STOP")
            try:
                self.dispatch[key[0]](self)
            except pickle._Stop as stop:  # type: ignore[attr-defined]
                self.result, self.done = stop.value, True
            except KeyError as exc:
                raise Fallback(f"opcode {key!r}") from exc
