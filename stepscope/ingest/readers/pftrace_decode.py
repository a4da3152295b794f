"""Walk the packets of a decoded Perfetto ``Trace`` (the ``perfetto`` package's generated classes,
decoded by ``protobuf``) into flat Python lists: track descriptors, TrackEvent begins / ends /
instants / counter samples with their resolved names, categories and debug annotations, and the
trace metadata Kineto writes as instants.

Interned data is kept per ``trusted_packet_sequence_id`` and dropped when a packet says the
sequence's incremental state was cleared (``SEQ_INCREMENTAL_STATE_CLEARED``), as Perfetto does.
This is the one per-packet loop of the ``.pftrace`` reader; everything after it is numpy
(:mod:`.pftrace`).
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass, field
from typing import Any

import msgspec

from stepscope.errors import TraceFormatError
from stepscope.ingest.readers.kineto_decode import RawArgs

SLICE_BEGIN, SLICE_END, INSTANT, COUNTER = 1, 2, 3, 4
SEQ_INCREMENTAL_STATE_CLEARED = 1
#: instants the Kineto Perfetto writers put on the trace's process track for the JSON's top-level keys
META_EVENTS = ("trace_metadata", "device_properties")


@dataclass
class Track:
    """One TrackDescriptor: its parent, and what it says (thread, process, counter)."""

    parent: int
    pid: int | None = None
    tid: int | None = None
    name: str | None = None  # the descriptor's own name (or the thread's / process's)
    thread_name: str | None = None
    process_name: str | None = None
    counter: bool = False


@dataclass
class Packets:
    """What the packets say, one list entry per TrackEvent of each type (packet order kept)."""

    tracks: dict[int, Track] = field(default_factory=dict)
    # slice begins and instants: (order, ts, track, name, cat, args or None, flow ids, terminating ids)
    begins: list[tuple[int, int, int, str, str, dict[str, Any] | None, tuple[int, ...], tuple[int, ...]]] = \
        field(default_factory=list)
    ends: list[tuple[int, int, int]] = field(default_factory=list)  # (order, ts, track)
    instants: list[tuple[int, int, int, str, str, dict[str, Any] | None, tuple[int, ...], tuple[int, ...]]] = \
        field(default_factory=list)
    # GPU render stages (newer backend builds): the begin's fields and the duration
    stages: list[tuple[int, int, int, str, str, dict[str, Any], tuple[int, ...], tuple[int, ...], int]] = \
        field(default_factory=list)
    lanes: dict[tuple[int, int], int] = field(default_factory=dict)  # (gpu, stream) -> its track's key
    counters: list[tuple[int, int, float]] = field(default_factory=list)  # (ts, track, value)
    meta: dict[str, Any] = field(default_factory=dict)
    bad_packets: int = 0
    no_timestamp: int = 0


class _Seq:
    """The interned tables of one packet sequence."""

    __slots__ = ("ann_names", "ann_strings", "cats", "default_track", "gpu_specs", "names", "nested")

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.cats: dict[int, str] = {}
        self.ann_names: dict[int, str] = {}
        self.ann_strings: dict[int, str] = {}
        self.default_track = 0
        self.nested: dict[bytes, Any] = {}  # an array / dict annotation's value, by its bytes
        self.gpu_specs: dict[int, str] = {}  # render stage and hardware queue names

    def intern(self, data: Any) -> None:
        for e in data.event_names:
            self.names[e.iid] = e.name
        for e in data.event_categories:
            self.cats[e.iid] = e.name
        for e in data.debug_annotation_names:
            self.ann_names[e.iid] = e.name
        for e in data.debug_annotation_string_values:
            self.ann_strings[e.iid] = e.str.decode("utf-8", "replace")
        for g in data.gpu_specifications:
            self.gpu_specs[g.iid] = g.name


def walk(trace: Any, out: Packets, trace_cls: Any, order: int = 0) -> int:
    """Every packet of ``trace`` into ``out``; returns the next packet order number. Compressed
    packets (``compressed_packets``, zlib) are inflated and walked in place."""
    seqs: dict[int, _Seq] = {}
    for p in trace.packet:
        order += 1
        seq_id = p.trusted_packet_sequence_id
        seq = seqs.get(seq_id)
        if seq is None or p.sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED or p.incremental_state_cleared:
            seq = seqs[seq_id] = _Seq()
        if p.HasField("interned_data"):
            seq.intern(p.interned_data)
        if p.HasField("trace_packet_defaults"):
            seq.default_track = p.trace_packet_defaults.track_event_defaults.track_uuid
        which = p.WhichOneof("data")
        if which == "track_event":
            _event(p, seq, order, out)
        elif which == "track_descriptor":
            _descriptor(p.track_descriptor, out)
        elif which == "gpu_render_stage_event":
            stage(p, seq, order, out)
        elif which == "compressed_packets":
            order = walk(_inflate(p.compressed_packets, trace_cls), out, trace_cls, order)
    return order


def _inflate(data: bytes, trace_cls: Any) -> Any:
    try:
        return trace_cls.FromString(zlib.decompress(data))
    except Exception as exc:  # zlib.error, protobuf's DecodeError: one damaged packet
        raise TraceFormatError(f"a compressed packet cannot be read ({exc})") from None


def _descriptor(td: Any, out: Packets) -> None:
    t = Track(parent=td.parent_uuid, name=td.name if td.HasField("name") else None,
              counter=td.HasField("counter"))
    if td.HasField("thread"):
        th = td.thread
        t.pid, t.tid = th.pid, th.tid
        t.thread_name = th.thread_name if th.HasField("thread_name") else None
    elif td.HasField("process"):
        pr = td.process
        t.pid = pr.pid
        t.process_name = pr.process_name if pr.HasField("process_name") else None
    out.tracks[td.uuid] = t


def _event(p: Any, seq: _Seq, order: int, out: Packets) -> None:
    te = p.track_event
    kind = te.type
    track = te.track_uuid if te.HasField("track_uuid") else seq.default_track
    if not p.HasField("timestamp"):
        out.no_timestamp += 1
        return
    ts = p.timestamp
    if kind == SLICE_END:
        out.ends.append((order, ts, track))
        return
    if kind == COUNTER:
        out.counters.append((ts, track, te.double_counter_value if te.HasField("double_counter_value")
                             else float(te.counter_value)))
        return
    nid = te.name_iid
    name = seq.names.get(nid, "") if nid else te.name
    cats = [seq.cats.get(i, "") for i in te.category_iids] if te.category_iids else te.categories
    if kind == INSTANT and name in META_EVENTS:  # the JSON's top-level keys: every annotation
        _meta(name, {_key(a, seq): _value(a, seq) for a in te.debug_annotations}, out.meta)
        return
    args = _annotations(te.debug_annotations, seq) if te.debug_annotations else None
    flows = tuple(te.flow_ids) or tuple(te.flow_ids_old)
    last = tuple(te.terminating_flow_ids) or tuple(te.terminating_flow_ids_old)
    row = (order, ts, track, name, ",".join(cats), args, flows, last)
    if kind == SLICE_BEGIN:
        out.begins.append(row)
    elif kind == INSTANT:
        out.instants.append(row)


#: the args stepscope reads (the Kineto reader's, by their JSON keys); the rest are skipped unread
#: (``Concrete Inputs``, ``Input Strides``: large arrays), but for those whose presence tells a
#: slice's kind where it has no category (see ``pftrace_columns.infer_cat``)
READ_ARGS = frozenset(f.encode_name for f in msgspec.structs.fields(RawArgs))
PRESENCE_ARGS = frozenset({"cbid", "Python id"})


def _key(a: Any, seq: _Seq) -> str:
    nid = a.name_iid
    return seq.ann_names.get(nid, "") if nid else str(a.name)


def _annotations(anns: Any, seq: _Seq) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for a in anns:
        nid = a.name_iid
        key = seq.ann_names.get(nid, "") if nid else a.name
        if key in READ_ARGS:
            which = a.WhichOneof("value")
            if which in _SCALARS:
                out[key] = getattr(a, which)
            elif which is None:  # an array or a dict: shapes and launch dims repeat, read once each
                raw = a.SerializeToString()
                got = seq.nested.get(raw, _UNSEEN)
                if got is _UNSEEN:
                    got = seq.nested[raw] = _value(a, seq)
                out[key] = got
            else:
                out[key] = _value(a, seq)
        elif key in PRESENCE_ARGS:
            out[key] = 1
    return out


_SCALARS = frozenset({"int_value", "uint_value", "double_value", "bool_value", "string_value", "pointer_value"})
_UNSEEN: Any = object()


def _value(a: Any, seq: _Seq) -> Any:
    """A debug annotation's value as the JSON value it stands for (an annotation with no value, no
    entries and no items is an empty array: Kineto's args hold ``[]`` far more often than ``{}``)."""
    which = a.WhichOneof("value")
    if which is None:
        items = a.array_values
        if items and items[0].WhichOneof("value") == "int_value":  # a shape, a launch dimension: ints only
            try:
                return [v.int_value for v in items if v.WhichOneof("value") == "int_value" or _not_int()]
            except _Mixed:
                pass
        if a.dict_entries:
            return {(d.name if d.HasField("name") else seq.ann_names.get(d.name_iid, "")): _value(d, seq)
                    for d in a.dict_entries}
        return [_value(v, seq) for v in a.array_values]
    if which == "string_value_iid":
        return seq.ann_strings.get(a.string_value_iid, "")
    if which == "legacy_json_value":
        try:
            return json.loads(a.legacy_json_value)
        except ValueError:
            return a.legacy_json_value
    if which == "nested_value":
        return _nested(a.nested_value)
    if which in ("proto_value", "proto_type_name", "proto_type_name_iid"):
        return None
    return getattr(a, which)


class _Mixed(Exception):
    """An array of ints holds something else too: read it item by item."""


def _not_int() -> bool:
    raise _Mixed


def _nested(v: Any) -> Any:
    """The older NestedValue form of an annotation."""
    if v.dict_keys:
        return {k: _nested(x) for k, x in zip(v.dict_keys, v.dict_values)}
    if v.array_values:
        return [_nested(x) for x in v.array_values]
    for f in ("int_value", "double_value", "bool_value", "string_value"):
        if v.HasField(f):
            return getattr(v, f)
    return None


def _meta(name: str, args: dict[str, Any], meta: dict[str, Any]) -> None:
    """Kineto's top-level JSON keys, written as instants: ``trace_metadata`` (one annotation per key,
    the value as JSON text) and ``device_properties`` (the ``deviceProperties`` list as JSON text)."""
    if name == "device_properties":
        meta["deviceProperties"] = _json(args.get("properties"))
        return
    for k, v in args.items():
        meta[k] = _json(v)


def _json(v: Any) -> Any:
    if not isinstance(v, str):
        return v
    try:
        return json.loads(v)
    except ValueError:
        return v


#: render stage name → the Kineto category of the activity
STAGE_CATS = {"Kernel": "kernel", "Memcpy": "gpu_memcpy", "Memset": "gpu_memset", "Annotation": "gpu_user_annotation"}
_STREAM = re.compile(r"stream (\d+)")
#: render-stage extra_data keys → the JSON args' keys
EXTRA_KEYS = {"stream id": "stream", "device id": "device", "context id": "context", "correlation": "correlation",
              "bytes": "bytes", "graph id": "graph id", "queued": "queued"}


def stage(p: Any, seq: _Seq, order: int, out: Packets) -> None:
    """A GPU render stage (how newer backend builds write kernels, copies and memsets): a complete
    activity on its (gpu, stream) lane, its args from ``extra_data`` and the kernel launch."""
    g = p.gpu_render_stage_event
    kind = seq.gpu_specs.get(g.stage_iid, "")
    queue = seq.gpu_specs.get(g.hw_queue_iid, "")
    args: dict[str, Any] = {}
    for e in g.extra_data:
        args[EXTRA_KEYS.get(e.name, e.name)] = _number(e.value)
    m = _STREAM.search(queue)
    given = args.get("stream")
    stream: int = given if isinstance(given, int) else int(m.group(1)) if m else int(g.hw_queue_iid)
    args["device"], args["stream"] = g.gpu_id, stream
    if g.HasField("launch"):
        gs, ws = g.launch.grid_size, g.launch.workgroup_size
        args["grid"], args["block"] = [gs.x, gs.y, gs.z], [ws.x, ws.y, ws.z]
    nid = g.name_iid
    name = seq.names.get(nid, "") if nid else (g.name or kind)
    lane = out.lanes.setdefault((g.gpu_id, stream), -1 - len(out.lanes))
    if lane not in out.tracks:
        out.tracks[lane] = Track(parent=0, pid=g.gpu_id, tid=stream, thread_name=queue.split("] ", 1)[-1] or None)
    out.stages.append((order, p.timestamp, lane, name, STAGE_CATS.get(kind, "kernel"), args, (), (), g.duration))


def _number(v: str) -> Any:
    try:
        return int(v)
    except ValueError:
        return v
