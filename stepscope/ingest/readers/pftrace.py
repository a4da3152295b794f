"""Read a Perfetto protobuf trace (``.pftrace``, ``.perfetto-trace``; plain or gzip) — what PyTorch's
CUPTI profiler backend writes instead of chrome-trace JSON — into the same tables as the JSON.

The ``Trace`` is decoded by ``protobuf`` with the generated classes the ``perfetto`` package ships
(the ``[pftrace]`` extra); its packets are walked once (:mod:`.pftrace_decode`), turned into the
Kineto path's decoded columns (:mod:`.pftrace_columns`) and split by the same code as a JSON chunk
(``assemble.split_chunk``). A file cut short keeps its complete packets (the rest is one
``truncated-file`` diagnostic); a file with none is a :class:`TraceFormatError`. See docs/pftrace.md.
"""

from __future__ import annotations

import gc
import gzip
import importlib
import os
import zlib
from types import SimpleNamespace
from typing import Any

from stepscope.errors import TraceFormatError, UsageError
from stepscope.ingest.assemble import remap_strings, split_chunk
from stepscope.ingest.readers.batch import FileBatch, Repair
from stepscope.ingest.readers.pftrace_columns import to_columns
from stepscope.ingest.readers.pftrace_decode import Packets, walk
from stepscope.model.diagnostics import DiagnosticsBuilder
from stepscope.model.strings import StringPool

SUFFIXES = (".pftrace", ".perfetto-trace", ".pftrace.gz", ".perfetto-trace.gz")
GZIP_MAGIC = b"\x1f\x8b"
PACKET_TAG = 0x0A  # Trace.packet: field 1, length-delimited
#: what each count the columns report is called as a diagnostic, and how bad it is
LOSSES = {"slice-unterminated": ("error", "slice begins that no end closes (dropped)"),
          "slice-end-unmatched": ("warning", "slice ends with no open slice on their track (ignored)"),
          "args-unreadable": ("warning", "events whose debug annotations could not be read as args (args dropped)")}


def _head(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
        if head.startswith(GZIP_MAGIC):
            with gzip.open(path, "rb") as gz:
                return gz.read(64)
        return head
    except (OSError, EOFError, zlib.error):
        return b""


def _framed(head: bytes) -> bool:
    """Whether bytes start like a ``Trace``: a packet tag, then a well-formed length."""
    return len(head) >= 3 and head[0] == PACKET_TAG and any(b < 0x80 for b in head[1:11])


def sniff(path: str) -> bool:
    """A Perfetto protobuf trace: by its name (``.pftrace`` ...) unless it holds JSON (torch builds
    without the backend write chrome JSON under any name), or by its first bytes."""
    head = _head(path)
    if head.lstrip()[:1] in (b"{", b"["):
        return False
    return path.lower().endswith(SUFFIXES) or (_framed(head) and head[1:2] not in (b"{", b"["))


def _trace_class() -> Any:
    try:
        return importlib.import_module("perfetto.protos.perfetto.trace.perfetto_trace_pb2").Trace
    except ImportError:
        raise UsageError("reading a .pftrace needs the perfetto protos: pip install 'stepscope[pftrace]'") from None


def read(path: str, pool: StringPool, diags: DiagnosticsBuilder) -> FileBatch:
    trace_cls = _trace_class()
    data, repairs = _load(path)
    trace, more = _parse(data, trace_cls, path)
    pk = Packets()
    paused = gc.isenabled()
    gc.disable()  # ~10 short-lived objects per event and no cycles: collections are pure cost
    try:
        walk(trace, pk, trace_cls)
    except TraceFormatError as exc:
        raise TraceFormatError(exc.message, path) from None
    finally:
        if paused:
            gc.enable()
    if not (pk.begins or pk.stages or pk.instants or pk.counters or pk.tracks):
        raise TraceFormatError("a Perfetto trace without track events", path)
    cols, strings, lost = to_columns(pk)
    local = StringPool(strings)
    ft = split_chunk(cols, local, diags)
    batch = FileBatch(path, os.path.getsize(path), meta=pk.meta)
    batch.parts = [remap_strings(ft, pool.id_map(local.strings))]
    batch.n_events = len(ft.events.get("ts_ns", ()))
    batch.repairs = repairs + more + _losses(lost, pk)
    return batch


def _losses(lost: dict[str, int], pk: Packets) -> list[Repair]:
    out: list[Repair] = [(k, *LOSSES[k], n) for k, n in lost.items() if n]
    if pk.no_timestamp:
        out.append(("event-missing-ts", "error", "track events without a packet timestamp were dropped",
                    pk.no_timestamp))
    return out


def _load(path: str) -> tuple[bytes, list[Repair]]:
    """The file's bytes, inflated when gzip; a gzip stream cut short gives what it holds."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise TraceFormatError(f"cannot read ({exc.strerror or exc})", path) from None
    if not raw.startswith(GZIP_MAGIC):
        return raw, []
    z = zlib.decompressobj(wbits=31)
    try:
        data = z.decompress(raw)
    except zlib.error as exc:
        raise TraceFormatError(f"damaged gzip stream ({exc})", path) from None
    if not z.eof:
        return data, [("gzip-truncated", "error", "the gzip stream ends early: the packets it holds were read", 1)]
    if z.unused_data:
        return data, [("gzip-trailing-data", "warning", f"{len(z.unused_data):,} bytes after the gzip stream "
                       "were ignored", 1)]
    return data, []


def _packet_spans(data: bytes) -> tuple[list[tuple[int, int]], int]:
    """(start, end) of each whole top-level packet, and where the whole ones stop (a walk of the
    framing only — tag and length varints — used when the file does not decode as a whole)."""
    spans: list[tuple[int, int]] = []
    at, n = 0, len(data)
    while at < n:  # per packet, on damaged files only
        if data[at] != PACKET_TAG:
            break
        length, shift, i = 0, 0, at + 1
        while i < n and shift < 64:
            b = data[i]
            length |= (b & 0x7F) << shift
            i += 1
            shift += 7
            if b < 0x80:
                break
        else:
            break
        if i + length > n:
            break
        spans.append((i, i + length))
        at = i + length
    return spans, at


def _parse(data: bytes, trace_cls: Any, path: str) -> tuple[Any, list[Repair]]:
    """The decoded Trace; a damaged one keeps every packet that decodes, the rest counted."""
    try:
        return trace_cls.FromString(data), []
    except Exception:  # protobuf's DecodeError (its class differs between backends)
        pass
    spans, stop = _packet_spans(data)
    packet_cls = trace_cls.DESCRIPTOR.fields_by_name["packet"].message_type._concrete_class
    good, bad = [], 0
    for s, e in spans:  # damaged file only: each packet alone
        try:
            good.append(packet_cls.FromString(data[s:e]))
        except Exception:
            bad += 1
    if not good:
        raise TraceFormatError("not a Perfetto protobuf trace (no packet decodes)", path)
    repairs: list[Repair] = []
    if stop < len(data):
        repairs.append(("truncated-file", "error", f"{len(data) - stop:,} bytes after the last whole packet were "
                        f"dropped ({len(good):,} packets kept)", 1))
    if bad:
        repairs.append(("packet-unreadable", "error", "packets that do not decode were dropped", bad))
    return SimpleNamespace(packet=good), repairs
