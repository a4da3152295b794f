"""Write a Perfetto protobuf trace (``.pftrace``) from a Kineto chrome-trace JSON, the way PyTorch's
CUPTI profiler backend lays one out: a process track per pid, a thread track per (pid, tid) (GPU
streams are device/stream threads, as in the JSON), every complete event a TrackEvent slice
(SLICE_BEGIN / SLICE_END) with its args as typed debug annotations, the ``ac2g`` flows as flow ids
on the two slices they join, ``[memory]`` and other instants as TYPE_INSTANT, counters on counter
tracks, names, categories and annotation names interned on one packet sequence, and the JSON's
top-level keys as ``trace_metadata`` / ``device_properties`` instants (as Kineto's own Perfetto
writer does). Used by the tests (the same run read both ways must give the same views) and::

    python bench/kineto_to_pftrace.py TRACE.json[.gz] OUT.pftrace [--gzip] [--inline]

Slices that overlap without nesting on one thread (GPU activity with ns jitter) go on child tracks
of their thread, so that every track's slices nest and pair; the reader folds child tracks back
into their thread. Timestamps are the JSON's µs as the JSON reader turns them into ns.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from collections import defaultdict
from typing import Any

import numpy as np
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from stepscope.ingest.readers.kineto_chunks import PRECISE_TS_ABOVE_US
from stepscope.ingest.readers.kineto_values import decimal_us_to_ns, ts_to_ns

SEQ = 1
CLEARED, NEEDS = 1, 2  # TracePacket.SequenceFlags


def _load(path: str) -> dict[str, Any]:
    opener: Any = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        doc = json.load(fh, parse_float=_Float)  # floats keep their digits as written
    return doc if isinstance(doc, dict) else {"traceEvents": doc}


def _ns(values: list[Any], precise: bool) -> list[int]:
    texts = [v if isinstance(v, str) else repr(v) for v in values]
    if precise:
        return decimal_us_to_ns(texts)[0].tolist()
    ns, _ok, _ = ts_to_ns([float(t) for t in texts])
    return ns.tolist()


def _dur_ns(values: list[Any]) -> list[int]:
    return np.round(np.array([float(v) for v in values], np.float64) * 1000).astype(np.int64).tolist()


class Writer:
    """Builds the Trace: tracks, interning, packets."""

    def __init__(self, intern: bool) -> None:
        self.trace = pb.Trace()
        self.intern = intern
        self.uuid = 0
        self.threads: dict[tuple[Any, Any], int] = {}
        self.procs: dict[Any, int] = {}
        self.pid_ints: dict[Any, int] = {}
        self.tables: dict[str, dict[str, int]] = {"names": {}, "cats": {}, "anns": {}}
        self.interned_packet: Any = None
        if intern:  # the sequence's interned data comes before the events that refer to it
            self.interned_packet = self.trace.packet.add()
            self.interned_packet.trusted_packet_sequence_id = SEQ
            self.interned_packet.sequence_flags = CLEARED

    def _next(self) -> int:
        self.uuid += 1
        return self.uuid

    def pid_int(self, v: Any) -> int:
        if isinstance(v, str) and v.isascii() and v.isdigit() and len(v) < 10:
            v = int(v)  # "7" and 7 are one thread to the JSON reader too
        if isinstance(v, int):
            return v & 0x7FFFFFFF
        return self.pid_ints.setdefault(v, len(self.pid_ints) + 1)

    def process(self, pid: Any, name: str | None) -> int:
        if pid not in self.procs:
            u = self.procs[pid] = self._next()
            td = self.trace.packet.add().track_descriptor
            td.uuid = u
            td.process.pid = self.pid_int(pid)
            if name is not None:
                td.process.process_name = name
        return self.procs[pid]

    def thread(self, pid: Any, tid: Any, pname: str | None, tname: str | None) -> int:
        key = (pid, tid)
        if key not in self.threads:
            parent = self.process(pid, pname)
            u = self.threads[key] = self._next()
            td = self.trace.packet.add().track_descriptor
            td.uuid, td.parent_uuid = u, parent
            td.thread.pid, td.thread.tid = self.pid_int(pid), self.pid_int(tid)
            if tname is not None:
                td.thread.thread_name = tname
        return self.threads[key]

    def child(self, parent: int) -> int:
        u = self._next()
        td = self.trace.packet.add().track_descriptor
        td.uuid, td.parent_uuid = u, parent
        return u

    def counter_track(self, name: str) -> int:
        u = self._next()
        td = self.trace.packet.add().track_descriptor
        td.uuid, td.name = u, name
        td.counter.SetInParent()
        return u

    def _iid(self, table: str, text: str) -> int:
        t = self.tables[table]
        if text not in t:
            t[text] = len(t) + 1
            data = self.interned_packet.interned_data
            entry = {"names": data.event_names, "cats": data.event_categories,
                     "anns": data.debug_annotation_names}[table].add()
            entry.iid, entry.name = t[text], text
        return t[text]

    def event(self, ts: int, track: int, kind: int, name: str = "", cat: str = "",
              args: dict[str, Any] | None = None, flows: tuple[int, ...] = ()) -> None:
        p = self.trace.packet.add()
        p.timestamp = ts
        p.trusted_packet_sequence_id = SEQ
        te = p.track_event
        te.type, te.track_uuid = kind, track
        if kind == pb.TrackEvent.TYPE_SLICE_END:
            return
        p.sequence_flags = NEEDS
        if self.intern:
            te.name_iid = self._iid("names", name)
            if cat:
                te.category_iids.append(self._iid("cats", cat))
        else:
            te.name = name
            if cat:
                te.categories.append(cat)
        te.flow_ids.extend(f for f in flows if f >= 0)
        te.terminating_flow_ids.extend(-f - 1 for f in flows if f < 0)
        for k, v in (args or {}).items():
            a = te.debug_annotations.add()
            if self.intern:
                a.name_iid = self._iid("anns", k)
            else:
                a.name = k
            _set_value(a, v)

    def counter(self, ts: int, track: int, value: float) -> None:
        p = self.trace.packet.add()
        p.timestamp = ts
        p.trusted_packet_sequence_id = SEQ
        p.track_event.type, p.track_event.track_uuid = pb.TrackEvent.TYPE_COUNTER, track
        p.track_event.double_counter_value = value


def _set_value(a: Any, v: Any) -> None:
    """A JSON value as a typed debug annotation (as the backend's emitJsonValue)."""
    if isinstance(v, bool):
        a.bool_value = v
    elif isinstance(v, int):
        a.int_value = v
    elif isinstance(v, _Float):  # a float of the JSON, kept as its text by the loader
        a.double_value = float(v)
    elif isinstance(v, str):
        a.string_value = v
    elif isinstance(v, float):
        a.double_value = v
    elif isinstance(v, dict):
        for k, x in v.items():
            d = a.dict_entries.add()
            d.name = k
            _set_value(d, x)
    elif isinstance(v, list):
        for x in v:
            _set_value(a.array_values.add(), x)
    else:
        a.string_value = "null"


class _Float(str):
    """A float of the JSON, kept as its text (``parse_float=str``), told apart from a string."""


def _slices_in_stack_order(rows: list[tuple[int, int, int]]) -> tuple[list[tuple[str, int, int]], list[int]]:
    """Begin / end steps of one thread's slices (index, ts, end) so that a stack pairs them, and the
    lane of each slice (0: the thread's track; k: its k-th child track, for slices that overlap an
    open one without nesting in it)."""
    lanes: list[list[tuple[int, int]]] = [[]]  # per lane, the open (end, index) stack
    lane_of = [0] * len(rows)
    steps: list[tuple[str, int, int]] = []  # ("b"/"e", slice index, ts)
    for i, ts, end in sorted(rows, key=lambda r: (r[1], -r[2], r[0])):
        placed = False
        for k, stack in enumerate(lanes):
            while stack and stack[-1][0] <= ts:
                steps.append(("e", stack.pop()[1], 0))
            if not stack or end <= stack[-1][0]:
                stack.append((end, i))
                lane_of[i] = k
                placed = True
                break
        if not placed:
            lanes.append([(end, i)])
            lane_of[i] = len(lanes) - 1
        steps.append(("b", i, ts))
    for stack in lanes:
        while stack:
            steps.append(("e", stack.pop()[1], 0))
    return steps, lane_of


def convert(src: str, dst: str, *, compress: bool = False, intern: bool = True) -> dict[str, int]:
    """Write ``dst`` from the Kineto JSON ``src``; returns counts of what was written and skipped."""
    doc = _load(src)
    events = [e for e in doc.get("traceEvents") or [] if isinstance(e, dict)]
    w = Writer(intern)
    counts: dict[str, int] = defaultdict(int)
    pnames = {e.get("pid"): (e.get("args") or {}).get("name") for e in events
              if e.get("ph") == "M" and e.get("name") == "process_name"}
    tnames = {(e.get("pid"), e.get("tid")): (e.get("args") or {}).get("name") for e in events
              if e.get("ph") == "M" and e.get("name") == "thread_name"}
    timed = [e for e in events if e.get("ph") in ("X", "i", "I", "n", "C", "s", "f", "t") and e.get("ts") is not None]
    floats = [float(e["ts"]) for e in timed if isinstance(e["ts"], _Float)]
    ts_all = _ns([e["ts"] for e in timed], bool(floats) and max(map(abs, floats)) > PRECISE_TS_ABOVE_US)
    for e, ts in zip(timed, ts_all):
        e["_ns"] = ts
    _meta(w, doc)
    by_thread: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for e in timed:
        if e["ph"] == "X":
            by_thread[(e.get("pid"), e.get("tid"))].append(e)
    flows = _flows(timed, by_thread, counts)
    for (pid, tid), evs in by_thread.items():
        _thread_slices(w, w.thread(pid, tid, pnames.get(pid), tnames.get((pid, tid))), evs, flows)
        counts["slices"] += len(evs)
    for e in timed:
        if e["ph"] in ("i", "I", "n"):
            pid, tid = e.get("pid"), e.get("tid")
            track = w.thread(pid, tid, pnames.get(pid), tnames.get((pid, tid)))
            w.event(e["_ns"], track, pb.TrackEvent.TYPE_INSTANT, str(e.get("name", "")), str(e.get("cat", "")),
                    e.get("args") if isinstance(e.get("args"), dict) else None)
            counts["instants"] += 1
    _counters(w, timed, counts)
    data = w.trace.SerializeToString()
    with open(dst, "wb") as fh:
        fh.write(gzip.compress(data, 1) if compress else data)
    return dict(counts)


def _meta(w: Writer, doc: dict[str, Any]) -> None:
    """The JSON's top-level keys as Kineto's Perfetto writer records them: instants on a process track."""
    track = w.counter_track("Kineto Trace")  # a plain named track (no thread, no process)
    w.trace.packet[-1].track_descriptor.ClearField("counter")
    keys = {k: json.dumps(v) for k, v in doc.items() if k not in ("traceEvents", "deviceProperties")}
    if keys:
        w.event(0, track, pb.TrackEvent.TYPE_INSTANT, "trace_metadata", "", keys)
    if "deviceProperties" in doc:
        w.event(0, track, pb.TrackEvent.TYPE_INSTANT, "device_properties", "",
                {"properties": json.dumps(doc["deviceProperties"])})


def _flows(timed: list[dict[str, Any]], by_thread: dict[tuple[Any, Any], list[dict[str, Any]]],
           counts: dict[str, int]) -> dict[int, list[int]]:
    """id(slice) -> the ac2g flow ids it carries: each flow step binds to a slice of its thread that
    starts at its timestamp (Kineto writes the start on the launch, the end on the kernel)."""
    starts: dict[tuple[Any, Any, int], dict[str, Any]] = {}
    for key, evs in by_thread.items():
        for e in evs:
            starts.setdefault((*key, e["_ns"]), e)
    out: dict[int, list[int]] = defaultdict(list)
    for e in timed:
        if e["ph"] not in ("s", "f", "t"):
            continue
        if e.get("cat") != "ac2g" or not isinstance(e.get("id"), int):
            counts["flows_skipped"] += 1  # fwdbwd and other flows: the backend writes ac2g only
            continue
        bound = starts.get((e.get("pid"), e.get("tid"), e["_ns"]))
        if bound is None:
            counts["flows_unbound"] += 1
            continue
        out[id(bound)].append(e["id"] if e["ph"] != "f" else -e["id"] - 1)  # ends: terminating_flow_ids
        counts["flow_steps"] += 1
    return out


def _thread_slices(w: Writer, thread: int, evs: list[dict[str, Any]], flows: dict[int, list[int]]) -> None:
    durs = _dur_ns([max(float(e.get("dur") or 0), 0.0) for e in evs])
    rows = [(i, e["_ns"], e["_ns"] + d) for i, (e, d) in enumerate(zip(evs, durs))]
    steps, lane_of = _slices_in_stack_order(rows)
    lanes: dict[int, int] = {0: thread}
    for k in set(lane_of) - {0}:
        lanes[k] = w.child(thread)
    for step, i, _ts in steps:
        e, track = evs[i], lanes[lane_of[i]]
        if step == "e":
            w.event(rows[i][2], track, pb.TrackEvent.TYPE_SLICE_END)
        else:
            args = e.get("args") if isinstance(e.get("args"), dict) else None
            w.event(rows[i][1], track, pb.TrackEvent.TYPE_SLICE_BEGIN, str(e.get("name", "")), str(e.get("cat", "")),
                    args, tuple(flows.get(id(e), ())))


def _counters(w: Writer, timed: list[dict[str, Any]], counts: dict[str, int]) -> None:
    """Each counter series ("<name>" for the key "value", else "<name>.<key>") on a counter track."""
    tracks: dict[str, int] = {}
    for e in timed:
        if e["ph"] != "C" or not isinstance(e.get("args"), dict):
            continue
        for k, v in e["args"].items():
            if isinstance(v, bool) or not isinstance(v, (int, _Float)):
                continue
            series = str(e.get("name", "")) if k == "value" else f"{e.get('name', '')}.{k}"
            if series not in tracks:
                tracks[series] = w.counter_track(series)
            w.counter(e["_ns"], tracks[series], float(v))
            counts["counter_samples"] += 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--gzip", action="store_true", help="gzip the output (as the backend does)")
    ap.add_argument("--inline", action="store_true", help="names and categories inline, not interned")
    a = ap.parse_args()
    t0 = time.perf_counter()
    counts = convert(a.src, a.dst, compress=a.gzip, intern=not a.inline)
    print(f"{a.dst}: {counts} in {time.perf_counter() - t0:.2f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
