"""``load(path)``: any supported trace path → the canonical, linked :class:`Trace` (cached).

Flow: layout (which files, which span) → cache lookup by content hash → Kineto reader (chunks in
parallel) → assemble (tables per file) → derive (links once) → cache write.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import xxhash

from stepscope.errors import UsageError
from stepscope.ingest.build import build_trace, rank_of
from stepscope.ingest.capture import attach_captures, capture_files
from stepscope.ingest.empty import refuse_empty
from stepscope.ingest.engines import check_engine, read_files
from stepscope.ingest.layout import RunFiles, resolve, spans_note
from stepscope.ingest.readers.ascend import add_side_meta
from stepscope.ingest.readers.protocol import input_files
from stepscope.ingest.source import readable, renamed
from stepscope.ingest.step_records import attach_step_records
from stepscope.model import store
from stepscope.model.diagnostics import DiagnosticsBuilder
from stepscope.model.strings import StringPool
from stepscope.model.trace import Trace
from stepscope.runtime.deferred import write_entry
from stepscope.runtime.hugepages import without_hugepage_hint

log = logging.getLogger(__name__)
INGEST_VERSION = "2"  # bump when the reader or model changes what it produces
DEFAULT_TRACE = Path(__file__).resolve().parent.parent / "data" / "default_trace.pt.trace.json.gz"

ProgressFactory = Callable[[int], Callable[[int], None]]


def cache_dir() -> Path:
    """Where parsed traces are cached: $STEPSCOPE_CACHE_DIR, else $XDG_CACHE_HOME/stepscope, else ~/.cache."""
    env = os.environ.get("STEPSCOPE_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "stepscope"


@functools.cache
def _code_fingerprint() -> str:
    """Hash of the reader and model source, so a changed stepscope never reuses an old parse."""
    h = xxhash.xxh3_64()
    root = Path(__file__).resolve().parent.parent
    for sub in ("ingest", "model"):
        for f in sorted((root / sub).rglob("*.py")):  # the readers' package too
            h.update(f.read_bytes())
    return h.hexdigest()


def content_key(files: Sequence[str], extra: str) -> str:
    """A hash of every file's bytes plus the ingest version, reader code and selection options."""
    h = xxhash.xxh3_128()
    h.update(f"{INGEST_VERSION}|{_code_fingerprint()}|{extra}|".encode())
    for f in files:
        h.update(f"{os.path.getsize(f)}|".encode())
        with open(f, "rb") as fh:
            while block := fh.read(16 << 20):
                h.update(block)
    return h.hexdigest()


def load(path: str | Path | None = None, *, use_cache: bool = True, span: str | int | None = None,
         ranks: Sequence[int] | None = None, workers: int | None = None,
         progress: ProgressFactory | None = None, engine: str = "local", ray_address: str | None = None) -> Trace:
    """Load a trace file or run directory into the canonical model.

    Args:
        path: a ``.json`` / ``.json.gz`` trace, or a directory of rank files
            (``tensorboard_trace_handler`` layout included). None loads the embedded sample.
        use_cache: reuse / write the parsed copy keyed by the files' content.
        span: for directories with several profiling windows, which one (1-based or timestamp).
        ranks: keep only these ranks.
        workers: decoding processes (default: one per core for large inputs).
        progress: called with the total event estimate, returns a per-chunk callback.
        engine: "local" (a process pool on this machine) or "ray" (a Ray task per file, docs/scale.md).
        ray_address: with engine="ray": "auto" or "HOST:PORT" of a running cluster (default: start a local Ray).
    """
    check_engine(engine, ray_address)
    src = Path(path) if path is not None else DEFAULT_TRACE
    # see runtime/hugepages.py: fresh big arrays without compaction stalls; source.py: pipes, special files
    with without_hugepage_hint(), readable(src) as local:
        return renamed(_load(local, src, use_cache, span, ranks, workers, progress, engine, ray_address), local, src)


def _load(path: Path, source: Path, use_cache: bool, span: str | int | None, ranks: Sequence[int] | None,
          workers: int | None, progress: ProgressFactory | None, engine: str, ray_address: str | None) -> Trace:
    run = resolve(path, span)
    # the ranks the files' names give (rank3.json) are part of what is read, not of the bytes
    named = [rank_of({}, f, i) for i, f in enumerate(run.files)]
    extra = f"{run.span}|{sorted(ranks) if ranks else ''}|{named}"
    key = content_key([*input_files(run.files), *capture_files(run.files)], extra) if use_cache else ""
    target = cache_dir() / key
    if use_cache and (target / "meta.json").exists():
        try:
            return attach_step_records(store.load(target, source=str(source), files=run.files), run.files)
        except (store.CorruptStoreError, OSError) as exc:
            reason = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
            log.warning("cache entry %s is damaged (%s); rebuilding it from %s", target, reason, source)
    trace = refuse_empty(_parse(run, source, ranks, workers, progress, engine, ray_address), source, len(run.files),
                         ranks)
    if use_cache:
        write_entry(functools.partial(store.save, trace, target, files=run.files), str(target))
    # the step log is read on every load, never cached: it is small, and a run's log may be written after
    # its traces were first read
    return attach_step_records(trace, run.files)


def _parse(run: RunFiles, path: str | Path, ranks: Sequence[int] | None, workers: int | None,
           progress: ProgressFactory | None, engine: str = "local", ray_address: str | None = None) -> Trace:
    pool = StringPool()
    total = sum(os.path.getsize(f) for f in run.files)
    cb = progress(total) if progress is not None else None
    diags = DiagnosticsBuilder(source=str(path))
    for d in run.skipped:
        diags.add("rank-without-trace", "warning", f"{d} holds no trace (trace_view.json, profiler database or "
                  "kernel_details.csv): its rank is not read", source=d)
    for f in run.side:
        diags.add("side-file", "info", f"{f} holds no trace (no traceEvents in its first 4 KiB): not read", source=f)
    batches = read_files(run.files, pool, diags, engine=engine, ray_address=ray_address, workers=workers, progress=cb)
    chosen = []
    seen: set[int] = set()
    for i, b in enumerate(batches):
        add_side_meta(b)
        r = rank_of(b.meta, b.path, i, diags)
        if r in seen:
            diags.add("duplicate-rank", "warning", f"{b.path} claims rank {r} again; given rank {i + 1000}",
                      source=b.path)
            r = i + 1000
        seen.add(r)
        if ranks is None or r in ranks:
            chosen.append((b, r, run.span))
    if ranks is not None and not chosen:
        raise UsageError(f"none of the ranks {list(ranks)} is in this run (have {sorted(seen)})", path)
    if len(run.spans) > 1:
        diags.add("multiple-spans", "info", spans_note(run), source=str(path))
    trace = build_trace(sorted(chosen, key=lambda t: t[1]), pool, diags, str(path))
    return attach_captures(trace, capture_files(run.files),
                           lambda f: _parse(resolve(f), f, None, workers, None, engine, ray_address))


def rank_file_key(file: str, index: int, span: str = "") -> str:
    """The cache key :func:`load_rank_file` files the rank under (a hash of its bytes and its captures')."""
    return content_key([*input_files([file]), *capture_files([file])], f"rank-file|{index}|{span}")


def load_rank_file(file: str, index: int, source: str, *, span: str = "", use_cache: bool = True,
                   cache: Path | None = None, key: str | None = None) -> Trace:
    """One rank file of a run as a one-rank Trace, exactly as that rank is in the run's whole Trace:
    the rank its metadata or name gives, else its ``index`` in the run's files; diagnostics that are
    not the file's own name ``source`` (the run). Read in this process (a map worker's), cached under
    ``cache`` (default :func:`cache_dir`) like any load. The map-reduce path reads ranks with it;
    ``key``: its :func:`rank_file_key` as an earlier read of the same file computed it (the file is
    not hashed again)."""
    captures = capture_files([file])
    key = (key or rank_file_key(file, index, span)) if use_cache else ""
    target = (cache or cache_dir()) / key
    if use_cache and (target / "meta.json").exists():
        try:
            return store.load(target, source=source, files=[file])
        except (store.CorruptStoreError, OSError) as exc:
            log.warning("cache entry %s is damaged (%s); rebuilding it from %s", target, exc, file)
    pool = StringPool()
    diags = DiagnosticsBuilder(source=source)
    with without_hugepage_hint():
        (batch,) = read_files([file], pool, diags, workers=1)
        add_side_meta(batch)
        trace = build_trace([(batch, rank_of(batch.meta, batch.path, index, diags), span)], pool, diags, source)
    trace = attach_captures(trace, captures, lambda f: _parse(resolve(f), f, None, 1, None))
    if use_cache:
        try:
            store.save(trace, target, files=[file])
        except OSError as exc:
            log.info("could not write cache %s: %s", target, exc)
    return trace


__all__ = ["DEFAULT_TRACE", "cache_dir", "load", "load_rank_file", "rank_file_key"]
