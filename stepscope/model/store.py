"""Save / load a canonical Trace as Arrow IPC files: the parse cache, and portable ``.stepscope`` dirs.

Layout of one stored trace (a directory)::

    meta.json        ranks, diagnostics, source, row counts, format version
    strings.arrow    the string pool
    <table>.arrow    events, tracks, steps, memory, counters, flows

Files are memory-mapped on load, so reopening a multi-GB trace costs little more than the
metadata. Writes go to a temporary sibling directory that is renamed into place (atomic).

The cache is keyed by content, so one entry serves everyone who reads the same files, by whatever
path: ``meta.json`` keeps the path and files it was saved from, and :func:`load` given the path and
files of *this* read puts them back in the trace's source, its ranks' sources and its diagnostics.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from stepscope.model.diagnostics import Diagnostic
from stepscope.model.schema import TABLE_SCHEMAS
from stepscope.model.strings import StringPool
from stepscope.model.table import Table
from stepscope.model.trace import DeviceInfo, RankInfo, Trace

STORE_VERSION = 1


class CorruptStoreError(Exception):
    """A stored trace is incomplete or damaged (callers rebuild it)."""


def save(trace: Trace, target: Path, files: Sequence[str] = ()) -> None:
    """Write ``trace`` to directory ``target`` atomically (replacing an old copy); ``files``: the
    files it was read from, in reading order."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    try:
        for name in TABLE_SCHEMAS:
            _write_arrow(getattr(trace, name).to_arrow(), tmp / f"{name}.arrow")
        _write_arrow(pa.table({"s": pa.array(trace.strings.strings, pa.string())}), tmp / "strings.arrow")
        meta = {"version": STORE_VERSION, "source": trace.source, "files": list(files),
                "rows": {name: len(getattr(trace, name)) for name in TABLE_SCHEMAS},
                "strings": len(trace.strings),
                "ranks": [_rank_dict(r) for r in trace.ranks],
                "diagnostics": [d.to_dict() for d in trace.diagnostics]}
        (tmp / "meta.json").write_text(json.dumps(meta, default=str))
        if target.exists():
            shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _write_arrow(table: pa.Table, path: Path) -> None:
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def _read_arrow(path: Path) -> pa.Table:
    return pa.ipc.open_file(pa.memory_map(str(path), "r")).read_all()


def load(target: Path, source: str | None = None, files: Sequence[str] = ()) -> Trace:
    """Read a stored trace; raises :class:`CorruptStoreError` when anything is missing or damaged.

    ``source`` / ``files``: the path and files of this read, shown instead of those it was saved from."""
    try:
        meta = json.loads((target / "meta.json").read_text())
        if meta.get("version") != STORE_VERSION:
            raise CorruptStoreError("old store version")
        tables = {name: Table.from_arrow(schema, _read_arrow(target / f"{name}.arrow"))
                  for name, schema in TABLE_SCHEMAS.items()}
        strings = _read_arrow(target / "strings.arrow").column("s").to_pylist()
    except (OSError, ValueError, KeyError, pa.ArrowException) as exc:
        raise CorruptStoreError(str(exc)) from exc
    if len(strings) != meta["strings"] or any(len(tables[k]) != v for k, v in meta["rows"].items()):
        raise CorruptStoreError("row counts differ from meta.json")
    trace = Trace(strings=StringPool(strings), ranks=tuple(_rank_from(r) for r in meta["ranks"]),
                  diagnostics=tuple(Diagnostic(**d) for d in meta["diagnostics"]), source=meta["source"],
                  **tables)
    return _as_read(trace, meta, source, files)


def _as_read(trace: Trace, meta: dict[str, Any], source: str | None, files: Sequence[str]) -> Trace:
    """The trace with the saved path and files replaced by those of this read."""
    paths = {str(meta["source"]): source} if source is not None else {}
    saved = meta.get("files") or []
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


def _rank_dict(r: RankInfo) -> dict[str, Any]:
    d = dict(r.__dict__)
    d["devices"] = [dev.to_dict() for dev in r.devices]
    return d


def _rank_from(d: dict[str, Any]) -> RankInfo:
    d = dict(d)
    d["devices"] = tuple(DeviceInfo(**dev) for dev in d["devices"])
    return RankInfo(**d)
