"""One protocol for every reader, and the choice of reader for a file (see the package docstring)."""

from __future__ import annotations

from typing import Protocol

from stepscope.ingest.readers import ascend_db, kineto, nsys_sqlite
from stepscope.ingest.readers.batch import FileBatch
from stepscope.model.diagnostics import DiagnosticsBuilder
from stepscope.model.strings import StringPool


class Reader(Protocol):
    """A trace format."""

    def sniff(self, path: str) -> bool: ...

    def read(self, path: str, pool: StringPool, diags: DiagnosticsBuilder) -> FileBatch: ...


READERS: tuple[Reader, ...] = (ascend_db, nsys_sqlite, kineto)


def reader_for(path: str) -> Reader:
    """The first reader that claims ``path`` (Kineto JSON claims whatever the others do not)."""
    return next((r for r in READERS if r.sniff(path)), kineto)

