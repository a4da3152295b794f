"""A corpus of broken trace files, generated from REAL traces, for the bad-input tests (SPEC §11).

``SPECS`` lists every case statically (tests parametrize over it); ``generate(out_dir)`` writes
them into ``out_dir`` and returns :class:`Case` rows. Each says what a correct reader does:

* ``expect="error"``: a :class:`~stepscope.errors.StepscopeError` (the CLI: one line naming the
  file, exit code 2, no traceback);
* ``expect="load"``: the trace loads, and every name in ``diagnostics`` is reported in
  ``trace.diagnostics`` with a count ≥ 1 (the repair or the loss is counted);
* ``expect="any"``: either of those, never another exception.

Directory cases (``no_trace_dir``, ``ranks_dir_missing_one``, ``tb_handler_dir``) and an
independent oracle for truncation (``complete_events``: stdlib ``json``, not stepscope's scanner)
are here too.

``known_bug`` holds the reason of a case the reader gets wrong today (the tests mark it xfail,
strict, until the reader is fixed).

The base of most mutations is a real Kineto trace from ``/work/shared/traces`` (DLRM rank 0, new
schema, ~0.9 MB); the test skips with a clear reason when that folder is absent.
"""

from __future__ import annotations

import copy
import gzip
import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

SHARED_TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
#: the real trace most mutations start from (new Kineto schema, GPU, 8-rank run, rank 0)
BASE_TRACE = "param_dlrm/dlrm_8rank_v100/worker0_step_12.1694128201545.pt.trace.json.gz"
DLRM_DIR = "param_dlrm/dlrm_8rank_v100"
TRUNCATION_POINTS = (0.01, 0.10, 0.50, 0.90, 0.999)
DAY_US = 24 * 3600 * 10**6

Doc = dict[str, Any]
Expect = Literal["error", "load", "any"]


@dataclass(frozen=True)
class Source:
    """The real trace the mutations start from: its raw (uncompressed) bytes and parsed document."""

    raw: bytes
    doc: Doc


@dataclass(frozen=True)
class Spec:
    """One broken input (how to make it) and the behaviour a correct reader shows on it.

    expect: "error" a StepscopeError; "load" the trace loads and reports every name in
    ``diagnostics`` (count ≥ 1); "any" either, but nothing else (a load must then report at least
    one diagnostic, since something in the file is wrong).
    lost_at_most: for mutations of the real trace, how many of its events a load may drop.
    known_bug / bug_crashes: what the reader gets wrong today, and whether that is an uncaught
    exception (the CLI then shows a traceback) or only a wrong or missing diagnostic.
    """

    name: str
    make: Callable[[Source], bytes]
    expect: Expect
    diagnostics: tuple[str, ...] = ()
    known_bug: str = ""
    lost_at_most: int | None = None
    bug_crashes: bool = True


@dataclass(frozen=True)
class Case:
    """A generated file of the corpus."""

    spec: Spec
    path: Path

    @property
    def name(self) -> str:
        return self.spec.name


def shared_traces_missing_reason() -> str | None:
    """Why the real traces cannot be used here, or None when they are present."""
    if not (SHARED_TRACES / BASE_TRACE).is_file():
        return f"real traces not found at {SHARED_TRACES} (needed to generate the bad-input corpus)"
    return None


def real_bytes(rel: str) -> bytes:
    """The uncompressed bytes of a real trace under ``SHARED_TRACES``."""
    raw = (SHARED_TRACES / rel).read_bytes()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


def real_doc(rel: str = BASE_TRACE) -> Doc:
    doc = json.loads(real_bytes(rel))
    assert isinstance(doc, dict)
    return doc


def cut(data: bytes, frac: float) -> bytes:
    """The first ``frac`` of ``data`` (a job killed mid-write)."""
    return data[: int(len(data) * frac)]


def _dump(doc: Any) -> bytes:
    # Kineto's own layout is one event per few lines; indent keeps the real file's shape
    return json.dumps(doc, indent=1).encode()


def _first(doc: Doc, cat: str, with_arg: str | None = None, skip: int = 0) -> dict[str, Any]:
    """The ``skip``-th complete event of category ``cat`` (optionally having args[with_arg])."""
    found = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == cat
             and (with_arg is None or with_arg in e.get("args", {}))]
    return found[skip]  # type: ignore[no-any-return]


def _mutated(base: Doc, fn: Any) -> bytes:
    doc = copy.deepcopy(base)
    fn(doc)
    return _dump(doc)


def _set(cat: str, key: str, value: Any, skip: int = 5) -> Any:
    def fn(doc: Doc) -> None:
        _first(doc, cat, skip=skip)[key] = value
    return fn


def _delete(cat: str, key: str, skip: int = 5) -> Any:
    def fn(doc: Doc) -> None:
        del _first(doc, cat, skip=skip)[key]
    return fn


def _overlap(doc: Doc) -> None:
    """Two top-level cpu_ops on one thread that partially overlap (the second starts inside the first)."""
    a = _first(doc, "cpu_op", skip=3)
    b = copy.deepcopy(a)
    b["name"] = "stepscope_test::overlapping"
    b["ts"] = a["ts"] + a["dur"] / 2
    b["dur"] = a["dur"]
    b["args"] = {}
    doc["traceEvents"].append(b)


def _duplicate_correlation(doc: Doc) -> None:
    """A second runtime call + kernel pair reusing an existing correlation id."""
    kernels = {e["args"]["correlation"]: e for e in doc["traceEvents"]
               if e.get("cat") == "kernel" and "correlation" in e.get("args", {})}
    rt = [e for e in doc["traceEvents"] if e.get("cat") == "cuda_runtime"
          and e.get("args", {}).get("correlation") in kernels][10]
    kernel = kernels[rt["args"]["correlation"]]
    rt2, k2 = copy.deepcopy(rt), copy.deepcopy(kernel)
    rt2["ts"], k2["ts"] = rt["ts"] + 5, kernel["ts"] + 5
    doc["traceEvents"] += [rt2, k2]


def _begin_end(doc: Doc) -> None:
    op = _first(doc, "cpu_op", skip=3)
    doc["traceEvents"] += [
        {"ph": "B", "cat": "user_annotation", "name": "stepscope_test::b_e_pair", "pid": op["pid"],
         "tid": op["tid"], "ts": op["ts"]},
        {"ph": "E", "cat": "user_annotation", "name": "stepscope_test::b_e_pair", "pid": op["pid"],
         "tid": op["tid"], "ts": op["ts"] + 1},
    ]


def _cutter(frac: float, gz: bool) -> Callable[[Source], bytes]:
    def make(src: Source) -> bytes:
        data = cut(src.raw, frac)
        return gzip.compress(data) if gz else data
    return make


def _specs() -> list[Spec]:
    specs: list[Spec] = []

    def add(name: str, make: Callable[[Source], bytes], expect: Expect, *diags: str, bug: str = "",
            lost_at_most: int | None = None, crashes: bool = True) -> None:
        specs.append(Spec(name, make, expect, diags, bug, lost_at_most, crashes))

    def const(data: bytes) -> Callable[[Source], bytes]:
        return lambda _src: data

    def mutate(fn: Callable[[Doc], None]) -> Callable[[Source], bytes]:
        return lambda src: _mutated(src.doc, fn)

    # --- not a trace at all ---
    add("empty.json", const(b""), "error")
    add("whitespace.json", const(b" \n\t\r\n   \n"), "error")
    add("text.json", const(b"this is not a trace\nat all\n"), "error")
    add("binary_junk.json", const(bytes((i * 37 + 11) % 256 for i in range(4096))), "error")
    gz_junk = b"\x1f\x8b" + bytes((i * 91 + 7) % 256 for i in range(2048))
    add("gzip_magic_junk.json.gz", const(gz_junk), "error")
    add("gzip_of_text.json.gz", const(gzip.compress(b"hello, I am not JSON")), "error")
    add("number.json", const(b"42\n"), "error")
    add("empty_object.json", const(b"{}"), "error")
    add("events_not_a_list.json", const(b'{"traceEvents": 5}'), "error")
    add("cut_in_header.json", lambda src: src.raw[: src.raw.index(b'"traceEvents"') - 10], "error")
    # --- valid JSON without a single event: nothing to analyse, refused (not a page of zero tables) ---
    add("no_events.json", const(b'{"traceEvents": []}'), "error")
    add("list_of_numbers.json", const(b"[1, 2, 3]"), "error")
    add("metadata_only.json", const(b'{"traceEvents": [{"ph": "M", "name": "process_name", "pid": 1, '
                                    b'"args": {"name": "python"}}], "schemaVersion": 1}'), "error")

    # --- truncated (a job killed mid-write), plain and gzip ---
    for frac in TRUNCATION_POINTS:
        tag = f"{frac * 100:g}pct".replace(".", "_")
        add(f"truncated_{tag}.json", _cutter(frac, gz=False), "load", "truncated-file")
        add(f"truncated_{tag}.json.gz", _cutter(frac, gz=True), "load", "truncated-file")
    add("gzip_stream_cut_short.json.gz", lambda src: cut(gzip.compress(src.raw), 0.5), "load",
        "truncated-file")

    # --- valid JSON, events of the wrong types (one event of the real trace mutated) ---
    add("ts_object.json", mutate(_set("cpu_op", "ts", {"us": 1})), "load", "event-wrong-type", lost_at_most=1)
    add("dur_string_junk.json", mutate(_set("cpu_op", "dur", "twelve")), "load", "event-wrong-type",
        lost_at_most=1)
    add("name_number.json", mutate(_set("cpu_op", "name", 12345)), "load", "event-wrong-type", lost_at_most=1)
    add("pid_list.json", mutate(_set("cpu_op", "pid", [1, 2])), "load", "event-wrong-type", lost_at_most=1)
    add("event_not_object.json", mutate(lambda d: d["traceEvents"].insert(7, [1, 2, 3])), "load",
        "event-wrong-type", lost_at_most=0)

    # --- durations, times, ids, phases, metadata ---
    add("negative_dur.json", mutate(_set("cpu_op", "dur", -250)), "load", "event-negative-duration",
        lost_at_most=1)
    add("absurd_dur.json", mutate(_set("kernel", "dur", DAY_US + 3600 * 10**6)), "load",
        "event-absurd-duration", lost_at_most=1)
    add("missing_ts.json", mutate(_delete("cpu_op", "ts")), "load", "event-missing-ts", lost_at_most=1)
    add("missing_dur.json", mutate(_delete("cpu_op", "dur")), "load", "event-missing-dur", lost_at_most=1)
    add("overlap_on_thread.json", mutate(_overlap), "load", "events-overlap-on-thread", lost_at_most=0)
    add("duplicate_correlation.json", mutate(_duplicate_correlation), "load", "duplicate-correlation",
        lost_at_most=0, crashes=False)
    add("begin_end_pair.json", mutate(_begin_end), "load", lost_at_most=0)
    add("no_device_properties.json", mutate(lambda d: d.pop("deviceProperties")), "load", lost_at_most=0)
    add("bare_list.json", lambda src: _dump(src.doc["traceEvents"]), "load", lost_at_most=0)

    # --- values a reader must survive (found while building this corpus) ---
    add("ts_huge_float.json", mutate(_set("cpu_op", "ts", 1e300)), "any", lost_at_most=1)
    add("dur_huge_float.json", mutate(_set("cpu_op", "dur", 1e300)), "load", "event-absurd-duration",
        lost_at_most=1)
    add("invalid_utf8_name.json",
        lambda src: _mutated(src.doc, _set("cpu_op", "name", "@@BAD@@")).replace(b"@@BAD@@", b"\xff\xfe"),
        "any", lost_at_most=1)
    add("deeply_nested.json", const(b'{"traceEvents": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}"), "any")
    add("device_id_not_int.json", mutate(lambda d: d["deviceProperties"][0].update(id="gpu0")), "load",
        lost_at_most=0)
    add("step_number_huge.json", mutate(_set("user_annotation", "name", "ProfilerStep#99999999999", skip=0)),
        "load", lost_at_most=0)
    return specs


#: every case of the corpus (static: tests parametrize over it without the real traces)
SPECS: list[Spec] = _specs()


def base_source() -> Source:
    return Source(real_bytes(BASE_TRACE), real_doc(BASE_TRACE))


def generate(out: Path, specs: list[Spec] | None = None) -> list[Case]:
    """Write every case (or ``specs``) under ``out`` (which must exist) and return them."""
    reason = shared_traces_missing_reason()
    if reason is not None:
        raise FileNotFoundError(reason)
    src = base_source()
    cases = []
    for spec in specs if specs is not None else SPECS:
        path = out / spec.name
        path.write_bytes(spec.make(src))
        cases.append(Case(spec, path))
    return cases


def base_event_count(doc: Doc) -> int:
    """Slices and instants (not ``[memory]``) of a trace document: what lands in the events table."""
    return sum(1 for e in doc["traceEvents"] if isinstance(e, dict) and (
        e.get("ph") == "X" or (e.get("ph") in ("i", "I") and e.get("name") != "[memory]")))


def no_trace_dir(out: Path) -> Path:
    """A directory with files in it, none of them a trace."""
    d = out / "no_trace_dir"
    d.mkdir()
    (d / "notes.txt").write_text("no trace here\n")
    (d / "sub").mkdir()
    (d / "sub" / "data.csv").write_text("a,b\n1,2\n")
    return d


def ranks_dir_missing_one(out: Path, missing: int = 3) -> Path:
    """The real 8-rank DLRM run directory with rank ``missing``'s file left out."""
    d = out / f"dlrm_without_rank{missing}"
    d.mkdir()
    for f in sorted((SHARED_TRACES / DLRM_DIR).glob("*.pt.trace.json.gz")):
        if not f.name.startswith(f"worker{missing}_"):
            shutil.copyfile(f, d / f.name)
    return d


#: (worker, timestamp) of the tensorboard_trace_handler layout: span 1 = the earlier timestamps
TB_LAYOUT = {("worker0", 1): "1700000000100", ("worker0", 2): "1700000900100",
             ("worker1", 1): "1700000000107", ("worker1", 2): "1700000900133"}


def tb_handler_dir(out: Path) -> Path:
    """``<worker>.<timestamp>.pt.trace.json.gz`` for 2 workers × 2 spans, made of real rank files.

    workerK's files hold real DLRM rank K (distributedInfo rank K) in both spans.
    """
    d = out / "tb_handler_run"
    d.mkdir()
    src = {w: next((SHARED_TRACES / DLRM_DIR).glob(f"{w}_step_12.*.pt.trace.json.gz"))
           for w in ("worker0", "worker1")}
    for (worker, _span), ts in TB_LAYOUT.items():
        shutil.copyfile(src[worker], d / f"{worker}.{ts}.pt.trace.json.gz")
    return d


def complete_events(data: bytes) -> list[tuple[Any, int]]:
    """Every element of the ``traceEvents`` array (or bare list) of a COMPLETE trace, with the byte
    offset just past its serialized end; parsed with the stdlib ``json`` only.

    Latin-1 maps bytes to characters one to one, and UTF-8 multi-byte sequences never contain
    JSON's structural characters, so character offsets are byte offsets.
    """
    text = data.decode("latin-1")
    m = re.search(r'"traceEvents"\s*:\s*\[', text)
    pos = m.end() if m is not None else text.index("[") + 1
    dec = json.JSONDecoder()
    out: list[tuple[Any, int]] = []
    n = len(text)
    while True:
        while pos < n and text[pos] in " \t\r\n,":
            pos += 1
        if text[pos] == "]":
            return out
        obj, pos = dec.raw_decode(text, pos)
        out.append((obj, pos))


TABLE_OF_PHASE = {"X": "events", "i": "events", "I": "events", "s": "flows", "f": "flows", "t": "flows",
                  "C": "counters"}


def table_of(event: Any) -> str | None:
    """Which stepscope table a raw event belongs in ("events", "memory", "flows", "counters"), or None."""
    if not isinstance(event, dict):
        return None
    if event.get("ph") in ("i", "I") and event.get("name") == "[memory]":
        return "memory"
    return TABLE_OF_PHASE.get(str(event.get("ph")))
