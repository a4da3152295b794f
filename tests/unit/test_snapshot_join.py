"""An allocator snapshot joined to the Kineto trace of the same run: a hand-made pair, answers by hand."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from stepscope.analysis.snapshot_join import join
from stepscope.cli import cli, main
from stepscope.errors import UsageError
from stepscope.ingest import load
from stepscope.ingest.snapshot import read_snapshot

BASE_NS = 1_700_000_000_000_000_000  # the trace's baseTimeNanoseconds
BASE_US = BASE_NS // 1000


def _trace(tmp: Path, *, base: bool, memory: bool) -> Path:
    def op(name: str, ts: int, dur: int, cat: str = "cpu_op") -> dict[str, Any]:
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}

    ev = [op("ProfilerStep#1", 1000, 1000, "user_annotation"), op("aten::linear", 1100, 400),
          op("aten::empty", 1150, 10), op("ProfilerStep#2", 2000, 1000, "user_annotation"),
          op("aten::mm", 2200, 300), op("aten::add", 2600, 100)]
    if memory:  # the profiler saw the allocation at 0x1000 inside aten::empty
        ev.append({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 1155,
                   "s": "t", "args": {"Device Type": 1, "Device Id": 0, "Addr": 0x1000, "Bytes": 100,
                                      "Total Allocated": 100, "Total Reserved": 2 << 20}})
    doc: dict[str, Any] = {"deviceProperties": [{"id": 0, "name": "GPU"}], "traceEvents": ev}
    if base:
        doc["baseTimeNanoseconds"] = BASE_NS
    p = tmp / f"trace_{base}_{memory}.json"
    p.write_text(json.dumps(doc))
    return p


def _snapshot(tmp: Path, skew_us: int = 0) -> Path:
    """Allocations at trace-relative µs; the snapshot's clock is the trace's wall clock + skew_us."""
    ev = [("alloc", 0x6000, 10, 500),  # before the trace
          ("alloc", 0x1000, 100, 1155),  # in aten::empty (its [memory] event), step 1
          ("alloc", 0x2000, 300, 1300),  # in aten::linear, freed before the peak
          ("alloc", 0x3000, 50, 1700),  # in step 1, no op running
          ("alloc", 0x4000, 1000, 2250),  # aten::mm, step 2
          ("free_completed", 0x2000, 300, 2300),
          ("alloc", 0x5000, 700, 2650),  # aten::add, step 2: the peak, 10+100+50+1000+700 = 1860
          ("free_completed", 0x5000, 700, 2800)]
    trace = [{"action": a, "addr": addr, "size": n, "stream": 0, "time_us": BASE_US + t + skew_us, "frames": []}
             for a, addr, n, t in ev]
    p = tmp / f"snap_{skew_us}.pickle"
    p.write_bytes(pickle.dumps({"segments": [], "device_traces": [trace]}))
    return p


WANT_OPS = {"aten::mm": 1000, "aten::add": 700, "aten::empty": 100, "(no op)": 50, "(outside the trace)": 10}
WANT_STEPS = {2: 1700, 1: 150}


def _check(j: Any, matched: int = 1) -> None:
    assert j.live_bytes == 1860 and j.outside_bytes == 10
    assert {r["op"]: r["bytes"] for r in j.by_op} == WANT_OPS
    assert [r["op"] for r in j.by_op] == list(WANT_OPS)  # largest first
    assert {r["op"]: r["matched"] for r in j.by_op}["aten::empty"] == matched
    assert {r["step"]: r["bytes"] for r in j.by_step} == WANT_STEPS


def test_join_by_the_memory_events_of_a_trace_with_a_time_base(tmp_path: Path) -> None:
    (j,) = join(read_snapshot(_snapshot(tmp_path)), load(_trace(tmp_path, base=True, memory=True), use_cache=False))
    assert (j.alignment.method, j.alignment.shift_ns, j.alignment.matched, j.alignment.spread_ns) == \
        ("memory-events", BASE_NS, 1, 0)
    _check(j)


def test_join_by_the_wall_clock_when_no_memory_event(tmp_path: Path) -> None:
    (j,) = join(read_snapshot(_snapshot(tmp_path)), load(_trace(tmp_path, base=True, memory=False), use_cache=False))
    assert (j.alignment.method, j.alignment.shift_ns) == ("wall-clock", BASE_NS)
    _check(j, matched=0)  # aten::empty by the time: the op covering the allocation


def test_a_skewed_clock_without_time_base_is_aligned_by_the_memory_events(tmp_path: Path) -> None:
    """The trace's ts are not wall-clock (no base): the [memory] event gives the shift, 5 ms skew included."""
    snap = read_snapshot(_snapshot(tmp_path, skew_us=5000))
    (j,) = join(snap, load(_trace(tmp_path, base=False, memory=True), use_cache=False))
    assert (j.alignment.method, j.alignment.shift_ns) == ("memory-events", (BASE_US + 5000) * 1000)
    _check(j)


def test_what_cannot_be_aligned_is_one_error_unless_an_offset_is_given(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    snap_p, trace_p = _snapshot(tmp_path), _trace(tmp_path, base=False, memory=False)
    with pytest.raises(UsageError, match="cannot align"):
        join(read_snapshot(snap_p), load(trace_p, use_cache=False))
    runner = CliRunner()
    with pytest.raises(SystemExit) as code:
        main(["memory", str(snap_p), "--trace", str(trace_p)])
    err = capsys.readouterr().err
    assert code.value.code == 2 and "cannot align" in err and err.count("\n") == 1
    ok = runner.invoke(cli, ["memory", str(snap_p), "--trace", str(trace_p), "--offset-us", str(BASE_US), "--json"])
    assert ok.exit_code == 0, ok.output
    (j,) = json.loads(ok.output)["join"]
    assert j["alignment"]["method"] == "offset" and {r["op"]: r["bytes"] for r in j["by_op"]} == WANT_OPS
    text = runner.invoke(cli, ["memory", str(snap_p), "--trace", str(trace_p), "--offset-us", str(BASE_US)])
    assert text.exit_code == 0 and "aten::mm" in text.output and "step 2 0.0" in text.output
