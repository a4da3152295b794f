"""``stepscope export``: the chrome-trace / Perfetto file of the model, and its round trip through the reader."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import TraceBuilder, kargs
from click.testing import CliRunner

import stepscope
from stepscope.cli.export_cmd import command as export_command
from stepscope.errors import UsageError
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace
from stepscope.report.export import export_chrome_trace

REAL_TRACE = ("kineto_tb_plugin", "resnet50_num_workers_0")


def _builder() -> TraceBuilder:
    b = TraceBuilder()
    b.thread_name("main thread")
    b.step(1, ts=0, dur=50)
    b.op("aten::mm", ts=5, dur=20, **kargs({"Input Dims": [[2, 3], [3, 4]], "Sequence number": 7}))
    b.launch_kernel("k1", launch_ts=6, launch_dur=2, ts=10, dur=10, ext_id=11, grid=[4, 1, 1], block=[128, 1, 1])
    b.launch_kernel("k2", launch_ts=6.5, launch_dur=1, ts=20, dur=10, tid=101)
    b.step(2, ts=50, dur=50)
    b.op("aten::add_", ts=55, dur=10)
    b.launch_kernel("k3 \"quoted\" <T>", launch_ts=56, launch_dur=2, ts=60.125, dur=5.5)
    b.add(ph="i", s="t", cat="cpu_instant_event", name="mark", pid=b.pid, tid=b.tid, ts=70, args={})
    return b


def _read(path: Path) -> dict[str, Any]:
    data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    doc: dict[str, Any] = json.loads(data)
    return doc


def _summary(t: Trace) -> tuple[list[int], int, int]:
    ev = t.events
    kernel = ev["kind"] == EventKind.KERNEL
    return (np.bincount(ev["kind"], minlength=len(EventKind)).tolist(), int(ev["dur_ns"][kernel].sum()),
            int((ev["launch"] >= 0).sum()))


def _canonical(t: Trace) -> dict[str, Any]:
    """Events as sorted tuples (row order depends on track ids, which the export renumbers)."""
    ev = t.events
    names = t.strings.decode(ev["name"]).astype(str)
    o = np.lexsort((names, ev["dur_ns"], ev["ts_ns"], ev["kind"]))
    cols = ("ts_ns", "dur_ns", "kind", "depth", "step", "corr", "ext_id", "grid_x", "block_x", "seq", "self_ns")
    out: dict[str, Any] = {c: ev[c][o].tolist() for c in cols}
    out["name"] = names[o].tolist()
    out["input_dims"] = t.strings.decode(ev["input_dims"][o]).tolist()
    return out


@pytest.mark.parametrize("name", ["out.json", "out.json.gz"])
def test_export_round_trip(tmp_path: Path, name: str) -> None:
    src = _builder().write(tmp_path / "in.json")
    before = src.read_bytes()
    trace = stepscope.load(src, use_cache=False)
    stats = export_chrome_trace(trace, tmp_path / name)
    assert src.read_bytes() == before  # the input is only read
    assert stats.events == len(trace.events) and stats.flows == 3 and stats.steps == 2
    back = stepscope.load(tmp_path / name, use_cache=False)
    assert _summary(back) == _summary(trace)
    assert _canonical(back) == _canonical(trace)
    assert back.steps["end_ns"].tolist() == trace.steps["end_ns"].tolist()
    assert back.tracks["name"][0] >= 0 and "main thread" in back.strings.strings


def test_export_records(tmp_path: Path) -> None:
    trace = stepscope.load(_builder().write(tmp_path / "in.json"), use_cache=False)
    export_chrome_trace(trace, tmp_path / "out.json")
    evs = _read(tmp_path / "out.json")["traceEvents"]
    by_ph: dict[str, list[dict[str, Any]]] = {}
    for e in evs:
        by_ph.setdefault(e["ph"], []).append(e)
    procs = {e["args"]["name"] for e in by_ph["M"] if e["name"] == "process_name"}
    assert procs == {"rank 0 · host", "rank 0 · GPU 0", "rank 0 · steps"}
    threads = {e["args"]["name"] for e in by_ph["M"] if e["name"] == "thread_name"}
    assert {"main thread", "stream 7"} <= threads
    k3 = next(e for e in by_ph["X"] if e["name"] == 'k3 "quoted" <T>')
    assert k3["ts"] == 60.125 and k3["dur"] == 5.5 and k3["pid"] == 1 and k3["args"]["stream"] == 7
    starts = {e["id"]: e for e in by_ph["s"]}
    finishes = {e["id"]: e for e in by_ph["f"]}
    assert starts.keys() == finishes.keys() and len(starts) == 3
    assert all(f["bp"] == "e" for f in finishes.values())
    assert [e["name"] for e in by_ph["b"]] == ["step 1", "step 2"] and len(by_ph["e"]) == 2
    counters = {e["name"] for e in by_ph["C"]}
    assert counters == {"GPU 0 utilization %", "queue length · stream 7"}
    queue = [(e["ts"], e["args"]["value"]) for e in by_ph["C"] if e["name"].startswith("queue")]
    # k1 and k2 launched at 6 and 6.5 (queue 1, 2); k1 ends at 20 (1), k2 at 30 (0); k3: 56 → 65.625
    assert queue == [(6, 1), (6.5, 2), (20, 1), (30, 0), (56, 1), (65.625, 0)]
    assert by_ph["i"][0]["name"] == "mark"


def test_export_steps_and_rank_selection(tmp_path: Path) -> None:
    trace = stepscope.load(_builder().write(tmp_path / "in.json"), use_cache=False)
    stats = export_chrome_trace(trace, tmp_path / "s2.json", steps=(2, 2))
    back = stepscope.load(tmp_path / "s2.json", use_cache=False)
    names = set(back.strings.decode(back.events["name"]).tolist())
    assert "k3 \"quoted\" <T>" in names and "k1" not in names and "ProfilerStep#2" in names
    assert stats.steps == 1 and stats.flows == 1
    with pytest.raises(UsageError):
        export_chrome_trace(trace, tmp_path / "x.json", steps=(7, 9))
    with pytest.raises(UsageError):
        export_chrome_trace(trace, tmp_path / "x.json", ranks=[3])


def test_export_refuses_to_overwrite_its_input(tmp_path: Path) -> None:
    src = _builder().write(tmp_path / "in.json")
    before = src.read_bytes()
    trace = stepscope.load(src, use_cache=False)
    with pytest.raises(UsageError):
        export_chrome_trace(trace, src)
    assert src.read_bytes() == before and not list(tmp_path.glob(".*tmp"))


def test_export_cli(tmp_path: Path) -> None:
    src = _builder().write(tmp_path / "in.json")
    out = tmp_path / "cli.json.gz"
    res = CliRunner().invoke(export_command, [str(src), "-o", str(out), "--steps", "1-2", "--json", "--no-cache"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["events"] == len(stepscope.load(src, use_cache=False).events)
    assert _read(out)["traceEvents"]
    bad = CliRunner().invoke(export_command, [str(src), "-o", str(out), "--steps", "x"])
    assert bad.exit_code != 0


def test_export_real_trace_round_trip(tmp_path: Path, shared_traces: Path) -> None:
    """A real Kineto trace (tb_plugin sample): same events, kinds, kernel time, links and steps after a round trip."""
    real = shared_traces.joinpath(*REAL_TRACE)
    if not real.is_dir():
        pytest.skip(f"real trace not found at {real}")
    trace = stepscope.load(real, use_cache=False)
    export_chrome_trace(trace, tmp_path / "real.json.gz")
    back = stepscope.load(tmp_path / "real.json.gz", use_cache=False)
    assert _summary(back) == _summary(trace)
    assert _canonical(back) == _canonical(trace)
    assert len(back.steps) == len(trace.steps)
    assert {d.name for d in back.diagnostics} <= {"phase-unknown"}  # the async step slices, skipped


def test_export_writes_memory_events(tmp_path: Path) -> None:
    """``export`` said "every event" but left the allocator events out: the memory view of the
    exported file was empty. They are written as Kineto ``[memory]`` instants and read back the same."""
    from stepscope.analysis.memory import compute_memory

    b = _builder()
    b.op("aten::empty", ts=200, dur=30)
    b.memory(205, 512, 512, 2048, addr=11)
    b.memory(210, 256, 768, 2048, addr=12)
    b.memory(220, -512, 256, 2048, addr=11)
    b.memory(225, 64, 64, -1, addr=13, device_type=0, device=-1)
    trace = stepscope.load(b.write(tmp_path / "in.json"), use_cache=False)
    assert len(trace.memory) == 4
    stats = export_chrome_trace(trace, tmp_path / "out.json.gz")
    assert stats.memory_events == 4
    back = stepscope.load(tmp_path / "out.json.gz", use_cache=False)
    cols = ("ts_ns", "device_type", "device", "addr", "bytes", "total_allocated", "total_reserved")
    assert {c: back.memory[c].tolist() for c in cols} == {c: trace.memory[c].tolist() for c in cols}
    def ops(t: Trace) -> list[str]:
        return t.strings.decode(t.events["name"][t.memory["op"]]).tolist()

    assert ops(back) == ops(trace) == ["aten::empty"] * 3 + [ops(trace)[3]]
    a, z = compute_memory(trace, 0), compute_memory(back, 0)
    assert [(c.device, c.allocated_bytes.tolist()) for c in z.curves] == \
        [(c.device, c.allocated_bytes.tolist()) for c in a.curves]
    assert z.freed_count == a.freed_count == 1
