"""Plan a Kineto file into chunks that end at event boundaries, and decode one chunk.

Plain files are split by byte range and each worker reads its own range; gzip files are
decompressed as a stream by the caller and handed over as bytes. A chunk that does not decode
as a whole (a wrong split, junk, or the truncated tail) is rescanned event by event.
"""

from __future__ import annotations

import dataclasses
import gc
import gzip
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import msgspec
import numpy as np

from stepscope.errors import TraceFormatError
from stepscope.ingest.assemble import split_chunk
from stepscope.ingest.readers.gzip_stream import GZIP_MAGIC, cut_chunks, gzip_filler
from stepscope.ingest.readers.jsonscan import event_separator, find_events_array, scan_events
from stepscope.ingest.readers.kineto_columns import add_counter_series, events_to_columns
from stepscope.ingest.readers.kineto_decode import ChunkColumns, decode_events
from stepscope.ingest.transfer import HandoverSlots, PackedTables, narrow_for_transfer, pack
from stepscope.model.diagnostics import Diagnostic, DiagnosticsBuilder
from stepscope.model.strings import StringPool

CHUNK_BYTES = 4 << 20  # small enough that a chunk's decoded objects stay in cache (~9 % less CPU per byte than 16 MiB)
PRECISE_TS_ABOVE_US = 2e12  # float64 keeps every ns digit of a µs timestamp only below this
#: what a decoder raises on bytes that are not (valid) JSON: syntax, bad UTF-8, absurd nesting
BAD_JSON = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)
HEAD_BYTES = 8 << 20
FIRST_HEAD_BYTES = 2 << 20


@dataclass(frozen=True)
class ChunkJob:
    """One unit of decoding work: a byte range of a plain file, or bytes already in memory."""

    file_index: int
    path: str
    start: int
    end: int
    data: bytes | None
    is_last: bool
    precise: bool
    slot: int = -1  # the handover slot to pack the result into (see ``transfer.HandoverSlots``)
    in_slot: int = 0  # bytes of ``data`` the main process put in that slot instead (``data`` is then None)


@dataclass
class ChunkResult:
    file_index: int
    columns: ChunkColumns
    tail: bytes  # bytes after the events array (the JSON trailer), last chunk only
    lost_bytes: int  # bytes after the last complete event when the array never closes
    complete: bool  # the events array was closed
    trailing_bytes: int = 0  # separator bytes after a middle chunk's last event (counted as lost
    #                          when the next, final chunk holds no complete event)
    tables: PackedTables | None = None  # the chunk split into the model's tables, ids into ``columns.strings``
    diagnostics: tuple[Diagnostic, ...] = ()  # what the split repaired or dropped


def is_gzip(path: str) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == GZIP_MAGIC


def read_head(path: str, nbytes: int = HEAD_BYTES) -> bytes:
    """The first bytes of a file, decompressing gzip; raises TraceFormatError on gzip junk."""
    try:
        if is_gzip(path):
            with gzip.open(path, "rb") as fh:
                return fh.read(nbytes)
        with open(path, "rb") as fh:
            return fh.read(nbytes)
    except (OSError, EOFError, zlib.error) as exc:
        if isinstance(exc, OSError) and exc.errno is not None:
            raise  # the system's error (no permission ...), not the file's content: reported as such
        if isinstance(exc, (EOFError, gzip.BadGzipFile)):  # cut short, or junk after a member: what is there
            head = _salvage_gzip(path, nbytes)
            if head or isinstance(exc, EOFError):
                return head
        raise TraceFormatError(f"not a readable gzip file ({exc})", path) from None


def _salvage_gzip(path: str, nbytes: int) -> bytes:
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    with open(path, "rb") as fh:
        out = bytearray()
        while len(out) < nbytes:
            block = fh.read(1 << 20)
            if not block:
                break
            try:
                out += d.decompress(block)
            except zlib.error:
                break
        return bytes(out[:nbytes])


def iter_plain(file_index: int, path: str, size: int, events_at: int, precise: bool) -> Iterator[ChunkJob]:
    """Byte ranges of roughly CHUNK_BYTES that start at an event's '{', one job at a time, each as
    soon as the cut after it is found, so decoding starts while the rest of the file is still planned."""
    with open(path, "rb") as fh:
        fh.seek(events_at)
        sep = event_separator(fh.read(1 << 20))
        start, target = events_at, events_at + CHUNK_BYTES
        while sep is not None and target < size - CHUNK_BYTES // 4:
            cut = _find_from(fh, target, sep)
            if cut < 0:
                break
            yield ChunkJob(file_index, path, start, cut, None, False, precise)
            start, target = cut, cut + CHUNK_BYTES
    yield ChunkJob(file_index, path, start, size, None, True, precise)


def _find_from(fh: BinaryIO, at: int, sep: re.Pattern[bytes], limit: int = 4 << 20) -> int:
    """File offset of the '{' that starts the first event after a separator at or after ``at``
    (within ``limit`` bytes), else -1; reads a small window first, growing it 4x while none is found."""
    window = 8 << 10  # Kineto events take ~0.2-2 KiB: the first window nearly always holds a cut
    while True:
        fh.seek(at)
        data = fh.read(window)
        m = sep.search(data)
        if m is not None:
            return at + m.end() - 1
        if window >= limit or len(data) < window:
            return -1
        window = min(window * 4, limit)


def iter_gzip_chunks(file_index: int, path: str, events_at: int, precise: bool,
                     junk: dict[int, int] | None = None) -> Iterator[ChunkJob]:
    """Stream-decompress a gzip file into jobs of roughly CHUNK_BYTES ending at event boundaries
    (:mod:`.gzip_stream`: ISA-L or zlib-ng when installed, one reused buffer, a few chunks in memory).

    Every gzip member is read, as ``gzip -d`` does; bytes after the last one that start no member
    are skipped and their count left in ``junk[file_index]``.
    """
    junk = junk if junk is not None else {}
    fill = gzip_filler(path, lambda n: junk.__setitem__(file_index, n))
    for data, last in cut_chunks(fill, events_at, CHUNK_BYTES):
        yield ChunkJob(file_index, path, 0, 0, data, last, precise)


def _job_bytes(job: ChunkJob) -> bytearray:
    """The chunk's bytes with one spare byte in front (for '['), read without extra copies."""
    if job.data is not None:
        buf = bytearray(len(job.data) + 1)
        buf[1:] = job.data
        return buf
    if job.in_slot and _handover is not None:  # decompressed bytes handed over in the job's slot
        buf = _read_buffer(job.in_slot + 1)
        with _handover.raw(job.slot, job.in_slot) as chunk:
            buf[1:] = chunk
        return buf
    n = job.end - job.start
    buf = _read_buffer(n + 1)
    with open(job.path, "rb") as fh:
        fh.seek(job.start)
        got = fh.readinto(memoryview(buf)[1:])
    del buf[got + 1 :]
    return buf


_spare: list[bytearray] = []  # this process's read buffer, reused chunk after chunk


def _read_buffer(size: int) -> bytearray:
    """A bytearray of ``size`` bytes, reusing the previous chunk's memory when it is free again:
    chunks are alike in size, so resizing stays within the allocation and no page is touched anew."""
    if _spare:
        buf = _spare[0]
        try:
            buf.append(0)  # a resize: raises while anything still views the previous chunk's bytes
        except BufferError:  # still referenced by the previous chunk's decoded values: leave it
            pass
        else:
            if len(buf) > size:
                del buf[size:]
            else:
                buf.extend(bytes(size - len(buf)))
            return buf
    buf = bytearray(size)
    _spare[:] = [buf]
    return buf


_WS = frozenset(b" \t\r\n")
_TAIL_CLOSE = re.compile(rb"\}\s*\]")


def _decode_framed(buf: bytearray, end: int, precise: bool) -> tuple[list[Any], list[tuple[str, str]]]:
    """Decode buf[1:end] as the body of an array: '[' goes in the spare byte, ']' at ``end``."""
    buf[0] = ord("[")
    saved = buf[end] if end < len(buf) else None
    if saved is None:
        buf.append(ord("]"))
    else:
        buf[end] = ord("]")
    try:
        return decode_events(memoryview(buf)[: end + 1], precise)
    finally:
        if saved is not None:
            buf[end] = saved
        else:
            del buf[end:]


def _body_end(buf: bytearray) -> int:
    """Index just past the last event of a middle chunk (trailing whitespace and comma skipped)."""
    i = len(buf)
    while i > 1 and buf[i - 1] in _WS:
        i -= 1
    if i > 1 and buf[i - 1] == ord(","):
        i -= 1
    return i


def decode_chunk(job: ChunkJob) -> ChunkResult:
    """Decode every complete event of one chunk (runs in a worker process).

    A chunk decoded with the fast decoder that turns out to hold fractional timestamps too large
    for float64 to keep every ns digit is decoded again with the exact one.
    """
    paused = gc.isenabled()
    gc.disable()  # a chunk makes ~10^5 short-lived objects and no cycles: collections are pure cost
    try:
        res = _decode_chunk(job)
        if not job.precise and res.columns.float_ts_max > PRECISE_TS_ABOVE_US:
            res = _decode_chunk(dataclasses.replace(job, precise=True))
    finally:
        if paused:
            gc.enable()
    cols = res.columns.cols
    if res.columns.n and "ctr_ts_ns" not in cols and _has_unread_counters(cols):
        add_counter_series(cols, res.columns.strings, _job_bytes(job))
    return _split(res, job.slot)


_handover: HandoverSlots | None = None  # this worker's view of the main process's handover slots


def attach_handover(slots: HandoverSlots | None) -> None:
    """Worker initializer: the handover slots mapped before the fork, for :func:`_split` to pack into."""
    global _handover
    _handover = slots


def _split(res: ChunkResult, slot: int = -1) -> ChunkResult:
    """Split the decoded columns into the model's tables here, in the worker: what travels back to
    the main process is the compact tables (ids into the chunk's own strings), not the wide columns."""
    if not res.columns.n:
        return res
    pool = StringPool(res.columns.strings)
    diags = DiagnosticsBuilder()
    res.tables = pack(narrow_for_transfer(split_chunk(res.columns.cols, pool, diags)), _handover, slot)
    res.diagnostics = diags.freeze()
    res.columns = dataclasses.replace(res.columns, cols={}, strings=pool.strings)
    return res


def _has_unread_counters(cols: dict[str, Any]) -> bool:
    """Counter samples whose args had no "value" key: their series need the generic pass."""
    is_counter = cols["ph"] == ord("C")
    value = cols.get("value")
    return bool(is_counter.any()) and (value is None or bool(np.isnan(value[is_counter]).any()))


def _decode_chunk(job: ChunkJob) -> ChunkResult:
    buf = _job_bytes(job)
    try:
        if not job.is_last:
            end = _body_end(buf)
            evs, dropped = _decode_framed(buf, end, job.precise)
            return ChunkResult(job.file_index, events_to_columns(evs, dropped), b"", 0, True, len(buf) - end)
        fast = _decode_last(buf, job.precise)
        if fast is not None:
            return ChunkResult(job.file_index, events_to_columns(fast[0], fast[1]), fast[2], 0, True)
    except BAD_JSON:
        pass
    return _decode_by_scan(job, bytes(buf[1:]))


def _decode_last(buf: bytearray, precise: bool) -> tuple[list[Any], list[tuple[str, str]], bytes] | None:
    """The closing ']' of the events array is usually the last "}]" of the file: try the last few."""
    window = max(1, len(buf) - (1 << 16))
    closes = [m.end() - 1 for m in _TAIL_CLOSE.finditer(buf, window)]
    for close in reversed(closes[-3:]):
        try:
            evs, dropped = _decode_framed(buf, close, precise)
        except BAD_JSON:
            continue
        return evs, dropped, bytes(buf[close + 1 :])
    return None


def _decode_by_scan(job: ChunkJob, buf: bytes) -> ChunkResult:
    res = scan_events(buf)
    evs: list[Any] = []
    dropped: list[tuple[str, str]] = []
    if len(res.starts):
        body = buf[int(res.starts[0]) : int(res.ends[-1])]
        try:
            evs, dropped = decode_events(b"[" + body + b"]", job.precise)
        except BAD_JSON:
            evs, dropped = _decode_each(buf, res.starts.tolist(), res.ends.tolist(), job.precise)
    tail = buf[res.array_end + 1 :] if res.array_end >= 0 else b""
    lost = 0
    if job.is_last and res.array_end < 0:
        last_end = int(res.ends[-1]) if len(res.ends) else 0
        lost = len(buf.rstrip()) - last_end
    return ChunkResult(job.file_index, events_to_columns(evs, dropped), tail, max(lost, 0),
                       res.array_end >= 0)


def _decode_each(buf: bytes, starts: list[int], ends: list[int],
                 precise: bool) -> tuple[list[Any], list[tuple[str, str]]]:
    """Slow path: events one at a time; malformed ones are dropped and counted."""
    evs: list[Any] = []
    dropped: list[tuple[str, str]] = []
    for a, b in zip(starts, ends):
        try:
            got, bad = decode_events(b"[" + buf[a:b] + b"]", precise)
            evs.extend(got)
            dropped.extend(bad)
        except BAD_JSON as exc:
            dropped.append(("event-malformed", f"{type(exc).__name__} {exc}: {buf[a:min(b, a + 160)]!r}"))
    return evs, dropped


def locate_events(path: str) -> tuple[bytes, int, bool]:
    """The head of a file, the offset of its events array body, and whether it is a bare list.

    The array starts within the first few KiB of any trace seen so far: 2 MiB are read first, and
    up to HEAD_BYTES only when it is not there."""
    head = read_head(path, FIRST_HEAD_BYTES)
    if not head.strip():
        raise TraceFormatError("file is empty", path)
    at, bare = find_events_array(head)
    if at < 0 and len(head) == FIRST_HEAD_BYTES:
        head = read_head(path)
        at, bare = find_events_array(head)
    if at < 0:
        first = head.lstrip()[:1]
        if first not in (b"{", b"["):
            raise TraceFormatError(_not_json_hint(path), path)
        raise TraceFormatError("no \"traceEvents\" array found in the first 8 MiB", path)
    return head, at, bare


#: files users hold that no reader takes, and what to do instead
_OTHER_FORMATS = (
    ((".nsys-rep", ".qdrep"), "an Nsight Systems report: export it with 'nsys export --type sqlite "
                              "--output trace.sqlite FILE' and pass the .sqlite"),
    ((".ncu-rep",), "an Nsight Compute report (per-kernel metrics, no timeline): not a trace stepscope reads"),
    ((".tmp",), "an unfinished temporary file: wait for the profiler to finish writing"),
)


def _not_json_hint(path: str) -> str:
    """Why a file that is not JSON was refused, and what to pass instead when its kind is known."""
    low = path.lower()
    for ends, hint in _OTHER_FORMATS:
        if low.endswith(ends):
            return hint
    if low.endswith(".gz"):
        if not is_gzip(path):
            return "not a gzip file, though named .gz, and not a plain JSON trace either"
        return "a gzip file, but what it holds is not a JSON trace (it does not start with '{' or '[')"
    return "not a JSON trace (does not start with '{' or '[')"
