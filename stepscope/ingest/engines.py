"""Engines: read a run's files into per-file :class:`FileBatch` es whose parts are compact tables.

``local`` (the default) decodes every chunk of every file in one process pool on this machine
(:func:`read_kineto_files`). ``ray`` (the ``[ray]`` extra) reads each file in one Ray task on
whatever cluster ``ray.init`` reaches: the task runs the very same reader on its file, against a
:class:`StringPool` of its own, and sends back the compact tables; the driver maps their string ids
into the trace's pool (:func:`adopt`) in the order the local engine interns them, so both engines
give the same Trace, table for table. Ray does the scheduling, the transfers and the retries of
tasks whose worker died; nothing here schedules work itself.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from stepscope.errors import StepscopeError, UsageError
from stepscope.ingest.assemble import Cols, FileTables, remap_strings
from stepscope.ingest.readers import kineto
from stepscope.ingest.readers.batch import FileBatch
from stepscope.ingest.readers.kineto import read_kineto_files
from stepscope.ingest.readers.protocol import reader_for
from stepscope.model.diagnostics import Diagnostic, DiagnosticsBuilder
from stepscope.model.strings import StringPool

ENGINES = ("local", "ray")
RAY_TASK_RETRIES = 3  # re-runs of a task whose worker or node died (a parse error is never retried)

Progress = Callable[[int], None]


def check_engine(engine: str, ray_address: str | None) -> None:
    """Raise :class:`UsageError` for an unknown engine, or a Ray address given to another engine."""
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r} (choose from {', '.join(ENGINES)})")
    if ray_address and engine != "ray":
        raise UsageError("a Ray address needs the ray engine (--engine ray)")


def read_files(files: Sequence[str], pool: StringPool, diags: DiagnosticsBuilder, *, engine: str = "local",
               ray_address: str | None = None, workers: int | None = None,
               progress: Progress | None = None) -> list[FileBatch]:
    """One :class:`FileBatch` per file, in the order of ``files``, strings interned into ``pool``."""
    check_engine(engine, ray_address)
    if engine == "ray":
        return read_ray(files, pool, diags, ray_address, progress)
    return read_local(files, pool, diags, workers, progress)


def read_local(files: Sequence[str], pool: StringPool, diags: DiagnosticsBuilder, workers: int | None,
               progress: Progress | None) -> list[FileBatch]:
    """Every Kineto file's chunks through one local process pool, then each other file (the SQLite
    exports of Nsight and Ascend) with its reader."""
    readers = {f: reader_for(f) for f in files}
    json_files = [f for f in files if readers[f] is kineto]
    by_path = {b.path: b for b in read_kineto_files(json_files, pool, diags, workers, progress)}
    by_path.update({f: readers[f].read(f, pool, diags) for f in files if readers[f] is not kineto})
    return [by_path[f] for f in files]


@dataclass(frozen=True)
class RemoteFile:
    """What one Ray task sends back: its file read against the task's own string pool."""

    batch: FileBatch
    strings: list[str]
    diagnostics: tuple[Diagnostic, ...]


def read_one(path: str, source: str) -> RemoteFile:
    """The Ray task: read one file exactly as the local engine does, on one core, with its own pool."""
    pool = StringPool()
    diags = DiagnosticsBuilder(source=source)
    batch = reader_for(path).read(path, pool, diags)
    return RemoteFile(batch, pool.strings, diags.freeze())


def adopt(remote: RemoteFile, pool: StringPool, diags: DiagnosticsBuilder) -> FileBatch:
    """A task's file moved into the trace: string ids into ``pool``, diagnostics into ``diags``, and
    every array copied out of Ray's (read-only, shared) object store."""
    ids = pool.id_map(remote.strings)
    batch = remote.batch
    batch.parts = [_owned(remap_strings(p, ids)) for p in batch.parts]
    diags.extend(remote.diagnostics)
    return batch


def _owned(ft: FileTables) -> FileTables:
    def own(cols: Cols) -> Cols:
        return {k: v if v.flags.writeable else np.array(v) for k, v in cols.items()}

    return FileTables(own(ft.events), own(ft.tracks), own(ft.memory), own(ft.counters), own(ft.flows),
                      ft.thread_names)


def read_ray(files: Sequence[str], pool: StringPool, diags: DiagnosticsBuilder, address: str | None,
             progress: Progress | None) -> list[FileBatch]:
    """One Ray task per file; results are adopted in the local engine's order (Kineto files, then
    SQLite), so the string pool, and with it every id column, is the same as with ``local``."""
    ray = import_ray()
    unique = list(dict.fromkeys(files))
    json_files = [f for f in unique if reader_for(f) is kineto]
    by_path: dict[str, FileBatch] = {}
    with ray_session(ray, address):
        task = ray.remote(num_cpus=1, max_retries=RAY_TASK_RETRIES, retry_exceptions=False)(read_one)
        refs = {f: task.remote(f, diags.source) for f in unique}
        for f in json_files + [f for f in unique if f not in json_files]:
            by_path[f] = adopt(ray_get(ray, refs.pop(f)), pool, diags)
            if progress is not None:
                progress(by_path[f].n_events)
    return [by_path[f] for f in files]


def ray_get(ray: Any, ref: Any) -> Any:
    """The task's result; an error stepscope raised on purpose in the task is raised here as itself."""
    try:
        out = ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, StepscopeError):
            raise exc.cause from None
        raise
    return out


def import_ray() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise UsageError("the ray engine needs Ray: pip install 'stepscope[ray]'") from None


@contextmanager
def ray_session(ray: Any, address: str | None) -> Iterator[None]:
    """Use the Ray this process is already connected to; else connect to ``address`` ("auto",
    "HOST:PORT", "ray://HOST:PORT"), else to ``$RAY_ADDRESS`` (set inside a Ray job), else start a
    local Ray on this machine. What was started or connected here is shut down at the end."""
    if ray.is_initialized():
        yield
        return
    quiet: dict[str, Any] = {"logging_level": logging.WARNING}
    try:
        if address:
            ray.init(address=address, **quiet)
        elif os.environ.get("RAY_ADDRESS"):
            ray.init(**quiet)
        else:
            ray.init(address="local", include_dashboard=False, **quiet)
    except ConnectionError as exc:
        why = f"{exc} ({str(exc.__cause__).splitlines()[0]})" if exc.__cause__ is not None else str(exc)
        raise UsageError(f"cannot reach the Ray cluster at {address or os.environ.get('RAY_ADDRESS')}: {why}") \
            from None
    try:
        yield
    finally:
        ray.shutdown()


__all__ = ["ENGINES", "RemoteFile", "adopt", "check_engine", "import_ray", "ray_get", "ray_session", "read_files",
           "read_local", "read_one", "read_ray", "remap_strings"]
