"""Structure-aware mutations of Kineto / chrome-trace JSON documents (and of any JSON value).

Every function takes a ``random.Random`` and works on parsed JSON (dicts and lists) or on the
serialised bytes; :func:`mutate_trace_bytes` chains one to three of them and returns the new file's
bytes (gzip-compressed, and sometimes damaged, when the seed was).
"""

from __future__ import annotations

import copy
import gzip
import json
import random
from collections.abc import Callable
from typing import Any

#: values of the wrong type or of absurd size, for any field
WILD: list[Any] = [None, "", "abc", "12", "-1", "1e999", [], {}, [1, 2], {"a": 1}, True, False, 0, -1, 1.5,
                   2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64, -(2**63), -(2**64), 10**30, 1e308, -1e308,
                   float("nan"), float("inf"), float("-inf"), 1e-300, "\u0000", "\ud800", "\u202e" * 3]
NUMBERS: list[Any] = [0, -1, -5, 1, 2**31, -(2**31), 2**53, 2**62, 2**63 - 1, 2**63, -(2**63), 2**64, 10**30,
                      1e308, -1e308, float("nan"), float("inf"), float("-inf"), 0.5, -0.5, 1e-9]
EVENT_KEYS = ["ts", "dur", "ph", "name", "pid", "tid", "cat", "args", "id", "s", "bp"]
ARG_KEYS = ["External id", "correlation", "device", "stream", "grid", "block", "Input Dims", "Input type",
            "bytes", "Total Allocated", "Total Reserved", "Bytes", "Addr", "Device Id", "Device Type",
            "registers per thread", "shared memory", "Sequence number", "Fwd thread id", "queued",
            "Collective name", "In msg nelems", "Group size", "Process Group Ranks", "Call stack"]
PHASES = ["X", "B", "E", "i", "I", "C", "M", "s", "f", "t", "b", "e", "n", "P", "O", "N", "D", "R", "?", "", "XX"]
NAMES = ["ProfilerStep#1", "ProfilerStep#-3", "ProfilerStep#", "ProfilerStep#99999999999999999999",
         "cudaLaunchKernel", "aten::mm", "ncclKernel_AllReduce_RING_LL_Sum_float", "Memcpy HtoD (Pageable -> Device)",
         "Memset (Device)", "[memory]", "Optimizer.step#SGD.step",
         "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
         "cudaStreamSynchronize", "aten::item", "volta_sgemm_128x64_nn", "", "\u0000", "\ud800x", "a" * 5000]
DEEP = "__FUZZ_DEEP__"


def events_of(doc: Any) -> list[Any] | None:
    """The event list of a chrome trace (object form or bare list form)."""
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        ev = doc["traceEvents"]
        assert isinstance(ev, list)
        return ev
    return None


def _some(rng: random.Random, events: list[Any], most: int = 8) -> list[int]:
    if not events:
        return []
    k = min(len(events), rng.choice([1, 1, 2, 3, most, len(events) // 10 + 1]))
    return rng.sample(range(len(events)), k)


def _dicts(rng: random.Random, events: list[Any]) -> list[dict[str, Any]]:
    return [events[i] for i in _some(rng, events) if isinstance(events[i], dict)]


def delete_fields(rng: random.Random, doc: Any) -> Any:
    events = events_of(doc) or []
    key = rng.choice(EVENT_KEYS)
    for e in _dicts(rng, events):
        e.pop(key if rng.random() < 0.8 else rng.choice(list(e) or ["ts"]), None)
    return doc


def wrong_types(rng: random.Random, doc: Any) -> Any:
    events = events_of(doc) or []
    key = rng.choice(EVENT_KEYS)
    value = rng.choice(WILD)
    for e in _dicts(rng, events):
        e[key] = copy.deepcopy(value)
    return doc


def wild_numbers(rng: random.Random, doc: Any) -> Any:
    events = events_of(doc) or []
    key = rng.choice(["ts", "dur", "ts", "dur", "pid", "tid", "id"])
    for e in _dicts(rng, events):
        e[key] = rng.choice(NUMBERS)
    return doc


def wild_args(rng: random.Random, doc: Any) -> Any:
    events = events_of(doc) or []
    key = rng.choice(ARG_KEYS)
    for e in _dicts(rng, events):
        args = e.get("args")
        if not isinstance(args, dict):
            args = e["args"] = {}
        args[key] = copy.deepcopy(rng.choice([*WILD, [[1, 2], [3]], [[-1, 2 ** 63]], [[2 ** 70, 4]], [[10 ** 10] * 3],
                                              "[[1,2]]", [None]]))
    return doc


def duplicate_events(rng: random.Random, doc: Any) -> Any:
    events = events_of(doc)
    if events:
        for i in sorted(_some(rng, events), reverse=True):
            events.insert(i + rng.choice([0, 1, len(events) - i]), copy.deepcopy(events[i]))
    return doc


def swap_ts_dur(rng: random.Random, doc: Any) -> Any:
    """Start and end swapped: ``ts`` moved to the end, a negative ``dur``; or ts and dur exchanged."""
    for e in _dicts(rng, events_of(doc) or []):
        ts, dur = e.get("ts"), e.get("dur")
        if isinstance(ts, (int, float)) and isinstance(dur, (int, float)):
            if rng.random() < 0.5:
                e["ts"], e["dur"] = ts + dur, -dur
            else:
                e["ts"], e["dur"] = dur, ts
    return doc


def rename_keys(rng: random.Random, doc: Any) -> Any:
    if isinstance(doc, dict) and rng.random() < 0.3:
        key = rng.choice(list(doc) or ["traceEvents"])
        doc[key + rng.choice(["_", "s", " "])] = doc.pop(key, None)
        return doc
    key = rng.choice(EVENT_KEYS)
    new = rng.choice([key.upper(), key + " ", "_" + key, key[:-1] or "x"])
    for e in _dicts(rng, events_of(doc) or []):
        if key in e:
            e[new] = e.pop(key)
    return doc


def change_phase(rng: random.Random, doc: Any) -> Any:
    ph = rng.choice(PHASES)
    for e in _dicts(rng, events_of(doc) or []):
        e["ph"] = ph
    return doc


def change_names(rng: random.Random, doc: Any) -> Any:
    name = rng.choice(NAMES)
    for e in _dicts(rng, events_of(doc) or []):
        e["name"] = name
    return doc


def huge_name(rng: random.Random, doc: Any) -> Any:
    events = _dicts(rng, events_of(doc) or [])[:1]
    for e in events:
        e["name"] = rng.choice(["aten::", "void ", "nccl", "gemm"]) + "x" * rng.choice([10**5, 10**6, 3 * 10**6])
    return doc


def deep_nesting(rng: random.Random, doc: Any) -> Any:
    for e in _dicts(rng, events_of(doc) or [])[:1]:
        args = e.get("args")
        if not isinstance(args, dict):
            args = e["args"] = {}
        args[rng.choice(ARG_KEYS)] = DEEP
    return doc


def shuffle_events(rng: random.Random, doc: Any) -> Any:
    events = events_of(doc)
    if events:
        if rng.random() < 0.5:
            rng.shuffle(events)
        else:
            events.reverse()
    return doc


def drop_events(rng: random.Random, doc: Any) -> Any:
    events = events_of(doc)
    if not events:
        return doc
    if rng.random() < 0.5:  # every event of one kind (all steps, all kernels, ...)
        probe = events[rng.randrange(len(events))]
        field = rng.choice(["cat", "ph", "name", "pid"])
        value = probe.get(field) if isinstance(probe, dict) else None
        events[:] = [e for e in events if not (isinstance(e, dict) and e.get(field) == value)]
    else:
        for i in sorted(_some(rng, events, most=len(events) // 2 + 1), reverse=True):
            del events[i]
    return doc


def same_timestamps(rng: random.Random, doc: Any) -> Any:
    ts = rng.choice([0, -1, 2**62, 1.5, 1e15])
    for e in _dicts(rng, events_of(doc) or []):
        e["ts"] = ts
        if rng.random() < 0.5:
            e["dur"] = rng.choice([0, 0, 1, 10**12])
    return doc


def break_metadata(rng: random.Random, doc: Any) -> Any:
    if not isinstance(doc, dict):
        return doc
    key = rng.choice(["distributedInfo", "deviceProperties", "baseTimeNanoseconds", "displayTimeUnit",
                      "schemaVersion", "traceName", "distributedInfo"])
    current = doc.get(key)
    if isinstance(current, dict) and current and rng.random() < 0.7:
        current[rng.choice([*list(current), "rank", "world_size", "backend"])] = rng.choice(WILD)
    elif isinstance(current, list) and current and isinstance(current[0], dict) and rng.random() < 0.7:
        current[0][rng.choice(list(current[0]) or ["id"])] = rng.choice(WILD)
    else:
        doc[key] = copy.deepcopy(rng.choice([*WILD, {"rank": rng.choice(NUMBERS), "world_size": rng.choice(NUMBERS)}]))
    return doc


def break_top_level(rng: random.Random, doc: Any) -> Any:
    choice = rng.random()
    if choice < 0.3 and isinstance(doc, dict):
        doc["traceEvents"] = copy.deepcopy(rng.choice(WILD))
        return doc
    if choice < 0.5:
        return events_of(doc) or []
    if choice < 0.7 and isinstance(doc, list):
        return {"traceEvents": doc}
    events = events_of(doc)
    if events:
        events.insert(rng.randrange(len(events) + 1), copy.deepcopy(rng.choice(WILD)))
    return doc


def mutate_value(rng: random.Random, doc: Any) -> Any:
    """Any JSON value: one random place deep inside it gets a wild value, or loses its key."""
    if not isinstance(doc, (dict, list)) or not doc:
        return copy.deepcopy(rng.choice(WILD))
    node: Any = doc
    for _ in range(rng.randint(1, 8)):
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            break
        key = rng.choice(keys)
        child = node[key]
        if not isinstance(child, (dict, list)) or not child or rng.random() < 0.2:
            if isinstance(node, dict) and rng.random() < 0.25:
                del node[key]
            else:
                node[key] = copy.deepcopy(rng.choice(WILD + [copy.deepcopy(child)] * 2))
            return doc
        node = child
    return doc


STRUCTURAL: list[Callable[[random.Random, Any], Any]] = [
    delete_fields, wrong_types, wild_numbers, wild_args, duplicate_events, swap_ts_dur, rename_keys,
    change_phase, change_names, deep_nesting, shuffle_events, drop_events, same_timestamps, break_metadata,
    break_top_level, mutate_value, huge_name]
WEIGHTS = [3, 3, 4, 3, 2, 3, 1, 2, 2, 1, 1, 2, 1, 2, 1, 2, 0.3]


def dumps(doc: Any, rng: random.Random) -> bytes:
    text = json.dumps(doc, ensure_ascii=rng.random() < 0.5)
    if DEEP in text:
        depth = rng.choice([100, 1000, 10**4, 10**5])
        opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
        text = text.replace(json.dumps(DEEP), opener * depth + "1" + closer * depth, 1)
    return text.encode("utf-8", "surrogatepass")


def byte_damage(rng: random.Random, data: bytes) -> bytes:
    """Text-level damage: truncation, flipped or inserted bytes, trailing junk, a second document."""
    buf = bytearray(data)
    op = rng.choice(["truncate", "truncate", "flip", "insert", "trail", "concat", "bom"])
    if op == "truncate" and buf:
        del buf[rng.randrange(len(buf)):]
    elif op == "flip" and buf:
        for _ in range(rng.randint(1, 8)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
    elif op == "insert":
        at = rng.randrange(len(buf) + 1)
        buf[at:at] = rng.choice([b"{", b"}", b"[", b"]", b",", b'"', b"\\", b"\x00", b"NaN", b"\xff\xfe", b"1e999"])
    elif op == "trail":
        buf += rng.choice([b"\nGARBAGE", b"\x00" * 100, b"}", b"]]]", b"\xff"])
    elif op == "concat":
        buf += b"\n" + data
    else:
        buf[:0] = b"\xef\xbb\xbf"
    return bytes(buf)


def gzip_damage(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    op = rng.choice(["truncate", "flip", "tail", "header"])
    if op == "truncate":
        del buf[rng.randrange(len(buf)):]
    elif op == "flip" and len(buf) > 10:
        for _ in range(rng.randint(1, 4)):
            buf[rng.randrange(10, len(buf))] ^= 1 << rng.randrange(8)
    elif op == "tail":
        buf += rng.choice([b"junk tail", b"\x00" * 64, gzip.compress(b"]}"), data[: len(data) // 2]])
    elif len(buf) > 3:
        buf[rng.randrange(0, 4)] = rng.randrange(256)
    return bytes(buf)


def mutate_doc(rng: random.Random, doc: Any) -> Any:
    for fn in rng.choices(STRUCTURAL, WEIGHTS, k=rng.choice([1, 1, 2, 3])):
        doc = fn(rng, doc)
    return doc


def mutate_trace_bytes(rng: random.Random, raw: bytes, gz: bool) -> tuple[bytes, str]:
    """A mutated trace file from the seed's (uncompressed) bytes; also what was done, for the log."""
    what = []
    text = raw
    if rng.random() < 0.85:
        doc = mutate_doc(rng, json.loads(raw))
        text = dumps(doc, rng)
        what.append("structure")
    if rng.random() < 0.25:
        text = byte_damage(rng, text)
        what.append("bytes")
    if not gz:
        return text, "+".join(what)
    data = gzip.compress(text, compresslevel=1)
    if rng.random() < 0.2:
        data = gzip_damage(rng, data)
        what.append("gzip")
    return data, "+".join(what)
