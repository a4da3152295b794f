"""One protocol for every reader, and the choice of reader for a file (see the package docstring)."""

from __future__ import annotations

from typing import Protocol

from stepscope.ingest.readers import ascend_csv, ascend_db, kineto, nsys_sqlite, pftrace
from stepscope.ingest.readers.ascend_summaries import side_files, trace_view_dir
from stepscope.ingest.readers.batch import FileBatch
from stepscope.model.diagnostics import DiagnosticsBuilder
from stepscope.model.strings import StringPool


class Reader(Protocol):
    """A trace format."""

    def sniff(self, path: str) -> bool: ...

    def read(self, path: str, pool: StringPool, diags: DiagnosticsBuilder) -> FileBatch: ...


READERS: tuple[Reader, ...] = (ascend_db, nsys_sqlite, ascend_csv, pftrace, kineto)


def reader_for(path: str) -> Reader:
    """The first reader that claims ``path`` (Kineto JSON claims whatever the others do not)."""
    return next((r for r in READERS if r.sniff(path)), kineto)



def input_files(files: list[str] | tuple[str, ...]) -> list[str]:
    """Every file that reading ``files`` reads: the files, and the summaries an Ascend text export's
    reader reads beside its ``kernel_details.csv`` or ``trace_view.json`` (what the cache key hashes)."""
    out: list[str] = []
    for f in files:
        if reader_for(f) is ascend_csv:
            out += ascend_csv.inputs(f)
            continue
        beside = trace_view_dir(f)
        out += [f, *(map(str, side_files(beside)) if beside is not None else ())]
    return out
