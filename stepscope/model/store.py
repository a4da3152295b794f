"""Save / load a canonical Trace as Arrow IPC files: the parse cache, and portable ``.stepscope`` dirs.

Layout of one stored trace (a directory)::

    meta.json        ranks, diagnostics, source, row counts, format version
    strings.arrow    the string pool
    <table>.arrow    events, tracks, steps, memory, counters, flows

Files are memory-mapped on load, so reopening a multi-GB trace costs little more than the
metadata. Writes go to a temporary sibling directory that is renamed into place (atomic).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
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


def save(trace: Trace, target: Path) -> None:
    """Write ``trace`` to directory ``target`` atomically (replacing an old copy)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    try:
        for name in TABLE_SCHEMAS:
            _write_arrow(getattr(trace, name).to_arrow(), tmp / f"{name}.arrow")
        _write_arrow(pa.table({"s": pa.array(trace.strings.strings, pa.string())}), tmp / "strings.arrow")
        meta = {"version": STORE_VERSION, "source": trace.source,
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


def load(target: Path) -> Trace:
    """Read a stored trace; raises :class:`CorruptStoreError` when anything is missing or damaged."""
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
    return Trace(strings=StringPool(strings), ranks=tuple(_rank_from(r) for r in meta["ranks"]),
                 diagnostics=tuple(Diagnostic(**d) for d in meta["diagnostics"]), source=meta["source"],
                 **tables)


def _rank_dict(r: RankInfo) -> dict[str, Any]:
    d = dict(r.__dict__)
    d["devices"] = [dev.to_dict() for dev in r.devices]
    return d


def _rank_from(d: dict[str, Any]) -> RankInfo:
    d = dict(d)
    d["devices"] = tuple(DeviceInfo(**dev) for dev in d["devices"])
    return RankInfo(**d)
