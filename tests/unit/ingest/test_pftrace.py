"""The .pftrace reader on hand-made Perfetto traces, written packet by packet with the perfetto
package's protos; every expected number is worked out from the packets by hand."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from stepscope.cli import main
from stepscope.errors import TraceFormatError
from stepscope.ingest import load
from stepscope.ingest.layout import resolve
from stepscope.ingest.readers import kineto, pftrace
from stepscope.ingest.readers.protocol import reader_for
from stepscope.model.schema import EventKind, TrackKind
from stepscope.server.discover import discover_runs

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
BEGIN, END, INSTANT, COUNTER = 1, 2, 3, 4


class T:
    """A Trace being written: descriptors, interned data, track events."""

    def __init__(self) -> None:
        self.trace = pb.Trace()

    def thread(self, uuid: int, pid: int, tid: int, name: str | None = None, parent: int = 0) -> None:
        td = self.trace.packet.add().track_descriptor
        td.uuid, td.parent_uuid = uuid, parent
        td.thread.pid, td.thread.tid = pid, tid
        if name:
            td.thread.thread_name = name

    def child(self, uuid: int, parent: int) -> None:
        td = self.trace.packet.add().track_descriptor
        td.uuid, td.parent_uuid = uuid, parent

    def counter_track(self, uuid: int, name: str) -> None:
        td = self.trace.packet.add().track_descriptor
        td.uuid, td.name = uuid, name
        td.counter.SetInParent()

    def intern(self, seq: int, names: dict[int, str], clear: bool = True) -> None:
        p = self.trace.packet.add()
        p.trusted_packet_sequence_id = seq
        if clear:
            p.sequence_flags = 1
        for iid, name in names.items():
            e = p.interned_data.event_names.add()
            e.iid, e.name = iid, name

    def ev(self, kind: int, ts: int, track: int, name: str | int = "", cat: str = "", seq: int = 1,
           args: dict[str, Any] | None = None, flows: tuple[int, ...] = (), value: float | None = None) -> None:
        p = self.trace.packet.add()
        p.timestamp, p.trusted_packet_sequence_id = ts, seq
        te = p.track_event
        te.type, te.track_uuid = kind, track
        if isinstance(name, int):
            te.name_iid = name
        elif name:
            te.name = name
        if cat:
            te.categories.append(cat)
        te.flow_ids.extend(flows)
        if value is not None:
            te.double_counter_value = value
        for k, v in (args or {}).items():
            a = te.debug_annotations.add()
            a.name = k
            _put(a, v)

    def slice(self, ts: int, end: int, track: int, name: str, **kw: Any) -> None:
        self.ev(BEGIN, ts, track, name, **kw)
        self.ev(END, end, track)

    def write(self, path: Path) -> Path:
        path.write_bytes(self.trace.SerializeToString())
        return path


def _put(a: Any, v: Any) -> None:
    if isinstance(v, list):
        for x in v:
            _put(a.array_values.add(), x)
    elif isinstance(v, str):
        a.string_value = v
    else:
        a.int_value = v


def _rows(trace: Any) -> list[tuple[str, int, int, int]]:
    ev = trace.events
    s = trace.strings.strings
    return sorted((s[n], int(k), int(t), int(d)) for n, k, t, d in
                  zip(ev["name"], ev["kind"], ev["ts_ns"], ev["dur_ns"]))


def _diag(trace: Any) -> dict[str, int]:
    return {d.name: d.count for d in trace.diagnostics}


def test_slices_pair_by_track_with_ties_in_packet_order(tmp_path: Path) -> None:
    t = T()
    t.thread(1, 10, 11)
    t.ev(BEGIN, 100, 1, "A", "cpu_op")
    t.ev(BEGIN, 100, 1, "B", "cpu_op")  # same start as A, nested in it
    t.ev(END, 200, 1)  # closes B
    t.ev(BEGIN, 200, 1, "C", "cpu_op")  # starts when B ends: a sibling, not B's child
    t.ev(END, 300, 1)  # closes C
    t.ev(BEGIN, 300, 1, "Z", "cpu_op")  # zero length, right after C
    t.ev(END, 300, 1)
    t.ev(END, 500, 1)  # closes A
    tr = load(str(t.write(tmp_path / "a.pftrace")))
    op = int(EventKind.CPU_OP)
    assert _rows(tr) == [("A", op, 100, 400), ("B", op, 100, 100), ("C", op, 200, 100), ("Z", op, 300, 0)]
    assert _diag(tr) == {}


def test_overlapping_gpu_slices_on_child_tracks_fold_into_their_stream(tmp_path: Path) -> None:
    t = T()
    t.thread(1, 0, 7, "stream 7")
    t.child(2, 1)
    gpu = {"device": 0, "stream": 7, "correlation": 5}
    t.slice(1000, 1100, 1, "k1", cat="kernel", args=gpu)
    t.slice(1090, 1200, 2, "k2", cat="kernel", args=gpu)  # overlaps k1 by 10 ns, on a child track
    tr = load(str(t.write(tmp_path / "a.pftrace")))
    k = int(EventKind.KERNEL)
    assert _rows(tr) == [("k1", k, 1000, 100), ("k2", k, 1090, 110)]
    assert len(tr.tracks) == 1 and int(tr.tracks["kind"][0]) == TrackKind.GPU_STREAM
    assert int(tr.tracks["stream"][0]) == 7 and int(tr.tracks["device"][0]) == 0
    assert tr.strings.strings[int(tr.tracks["name"][0])] == "stream 7"


def test_interned_names_per_sequence_and_cleared_state(tmp_path: Path) -> None:
    t = T()
    t.thread(1, 10, 11)
    t.intern(1, {1: "seq1-a"})
    t.intern(2, {1: "seq2-a"})  # the same iid means another name on another sequence
    t.slice(10, 20, 1, 1, cat="cpu_op", seq=1)
    t.slice(30, 40, 1, 1, cat="cpu_op", seq=2)
    t.intern(1, {1: "seq1-b"})  # sequence 1 starts over: iid 1 is now another name
    t.slice(50, 60, 1, 1, cat="cpu_op", seq=1)
    tr = load(str(t.write(tmp_path / "a.pftrace")))
    assert [r[0] for r in _rows(tr)] == ["seq1-a", "seq1-b", "seq2-a"]
    assert [r[2] for r in _rows(tr)] == [10, 50, 30]


def test_backend_layout_without_categories_kinds_links_flows_steps(tmp_path: Path) -> None:
    """PyTorch's CUPTI backend writes names and args only: kinds come from the args."""
    t = T()
    t.thread(1, 42, 42, "python")
    t.thread(2, 0, 7)
    t.slice(0, 1000, 1, "ProfilerStep#3")
    t.slice(100, 400, 1, "aten::mm", args={"External id": 9, "Input Dims": [[2, 3], [3, 4], []],
                                           "Input type": ["float", "float", ""]})
    t.slice(150, 250, 1, "cudaLaunchKernel", args={"cbid": 211, "correlation": 77, "External id": 9}, flows=(77,))
    t.slice(500, 600, 2, "gemm_kernel", args={"device": 0, "stream": 7, "correlation": 77, "External id": 9,
                                              "grid": [4, 2, 1], "block": [128, 1, 1]}, flows=(77,))
    tr = load(str(t.write(tmp_path / "a.pftrace")))
    ev, s = tr.events, tr.strings.strings
    by = {s[n]: i for i, n in enumerate(ev["name"])}
    kinds = {n: int(ev["kind"][i]) for n, i in by.items()}
    assert kinds == {"ProfilerStep#3": EventKind.USER_ANNOTATION, "aten::mm": EventKind.CPU_OP,
                     "cudaLaunchKernel": EventKind.RUNTIME, "gemm_kernel": EventKind.KERNEL}
    k = by["gemm_kernel"]
    assert int(ev["launch"][k]) == by["cudaLaunchKernel"] and int(ev["op"][k]) == by["aten::mm"]
    assert (int(ev["grid_x"][k]), int(ev["grid_y"][k]), int(ev["block_x"][k])) == (4, 2, 128)
    mm = by["aten::mm"]
    assert s[int(ev["input_dims"][mm])] == "[[2,3],[3,4],[]]"
    assert s[int(ev["input_types"][mm])] == '["float", "float", ""]'
    assert int(ev["ext_id"][mm]) == 9
    assert tr.steps["step"].tolist() == [3] and tr.steps["start_ns"].tolist() == [0]
    assert int(tr.steps["end_ns"][0]) == 1000  # the kernel ends at 600, inside the step
    fl = tr.flows
    assert sorted(zip(fl["ts_ns"].tolist(), fl["phase"].tolist(), fl["flow_id"].tolist())) == \
        [(150, ord("s"), 77), (500, ord("f"), 77)]
    assert {s[c] for c in fl["cat"]} == {"ac2g"}


def test_render_stages_of_newer_backend_builds(tmp_path: Path) -> None:
    """Kernels and copies as GPU render stages on (gpu, stream) lanes, launched by runtime slices."""
    t = T()
    t.thread(1, 42, 42)
    t.intern(1, {1: "gemm_kernel"})
    spec = t.trace.packet[-1].interned_data
    for iid, name in ((1, "Kernel"), (2, "Memcpy"), (100, "[07] stream 7")):
        g = spec.gpu_specifications.add()
        g.iid, g.name = iid, name
    t.slice(100, 200, 1, "cudaLaunchKernel", args={"cbid": 211, "correlation": 77})
    for ts, dur, stage, name_iid, corr in ((300, 40, 1, 1, 77), (400, 10, 2, 0, 78)):
        p = t.trace.packet.add()
        p.timestamp, p.trusted_packet_sequence_id = ts, 1
        g = p.gpu_render_stage_event
        g.duration, g.gpu_id, g.hw_queue_iid, g.stage_iid, g.name_iid = dur, 0, 100, stage, name_iid
        e = g.extra_data.add()
        e.name, e.value = "correlation", str(corr)
        if stage == 1:
            g.launch.grid_size.x, g.launch.grid_size.y, g.launch.grid_size.z = 8, 1, 1
            g.launch.workgroup_size.x, g.launch.workgroup_size.y, g.launch.workgroup_size.z = 256, 1, 1
    tr = load(str(t.write(tmp_path / "a.pftrace")))
    assert _rows(tr) == [("Memcpy", int(EventKind.MEMCPY), 400, 10),
                         ("cudaLaunchKernel", int(EventKind.RUNTIME), 100, 100),
                         ("gemm_kernel", int(EventKind.KERNEL), 300, 40)]
    ev, s = tr.events, tr.strings.strings
    k = next(i for i, n in enumerate(ev["name"]) if s[n] == "gemm_kernel")
    assert s[int(ev["name"][int(ev["launch"][k])])] == "cudaLaunchKernel"
    assert (int(ev["grid_x"][k]), int(ev["block_x"][k]), int(ev["corr"][k])) == (8, 256, 77)
    gpu = [i for i in range(len(tr.tracks)) if int(tr.tracks["kind"][i]) == TrackKind.GPU_STREAM]
    assert [(int(tr.tracks["device"][i]), int(tr.tracks["stream"][i]), s[int(tr.tracks["name"][i])]) for i in gpu] == \
        [(0, 7, "stream 7")]


def test_instants_memory_and_counters(tmp_path: Path) -> None:
    t = T()
    t.thread(1, 10, 11)
    t.counter_track(5, "GPU 0 Power (W)")
    t.slice(0, 100, 1, "aten::empty", cat="cpu_op")
    t.ev(INSTANT, 50, 1, "[memory]", "cpu_instant_event",
         args={"Bytes": 4096, "Total Allocated": 8192, "Device Type": 1, "Device Id": 0, "Addr": 1234})
    t.ev(COUNTER, 10, 5, value=250.5)
    t.ev(COUNTER, 20, 5, value=260.0)
    tr = load(str(t.write(tmp_path / "a.pftrace")))
    m = tr.memory
    assert (m["bytes"].tolist(), m["total_allocated"].tolist(), m["device"].tolist()) == ([4096], [8192], [0])
    assert tr.strings.strings[int(tr.events["name"][int(m["op"][0])])] == "aten::empty"
    c = tr.counters
    assert c["value"].tolist() == [250.5, 260.0] and {tr.strings.strings[n] for n in c["name"]} == {"GPU 0 Power (W)"}


def test_unmatched_begins_and_ends_are_counted(tmp_path: Path) -> None:
    t = T()
    t.thread(1, 10, 11)
    t.ev(END, 5, 1)  # closes nothing
    t.slice(10, 20, 1, "ok", cat="cpu_op")
    t.ev(BEGIN, 30, 1, "open", "cpu_op")  # never closed
    tr = load(str(t.write(tmp_path / "a.pftrace")))
    assert [r[0] for r in _rows(tr)] == ["ok"]
    d = _diag(tr)
    assert d["slice-unterminated"] == 1 and d["slice-end-unmatched"] == 1


def _small(tmp_path: Path, n: int = 50) -> Path:
    t = T()
    t.thread(1, 10, 11)
    for i in range(n):
        t.slice(100 * i, 100 * i + 50, 1, f"op{i}", cat="cpu_op")
    return t.write(tmp_path / "small.pftrace")


def test_truncated_file_keeps_whole_packets(tmp_path: Path) -> None:
    full = _small(tmp_path).read_bytes()
    cut = tmp_path / "cut.pftrace"
    cut.write_bytes(full[: len(full) - 3])  # inside the last packet: the last END is lost
    tr = load(str(cut))
    assert len(tr.events) == 49
    d = _diag(tr)
    assert d["truncated-file"] == 1 and d["slice-unterminated"] == 1


def test_gzip_and_sniff_by_content(tmp_path: Path) -> None:
    raw = _small(tmp_path).read_bytes()
    gz = tmp_path / "x.pftrace.gz"
    gz.write_bytes(gzip.compress(raw))
    odd = tmp_path / "trace.bin"  # no telling name: the bytes say it
    odd.write_bytes(raw)
    assert reader_for(str(gz)) is pftrace and reader_for(str(odd)) is pftrace
    assert len(load(str(gz)).events) == len(load(str(odd)).events) == 50


def test_json_under_a_pftrace_name_is_read_as_json(tmp_path: Path) -> None:
    """torch builds without the CUPTI backend write chrome JSON whatever the name (torch 2.13 CPU does)."""
    p = tmp_path / "cpu.pftrace"
    p.write_text(json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1,
                                              "ts": 1, "dur": 2}]}))
    assert reader_for(str(p)) is kineto
    assert _rows(load(str(p))) == [("aten::add", int(EventKind.CPU_OP), 1000, 2000)]


@pytest.mark.parametrize("content", [b"", b"\x0a\x05abc", b"garbage that is no protobuf \x00\xff"])
def test_unreadable_pftrace_is_one_line_exit_2(tmp_path: Path, content: bytes,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "bad.pftrace"
    p.write_bytes(content)
    with pytest.raises(TraceFormatError):
        load(str(p))
    with pytest.raises(SystemExit) as exc:
        main(["analyze", "--no-cache", str(p)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and str(p) in lines[0] and "Traceback" not in err


def test_layout_and_serve_find_pftrace_files(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "one"
    run.mkdir(parents=True)
    _small(tmp_path).rename(run / "rank0.pftrace")
    assert resolve(run).files == (str(run / "rank0.pftrace"),)
    found = discover_runs(tmp_path / "runs")
    assert [r.path.name for r in found] in (["one"], ["rank0.pftrace"])


def test_torch_cpu_export_to_a_pftrace_name_writes_json(tmp_path: Path) -> None:
    """What the torch in this venv does (2.13 CPU): no Perfetto encoder in the build, so
    ``export_chrome_trace("x.pftrace")`` writes chrome JSON; stepscope reads it as such."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    x = torch.randn(32, 32)
    out = tmp_path / "cpu.pftrace"
    profile_obj = profile(activities=[ProfilerActivity.CPU])
    with profile_obj:
        (x @ x).sum()
    profile_obj.export_chrome_trace(str(out))
    assert out.read_bytes().lstrip()[:1] == b"{"
    assert reader_for(str(out)) is kineto
    tr = load(str(out))
    assert {"aten::matmul", "aten::mm"} & set(tr.strings.decode(tr.events["name"]).tolist())


def test_kineto_metadata_instants_become_the_trace_metadata(tmp_path: Path) -> None:
    """Kineto's Perfetto writer records the JSON's top-level keys as instants on a plain track."""
    t = T()
    t.thread(1, 10, 11)
    td = t.trace.packet.add().track_descriptor
    td.uuid, td.name = 9, "Kineto Trace"
    t.ev(INSTANT, 0, 9, "trace_metadata", args={"distributedInfo": json.dumps({"rank": 3, "world_size": 4}),
                                                "baseTimeNanoseconds": "1700000000000000000"})
    t.ev(INSTANT, 0, 9, "device_properties",
         args={"properties": json.dumps([{"id": 0, "name": "NVIDIA H100", "numSms": 132}])})
    t.slice(10, 20, 1, "aten::add", cat="cpu_op")
    tr = load(str(t.write(tmp_path / "a.pftrace")))
    r = tr.ranks[0]
    assert (r.rank, r.world_size, r.time_base_ns) == (3, 4, 1_700_000_000_000_000_000)
    assert [(d.name, d.sm_count) for d in r.devices] == [("NVIDIA H100", 132)]
    assert [x[0] for x in _rows(tr)] == ["aten::add"]  # the metadata instants are no events


def test_a_packet_that_does_not_decode_is_dropped_and_counted(tmp_path: Path) -> None:
    raw = _small(tmp_path).read_bytes()
    bad = b"\x0a\x02\x07\x00"  # a framed packet whose only field has wire type 7 (none such)
    p = tmp_path / "mid.pftrace"
    p.write_bytes(bad + raw)
    tr = load(str(p))
    assert len(tr.events) == 50 and _diag(tr) == {"packet-unreadable": 1}
