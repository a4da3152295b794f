"""The MCP server's state: each trace loaded, analysed and advised once per process.

An agent asks many small questions about the same trace (overview, then findings, then a view,
then SQL). :class:`TraceCache` keeps the last few :class:`Loaded` traces keyed by the resolved
path and a fingerprint of the files under it (size and modification time), so a question about a
trace that changed on disk loads it again, and one about an unchanged trace is answered from
memory. The parse itself is also cached on disk by ``stepscope.load`` (content-keyed), so a new
server process on a known trace is fast too.

Tools run on worker threads (the SDK runs a sync tool in a thread); one lock serialises the
work, which is CPU-bound anyway, so two questions about one trace never parse it twice.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stepscope.advisor.engine import advise
from stepscope.analysis.bundle import Bundle, analyze
from stepscope.errors import UsageError
from stepscope.ingest.step_records import with_given_step
from stepscope.model.trace import Trace
from stepscope.report.advice_json import finding_dict
from stepscope.report.json_out import to_json

#: traces kept in memory (each holds its columns, the bundle and the §12 document)
DEFAULT_CAPACITY = 4
#: files looked at for a directory's fingerprint (a run directory has a few per rank)
FINGERPRINT_FILES = 10_000

Loader = Callable[[Path], Trace]


@dataclass(frozen=True)
class Loaded:
    """One trace and every answer the tools read: the bundle and the §12 document (``analyze --json``)."""

    path: Path
    bundle: Bundle
    doc: dict[str, Any]

    @property
    def trace(self) -> Trace:
        return self.bundle.trace


def fingerprint(path: Path) -> tuple[tuple[str, int, int], ...]:
    """(relative name, size, mtime ns) of the file, or of the files under the directory (sorted)."""
    if path.is_file():
        st = path.stat()
        return (("", st.st_size, st.st_mtime_ns),)
    out: list[tuple[str, int, int]] = []
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            p = Path(root, name)
            try:
                st = p.stat()
            except OSError:
                continue
            out.append((str(p.relative_to(path)), st.st_size, st.st_mtime_ns))
            if len(out) >= FINGERPRINT_FILES:
                return tuple(out)
    return tuple(out)


def analyse(path: Path, trace: Trace) -> Loaded:
    """Analyse and advise a loaded trace, and make its §12 document (as ``stepscope analyze --json``)."""
    bundle = analyze(trace)
    with bundle.memo.active():
        doc = to_json(bundle, [finding_dict(f) for f in advise(bundle)])
    return Loaded(path, bundle, doc)


def _default_loader(path: Path) -> Trace:
    from stepscope.ingest import load

    return load(path)


class TraceCache:
    """The last ``capacity`` traces asked about, by resolved path (see the module docstring)."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, loader: Loader | None = None,
                 root: Path | None = None) -> None:
        self._capacity = max(1, capacity)
        self._loader = loader or _default_loader
        self._root = root.resolve() if root is not None else None
        self._items: OrderedDict[tuple[Path, float | None], tuple[Any, Loaded]] = OrderedDict()
        self.lock = threading.RLock()
        self.loads = 0  # how many times a trace was loaded (not answered from memory)

    def resolve(self, path: str) -> Path:
        """The absolute path a tool argument names (relative to the root when one is set); a one-line
        usage error when it does not exist or lies outside the root."""
        if not path or not path.strip():
            raise UsageError("path: name a trace file or run directory")
        p = Path(os.path.expanduser(path))
        p = (self._root / p if self._root is not None and not p.is_absolute() else p).resolve()
        if self._root is not None and not p.is_relative_to(self._root):
            raise UsageError(f"{path}: outside the served root {self._root}")
        if not p.exists():
            raise UsageError(f"{path}: no such file or directory")
        return p

    def get(self, path: str, step_ms: float | None = None) -> Loaded:
        """The loaded trace at ``path``, from memory when its files did not change; with ``step_ms`` (the step
        timed without the profiler, as ``--step-ms``) analysed with the profiler's cost measured from it."""
        p = self.resolve(path)
        key = (p, step_ms)
        with self.lock:
            fp = fingerprint(p)
            hit = self._items.get(key)
            if hit is not None and hit[0] == fp:
                self._items.move_to_end(key)
                return hit[1]
            trace = self._loader(p)
            loaded = analyse(p, trace if step_ms is None else with_given_step(trace, step_ms))
            self.loads += 1
            self._items[key] = (fp, loaded)
            self._items.move_to_end(key)
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)
            return loaded
