"""A corpus of broken trace files, generated from REAL traces, for the bad-input tests (SPEC §11).

``generate(out_dir)`` writes every case into ``out_dir`` and returns them as :class:`Case` rows:
what the file is, and what a correct reader must do with it:

* ``expect="error"``: a :class:`~stepscope.errors.StepscopeError` (the CLI: one line naming the
  file, exit code 2, no traceback);
* ``expect="load"``: the trace loads, and every name in ``diagnostics`` is reported in
  ``trace.diagnostics`` with a count ≥ 1 (the repair or the loss is counted).

``known_bug`` holds the reason of a case the reader gets wrong today (the tests mark it xfail,
strict, until the reader is fixed).

The base of most mutations is a real Kineto trace from ``/work/shared/traces`` (DLRM rank 0, new
schema, ~0.9 MB); the test skips with a clear reason when that folder is absent.
"""

from __future__ import annotations

import copy
import gzip
import json
import shutil
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


@dataclass(frozen=True)
class Case:
    """One broken input and the behaviour a correct reader shows on it."""

    name: str
    path: Path
    expect: Literal["error", "load"]
    diagnostics: tuple[str, ...] = ()
    known_bug: str = ""


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


def _write(out: Path, name: str, data: bytes) -> Path:
    p = out / name
    p.write_bytes(data)
    return p


def generate(out: Path) -> list[Case]:
    """Write every broken-input case under ``out`` (which must exist) and return them."""
    reason = shared_traces_missing_reason()
    if reason is not None:
        raise FileNotFoundError(reason)
    raw = real_bytes(BASE_TRACE)
    base = real_doc(BASE_TRACE)
    cases: list[Case] = []

    def add(name: str, data: bytes, expect: Literal["error", "load"], *diags: str, bug: str = "") -> None:
        cases.append(Case(name, _write(out, name, data), expect, diags, bug))

    # --- not a trace at all ---
    add("empty.json", b"", "error")
    add("whitespace.json", b" \n\t\r\n   \n", "error")
    add("text.json", b"this is not a trace\nat all\n", "error")
    add("binary_junk.json", bytes((i * 37 + 11) % 256 for i in range(4096)), "error")
    add("gzip_magic_junk.json.gz", b"\x1f\x8b" + bytes((i * 91 + 7) % 256 for i in range(2048)), "error")
    add("gzip_of_text.json.gz", gzip.compress(b"hello, I am not JSON"), "error")
    add("number.json", b"42\n", "error")
    add("empty_object.json", b"{}", "error")
    add("events_not_a_list.json", b'{"traceEvents": 5}', "error")
    add("cut_in_header.json", raw[: raw.index(b'"traceEvents"') - 10], "error")

    # --- truncated (a job killed mid-write), plain and gzip ---
    for frac in TRUNCATION_POINTS:
        tag = f"{frac * 100:g}pct".replace(".", "_")
        add(f"truncated_{tag}.json", cut(raw, frac), "load", "truncated-file")
        add(f"truncated_{tag}.json.gz", gzip.compress(cut(raw, frac)), "load", "truncated-file")
    gz = gzip.compress(raw)
    add("gzip_stream_cut_short.json.gz", cut(gz, 0.5), "load", "truncated-file")

    # --- valid JSON, events of the wrong types (one event of the real trace mutated) ---
    add("ts_object.json", _mutated(base, _set("cpu_op", "ts", {"us": 1})), "load", "event-wrong-type")
    add("dur_string_junk.json", _mutated(base, _set("cpu_op", "dur", "twelve")), "load", "event-wrong-type")
    add("name_number.json", _mutated(base, _set("cpu_op", "name", 12345)), "load", "event-wrong-type")
    add("pid_list.json", _mutated(base, _set("cpu_op", "pid", [1, 2])), "load", "event-wrong-type")
    add("event_not_object.json", _mutated(base, lambda d: d["traceEvents"].insert(7, [1, 2, 3])), "load",
        "event-wrong-type")

    # --- durations and times ---
    add("negative_dur.json", _mutated(base, _set("cpu_op", "dur", -250)), "load", "event-negative-duration")
    add("absurd_dur.json", _mutated(base, _set("kernel", "dur", DAY_US + 3600 * 10**6)), "load",
        "event-absurd-duration")
    add("missing_ts.json", _mutated(base, _delete("cpu_op", "ts")), "load", "event-missing-ts")
    add("missing_dur.json", _mutated(base, _delete("cpu_op", "dur")), "load", "event-missing-dur")
    add("overlap_on_thread.json", _mutated(base, _overlap), "load", "events-overlap-on-thread")
    add("duplicate_correlation.json", _mutated(base, _duplicate_correlation), "load", "duplicate-correlation",
        bug="two runtime calls with one correlation id are linked silently (no diagnostic counts it)")
    add("begin_end_pair.json", _mutated(base, _begin_end), "load")
    add("no_device_properties.json", _mutated(base, lambda d: d.pop("deviceProperties")), "load")
    add("bare_list.json", _dump(base["traceEvents"]), "load")

    # --- values a reader must survive (found while building this corpus) ---
    add("ts_huge_float.json", _mutated(base, _set("cpu_op", "ts", 1e300)), "load",
        bug="ts 1e300 raises OverflowError in kineto_columns._float_us_to_ns")
    add("dur_huge_float.json", _mutated(base, _set("cpu_op", "dur", 1e300)), "load", "event-absurd-duration",
        bug="dur 1e300 overflows the int64 cast and is reported as a negative duration")
    add("invalid_utf8_name.json",
        _mutated(base, _set("cpu_op", "name", "@@BADNAME@@")).replace(b"@@BADNAME@@", b"\xff\xfe"), "load",
        bug="a name with invalid UTF-8 raises UnicodeDecodeError")
    add("deeply_nested.json", b'{"traceEvents": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}", "load",
        bug="a deeply nested array raises RecursionError from msgspec")
    add("device_id_not_int.json",
        _mutated(base, lambda d: d["deviceProperties"][0].update(id="gpu0")), "load",
        bug="deviceProperties id 'gpu0' raises ValueError in build._devices")
    add("step_number_huge.json",
        _mutated(base, _set("user_annotation", "name", "ProfilerStep#99999999999", skip=0)), "load",
        bug="ProfilerStep#99999999999 raises OverflowError (int32 step column)")
    return cases


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
