"""Which runs a served directory holds, each under an opaque id the browser uses instead of a path.

A *run* is what ``stepscope analyze PATH`` would read: a trace file, or a directory that
:func:`stepscope.ingest.layout.resolve` turns into rank files (``tensorboard_trace_handler`` layout,
per-rank files, an Ascend export). Rules, applied from the served root down (bounded depth):

* the root's own loose trace files are one run each, unless they are ``tensorboard_trace_handler``
  rank files (``<worker>.<ts>.pt.trace.json[.gz]``), which make the root itself one run;
* below the root, a directory holding trace files is one run (as ``analyze DIR`` reads it);
* an Ascend export (``*_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json``, or its profiler database
  ``ascend_pytorch_profiler_*.db``: what :func:`stepscope.ingest.layout.ascend_files` finds) is one
  run and is not descended into;
* an allocator snapshot (``*.pickle`` whose head parses as a pickled dict keyed ``segments`` /
  ``device_traces``, with no opcode naming a global: :func:`is_snapshot`, nothing is unpickled) is
  a run of kind ``snapshot`` wherever it lies (server/snapshots.py serves it);
* a ``capture_traces/`` directory beside trace files holds the graph captures of that run (read
  with it, ``ingest/capture.py``): it is no run of its own.

Nothing outside the root is ever listed: symlinks whose target resolves outside it are skipped, and
hidden entries (``.name``) are ignored. The id is a hash of the path relative to the root, so it
reveals nothing and cannot be turned back into a path by the client.

Each run also says when it was recorded (:func:`recorded_at`; the compare page's default BASE is the
older of two runs, NEW the newer): the timestamp ``tensorboard_trace_handler`` writes into every
file name (``<worker>.<ts>.pt.trace.json``: Unix ns in recent PyTorch, ms in older), the earliest of
the run's files, else the earliest modification time of its trace files (a copy without ``-p``
changes it; a name does not change).
"""

from __future__ import annotations

import contextlib
import gzip
import os
import pickletools
import zlib
from dataclasses import dataclass
from pathlib import Path

import xxhash

from stepscope.errors import NoTraceFoundError, UsageError
from stepscope.ingest.capture import CAPTURE_DIR
from stepscope.ingest.layout import PFTRACE_SUFFIXES, TB_NAME, TRACE_SUFFIXES, ascend_files

#: how a run's recording time was found (:func:`recorded_at`)
FROM_NAME, FROM_MTIME = "file name", "file time"

#: how deep below the root runs are looked for, and how many entries are looked at in all
MAX_DEPTH = 6
MAX_ENTRIES = 20_000
MAX_RUNS = 500
#: bytes of a ``.json`` file's (decompressed) head searched for ``traceEvents`` (metadata can come first)
SNIFF_BYTES = 256 << 10
#: bytes of a ``.pickle`` file's head looked at by :func:`is_snapshot`
SNAPSHOT_SNIFF_BYTES = 64 << 10
#: opcodes that name or call a global: a snapshot holds none (the reader refuses them as well)
_UNSAFE = {"GLOBAL", "STACK_GLOBAL", "REDUCE", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX", "BUILD", "EXT1", "EXT2",
           "EXT4", "PERSID", "BINPERSID"}
#: the keys of ``torch.cuda.memory._snapshot()`` one of which must be among the head's first strings
_KEYS = {"segments", "device_traces"}


@dataclass(frozen=True)
class RunEntry:
    """One servable run: ``id`` is what URLs carry, ``label`` what the UI shows (relative path)."""

    id: str
    label: str
    path: Path
    kind: str  # "file" | "directory" | "snapshot" (an allocator snapshot pickle: server/snapshots.py)
    recorded_ns: int = 0  # when it was recorded, Unix ns (0: unknown), and from what: :func:`recorded_at`
    recorded_from: str = ""


def run_id(root: Path, path: Path) -> str:
    """The opaque, stable id of ``path`` under ``root`` (12 hex digits of a hash of the relative path)."""
    rel = path.relative_to(root).as_posix() if path != root else "."
    return xxhash.xxh3_64_hexdigest(rel.encode())[:12]


def inside(root: Path, p: Path) -> bool:
    """True when ``p`` (symlinks resolved) lies under the resolved ``root``."""
    try:
        return p.resolve().is_relative_to(root)
    except (OSError, RuntimeError):  # a symlink loop, an unreadable component
        return False


def _sniff(p: Path) -> bool:
    """Cheap check that a ``.json[.gz]`` is a trace, so side files (configs, expected results) are not runs."""
    if p.suffix == ".sqlite" or p.name.endswith(PFTRACE_SUFFIXES) or ".pt.trace." in p.name \
            or p.name == "trace_view.json":
        return True
    try:
        opener = gzip.open if p.name.endswith(".gz") else open
        with opener(p, "rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except (OSError, EOFError, zlib.error):
        return False
    return b'"traceEvents"' in head


def is_snapshot(p: Path) -> bool:
    """True when ``p``'s head (SNAPSHOT_SNIFF_BYTES) parses (``pickletools.genops``: nothing is built or run)
    as a pickled dict whose first string is a snapshot key, with no opcode that names a global in it.
    A global further on is refused by the reader (the run then shows its one-line error)."""
    try:
        with open(p, "rb") as fh:
            head = fh.read(SNAPSHOT_SNIFF_BYTES)
    except OSError:
        return False
    if not head.startswith(b"\x80"):
        return False
    first: str | None = None
    seen_dict = False
    try:
        for op, arg, _pos in pickletools.genops(head):
            if op.name in _UNSAFE:
                return False
            seen_dict = seen_dict or (first is None and op.name in ("EMPTY_DICT", "DICT"))
            if first is None and isinstance(arg, str):
                first = arg
    except (ValueError, EOFError):  # the head ends mid-opcode (a large file), or is no pickle
        pass
    return seen_dict and first in _KEYS


def _unix_ns(stamp: int) -> int:
    """A file name's Unix timestamp in ns, whatever its unit (s, ms, µs or ns: told by its size)."""
    for scale in (1, 1_000, 1_000_000, 1_000_000_000):
        if stamp * scale >= 10**17:  # after 1973 in ns
            return stamp * scale
    return 0


def _run_files(path: Path) -> list[Path]:
    """The files a run's recording time is read from: the file, a directory's own trace files (or its
    Ascend export's files)."""
    if path.is_file():
        return [path]
    try:
        files = sorted(p for p in path.iterdir() if p.name.endswith(TRACE_SUFFIXES) and not p.name.startswith("."))
    except OSError:
        return []
    return files or ascend_files(path)


def recorded_at(path: Path) -> tuple[int, str]:
    """When the run at ``path`` was recorded, Unix ns, and from what (:data:`FROM_NAME`: the earliest
    ``tensorboard_trace_handler`` timestamp in its file names, when each of them has one;
    :data:`FROM_MTIME`: the earliest modification time of its files); ``(0, "")`` when neither is known."""
    files = _run_files(path)
    stamps = [TB_NAME.match(f.name) for f in files]
    if files and all(stamps):
        ns = min(_unix_ns(int(m.group("ts"))) for m in stamps if m)
        if ns:
            return ns, FROM_NAME
    times = []
    for f in files or [path]:
        with contextlib.suppress(OSError):
            times.append(f.stat().st_mtime_ns)
    return (min(times), FROM_MTIME) if times else (0, "")


def _entry(root: Path, path: Path, label: str, kind: str) -> RunEntry:
    return RunEntry(run_id(root, path), label, path, kind, *recorded_at(path))


def _is_trace_file(root: Path, p: Path) -> bool:
    return (p.name.endswith(TRACE_SUFFIXES) and not p.name.startswith(".") and inside(root, p)
            and p.is_file() and _sniff(p))


def _is_snapshot_file(root: Path, p: Path) -> bool:
    return p.name.endswith(".pickle") and inside(root, p) and p.is_file() and is_snapshot(p)


def _is_ascend(root: Path, d: Path) -> bool:
    """An Ascend export, text or database, as ``analyze`` reads it, with every file it reads under the root."""
    files = ascend_files(d)
    return bool(files) and all(inside(root, f) for f in files)


class _Walk:
    """A bounded depth-first walk that collects runs (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.seen = 0
        self.runs: list[tuple[Path, str]] = []

    def visit(self, d: Path, depth: int) -> None:
        if len(self.runs) >= MAX_RUNS or self.seen >= MAX_ENTRIES:
            return
        if _is_ascend(self.root, d):
            self.runs.append((d, "directory"))
            return
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            return
        self.seen += len(entries)
        entries = [e for e in entries if not e.name.startswith(".")]
        files = [Path(e.path) for e in entries if _is_trace_file(self.root, Path(e.path))]
        self.runs += [(Path(e.path), "snapshot") for e in entries if _is_snapshot_file(self.root, Path(e.path))]
        if files:
            if depth > 0 or all(TB_NAME.match(f.name) for f in files):
                self.runs.append((d, "directory"))
            else:
                self.runs += [(f, "file") for f in files]
        if depth >= MAX_DEPTH:
            return
        for e in entries:
            sub = Path(e.path)
            if files and e.name == CAPTURE_DIR:  # the run's graph captures, read with it
                continue
            if e.is_dir() and inside(self.root, sub) and not e.is_symlink():
                self.visit(sub, depth + 1)


def discover_runs(root: str | Path) -> list[RunEntry]:
    """Every run under ``root`` (a directory, or one trace file), sorted by label.

    Raises:
        UsageError: ``root`` does not exist.
        NoTraceFoundError: no trace file anywhere under it.
    """
    given = Path(root)
    if not given.exists():
        raise UsageError("no such file or directory", given)
    base = given.resolve()
    if base.is_file():
        kind = "snapshot" if base.name.endswith(".pickle") else "file"
        if kind == "snapshot" and not is_snapshot(base):
            raise NoTraceFoundError("not an allocator snapshot pickle (torch.cuda.memory._dump_snapshot)", given)
        return [_entry(base.parent, base, base.name, kind)]
    walk = _Walk(base)
    walk.visit(base, 0)
    if not walk.runs:
        raise NoTraceFoundError("no trace file (*.json, *.json.gz, *.sqlite, *.pftrace) or allocator snapshot "
                                "(*.pickle) under this directory", given)
    out = []
    for path, kind in walk.runs:
        label = path.relative_to(base).as_posix() if path != base else base.name
        out.append(_entry(base, path, label, kind))
    return sorted(out, key=lambda r: r.label)
