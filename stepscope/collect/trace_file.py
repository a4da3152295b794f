"""Writes profiler traces in the ``tensorboard_trace_handler`` layout, with system counters inside.

The files are named as PyTorch's own handler names them, so every tool that reads a profiler run
directory reads ours::

    <out_dir>/<worker>.<time_ns>.pt.trace.json[.gz]      worker = "<hostname>_<pid>" by default

Counter events from the :class:`~stepscope.collect.sampler.SystemSampler` are spliced into the
``traceEvents`` array of the exported JSON as text, so a large trace is never decoded again.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stepscope.collect.sampler import SystemSampler, counter_events

_BASE_RE = re.compile(rb'"baseTimeNanoseconds"\s*:\s*(\d+)')
_EVENTS_RE = re.compile(rb'"traceEvents"\s*:\s*\[')
#: how far into the file the header keys are looked for (they come before the events)
_HEAD_BYTES = 1 << 20


def default_worker_name() -> str:
    """``<hostname>_<pid>``, as ``torch.profiler.tensorboard_trace_handler`` names a worker."""
    return f"{socket.gethostname()}_{os.getpid()}"


def splice_events(trace_json: bytes, events: list[dict[str, Any]]) -> bytes:
    """Insert ``events`` at the start of the ``traceEvents`` array of a Chrome-trace JSON text.

    Raises:
        ValueError: the text has no ``traceEvents`` array.
    """
    if not events:
        return trace_json
    m = _EVENTS_RE.search(trace_json)
    if m is None:
        raise ValueError("no traceEvents array in the exported trace")
    rest = trace_json[m.end():]
    empty = rest.lstrip().startswith(b"]")
    body = ",\n".join(json.dumps(e, separators=(",", ":")) for e in events).encode()
    sep = b"\n" if empty else b",\n"
    return trace_json[: m.end()] + b"\n" + body + sep + rest


def trace_base_ns(trace_json: bytes) -> int:
    """The trace's ``baseTimeNanoseconds`` (``ts`` = µs after it); 0 when absent (absolute µs)."""
    m = _BASE_RE.search(trace_json[:_HEAD_BYTES])
    return int(m.group(1)) if m else 0


def _rename_trace(data: bytes, tmp: Path, final: Path) -> bytes:
    """Point the ``traceName`` header (written last by the exporter) at the final file."""
    old = json.dumps(str(tmp)).encode()
    cut = max(0, len(data) - 64 * 1024)
    return data[:cut] + data[cut:].replace(old, json.dumps(str(final)).encode())


class TraceWriter:
    """An ``on_trace_ready`` handler: exports the trace, adds the system counters, writes the file.

    Args:
        out_dir: the run directory (created when missing).
        worker_name: the file-name prefix; ``<hostname>_<pid>`` by default. Use ``worker<rank>``
            for distributed runs.
        use_gzip: write ``.pt.trace.json.gz`` (default) or plain ``.pt.trace.json``.
        sampler: where the counter samples come from (None: no counters).
        window_start_ns: returns the Unix time (ns) from which samples belong to this trace.
    """

    def __init__(
        self,
        out_dir: str | os.PathLike[str],
        worker_name: str | None = None,
        use_gzip: bool = True,
        sampler: SystemSampler | None = None,
        window_start_ns: Callable[[], int] | None = None,
    ) -> None:
        self.out_dir = Path(out_dir)
        self.worker_name = worker_name or default_worker_name()
        self.use_gzip = use_gzip
        self.sampler = sampler
        self._window_start_ns = window_start_ns or (lambda: 0)
        self.files: list[Path] = []

    def __call__(self, prof: Any) -> None:
        """Called by ``torch.profiler.profile`` at the end of each active window."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        name = f"{self.worker_name}.{time.time_ns()}.pt.trace.json"
        tmp = self.out_dir / f".{name}.tmp"
        prof.export_chrome_trace(str(tmp))
        try:
            data = tmp.read_bytes()
            final = self.out_dir / (name + ".gz" if self.use_gzip else name)
            data = self._add_counters(_rename_trace(data, tmp, final))
            if self.use_gzip:
                final.write_bytes(gzip.compress(data, compresslevel=6))
            else:
                final.write_bytes(data)
        finally:
            tmp.unlink(missing_ok=True)
        self.files.append(final)

    def _add_counters(self, data: bytes) -> bytes:
        if self.sampler is None:
            return data
        self.sampler.sample_now()
        samples = self.sampler.drain(since_ns=self._window_start_ns())
        events = counter_events(samples, os.getpid(), trace_base_ns(data))
        try:
            return splice_events(data, events)
        except ValueError:
            return data  # an unexpected export format: keep the trace, lose the counters
