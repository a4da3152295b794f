"""Read Kineto chrome-trace files (``.json`` / ``.json.gz``) into per-file column batches.

All chunks of all files go through one process pool (one worker per core), bounded so that at
most a few chunks are in flight; the main process remaps string ids as results arrive.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

import msgspec

from stepscope.errors import TraceFormatError
from stepscope.ingest.assemble import remap_strings
from stepscope.ingest.readers.batch import FileBatch, Repair
from stepscope.ingest.readers.gzip_stream import threaded
from stepscope.ingest.readers.jsonscan import scan_events
from stepscope.ingest.readers.kineto_chunks import (
    CHUNK_BYTES,
    PRECISE_TS_ABOVE_US,
    ChunkJob,
    ChunkResult,
    attach_handover,
    decode_chunk,
    is_gzip,
    iter_gzip_chunks,
    iter_plain,
    locate_events,
)
from stepscope.ingest.readers.kineto_decode import FAST_DECODER
from stepscope.ingest.readers.sqlite_tables import SQLITE_MAGIC
from stepscope.ingest.transfer import HandoverSlots, unpack
from stepscope.model.diagnostics import DiagnosticsBuilder
from stepscope.model.strings import StringPool
from stepscope.runtime.cores import usable_cores
from stepscope.runtime.pool import fork_pool

PARALLEL_ABOVE_BYTES = 16 << 20
#: a chunk's packed tables take ~0.3-0.5 MB (up to ~2 MB for chunks of tiny events), a decompressed
#: chunk a little over CHUNK_BYTES on its way to the worker; bigger ones go by pipe (pages of the
#: shared mapping are made on first touch: a slot costs memory only as far as it was filled)
HANDOVER_SLOT_BYTES = CHUNK_BYTES + (2 << 20)

Progress = Callable[[int], None]


def _needs_precise(head: bytes, at: int) -> bool:
    res = scan_events(head[at : at + (1 << 20)])
    if len(res.starts) == 0:
        return False
    body = head[at + int(res.starts[0]) : at + int(res.ends[-1])]
    try:
        evs = FAST_DECODER.decode(b"[" + body + b"]")
    except (msgspec.MsgspecError, UnicodeDecodeError, RecursionError):
        return False
    return any(type(e.ts) is float and abs(e.ts) > PRECISE_TS_ABOVE_US for e in evs[:2000])


def _jobs(paths: list[str], heads: list[tuple[bytes, int, bool]], gzip_junk: dict[int, int]) -> Iterator[ChunkJob]:
    for i, (path, (head, at, _bare)) in enumerate(zip(paths, heads)):
        precise = _needs_precise(head, at)
        if is_gzip(path):
            yield from threaded(iter_gzip_chunks(i, path, at, precise, gzip_junk))  # decompressed beside us
        else:
            yield from iter_plain(i, path, os.path.getsize(path), at, precise)


def _bounded_map(pool: ProcessPoolExecutor | None, jobs: Iterable[ChunkJob], inflight: int,
                 slots: HandoverSlots | None = None) -> Iterator[ChunkResult]:
    """Results in job order, never more than ``inflight`` jobs submitted ahead; each job in flight
    holds a handover slot (when ``slots`` are given) until its result's bytes are collected."""
    if pool is None:
        yield from map(decode_chunk, jobs)
        return
    pending: deque[tuple[Future[ChunkResult], int]] = deque()

    def taken() -> ChunkResult:
        future, slot = pending.popleft()
        res = future.result()
        if slots is not None:
            if res.tables is not None:
                res.tables = slots.collect(res.tables)
            slots.release(slot)
        return res

    for job in jobs:
        slot = slots.acquire() if slots is not None else -1
        pending.append((pool.submit(decode_chunk, _in_slot(job, slots, slot)), slot))
        if len(pending) >= inflight:
            yield taken()
    while pending:
        yield taken()


def _in_slot(job: ChunkJob, slots: HandoverSlots | None, slot: int) -> ChunkJob:
    """The job with its slot; a chunk already in memory (decompressed) goes in that slot too, so
    that it reaches the worker by one copy through shared memory instead of four through the pipe."""
    data = job.data
    if slots is None or slot < 0 or data is None or len(data) > slots.slot_bytes:
        return dataclasses.replace(job, slot=slot)
    with slots.raw(slot, len(data)) as into:
        into[:] = data
    return dataclasses.replace(job, slot=slot, data=None, in_slot=len(data))


def _handover_slots(count: int) -> HandoverSlots | None:
    """Shared slots for the results, or None (results then go by pipe) where the system refuses the
    mapping."""
    try:
        return HandoverSlots(count, HANDOVER_SLOT_BYTES)
    except (OSError, ValueError):
        return None


def _worker_count(paths: list[str], workers: int | None) -> int:
    if workers is not None:
        return max(1, workers)
    total = sum(os.path.getsize(p) for p in paths)
    if total < PARALLEL_ABOVE_BYTES:
        return 1
    return usable_cores()


def sniff(path: str) -> bool:
    """Any file the SQLite readers do not claim is read as Kineto / chrome-trace JSON (plain or gzip);
    an unreadable file too: reading it reports the error (see :mod:`stepscope.ingest.source`)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(16) != SQLITE_MAGIC
    except OSError:
        return True


def read(path: str, pool: StringPool, diags: DiagnosticsBuilder) -> FileBatch:
    """One file on one core (the local engine reads many files at once with :func:`read_kineto_files`)."""
    return read_kineto_files([path], pool, diags, workers=1)[0]


def read_kineto_files(paths: list[str], pool_strings: StringPool, diags: DiagnosticsBuilder,
                      workers: int | None = None, progress: Progress | None = None,
                      depth: int = 0) -> list[FileBatch]:
    """Decode every file (chunks in parallel, each split into the model's tables by its worker); the
    main process only maps each chunk's string ids into ``pool_strings`` as the chunk arrives. A JSON
    document that follows a file's trace is read as part of that file (``depth``: how many did)."""
    heads = [locate_events(p) for p in paths]
    batches = [FileBatch(p, os.path.getsize(p)) for p in paths]
    tails: list[bytes] = [b""] * len(paths)
    gzip_junk: dict[int, int] = {}  # file index → bytes after its last gzip member
    trailing = [0] * len(paths)
    n = _worker_count(paths, workers)
    inflight = 3 * n  # results are taken in job order: slack lets workers run ahead of a slow chunk
    slots = _handover_slots(inflight) if n > 1 else None
    pool = fork_pool(n, attach_handover, slots) if n > 1 else None
    try:
        for res in _bounded_map(pool, _jobs(paths, heads, gzip_junk), inflight, slots):
            b = batches[res.file_index]
            if res.columns.n:
                assert res.tables is not None
                b.parts.append(remap_strings(unpack(res.tables), pool_strings.id_map(res.columns.strings)))
                diags.extend(res.diagnostics)
                b.n_events += res.columns.n
            b.dropped.extend(res.columns.dropped)
            if res.tail or res.lost_bytes or not res.complete:
                tails[res.file_index] = res.tail
                b.lost_bytes += res.lost_bytes + (trailing[res.file_index] if res.columns.n == 0 else 0)
                b.complete = res.complete
            trailing[res.file_index] = res.trailing_bytes
            if progress is not None:
                progress(res.columns.n)
    finally:
        if pool is not None:
            pool.shutdown()
    for i, b in enumerate(batches):
        b.meta, b.meta_error, after, following = _parse_meta(heads[i], tails[i], b.complete)
        b.repairs += after
        if following:
            b.repairs.append(_read_following(b, following, pool_strings, diags, depth))
        if i in gzip_junk:
            b.repairs.append(("gzip-trailing-data", "warning", f"{gzip_junk[i]:,} bytes after the last gzip member "
                              "were ignored (as gzip -d does)", 1))
    return batches


def _parse_meta(head_info: tuple[bytes, int, bool], tail: bytes,
                complete: bool) -> tuple[dict[str, Any], str, list[Repair], bytes]:
    """The trace's top-level keys other than traceEvents (header before it, trailer after it), what
    follows the document reported (junk), and a second document that follows it (its bytes)."""
    head, at, bare = head_info
    if bare:
        return {}, "", *_after_document(tail.decode("utf-8", "replace") if complete else "")
    key_at = head.rfind(b'"traceEvents"', 0, at)
    text = head[:key_at] + b'"traceEvents": null' + (tail if complete and tail.strip() else b"}")
    bad = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)
    try:
        meta = msgspec.json.decode(text)
    except bad as exc:
        found = _document_and_rest(text)
        if found is not None:
            return found
        try:  # the trailer may be damaged: the header alone still has the device properties
            meta = msgspec.json.decode(head[:key_at] + b'"traceEvents": null}')
        except bad:
            return {}, str(exc), [], b""
    return (meta if isinstance(meta, dict) else {}), "", [], b""


def _document_and_rest(text: bytes) -> tuple[dict[str, Any], str, list[Repair], bytes] | None:
    """The top-level object at the start of ``text`` and what follows it; None when ``text`` does
    not start with a whole object."""
    decoded = text.decode("utf-8", "replace")
    try:
        doc, end = json.JSONDecoder().raw_decode(decoded)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    return (_without_lone_surrogates(doc), "", *_after_document(decoded[end:]))


def _without_lone_surrogates(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with each lone surrogate (``"\\ud800"``: valid JSON to ``json``, not Unicode that can
    be encoded; msgspec refuses it) replaced by ``?``, so that the metadata can be saved and shown."""
    text = json.dumps(doc, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        fixed = json.loads(text.encode("utf-8", "replace"))
        return fixed if isinstance(fixed, dict) else {}
    return doc


def _after_document(rest: str) -> tuple[list[Repair], bytes]:
    """A repair naming the junk after a document, or the bytes of a second document."""
    rest = rest.strip()
    if not rest:
        return [], b""
    if rest[:1] in ("{", "["):
        return [], rest.encode("utf-8", "surrogatepass")
    return [("trailing-data", "warning", f"{len(rest):,} characters after the end of the JSON document were "
             f"ignored: {rest[:40]!r}", 1)], b""


#: concatenated documents read as part of one file, at most (the rest is reported, not read)
MAX_FOLLOWING = 8


def _read_following(b: FileBatch, data: bytes, pool: StringPool, diags: DiagnosticsBuilder, depth: int) -> Repair:
    """Read the document that follows ``b``'s trace into ``b`` (the first document's metadata
    stays); the repair that says so, with the number of events it held."""
    what = f"a second JSON document follows the trace ({len(data):,} bytes, starting {data[:30]!r})"
    if depth >= MAX_FOLLOWING:
        return ("document-dropped", "error", f"{what}; more than {MAX_FOLLOWING} documents in one file: not read", 1)
    with tempfile.TemporaryDirectory(prefix="stepscope-doc-") as tmp:
        path = os.path.join(tmp, "following.json")
        with open(path, "wb") as fh:
            fh.write(data)
        try:
            sub = read_kineto_files([path], pool, diags, workers=1, depth=depth + 1)[0]
        except TraceFormatError as exc:
            return ("document-dropped", "error", f"{what}; not readable: {exc.message}", 1)
    b.parts += sub.parts
    b.n_events += sub.n_events
    b.dropped += sub.dropped
    b.repairs += sub.repairs
    if not sub.complete:
        b.repairs.append(("truncated-file", "error", f"the second document's events array never closes: "
                          f"{sub.lost_bytes} bytes after its last complete event were dropped", 1))
    return ("document-appended", "warning", f"{what}: its {sub.n_events:,} events were read as part of this "
            "file (its metadata ignored)", max(sub.n_events, 1))
