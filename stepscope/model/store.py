"""Save / load a canonical Trace as Arrow IPC files: the parse cache, and portable ``.stepscope`` dirs.

Layout of one stored trace (a directory)::

    meta.json        ranks, diagnostics, source, row counts, format version, each file's checksum
    strings.arrow    the string pool
    <table>.arrow    events, tracks, steps, memory, counters, flows

Columns are stored compactly and restored to the schema's dtypes on load: a column that holds only
the schema's absent value (``-1``, NaN, ...) is not stored at all (it is that value again on load);
an integer column whose values fit a narrower type is stored as int8 / int16 / int32. A 5 M-event
trace's event table went from 1,085 MB (every column at its schema width) to 250 MB. The buffers
are not compressed: files are memory-mapped on load, so a reopen costs little more than the
metadata and the widening of the narrowed columns (zstd made that entry 38 MB but its reopen
0.03 → 0.19 CPU-s and every page private memory; docs/benchmarks.md, the dense trace).

Writes go to a temporary sibling directory that is renamed into place (atomic); a temporary
directory left by a killed write is removed by a later write once it has not changed for
:data:`ORPHAN_AGE_S` seconds (a writer still at work keeps touching its files).

Nothing read back is trusted: ``meta.json`` is an envelope ``{"xxh3_128": digest, "meta": {...}}``
whose digest covers the exact bytes of ``meta``, which is decoded strictly (msgspec, every field
typed) and names the xxh3-128 digest of every Arrow file, checked before the file is mapped. A
flipped bit anywhere, a truncated file or a ``meta.json`` of another shape is a
:class:`CorruptStoreError` (the cache rebuilds the entry), never a wrong value.

The cache is keyed by content, so one entry serves everyone who reads the same files, by whatever
path: ``meta.json`` keeps the path and files it was saved from, and :func:`load` given the path and
files of *this* read puts them back in the trace's source, its ranks' sources and its diagnostics.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import xxhash

from stepscope.model.diagnostics import Diagnostic
from stepscope.model.schema import TABLE_SCHEMAS
from stepscope.model.strings import StringPool
from stepscope.model.table import Table
from stepscope.model.trace import RankInfo, Trace

STORE_VERSION = 4  # 3: events gained src_rank / dst_rank; 4: compact columns (absent ones not stored, narrowed)
#: a temporary directory untouched for this long is a killed write's, and is removed
ORPHAN_AGE_S = 300.0
_TMP_PREFIX = ".tmp-"
_FILES = (*TABLE_SCHEMAS, "strings")
_WINDOW_BYTES = 16 << 20  # a multiple of mmap.ALLOCATIONGRANULARITY
_NARROW = (np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32))
_NUMPY_OF: dict[pa.DataType, np.dtype[Any]] = {
    pa.int8(): np.dtype(np.int8), pa.int16(): np.dtype(np.int16), pa.int32(): np.dtype(np.int32),
    pa.int64(): np.dtype(np.int64), pa.float32(): np.dtype(np.float32), pa.float64(): np.dtype(np.float64)}


class CorruptStoreError(Exception):
    """A stored trace is incomplete or damaged (callers rebuild it)."""


class Meta(msgspec.Struct, frozen=True):
    """What ``meta.json`` holds (decoded strictly: a field of another type is a damaged entry)."""

    version: int
    source: str
    files: list[str]
    rows: dict[str, int]
    strings: int
    ranks: list[RankInfo]
    diagnostics: list[Diagnostic]
    checksums: dict[str, str]  # "<name>.arrow" -> xxh3-128 hex digest of its bytes


class _Envelope(msgspec.Struct, frozen=True):
    xxh3_128: str
    meta: msgspec.Raw  # the exact bytes the digest covers


_ENCODER = msgspec.json.Encoder(enc_hook=str)  # a metadata value JSON cannot hold is kept as text


def save(trace: Trace, target: Path, files: Sequence[str] = ()) -> None:
    """Write ``trace`` to directory ``target`` atomically (replacing an old copy); ``files``: the
    files it was read from, in reading order. Old orphans of killed writes beside it are removed."""
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_orphans(target.parent)
    tmp = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, dir=target.parent))
    try:
        for name in TABLE_SCHEMAS:
            _write_arrow(_stored(getattr(trace, name)), tmp / f"{name}.arrow")
        _write_arrow(pa.table({"s": pa.array(trace.strings.strings, pa.string())}), tmp / "strings.arrow")
        meta = Meta(version=STORE_VERSION, source=trace.source, files=list(files),
                    rows={name: len(getattr(trace, name)) for name in TABLE_SCHEMAS}, strings=len(trace.strings),
                    ranks=list(trace.ranks), diagnostics=list(trace.diagnostics),
                    checksums={f"{n}.arrow": _file_digest(tmp / f"{n}.arrow") for n in _FILES})
        body = _ENCODER.encode(meta)
        (tmp / "meta.json").write_bytes(_ENCODER.encode(_Envelope(_digest(body), msgspec.Raw(body))))
        if target.exists():
            shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def remove_orphans(parent: Path, max_age_s: float = ORPHAN_AGE_S) -> None:
    """Remove the temporary directories of killed writes under ``parent``: those whose newest change
    (the directory or a file in it) is older than ``max_age_s``, so a concurrent write is left alone."""
    now = time.time()
    for d in parent.glob(f"{_TMP_PREFIX}*"):
        try:
            newest = max([d.stat().st_mtime, *(f.stat().st_mtime for f in d.iterdir())])
        except OSError:  # gone meanwhile (another process removed or renamed it), or not a directory
            continue
        if now - newest > max_age_s:
            shutil.rmtree(d, ignore_errors=True)


def _stored(table: Table) -> pa.Table:
    """The columns worth storing, each in the narrowest integer type that holds its values."""
    cols = {name: pa.array(_narrowed(table[name])) for name, (_, fill) in table.schema.items()
            if len(table) and not _only(table, name, fill)}
    return pa.table(cols)


def _only(table: Table, name: str, fill: int | float) -> bool:
    """Whether column ``name`` holds nothing but the schema's absent value ``fill``."""
    col = table[name]
    if isinstance(fill, float) and np.isnan(fill):
        return bool(np.isnan(col).all())
    return bool((col == fill).all())


def _narrowed(col: npt.NDArray[Any]) -> npt.NDArray[Any]:
    if col.dtype.kind != "i" or col.dtype.itemsize == 1:
        return col
    lo, hi = int(col.min()), int(col.max())
    for t in _NARROW:
        if t.itemsize < col.dtype.itemsize and np.iinfo(t).min <= lo and hi <= np.iinfo(t).max:
            return col.astype(t)
    return col


def _write_arrow(table: pa.Table, path: Path) -> None:
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def _digest(data: Any) -> str:
    return str(xxhash.xxh3_128_hexdigest(data))


def _file_digest(path: Path) -> str:
    """xxh3-128 of a file's bytes, hashed through a memory map a window at a time: as fast as mapping
    it whole (no copy) without keeping every page in the process (+150 MB RSS for analyze)."""
    h = xxhash.xxh3_128()
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        for offset in range(0, size, _WINDOW_BYTES):
            with mmap.mmap(fh.fileno(), min(_WINDOW_BYTES, size - offset), offset=offset,
                           access=mmap.ACCESS_READ) as window:
                h.update(window)
    return str(h.hexdigest())


def _read_arrow(target: Path, name: str, meta: Meta) -> pa.Table:
    """One Arrow file (memory-mapped: read lazily, shared with the page cache), after checking its
    bytes against the digest ``meta.json`` names."""
    if meta.checksums.get(name) != _file_digest(target / name):
        raise CorruptStoreError(f"{name} does not match its checksum")
    return pa.ipc.open_file(pa.memory_map(str(target / name), "r")).read_all()


def _table(target: Path, name: str, meta: Meta) -> Table:
    """Stored table ``name``: its stored columns widened back to the schema's dtypes, the others
    filled with the schema's absent value."""
    schema, n = TABLE_SCHEMAS[name], meta.rows[name]
    data = _read_arrow(target, f"{name}.arrow", meta)
    if (data.num_columns and data.num_rows != n) or not set(data.column_names) <= set(schema):
        raise CorruptStoreError(f"{name}.arrow does not hold the columns meta.json describes")
    return Table(schema, {k: _numpy(data.column(k)) for k in data.column_names}, n)


def _numpy(col: pa.ChunkedArray) -> npt.NDArray[Any]:
    """A stored column as numpy, a view of the mapped file for one chunk (pyarrow's ``to_numpy``
    imports pandas on first use: 0.5 s of a 0.9 s reopen)."""
    chunks = [_chunk_numpy(c) for c in col.chunks]
    if not chunks:  # (a table of rows is written as one chunk per column)
        return np.zeros(0, np.int64)
    return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)


def _chunk_numpy(chunk: pa.Array) -> npt.NDArray[Any]:
    dtype = _NUMPY_OF.get(chunk.type)
    if dtype is None or chunk.null_count:  # (never stored so: the general path)
        return np.asarray(chunk.to_numpy(zero_copy_only=False))
    return np.frombuffer(chunk.buffers()[1], dtype, len(chunk), chunk.offset * dtype.itemsize)


def read_meta(target: Path) -> Meta:
    """``meta.json``, checked against its digest and decoded strictly (:class:`CorruptStoreError` otherwise)."""
    try:
        env = msgspec.json.decode((target / "meta.json").read_bytes(), type=_Envelope)
        if _digest(env.meta) != env.xxh3_128:
            raise CorruptStoreError("meta.json does not match its checksum")
        meta = msgspec.json.decode(env.meta, type=Meta)
    except msgspec.MsgspecError as exc:
        raise CorruptStoreError(f"meta.json: {exc}") from exc
    if meta.version != STORE_VERSION:
        raise CorruptStoreError(f"store version {meta.version}, not {STORE_VERSION}")
    if set(meta.rows) != set(TABLE_SCHEMAS) or set(meta.checksums) != {f"{n}.arrow" for n in _FILES}:
        raise CorruptStoreError("meta.json does not list the stored files")
    return meta


def load(target: Path, source: str | None = None, files: Sequence[str] = ()) -> Trace:
    """Read a stored trace; raises :class:`CorruptStoreError` when anything is missing or damaged.

    ``source`` / ``files``: the path and files of this read, shown instead of those it was saved from."""
    meta = read_meta(target)
    try:
        tables = {name: _table(target, name, meta) for name in TABLE_SCHEMAS}
        strings = _read_arrow(target, "strings.arrow", meta).column("s").to_pylist()
    except (OSError, ValueError, KeyError, pa.ArrowException) as exc:
        raise CorruptStoreError(str(exc)) from exc
    if len(strings) != meta.strings or any(len(tables[k]) != v for k, v in meta.rows.items()):
        raise CorruptStoreError("row counts differ from meta.json")
    trace = Trace(strings=StringPool(strings), ranks=tuple(meta.ranks), diagnostics=tuple(meta.diagnostics),
                  source=meta.source, **tables)
    return _as_read(trace, meta, source, files)


def _as_read(trace: Trace, meta: Meta, source: str | None, files: Sequence[str]) -> Trace:
    """The trace with the saved path and files replaced by those of this read."""
    paths = {meta.source: source} if source is not None else {}
    saved = meta.files
    if len(saved) == len(files):
        paths.update({str(a): str(b) for a, b in zip(saved, files)})
    paths = {a: b for a, b in paths.items() if a != b}
    if not paths:
        return trace
    old = sorted(paths, key=len, reverse=True)  # a longer path before its prefix

    def swap(text: str) -> str:
        if text in paths:
            return paths[text]
        for a in old:  # a few paths, in a few diagnostics' examples
            text = text.replace(a, paths[a])
        return text

    ranks = tuple(dataclasses.replace(r, source=swap(r.source)) for r in trace.ranks)
    diags = tuple(dataclasses.replace(d, source=swap(d.source), example=swap(d.example)) for d in trace.diagnostics)
    return dataclasses.replace(trace, source=swap(trace.source), ranks=ranks, diagnostics=diags)
